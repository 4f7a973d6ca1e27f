"""The device's rotated miss-log files, sent back to the registry for ``arc-build heat``.

Only rotated files (``misses.N.jsonl``: complete, no longer written) go; each is uploaded once, under the
tag ``misslog.<device>.<sha256 of its content, 16 digits>`` (rotation renames files, their content hash
stays), and ``DATA_DIR/fleet/misslog-uploaded.json`` remembers what went. The question text is the one
piece of user data on a device (docs/security.md), so by default it does not leave: each record keeps
``query_sha256``, ``reason``, ``entry_id``, ``similarity``, ``bundle`` and ``ts``; ``--share-questions``
keeps the ``query`` (and the miss detail, which may quote it) as well.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
from pathlib import Path
from typing import Any

from edge_runtime.fleet import media
from edge_runtime.fleet.registry import RegistryClient, RegistryNotFound

KEPT = ("ts", "reason", "entry_id", "similarity", "bundle")


def redact(record: dict[str, Any], share_questions: bool) -> dict[str, Any]:
    """What of one miss leaves the device under the policy."""
    query = str(record.get("query", ""))
    out = {k: record[k] for k in KEPT if k in record}
    out["query_sha256"] = hashlib.sha256(query.encode("utf-8")).hexdigest()
    if share_questions:
        out["query"] = query
        out["detail"] = record.get("detail", "")
    return out


def default_device_id() -> str:
    """A stable, non-identifying tag component: 12 hex digits of the host name's hash."""
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:12]


class MissLogUploader:
    def __init__(self, miss_log: Any, client: RegistryClient, state_dir: Path, *, share_questions: bool = False,
                 device_id: str = "") -> None:
        self.miss_log = miss_log
        self.client = client
        self.share_questions = share_questions
        self.device_id = re.sub(r"[^A-Za-z0-9_.-]", "-", device_id or default_device_id())[:40]
        self.record_path = Path(state_dir) / "misslog-uploaded.json"

    def _uploaded(self) -> set[str]:
        if self.record_path.is_file():
            return set(json.loads(self.record_path.read_text()))
        return set()

    def upload_rotated(self) -> list[str]:
        """Upload every rotated file not sent yet; returns the tags written."""
        done = self._uploaded()
        tags = []
        for path in sorted(Path(self.miss_log.directory).glob("misses.*.jsonl")):
            raw = path.read_bytes()
            sha = hashlib.sha256(raw).hexdigest()
            if sha in done:
                continue
            lines = [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]
            body = "".join(json.dumps(redact(r, self.share_questions), ensure_ascii=False) + "\n" for r in lines)
            tag = f"misslog.{self.device_id}.{sha[:16]}"
            self.client.push_file_artefact(
                tag, body.encode("utf-8"), media_type=media.MISSLOG, config_type=media.MISSLOG_CONFIG,
                config={"device": self.device_id, "records": len(lines), "questions_shared": self.share_questions},
                title=f"{tag}.jsonl")
            done.add(sha)
            tmp = self.record_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(sorted(done)))
            os.replace(tmp, self.record_path)
            tags.append(tag)
        return tags


def download_misslogs(client: RegistryClient, out_dir: Path, max_bytes: int = 64 << 20) -> list[Path]:
    """Every ``misslog.*`` artefact of the repository into ``out_dir`` (for the build server)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for tag in sorted(t for t in client.tags() if t.startswith("misslog.")):
        path = out_dir / f"{tag}.jsonl"
        try:
            path.write_bytes(client.get_file_artefact(tag, media.MISSLOG, max_bytes))
        except RegistryNotFound:  # listed, but its upload never finished (the device sends it again)
            continue
        written.append(path)
    return written

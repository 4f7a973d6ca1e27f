"""``arc-build heat MISSLOGS...``: which classes of question the fleet missed most, to build them next.

Misses are clustered by the bundle's own routing embedding (the static table and tokenizer a device
routes with: numpy and tokenizers, no torch), so a class is "questions the router would see as one",
whatever their numbers and names. Greedy leader clustering over distinct questions, most frequent
first: a question joins the first class whose leader's cosine to it is at least ``similarity``, else it
leads a new one. Classes are ranked by how many misses they hold; each names its examples, the miss
reasons, and the entry the router came closest to. Records uploaded without question text (the default
device policy) cannot be embedded: they are grouped by (nearest entry, reason) and counted by hash.

``heat_rows`` turns the top classes into the rows the LLM builder takes (``arc-build entries --from-heat``).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edge_runtime.errors import BundleError


@dataclass
class MissClass:
    leader: str
    questions: Counter = field(default_factory=Counter)
    reasons: Counter = field(default_factory=Counter)
    entries: Counter = field(default_factory=Counter)
    hashes: set = field(default_factory=set)
    text: bool = True

    @property
    def count(self) -> int:
        return sum(self.reasons.values())

    def as_dict(self, rank: int, examples: int) -> dict[str, Any]:
        return {
            "rank": rank, "count": self.count, "distinct": len(self.hashes),
            "examples": [q for q, _ in self.questions.most_common(examples)] if self.text else [],
            "leader": self.leader if self.text else "", "reasons": dict(self.reasons.most_common()),
            "nearest_entry": (self.entries.most_common(1)[0][0] if self.entries else ""),
            "questions_shared": self.text,
        }


def read_misslogs(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Every record of the given JSONL files (device miss logs, or the redacted uploads)."""
    records = []
    for path in paths:
        for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except ValueError as exc:
                    raise ValueError(f"{path}:{n}: not JSON: {exc}") from None
    return records


def embedder_from_bundle(bundle_path: Path, blob_dir: Path | None = None) -> Any:
    """The static routing embedder a bundle ships (its out-of-line table and tokenizer from ``blob_dir``)."""
    from edge_runtime.bundles.bundle import BLOBS_DIR, read_bundle
    from edge_runtime.route.bundle_routing import embedder_from_files

    bundle = read_bundle(Path(bundle_path), trusted_keys=[], allow_unsigned=True)
    blob_dir = Path(blob_dir) if blob_dir else Path(bundle_path).parent / BLOBS_DIR
    files = dict(bundle.files)
    for path, ref in bundle.blobs.items():
        data = (blob_dir / ref["sha256"]).read_bytes()
        if hashlib.sha256(data).hexdigest() != ref["sha256"]:  # the signed manifest names it; a file may not match
            raise BundleError(f"{blob_dir / ref['sha256']} ({path}) does not hash to the name the bundle signs")
        files[path] = data
    return embedder_from_files(files)


def rank(records: list[dict[str, Any]], embedder: Any, *, similarity: float = 0.8,
         examples: int = 3) -> list[dict[str, Any]]:
    """The missed classes, most missed first."""
    import hashlib

    with_text = [r for r in records if isinstance(r.get("query"), str) and r["query"].strip()]
    counts = Counter(r["query"].strip() for r in with_text)
    classes: list[MissClass] = []
    leaders: list[np.ndarray] = []
    home: dict[str, MissClass] = {}
    distinct = [q for q, _ in counts.most_common()]
    vectors = embedder.embed(distinct) if distinct else np.zeros((0, 1))
    for question, vector in zip(distinct, vectors):
        vector = vector / (np.linalg.norm(vector) or 1.0)
        if leaders:
            scores = np.stack(leaders) @ vector
            best = int(np.argmax(scores))
            if scores[best] >= similarity:
                home[question] = classes[best]
                continue
        classes.append(MissClass(question))
        leaders.append(vector)
        home[question] = classes[-1]
    for record in with_text:
        question = record["query"].strip()
        cls = home[question]
        cls.questions[question] += 1
        cls.hashes.add(hashlib.sha256(question.encode("utf-8")).hexdigest())
        cls.reasons[str(record.get("reason", ""))] += 1
        if record.get("entry_id"):
            cls.entries[str(record["entry_id"])] += 1
    blind: dict[tuple[str, str], MissClass] = {}
    for record in records:
        if isinstance(record.get("query"), str) and record["query"].strip():
            continue
        key = (str(record.get("entry_id", "")), str(record.get("reason", "")))
        cls = blind.setdefault(key, MissClass("", text=False))
        cls.reasons[key[1]] += 1
        if key[0]:
            cls.entries[key[0]] += 1
        cls.hashes.add(str(record.get("query_sha256", "")))
    ranked = sorted([*classes, *blind.values()], key=lambda c: (-c.count, c.leader))
    return [cls.as_dict(i, examples) for i, cls in enumerate(ranked, 1)]


def heat_rows(heat: list[dict[str, Any]], top: int) -> list[dict[str, Any]]:
    """One builder row per top class that has question text: its most frequent question (the builder asks
    the source model for the reasoning; there is no transcript on a device)."""
    rows = []
    for cls in heat:
        if cls.get("examples"):
            rows.append({"question": cls["examples"][0], "heat_rank": cls["rank"], "heat_count": cls["count"]})
        if len(rows) >= top:
            break
    return rows

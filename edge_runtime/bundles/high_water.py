"""The highest version ever activated per bundle name, kept on disk so a restart cannot forget it.

The file lives beside the bundles (``bundles/high-water.json``) and is replaced atomically
(temp file, fsync, rename, fsync of the directory), so a power cut leaves either the old
mark or the new one, never a torn file. A mark only ever rises.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path

from edge_runtime.bundles.versions import BundleVersion
from edge_runtime.errors import BundleError


class HighWaterMarks:
    """name -> highest activated version string; ``raise_to`` persists before it returns."""

    FILENAME = "high-water.json"

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / self.FILENAME
        self._lock = threading.Lock()
        self._marks: dict[str, str] = {}
        if self.path.exists():
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
            except ValueError as exc:
                # Refusing to start beats silently forgetting every mark (which would re-open downgrades).
                raise BundleError(f"{self.path} is not valid JSON ({exc}); fix or remove it deliberately") from exc
            self._marks = {str(k): str(v) for k, v in data.items()}

    def highest(self, name: str) -> BundleVersion | None:
        text = self._marks.get(name)
        return BundleVersion(text) if text is not None else None

    def as_dict(self) -> dict[str, str]:
        return dict(self._marks)

    def raise_to(self, name: str, version: BundleVersion) -> None:
        """Record ``version`` for ``name`` if it is higher than the mark (durably, before returning)."""
        with self._lock:
            current = self.highest(name)
            if current is not None and not version > current:
                return
            marks = {**self._marks, name: version.text}
            self._write(marks)
            self._marks = marks

    def _write(self, marks: dict[str, str]) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".high-water-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(marks, out, sort_keys=True)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

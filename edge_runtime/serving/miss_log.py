"""A durable, rotated log of misses for the build server to pick up (JSON lines)."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any


class MissLog:
    """Appends one JSON object per miss; rotates at ``max_bytes`` keeping ``keep`` old files."""

    def __init__(self, directory: Path, *, max_bytes: int = 8 << 20, keep: int = 5) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / "misses.jsonl"
        self.max_bytes = max_bytes
        self.keep = keep
        self._lock = threading.Lock()

    def append(self, record: dict[str, Any]) -> None:
        line = json.dumps({"ts": time.time(), **record}, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            if self.path.exists() and self.path.stat().st_size + len(line) > self.max_bytes:
                self._rotate()
            with open(self.path, "a", encoding="utf-8") as out:
                out.write(line)
                out.flush()
                os.fsync(out.fileno())

    def _rotate(self) -> None:
        for i in range(self.keep - 1, 0, -1):
            older = self.directory / f"misses.{i}.jsonl"
            if older.exists():
                older.replace(self.directory / f"misses.{i + 1}.jsonl")
        self.path.replace(self.directory / "misses.1.jsonl")
        oldest = self.directory / f"misses.{self.keep + 1}.jsonl"
        oldest.unlink(missing_ok=True)

    def read(self) -> list[dict[str, Any]]:
        """Every logged miss, oldest first (for the build server and tests)."""
        files = [self.directory / f"misses.{i}.jsonl" for i in range(self.keep, 0, -1)] + [self.path]
        out: list[dict[str, Any]] = []
        for path in files:
            if path.exists():
                out += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        return out

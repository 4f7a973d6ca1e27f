"""The evaluation split: which accepted entries the bundle holds and which are held out as unrelated.

Saved beside a run (``split.json``) so a changed importer can be compared on the same held-out
entries; read by both the bundle builder and the query sets, which is why it is a module of its own.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Split:
    """Which accepted entries go into the bundle and which are held out as unrelated questions."""

    bundle_ids: tuple[str, ...]
    unrelated_ids: tuple[str, ...]
    dev_ids: tuple[str, ...]
    seed: int

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps([self.bundle_ids, self.unrelated_ids]).encode()).hexdigest()[:10]

    def save(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=1) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: Path) -> Split:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return cls(tuple(data["bundle_ids"]), tuple(data["unrelated_ids"]), tuple(data["dev_ids"]), int(data["seed"]))

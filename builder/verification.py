"""An entry's verification record: what the independent check found, kept beside the entry.

The importer writes it into ``entries/_meta/<id>.json``; ``arc-build bundle`` reads it from there,
applies its policy (pack unverified entries or not) and attests the status in the signed manifest.
See :mod:`builder.independent_check` for how an entry is checked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edge_runtime.answer.verification import VerificationStatus


@dataclass(frozen=True)
class Verification:
    """What the independent check found, as stored beside the entry and in a bundle's manifest."""

    status: VerificationStatus
    detail: str
    sources: tuple[str, ...] = ()  # the independent programs that agreed
    variants: int = 0  # variants compared with each agreeing program
    #: A verified entry's scope: the parameters the agreeing program does not read, held at their
    #: original values on every variant compared. The entry is verified only for questions that keep
    #: them; empty when it is verified for every value (the record then has no ``fixed`` key, as before).
    fixed: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        record: dict[str, Any] = {"status": self.status.value, "detail": self.detail, "sources": list(self.sources),
                                  "variants": self.variants}
        if self.fixed:
            record["fixed"] = list(self.fixed)
        return record

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Verification:
        """An entry without a record (hand-written, or imported before the check existed) is unverified."""
        if not isinstance(data, Mapping) or not data:
            return cls(VerificationStatus.UNVERIFIED, "no verification record")
        sources = data.get("sources", ())
        variants = data.get("variants", 0)
        fixed = data.get("fixed", ())
        status = VerificationStatus.from_record(dict(data))
        if not isinstance(fixed, (list, tuple)) or not all(isinstance(n, str) and n for n in fixed):
            # a scope that cannot be read is no verification: the entry is not known to be right anywhere
            return cls(VerificationStatus.UNVERIFIED, f"unreadable verified scope {fixed!r}")
        return cls(status, str(data.get("detail", "")),
                   tuple(str(s) for s in sources) if isinstance(sources, (list, tuple)) else (),
                   variants if isinstance(variants, int) and not isinstance(variants, bool) else 0,
                   tuple(fixed) if status is VerificationStatus.VERIFIED else ())

    @classmethod
    def read_sidecar(cls, sources: Path, entry_id: str) -> Verification:
        """The record the importer wrote beside an entry source (``_meta/<id>.json``), if any."""
        path = Path(sources) / "_meta" / f"{entry_id}.json"
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return cls.from_dict(None)
        return cls.from_dict(record.get("verification") if isinstance(record, dict) else None)

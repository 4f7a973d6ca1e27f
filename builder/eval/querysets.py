"""A query set: JSONL rows with a query, the expected answer and what a cache should do with it.

A row has ``query`` and ``answer``; optionally ``reasoning_changed: true`` (the question needs
other reasoning than any cached entry: serving it is wrong whatever the answer) and
``unrelated: true`` (no cached entry answers it). Every other row is *should-serve*. A row's
*kind* is its ``kind`` or ``perturbation_type`` key (GSM-Plus); the entry that should serve it
is ``entry_id``, or ``gsm8k-NNNN`` from ``gsm8k_row`` (the importer names GSM8K entries by
row). Every other key is kept with the row (``extra``) and copied into the per-query records.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Keys read as a row's kind, first present wins.
KIND_KEYS = ("kind", "perturbation_type")
_KNOWN = {"query", "answer", "reasoning_changed", "unrelated", "entry_id", "gsm8k_row", *KIND_KEYS}


def gsm8k_entry_id(row: int) -> str:
    """The importer's entry id for GSM8K test row ``row`` (builder.pot_import.transcripts.Transcript.entry_id)."""
    return f"gsm8k-{int(row):04d}"


@dataclass(frozen=True)
class QueryRow:
    index: int
    query: str
    answer: Any
    changed: bool = False
    unrelated: bool = False
    kind: str = ""
    entry_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def should_serve(self) -> bool:
        return not (self.changed or self.unrelated)


@dataclass(frozen=True)
class QuerySet:
    name: str
    path: Path
    rows: tuple[QueryRow, ...]

    @property
    def kinds(self) -> list[str]:
        return sorted({r.kind for r in self.rows if r.kind})

    def limited(self, limit: int | None) -> QuerySet:
        """The first ``limit`` rows, or, when the set has kinds, up to ``limit`` rows spread evenly over
        the kinds (every k-th row of each kind), so a limited run still reports every kind."""
        if limit is None or limit >= len(self.rows):
            return self
        kinds = self.kinds
        if not kinds:
            return QuerySet(self.name, self.path, self.rows[:limit])
        per_kind = max(1, limit // len(kinds))
        chosen: list[QueryRow] = []
        for kind in kinds:
            rows = [r for r in self.rows if r.kind == kind]
            step = max(1, len(rows) // per_kind)
            chosen += rows[::step][:per_kind]
        chosen.sort(key=lambda r: r.index)
        return QuerySet(self.name, self.path, tuple(chosen))


def _flag(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def parse_row(index: int, data: dict[str, Any]) -> QueryRow:
    if "query" not in data or "answer" not in data:
        raise ValueError(f"row {index}: a query set row needs 'query' and 'answer' (has {sorted(data)})")
    kind = next((str(data[k]) for k in KIND_KEYS if data.get(k) not in (None, "")), "")
    entry_id = str(data.get("entry_id") or "")
    if not entry_id and data.get("gsm8k_row") is not None:
        entry_id = gsm8k_entry_id(data["gsm8k_row"])
    return QueryRow(
        index=index,
        query=str(data["query"]),
        answer=data["answer"],
        changed=_flag(data.get("reasoning_changed", False)),
        unrelated=_flag(data.get("unrelated", False)),
        kind=kind,
        entry_id=entry_id,
        extra={k: v for k, v in data.items() if k not in _KNOWN},
    )


def load_query_set(path: str | Path) -> QuerySet:
    path = Path(path)
    rows = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                rows.append(parse_row(len(rows), json.loads(line)))
    if not rows:
        raise ValueError(f"{path}: no rows")
    return QuerySet(path.stem, path, tuple(rows))

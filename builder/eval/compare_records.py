"""Row-for-row comparison of two ``arc-build eval`` per-query record files, timings aside.

Why: a change that must not change behaviour (a refactor, a move) is checked by running the same
evaluation before and after and comparing what every question got: served or not, the answer, the
path, the miss reason and its detail, the entry and its similarity. Timings differ run to run and are
left out; everything else must be identical, and every difference is listed so it can be explained.

    python -m builder.eval.compare_records BEFORE.records.jsonl AFTER.records.jsonl [--ignore FIELD ...]

Exit status 0 when the files agree, 1 when any row differs or is missing on one side.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Fields that measure time, not behaviour: they differ between two runs of the same code.
TIMING_FIELDS = frozenset({"latency_ms", "server_ms"})
#: What names a row: the set it comes from, the system that answered, and its place in the set.
ROW_KEY = ("set", "system", "index")


@dataclass
class Comparison:
    """What two record files agree and disagree on."""

    compared: int = 0
    only_before: list[tuple] = field(default_factory=list)
    only_after: list[tuple] = field(default_factory=list)
    #: (row key, field, before value, after value) for every field that differs
    differences: list[tuple[tuple, str, Any, Any]] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not (self.only_before or self.only_after or self.differences)

    def summary(self, examples: int = 20) -> str:
        """A short human report: counts, differing fields, and the first ``examples`` differences."""
        rows_differing = len({key for key, *_ in self.differences})
        lines = [f"rows compared: {self.compared}; rows differing: {rows_differing}; "
                 f"only before: {len(self.only_before)}; only after: {len(self.only_after)}"]
        by_field = Counter(name for _, name, _, _ in self.differences)
        if by_field:
            lines.append("fields differing: " + ", ".join(f"{n} ({c})" for n, c in by_field.most_common()))
        for key, name, before, after in self.differences[:examples]:
            lines.append(f"  {'/'.join(map(str, key))} {name}: {before!r} -> {after!r}")
        lines += [f"  only before: {'/'.join(map(str, k))}" for k in self.only_before[:examples]]
        lines += [f"  only after: {'/'.join(map(str, k))}" for k in self.only_after[:examples]]
        return "\n".join(lines) + "\n"


def _keyed(records: Iterable[dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
    keyed: dict[tuple, dict[str, Any]] = {}
    for record in records:
        key = tuple(record.get(k) for k in ROW_KEY)
        if key in keyed:
            raise ValueError(f"two records for {key}: the key {ROW_KEY} must name one row")
        keyed[key] = record
    return keyed


def compare(before: Iterable[dict[str, Any]], after: Iterable[dict[str, Any]],
            ignore: Iterable[str] = TIMING_FIELDS) -> Comparison:
    """Every row of ``before`` against the row of ``after`` with the same (set, system, index), field by
    field, leaving out ``ignore``; a field present on one side only counts as a difference."""
    skipped = frozenset(ignore)
    old, new = _keyed(before), _keyed(after)
    result = Comparison(only_before=sorted(k for k in old if k not in new),
                        only_after=sorted(k for k in new if k not in old))
    for key in sorted(k for k in old if k in new):
        result.compared += 1
        a, b = old[key], new[key]
        for name in sorted((set(a) | set(b)) - skipped):
            if a.get(name, _ABSENT) != b.get(name, _ABSENT):
                result.differences.append((key, name, a.get(name, _ABSENT), b.get(name, _ABSENT)))
    return result


class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


_ABSENT = _Absent()


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of one ``*.records.jsonl`` file."""
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m builder.eval.compare_records", description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--ignore", action="append", default=[], metavar="FIELD",
                        help="another field to leave out (timing fields are always left out)")
    parser.add_argument("--examples", type=int, default=20, help="differences to print")
    args = parser.parse_args(argv)
    result = compare(read_records(args.before), read_records(args.after), TIMING_FIELDS | set(args.ignore))
    sys.stdout.write(result.summary(args.examples))
    return 0 if result.identical else 1


if __name__ == "__main__":
    raise SystemExit(main())

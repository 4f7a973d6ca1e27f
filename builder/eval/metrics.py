"""Figures from per-query records: what each system did with each row of each set.

A record is a dict with at least ``served`` (bool), ``correct`` (served with the expected
answer), ``should_serve``, ``changed``, ``unrelated``, ``covered`` (the row's entry is in the
bundle), ``kind``, ``path``, ``miss_reason`` and ``latency_ms``. :func:`summarise` turns a list
of records into counts, rates and latency percentiles; :func:`summarise_by_kind` adds the same
per kind.

Definitions (docs/benchmarks.md):
- ``served_right`` / ``served_wrong``: should-serve rows served with the expected / another answer;
- ``missed``: should-serve rows not served;
- ``changed_served``: reasoning-changed rows served (any answer: the cached reasoning does not apply);
- ``unrelated_served``: unrelated rows served (false hits);
- ``by_verification``: the same served counts split by the serving entry's verification status;
- ``served_by_another_entry``: served rows that name their entry and were answered by another one (a question taken
  for another entry's: right only where the two happen to answer alike; 2026-12-07 it found "3 *times* older" read
  as "10 *years* older");
- ``coverage``: should-serve rows whose entry is in the bundle (rows naming no entry count as covered);
- rates divide by the row count of their group (``should_serve``, ``changed``, ``unrelated``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np


def percentiles(values: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {"n": 0, "p50": None, "p95": None, "p99": None}
    data = np.asarray(values, dtype=np.float64)
    p50, p95, p99 = np.percentile(data, [50, 95, 99])
    return {"n": int(data.size), "p50": round(float(p50), 3), "p95": round(float(p95), 3), "p99": round(float(p99), 3)}


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def summarise(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    rows = list(records)
    should = [r for r in rows if r["should_serve"]]
    changed = [r for r in rows if r["changed"]]
    unrelated = [r for r in rows if r["unrelated"]]
    served_right = sum(1 for r in should if r["served"] and r["correct"])
    served_wrong = sum(1 for r in should if r["served"] and not r["correct"])
    covered = sum(1 for r in should if r.get("covered", True))
    changed_served = sum(1 for r in changed if r["served"])
    unrelated_served = sum(1 for r in unrelated if r["served"])
    by_path: dict[str, list[float]] = {}
    for r in rows:
        by_path.setdefault(r["path"] if r["served"] else "miss", []).append(float(r["latency_ms"]))
    return {
        "queries": len(rows),
        "served": sum(1 for r in rows if r["served"]),
        "should_serve": len(should),
        "served_right": served_right,
        "served_wrong": served_wrong,
        "missed": len(should) - served_right - served_wrong,
        "coverage": covered,
        "changed": len(changed),
        "changed_served": changed_served,
        "changed_served_right": sum(1 for r in changed if r["served"] and r["correct"]),
        "unrelated": len(unrelated),
        "unrelated_served": unrelated_served,
        "rates": {
            "served_right": _rate(served_right, len(should)),
            "served_wrong": _rate(served_wrong, len(should)),
            "served_right_of_covered": _rate(served_right, covered),
            "coverage": _rate(covered, len(should)),
            "changed_served": _rate(changed_served, len(changed)),
            "unrelated_served": _rate(unrelated_served, len(unrelated)),
        },
        "by_verification": _by_verification(should, changed, unrelated),
        "served_by_another_entry": sum(1 for r in rows if r["served"] and r.get("expected_entry") and r.get("entry_id")
                                       and r["entry_id"] != r["expected_entry"]),
        "miss_reasons": dict(Counter(r["miss_reason"] for r in rows if not r["served"]).most_common()),
        "served_by_path": dict(Counter(r["path"] for r in rows if r["served"]).most_common()),
        "latency_ms": {**percentiles([float(r["latency_ms"]) for r in rows]),
                       "by_path": {path: percentiles(v) for path, v in sorted(by_path.items())}},
    }


def _by_verification(should: list[dict[str, Any]], changed: list[dict[str, Any]], unrelated: list[dict[str, Any]]
                     ) -> dict[str, dict[str, int]]:
    """Served right / wrong (and changed / unrelated served) split by the serving entry's verification
    status, as the answers report it (systems without one are counted under "")."""
    out: dict[str, dict[str, int]] = {}
    for group, rows in (("should", should), ("changed", changed), ("unrelated", unrelated)):
        for r in rows:
            if not r["served"]:
                continue
            status = out.setdefault(r.get("verification", ""), {"served_right": 0, "served_wrong": 0, "changed_served": 0,
                                                               "unrelated_served": 0})
            if group == "should":
                status["served_right" if r["correct"] else "served_wrong"] += 1
            else:
                status[f"{group}_served"] += 1
    return dict(sorted(out.items()))


def summarise_by_kind(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    rows = list(records)
    summary = summarise(rows)
    kinds = sorted({r["kind"] for r in rows if r.get("kind")})
    if kinds:
        summary["by_kind"] = {kind: summarise(r for r in rows if r.get("kind") == kind) for kind in kinds}
    return summary


def sweep(points: Sequence[tuple[float, bool, bool, bool]], thresholds: Sequence[float]) -> list[dict[str, Any]]:
    """Hit rate vs false hits across thresholds.

    ``points`` are (similarity, would_serve_correctly, would_serve, should_serve) per query: the
    similarity of the entry that would serve, whether serving it at a low enough threshold gives the
    expected answer, whether it would serve at all, and whether the query should be served. At
    threshold t a query is served when it would serve and its similarity >= t.
    """
    should = sum(1 for p in points if p[3])
    negatives = sum(1 for p in points if not p[3])
    out = []
    for t in thresholds:
        right = sum(1 for s, ok, serve, want in points if want and serve and ok and s >= t)
        false = sum(1 for s, _, serve, want in points if not want and serve and s >= t)
        out.append({"threshold": round(float(t), 4), "served_right": _rate(right, should),
                    "false_hits": _rate(false, negatives)})
    return out

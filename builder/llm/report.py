"""Per-entry build reports, rejection reasons, and the economics the paper reports.

Economics of one entry: the build cost (every S, B and J call made for it) as a multiple of one
source call, and the break-even hit count = build cost / (source call cost − cache call cost).
A cache call runs a small program on a CPU (plus at most a tiny target model): its cost is taken
as ~$0, so the break-even count equals the build multiple. One source call's cost is measured
when the transcript row carries the source model's ``usage``, else estimated from the text
lengths at ~4 characters per token (the basis is recorded with the number).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from builder.llm.client import Prices

CHARS_PER_TOKEN = 4.0
CACHE_CALL_USD = 0.0
CACHE_CALL_NOTE = "a cache call is a CPU program run: its cost is taken as ~$0"

#: Every reason an entry can be rejected with (the build keeps the reason and a detail for each).
REASONS: tuple[str, ...] = (
    "isolation_failed",      # phase 1: no valid isolation answer
    "isolation_mismatch",    # the isolated answer disagrees with the row's answer
    "decomposition_failed",  # phase 2
    "parameters_failed",     # phase 3: no valid template/parameters
    "planning_failed",       # phase 4
    "function_rejected",     # phase 5: a function failed checks or judges max_tries times
    "judge_failed",          # a judge gave no valid verdict
    "entry_invalid",         # the assembled module does not register or its entry is inconsistent
    "registry_conflict",     # merging would make a reference of the registry ambiguous or unresolvable
    "compile_failed",        # the static compiler refused the entry
    "wrong_on_original",     # the root's answer on the original values differs from the transcript's
    "round_trip_failed",     # a re-parameterised question crashed or disagreed with its reference
    "llm_failed",            # the service failed after retries
    "build_error",           # an unexpected error in the builder itself (a bug), kept with its message
)


class Rejected(Exception):
    """A question's build stops here; ``reason`` is one of REASONS, ``detail`` says why."""

    def __init__(self, reason: str, detail: Any) -> None:
        assert reason in REASONS, reason
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}")


@dataclass
class EntryReport:
    """Everything one question's build did and cost."""

    key: str
    question: str
    status: str = "rejected"            # accepted | rejected
    reason: str | None = None
    detail: Any = None
    entry_id: str | None = None
    module: str | None = None
    granularity: str | None = None
    functions: list[dict[str, Any]] = field(default_factory=list)
    round_trips: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, dict[str, Any]] = field(default_factory=dict)
    cost_usd: float = 0.0
    seconds: float = 0.0
    economics: dict[str, Any] = field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        return self.status == "accepted"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def source_call_usd(row: Mapping[str, Any], prices: Prices) -> tuple[float, str]:
    """(cost of one source call for this row, "measured" or "estimated")."""
    usage = row.get("usage") or row.get("source_usage")
    if isinstance(usage, Mapping) and usage.get("output_tokens"):
        return prices.cost(usage), "measured"
    tokens_in = math.ceil(len(str(row.get("question", ""))) / CHARS_PER_TOKEN)
    tokens_out = math.ceil((len(str(row.get("transcript", ""))) + len(str(row.get("answer") or ""))) / CHARS_PER_TOKEN)
    return prices.cost({"input_tokens": tokens_in, "output_tokens": tokens_out}), "estimated"


def economics(build_usd: float, source_usd: float, basis: str) -> dict[str, Any]:
    """Build multiple and break-even hit count for one entry."""
    saving = source_usd - CACHE_CALL_USD
    return {
        "build_usd": round(build_usd, 6),
        "source_call_usd": round(source_usd, 6),
        "source_call_basis": basis,
        "cache_call_usd": CACHE_CALL_USD,
        "cache_call_note": CACHE_CALL_NOTE,
        "build_multiple": round(build_usd / source_usd, 2) if source_usd > 0 else None,
        "break_even_hits": math.ceil(build_usd / saving) if saving > 0 else None,
    }


def summarise(reports: Iterable[EntryReport], *, built: int, cost_usd: float, usage: Mapping[str, Any],
              seconds: float) -> dict[str, Any]:
    """The build's summary: counts over every row (including rows decided by an earlier run), this run's cost."""
    reports = list(reports)
    by_reason: dict[str, int] = {}
    for r in reports:
        if not r.accepted:
            by_reason[r.reason or "unknown"] = by_reason.get(r.reason or "unknown", 0) + 1
    accepted = [r for r in reports if r.accepted]
    multiples = [r.economics["build_multiple"] for r in accepted if r.economics.get("build_multiple") is not None]
    hits = [r.economics["break_even_hits"] for r in accepted if r.economics.get("break_even_hits") is not None]
    reused = sum(1 for r in reports for f in r.functions if f.get("status") == "reused")
    return {
        "total": len(reports),
        "accepted": len(accepted),
        "rejected": len(reports) - len(accepted),
        "rejected_by_reason": dict(sorted(by_reason.items())),
        "built_this_run": built,
        "skipped_decided": len(reports) - built,
        "cost_usd": round(cost_usd, 6),
        "usage_by_role": dict(usage),
        "functions_reused": reused,
        "entries": sorted(r.entry_id for r in accepted if r.entry_id),
        "build_multiple_median": statistics.median(multiples) if multiples else None,
        "break_even_hits_median": statistics.median(hits) if hits else None,
        "cache_call_usd": CACHE_CALL_USD,
        "cache_call_note": CACHE_CALL_NOTE,
        "seconds": round(seconds, 3),
    }


def summary_table(summary: Mapping[str, Any]) -> Any:
    """A rich Table of the summary, for the terminal."""
    from rich.table import Table

    table = Table(title="arc-build entries")
    table.add_column("")
    table.add_column("value", justify="right")
    total = max(1, int(summary["total"]))
    table.add_row("questions", str(summary["total"]))
    table.add_row("accepted", f"{summary['accepted']} ({100 * summary['accepted'] / total:.0f}%)")
    for reason, count in summary["rejected_by_reason"].items():
        table.add_row(f"rejected: {reason}", str(count))
    table.add_row("built this run / skipped", f"{summary['built_this_run']} / {summary['skipped_decided']}")
    table.add_row("functions reused", str(summary["functions_reused"]))
    for role, tally in summary["usage_by_role"].items():
        table.add_row(f"{role}: calls, $", f"{tally['calls']}, ${tally['usd']:.4f}")
    table.add_row("cost this run", f"${summary['cost_usd']:.4f}")
    if summary["build_multiple_median"] is not None:
        table.add_row("build cost / one source call (median)", f"{summary['build_multiple_median']:.1f}x")
        table.add_row("break-even hits (median; cache call ~$0)", str(summary["break_even_hits_median"]))
    table.add_row("seconds", str(summary["seconds"]))
    return table


def entries_table(reports: Iterable[Mapping[str, Any]]) -> Any:
    """One row per question: entry, decision, tries per function, reuse, cost, break-even."""
    from rich.table import Table

    table = Table(title="entries")
    for column in ("question", "entry", "decision", "functions (tries / reused)", "$", "break-even"):
        table.add_column(column, overflow="fold")
    for r in reports:
        functions = ", ".join(
            f"{f['name']} ({'reused' if f.get('status') == 'reused' else f.get('tries', 0)})" for f in r.get("functions") or []
        )
        econ = r.get("economics") or {}
        question = str(r.get("question", ""))
        table.add_row(
            question if len(question) <= 48 else question[:45] + "...",
            r.get("entry_id") or "",
            "accepted" if r.get("status") == "accepted" else f"rejected: {r.get('reason')}",
            functions,
            f"{float(r.get('cost_usd') or 0):.4f}",
            str(econ.get("break_even_hits") or ""),
        )
    return table

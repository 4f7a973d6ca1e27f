"""What each reader serves that it must not: every changed and unrelated row of some query sets, side by side.

A tuned reader is trained to copy the values the aligner's draft spells, so its agreement with a draft is weaker
evidence than the stock model's; whether it may serve by default is decided by what it serves among questions the
cache must miss. For each reader (the stock artefact the bundle names, and each ``--reader DIR``), in its own
process, every row of ``--queries`` that must not be served (``reasoning_changed`` or unrelated) is answered
in-process through ``--bundle`` (IS1-IS4, guard on; ``benchmarks/extraction.bundle_accuracy``), and the served
ones are counted per kind and half (the template probes' ``half``).

    .venv/bin/python benchmarks/reader_safety.py --bundle B.arcb --queries build/s45/probes.jsonl \\
        --queries build/s45g/sets/gsm_plus_dev.jsonl --queries build/s45g/sets/gsm8k_unrelated.jsonl \\
        --reader build/s45/tm/2f3703ef4c20fda4 [--json]

JSON keys: ``rows`` (rows answered per reader), and per reader (``stock``, then each reader's directory name)
``served`` (count), ``by_kind`` (served per "kind / half") and ``paths`` (served per serving path and right/wrong).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))


def must_miss(paths: list[Path]) -> list[Any]:
    """The rows of ``paths`` a cache must not serve."""
    from builder.eval.querysets import load_query_set

    return [row for path in paths for row in load_query_set(path).rows if not row.should_serve]


def served_by(bundle: Path, queries: list[Path], reader: Path | None, threads: int) -> dict[str, Any]:
    """One reader's served rows among the must-miss rows (run in a process of its own)."""
    from extraction import bundle_accuracy

    rows = must_miss(queries)
    result = bundle_accuracy(bundle, Path("must-miss.jsonl"), threads, model=reader, rows_given=rows)
    served = [row for row, hit, _right, _ms in result["records"] if hit]
    by_kind = Counter(f"{row.kind.replace('template probe: ', '') or 'unrelated'} / {row.extra.get('half', '-')}"
                      for row in served)
    paths = {k: v for k, v in result["outcomes"].items() if not k.startswith("miss:")}
    return {"rows": len(rows), "served": len(served), "by_kind": dict(sorted(by_kind.items())), "paths": paths}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, required=True)
    parser.add_argument("--queries", type=Path, action="append", required=True)
    parser.add_argument("--reader", type=Path, action="append", default=[], help="a tuned artefact (repeatable)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    readers: dict[str, Path | None] = {"stock": None, **{path.name: path for path in args.reader}}
    results = {}
    for name, reader in readers.items():  # one process each: a model loaded before would slow the next
        with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
            results[name] = pool.submit(served_by, args.bundle, args.queries, reader, args.threads).result()
    if args.json:
        print(json.dumps({"rows": results["stock"]["rows"], **{k: {x: v[x] for x in ("served", "by_kind", "paths")}
                                                                 for k, v in results.items()}}))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"served among {results['stock']['rows']} rows that must miss")
    table.add_column("kind / half")
    for name in results:
        table.add_column(name, justify="right")
    kinds = sorted({k for r in results.values() for k in r["by_kind"]})
    for kind in kinds:
        table.add_row(kind, *(str(r["by_kind"].get(kind, 0)) for r in results.values()))
    table.add_row("all", *(str(r["served"]) for r in results.values()))
    Console().print(table)


if __name__ == "__main__":
    main()

"""IS3 dispatch cost: dynamic (semantic discovery by embedding) vs compiled (direct calls), per example.

Both modes run the same entry on the same validated parameters in one process, side by
side; target-model calls are answered instantly so the figures measure dispatch only.

    .venv/bin/python benchmarks/dispatch.py [--repeats N] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from edge_runtime.entries.compiler import LoadedCompiledEntry, compile_entry  # noqa: E402
from edge_runtime.entries.registry import Registry  # noqa: E402
from edge_runtime.model.instant_lm import InstantTargetLM  # noqa: E402
from edge_runtime.route.embedder import OnnxSentenceEmbedder  # noqa: E402


def median_us(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up: first-call effects are not dispatch
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        fn()
        samples.append((time.perf_counter_ns() - start) / 1000)
    return statistics.median(samples)


def measure(repeats: int) -> dict:
    embedder = OnnxSentenceEmbedder()
    # Dynamic mode as the method defines it: every do()/load() reference is embedded and searched.
    registry = Registry(embedder, exact_shortcut=False)
    registry.add_directory(REPO / "bundles" / "examples")
    # The same registry with the exact-text shortcut (references spelled exactly like their target skip the embedder).
    shortcut = Registry(embedder)
    shortcut.add_directory(REPO / "bundles" / "examples")
    lm = InstantTargetLM()
    examples = {}
    for entry_id, entry in sorted(registry.entries.items()):
        values = entry.validate(entry.original_values)
        compiled = LoadedCompiledEntry(compile_entry(registry, entry_id).source, entry_id)
        dynamic_result = registry.run(entry_id, values, target_lm=lm)
        compiled_result = compiled.run(values, target_lm=lm)
        if dynamic_result != compiled_result:
            raise SystemExit(f"{entry_id}: dynamic and compiled executions differ")
        dynamic_us = median_us(lambda: registry.run(entry_id, values, target_lm=lm), max(5, repeats // 20))
        shortcut_us = median_us(lambda: shortcut.run(entry_id, values, target_lm=lm), max(5, repeats // 4))
        compiled_us = median_us(lambda: compiled.run(values, target_lm=lm), repeats)
        examples[entry_id] = {
            "dynamic_us": round(dynamic_us, 2),
            "dynamic_exact_shortcut_us": round(shortcut_us, 2),
            "compiled_us": round(compiled_us, 2),
            "ratio": round(dynamic_us / compiled_us, 1),
            "ratio_vs_shortcut": round(shortcut_us / compiled_us, 1),
        }
    ratios = [e["ratio"] for e in examples.values()]
    return {
        "examples": examples,
        "min_ratio": min(ratios),
        "median_ratio": statistics.median(ratios),
        "goal_median_ratio": 50,
        "embedder": "all-MiniLM-L6-v2 int8 ONNX (onnxruntime, 1 thread)",
        "repeats_compiled": repeats,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=400, help="timed runs of the compiled path per example")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args()
    figures = measure(args.repeats)
    if args.json:
        print(json.dumps(figures))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="IS3 dispatch: dynamic vs compiled (median per run)")
    for column in ("entry", "dynamic µs", "dynamic, exact-text shortcut µs", "compiled µs", "ratio", "ratio vs shortcut"):
        table.add_column(column, justify="left" if column == "entry" else "right")
    for entry_id, row in figures["examples"].items():
        table.add_row(
            entry_id, f"{row['dynamic_us']:.0f}", f"{row['dynamic_exact_shortcut_us']:.0f}", f"{row['compiled_us']:.1f}",
            f"{row['ratio']:.0f}×", f"{row['ratio_vs_shortcut']:.0f}×",
        )
    console = Console()
    console.print(table)
    console.print(f"median ratio {figures['median_ratio']:.0f}× (goal ≥ 50×), min {figures['min_ratio']:.0f}×")


if __name__ == "__main__":
    main()

"""Forward passes of the target model one at a time or two at once, side by side, in one process.

A model-path request is one verifying pass (~75 tokens of question and draft on a ~300-token cached
prefix). Under load several requests wait for the model; this measures passes per second and the
latency of a pass for each number of passes the engine lets into the session at once
(``LMEngine(concurrent_runs=...)``, ``arc-edge serve --model-runs``) and each number of callers. The
two settings alternate in rounds on one engine each, so a shared host's noise falls on both alike.

    .venv/bin/python benchmarks/concurrent_runs.py [--passes 40] [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

from tqdm import tqdm

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from builder.pipeline import target_model_dir  # noqa: E402
from edge_runtime.model.lm_engine import KVState, LMEngine  # noqa: E402

PREFIX_TOKENS = 300
PASS_TOKENS = 75


def timed_passes(engine: LMEngine, state: KVState, passes: list[list[int]], callers: int) -> tuple[float, list[float]]:
    """Run every pass from ``callers`` threads; returns passes per second and each pass's latency (ms)."""
    latencies: list[float] = []
    lock = threading.Lock()
    queue = list(passes)

    def worker() -> None:
        while True:
            with lock:
                if not queue:
                    return
                ids = queue.pop()
            start = time.perf_counter()
            engine.forward(ids, state, keep_state=False)
            elapsed = (time.perf_counter() - start) * 1000
            with lock:
                latencies.append(elapsed)

    threads = [threading.Thread(target=worker) for _ in range(callers)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(passes) / (time.perf_counter() - start), latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artefact", type=Path, default=None, help="target-model artefact (default: the builder's)")
    parser.add_argument("--passes", type=int, default=40, help="passes per measurement")
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds; the figures are medians over them")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    artefact = args.artefact or target_model_dir("default")
    engines = {runs: LMEngine(artefact, threads=args.threads, concurrent_runs=runs) for runs in (1, 2)}
    text = (REPO / "README.md").read_text() + (REPO / "docs" / "architecture.md").read_text()
    ids = engines[1].encode(text)
    prefix = ids[:PREFIX_TOKENS]
    passes = [ids[PREFIX_TOKENS + PASS_TOKENS * k: PREFIX_TOKENS + PASS_TOKENS * (k + 1)] for k in range(args.passes)]
    if len(passes[-1]) < PASS_TOKENS:
        raise SystemExit("not enough text for the passes asked for")
    states = {runs: engine.prefix_state(prefix) for runs, engine in engines.items()}
    for runs, engine in engines.items():  # warm-up
        timed_passes(engine, states[runs], passes[:4], 2)
    callers_levels = (1, 2, 4)
    samples: dict[tuple[int, int], list[tuple[float, float]]] = {}
    plan = [(callers, runs) for _ in range(args.rounds) for callers in callers_levels for runs in (1, 2)]
    for callers, runs in tqdm(plan, desc="measurements", file=sys.stderr):
        rate, latencies = timed_passes(engines[runs], states[runs], passes, callers)
        samples.setdefault((callers, runs), []).append((rate, statistics.median(latencies)))
    figures: dict = {"prefix_tokens": PREFIX_TOKENS, "pass_tokens": PASS_TOKENS, "threads": args.threads,
                     "rounds": args.rounds, "passes_per_s": {}, "pass_p50_ms": {}, "speedup": {}}
    for callers in callers_levels:
        for runs in (1, 2):
            rate = statistics.median(r for r, _ in samples[(callers, runs)])
            p50 = statistics.median(m for _, m in samples[(callers, runs)])
            figures["passes_per_s"][f"runs{runs}_callers{callers}"] = round(rate, 1)
            figures["pass_p50_ms"][f"runs{runs}_callers{callers}"] = round(p50, 1)
        figures["speedup"][f"callers{callers}"] = round(
            figures["passes_per_s"][f"runs2_callers{callers}"] / figures["passes_per_s"][f"runs1_callers{callers}"], 3)
    if args.json:
        print(json.dumps(figures))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{PASS_TOKENS}-token passes on a {PREFIX_TOKENS}-token prefix, {args.threads} threads, "
                        f"medians of {args.rounds} rounds")
    for column in ("callers", "1 run at a time: passes/s", "p50 ms", "2 runs at once: passes/s", "p50 ms", "2 / 1"):
        table.add_column(column, justify="right")
    for callers in callers_levels:
        one, two = f"runs1_callers{callers}", f"runs2_callers{callers}"
        table.add_row(str(callers), f"{figures['passes_per_s'][one]:g}", f"{figures['pass_p50_ms'][one]:g}",
                      f"{figures['passes_per_s'][two]:g}", f"{figures['pass_p50_ms'][two]:g}",
                      f"{figures['speedup'][f'callers{callers}']:.2f}x")
    Console().print(table)


if __name__ == "__main__":
    main()

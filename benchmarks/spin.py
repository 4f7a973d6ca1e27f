"""onnxruntime thread spinning on and off, side by side: benchmarks/serve.py run alternately with and without
``--spin``, the medians of each figure per setting, and their ratio.

Why: by default onnxruntime's intra-op threads busy-wait between operators. On a 2-core device the model
shares its cores with the entry workers and the gRPC threads, so a spinning thread can hold a core a
template hit or an entry's ``lm()`` call is waiting for. The runtime's default (``RuntimeOptions.spin``)
is chosen from this measurement (docs/benchmarks.md).

    .venv/bin/python benchmarks/spin.py [--pairs 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from tqdm import tqdm

REPO = Path(__file__).resolve().parents[1]
#: (key in serve.py's JSON, label, higher is better)
FIGURES = (
    ("fast_hit_p50_ms", "template hit p50 ms", False),
    ("fast_hit_p99_ms", "template hit p99 ms (an entry's lm() call)", False),
    ("lm_hit_p50_ms", "model-path hit p50 ms", False),
    ("lm_hit_p99_ms", "model-path hit p99 ms", False),
    ("throughput_1", "req/s at concurrency 1", True),
    ("throughput_16", "req/s at concurrency 16", True),
    ("throughput_32", "req/s at concurrency 32", True),
    ("cold_start_s", "cold start s", False),
    ("rss_mb", "peak RSS MB", False),
    ("reference_pass_ms", "reference pass ms (host speed)", False),
)


def serve_run(spin: bool) -> dict[str, float]:
    """One benchmarks/serve.py run, flattened to the figures above."""
    cmd = [sys.executable, str(REPO / "benchmarks" / "serve.py"), "--json"] + (["--spin"] if spin else [])
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=REPO,
                         env={**os.environ, "ORT_DISABLE_TELEMETRY": "1"})
    run = json.loads(out.stdout.strip().splitlines()[-1])
    for level, rps in run.pop("throughput_rps").items():
        run[f"throughput_{level}"] = rps
    return {key: run[key] for key, _, _ in FIGURES if run.get(key) is not None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5, help="serve.py runs per setting, alternated")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    runs: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    order = [spin for _ in range(args.pairs) for spin in (False, True)]
    for spin in tqdm(order, desc="serve.py runs", file=sys.stderr):
        runs[spin].append(serve_run(spin))
    medians = {spin: {key: statistics.median(r[key] for r in rs if key in r) for key, _, _ in FIGURES
                      if any(key in r for r in rs)} for spin, rs in runs.items()}
    ratio = {key: round(medians[False][key] / medians[True][key], 3) for key in medians[False]
             if key in medians[True] and medians[True][key]}
    figures = {"pairs": args.pairs, "spin_off": medians[False], "spin_on": medians[True], "off_over_on": ratio,
               "runs": {"spin_off": runs[False], "spin_on": runs[True]}}
    if args.json:
        print(json.dumps(figures))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"benchmarks/serve.py, medians of {args.pairs} alternated runs per setting")
    for column in ("figure", "spin off", "spin on", "off / on", "better"):
        table.add_column(column)
    for key, label, higher in FIGURES:
        if key not in ratio:
            continue
        better = "off" if (ratio[key] > 1) == higher and ratio[key] != 1 else "on" if ratio[key] != 1 else "—"
        table.add_row(label, f"{medians[False][key]:g}", f"{medians[True][key]:g}", f"{ratio[key]:.2f}", better)
    Console().print(table)


if __name__ == "__main__":
    main()

"""A server setting against the default, side by side: benchmarks/serve.py run alternately with each, the
medians of each figure per setting, and their ratio. The runtime's defaults are chosen from these
measurements (docs/benchmarks.md):

- ``--compare spin``: onnxruntime's intra-op threads busy-wait between operators (its own default)
  or sleep (ours). On a 2-core device the model shares its cores with the entry workers and the gRPC
  threads, so a spinning thread can hold a core a template hit or an entry's ``lm()`` call waits for.
- ``--compare model-runs``: two forward passes in the session at once (ours) or one at a time.

    .venv/bin/python benchmarks/serve_ab.py --compare spin|model-runs [--pairs 5] [--json]
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


#: setting -> (label of the default, its serve.py flags, label of the alternative, its flags)
SETTINGS: dict[str, tuple[str, list[str], str, list[str]]] = {
    "spin": ("spin off", [], "spin on", ["--spin"]),
    "model-runs": ("2 runs at once", ["--model-runs", "2"], "1 run at a time", ["--model-runs", "1"]),
}


def serve_run(flags: list[str]) -> dict[str, float]:
    """One benchmarks/serve.py run, flattened to the figures above."""
    cmd = [sys.executable, str(REPO / "benchmarks" / "serve.py"), "--json", *flags]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=REPO,
                         env={**os.environ, "ORT_DISABLE_TELEMETRY": "1"})
    run = json.loads(out.stdout.strip().splitlines()[-1])
    for level, rps in run.pop("throughput_rps").items():
        run[f"throughput_{level}"] = rps
    return {key: run[key] for key, _, _ in FIGURES if run.get(key) is not None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", choices=sorted(SETTINGS), required=True)
    parser.add_argument("--pairs", type=int, default=5, help="serve.py runs per setting, alternated")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    label_a, flags_a, label_b, flags_b = SETTINGS[args.compare]
    runs: dict[str, list[dict[str, float]]] = {"a": [], "b": []}
    order = [side for _ in range(args.pairs) for side in ("a", "b")]
    for side in tqdm(order, desc="serve.py runs", file=sys.stderr):
        runs[side].append(serve_run(flags_a if side == "a" else flags_b))
    medians = {side: {key: statistics.median(r[key] for r in rs if key in r) for key, _, _ in FIGURES
                      if any(key in r for r in rs)} for side, rs in runs.items()}
    ratio = {key: round(medians["a"][key] / medians["b"][key], 3) for key in medians["a"]
             if key in medians["b"] and medians["b"][key]}
    figures = {"compare": args.compare, "pairs": args.pairs, "a": label_a, "b": label_b,
               "medians_a": medians["a"], "medians_b": medians["b"], "a_over_b": ratio, "runs": runs}
    if args.json:
        print(json.dumps(figures))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"benchmarks/serve.py, medians of {args.pairs} alternated runs per setting")
    for column in ("figure", label_a, label_b, "ratio", "better"):
        table.add_column(column)
    for key, label, higher in FIGURES:
        if key not in ratio:
            continue
        better = label_a if (ratio[key] > 1) == higher and ratio[key] != 1 else label_b if ratio[key] != 1 else "—"
        table.add_row(label, f"{medians['a'][key]:g}", f"{medians['b'][key]:g}", f"{ratio[key]:.2f}", better)
    Console().print(table)


if __name__ == "__main__":
    main()

"""IS1 routing: the distilled static table vs the MiniLM int8 ONNX encoder, side by side on GSM8K variants.

Entries are 300 GSM8K test questions (every seed of GSM-Plus and GSM-Symbolic, filled up
with a seeded sample), each its own entry represented by its question text. Positives
are the variants that keep the reasoning (GSM-Plus kinds with ``reasoning_changed``
false, and GSM-Symbolic re-parameterisations) of those 300; negatives are 300 other GSM8K
test questions. Per embedder: top-1 accuracy, top-3 recall, the threshold calibrated at
<= 1% false hits and the hit rate it keeps, and the median time to embed and route one query.

Data is read from ../shared/data (never copied); the static table is distilled into
build/ on first use (cached by the model's sha256).

    .venv/bin/python benchmarks/routing.py [--json] [--seed N] [--timed N]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
STATIC_DIR = REPO / "build" / "static_embedder" / "minilm_l6_256"
CACHE_DIR = REPO / "build" / "distill"

from edge_runtime.route.embedder import Embedder, OnnxSentenceEmbedder  # noqa: E402
from edge_runtime.route.router import Router, calibrate  # noqa: E402
from edge_runtime.route.static_embedder import StaticEmbedder  # noqa: E402

N_ENTRIES = 300
N_NEGATIVES = 300
REASONING_KEPT = {
    "numerical substitution", "digit expansion", "integer-decimal-fraction conversion",
    "problem understanding", "distraction insertion",
}


def _jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def load_dataset(seed: int) -> dict:
    gsm8k = _jsonl(DATA / "gsm8k" / "gsm8k_test.jsonl")
    plus = _jsonl(DATA / "gsm_plus_dev.jsonl")
    symbolic = _jsonl(DATA / "gsm_symbolic_dev.jsonl")
    for row in plus:  # the kinds named above are exactly the ones the data marks as keeping the reasoning
        assert (row["perturbation_type"] in REASONING_KEPT) == (not row["reasoning_changed"]), row["perturbation_type"]

    seeds = sorted({r["gsm8k_row"] for r in plus} | {r["gsm8k_row"] for r in symbolic})
    rng = random.Random(seed)
    rest = [i for i in range(len(gsm8k)) if i not in set(seeds)]
    rng.shuffle(rest)
    entry_rows = sorted(seeds + rest[: N_ENTRIES - len(seeds)])
    negative_rows = rest[N_ENTRIES - len(seeds) : N_ENTRIES - len(seeds) + N_NEGATIVES]
    chosen = set(entry_rows)

    def entry_id(row: int) -> str:
        return f"gsm8k-{row}"

    positives, sources = [], []
    for r in plus:
        if r["perturbation_type"] in REASONING_KEPT and r["gsm8k_row"] in chosen:
            positives.append((r["query"], entry_id(r["gsm8k_row"])))
            sources.append("gsm_plus " + r["perturbation_type"].split()[0])
    for r in symbolic:
        if r["gsm8k_row"] in chosen:
            positives.append((r["query"], entry_id(r["gsm8k_row"])))
            sources.append("gsm_symbolic")
    changed = [(r["query"], entry_id(r["gsm8k_row"])) for r in plus if r["reasoning_changed"] and r["gsm8k_row"] in chosen]
    return {
        "entries": [(entry_id(i), [gsm8k[i]["question"]]) for i in entry_rows],
        "positives": positives,
        "sources": sources,
        "negatives": [gsm8k[i]["question"] for i in negative_rows],
        "reasoning_changed": changed,
    }


def evaluate(name: str, embedder: Embedder, data: dict, timed: int) -> dict:
    start = time.perf_counter()
    router = Router(data["entries"], embedder)
    build_seconds = time.perf_counter() - start

    cal = calibrate(router, data["positives"], data["negatives"], max_false_hit_rate=0.01, k=3)
    routes = router.route_many([q for q, _ in data["positives"]], k=1)
    by_source: dict[str, list[bool]] = {}
    for (_, expected), source, candidates in zip(data["positives"], data["sources"], routes):
        by_source.setdefault(source, []).append(candidates[0].entry_id == expected)
    changed_routes = router.route_many([q for q, _ in data["reasoning_changed"]], k=1)
    changed_pass = sum(
        c[0].entry_id == expected and c[0].similarity >= cal.threshold
        for (_, expected), c in zip(data["reasoning_changed"], changed_routes)
    )

    queries = [q for q, _ in data["positives"]][:timed]
    router.route(queries[0])  # warm-up
    samples = []
    for query in queries:
        t0 = time.perf_counter_ns()
        router.route(query, k=3)
        samples.append((time.perf_counter_ns() - t0) / 1e6)
    return {
        "embedder": name,
        "dim": int(embedder.dim),
        "top1_accuracy": round(cal.top1_accuracy, 4),
        "top3_recall": round(cal.top_k_recall, 4),
        "threshold": round(cal.threshold, 4),
        "hit_rate": round(cal.hit_rate, 4),
        "false_hit_rate": round(cal.false_hit_rate, 4),
        "wrong_hit_rate": round(cal.wrong_hit_rate, 4),
        "reasoning_changed_pass_rate": round(changed_pass / max(len(changed_routes), 1), 4),
        "ms_per_query_median": round(statistics.median(samples), 4),
        "ms_per_query_p90": round(sorted(samples)[int(0.9 * (len(samples) - 1))], 4),
        "index_build_seconds": round(build_seconds, 2),
        "top1_by_source": {k: round(sum(v) / len(v), 4) for k, v in sorted(by_source.items())},
        "n_entries": len(data["entries"]),
        "n_pos": cal.n_pos,
        "n_neg": cal.n_neg,
    }


def measure(seed: int, timed: int) -> dict:
    from builder.distill import distill_static_embedder

    start = time.perf_counter()
    distill_static_embedder(STATIC_DIR, 256, cache_dir=CACHE_DIR, progress=True)
    distill_seconds = time.perf_counter() - start
    static = StaticEmbedder.load(STATIC_DIR)
    data = load_dataset(seed)
    figures = {
        "static": evaluate("static (distilled MiniLM, 256-d, numpy)", static, data, timed),
        "minilm_onnx": evaluate("all-MiniLM-L6-v2 int8 ONNX (1 thread)", OnnxSentenceEmbedder(), data, timed),
    }
    figures["static"]["distill_encode_seconds"] = static.meta.get("encode_seconds")
    figures["static"]["load_or_distill_seconds"] = round(distill_seconds, 2)
    figures["setup"] = {
        "data": str(DATA),
        "seed": seed,
        "max_false_hit_rate": 0.01,
        "n_reasoning_changed": len(data["reasoning_changed"]),
    }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed for the filler entries and negatives")
    parser.add_argument("--timed", type=int, default=400, help="queries timed per embedder")
    args = parser.parse_args()
    if not (DATA / "gsm8k" / "gsm8k_test.jsonl").is_file():
        print(f"skipped: the shared data folder {DATA} (gsm8k/gsm8k_test.jsonl, gsm_plus_dev.jsonl, "
              "gsm_symbolic_dev.jsonl) is absent", file=sys.stderr)
        raise SystemExit(0)
    figures = measure(args.seed, args.timed)
    if args.json:
        print(json.dumps(figures))
        return
    from rich.console import Console
    from rich.table import Table

    rows = [
        ("top-1 accuracy", "top1_accuracy", "{:.1%}"),
        ("top-3 recall", "top3_recall", "{:.1%}"),
        ("threshold @ ≤1% false hits", "threshold", "{:.3f}"),
        ("hit rate at that threshold", "hit_rate", "{:.1%}"),
        ("false-hit rate (negatives)", "false_hit_rate", "{:.1%}"),
        ("wrong-entry hits (positives)", "wrong_hit_rate", "{:.1%}"),
        ("reasoning-changed variants passing", "reasoning_changed_pass_rate", "{:.1%}"),
        ("ms / query (median)", "ms_per_query_median", "{:.3f}"),
        ("ms / query (p90)", "ms_per_query_p90", "{:.3f}"),
        ("index build s", "index_build_seconds", "{:.2f}"),
    ]
    setup = figures["setup"]
    static, onnx = figures["static"], figures["minilm_onnx"]
    table = Table(title=f"IS1 routing: {static['n_entries']} GSM8K entries, {static['n_pos']} positives, "
                        f"{static['n_neg']} negatives")
    table.add_column("metric")
    table.add_column("static (distilled)", justify="right")
    table.add_column("MiniLM int8 ONNX", justify="right")
    for label, key, fmt in rows:
        table.add_row(label, fmt.format(static[key]), fmt.format(onnx[key]))
    for source in static["top1_by_source"]:
        table.add_row(f"  top-1 {source}", f"{static['top1_by_source'][source]:.1%}",
                      f"{onnx['top1_by_source'][source]:.1%}")
    console = Console()
    console.print(table)
    console.print(f"static table: distillation encode {static['distill_encode_seconds']} s (cached in build/distill); "
                  f"{setup['n_reasoning_changed']} reasoning-changed variants are not positives (IS2 must refuse them)")


if __name__ == "__main__":
    main()

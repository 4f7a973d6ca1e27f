"""Would batching concurrent extractions raise throughput? Measured on the real target model.

A verifying pass (question + draft, ~80 tokens, on a reused ~300-token prompt prefix) is run
for B rows at once (one padded batch, per-row KV) and one row at a time, side by side; the
same for a single decode step (1 token per row), where batching usually pays. The server
batches only if the ratio says so. The compact graph's GroupQueryAttention (onnxruntime 1.32)
refuses several rows of several new tokens on a past: the table says so for verifying passes.

    .venv/bin/python benchmarks/batching.py [--artefact DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from edge_runtime.model.lm_engine import LMEngine  # noqa: E402


def batched_seconds(engine: LMEngine, rows: int, new: int, past: int, repeats: int) -> float:
    """Median seconds of one forward pass over ``rows`` rows of ``new`` tokens after ``past`` tokens."""
    rng = np.random.default_rng(0)
    if engine.compact:  # builder/llama_onnx.py: embeddings in, a per-row count of tokens so far
        ids = rng.integers(1000, 20000, size=(rows, new))
        feeds: dict[str, np.ndarray] = {
            "inputs_embeds": np.asarray(engine.embedding[ids.reshape(-1)], dtype=np.float32).reshape(rows, new, -1),
            "seqlens_k": np.full((rows,), past + new - 1, dtype=np.int32),
            "total_sequence_length": np.array(past + new, dtype=np.int32),
        }
    else:
        feeds = {
            "input_ids": rng.integers(1000, 20000, size=(rows, new), dtype=np.int64),
            "attention_mask": np.ones((rows, past + new), dtype=np.int64),
            "position_ids": np.tile(np.arange(past, past + new, dtype=np.int64), (rows, 1)),
        }
    for i in range(engine.num_layers):
        for kind in ("key", "value"):
            feeds[f"past_key_values.{i}.{kind}"] = rng.standard_normal(
                (rows, engine.kv_heads, past, engine.head_dim), dtype=np.float32
            )
    names = ["hidden"] + [f"present.{i}.{k}" for i in range(engine.num_layers) for k in ("key", "value")]
    engine.session.run(names, feeds)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        engine.session.run(names, feeds)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artefact", type=Path, default=None)
    parser.add_argument("--rows", default="1,2,4,8")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    artefact = args.artefact
    if artefact is None:
        from builder.target_model import build_target_model

        artefact = build_target_model(progress=lambda m: print(m, file=sys.stderr))
    engine = LMEngine(artefact)
    figures: dict = {"recipe": engine.manifest.get("recipe"), "verify_pass": {}, "decode_step": {}}
    for kind, new in (("verify_pass", 80), ("decode_step", 1)):
        single = batched_seconds(engine, 1, new, 300, args.repeats)
        for rows in (int(r) for r in args.rows.split(",")):
            try:
                batch = single if rows == 1 else batched_seconds(engine, rows, new, 300, args.repeats)
            except Exception as exc:  # noqa: BLE001 - onnxruntime's own error types
                # onnxruntime 1.32's GroupQueryAttention (the compact graph) takes one row when a pass has
                # several new tokens on a past: verifying passes cannot be batched in that graph at all.
                figures[kind][str(rows)] = {"unsupported": str(exc).split("Status Message:")[-1].strip()[:120]}
                continue
            figures[kind][str(rows)] = {
                "batch_ms": round(batch * 1000, 1),
                "sequential_ms": round(single * rows * 1000, 1),
                "throughput_gain": round(single * rows / batch, 2),
            }
    if args.json:
        print(json.dumps(figures))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"batching on this machine — SmolLM2-135M {figures['recipe']}, prefix 300 tokens")
    for column in ("pass", "rows", "one batch ms", "one row at a time ms", "throughput gain"):
        table.add_column(column, justify="right")
    for kind in ("verify_pass", "decode_step"):
        for rows, row in figures[kind].items():
            if "unsupported" in row:
                table.add_row(kind, rows, "—", "—", "not supported: " + row["unsupported"])
                continue
            table.add_row(kind, rows, str(row["batch_ms"]), str(row["sequential_ms"]), f"{row['throughput_gain']:.2f}x")
    Console().print(table)


if __name__ == "__main__":
    main()

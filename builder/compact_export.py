"""The compact export of a Llama model: weights read directly, graph written by ``llama_onnx``.

Steps: read the weights (a GGUF file's own quantised blocks, or a Hugging Face checkpoint's
floats); for SmoothQuant recipes, run a calibration graph over ``CALIBRATION_TEXTS`` and fold the
scales in; write ``model.onnx`` and ``head.onnx``; write the embedding table the runtime looks
tokens up in (and multiplies hidden states by for sparse logits when the head is tied).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from builder.llama_onnx import Precision, build_llama_graphs
from builder.llama_weights import LlamaWeights, WeightsError, read_gguf, read_hf_checkpoint
from builder.quant_blocks import dense


def read_weights(source: Path) -> LlamaWeights:
    return read_gguf(source) if source.is_file() else read_hf_checkpoint(source)


def export_compact(weights: LlamaWeights, out_dir: Path, precision: Precision, *, smoothing_alpha: float | None,
                   tokenize: Callable[[str], list[int]], progress: Callable[[str], None]) -> dict[str, Any]:
    """Write the graphs and tables into ``out_dir``; returns what the manifest records about them."""
    from builder.smoothing import CALIBRATION_TEXTS, activation_maxima, smooth

    floats = precision.default == "fp32"
    table = dense(weights.embedding).astype(np.float32 if floats else np.float16)
    record: dict[str, Any] = {"graph": "compact", "precision": precision.default,
                              "precision_overrides": dict(precision.overrides), "exact_source_weights": weights.exact}
    if smoothing_alpha is not None:
        progress(f"calibrating SmoothQuant (alpha {smoothing_alpha}) on {len(CALIBRATION_TEXTS)} texts")
        work = Path(tempfile.mkdtemp(prefix="arc-calibration-"))
        try:
            calibration_graph, _ = build_llama_graphs(weights, work, calibration=True)
            cfg = weights.config
            maxima = activation_maxima(
                calibration_graph, lambda ids: table[ids].astype(np.float32), [tokenize(t) for t in CALIBRATION_TEXTS],
                cfg.num_layers, cfg.num_kv_heads, cfg.head_dim,
            )
        finally:
            shutil.rmtree(work, ignore_errors=True)
        weights = smooth(weights, maxima, precision, smoothing_alpha)
        record["smoothing"] = {"alpha": smoothing_alpha, "calibration_texts": len(CALIBRATION_TEXTS)}
    progress(f"writing the compact graph ({precision.default}"
             + (f", {dict(precision.overrides)}" if precision.overrides else "") + ")")
    build_llama_graphs(weights, out_dir, precision=precision)
    np.save(out_dir / "embedding.npy", table)
    if not weights.config.tie_word_embeddings:
        np.save(out_dir / "lm_head.npy", dense(weights.head).astype(table.dtype))
    return record


__all__ = ["WeightsError", "export_compact", "read_weights"]

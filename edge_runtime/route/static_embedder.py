"""A static (distilled) sentence embedder: one table row per vocabulary token, no encoder at run time.

The table is distilled at build time from the sentence encoder (``builder/distill.py``):
row ``i`` is the encoder's embedding of token ``i`` alone, reduced by PCA, with the
token's frequency weight already folded in. A text's embedding is the sum of its
tokens' rows (the weighted mean, up to scale), L2-normalised. A text none of whose
tokens has a non-zero row (empty, or only unknown tokens) embeds to the zero vector, so
its similarity to everything is 0.

Only numpy and tokenizers are used: no onnxruntime session, no torch.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from edge_runtime.route.embedder import Embedder

TOKENIZER_FILE = "tokenizer.json"
TABLE_FILE = "table.npy"
META_FILE = "meta.json"


class StaticEmbedder(Embedder):
    """Embeds a text as the normalised sum of its WordPiece tokens' rows in a static table."""

    def __init__(
        self,
        tokenizer: Tokenizer | str | Path,
        table: np.ndarray,
        *,
        meta: dict[str, Any] | None = None,
    ) -> None:
        if not isinstance(tokenizer, Tokenizer):
            tokenizer = Tokenizer.from_file(str(tokenizer))
        # The encoder's tokenizer file pads and truncates to 128; a static lookup needs neither.
        tokenizer.no_padding()
        tokenizer.no_truncation()
        if table.ndim != 2:
            raise ValueError(f"the table must be 2-D [vocab, dim], got shape {table.shape}")
        if table.dtype != np.float32:
            table = table.astype(np.float32)
        vocab = tokenizer.get_vocab_size(with_added_tokens=True)
        if table.shape[0] < vocab:
            raise ValueError(f"the table has {table.shape[0]} rows but the tokenizer has {vocab} tokens")
        self._tokenizer = tokenizer
        self.table = table
        self.dim = int(table.shape[1])
        self.meta = dict(meta or {})

    # -- embedding -----------------------------------------------------------------------------

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string")
        if len(texts) == 1:  # the hot path: one query, as little numpy overhead as possible
            ids = self._tokenizer.encode(texts[0], add_special_tokens=False).ids
            if not ids:
                return np.zeros((1, self.dim), dtype=np.float32)
            vector = self.table[ids].sum(axis=0, keepdims=True)
            norm = float(np.sqrt(np.dot(vector[0], vector[0])))
            return vector / norm if norm > 0 else np.zeros((1, self.dim), dtype=np.float32)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encode = getattr(self._tokenizer, "encode_batch_fast", self._tokenizer.encode_batch)  # no offsets needed
        for row, encoding in enumerate(encode(list(texts), add_special_tokens=False)):
            ids = encoding.ids
            if ids:
                out[row] = self.table[ids].sum(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def tokens(self, text: str) -> list[str]:
        """The WordPiece tokens a text is embedded from (for debugging a route)."""
        return self._tokenizer.encode(text, add_special_tokens=False).tokens

    # -- persistence ---------------------------------------------------------------------------

    def save(self, directory: str | Path) -> Path:
        """Write ``tokenizer.json``, ``table.npy`` and ``meta.json`` into ``directory``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self._tokenizer.save(str(directory / TOKENIZER_FILE))
        np.save(directory / TABLE_FILE, np.ascontiguousarray(self.table, dtype=np.float32))
        meta = {**self.meta, "dim": self.dim, "vocab_size": int(self.table.shape[0])}
        (directory / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return directory

    @classmethod
    def load(cls, directory: str | Path, *, mmap: bool = True) -> StaticEmbedder:
        """Load a directory written by ``save`` (or by ``builder.distill``); the table is memory-mapped by default."""
        directory = Path(directory)
        for name in (TOKENIZER_FILE, TABLE_FILE):
            if not (directory / name).is_file():
                raise FileNotFoundError(f"static embedder directory {directory} has no {name}")
        table = np.load(directory / TABLE_FILE, mmap_mode="r" if mmap else None, allow_pickle=False)
        meta_path = directory / META_FILE
        meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
        return cls(directory / TOKENIZER_FILE, table, meta=meta)

"""GPTCache 0.1.44 as the semantic-cache baseline, run offline (see ../shared/design/peers.md).

- embedding: all-MiniLM-L6-v2 int8 on onnxruntime (``edge_runtime.route.embedder.OnnxSentenceEmbedder``,
  mean-pooled, normalised; the same encoder the routing table of ARC is distilled from);
- storage: ``get_data_manager(CacheBase("sqlite"), VectorBase("faiss", dimension=384))`` in a fresh
  temporary directory, ``max_size`` above the number of cached questions (no eviction);
- ``SearchDistanceEvaluation()`` (faiss returns squared L2 between unit vectors, so a hit at
  ``similarity_threshold`` t needs cosine >= 2t - 1), ``pre_embedding_func=get_prompt``,
  ``Config(similarity_threshold=t, disable_report=True)``;
- contents: the bundle's entries as (original question -> reference answer): a hit returns the stored
  answer of the most similar cached question.

GPTCache's import helpers pip-install missing modules at run time; :func:`require_gptcache`
checks that everything this configuration needs is installed first, so that never happens.
"""

from __future__ import annotations

import importlib.util
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from builder.eval.systems import CachedQuestion, Outcome

THRESHOLDS = (0.8, 0.9)


def gptcache_missing() -> str | None:
    """Why the GPTCache baseline cannot run here (a missing module), or None."""
    for module in ("gptcache", "faiss", "sqlalchemy"):
        if importlib.util.find_spec(module) is None:
            return f"the Python module {module!r} is not installed (pip install gptcache==0.1.44 faiss-cpu sqlalchemy)"
    return None


def require_gptcache() -> None:
    reason = gptcache_missing()
    if reason:
        raise RuntimeError(reason)


def cosine_threshold(similarity_threshold: float) -> float:
    """The cosine a hit needs under SearchDistanceEvaluation(max_distance=4) on unit vectors."""
    return 2 * similarity_threshold - 1


class GPTCacheBaseline:
    """One GPTCache instance holding ``contents``; ``system(t)`` answers with similarity threshold t."""

    def __init__(self, contents: Sequence[CachedQuestion], embedder: Any = None) -> None:
        require_gptcache()
        from gptcache import Cache, Config
        from gptcache.adapter.api import put
        from gptcache.manager import CacheBase, VectorBase, get_data_manager
        from gptcache.processor.pre import get_prompt
        from gptcache.similarity_evaluation import SearchDistanceEvaluation

        try:
            import faiss

            faiss.omp_set_num_threads(1)
        except (ImportError, AttributeError):
            pass
        if embedder is None:
            from edge_runtime.route.embedder import OnnxSentenceEmbedder

            embedder = OnnxSentenceEmbedder()
        self.embedder = embedder
        self.dim = int(embedder.dim)
        self._tmp = tempfile.TemporaryDirectory(prefix="arc-eval-gptcache-")
        root = Path(self._tmp.name)
        self.data_manager = get_data_manager(
            CacheBase("sqlite", sql_url=f"sqlite:///{root / 'sqlite.db'}"),
            VectorBase("faiss", dimension=self.dim, index_path=str(root / "faiss.index")),
            max_size=max(1000, 2 * len(contents)),
        )

        def embed(text: str, **_: Any) -> np.ndarray:
            return np.asarray(self.embedder.embed([text])[0], dtype=np.float32)

        self.cache = Cache()
        self.cache.init(
            pre_embedding_func=get_prompt,
            embedding_func=embed,
            data_manager=self.data_manager,
            similarity_evaluation=SearchDistanceEvaluation(),
            config=Config(similarity_threshold=THRESHOLDS[0], disable_report=True),
        )
        self._config = Config
        started = time.perf_counter()
        for item in contents:
            put(item.question, json.dumps({"entry_id": item.entry_id, "answer": item.answer}), cache_obj=self.cache)
        self.fill_s = time.perf_counter() - started
        self.contents = list(contents)
        # The same vectors, for the threshold sweep: the nearest cached question and its cosine.
        self._vectors = self._embed_all([c.question for c in contents])

    def lookup(self, query: str, threshold: float) -> Outcome:
        from gptcache.adapter.api import get

        self.cache.config = self._config(similarity_threshold=threshold, disable_report=True)
        ranks: list[float] = []

        def on_hit(hits: list[tuple[Any, float]]) -> None:  # (cached question, rank / max rank), best first
            ranks.append(float(hits[0][1]))

        started = time.perf_counter()
        found = get(query, cache_obj=self.cache, hit_callback=on_hit)
        ms = (time.perf_counter() - started) * 1000
        if found is None:
            return Outcome(False, path="lookup", miss_reason="below_threshold", latency_ms=ms)
        stored = json.loads(found)
        cosine = 2 * ranks[0] - 1 if ranks else 0.0  # rank = (4 - |q - c|^2) / 4 = (1 + cos) / 2
        return Outcome(True, stored["answer"], path="lookup", entry_id=stored["entry_id"], similarity=cosine, latency_ms=ms)

    def nearest(self, queries: Sequence[str]) -> list[tuple[str, float]]:
        """(entry id, cosine) of the nearest cached question, for each query (exact search)."""
        if not queries:
            return []
        vectors = self._embed_all(list(queries))
        sims = vectors @ self._vectors.T
        best = sims.argmax(axis=1)
        return [(self.contents[int(j)].entry_id, float(sims[i, j])) for i, j in enumerate(best)]

    def _embed_all(self, texts: list[str], batch: int = 32) -> np.ndarray:
        """Embeddings in small batches: one padded batch of thousands of texts makes onnxruntime's arena grow by GBs."""
        parts = [np.asarray(self.embedder.embed(texts[i:i + batch]), dtype=np.float32) for i in range(0, len(texts), batch)]
        return np.concatenate(parts) if parts else np.zeros((0, self.dim), dtype=np.float32)

    def system(self, threshold: float, name: str | None = None) -> GPTCacheSystem:
        return GPTCacheSystem(self, threshold, name or ("gptcache" if threshold == THRESHOLDS[0] else f"gptcache_t{threshold:g}"))

    def close(self) -> None:
        try:
            self.data_manager.close()
        except Exception:  # noqa: BLE001 - best effort: the directory is removed next
            pass

        class _Closed:  # GPTCache registers an atexit close(); the directory is gone by then
            def close(self) -> None:
                return None

        self.cache.data_manager = _Closed()
        self._tmp.cleanup()


class GPTCacheSystem:
    def __init__(self, baseline: GPTCacheBaseline, threshold: float, name: str) -> None:
        self.baseline = baseline
        self.threshold = threshold
        self.name = name

    def answer(self, query: str) -> Outcome:
        return self.baseline.lookup(query, self.threshold)

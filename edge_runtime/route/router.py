"""IS1: route a question to an entry point by embedding similarity over an HNSW index.

Each entry is represented by several texts (its description, its template filled with the
original values, its original question, variant questions); the index holds one
normalised vector per text, searched by inner product (= cosine). A route merges the
texts' hits per entry (the entry's similarity is the best of its texts) and returns the
top entries, best first. Whether the best is close enough is the caller's decision,
against a threshold calibrated with ``calibrate`` on positive and negative questions.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import hnswlib
import msgpack
import numpy as np

from edge_runtime.route.embedder import Embedder

INDEX_FILE = "router.hnsw"
LABELS_FILE = "router.json"
FORMAT = "arc-router/1"


@dataclass(frozen=True)
class RouteCandidate:
    entry_id: str
    similarity: float


class Router:
    """An HNSW index over the texts that represent each entry, queried through an ``Embedder``."""

    def __init__(
        self,
        entries: Iterable[tuple[str, Sequence[str]]],
        embedder: Embedder,
        *,
        M: int = 16,
        ef_construction: int = 100,
        ef: int = 32,
        seed: int = 0,
    ) -> None:
        entry_ids: list[str] = []
        texts: list[str] = []
        text_entry: list[int] = []
        for entry_id, entry_texts in entries:
            if entry_id in entry_ids:
                raise ValueError(f"duplicate entry id {entry_id!r}")
            kept = [t for t in dict.fromkeys(entry_texts) if t and t.strip()]
            if not kept:
                raise ValueError(f"entry {entry_id!r} has no text to route by")
            entry_ids.append(entry_id)
            texts += kept
            text_entry += [len(entry_ids) - 1] * len(kept)
        if not entry_ids:
            raise ValueError("a router needs at least one entry")
        vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
        index = hnswlib.Index(space="ip", dim=int(vectors.shape[1]))
        index.init_index(max_elements=len(texts), ef_construction=ef_construction, M=M, random_seed=seed)
        index.add_items(vectors, np.arange(len(texts)), num_threads=1)  # one thread: a reproducible graph
        settings = {"M": M, "ef_construction": ef_construction, "ef": ef, "seed": seed}
        self._setup(embedder, index, entry_ids, texts, text_entry, settings)

    def _setup(
        self,
        embedder: Embedder,
        index: hnswlib.Index,
        entry_ids: list[str],
        texts: list[str],
        text_entry: list[int],
        params: dict,
    ) -> None:
        if int(index.dim) != int(embedder.dim):
            raise ValueError(f"index dimension {index.dim} does not match the embedder's {embedder.dim}")
        self.embedder = embedder
        self.index = index
        self.entry_ids = list(entry_ids)
        self.texts = list(texts)
        self.text_entry = np.asarray(text_entry, dtype=np.int64)
        self.params = dict(params)
        self._max_texts = int(np.bincount(self.text_entry).max())
        self._ef = int(params.get("ef", 32))
        self.index.set_ef(max(self._ef, 1))
        self._current_ef = self._ef

    def __len__(self) -> int:
        return len(self.entry_ids)

    # -- routing -------------------------------------------------------------------------------

    def route(self, query: str, k: int = 3) -> list[RouteCandidate]:
        """The ``k`` entries most similar to ``query``, best first (an entry scores its best text)."""
        return self.route_vector(self.embedder.embed([query])[0], k)

    def route_many(self, queries: Sequence[str], k: int = 3) -> list[list[RouteCandidate]]:
        vectors = self.embedder.embed(list(queries))
        return [self.route_vector(v, k) for v in vectors]

    def route_vector(self, vector: np.ndarray, k: int = 3) -> list[RouteCandidate]:
        k = min(int(k), len(self.entry_ids))
        if k <= 0:
            return []
        # The best text of each of the top-k entries ranks within the top k * (texts per entry).
        n_texts = min(k * self._max_texts, len(self.texts))
        ef = max(self._ef, n_texts)
        if ef != self._current_ef:
            self.index.set_ef(ef)
            self._current_ef = ef
        labels, distances = self.index.knn_query(np.asarray(vector, dtype=np.float32).reshape(1, -1), k=n_texts)
        best: dict[int, float] = {}
        for label, distance in zip(labels[0].tolist(), distances[0].tolist()):
            entry = int(self.text_entry[label])
            similarity = 1.0 - distance  # hnswlib's "ip" distance is 1 - <q, x>
            if entry not in best or similarity > best[entry]:
                best[entry] = similarity
        ranked = sorted(best.items(), key=lambda item: (-item[1], item[0]))[:k]
        if not np.any(vector):  # a query with no known tokens is similar to nothing
            return [RouteCandidate(self.entry_ids[e], 0.0) for e, _ in ranked]
        return [RouteCandidate(self.entry_ids[e], float(s)) for e, s in ranked]

    # -- persistence ---------------------------------------------------------------------------

    def _labels(self) -> dict:
        return {
            "format": FORMAT,
            "dim": int(self.index.dim),
            "entry_ids": self.entry_ids,
            "texts": self.texts,
            "text_entry": self.text_entry.tolist(),
            "params": self.params,
        }

    def save(self, directory: str | Path) -> Path:
        """Write ``router.hnsw`` (the index) and ``router.json`` (entry ids, texts, parameters)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.index.save_index(str(directory / INDEX_FILE))
        (directory / LABELS_FILE).write_text(json.dumps(self._labels(), ensure_ascii=False) + "\n", encoding="utf-8")
        return directory

    @classmethod
    def load(cls, directory: str | Path, embedder: Embedder) -> Router:
        directory = Path(directory)
        labels = json.loads((directory / LABELS_FILE).read_text(encoding="utf-8"))
        return cls._from_parts(labels, directory / INDEX_FILE, embedder)

    def to_bytes(self) -> bytes:
        """The router as one msgpack blob (labels plus the index file's bytes), for a bundle."""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, INDEX_FILE)
            self.index.save_index(path)
            with open(path, "rb") as handle:
                index_bytes = handle.read()
        return msgpack.packb({"labels": self._labels(), "index": index_bytes}, use_bin_type=True)

    @classmethod
    def from_bytes(cls, data: bytes, embedder: Embedder) -> Router:
        unpacked = msgpack.unpackb(data, raw=False)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / INDEX_FILE
            path.write_bytes(unpacked["index"])
            return cls._from_parts(unpacked["labels"], path, embedder)

    @classmethod
    def _from_parts(cls, labels: dict, index_path: Path, embedder: Embedder) -> Router:
        if labels.get("format") != FORMAT:
            raise ValueError(f"unknown router format {labels.get('format')!r}")
        index = hnswlib.Index(space="ip", dim=int(labels["dim"]))
        index.load_index(str(index_path), max_elements=len(labels["texts"]))
        router = cls.__new__(cls)
        router._setup(embedder, index, labels["entry_ids"], labels["texts"], labels["text_entry"], labels["params"])
        return router


# -- calibration -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Calibration:
    """A routing threshold and what it keeps: a route is a HIT when its top similarity is >= ``threshold``."""

    threshold: float
    hit_rate: float  # positives routed to the right entry at top-1 with similarity >= threshold
    top_k_recall: float  # positives whose entry is among the top k, whatever the similarity
    false_hit_rate: float  # negatives whose top-1 similarity is >= threshold
    n_pos: int
    n_neg: int
    top1_accuracy: float = 0.0  # positives whose top-1 entry is right, whatever the similarity
    wrong_hit_rate: float = 0.0  # positives routed to a WRONG entry with similarity >= threshold
    k: int = 3
    max_false_hit_rate: float = 0.01

    def to_dict(self) -> dict:
        return asdict(self)


def calibrate(
    router: Router,
    positives: Sequence[tuple[str, str]],
    negatives: Sequence[str],
    max_false_hit_rate: float = 0.01,
    *,
    k: int = 3,
) -> Calibration:
    """The lowest threshold whose false-hit rate on ``negatives`` is <= ``max_false_hit_rate``.

    ``positives`` are ``(question, entry_id)`` pairs that should route to that entry;
    ``negatives`` are questions no entry should serve.
    """
    neg_top = np.array([c[0].similarity if c else 0.0 for c in router.route_many(list(negatives), k=1)], dtype=np.float64)
    allowed = math.floor(max_false_hit_rate * len(neg_top) + 1e-9)
    if allowed >= len(neg_top):
        threshold = -1.0  # every negative may pass: any similarity is a hit
    else:
        # Just above the (allowed + 1)-th highest negative, so exactly `allowed` negatives (or fewer, on ties) pass.
        ranked = np.sort(neg_top)[::-1]
        threshold = float(np.nextafter(ranked[allowed], np.inf))
    false_hits = int((neg_top >= threshold).sum())

    hits = wrong = top1 = in_top_k = 0
    routes = router.route_many([q for q, _ in positives], k=k)
    for (_, entry_id), candidates in zip(positives, routes):
        if not candidates:
            continue
        first = candidates[0]
        top1 += first.entry_id == entry_id
        in_top_k += any(c.entry_id == entry_id for c in candidates)
        if first.similarity >= threshold:
            hits += first.entry_id == entry_id
            wrong += first.entry_id != entry_id
    n_pos, n_neg = len(positives), len(neg_top)
    return Calibration(
        threshold=threshold,
        hit_rate=hits / n_pos if n_pos else 0.0,
        top_k_recall=in_top_k / n_pos if n_pos else 0.0,
        false_hit_rate=false_hits / n_neg if n_neg else 0.0,
        n_pos=n_pos,
        n_neg=n_neg,
        top1_accuracy=top1 / n_pos if n_pos else 0.0,
        wrong_hit_rate=wrong / n_pos if n_pos else 0.0,
        k=k,
        max_false_hit_rate=max_false_hit_rate,
    )


def calibrate_threshold(
    router: Router,
    positives: Sequence[tuple[str, str]],
    negatives: Sequence[str],
    max_false_hit_rate: float = 0.01,
    *,
    k: int = 3,
) -> dict:
    """``calibrate`` as a plain dict: threshold, hit_rate, top_k_recall, false_hit_rate, n_pos, n_neg (and a few more)."""
    return calibrate(router, positives, negatives, max_false_hit_rate, k=k).to_dict()

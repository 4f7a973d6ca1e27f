"""The systems compared, behind one interface: ``answer(query) -> Outcome``.

- ``arc`` / ``arc_guard_off``: this project, over gRPC to a real edge server
  (:class:`ArcSystem`; the server is :class:`builder.eval.edge_process.EdgeServerProcess`).
  ``arc_guard_off`` is the same bundle with the changed-reasoning guard off and
  ``on_disagreement="decode"``, so the model's own reading is served.
- ``exact_cache``: serves the stored answer only for a query identical to a cached question
  (:class:`ExactCache`).
- ``gptcache``: GPTCache 0.1.44, offline (:mod:`builder.eval.gptcache_baseline`).

The exact cache and GPTCache hold the bundle's entries as (original question, reference answer)
pairs: :func:`cache_contents`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


@dataclass
class Outcome:
    """What one system did with one query."""

    served: bool
    answer: Any = None
    path: str = ""  # arc: template | lm-draft | lm; caches: "lookup"
    miss_reason: str = ""
    detail: str = ""
    entry_id: str = ""  # the entry (or cached question) that served, or the closest one on a miss
    similarity: float = 0.0
    latency_ms: float = 0.0
    server_ms: dict[str, float] = field(default_factory=dict)
    verification: str = ""  # arc: "verified" | "unverified" for the entry that served; "" otherwise


class System(Protocol):
    name: str

    def answer(self, query: str) -> Outcome: ...


@dataclass(frozen=True)
class CachedQuestion:
    entry_id: str
    question: str
    answer: Any


def cache_contents(bundle: Any, reference: Path | None = None) -> list[CachedQuestion]:
    """(original question, reference answer) for every entry of ``bundle``.

    For an entry named ``gsm8k-NNNN`` and a GSM8K reference file, the question is row NNNN verbatim
    and the answer its gold answer (the importer accepted the entry only if it reproduces that gold
    answer). Otherwise the question is the entry's ``question`` (its template with the original
    values) and the answer is the entry's compiled code run on the original values in one of the
    device's sandboxed workers (entry code is untrusted, even in a bundle this evaluation built).
    """
    gold: dict[int, tuple[str, Any]] = {}
    if reference is not None and Path(reference).exists():
        from builder.gsm8k import gold_answer

        with open(reference, encoding="utf-8") as handle:
            for i, line in enumerate(handle):
                if line.strip():
                    row = json.loads(line)
                    gold[i] = (row["question"], gold_answer(row["answer"]))
    out = []
    pool = None
    try:
        for entry_id in sorted(bundle.entries):
            entry = bundle.entries[entry_id]
            prefix, _, number = entry_id.rpartition("-")
            if prefix == "gsm8k" and number.isdigit() and int(number) in gold:
                question, answer = gold[int(number)]
            else:
                if pool is None:
                    from edge_runtime.execute.worker_pool import WorkerPool

                    pool = WorkerPool(1)
                question = entry.question or entry.render(entry.original_values)
                answer = _run_original(pool, bundle, entry_id)
            out.append(CachedQuestion(entry_id, question, answer))
    finally:
        if pool is not None:
            pool.close()
    return out


def _run_original(pool: Any, bundle: Any, entry_id: str) -> Any:
    entry = bundle.entries[entry_id]
    try:
        result = pool.run(bundle.digest, entry_id, bundle.modules[entry_id], entry.validate(entry.original_values),
                          timeout_s=10.0).result
    except Exception:  # noqa: BLE001 - an entry that needs the target model has no reference answer here
        return None
    return result.get(entry.answer_key) if entry.answer_key else result


class ExactCache:
    """A key-value cache on the query string (leading/trailing whitespace stripped)."""

    def __init__(self, contents: list[CachedQuestion], name: str = "exact_cache") -> None:
        self.name = name
        self._table = {c.question.strip(): c for c in contents}

    def answer(self, query: str) -> Outcome:
        started = time.perf_counter()
        found = self._table.get(query.strip())
        ms = (time.perf_counter() - started) * 1000
        if found is None:
            return Outcome(False, miss_reason="no_exact_match", path="lookup", latency_ms=ms)
        return Outcome(True, found.answer, path="lookup", entry_id=found.entry_id, similarity=1.0, latency_ms=ms)


class ArcSystem:
    """ARC over gRPC: one ``Invoke`` per query; latency is the client's wall clock."""

    def __init__(self, address: str, name: str = "arc", timeout_s: float = 120.0) -> None:
        from edge_runtime.serving.client import EdgeClient

        self.name = name
        self.client = EdgeClient(address, timeout_s=timeout_s)

    def answer(self, query: str, entry_id: str = "") -> Outcome:
        from edge_runtime.serving.client import decode

        started = time.perf_counter()
        reply = decode(self.client.invoke(query, entry_id=entry_id))
        ms = (time.perf_counter() - started) * 1000
        hit = reply["outcome"] == "HIT"
        return Outcome(
            served=hit,
            answer=reply["answer"] if hit else None,
            path=reply["serving_path"] if hit else "",
            miss_reason="" if hit else reply["miss_reason"].lower(),
            detail=reply["miss_detail"],
            entry_id=reply["entry_id"],
            similarity=float(reply["similarity"]),
            latency_ms=ms,
            server_ms=reply["timings_ms"],
            verification=reply["verification"] if hit else "",
        )

    def close(self) -> None:
        self.client.close()

"""Speed on the evaluation's own server: throughput of hits by concurrency, latency under load.

The queries are hits of the run itself (template and model paths interleaved, as in
benchmarks/serve.py's mixed load); each concurrency level runs for a fixed time with one gRPC
channel per client thread.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Sequence
from typing import Any

from builder.eval.metrics import percentiles

CONCURRENCY = (1, 4, 16, 32)


def mixed_hits(records: Sequence[dict[str, Any]], limit: int = 200) -> list[str]:
    """Served queries of the run, paths interleaved (template, model, template, ...), then shuffled with a fixed
    seed: a short run at low concurrency sends only the first few dozen, and the interleaving puts one of every
    rare path (a handful of slow set-aside and re-read hits) at the head, so the head is no sample of the mix."""
    by_path: dict[str, list[str]] = {}
    for r in records:
        if r["served"]:
            by_path.setdefault(r["path"], []).append(r["query"])
    mixed: list[str] = []
    lists = [v for _, v in sorted(by_path.items())]
    for i in range(max((len(v) for v in lists), default=0)):
        for v in lists:
            if i < len(v):
                mixed.append(v[i])
    mixed = mixed[:limit]
    random.Random(20261203).shuffle(mixed)
    return mixed


def throughput(address: str, queries: Sequence[str], concurrency: int, seconds: float) -> dict[str, Any]:
    """Requests per second with ``concurrency`` clients for ``seconds``; latency percentiles under that load."""
    from edge_runtime.proto import edge_pb2 as pb
    from edge_runtime.serving.client import EdgeClient

    lock = threading.Lock()
    latencies: list[float] = []
    counts = {"done": 0, "hits": 0, "failed": 0}
    stop = time.perf_counter() + seconds

    def worker(offset: int) -> None:
        with EdgeClient(address, timeout_s=120) as client:
            i = offset
            while time.perf_counter() < stop:
                started = time.perf_counter()
                try:
                    reply = client.invoke(queries[i % len(queries)])
                except Exception:  # noqa: BLE001 - a failed RPC is counted, not fatal
                    with lock:
                        counts["failed"] += 1
                else:
                    ms = (time.perf_counter() - started) * 1000
                    with lock:
                        counts["done"] += 1
                        counts["hits"] += reply.outcome == pb.HIT
                        latencies.append(ms)
                i += concurrency

    started = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    return {"concurrency": concurrency, "seconds": round(elapsed, 2), "requests": counts["done"],
            "hits": counts["hits"], "failed": counts["failed"], "rps": round(counts["done"] / elapsed, 2),
            "latency_ms": percentiles(latencies)}


def throughput_table(address: str, queries: Sequence[str], seconds: float,
                     levels: Sequence[int] = CONCURRENCY) -> list[dict[str, Any]]:
    if not queries:
        return []
    return [throughput(address, queries, level, seconds) for level in levels]

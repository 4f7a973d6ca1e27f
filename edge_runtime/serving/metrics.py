"""Counters and latency histograms, exposed in the Prometheus text format."""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

BUCKETS_MS = (0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)


class Metrics:
    """Thread-safe counters and per-stage latency histograms."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counters: dict[tuple[str, tuple[tuple[str, str], ...]], float] = defaultdict(float)
        self.histograms: dict[str, list[float]] = {}
        self.sums: dict[str, float] = defaultdict(float)
        self.counts: dict[str, int] = defaultdict(int)
        self.gauges: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}

    def inc(self, name: str, amount: float = 1.0, **labels: str) -> None:
        with self._lock:
            self.counters[(name, tuple(sorted(labels.items())))] += amount

    def set(self, name: str, value: float, **labels: str) -> None:
        """A gauge (the follower's last good poll, its current error); ``clear_gauge`` removes every label set."""
        with self._lock:
            self.gauges[(name, tuple(sorted(labels.items())))] = value

    def clear_gauge(self, name: str) -> None:
        with self._lock:
            for key in [k for k in self.gauges if k[0] == name]:
                del self.gauges[key]

    def observe_ms(self, stage: str, value_ms: float) -> None:
        with self._lock:
            bucket = self.histograms.setdefault(stage, [0.0] * len(BUCKETS_MS))
            for i, edge in enumerate(BUCKETS_MS):
                if value_ms <= edge:
                    bucket[i] += 1
            self.sums[stage] += value_ms
            self.counts[stage] += 1

    def render(self) -> str:
        """Prometheus exposition text."""
        lines: list[str] = []
        with self._lock:
            names = sorted({name for name, _ in self.counters})
            for name in names:
                lines.append(f"# TYPE arc_{name} counter")
                for (n, labels), value in sorted(self.counters.items()):
                    if n == name:
                        text = ",".join(f'{k}="{v}"' for k, v in labels)
                        lines.append(f"arc_{name}{{{text}}} {value:g}" if text else f"arc_{name} {value:g}")
            for name in sorted({name for name, _ in self.gauges}):
                lines.append(f"# TYPE arc_{name} gauge")
                for (n, labels), value in sorted(self.gauges.items()):
                    if n == name:
                        text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
                        lines.append(f"arc_{name}{{{text}}} {value:g}" if text else f"arc_{name} {value:g}")
            if self.histograms:
                lines.append("# TYPE arc_stage_latency_ms histogram")
            for stage, buckets in sorted(self.histograms.items()):
                for edge, count in zip(BUCKETS_MS, buckets):
                    lines.append(f'arc_stage_latency_ms_bucket{{stage="{stage}",le="{edge:g}"}} {count:g}')
                lines.append(f'arc_stage_latency_ms_bucket{{stage="{stage}",le="+Inf"}} {self.counts[stage]}')
                lines.append(f'arc_stage_latency_ms_sum{{stage="{stage}"}} {self.sums[stage]:.3f}')
                lines.append(f'arc_stage_latency_ms_count{{stage="{stage}"}} {self.counts[stage]}')
        return "\n".join(lines) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def serve_metrics(metrics: Metrics, port: int, host: str = "127.0.0.1",
                  health: Callable[[], dict[str, Any]] | None = None) -> ThreadingHTTPServer:
    """Serve ``/metrics`` (and, with ``health``, ``/health`` as JSON: the follower's state) on a background
    thread; returns the server (call ``shutdown()`` to stop)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server API
            route = self.path.rstrip("/")
            if route == "/health" and health is not None:
                body, kind = json.dumps(health(), default=str).encode(), "application/json"
            elif route == "/metrics":
                body, kind = metrics.render().encode(), "text/plain; version=0.0.4"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, name="arc-metrics", daemon=True).start()
    return server

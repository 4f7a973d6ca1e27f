"""The edge gRPC server: create_server(), serve(), main(), as in the gRPC Python examples.

Health checking (grpc.health.v1) and server reflection are registered; the EdgeCache
service reports SERVING only while a bundle is active.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from concurrent import futures
from pathlib import Path
from typing import Any

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import grpc  # noqa: E402
from grpc_health.v1 import health, health_pb2, health_pb2_grpc  # noqa: E402
from grpc_reflection.v1alpha import reflection  # noqa: E402

from edge_runtime.proto import edge_pb2 as pb  # noqa: E402
from edge_runtime.runtime import EdgeRuntime, RuntimeOptions  # noqa: E402
from edge_runtime.service import EdgeCacheServicer, parse_invoke_request  # noqa: E402

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["EdgeCache"].full_name
log = logging.getLogger("arc.edge")

SERVER_OPTIONS = [
    ("grpc.max_receive_message_length", 8 << 20),
    ("grpc.max_send_message_length", 8 << 20),
    ("grpc.keepalive_time_ms", 60_000),
    ("grpc.keepalive_timeout_ms", 20_000),
    ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
]


def _handlers(servicer: EdgeCacheServicer) -> grpc.GenericRpcHandler:
    """The EdgeCache method table; Invoke requests use a deserializer that reports bad bytes clearly."""
    def unary(method: Any, request_type: Any, response_type: Any, parse: Any = None) -> grpc.RpcMethodHandler:
        return grpc.unary_unary_rpc_method_handler(
            method, request_deserializer=parse or request_type.FromString, response_serializer=response_type.SerializeToString
        )

    table = {
        "Invoke": unary(servicer.Invoke, pb.InvokeRequest, pb.InvokeResponse, parse_invoke_request),
        "InvokeStream": grpc.unary_stream_rpc_method_handler(
            servicer.InvokeStream, request_deserializer=parse_invoke_request, response_serializer=pb.InvokeEvent.SerializeToString
        ),
        "ListEntries": unary(servicer.ListEntries, pb.ListEntriesRequest, pb.ListEntriesResponse),
        "DescribeEntry": unary(servicer.DescribeEntry, pb.DescribeEntryRequest, pb.EntryDescription),
        "MissingBlobs": unary(servicer.MissingBlobs, pb.MissingBlobsRequest, pb.MissingBlobsResponse),
        "PushBlob": grpc.stream_unary_rpc_method_handler(
            servicer.PushBlob, request_deserializer=pb.BlobChunk.FromString, response_serializer=pb.PushBlobResponse.SerializeToString
        ),
        "PushBundle": grpc.stream_unary_rpc_method_handler(
            servicer.PushBundle, request_deserializer=pb.BundleChunk.FromString, response_serializer=pb.PushBundleResponse.SerializeToString
        ),
        "ActivateBundle": unary(servicer.ActivateBundle, pb.ActivateBundleRequest, pb.BundleStatus),
        "RollbackBundle": unary(servicer.RollbackBundle, pb.RollbackBundleRequest, pb.BundleStatus),
        "ListBundles": unary(servicer.ListBundles, pb.ListBundlesRequest, pb.ListBundlesResponse),
        "GetStats": unary(servicer.GetStats, pb.GetStatsRequest, pb.Stats),
    }
    return grpc.method_handlers_generic_handler(SERVICE_NAME, table)


class EdgeServer:
    """A running server: the grpc.Server, its runtime, and the health servicer kept in step."""

    def __init__(self, server: grpc.Server, runtime: EdgeRuntime, health_servicer: health.HealthServicer, port: int) -> None:
        self.server = server
        self.runtime = runtime
        self.health = health_servicer
        self.port = port
        self._metrics_http: Any = None
        self._watch = threading.Event()

    def update_health(self) -> None:
        status = health_pb2.HealthCheckResponse.SERVING if self.runtime.current() else health_pb2.HealthCheckResponse.NOT_SERVING
        self.health.set(SERVICE_NAME, status)

    def stop(self, grace: float | None = 2.0) -> None:
        self._watch.set()
        self.health.enter_graceful_shutdown()
        self.server.stop(grace).wait()
        if self._metrics_http is not None:
            self._metrics_http.shutdown()
        self.runtime.close()


def create_server(
    options: RuntimeOptions, *, address: str = "127.0.0.1:0", max_workers: int = 32, metrics_port: int | None = None
) -> EdgeServer:
    """Build (and start) a server bound to ``address``; port 0 picks a free port (see ``.port``)."""
    runtime = EdgeRuntime(options)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="arc-rpc"), options=SERVER_OPTIONS)
    servicer = EdgeCacheServicer(runtime)
    server.add_generic_rpc_handlers((_handlers(servicer),))
    health_servicer = health.HealthServicer(experimental_non_blocking=True)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection((SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    port = server.add_insecure_port(address)
    if port == 0:
        raise RuntimeError(f"cannot bind {address}")
    edge = EdgeServer(server, runtime, health_servicer, port)
    health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    edge.update_health()
    # Health follows activation: the servicer does not know the server, so poll the cheap flag.
    def follow_health() -> None:
        last = None
        while not edge._watch.wait(0.2):
            now = runtime.active_id
            if now != last:
                edge.update_health()
                last = now

    threading.Thread(target=follow_health, name="arc-health", daemon=True).start()
    if metrics_port is not None:
        from edge_runtime.metrics import serve_metrics

        edge._metrics_http = serve_metrics(runtime.metrics, metrics_port)
    server.start()
    return edge


def serve(options: RuntimeOptions, *, address: str, metrics_port: int | None = None) -> None:
    """Run until SIGINT/SIGTERM."""
    from edge_runtime.malloc_tuning import tune_malloc

    tune_malloc()  # process-wide, so here rather than in create_server (tests embed servers)
    edge = create_server(options, address=address, metrics_port=metrics_port)
    log.info("arc-edge serving on %s (bundle: %s)", address.rsplit(":", 1)[0] + f":{edge.port}", edge.runtime.active_id or "none")
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
    log.info("arc-edge shutting down (bundle: %s)", edge.runtime.active_id or "none")
    edge.stop()
    log.info("arc-edge stopped")


def default_data_dir() -> Path:
    return Path(os.environ.get("ARC_EDGE_DATA", Path.home() / ".local" / "share" / "arc-edge"))

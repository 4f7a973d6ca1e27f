"""The edge gRPC server: create_server(), serve(), main(), as in the gRPC Python examples.

Two listeners share one runtime. The query listener (TCP, optionally TLS) answers questions;
the admin listener (a Unix socket with 0660 permissions by default, or TCP with mutual TLS)
is the only one where state-changing RPCs run. Which methods the query listener refuses is
decided in one place, AdminOnlyInterceptor. Health checking (grpc.health.v1) is open on both;
server reflection only with ``reflection=True`` (``arc-edge serve --reflection``).
"""

from __future__ import annotations

import errno
import logging
import os
import signal
import socket
import stat
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc  # noqa: E402
from grpc_health.v1 import health, health_pb2, health_pb2_grpc  # noqa: E402
from grpc_reflection.v1alpha import reflection  # noqa: E402

from edge_runtime.bundles.blob_quota import BlobQuota  # noqa: E402
from edge_runtime.errors import ServerBindError  # noqa: E402
from edge_runtime.flags import option, subtree  # noqa: E402
from edge_runtime.fleet.options import FollowOptions  # noqa: E402
from edge_runtime.proto import edge_pb2 as pb  # noqa: E402
from edge_runtime.serving.runtime import EdgeRuntime, RuntimeOptions  # noqa: E402
from edge_runtime.serving.service import BadRequest, EdgeCacheServicer, request_parser  # noqa: E402

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["EdgeCache"].full_name
log = logging.getLogger("arc.edge")

#: Methods that change the device's state (or tell an outsider which blobs it holds): admin listener only.
ADMIN_METHODS = frozenset({"PushBundle", "PushBlob", "MissingBlobs", "ActivateBundle", "RollbackBundle"})
_STREAMING_REQUESTS = frozenset({"PushBundle", "PushBlob"})
ADMIN_SOCKET_NAME = "admin.sock"
_UNIX_PATH_MAX = 107

SERVER_OPTIONS = [
    ("grpc.max_receive_message_length", 8 << 20),
    ("grpc.max_send_message_length", 8 << 20),
    ("grpc.keepalive_time_ms", 60_000),
    ("grpc.keepalive_timeout_ms", 20_000),
    ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    # Without this, a second server on the same port silently shares it and gets half the calls.
    ("grpc.so_reuseport", 0),
]


@dataclass(frozen=True)
class TlsFiles:
    """PEM files: the server's certificate and key, and the CA that signs admin clients' certificates."""

    cert: Path
    key: Path
    client_ca: Path | None = None

    def server_credentials(self, *, require_client_auth: bool) -> grpc.ServerCredentials:
        pair = [(Path(self.key).read_bytes(), Path(self.cert).read_bytes())]
        if require_client_auth:
            if self.client_ca is None:
                raise ServerBindError("a TCP admin listener needs --client-ca (mutual TLS): without it anyone could administer")
            return grpc.ssl_server_credentials(pair, root_certificates=Path(self.client_ca).read_bytes(),
                                               require_client_auth=True)
        return grpc.ssl_server_credentials(pair)


class AdminOnlyInterceptor(grpc.ServerInterceptor):
    """The one check on the query listener: ADMIN_METHODS get PERMISSION_DENIED, everything else passes."""

    def __init__(self) -> None:
        def deny_unary(request: Any, context: grpc.ServicerContext) -> Any:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, self.MESSAGE)

        def deny_stream(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, self.MESSAGE)

        self._denials = {
            f"/{SERVICE_NAME}/{name}": grpc.stream_unary_rpc_method_handler(deny_stream)
            if name in _STREAMING_REQUESTS else grpc.unary_unary_rpc_method_handler(deny_unary)
            for name in ADMIN_METHODS
        }

    MESSAGE = ("this RPC changes the device's state and is served only on the admin listener "
               "(the admin Unix socket, or TCP with a client certificate): see docs/security.md")

    def intercept_service(self, continuation: Callable[[Any], Any], handler_call_details: Any) -> Any:
        denial = self._denials.get(handler_call_details.method)
        return denial if denial is not None else continuation(handler_call_details)


def _handlers(servicer: EdgeCacheServicer) -> grpc.GenericRpcHandler:
    """The EdgeCache method table. Every request goes through request_parser, so bytes that do not
    parse get INVALID_ARGUMENT on every method (gRPC's own deserializer failure is INTERNAL)."""
    runtime = servicer.runtime

    def reject(request: BadRequest, context: grpc.ServicerContext) -> None:
        runtime.count_invalid()
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.reason)

    def checked_unary(method: Callable[..., Any]) -> Callable[..., Any]:
        def call(request: Any, context: grpc.ServicerContext) -> Any:
            if isinstance(request, BadRequest):
                reject(request, context)
            return method(request, context)

        return call

    def checked_stream(method: Callable[..., Any]) -> Callable[..., Any]:
        def call(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
            def parsed() -> Iterator[Any]:
                for request in requests:
                    if isinstance(request, BadRequest):
                        reject(request, context)
                    yield request

            return method(parsed(), context)

        return call

    def unary(method: Any, request_type: Any, response_type: Any) -> grpc.RpcMethodHandler:
        return grpc.unary_unary_rpc_method_handler(
            checked_unary(method), request_deserializer=request_parser(request_type),
            response_serializer=response_type.SerializeToString,
        )

    def client_stream(method: Any, request_type: Any, response_type: Any) -> grpc.RpcMethodHandler:
        return grpc.stream_unary_rpc_method_handler(
            checked_stream(method), request_deserializer=request_parser(request_type),
            response_serializer=response_type.SerializeToString,
        )

    table = {
        "Invoke": unary(servicer.Invoke, pb.InvokeRequest, pb.InvokeResponse),
        "InvokeStream": grpc.unary_stream_rpc_method_handler(
            checked_unary(servicer.InvokeStream), request_deserializer=request_parser(pb.InvokeRequest),
            response_serializer=pb.InvokeEvent.SerializeToString,
        ),
        "ListEntries": unary(servicer.ListEntries, pb.ListEntriesRequest, pb.ListEntriesResponse),
        "DescribeEntry": unary(servicer.DescribeEntry, pb.DescribeEntryRequest, pb.EntryDescription),
        "MissingBlobs": unary(servicer.MissingBlobs, pb.MissingBlobsRequest, pb.MissingBlobsResponse),
        "PushBlob": client_stream(servicer.PushBlob, pb.BlobChunk, pb.PushBlobResponse),
        "PushBundle": client_stream(servicer.PushBundle, pb.BundleChunk, pb.PushBundleResponse),
        "ActivateBundle": unary(servicer.ActivateBundle, pb.ActivateBundleRequest, pb.BundleStatus),
        "RollbackBundle": unary(servicer.RollbackBundle, pb.RollbackBundleRequest, pb.BundleStatus),
        "ListBundles": unary(servicer.ListBundles, pb.ListBundlesRequest, pb.ListBundlesResponse),
        "GetStats": unary(servicer.GetStats, pb.GetStatsRequest, pb.Stats),
    }
    return grpc.method_handlers_generic_handler(SERVICE_NAME, table)


class EdgeServer:
    """A running server: both grpc.Servers, their runtime, and the health servicer kept in step."""

    def __init__(
        self, server: grpc.Server, admin_server: grpc.Server, runtime: EdgeRuntime, health_servicer: health.HealthServicer,
        port: int, admin_socket: Path | None, admin_port: int | None,
    ) -> None:
        self.server = server
        self.admin_server = admin_server
        self.runtime = runtime
        self.health = health_servicer
        self.port = port
        self.admin_socket = admin_socket
        self.admin_port = admin_port
        self._metrics_http: Any = None
        self._watch = threading.Event()
        self.follower: Any = None  # edge_runtime/fleet/follower.py, with --follow

    def update_health(self) -> None:
        status = health_pb2.HealthCheckResponse.SERVING if self.runtime.current() else health_pb2.HealthCheckResponse.NOT_SERVING
        self.health.set(SERVICE_NAME, status)

    def stop(self, grace: float | None = 2.0) -> None:
        self._watch.set()
        if self.follower is not None:
            self.follower.stop()
        self.health.enter_graceful_shutdown()
        query_done = self.server.stop(grace)
        self.admin_server.stop(grace).wait()
        query_done.wait()
        if self.admin_socket is not None:
            self.admin_socket.unlink(missing_ok=True)
        if self._metrics_http is not None:
            self._metrics_http.shutdown()
        self.runtime.close()


def listen_address(host: str, port: int) -> str:
    """``--address``/``--port`` as a gRPC address: ``unix:/path`` ignores the port, a bare IPv6 host is bracketed."""
    if host.startswith("unix:") or host.startswith("unix-abstract:"):
        return host
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


def _why_not_bound(address: str) -> str:
    """The OS's reason a TCP address cannot be bound (gRPC only says that it failed)."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((host, int(port)))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return "address already in use (is another arc-edge serve running on it?)"
        return exc.strerror or str(exc)
    except ValueError:
        return "not a host:port address"
    return "gRPC could not listen on it"


def _bind(server: grpc.Server, address: str, credentials: grpc.ServerCredentials | None) -> int:
    try:
        port = server.add_secure_port(address, credentials) if credentials is not None else server.add_insecure_port(address)
    except RuntimeError:
        port = 0
    if port == 0:
        reason = "the socket path is not usable" if address.startswith("unix:") else _why_not_bound(address)
        raise ServerBindError(f"cannot listen on {address}: {reason}")
    return port


@contextmanager
def _umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def _bind_admin_socket(server: grpc.Server, path: Path) -> Path:
    """Listen on a Unix socket that only its owner and group can connect to (mode 0660)."""
    path = Path(path).absolute()
    if len(str(path)) > _UNIX_PATH_MAX:
        raise ServerBindError(f"admin socket path {path} is longer than {_UNIX_PATH_MAX} bytes (a Unix socket limit)")
    if path.exists():
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(str(path))
            except OSError:
                if not stat.S_ISSOCK(path.lstat().st_mode):
                    raise ServerBindError(f"admin socket path {path} exists and is not a socket") from None
                path.unlink()  # a stale socket from a server that died
            else:
                raise ServerBindError(f"admin socket {path} is in use by another running server")
    path.parent.mkdir(parents=True, exist_ok=True)
    with _umask(0o117):  # the socket is created 0660, never briefly world-connectable
        _bind(server, f"unix:{path}", grpc.local_server_credentials(grpc.LocalConnectionType.UDS))
    os.chmod(path, 0o660)
    return path


def create_server(
    options: RuntimeOptions, *, address: str = "127.0.0.1:0", admin_socket: Path | None = None,
    admin_address: str | None = None, tls: TlsFiles | None = None, reflection_on: bool = False,
    max_workers: int = 32, metrics_port: int | None = None, follow: Any = None,
) -> EdgeServer:
    """Build (and start) a server: queries on ``address`` (port 0 picks a free port, see ``.port``),
    administration on ``admin_socket`` (default ``<data_dir>/admin.sock``) or, with ``admin_address``,
    on TCP with mutual TLS (``tls`` with a client CA). With ``tls`` the query listener speaks TLS too.
    ``follow`` (a ``FollowOptions``) starts a follower that pulls bundles from a registry (edge_runtime/fleet)."""
    if admin_address is not None and (tls is None or tls.client_ca is None):
        raise ServerBindError("a TCP admin listener (--admin-address) needs --tls-cert, --tls-key and --client-ca")
    runtime = EdgeRuntime(options)
    try:
        return _start(runtime, options, address, admin_socket, admin_address, tls, reflection_on, max_workers, metrics_port,
                      follow)
    except BaseException:
        runtime.close()
        raise


def _start(
    runtime: EdgeRuntime, options: RuntimeOptions, address: str, admin_socket: Path | None, admin_address: str | None,
    tls: TlsFiles | None, reflection_on: bool, max_workers: int, metrics_port: int | None, follow: Any = None,
) -> EdgeServer:
    quota = BlobQuota(options.max_blob_bytes, options.max_blob_store_bytes, runtime.blobs.used_bytes)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="arc-rpc"), options=SERVER_OPTIONS,
        interceptors=(AdminOnlyInterceptor(),),
    )
    admin = grpc.server(futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="arc-admin"), options=SERVER_OPTIONS)
    server.add_generic_rpc_handlers((_handlers(EdgeCacheServicer(runtime, quota=quota)),))
    admin.add_generic_rpc_handlers((_handlers(EdgeCacheServicer(runtime, admin=True, quota=quota)),))
    health_servicer = health.HealthServicer(experimental_non_blocking=True)
    for each in (server, admin):
        health_pb2_grpc.add_HealthServicer_to_server(health_servicer, each)
    if reflection_on:
        reflection.enable_server_reflection((SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    port = _bind(server, address, tls.server_credentials(require_client_auth=False) if tls else None)
    socket_path: Path | None = None
    admin_port: int | None = None
    if admin_address is not None:
        assert tls is not None
        admin_port = _bind(admin, admin_address, tls.server_credentials(require_client_auth=True))
    else:
        socket_path = _bind_admin_socket(admin, admin_socket or Path(options.data_dir) / ADMIN_SOCKET_NAME)
    edge = EdgeServer(server, admin, runtime, health_servicer, port, socket_path, admin_port)
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
    if follow is not None:
        from edge_runtime.fleet.follower import Follower

        follow_service = f"{pb.DESCRIPTOR.package}.Follow"
        edge.follower = Follower(runtime, follow, on_status=lambda ok: health_servicer.set(
            follow_service, health_pb2.HealthCheckResponse.SERVING if ok else health_pb2.HealthCheckResponse.NOT_SERVING))
    if metrics_port is not None:
        from edge_runtime.serving.metrics import serve_metrics

        edge._metrics_http = serve_metrics(runtime.metrics, metrics_port,
                                           health=edge.follower.health if edge.follower is not None else None)
    admin.start()
    server.start()
    if edge.follower is not None:
        edge.follower.start()
    return edge


def serve(
    options: RuntimeOptions, *, address: str, admin_socket: Path | None = None, admin_address: str | None = None,
    tls: TlsFiles | None = None, reflection_on: bool = False, metrics_port: int | None = None, follow: Any = None,
) -> None:
    """Run until SIGINT/SIGTERM."""
    from edge_runtime.model.malloc_tuning import tune_malloc

    tune_malloc()  # process-wide, so here rather than in create_server (tests embed servers)
    edge = create_server(options, address=address, admin_socket=admin_socket, admin_address=admin_address, tls=tls,
                         reflection_on=reflection_on, metrics_port=metrics_port, follow=follow)
    shown = address if address.startswith("unix") else address.rsplit(":", 1)[0] + f":{edge.port}"
    admin_shown = f"{edge.admin_socket} (unix, 0660)" if edge.admin_socket else f"{admin_address} (mutual TLS)"
    log.info("arc-edge serving queries on %s%s, admin on %s (bundle: %s)", shown, " (TLS)" if tls else "",
             admin_shown, edge.runtime.active_id or "none")
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
    log.info("arc-edge shutting down (bundle: %s)", edge.runtime.active_id or "none")
    edge.stop()
    log.info("arc-edge stopped")


def default_data_dir() -> Path:
    return Path(os.environ.get("ARC_EDGE_DATA", Path.home() / ".local" / "share" / "arc-edge"))


@dataclass
class ServerOptions:
    """The server's listeners and what it stages at start-up (``arc-edge serve``)."""

    bundles: list[Path] = option(default_factory=list, flag="--bundle", action="append", type=Path,
                                 help="a bundle to stage and activate at start")
    model: Path | None = option(None, flag="--model", type=Path,
                                help="target-model artefact dir to import into the blob store")
    # the query listener (no help text: --help shows "--port PORT (default: 50551)", which docs and tests quote)
    address: str = option("127.0.0.1", flag="--address", help="")
    port: int = option(50551, flag="--port", help="")
    metrics_port: int | None = option(None, flag="--metrics-port", type=int,
                                      help="serve Prometheus metrics on http://ADDRESS:PORT/metrics (default: off)")
    # The control plane (docs/security.md): admin RPCs only on a 0660 Unix socket.
    admin_socket: Path | None = option(
        None, flag="--admin-socket", type=Path,
        help="Unix socket for push/activate/rollback (mode 0660; default: DATA_DIR/admin.sock)")
    tls_cert: Path | None = option(None, flag="--tls-cert", type=Path,
                                   help="PEM certificate for TLS on the query listener")
    tls_key: Path | None = option(None, flag="--tls-key", type=Path, help="PEM private key for --tls-cert")
    client_ca: Path | None = option(None, flag="--client-ca", type=Path,
                                    help="CA that signs admin clients' certificates (mutual TLS)")
    admin_address: str | None = option(
        None, flag="--admin-address", help="serve admin on TCP HOST:PORT with mutual TLS instead of the socket")
    reflection: bool = option(False, flag="--reflection", help="enable gRPC server reflection (development)")


@dataclass
class ServeOptions:
    """The root of the options tree: everything ``arc-edge serve`` takes (edge_runtime/options.py)."""

    server: ServerOptions = subtree(ServerOptions)
    runtime: RuntimeOptions = subtree(RuntimeOptions)
    #: a fleet (docs/deployment.md): follow an OCI registry whose TUF metadata names the bundle to run
    follow: FollowOptions | None = subtree(FollowOptions, optional_on="reference")

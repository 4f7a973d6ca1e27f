"""A small Python client for the edge server; every call carries a deadline."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from edge_runtime.bundles.blob_store import sha256_file
from edge_runtime.bundles.bundle import BLOBS_DIR
from edge_runtime.proto import edge_pb2 as pb
from edge_runtime.proto import edge_pb2_grpc as pb_grpc

CHUNK = 1 << 20
DEFAULT_PORT = 50551


def target(address: str) -> str:
    """A gRPC target from what a user types: ``localhost`` means ``localhost:50551`` (not 443);
    ``unix:PATH`` and ``host:port`` pass through."""
    if address.startswith(("unix:", "unix-abstract:", "dns:", "ipv4:", "ipv6:")):
        return address
    if address.startswith("["):
        return address if "]:" in address else f"{address}:{DEFAULT_PORT}"
    if address.count(":") == 1:
        return address
    if address.count(":") > 1:  # a bare IPv6 address
        return f"[{address}]:{DEFAULT_PORT}"
    return f"{address}:{DEFAULT_PORT}"


def admin_channel(admin_socket: str | Path, options: list | None = None) -> grpc.Channel:
    """A channel to the device's admin Unix socket (local credentials: the socket's 0660 mode is the door)."""
    path = str(admin_socket)
    path = path if path.startswith("unix:") else f"unix:{Path(path).absolute()}"
    return grpc.secure_channel(path, grpc.local_channel_credentials(grpc.LocalConnectionType.UDS), options=options)


class ByteCounter(grpc.UnaryUnaryClientInterceptor, grpc.StreamUnaryClientInterceptor):
    """Adds up the serialized size of every request and response message on a channel (what a push moves)."""

    def __init__(self) -> None:
        self.sent = 0
        self.received = 0

    def intercept_unary_unary(self, continuation: Callable[..., Any], details: Any, request: Any) -> Any:
        self.sent += request.ByteSize()
        return self._count_reply(continuation(details, request))

    def intercept_stream_unary(self, continuation: Callable[..., Any], details: Any, requests: Iterator[Any]) -> Any:
        def counted() -> Iterator[Any]:
            for request in requests:
                self.sent += request.ByteSize()
                yield request

        return self._count_reply(continuation(details, counted()))

    def _count_reply(self, call: Any) -> Any:
        try:
            self.received += call.result().ByteSize()
        except grpc.RpcError:
            pass
        return call

    @property
    def total(self) -> int:
        return self.sent + self.received


@dataclass
class PushResult:
    """What one ``EdgeClient.push`` did: the staged bundle, the blobs sent, and any the device still lacks."""

    staged: Any  # pb.PushBundleResponse
    model_blobs_sent: list[str] = field(default_factory=list)
    blobs_sent: list[str] = field(default_factory=list)
    still_missing: list[str] = field(default_factory=list)


class EdgeClient:
    """Wraps the generated stub: JSON fields decoded, deadlines on every call, chunked pushes."""

    #: The server is usually on the same device: after a failed connect (server restarting), retry
    #: within 50 ms rather than gRPC's default 1 s first backoff (which alone doubled measured cold starts).
    CHANNEL_OPTIONS = (
        ("grpc.max_receive_message_length", 8 << 20),
        ("grpc.initial_reconnect_backoff_ms", 50),
        ("grpc.min_reconnect_backoff_ms", 50),
        ("grpc.max_reconnect_backoff_ms", 1000),
    )

    def __init__(self, address: str, *, timeout_s: float = 10.0, admin_socket: str | Path | None = None,
                 admin_address: str | None = None,
                 root_cert: Path | None = None, client_cert: Path | None = None, client_key: Path | None = None) -> None:
        """Queries go to ``address`` (TLS with ``root_cert``, mutual with ``client_cert/key``); pushes,
        activation, rollback and DescribeEntry go to ``admin_socket`` (without one they are refused
        by the device with PERMISSION_DENIED)."""
        options = list(self.CHANNEL_OPTIONS)
        if root_cert is not None:
            credentials = grpc.ssl_channel_credentials(
                Path(root_cert).read_bytes(),
                Path(client_key).read_bytes() if client_key else None,
                Path(client_cert).read_bytes() if client_cert else None,
            )
            self.channel = grpc.secure_channel(target(address), credentials, options=options)
        else:
            self.channel = grpc.insecure_channel(target(address), options=options)
        self.stub = pb_grpc.EdgeCacheStub(self.channel)
        if admin_address is not None:  # remote management: TCP with mutual TLS
            if root_cert is None or client_cert is None or client_key is None:
                raise ValueError("a TCP admin address needs root_cert, client_cert and client_key (mutual TLS)")
            credentials = grpc.ssl_channel_credentials(
                Path(root_cert).read_bytes(), Path(client_key).read_bytes(), Path(client_cert).read_bytes()
            )
            self.admin_channel = grpc.secure_channel(target(admin_address), credentials, options=options)
        else:
            self.admin_channel = admin_channel(admin_socket, options) if admin_socket else None
        self.admin_stub = pb_grpc.EdgeCacheStub(self.admin_channel) if self.admin_channel else self.stub
        self.timeout_s = timeout_s

    def count_admin_traffic(self) -> ByteCounter:
        """From now on, count the protobuf bytes of every admin call (pushes, activation): for benchmarks and tests."""
        counter = ByteCounter()
        self.admin_stub = pb_grpc.EdgeCacheStub(grpc.intercept_channel(self.admin_channel or self.channel, counter))
        return counter

    def close(self) -> None:
        self.channel.close()
        if self.admin_channel is not None:
            self.admin_channel.close()

    def __enter__(self) -> EdgeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def invoke(self, query: str, *, entry_id: str = "", timeout_s: float | None = None) -> pb.InvokeResponse:
        return self.stub.Invoke(pb.InvokeRequest(query=query, entry_id=entry_id), timeout=timeout_s or self.timeout_s)

    def invoke_stream(self, query: str, *, timeout_s: float | None = None) -> Iterator[pb.InvokeEvent]:
        return self.stub.InvokeStream(pb.InvokeRequest(query=query), timeout=timeout_s or self.timeout_s)

    def list_entries(self) -> pb.ListEntriesResponse:
        return self.stub.ListEntries(pb.ListEntriesRequest(), timeout=self.timeout_s)

    def describe(self, entry_id: str) -> pb.EntryDescription:
        return self.admin_stub.DescribeEntry(pb.DescribeEntryRequest(entry_id=entry_id), timeout=self.timeout_s)

    def push_model(self, artefact_dir: Path, *, timeout_s: float = 600.0) -> list[str]:
        """Push the target-model files the device lacks (by content hash); returns what was sent."""
        files = {}
        for path in sorted(p for p in Path(artefact_dir).rglob("*") if p.is_file()):
            files[sha256_file(path)] = path
        return self._push_missing(files, timeout_s)

    def push_blobs(self, wanted: Iterable[str], blob_dir: Path, *, timeout_s: float = 600.0) -> list[str]:
        """Push those of ``wanted`` the device lacks (MissingBlobs) from ``blob_dir/<sha256>``; returns what was
        sent. A hash with no file there is left out, for the caller to report."""
        files = {sha: Path(blob_dir) / sha for sha in wanted if (Path(blob_dir) / sha).is_file()}
        return self._push_missing(files, timeout_s)

    def _push_missing(self, files: dict[str, Path], timeout_s: float) -> list[str]:
        """Ask which of ``files`` (sha256 -> path) the device lacks and push only those; returns what was sent."""
        missing = self.admin_stub.MissingBlobs(pb.MissingBlobsRequest(sha256=list(files)), timeout=self.timeout_s).sha256
        for sha in missing:
            self.admin_stub.PushBlob(_blob_chunks(sha, files[sha]), timeout=timeout_s)
        return list(missing)

    def push_bundle(self, path: Path, *, timeout_s: float = 120.0) -> pb.PushBundleResponse:
        return self.admin_stub.PushBundle(_bundle_chunks(Path(path)), timeout=timeout_s)

    def push(self, path: Path, *, model_dir: Path | None = None, blob_dir: Path | None = None) -> PushResult:
        """Push a bundle and only the blobs the device lacks: the model's files (from ``model_dir``), then the
        bundle, then the out-of-line files it names (from ``blob_dir``, default ``blobs/`` beside the bundle).
        A code-only update therefore moves the bundle file alone."""
        path = Path(path)
        result = PushResult(staged=None)
        if model_dir is not None:
            result.model_blobs_sent = self.push_model(model_dir)
        result.staged = self.push_bundle(path)
        missing = list(result.staged.missing_blobs)
        if missing:
            result.blobs_sent = self.push_blobs(missing, blob_dir if blob_dir is not None else path.parent / BLOBS_DIR)
            result.still_missing = [sha for sha in missing if sha not in result.blobs_sent]
        return result

    def activate(self, bundle_id: str) -> pb.BundleStatus:
        return self.admin_stub.ActivateBundle(pb.ActivateBundleRequest(bundle_id=bundle_id), timeout=max(self.timeout_s, 60.0))

    def rollback(self, bundle_id: str = "") -> pb.BundleStatus:
        return self.admin_stub.RollbackBundle(pb.RollbackBundleRequest(bundle_id=bundle_id), timeout=max(self.timeout_s, 60.0))

    def list_bundles(self) -> pb.ListBundlesResponse:
        return self.stub.ListBundles(pb.ListBundlesRequest(), timeout=self.timeout_s)

    def stats(self) -> pb.Stats:
        return self.stub.GetStats(pb.GetStatsRequest(), timeout=self.timeout_s)


_VERIFICATION_NAMES = {pb.ENTRY_VERIFIED: "verified", pb.ENTRY_UNVERIFIED: "unverified"}


def decode(response: pb.InvokeResponse) -> dict[str, Any]:
    """An InvokeResponse as plain data (JSON fields parsed)."""
    return {
        "outcome": pb.Outcome.Name(response.outcome),
        "miss_reason": pb.MissReason.Name(response.miss_reason) if response.outcome == pb.MISS else "",
        "miss_detail": response.miss_detail,
        "entry_id": response.entry_id,
        "similarity": response.similarity,
        "parameters": json.loads(response.parameters_json) if response.parameters_json else {},
        "result": json.loads(response.result_json) if response.result_json else {},
        "answer": json.loads(response.answer_json) if response.answer_json else None,
        "narration": [step.text for step in response.narration],
        "serving_path": response.serving_path,
        "verification": _VERIFICATION_NAMES.get(response.verification, ""),
        "timings_ms": {
            "is1": response.timings.is1_ms, "is2": response.timings.is2_ms, "is3": response.timings.is3_ms,
            "is4": response.timings.is4_ms, "total": response.timings.total_ms,
        },
        "bundle": f"{response.bundle_name}-{response.bundle_version}",
        "upstream": {
            "model": response.upstream.model, "text": response.upstream.text, "error": response.upstream.error,
            "latency_ms": response.upstream.latency_ms,
        } if response.HasField("upstream") else None,
    }



def _blob_chunks(sha: str, path: Path) -> Iterator[pb.BlobChunk]:
    size = path.stat().st_size
    first = True
    with open(path, "rb") as handle:
        while True:
            data = handle.read(CHUNK)
            if not data and not first:
                break
            yield pb.BlobChunk(sha256=sha if first else "", size=size if first else 0, data=data)
            first = False
            if not data:
                break


def _bundle_chunks(path: Path) -> Iterator[pb.BundleChunk]:
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            yield pb.BundleChunk(data=block)

"""The gRPC servicer: request checks, status codes, and mapping answers onto the contract."""

from __future__ import annotations

import hashlib
import logging
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import grpc
from google.protobuf.message import DecodeError

from edge_runtime.answer.response import VERIFICATION, as_json, to_response
from edge_runtime.answer.result import Answer
from edge_runtime.bundles.blob_quota import BlobQuota
from edge_runtime.errors import (
    ArcError,
    BlobQuotaError,
    BlobStoreError,
    BundleConflictError,
    BundleError,
    BundleNameRefusedError,
    DowngradeError,
)
from edge_runtime.pipeline import Pipeline
from edge_runtime.proto import edge_pb2 as pb
from edge_runtime.serving.runtime import EdgeRuntime, RuntimeStateError

#: The server's log (configured by ``arc-edge serve``): one line per push, activation, rollback and refusal.
log = logging.getLogger("arc.edge")


class BadRequest:
    """Stands in for a request whose bytes did not parse (e.g. a query that is not UTF-8)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def request_parser(message_type: Any) -> Callable[[bytes], Any]:
    """A deserializer that never raises: bytes that do not parse become a BadRequest, which the
    handler wrappers in server.py answer with INVALID_ARGUMENT (gRPC would say INTERNAL)."""
    name = message_type.DESCRIPTOR.full_name

    def parse(data: bytes) -> Any:
        try:
            return message_type.FromString(data)
        except (DecodeError, UnicodeDecodeError, ValueError) as exc:
            return BadRequest(f"the request does not parse as {name} (is every string valid UTF-8?): {exc}")

    return parse


parse_invoke_request = request_parser(pb.InvokeRequest)


class EdgeCacheServicer:
    """Implements arc.edge.v1.EdgeCache on an EdgeRuntime.

    One instance per listener: ``admin`` is True only on the admin listener, where DescribeEntry
    includes an entry's compiled source. Which methods a listener may call at all is decided by
    server.QueryListenerGuard, not here."""

    def __init__(self, runtime: EdgeRuntime, *, admin: bool = False, quota: BlobQuota | None = None) -> None:
        self.runtime = runtime
        self.admin = admin
        options = runtime.options
        self.quota = quota or BlobQuota(options.max_blob_bytes, options.max_blob_store_bytes, runtime.blobs.used_bytes)

    def _chunks(self, request_iterator: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        """A pushed stream's chunks; a chunk whose bytes did not parse ends the push as INVALID_ARGUMENT."""
        for chunk in request_iterator:
            if isinstance(chunk, BadRequest):
                self.runtime.count_invalid()
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, chunk.reason)
            yield chunk

    # ---- answering -----------------------------------------------------------------
    def _checked_query(self, request: Any, context: grpc.ServicerContext) -> str:
        if isinstance(request, BadRequest):
            self.runtime.count_invalid()
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.reason)
        query = request.query
        if not query.strip():
            self.runtime.count_invalid()
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the query is empty")
        size = len(query.encode("utf-8"))
        if size > self.runtime.options.max_query_bytes:
            self.runtime.count_invalid()
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"the query is {size} bytes; this device accepts at most {self.runtime.options.max_query_bytes}",
            )
        return query

    def _answer(self, request: Any, context: grpc.ServicerContext) -> tuple[Pipeline, Answer]:
        query = self._checked_query(request, context)
        remaining = context.time_remaining()
        if remaining is not None and remaining <= 0:
            context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "the deadline passed before the call started")
        try:
            return self.runtime.answer(query, entry_id=request.entry_id, timeout_s=remaining)
        except RuntimeStateError as exc:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        raise AssertionError("unreachable")  # pragma: no cover

    def _respond(self, request: Any, answerer: Pipeline, answer: Answer, context: grpc.ServicerContext) -> pb.InvokeResponse:
        response = to_response(answerer, answer)
        if not answer.hit:
            reply = self.runtime.ask_upstream(request.query, context.time_remaining())
            if reply is not None:
                response.upstream.CopyFrom(
                    pb.UpstreamAnswer(model=reply.model, text=reply.text, error=reply.error, latency_ms=reply.latency_ms)
                )
        return response

    def Invoke(self, request: Any, context: grpc.ServicerContext) -> pb.InvokeResponse:  # noqa: N802
        answerer, answer = self._answer(request, context)
        return self._respond(request, answerer, answer, context)

    def InvokeStream(self, request: Any, context: grpc.ServicerContext) -> Iterator[pb.InvokeEvent]:  # noqa: N802
        answerer, answer = self._answer(request, context)
        for step in answer.narration:
            yield pb.InvokeEvent(step=pb.NarrationStep(function=step.function, text=step.text))
        yield pb.InvokeEvent(response=self._respond(request, answerer, answer, context))

    # ---- entries -------------------------------------------------------------------
    def _current(self, context: grpc.ServicerContext) -> Pipeline:
        answerer = self.runtime.current()
        if answerer is None:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "no bundle is active on this device")
        return answerer  # type: ignore[return-value]

    def ListEntries(self, request: Any, context: grpc.ServicerContext) -> pb.ListEntriesResponse:  # noqa: N802
        answerer = self._current(context)
        return pb.ListEntriesResponse(
            entries=[pb.EntrySummary(id=e.id, description=e.description, template=e.template,
                                     verification=VERIFICATION[answerer.verification_of(e.id)],
                                     verified_with_fixed=list(answerer.scope_of(e.id)))
                     for e in answerer.entries.values()],
            bundle_name=answerer.name,
            bundle_version=answerer.version,
        )

    def DescribeEntry(self, request: Any, context: grpc.ServicerContext) -> pb.EntryDescription:  # noqa: N802
        answerer = self._current(context)
        entry = answerer.entries.get(request.entry_id)
        if entry is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"no entry {request.entry_id!r} in bundle {answerer.bundle_id}")
        assert entry is not None
        return pb.EntryDescription(
            id=entry.id, description=entry.description, template=entry.template, question=entry.question,
            answer_key=entry.answer_key or "",
            parameters=[
                pb.ParameterDescription(
                    name=p.name, description=p.description, type=p.type_name, domain=p.domain_text(),
                    original_json=as_json(p.original), choices=[str(c) for c in p.choices or ()],
                )
                for p in entry.params
            ],
            module_source=answerer.modules.get(entry.id, "") if self.admin else "",
        )

    # ---- bundles and blobs -------------------------------------------------------------
    def MissingBlobs(self, request: Any, context: grpc.ServicerContext) -> pb.MissingBlobsResponse:  # noqa: N802
        try:
            return pb.MissingBlobsResponse(sha256=self.runtime.blobs.missing(list(request.sha256)))
        except BlobStoreError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        raise AssertionError("unreachable")  # pragma: no cover

    def PushBlob(self, request_iterator: Iterator[Any], context: grpc.ServicerContext) -> pb.PushBlobResponse:  # noqa: N802
        """Stream one blob into a temp file, within the quota reserved from its declared size; a refused
        push leaves nothing behind (the temp file is deleted on every exit)."""
        chunks = self._chunks(request_iterator, context)
        first = next(chunks, None)
        if first is None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no chunks received")
        expected, declared = first.sha256, first.size
        if not expected or declared <= 0:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the first chunk must name the blob's sha256 and size")
        try:
            reservation = self.quota.reserve(declared)
            reservation.__enter__()
        except BlobQuotaError as exc:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        try:
            size = 0
            digest = hashlib.sha256()
            with tempfile.NamedTemporaryFile(dir=self.runtime.blobs.root, prefix="push-", delete=True) as tmp:
                for chunk in _chain(first, chunks):
                    size += len(chunk.data)
                    if size > declared:
                        context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                      f"the blob sent more than the {declared} bytes its first chunk declared")
                    digest.update(chunk.data)
                    tmp.write(chunk.data)
                if size != declared:
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"the blob sent {size} bytes, declared {declared}")
                if digest.hexdigest() != expected:
                    context.abort(grpc.StatusCode.DATA_LOSS, f"blob hashes to {digest.hexdigest()}, expected {expected}")
                tmp.flush()
                try:
                    self.runtime.blobs.put_file(tmp.name, expected_sha256=expected)
                except BlobStoreError as exc:
                    context.abort(grpc.StatusCode.DATA_LOSS, str(exc))
        finally:
            reservation.__exit__(None, None, None)
        log.info("pushed blob %s (%d bytes)", expected, size)
        return pb.PushBlobResponse(sha256=expected, size=size)

    def PushBundle(self, request_iterator: Iterator[Any], context: grpc.ServicerContext) -> pb.PushBundleResponse:  # noqa: N802
        data = bytearray()
        limit = self.runtime.options.max_bundle_bytes
        for chunk in self._chunks(request_iterator, context):
            data += chunk.data
            if len(data) > limit:
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, f"bundle larger than {limit} bytes")
        try:
            bundle, missing = self.runtime.stage_bundle(bytes(data))
        except BundleConflictError as exc:
            self._refused("push", exc)
            context.abort(grpc.StatusCode.ALREADY_EXISTS, f"bundle refused: {type(exc).__name__}: {exc}")
        except BundleNameRefusedError as exc:
            self._refused("push", exc)
            context.abort(grpc.StatusCode.PERMISSION_DENIED, f"bundle refused: {type(exc).__name__}: {exc}")
        except BundleError as exc:
            self._refused("push", exc)
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"bundle refused: {type(exc).__name__}: {exc}")
        bundle_id = f"{bundle.name}-{bundle.version}"
        log.info("pushed bundle %s (name %s, version %s, digest %s, %d bytes, %d entries, %d blob(s) missing)",
                 bundle_id, bundle.name, bundle.version, bundle.digest[:12], len(data), len(bundle.entries), len(missing))
        return pb.PushBundleResponse(
            bundle_id=bundle_id, digest=bundle.digest, missing_blobs=missing, entries=len(bundle.entries)
        )

    @staticmethod
    def _refused(what: str, exc: Exception) -> None:
        log.warning("refused %s: %s: %s", what, type(exc).__name__, exc)

    def ActivateBundle(self, request: Any, context: grpc.ServicerContext) -> pb.BundleStatus:  # noqa: N802
        try:
            active, previous = self.runtime.activate(request.bundle_id)
        except (RuntimeStateError, DowngradeError) as exc:
            self._refused(f"activation of {request.bundle_id!r}", exc)
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        except ArcError as exc:
            self._refused(f"activation of {request.bundle_id!r}", exc)
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"cannot activate {request.bundle_id!r}: {exc}")
        log.info("activated bundle %s (%s; previous: %s)", active, self._describe_active(), previous or "none")
        return pb.BundleStatus(active=active, previous=previous)

    def _describe_active(self) -> str:
        current = self.runtime.current()
        if current is None:
            return "none"
        return f"name {current.name}, version {current.version}, digest {current.digest[:12]}"

    def RollbackBundle(self, request: Any, context: grpc.ServicerContext) -> pb.BundleStatus:  # noqa: N802
        try:
            active, previous = self.runtime.rollback(request.bundle_id)
        except ArcError as exc:
            self._refused("rollback", exc)
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        log.info("rolled back to bundle %s (%s) from %s", active, self._describe_active(), previous or "none")
        return pb.BundleStatus(active=active, previous=previous)

    def ListBundles(self, request: Any, context: grpc.ServicerContext) -> pb.ListBundlesResponse:  # noqa: N802
        return pb.ListBundlesResponse(
            bundles=[pb.BundleInfo(**info) for info in self.runtime.list_bundles()], active=self.runtime.active_id
        )

    def GetStats(self, request: Any, context: grpc.ServicerContext) -> pb.Stats:  # noqa: N802
        s = self.runtime.snapshot()
        return pb.Stats(
            invocations=s["invocations"], hits=s["hits"], misses=s["misses"],
            misses_by_reason=s["misses_by_reason"], hits_by_path=s["hits_by_path"], uptime_s=s["uptime_s"],
            active_bundle=s["active_bundle"], rss_bytes=s["rss_bytes"],
            workers={k: int(v) for k, v in s["workers"].items() if isinstance(v, (int, float))},
            invalid_requests=s["invalid_requests"],
        )


def _chain(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest

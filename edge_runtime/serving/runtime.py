"""The device's state: verified bundles on disk, the active one, the shared model and workers.

One ``EdgeRuntime`` per server. Bundles are verified when pushed and again when loaded
at start-up; activation builds a complete new ``Pipeline`` first and then swaps a single
reference, so a call in flight keeps the answerer it started with and nothing is lost.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edge_runtime.answer.result import Answer
from edge_runtime.bundles.blob_store import BlobStore
from edge_runtime.bundles.bundle import Bundle, peek_blob_names, read_bundle
from edge_runtime.bundles.bundle_blobs import missing_blobs, resolve_files
from edge_runtime.bundles.high_water import HighWaterMarks
from edge_runtime.bundles.versions import BundleVersion
from edge_runtime.entries.compiler import LoadedCompiledEntry
from edge_runtime.entries.registry import Execution
from edge_runtime.errors import (
    ArcError,
    BlobStoreError,
    BundleConflictError,
    BundleError,
    BundleNameRefusedError,
    DowngradeError,
)
from edge_runtime.flags import option, subtree
from edge_runtime.model.lm_engine import LMEngine
from edge_runtime.options import ModelOptions, PipelineOptions, PoolOptions
from edge_runtime.pipeline import Pipeline
from edge_runtime.serving.metrics import Metrics
from edge_runtime.serving.miss_log import MissLog
from edge_runtime.serving.upstream import AnthropicUpstream, UpstreamConfig, UpstreamReply

log = logging.getLogger("arc.edge")


class RuntimeStateError(ArcError):
    """An operation that the device's state does not allow now (no bundle, unknown bundle, blobs missing)."""


def _data_dir(given: Path | None) -> Path:
    from edge_runtime.serving.server import default_data_dir

    return given or default_data_dir()


def _trusted_keys(paths: list[Path]) -> list[bytes]:
    from edge_runtime.bundles.trust import load_trusted_keys

    return load_trusted_keys(paths)


@dataclass
class RuntimeOptions:
    """The device: where it keeps its state, whom it trusts, what it accepts; and the branches for IS3's pool,
    the model and the pipeline (edge_runtime/options.py shows the whole tree)."""

    data_dir: Path = option(
        flag="--data-dir", type=Path, convert=_data_dir,
        help="staged bundles, blob store, state.json and the miss log (DIR/misses/) "
             "(default: $ARC_EDGE_DATA or ~/.local/share/arc-edge)")
    trusted_keys: list[bytes] = option(default_factory=list, flag="--trust", action="append", type=Path,
                                       convert=_trusted_keys, help="public key file of a trusted signer")
    allow_unsigned: bool = option(False, flag="--insecure-allow-unsigned",
                                  help="accept unsigned bundles (development only)")
    #: bundle names this device accepts; empty: any name a trusted key signed (docs/security.md)
    accept_bundle_names: tuple[str, ...] = option(
        (), flag="--accept-bundle", action="append", metavar="NAME", flag_default=[], convert=tuple,
        help="accept only bundles with this name (repeatable; default: any name a trusted key signed)")
    max_query_bytes: int = option(4096, flag="--max-query-bytes", help="longest question accepted (bytes)")
    max_bundle_bytes: int = option(256 << 20, flag="--max-bundle-bytes", help="largest pushed bundle (bytes)")
    max_blob_bytes: int = option(2 << 30, flag="--max-blob-bytes", help="largest pushed blob (bytes)")
    max_blob_store_bytes: int = option(8 << 30, flag="--max-blob-store-bytes", help="blob store quota (bytes)")
    #: run entries in worker processes (off: in this process, for tools and tests that need no isolation)
    use_worker_pool: bool = True
    pool: PoolOptions = subtree(PoolOptions)
    model: ModelOptions = subtree(ModelOptions)
    pipeline: PipelineOptions = subtree(PipelineOptions)
    upstream: UpstreamConfig | None = subtree(UpstreamConfig, optional_on="model")  # ask the source model on a MISS
    #: target-model engines by artefact digest, shared by runtimes in one process (benchmarks/fleet.py's lightweight
    #: devices); None: this runtime's own
    engine_cache: dict[str, Any] | None = None


class EdgeRuntime:
    """Bundles, activation and answering; thread-safe."""

    def __init__(self, options: RuntimeOptions) -> None:
        self.options = options
        self.data_dir = Path(options.data_dir)
        self.bundles_dir = self.data_dir / "bundles"
        self.bundles_dir.mkdir(parents=True, exist_ok=True)
        self.high_water = HighWaterMarks(self.bundles_dir)
        self.blobs = BlobStore(self.data_dir / "blobs")
        self.miss_log = MissLog(self.data_dir / "misses")
        self.metrics = Metrics()
        self.started = time.time()
        self._lock = threading.RLock()
        self._active: Pipeline | None = None
        self._previous_id = ""
        self._engines: dict[str, LMEngine] = options.engine_cache if options.engine_cache is not None else {}
        self._pool: Any = None
        self.stats: dict[str, Any] = {"invocations": 0, "hits": 0, "misses": 0, "invalid_requests": 0,
                                      "misses_by_reason": {}, "hits_by_path": {}}
        self._stats_lock = threading.Lock()
        self.upstream = AnthropicUpstream(options.upstream) if options.upstream is not None else None
        if options.use_worker_pool:
            from edge_runtime.execute.worker_pool import WorkerPool

            pool = options.pool
            self._pool = WorkerPool(pool.workers, memory_limit_mb=pool.memory_limit_mb,
                                    default_timeout_s=pool.entry_timeout_s, lm_limits=pool.lm_limits)
        self._restore()
        self.prune_blobs()

    # ---- state on disk ---------------------------------------------------------
    @property
    def _state_path(self) -> Path:
        return self.data_dir / "state.json"

    def _save_state(self) -> None:
        active = self._active.bundle_id if self._active else ""
        tmp = self._state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"active": active, "previous": self._previous_id}))
        os.replace(tmp, self._state_path)

    def _restore(self) -> None:
        """Re-activate what was active before a restart (re-verified from disk)."""
        if not self._state_path.exists():
            return
        state = json.loads(self._state_path.read_text())
        self._previous_id = state.get("previous", "")
        if state.get("active"):
            try:
                self._activate(state["active"], remember_previous=False)
            except ArcError as exc:
                log.warning("could not re-activate %s after restart: %s", state["active"], exc)
                self._active = None

    # ---- bundles ---------------------------------------------------------------
    def read(self, data: bytes | Path) -> Bundle:
        return read_bundle(
            data, trusted_keys=self.options.trusted_keys, allow_unsigned=self.options.allow_unsigned,
            max_bytes=self.options.max_bundle_bytes,
        )

    def stage_bundle(self, data: bytes) -> tuple[Bundle, list[str]]:
        """Verify a pushed bundle and keep it on disk; returns it and the blobs it needs that are still missing
        (its out-of-line routing files and its target model's files).

        A bundle id (name-version) names one set of bytes for ever: pushing the same bytes again is a
        no-op, different bytes under a stored id are refused (the stored bundle stays, as served)."""
        bundle = self.read(data)
        BundleVersion(bundle.version)  # an unorderable version is refused before it is stored
        pinned = self.options.accept_bundle_names
        if pinned and bundle.name not in pinned:
            raise BundleNameRefusedError(
                f"this device accepts only bundles named {', '.join(sorted(pinned))}; {bundle.name!r} refused"
            )
        path = self.bundles_dir / f"{bundle.name}-{bundle.version}.arcb"
        with self._lock:
            if path.exists():
                if path.read_bytes() != data:
                    raise BundleConflictError(
                        f"{path.stem} is already stored on this device with different contents; a bundle id is never "
                        f"overwritten: build the change under a new version"
                    )
            else:
                tmp = path.with_suffix(".tmp")
                with open(tmp, "wb") as out:
                    out.write(data)
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(tmp, path)
        return bundle, missing_blobs(bundle, self.blobs)

    def prune_blobs(self, older_than_s: float = 3600.0) -> list[str]:
        """Remove blobs that no held bundle names (run at start-up): a bundle stores only hashes, so garbage
        is what a replaced blob, a push that never got its bundle or a crash mid-write left behind."""
        with self._lock:
            keep: set[str] = set()
            for path in self.bundles_dir.glob("*.arcb"):
                keep |= set(peek_blob_names(path))  # without the signature check: keeps more, never less
            removed = self.blobs.prune(keep, older_than_s=older_than_s)
        if removed:
            log.info("pruned %d blob(s) that no held bundle references", len(removed))
        return removed

    def list_bundles(self) -> list[dict[str, Any]]:
        out = []
        active = self.active_id
        for path in sorted(self.bundles_dir.glob("*.arcb")):
            try:
                bundle = self.read(path)
            except BundleError:
                continue
            out.append({
                "bundle_id": path.stem, "name": bundle.name, "version": bundle.version, "digest": bundle.digest,
                "created_at": str(bundle.manifest.get("created_at", "")), "entries": len(bundle.entries),
                "active": path.stem == active, "signed": bundle.signed, "key_id": bundle.key_id or "",
                "target_model": (bundle.target_model or {}).get("sha256", ""),
            })
        return out

    @property
    def active_id(self) -> str:
        current = self._active
        return current.bundle_id if current else ""

    @property
    def previous_id(self) -> str:
        return self._previous_id

    def current(self) -> Pipeline | None:
        return self._active

    def activate(self, bundle_id: str) -> tuple[str, str]:
        """Activate a staged bundle whose version is higher than any activated before for its name
        (the highest itself may be activated again); an older one only through ``rollback``."""
        with self._lock:
            bundle = self._staged(bundle_id)
            version = BundleVersion(bundle.version)
            highest = self.high_water.highest(bundle.name)
            if highest is not None and (version < highest or (version == highest and version.text != highest.text)):
                raise DowngradeError(
                    f"refused to activate {bundle_id}: version {bundle.version} is not higher than {highest.text}, "
                    f"the highest {bundle.name} this device has activated (an older bundle only by rollback)"
                )
            self._activate(bundle_id, remember_previous=True, bundle=bundle)
            self.high_water.raise_to(bundle.name, version)
            return self.active_id, self._previous_id

    def rollback(self, bundle_id: str = "") -> tuple[str, str]:
        """Go back to an older held bundle of the active name: the one named, or else the newest one
        below the active version. The high-water mark stays, so a later activate may only go up again."""
        with self._lock:
            current = self._active
            if current is None:
                raise RuntimeStateError("no bundle is active on this device, so there is nothing to roll back")
            active_version = BundleVersion(current.version)
            if bundle_id:
                bundle = self._staged(bundle_id)
                if bundle.name != current.name or not BundleVersion(bundle.version) < active_version:
                    raise RuntimeStateError(
                        f"cannot roll back to {bundle_id}: a rollback goes to an older {current.name} than the "
                        f"active {current.bundle_id}"
                    )
            else:
                earlier = [b for b in self._held(current.name) if BundleVersion(b.version) < active_version]
                if not earlier:
                    raise RuntimeStateError(
                        f"no earlier bundle of {current.name} than the active {current.bundle_id} is held on this device"
                    )
                bundle = max(earlier, key=lambda b: BundleVersion(b.version))
                bundle_id = f"{bundle.name}-{bundle.version}"
            self._activate(bundle_id, remember_previous=True, bundle=bundle)
            return self.active_id, self._previous_id

    def _held(self, name: str) -> list[Bundle]:
        """The verified bundles of ``name`` stored on this device (unreadable or unordered ones skipped)."""
        held = []
        for path in self.bundles_dir.glob(f"{name}-*.arcb"):
            try:
                bundle = self.read(path)
                BundleVersion(bundle.version)
            except BundleError:
                continue
            if bundle.name == name:
                held.append(bundle)
        return held

    def _staged(self, bundle_id: str) -> Bundle:
        path = self.bundles_dir / f"{bundle_id}.arcb"
        if not bundle_id or "/" in bundle_id or bundle_id.startswith(".") or not path.exists():
            raise RuntimeStateError(f"no staged bundle {bundle_id!r}")
        return self.read(path)

    def _activate(self, bundle_id: str, *, remember_previous: bool, bundle: Bundle | None = None) -> None:
        bundle = bundle or self._staged(bundle_id)
        answerer = self._build_pipeline(bundle)
        old = self._active
        self._active = answerer  # the swap: one reference assignment
        if remember_previous and old is not None and old.bundle_id != answerer.bundle_id:
            self._previous_id = old.bundle_id
        self._save_state()

    def _build_pipeline(self, bundle: Bundle) -> Pipeline:
        files = resolve_files(bundle, self.blobs)  # out-of-line blobs, hashed before use; missing ones named
        engine = self._engine_for(bundle)
        router, threshold = self._router_for(bundle, files)
        from edge_runtime.read.packs import load_pack

        return Pipeline.for_bundle(
            reading=load_pack(bundle.reading),  # the pack the bundle's signed manifest names (checked when read)
            name=bundle.name, version=bundle.version, digest=bundle.digest, entries=bundle.entries,
            modules=bundle.modules, router=router, threshold=threshold, engine=engine,
            executor=self._executor(engine, bundle.manifest.get("lm_limits")), verification=bundle.verification,
            options=self.options.pipeline, verified_scope=bundle.verified_scope, verified_only=bundle.verified_only,
        )

    def _engine_for(self, bundle: Bundle) -> LMEngine | None:
        target = bundle.target_model
        if not target:
            return None
        digest = target["sha256"]
        if digest in self._engines:
            return self._engines[digest]
        missing = self.blobs.missing(target["files"])
        if missing:
            raise RuntimeStateError(f"target model {digest[:12]} lacks {len(missing)} blob(s), first {missing[0]}; "
                                    f"push them: arc-edge push BUNDLE.arcb --model build/target-models/<hash>")
        try:
            self.blobs.target_model_index(digest)
        except BlobStoreError:
            self.blobs.register_target_model(target["files"], target.get("manifest", {}))
        model = self.options.model
        engine = LMEngine(self.blobs.materialise_target_model(digest), threads=model.threads, background=True,
                          spin=model.spin, concurrent_runs=model.model_runs)
        # Keep at most the engines of the active and the previous bundle.
        if len(self._engines) >= 2:
            self._engines.pop(next(iter(self._engines)))
        self._engines[digest] = engine
        return engine

    def _router_for(self, bundle: Bundle, files: dict[str, bytes]) -> tuple[Any, float]:
        from edge_runtime.route.bundle_routing import router_from_bundle

        return router_from_bundle(bundle, files)

    def _executor(self, engine: LMEngine | None, requested_limits: Any = None) -> Callable[..., Execution]:
        from edge_runtime.model.onnx_target_lm import OnnxTargetLM

        target_lm = OnnxTargetLM(engine) if engine is not None else None
        try:
            lm_limits = self.options.pool.lm_limits.within(requested_limits)
        except ValueError as exc:
            raise BundleError(f"bundle manifest: {exc}") from exc
        if self._pool is not None:
            pool = self._pool
            # One model per server: the pool's workers reach it through the parent. A bundle that brings
            # another model switches it for every call from now on.
            pool.set_target_lm(target_lm)

            def run_in_pool(digest: str, entry_id: str, source: str, values: dict, timeout: float | None) -> Execution:
                return pool.run(digest, entry_id, source, values, timeout_s=timeout, lm_limits=lm_limits)

            return run_in_pool
        loaded: dict[tuple[str, str], LoadedCompiledEntry] = {}
        loading = threading.Lock()

        def run_here(digest: str, entry_id: str, source: str, values: dict, timeout: float | None) -> Execution:
            key = (digest, entry_id)
            entry = loaded.get(key)
            if entry is None:
                # one compile per entry, one at a time: concurrent first calls compiled it in several threads at once,
                # which CPython 3.11's ast module can fail ("AST constructor recursion depth mismatch")
                with loading:
                    entry = loaded.get(key)
                    if entry is None:
                        entry = loaded[key] = LoadedCompiledEntry(source, entry_id)
            return entry.run(values, target_lm=target_lm)

        return run_here

    # ---- answering ---------------------------------------------------------------
    def answer(self, query: str, *, entry_id: str = "", timeout_s: float | None = None) -> tuple[Pipeline, Answer]:
        answerer = self._active
        if answerer is None:
            raise RuntimeStateError("no bundle is active on this device")
        deadline = self.options.pool.entry_timeout_s
        limit = deadline if timeout_s is None else min(timeout_s, deadline)
        answer = answerer.answer(query, entry_id=entry_id, timeout_s=limit)
        self._record(answerer, query, answer)
        return answerer, answer

    def ask_upstream(self, query: str, timeout_s: float | None) -> UpstreamReply | None:
        """The source model's reply for a MISS, when a fallback is configured (counted in the stats)."""
        if self.upstream is None:
            return None
        reply = self.upstream.ask(query, timeout_s)
        outcome = "error" if reply.error else "answered"
        with self._stats_lock:
            by_outcome = self.stats.setdefault("upstream", {})
            by_outcome[outcome] = by_outcome.get(outcome, 0) + 1
        self.metrics.inc("upstream_calls_total", outcome=outcome)
        return reply

    def _record(self, answerer: Pipeline, query: str, answer: Answer) -> None:
        with self._stats_lock:
            self.stats["invocations"] += 1
            if answer.hit:
                self.stats["hits"] += 1
                by_path = self.stats["hits_by_path"]
                by_path[answer.path] = by_path.get(answer.path, 0) + 1
            else:
                self.stats["misses"] += 1
                by_reason = self.stats["misses_by_reason"]
                by_reason[answer.miss_reason] = by_reason.get(answer.miss_reason, 0) + 1
        if answer.hit:
            self.metrics.inc("hits_total", path=answer.path)
        else:
            self.metrics.inc("misses_total", reason=answer.miss_reason)
            self.miss_log.append({
                "query": query, "reason": answer.miss_reason, "detail": answer.miss_detail,
                "entry_id": answer.entry_id, "similarity": answer.similarity, "bundle": answerer.bundle_id,
            })
        for stage, value in answer.timings.items():
            self.metrics.observe_ms(stage.removesuffix("_ms"), value)

    def count_invalid(self) -> None:
        with self._stats_lock:
            self.stats["invalid_requests"] += 1
        self.metrics.inc("invalid_requests_total")

    def snapshot(self) -> dict[str, Any]:
        with self._stats_lock:
            stats = json.loads(json.dumps(self.stats))
        stats["uptime_s"] = time.time() - self.started
        stats["active_bundle"] = self.active_id
        stats["rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        stats["workers"] = dict(self._pool.stats) if self._pool is not None else {}
        return stats

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()

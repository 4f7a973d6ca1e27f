"""``arc-edge serve --follow REGISTRY/REPO --tuf-root ROOT.json``: the device pulls what TUF says to run.

Each poll (every ``interval_s``, jittered so a fleet does not poll in step):

1. ``tuf.ngclient.Updater.refresh()`` through the registry (``tuf_fetcher``): signatures against the
   trusted root, no role's version going down (a replayed old set is refused), nothing expired. The
   trusted metadata is kept in ``DATA_DIR/fleet/tuf/``, so a restart does not forget the versions seen.
2. The highest ``NAME/VERSION`` target (of the ``--accept-bundle`` names, if pinned). Nothing to do when it
   is active; refused without a download when it is below the device's high-water mark.
3. Its OCI manifest, fetched by the digest in the target's custom field and checked against TUF's length
   and sha256; the bundle layer, digest-checked, staged by ``EdgeRuntime.stage_bundle`` exactly as a
   push is (signature, every hash, name pin, no overwrite); then only the blobs the store lacks, each
   streamed into the blob store and kept only if it hashes to its signed name.
4. ``EdgeRuntime.activate``: a new answerer swapped in atomically (calls in flight finish on the old one),
   refused below the high-water mark.

Any failure leaves the active bundle serving; the reason is in ``health()`` (the ``/health`` JSON beside
``/metrics``, ``DATA_DIR/fleet/follow.json``, the gRPC health service ``arc.edge.v1.Follow``) and in the
metrics ``follow_last_ok``, ``follow_error{reason=...}``, ``follow_polls_total{outcome=...}``.
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tuf.api import exceptions as tuf_errors
from tuf.api.metadata import Metadata
from tuf.ngclient import Updater, UpdaterConfig

from edge_runtime.bundles.versions import BundleVersion
from edge_runtime.errors import ArcError, BundleError, DowngradeError
from edge_runtime.fleet import media
from edge_runtime.fleet.options import FollowOptions
from edge_runtime.fleet.registry import RegistryClient, RegistryError, RegistryIntegrityError
from edge_runtime.fleet.tuf_fetcher import BASE_URL, RegistryFetcher

log = logging.getLogger("arc.edge.follow")


class FollowError(ArcError):
    """A poll that could not bring the device up to date (the reason is reported, the device keeps serving)."""


def classify(exc: BaseException) -> str:
    """A short reason label for health and metrics."""
    if isinstance(exc, tuf_errors.ExpiredMetadataError):
        return "metadata_expired"
    if isinstance(exc, tuf_errors.BadVersionNumberError):
        return "metadata_replayed"
    if isinstance(exc, (tuf_errors.UnsignedMetadataError, tuf_errors.LengthOrHashMismatchError,
                        RegistryIntegrityError)):
        return "integrity"
    if isinstance(exc, tuf_errors.RepositoryError):
        return "metadata_refused"
    if isinstance(exc, (tuf_errors.DownloadError, RegistryError)):
        return "registry_unreachable"
    if isinstance(exc, DowngradeError):
        return "downgrade_refused"
    if isinstance(exc, BundleError):
        return "bundle_refused"
    return "error"


class Follower:
    """The poll loop of one device; ``poll_once`` is the whole update, the thread only repeats it."""

    def __init__(self, runtime: Any, options: FollowOptions, *, on_status: Callable[[bool], None] | None = None) -> None:
        self.runtime = runtime
        self.options = options
        self.client = RegistryClient(options.reference, timeout_s=options.timeout_s)
        self.state_dir = Path(runtime.data_dir) / "fleet"
        self.metadata_dir = self.state_dir / "tuf"
        self.metadata_dir.mkdir(parents=True, exist_ok=True)
        self.on_status = on_status
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._polling = threading.Lock()  # one poll at a time (the loop, or a caller of poll_once)
        self.status: dict[str, Any] = {
            "following": str(self.client.ref), "last_ok": None, "last_error": "", "error_reason": "",
            "polls": 0, "failed_polls": 0, "latest_published": "", "bytes_pulled": 0, "last_activation": "",
        }
        self.misslog = None
        if options.upload_misses:
            from edge_runtime.fleet.misslog_upload import MissLogUploader

            self.misslog = MissLogUploader(runtime.miss_log, self.client, self.state_dir,
                                           share_questions=options.share_questions, device_id=options.device_id)

    # ---- TUF -------------------------------------------------------------------
    def _updater(self) -> Updater:
        trusted = self.metadata_dir / "root.json"
        bootstrap = None if trusted.is_file() else Path(self.options.tuf_root).read_bytes()
        return Updater(str(self.metadata_dir), BASE_URL, fetcher=RegistryFetcher(self.client),
                       config=UpdaterConfig(prefix_targets_with_hash=False), bootstrap=bootstrap)

    def _choose(self, updater: Updater) -> tuple[str, dict[str, Any]] | None:
        """The highest published target of an accepted name: (target path, its custom.arc), or None."""
        targets = Metadata.from_file(str(self.metadata_dir / "targets.json")).signed.targets  # written by refresh()
        pinned = set(self.runtime.options.accept_bundle_names)
        best: tuple[BundleVersion, str, dict[str, Any]] | None = None
        names = set()
        for path, target in targets.items():
            arc = (target.custom or {}).get("arc")
            if not isinstance(arc, dict) or (pinned and arc.get("bundle") not in pinned):
                continue
            try:
                version = BundleVersion(str(arc.get("version")))
            except BundleError:
                continue
            names.add(arc.get("bundle"))
            if best is None or best[0] < version:
                best = (version, path, arc)
        if len(names) > 1:
            raise FollowError(f"{self.client.ref} publishes several bundle names ({', '.join(sorted(names))}); "
                              f"pin the one this device serves with --accept-bundle NAME")
        if best is None:
            return None
        info = updater.get_targetinfo(best[1])  # through the trusted set, not the file read above
        if info is None:
            raise FollowError(f"target {best[1]} vanished from the trusted metadata")
        return best[1], info.custom["arc"]

    # ---- one poll ------------------------------------------------------------
    def poll_once(self) -> str:
        """Bring the device up to date; returns what happened. Never raises: failures are reported."""
        with self._polling:
            return self._poll_reported()

    def _poll_reported(self) -> str:
        received = self.client.received
        try:
            outcome = self._poll()
        except Exception as exc:  # noqa: BLE001 - a failed poll must never stop the server
            outcome = self._failed(exc)
        finally:
            with self._lock:
                self.status["bytes_pulled"] += self.client.received - received
            self.runtime.metrics.inc("follow_bytes_pulled_total", self.client.received - received)
        if self.misslog is not None and not self.status["error_reason"]:
            try:
                self.misslog.upload_rotated()
            except Exception as exc:  # noqa: BLE001 - the miss log waits for the next poll
                log.warning("miss-log upload failed: %s", exc)
        self._write_status()
        return outcome

    def _poll(self) -> str:
        updater = self._updater()
        updater.refresh()
        chosen = self._choose(updater)
        runtime = self.runtime
        if chosen is None:
            return self._ok("nothing published yet")
        path, arc = chosen
        name, version = str(arc["bundle"]), str(arc["version"])
        bundle_id = f"{name}-{version}"
        with self._lock:
            self.status["latest_published"] = bundle_id
        if runtime.active_id == bundle_id:
            return self._ok(f"up to date ({bundle_id})")
        highest = runtime.high_water.highest(name)
        if highest is not None and BundleVersion(version) < highest:
            raise DowngradeError(f"TUF names {bundle_id}, below {highest.text}, the highest {name} this device has "
                                 f"activated; refused without downloading it")
        info = updater.get_targetinfo(path)
        manifest_digest = media.check_digest(str(arc["manifest_digest"]))
        manifest_bytes, _ = self.client.get_manifest(manifest_digest, expected_digest=manifest_digest)
        info.verify_length_and_hashes(manifest_bytes)  # what TUF signed is exactly this manifest
        manifest = json.loads(manifest_bytes)
        layers = manifest.get("layers") or []
        bundle_layers = [layer for layer in layers if layer.get("mediaType") == media.BUNDLE]
        if len(bundle_layers) != 1:
            raise FollowError(f"manifest {arc['manifest_digest']} has {len(bundle_layers)} bundle layers, not one")
        data = self.client.get_blob(bundle_layers[0]["digest"], int(bundle_layers[0]["size"]))
        bundle, missing = runtime.stage_bundle(data)
        if (bundle.name, bundle.version) != (name, version):
            raise FollowError(f"TUF names {bundle_id} but the signed bundle is {bundle.name}-{bundle.version}; refused")
        by_digest = {layer.get("digest"): layer for layer in layers}
        for sha in missing:
            layer = by_digest.get(f"sha256:{sha}")
            if layer is None:
                raise FollowError(f"{bundle_id} needs blob {sha}, which its manifest does not list")
            runtime.blobs.put_chunks(self.client.blob_chunks(layer["digest"], int(layer["size"])), sha)
        runtime.activate(bundle_id)
        runtime.metrics.inc("follow_activations_total")
        with self._lock:
            self.status["last_activation"] = bundle_id
        log.info("follow: activated %s from %s (%d blob(s) pulled)", bundle_id, self.client.ref, len(missing))
        return self._ok(f"activated {bundle_id}")

    def _ok(self, outcome: str) -> str:
        now = time.time()
        with self._lock:
            self.status.update(last_ok=now, last_error="", error_reason="", polls=self.status["polls"] + 1)
        metrics = self.runtime.metrics
        metrics.set("follow_last_ok", now)
        metrics.clear_gauge("follow_error")
        metrics.set("follow_error", 0)
        metrics.inc("follow_polls_total", outcome="ok")
        if self.on_status:
            self.on_status(True)
        return outcome

    def _failed(self, exc: BaseException) -> str:
        reason = classify(exc)
        text = f"{type(exc).__name__}: {exc}"
        if reason == "metadata_expired":
            text += " (the build server must re-sign it: arc-build tuf refresh --to REGISTRY/REPO)"
        with self._lock:
            self.status.update(last_error=text, error_reason=reason, polls=self.status["polls"] + 1,
                               failed_polls=self.status["failed_polls"] + 1)
        metrics = self.runtime.metrics
        metrics.clear_gauge("follow_error")
        metrics.set("follow_error", 1, reason=reason)
        metrics.inc("follow_polls_total", outcome=reason)
        log.warning("follow %s: %s; still serving %s", self.client.ref, text, self.runtime.active_id or "nothing")
        if self.on_status:
            self.on_status(False)
        return f"failed: {reason}"

    # ---- reporting and the loop ----------------------------------------------
    def health(self) -> dict[str, Any]:
        with self._lock:
            out = dict(self.status)
        out["active"] = self.runtime.active_id
        out["interval_s"] = self.options.interval_s
        return out

    def _write_status(self) -> None:
        tmp = self.state_dir / "follow.json.tmp"
        tmp.write_text(json.dumps(self.health(), indent=1))
        os.replace(tmp, self.state_dir / "follow.json")

    def next_delay(self) -> float:
        j = max(0.0, min(self.options.jitter, 1.0))
        return self.options.interval_s * random.uniform(1 - j, 1 + j)

    def start(self) -> Follower:
        def loop() -> None:
            self.poll_once()
            while not self._stop.wait(self.next_delay()):
                self.poll_once()

        self._thread = threading.Thread(target=loop, name="arc-follow", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

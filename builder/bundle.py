"""Packing compiled entries into one signed ``NAME-VERSION.arcb`` file (layout: docs/bundle-format.md).

The builder refuses anything the device would refuse (unsafe module, escaping path, odd
name) so a bad bundle fails here, loudly, rather than on a fleet of devices. The target
model is referenced by its artefact digest, never copied: devices fetch its blobs once
into their content-addressed store and share them between bundles. Files that many bundles
share (the routing table and tokenizer) go the same way: ``blob_files`` are written to a blob
directory beside the bundle, named by sha256, and only their hashes enter the signed manifest,
so a code-only update is a small file.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import tempfile
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import msgpack

from builder.keys import load_private_key, public_key_bytes
from edge_runtime.bundles.blob_store import artefact_digest, list_artefact_files
from edge_runtime.bundles.bundle import (
    BLOBS_DIR,
    FORMAT_VERSION,
    HEADER,
    MAGIC,
    MAX_MANIFEST_BYTES,
    MODULES_DIR,
    SUFFIX,
    UNSIGNED,
    check_payload_path,
    check_safe_id,
    key_id,
    module_path,
    signed_message,
)
from edge_runtime.entries.compiler import CompiledEntry
from edge_runtime.entries.metadata import entry_to_dict
from edge_runtime.entries.validator import validate_source
from edge_runtime.errors import BundleError, BundleFormatError, UnsafeCodeError
from edge_runtime.read.packs import ReadingPackError, load_pack


def builder_version() -> str:
    try:
        return importlib.metadata.version("arc-cache")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


def target_model_reference(artefact_dir: Path) -> dict[str, Any]:
    """What a bundle records about its target model: digest, manifest and file list, no bytes."""
    files = list_artefact_files(Path(artefact_dir))
    manifest = json.loads((Path(artefact_dir) / "manifest.json").read_text(encoding="utf-8"))
    return {"sha256": artefact_digest(files), "manifest": manifest, "files": files}


def pack_bundle(
    out_dir: Path,
    *,
    name: str,
    version: str,
    compiled: list[CompiledEntry],
    private_key_path: Path | None,
    extra_files: Mapping[str, bytes] | None = None,
    routing: Mapping[str, Any] | None = None,
    target_model_dir: Path | None = None,
    verification: Mapping[str, Mapping[str, Any]] | None = None,
    blob_files: Mapping[str, bytes] | None = None,
    blob_dir: Path | None = None,
    reading: Mapping[str, Any] | None = None,
    verification_policy: str | None = None,
) -> Path:
    """Write ``out_dir/NAME-VERSION.arcb`` and return its path.

    ``blob_files`` (path -> bytes) are kept out of line: written to ``blob_dir`` (default
    ``out_dir/blobs``) as ``<sha256>`` files and listed by hash in the manifest's ``blobs``;
    ``arc-edge push`` sends from there the ones a device lacks.

    ``verification``: entry id -> its verification record (builder.verification), attested in the
    signed manifest; an entry without one is listed as unverified.

    ``verification_policy``: what was packed, ``"verified-only"`` or ``"include-unverified"``
    (edge_runtime.bundles.bundle), attested in the manifest: a device serving a verified-only bundle
    misses a question outside an entry's verified scope instead of answering it as unverified. None
    leaves the field out (a device then treats the bundle as including unverified entries).

    ``reading``: the manifest's ``{pack, settings}`` (edge_runtime/read/packs), checked here as a device would;
    None leaves the field out (the device's default pack, en-word-problems/1).

    ``private_key_path=None`` (explicitly) writes an unsigned bundle with an all-zero signature,
    which devices load only with ``allow_unsigned=True``; it exists for development.
    """
    check_safe_id(name, "bundle name")
    check_safe_id(version, "bundle version")
    if not compiled:
        raise BundleError("a bundle needs at least one compiled entry")
    payload: dict[str, bytes] = {}
    entries: list[dict[str, Any]] = []
    for item in compiled:
        entry_id = check_safe_id(item.entry.id, "entry id")
        path = module_path(entry_id)
        if path in payload:
            raise BundleError(f"entry {entry_id!r} is compiled twice")
        try:
            validate_source(item.source, f"<bundle {name}>:{path}")
        except UnsafeCodeError as exc:
            raise BundleError(f"compiled module of entry {entry_id!r} fails the safety validator: {exc}") from exc
        payload[path] = item.source.encode("utf-8")
        record = dict((verification or {}).get(entry_id) or {"status": "unverified", "detail": "no verification record"})
        entries.append({**entry_to_dict(item.entry), "module": path, "module_sha256": item.sha256,
                        "verification": record})
    for path, content in (extra_files or {}).items():
        check_payload_path(path, "extra file")
        if path.startswith(MODULES_DIR):
            raise BundleFormatError(f"extra file {path!r}: {MODULES_DIR} is reserved for compiled entries")
        if not isinstance(content, bytes):
            raise BundleError(f"extra file {path!r} must be bytes, not {type(content).__name__}")
        payload[path] = content
    blobs = _write_blobs(blob_files or {}, payload, Path(blob_dir) if blob_dir is not None else Path(out_dir) / BLOBS_DIR)
    files, offset = [], 0
    for path, content in payload.items():
        files.append({"path": path, "size": len(content), "sha256": hashlib.sha256(content).hexdigest(), "offset": offset})
        offset += len(content)

    key = load_private_key(private_key_path) if private_key_path is not None else None
    public = public_key_bytes(key) if key is not None else None
    manifest = {
        "format_version": FORMAT_VERSION,
        "name": name,
        "version": version,
        "created_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "builder_version": builder_version(),
        "entries": entries,
        "files": files,
        "blobs": blobs,
        "routing": dict(routing or {}),
        "target_model": target_model_reference(target_model_dir) if target_model_dir is not None else None,
        "public_key": public.hex() if public is not None else None,
        "key_id": key_id(public) if public is not None else None,
    }
    if verification_policy is not None:
        manifest["verification_policy"] = verification_policy
    if reading is not None:
        try:
            manifest["reading"] = load_pack(reading).manifest()
        except ReadingPackError as exc:
            raise BundleError(f"bundle {name}-{version}: {exc}") from exc
    try:
        manifest_bytes = msgpack.packb(manifest, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise BundleError(f"manifest is not plain data (routing must be dicts, lists, str, numbers): {exc}") from exc
    if len(manifest_bytes) > MAX_MANIFEST_BYTES:
        raise BundleError(f"manifest is {len(manifest_bytes)} bytes, over the {MAX_MANIFEST_BYTES} devices accept")
    signature = key.sign(signed_message(manifest_bytes)) if key is not None else UNSIGNED
    header = HEADER.pack(MAGIC, FORMAT_VERSION, len(manifest_bytes))
    return _write_atomically(Path(out_dir) / f"{name}-{version}{SUFFIX}", [header, manifest_bytes, signature, *payload.values()])


def _write_blobs(blob_files: Mapping[str, bytes], inline: Mapping[str, bytes], blob_dir: Path) -> list[dict[str, Any]]:
    """Store each out-of-line file as ``blob_dir/<sha256>`` (kept when already there with those bytes);
    returns the manifest's ``blobs`` list."""
    listed = []
    for path, content in blob_files.items():
        check_payload_path(path, "blob file")
        if path.startswith(MODULES_DIR) or path in inline:
            raise BundleFormatError(f"blob file {path!r}: compiled modules and inline files cannot be out of line")
        if not isinstance(content, bytes):
            raise BundleError(f"blob file {path!r} must be bytes, not {type(content).__name__}")
        sha = hashlib.sha256(content).hexdigest()
        target = blob_dir / sha
        if not (target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == sha):
            _write_atomically(target, [content])
        listed.append({"path": path, "size": len(content), "sha256": sha})
    return listed


def _write_atomically(target: Path, chunks: list[bytes]) -> Path:
    """Temp file in the same directory, then rename: a reader never sees half a bundle."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return target

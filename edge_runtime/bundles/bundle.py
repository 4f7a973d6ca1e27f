"""Reading a signed ``.arcb`` bundle on the device (the layout is specified in docs/bundle-format.md).

A bundle arrives from the network, so every byte is hostile until proven otherwise. The
order of checks is the point of this module: bounds of the header, then the Ed25519
signature over the manifest bytes (nothing of the manifest is interpreted before it
verifies, except to word the error for an untrusted signer, or under ``allow_unsigned``),
then the manifest's structure and paths, then every payload file's hash against the
signed manifest, and last the safety validator on every compiled module. The builder
imports the constants and helpers below, so both sides share one definition of the format.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

import msgpack
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from edge_runtime.answer.verification import VerificationStatus
from edge_runtime.bundles.blob_store import artefact_digest
from edge_runtime.entries.metadata import EntryPoint, entry_from_dict
from edge_runtime.entries.source_analysis import numbers_written, params_run_reads
from edge_runtime.entries.validator import validate_source
from edge_runtime.errors import (
    ArcError,
    BundleError,
    BundleFormatError,
    IntegrityError,
    SignatureError,
    UnsafeCodeError,
)

MAGIC = b"ARCB"
#: What the builder writes. Version 2 stores shared routing data (the embedding table, the tokenizer)
#: out of line as content-addressed blobs listed in ``manifest.blobs``; version 1 inlined them.
FORMAT_VERSION = 2
#: What a device reads: old bundles already on devices keep working.
READABLE_VERSIONS = (1, 2)
HEADER = struct.Struct(">4sHI")  # magic, format version (u16), manifest length (u32), all big-endian
SIGNATURE_SIZE = 64
UNSIGNED = bytes(SIGNATURE_SIZE)
MAX_MANIFEST_BYTES = 16 << 20
DEFAULT_MAX_BUNDLE_BYTES = 256 << 20
MAX_PATH_CHARS = 255
MODULES_DIR = "modules/"
#: The directory beside a bundle where the builder writes its out-of-line files, one ``<sha256>`` file each.
BLOBS_DIR = "blobs"
SUFFIX = ".arcb"

_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Bundle:
    """A bundle whose signature, hashes and modules have all been checked."""

    name: str
    version: str
    manifest: dict[str, Any]
    entries: dict[str, EntryPoint]
    modules: dict[str, str]
    files: dict[str, bytes]
    routing: dict[str, Any]
    target_model: dict[str, Any] | None
    key_id: str | None
    signed: bool
    digest: str
    #: entry id -> what the builder attests: an independent solution agreed with the entry, or not.
    verification: dict[str, VerificationStatus] = field(default_factory=dict)
    #: entry id -> the parameters a verified entry was verified with at their original values only (its
    #: record's ``fixed``); entries verified for every value, and unverified ones, are absent.
    verified_scope: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: The packing policy the manifest attests (``verification_policy``): True when the builder packed only
    #: verified entries, so an answer outside a verified scope is a miss rather than an unverified hit.
    verified_only: bool = False
    #: path -> {"sha256", "size"}: files of the bundle kept out of line in the device's blob store
    #: (format 2). Their hashes are in the signed manifest; ``edge_runtime.bundles.bundle_blobs`` fetches and checks them.
    blobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the manifest's ``reading`` ({pack, settings}: the reading pack IS2 reads questions with), checked
    #: against the packs this runtime knows; None when the manifest names none (the default pack).
    reading: dict[str, Any] | None = None


def key_id(public_key: bytes) -> str:
    """Short name of a raw Ed25519 public key: the first 16 hex digits of its sha256."""
    return hashlib.sha256(public_key).hexdigest()[:16]


def signed_message(manifest_bytes: bytes, version: int = FORMAT_VERSION) -> bytes:
    """What the signature covers: magic, format version and the manifest bytes (which list every file's hash)."""
    return MAGIC + struct.pack(">H", version) + manifest_bytes


def module_path(entry_id: str) -> str:
    return f"{MODULES_DIR}{entry_id}.py"


def check_safe_id(value: Any, what: str) -> str:
    """Names, versions and entry ids become file names, so only [A-Za-z0-9._-] (not leading dot) pass."""
    if not isinstance(value, str) or not _SAFE_ID.fullmatch(value) or ".." in value:
        raise BundleFormatError(f"{what} {value!r} must be 1-128 characters of [A-Za-z0-9._-], not starting with . or -")
    return value


def check_payload_path(path: Any, where: str = "bundle") -> str:
    """A payload path must be relative, '/'-separated, without '.', '..' or empty parts: it may not escape."""
    if not isinstance(path, str) or not path or len(path) > MAX_PATH_CHARS:
        raise BundleFormatError(f"{where}: file path {path!r} is empty, not a string or too long")
    parts = path.split("/")
    if (
        PurePosixPath(path).is_absolute()
        or "\\" in path
        or "\0" in path
        or ":" in parts[0]
        or any(part in ("", ".", "..") for part in parts)
    ):
        raise BundleFormatError(f"{where}: file path {path!r} escapes the bundle or is not normalised")
    return path


def read_bundle(
    path_or_bytes: str | os.PathLike[str] | bytes | bytearray | memoryview,
    *,
    trusted_keys: list[bytes] | None,
    allow_unsigned: bool = False,
    max_bytes: int = DEFAULT_MAX_BUNDLE_BYTES,
) -> Bundle:
    """Parse and verify a bundle; every refusal is a BundleError subclass saying what and where.

    ``trusted_keys`` are raw 32-byte Ed25519 public keys. ``allow_unsigned=True`` is the explicit
    insecure mode: it accepts an all-zero signature and skips the trust check (the bundle is then
    ``signed=False``), but a non-zero signature that does not verify is still refused.
    """
    data, where = _load(path_or_bytes, max_bytes)
    manifest_bytes, signature, payload_start, version = _split(data, where)
    verified_by = _verify_signature(manifest_bytes, signature, trusted_keys or [], allow_unsigned, where, version)
    manifest = _decode_manifest(manifest_bytes, where)
    _check_manifest(manifest, where, version)
    signer: str | None = None
    if signature != UNSIGNED:
        if manifest["public_key"] is None:
            raise SignatureError(f"{where}: bundle carries a signature but its manifest names no public_key")
        declared = bytes.fromhex(manifest["public_key"])
        signer = key_id(declared)
        if verified_by is None:  # allow_unsigned: an untrusted signature must still be a valid one
            _verify_with(declared, signature, manifest_bytes, where, version)
        elif declared != verified_by:
            raise SignatureError(f"{where}: manifest names key {signer} but trusted key {key_id(verified_by)} signed it")
    files = _read_files(data, payload_start, manifest["files"], where)
    blobs = _check_blobs(manifest.get("blobs", []), files, where)
    entries, modules = _check_entries(manifest["entries"], files, where)
    verification = {e: VerificationStatus.from_record(item.get("verification")) for e, item in
                    ((i.get("id"), i) for i in manifest["entries"]) if e in entries}
    verified_only = _check_policy(manifest.get("verification_policy"), verification, where)
    target = manifest.get("target_model")
    if target is not None:
        _check_target_model(target, where)
    reading = _check_reading(manifest.get("reading"), where)
    return Bundle(
        name=manifest["name"],
        version=manifest["version"],
        manifest=manifest,
        entries=entries,
        modules=modules,
        files=files,
        routing=manifest["routing"],
        target_model=target,
        key_id=signer,
        verification=verification,
        verified_scope={e: scope for e, scope in
                        ((i["id"], _check_scope(i.get("verification"), entries[i["id"]], where)) for i in manifest["entries"])
                        if scope},
        verified_only=verified_only,
        signed=verified_by is not None,
        digest=hashlib.sha256(data).hexdigest(),
        blobs=blobs,
        reading=reading,
    )


#: The manifest's ``verification_policy`` values: what the builder packed (builder/bundle_build.py).
VERIFIED_ONLY, INCLUDE_UNVERIFIED = "verified-only", "include-unverified"


def _check_policy(policy: Any, verification: Mapping[str, VerificationStatus], where: str) -> bool:
    """Whether the manifest says only verified entries were packed; absent (a bundle from before the field) is
    False. A value other than the two policies, or a verified-only bundle that lists an unverified entry, is refused."""
    if policy is None:
        return False
    if policy not in (VERIFIED_ONLY, INCLUDE_UNVERIFIED):
        raise BundleFormatError(f"{where}: manifest 'verification_policy' {policy!r} is not {VERIFIED_ONLY!r} "
                                f"or {INCLUDE_UNVERIFIED!r}")
    if policy == VERIFIED_ONLY:
        unverified = sorted(e for e, status in verification.items() if status is not VerificationStatus.VERIFIED)
        if unverified:
            raise BundleFormatError(f"{where}: entry {unverified[0]!r} is unverified in a bundle whose "
                                    f"verification_policy is {VERIFIED_ONLY!r}")
    return policy == VERIFIED_ONLY


def _check_scope(record: Any, entry: EntryPoint, where: str) -> tuple[str, ...]:
    """A verification record's ``fixed``: the parameters of ``entry`` it was verified with at their original
    values only. Absent: () (verified for every value, or unverified, as before the field). Anything but a
    non-empty list of distinct parameter names of that entry, on a verified record, is refused naming the entry:
    a device that misread the scope would serve as verified what no independent solution checked."""
    if not isinstance(record, dict) or "fixed" not in record:
        return ()
    fixed = record["fixed"]
    names = {p.name for p in entry.params}
    if record.get("status") != VerificationStatus.VERIFIED.value:
        raise BundleFormatError(f"{where}: entry {entry.id!r}: verification 'fixed' on a record that is not verified")
    if not isinstance(fixed, list) or not fixed or len(fixed) > len(names):
        raise BundleFormatError(f"{where}: entry {entry.id!r}: verification 'fixed' must be a non-empty list of its "
                                f"parameter names, not {fixed!r:.80}")
    for name in fixed:
        if not isinstance(name, str) or name not in names:
            raise BundleFormatError(f"{where}: entry {entry.id!r}: verification 'fixed' names {name!r:.80}, which is "
                                    f"not one of its parameters ({', '.join(sorted(names))})")
    if len(set(fixed)) != len(fixed):
        raise BundleFormatError(f"{where}: entry {entry.id!r}: verification 'fixed' lists a parameter twice")
    return tuple(fixed)


def _check_reading(reading: Any, where: str) -> dict[str, Any] | None:
    """The manifest's ``reading`` field, refused (naming the packs this runtime knows) when it names an unknown
    pack or settings the pack does not take: a bundle is never read with rules other than those it was built for."""
    if reading is None:
        return None
    from edge_runtime.read.packs import ReadingPackError, load_pack  # imports the named pack only

    try:
        return load_pack(reading).manifest()
    except ReadingPackError as exc:
        raise BundleFormatError(f"{where}: manifest 'reading': {exc}") from exc


def peek_blob_names(path: str | os.PathLike[str]) -> dict[str, str]:
    """sha256 -> file path of every blob a bundle file names (out-of-line files and target-model files),
    read without checking the signature: only for a client wording which blob a device lacks, never to trust."""
    try:
        data = Path(path).read_bytes()
        manifest = _decode_manifest(_split(data, str(path))[0], str(path))
    except (OSError, BundleError):
        return {}
    names = {}
    for item in manifest.get("blobs") or []:
        if isinstance(item, dict):
            names[str(item.get("sha256"))] = str(item.get("path"))
    for item in (manifest.get("target_model") or {}).get("files") or []:
        if isinstance(item, dict):
            names.setdefault(str(item.get("sha256")), f"target model {item.get('path')}")
    return names


def _load(source: Any, max_bytes: int) -> tuple[bytes, str]:
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        where = "the pushed bundle"
    else:
        path = Path(source)
        where = str(path)
        try:
            size = path.stat().st_size
            if size > max_bytes:
                raise BundleFormatError(f"{where}: {size} bytes exceeds the limit of {max_bytes}")
            data = path.read_bytes()
        except OSError as exc:
            raise BundleFormatError(f"{where}: cannot read: {exc}") from exc
    if len(data) > max_bytes:
        raise BundleFormatError(f"{where}: {len(data)} bytes exceeds the limit of {max_bytes}")
    return data, where


def _split(data: bytes, where: str) -> tuple[bytes, bytes, int, int]:
    """Header bounds only: returns the manifest bytes, the signature, where the payload starts and the version."""
    if len(data) < HEADER.size:
        if not MAGIC.startswith(data[:4]):
            raise BundleFormatError(f"{where}: not a bundle (bad magic {data[:4]!r})")
        raise BundleFormatError(f"{where}: truncated header ({len(data)} of {HEADER.size} bytes)")
    magic, version, length = HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise BundleFormatError(f"{where}: not a bundle (bad magic {magic!r}, expected {MAGIC!r})")
    if version not in READABLE_VERSIONS:
        readable = " and ".join(str(v) for v in READABLE_VERSIONS)
        raise BundleFormatError(f"{where}: unsupported format version {version} (this runtime reads {readable})")
    if length > MAX_MANIFEST_BYTES:
        raise BundleFormatError(f"{where}: manifest length {length} exceeds the limit of {MAX_MANIFEST_BYTES}")
    payload_start = HEADER.size + length + SIGNATURE_SIZE
    if len(data) < payload_start:
        raise BundleFormatError(
            f"{where}: truncated: manifest ({length} bytes at offset {HEADER.size}) and signature need "
            f"{payload_start} bytes, the file has {len(data)}"
        )
    return data[HEADER.size : HEADER.size + length], data[HEADER.size + length : payload_start], payload_start, version


def _verify_signature(
    manifest_bytes: bytes, signature: bytes, trusted: list[bytes], allow_unsigned: bool, where: str, version: int
) -> bytes | None:
    """Returns the trusted key that verified the signature, or None when allow_unsigned let it pass."""
    for key in trusted:
        if not isinstance(key, bytes) or len(key) != 32:
            raise ValueError(f"trusted keys must be raw 32-byte Ed25519 public keys, got {key!r}")
    if signature == UNSIGNED:
        if allow_unsigned:
            return None
        raise SignatureError(f"{where}: bundle is unsigned (all-zero signature); sign it (arc-build bundle --key), "
                             "or for development only serve with --insecure-allow-unsigned")
    message = signed_message(manifest_bytes, version)
    for key in trusted:
        try:
            Ed25519PublicKey.from_public_bytes(key).verify(signature, message)
            return key
        except InvalidSignature:
            continue
    if allow_unsigned:
        return None  # checked against the manifest's own key once it is decoded
    # Only now look inside the manifest, to say whether the signer is unknown or the bytes were altered.
    declared = _declared_key(manifest_bytes)
    if declared is not None:
        try:
            Ed25519PublicKey.from_public_bytes(declared).verify(signature, message)
        except InvalidSignature:
            pass
        else:
            raise SignatureError(f"{where}: signed by untrusted key {key_id(declared)}")
    if not trusted:
        raise SignatureError(f"{where}: no trusted keys configured, so the signature cannot be accepted")
    raise SignatureError(f"{where}: signature does not verify with any trusted key (manifest altered or wrong key)")


def _declared_key(manifest_bytes: bytes) -> bytes | None:
    try:
        manifest = _decode_manifest(manifest_bytes, "")
        key = bytes.fromhex(manifest["public_key"])
        return key if len(key) == 32 else None
    except (ArcError, KeyError, TypeError, ValueError):
        return None


def _verify_with(key: bytes, signature: bytes, manifest_bytes: bytes, where: str, version: int) -> None:
    try:
        Ed25519PublicKey.from_public_bytes(key).verify(signature, signed_message(manifest_bytes, version))
    except (InvalidSignature, ValueError) as exc:
        raise SignatureError(f"{where}: signature does not verify with the manifest's key {key_id(key)}") from exc


def _refuse_ext(code: int, data: bytes) -> Any:
    raise BundleFormatError(f"msgpack extension type {code} is not allowed in a manifest")


def _decode_manifest(manifest_bytes: bytes, where: str) -> dict[str, Any]:
    try:
        manifest = msgpack.unpackb(
            manifest_bytes, raw=False, strict_map_key=True, ext_hook=_refuse_ext  # limits default to len(bytes)
        )
    except BundleFormatError as exc:
        raise BundleFormatError(f"{where}: malformed manifest: {exc}") from exc
    except Exception as exc:  # msgpack raises ExtraData, FormatError, StackError, ValueError, UnicodeDecodeError...
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise BundleFormatError(f"{where}: malformed manifest msgpack ({len(manifest_bytes)} bytes): {detail}") from exc
    if not isinstance(manifest, dict):
        raise BundleFormatError(f"{where}: manifest is a {type(manifest).__name__}, not a map")
    return manifest


_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "format_version": int,
    "name": str,
    "version": str,
    "created_at": str,
    "builder_version": str,
    "entries": list,
    "files": list,
    "routing": dict,
    "target_model": (dict, type(None)),
    "public_key": (str, type(None)),
    "key_id": (str, type(None)),
}


def _check_manifest(manifest: dict[str, Any], where: str, version: int) -> None:
    for key, kind in _REQUIRED.items():
        if key not in manifest:
            raise BundleFormatError(f"{where}: manifest has no {key!r}")
        if not isinstance(manifest[key], kind) or isinstance(manifest[key], bool):
            raise BundleFormatError(f"{where}: manifest {key!r} has the wrong type {type(manifest[key]).__name__}")
    if manifest["format_version"] != version:
        raise BundleFormatError(f"{where}: manifest format_version {manifest['format_version']} != header {version}")
    if version >= 2 and not isinstance(manifest.get("blobs"), list):
        raise BundleFormatError(f"{where}: a format {version} manifest needs 'blobs' (a list; may be empty)")
    if version < 2 and "blobs" in manifest:
        raise BundleFormatError(f"{where}: format 1 has no 'blobs'; out-of-line files need format 2")
    check_safe_id(manifest["name"], f"{where}: bundle name")
    check_safe_id(manifest["version"], f"{where}: bundle version")
    public = manifest["public_key"]
    if public is not None:
        if not re.fullmatch(r"[0-9a-f]{64}", public):
            raise BundleFormatError(f"{where}: public_key must be 64 lowercase hex digits")
        if manifest["key_id"] != key_id(bytes.fromhex(public)):
            raise BundleFormatError(f"{where}: key_id {manifest['key_id']!r} does not match public_key")


def _read_files(data: bytes, start: int, listed: list[Any], where: str) -> dict[str, bytes]:
    """Files must tile the payload exactly, in manifest order; each must match its signed hash."""
    files: dict[str, bytes] = {}
    expected_offset = 0
    payload_size = len(data) - start
    for index, item in enumerate(listed):
        if not isinstance(item, dict) or not {"path", "size", "sha256", "offset"} <= item.keys():
            raise BundleFormatError(f"{where}: files[{index}] must be a map with path, size, sha256 and offset")
        path = check_payload_path(item["path"], f"{where}: files[{index}]")
        size, offset, sha = item["size"], item["offset"], item["sha256"]
        if path in files:
            raise BundleFormatError(f"{where}: file {path!r} is listed twice")
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (size, offset)):
            raise BundleFormatError(f"{where}: file {path!r}: size and offset must be non-negative integers")
        if not isinstance(sha, str) or not _SHA256.fullmatch(sha):
            raise BundleFormatError(f"{where}: file {path!r}: sha256 must be 64 lowercase hex digits")
        if offset != expected_offset:
            raise BundleFormatError(f"{where}: file {path!r}: offset {offset}, expected {expected_offset} (files "
                                    "must be contiguous, in order)")
        if offset + size > payload_size:
            raise BundleFormatError(
                f"{where}: truncated: file {path!r} needs payload bytes {offset}..{offset + size}, the payload has {payload_size}"
            )
        content = data[start + offset : start + offset + size]
        actual = hashlib.sha256(content).hexdigest()
        if actual != sha:
            raise IntegrityError(f"{where}: file {path!r} has sha256 {actual}, the signed manifest lists {sha}")
        files[path] = content
        expected_offset = offset + size
    if expected_offset != payload_size:
        raise BundleFormatError(f"{where}: {payload_size - expected_offset} bytes after the last listed file")
    return files


def _check_blobs(listed: list[Any], files: Mapping[str, bytes], where: str) -> dict[str, dict[str, Any]]:
    """The out-of-line files: ``{path, size, sha256}`` each, safe unique paths that no inline file
    shares, never a compiled module (modules are what a code-only update changes, so they stay inline)."""
    blobs: dict[str, dict[str, Any]] = {}
    for index, item in enumerate(listed):
        if not isinstance(item, dict) or set(item) != {"path", "size", "sha256"}:
            raise BundleFormatError(f"{where}: blobs[{index}] must be a map of exactly path, size and sha256")
        path = check_payload_path(item["path"], f"{where}: blobs[{index}]")
        size, sha = item["size"], item["sha256"]
        if path in blobs or path in files:
            raise BundleFormatError(f"{where}: blob {path!r} is listed twice or also inline")
        if path.startswith(MODULES_DIR):
            raise BundleFormatError(f"{where}: blob {path!r}: compiled modules are never out of line")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise BundleFormatError(f"{where}: blob {path!r}: size must be a non-negative integer")
        if not isinstance(sha, str) or not _SHA256.fullmatch(sha):
            raise BundleFormatError(f"{where}: blob {path!r}: sha256 must be 64 lowercase hex digits")
        blobs[path] = {"sha256": sha, "size": size}
    return blobs


def _check_entries(
    listed: list[Any], files: Mapping[str, bytes], where: str
) -> tuple[dict[str, EntryPoint], dict[str, str]]:
    entries: dict[str, EntryPoint] = {}
    modules: dict[str, str] = {}
    for index, item in enumerate(listed):
        if not isinstance(item, dict):
            raise BundleFormatError(f"{where}: entries[{index}] is not a map")
        entry_id = check_safe_id(item.get("id"), f"{where}: entries[{index}] id")
        if entry_id in entries:
            raise BundleFormatError(f"{where}: entry {entry_id!r} is listed twice")
        path = item.get("module")
        if path != module_path(entry_id) or path not in files:
            raise BundleFormatError(f"{where}: entry {entry_id!r}: module {path!r} is not {module_path(entry_id)!r} "
                                    "in the payload")
        if item.get("module_sha256") != hashlib.sha256(files[path]).hexdigest():
            raise IntegrityError(f"{where}: entry {entry_id!r}: module_sha256 does not match {path!r}")
        try:
            source = files[path].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BundleFormatError(f"{where}: module {path!r} is not UTF-8: {exc}") from exc
        try:
            tree = validate_source(source, f"{where}:{path}")
        except UnsafeCodeError as exc:
            raise BundleError(f"{where}: module {path!r} of entry {entry_id!r} fails the safety validator: {exc}") from exc
        record = item.get("verification")
        if record is not None and not (isinstance(record, dict) and isinstance(record.get("status"), str)):
            raise BundleFormatError(f"{where}: entry {entry_id!r}: verification is not a record with a status")
        meta = {k: v for k, v in item.items() if k not in ("module", "module_sha256", "verification")}
        if _module_entry(tree) != meta:
            raise BundleFormatError(f"{where}: entry {entry_id!r}: manifest metadata differs from {path!r}'s ENTRY")
        try:
            entry = entry_from_dict(meta)
            read = params_run_reads(tree)
            if read is not None:
                entry = replace(entry, unread=frozenset(p.name for p in entry.params) - read)
            entry = replace(entry, numbers=numbers_written(tree))
            entries[entry_id] = entry
        except (ArcError, KeyError, TypeError, ValueError) as exc:
            raise BundleFormatError(f"{where}: entry {entry_id!r} metadata is invalid: {exc}") from exc
        modules[entry_id] = source
    strays = sorted(p for p in files if p.startswith(MODULES_DIR) and p not in {module_path(e) for e in entries})
    if strays:
        raise BundleFormatError(f"{where}: {strays[0]!r} is under {MODULES_DIR} but belongs to no entry")
    return entries, modules


def _module_entry(tree: ast.Module) -> Any:
    """The module's ``ENTRY = {...}`` literal, read without running anything."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["ENTRY"]:
            try:
                return ast.literal_eval(node.value)
            except ValueError:
                return None
    return None


def _check_target_model(target: dict[str, Any], where: str) -> None:
    files = target.get("files")
    if not isinstance(files, list) or not isinstance(target.get("sha256"), str) or not isinstance(target.get("manifest"), dict):
        raise BundleFormatError(f"{where}: target_model needs sha256, manifest and files")
    for index, item in enumerate(files):
        if not isinstance(item, dict) or not isinstance(item.get("size"), int) or not _SHA256.fullmatch(str(item.get("sha256"))):
            raise BundleFormatError(f"{where}: target_model files[{index}] needs path, size and sha256")
        check_payload_path(item.get("path"), f"{where}: target_model files[{index}]")
    if artefact_digest(files) != target["sha256"]:
        raise BundleFormatError(f"{where}: target_model sha256 does not match the digest of its files")

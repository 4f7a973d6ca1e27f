"""read_bundle: a real bundle of every example entry round-trips, and each kind of damage or attack
is refused with its precise exception class.

Hostile bundles are written byte by byte here (a "malicious builder" that skips pack_bundle's
checks but holds a trusted key), with the layout hard-coded from docs/bundle-format.md rather
than taken from edge_runtime.bundles.bundle, so the reader is also checked against the document.
"""

from __future__ import annotations

import ast
import hashlib
import re
import struct
from pathlib import Path
from typing import Any

import msgpack
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from builder.bundle import pack_bundle
from builder.keys import generate_keypair, load_private_key, load_public_key
from edge_runtime.bundles.bundle import read_bundle
from edge_runtime.entries.compiler import LoadedCompiledEntry, compile_entry
from edge_runtime.entries.metadata import entry_to_dict
from edge_runtime.entries.registry import Registry
from edge_runtime.entries.source_analysis import numbers_written
from edge_runtime.errors import BundleError, BundleFormatError, IntegrityError, SignatureError
from tests.edge_runtime.entries.test_compiler import IGNORES_C
from tests.fakes import ScriptedTargetLM

SIG = 64


def raw(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def write_raw_bundle(manifest: Any, payload: list[bytes], key: Ed25519PrivateKey | None, *,
                     manifest_bytes: bytes | None = None, version: int = 1) -> bytes:
    """The malicious builder: any manifest, any payload, correctly framed and signed (format 1 by default)."""
    body = manifest_bytes if manifest_bytes is not None else msgpack.packb(manifest, use_bin_type=True)
    signature = key.sign(b"ARCB" + struct.pack(">H", version) + body) if key is not None else bytes(SIG)
    return b"ARCB" + struct.pack(">HI", version, len(body)) + body + signature + b"".join(payload)


def honest_manifest(compiled: list, key: Ed25519PrivateKey, sources: dict[str, str] | None = None) -> tuple[dict, list[bytes]]:
    """A well-formed manifest and payload for ``compiled``, with optionally replaced module sources."""
    sources = sources or {}
    files, entries, payload, offset = [], [], [], 0
    for item in compiled:
        data = sources.get(item.entry.id, item.source).encode()
        path = f"modules/{item.entry.id}.py"
        files.append({"path": path, "size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "offset": offset})
        entries.append({**entry_to_dict(item.entry), "module": path, "module_sha256": hashlib.sha256(data).hexdigest()})
        payload.append(data)
        offset += len(data)
    public = raw(key)
    manifest = {
        "format_version": 1, "name": "evil", "version": "1", "created_at": "2025-01-01T00:00:00Z",
        "builder_version": "0", "entries": entries, "files": files, "routing": {}, "target_model": None,
        "public_key": public.hex(), "key_id": hashlib.sha256(public).hexdigest()[:16],
    }
    return manifest, payload


def add_file(manifest: dict, payload: list[bytes], path: str, data: bytes) -> None:
    offset = sum(len(p) for p in payload)
    manifest["files"].append({"path": path, "size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "offset": offset})
    payload.append(data)


@pytest.fixture(scope="module")
def compiled(example_registry):
    return [compile_entry(example_registry, entry_id) for entry_id in sorted(example_registry.entries)]


@pytest.fixture(scope="module")
def signer(tmp_path_factory):
    private_path, public_path = generate_keypair(tmp_path_factory.mktemp("keys"))
    return load_private_key(private_path), load_public_key(public_path), private_path


@pytest.fixture(scope="module")
def packed(compiled, signer, tmp_path_factory) -> Path:
    return pack_bundle(
        tmp_path_factory.mktemp("out"), name="examples", version="1.2.0", compiled=compiled,
        private_key_path=signer[2], extra_files={"routing/index.bin": b"\x00\x01hnsw"},
        routing={"embedder": "minilm-int8", "threshold": 0.62, "calibration": {"f1": [0.9, 0.95]}},
    )


@pytest.fixture(scope="module")
def data(packed) -> bytes:
    return packed.read_bytes()


def manifest_len(blob: bytes) -> int:
    return struct.unpack(">I", blob[6:10])[0]


def flip(blob: bytes, index: int) -> bytes:
    return blob[:index] + bytes([blob[index] ^ 0x01]) + blob[index + 1 :]


def file_span(blob: bytes, path: str) -> tuple[int, int]:
    n = manifest_len(blob)
    manifest = msgpack.unpackb(blob[10 : 10 + n])
    item = next(f for f in manifest["files"] if f["path"] == path)
    start = 10 + n + SIG + item["offset"]
    return start, start + item["size"]


# ---- the happy path ------------------------------------------------------------------------


def test_round_trip_from_path_and_bytes(packed, data, compiled, signer):
    for source in (packed, data, str(packed)):
        bundle = read_bundle(source, trusted_keys=[signer[1]])
        assert (bundle.name, bundle.version, bundle.signed) == ("examples", "1.2.0", True)
        assert bundle.key_id == hashlib.sha256(signer[1]).hexdigest()[:16]
        assert bundle.digest == hashlib.sha256(data).hexdigest()
        assert list(bundle.entries) == [c.entry.id for c in compiled]
        for item in compiled:
            assert entry_to_dict(bundle.entries[item.entry.id]) == entry_to_dict(item.entry)
            assert bundle.modules[item.entry.id] == item.source
            assert bundle.files[f"modules/{item.entry.id}.py"] == item.source.encode()
        assert bundle.files["routing/index.bin"] == b"\x00\x01hnsw"
        assert bundle.routing == {"embedder": "minilm-int8", "threshold": 0.62, "calibration": {"f1": [0.9, 0.95]}}
        assert bundle.target_model is None


def scripted_lm() -> ScriptedTargetLM:
    """Answers the recipe entry's literal prompt; classification picks deterministically."""
    return ScriptedTargetLM({"Literal:": "1.5"})


def test_every_module_runs_like_the_directly_compiled_one(data, compiled, signer):
    bundle = read_bundle(data, trusted_keys=[signer[1]])
    for item in compiled:
        values = item.entry.original_values
        direct = LoadedCompiledEntry(item.source, item.entry.id).run(values, target_lm=scripted_lm())
        loaded = LoadedCompiledEntry(bundle.modules[item.entry.id], item.entry.id).run(
            bundle.entries[item.entry.id].validate(values), target_lm=scripted_lm()
        )
        assert loaded.result == direct.result and loaded.result
        assert loaded.narration_text() == direct.narration_text()


def test_one_of_several_trusted_keys_suffices(data, signer):
    other = raw(Ed25519PrivateKey.generate())
    assert read_bundle(data, trusted_keys=[other, signer[1]]).signed


# ---- damaged files -------------------------------------------------------------------------


def test_truncated_files_are_format_errors(data):
    n = manifest_len(data)
    cuts = [0, 1, 3, 4, 6, 9, 10, 10 + n // 2, 10 + n, 10 + n + 1, 10 + n + SIG - 1, 10 + n + SIG + 1,
            (10 + n + SIG + len(data)) // 2, len(data) - 1]
    for cut in cuts:
        with pytest.raises(BundleFormatError) as info:
            read_bundle(data[:cut], trusted_keys=None, allow_unsigned=True)
        assert "truncated" in str(info.value), (cut, str(info.value))


def test_truncated_payload_is_a_format_error_even_when_signed(data, signer):
    with pytest.raises(BundleFormatError, match="truncated: file"):
        read_bundle(data[:-1], trusted_keys=[signer[1]])


def test_flipped_manifest_byte_breaks_the_signature(data, signer):
    n = manifest_len(data)
    for index in (10, 11, 10 + n // 3, 10 + n // 2, 10 + n - 1):
        with pytest.raises(SignatureError, match="does not verify"):
            read_bundle(flip(data, index), trusted_keys=[signer[1]])


def test_flipped_signature_byte_is_a_signature_error(data, signer):
    n = manifest_len(data)
    for index in (10 + n, 10 + n + 31, 10 + n + SIG - 1):
        with pytest.raises(SignatureError):
            read_bundle(flip(data, index), trusted_keys=[signer[1]])


def test_flipped_module_byte_is_an_integrity_error(data, compiled, signer):
    for item in compiled:
        path = f"modules/{item.entry.id}.py"
        start, end = file_span(data, path)
        for index in (start, (start + end) // 2, end - 1):
            with pytest.raises(IntegrityError, match=path):
                read_bundle(flip(data, index), trusted_keys=[signer[1]])


def test_flipped_extra_file_byte_is_an_integrity_error(data, signer):
    start, _ = file_span(data, "routing/index.bin")
    with pytest.raises(IntegrityError, match="routing/index.bin"):
        read_bundle(flip(data, start), trusted_keys=[signer[1]])


def test_bad_magic_version_and_garbage_are_format_errors(data, signer):
    cases = {
        "bad magic": flip(data, 0),
        "unsupported format version": data[:4] + struct.pack(">H", 3) + data[6:],
        "manifest length": data[:6] + struct.pack(">I", (16 << 20) + 1) + data[10:],
        "garbage": b"PK\x03\x04" + bytes(range(256)) * 4,
        "empty": b"",
    }
    for _what, blob in cases.items():
        with pytest.raises(BundleFormatError):
            read_bundle(blob, trusted_keys=[signer[1]])
    with pytest.raises(BundleFormatError, match="bad magic"):
        read_bundle(b"#!/bin/sh\nrm -rf /\n", trusted_keys=[signer[1]])


def test_trailing_bytes_are_refused(data, signer):
    with pytest.raises(BundleFormatError, match="after the last listed file"):
        read_bundle(data + b"\x00", trusted_keys=[signer[1]])


def test_size_limit(packed, data, signer):
    for source in (packed, data):
        with pytest.raises(BundleFormatError, match="exceeds the limit"):
            read_bundle(source, trusted_keys=[signer[1]], max_bytes=len(data) - 1)


def test_missing_file_is_a_format_error(tmp_path, signer):
    with pytest.raises(BundleFormatError, match="cannot read"):
        read_bundle(tmp_path / "nope.arcb", trusted_keys=[signer[1]])


# ---- signatures and trust ------------------------------------------------------------------


def test_wrong_key_is_untrusted(data, signer):
    stranger = raw(Ed25519PrivateKey.generate())
    with pytest.raises(SignatureError, match=f"untrusted key {hashlib.sha256(signer[1]).hexdigest()[:16]}"):
        read_bundle(data, trusted_keys=[stranger])
    with pytest.raises(SignatureError, match="untrusted key"):
        read_bundle(data, trusted_keys=None)


def test_trusted_keys_must_be_raw_32_bytes(data, signer):
    with pytest.raises(ValueError):
        read_bundle(data, trusted_keys=[signer[1].hex().encode()])


def test_unsigned_bundle_needs_the_explicit_flag(compiled, signer, tmp_path):
    path = pack_bundle(tmp_path, name="dev", version="0", compiled=compiled[:1], private_key_path=None)
    with pytest.raises(SignatureError, match="unsigned"):
        read_bundle(path, trusted_keys=[signer[1]])
    bundle = read_bundle(path, trusted_keys=None, allow_unsigned=True)
    assert (bundle.signed, bundle.key_id) == (False, None)
    assert bundle.modules[compiled[0].entry.id] == compiled[0].source


def test_stripped_signature_is_unsigned(data, signer):
    n = manifest_len(data)
    stripped = data[: 10 + n] + bytes(SIG) + data[10 + n + SIG :]
    with pytest.raises(SignatureError, match="unsigned"):
        read_bundle(stripped, trusted_keys=[signer[1]])
    assert read_bundle(stripped, trusted_keys=[signer[1]], allow_unsigned=True).signed is False


def test_allow_unsigned_accepts_an_untrusted_but_valid_signature_as_unsigned(data, signer):
    bundle = read_bundle(data, trusted_keys=None, allow_unsigned=True)
    assert bundle.signed is False and bundle.key_id == hashlib.sha256(signer[1]).hexdigest()[:16]
    assert read_bundle(data, trusted_keys=[signer[1]], allow_unsigned=True).signed is True


def test_allow_unsigned_still_refuses_a_broken_signature(data):
    n = manifest_len(data)
    with pytest.raises(SignatureError, match="does not verify"):
        read_bundle(flip(data, 10 + n + 5), trusted_keys=None, allow_unsigned=True)


def test_manifest_must_name_the_key_that_signed_it(compiled, signer):
    manifest, payload = honest_manifest(compiled[:1], signer[0])
    impostor = raw(Ed25519PrivateKey.generate())
    manifest["public_key"], manifest["key_id"] = impostor.hex(), hashlib.sha256(impostor).hexdigest()[:16]
    with pytest.raises(SignatureError, match="manifest names key"):
        read_bundle(write_raw_bundle(manifest, payload, signer[0]), trusted_keys=[signer[1]])


# ---- a malicious builder holding a trusted key ---------------------------------------------


def test_hand_written_honest_bundle_is_accepted(compiled, signer):
    """Guards the helpers below: without a planted fault, the raw writer's output is accepted."""
    manifest, payload = honest_manifest(compiled, signer[0])
    bundle = read_bundle(write_raw_bundle(manifest, payload, signer[0]), trusted_keys=[signer[1]])
    assert bundle.modules == {c.entry.id: c.source for c in compiled}


def test_the_reader_tells_unread_parameters_from_the_compiled_code(compiled, signer, embedder):
    """``EntryPoint.unread`` comes from the module's ``run``, never from the manifest: a parameter the root loads is
    read, one it never loads is not, and a ``run`` that could read any parameter leaves every one read."""
    registry = Registry(embedder)
    registry.add_source(IGNORES_C, "total.py")
    ignores = compile_entry(registry, "total")
    manifest, payload = honest_manifest([*compiled, ignores], signer[0])
    bundle = read_bundle(write_raw_bundle(manifest, payload, signer[0]), trusted_keys=[signer[1]])
    assert bundle.entries["total"].unread == {"c"}
    assert all(not bundle.entries[c.entry.id].unread for c in compiled)
    # the numbers the reasoning writes come from the code as well (what a month the template names is checked by)
    assert bundle.entries["total"].numbers == numbers_written(ast.parse(ignores.source))
    assert all(bundle.entries[c.entry.id].numbers == numbers_written(ast.parse(c.source)) for c in compiled)
    whole = re.sub(r"def run\(ctx, params\):\n(.|\n)*", "def run(ctx, params):\n    return describe_total(ctx, "
                   "dict(params))\n", ignores.source)
    manifest, payload = honest_manifest([ignores], signer[0], {"total": whole})
    assert read_bundle(write_raw_bundle(manifest, payload, signer[0]), trusted_keys=[signer[1]]).entries["total"].unread \
        == frozenset()


HOSTILE = {
    "import os": "import os\n",
    "dunder escape": "def steal(ctx, payload):\n    return ().__class__.__base__.__subclasses__()\n",
    "eval": "def steal(ctx, payload):\n    return eval('1')\n",
    "module-level code": "print('owned')\n",
}


@pytest.mark.parametrize("what", sorted(HOSTILE))
def test_hostile_module_is_refused_by_the_validator(compiled, signer, what):
    target = compiled[0]
    hostile = target.source + "\n\n" + HOSTILE[what]
    manifest, payload = honest_manifest(compiled, signer[0], {target.entry.id: hostile})
    with pytest.raises(BundleError) as info:
        read_bundle(write_raw_bundle(manifest, payload, signer[0]), trusted_keys=[signer[1]])
    assert type(info.value) is BundleError
    assert f"modules/{target.entry.id}.py" in str(info.value) and "safety validator" in str(info.value)


@pytest.mark.parametrize(
    "path", ["../evil", "routing/../../etc/passwd", "/etc/passwd", "a//b", "./a", "a/.", "C:/x", "a\\..\\b", "", "x\0y"]
)
def test_path_traversal_is_a_format_error(compiled, signer, path):
    manifest, payload = honest_manifest(compiled[:1], signer[0])
    add_file(manifest, payload, path, b"payload")
    with pytest.raises(BundleFormatError, match="file path"):
        read_bundle(write_raw_bundle(manifest, payload, signer[0]), trusted_keys=[signer[1]])


def test_target_model_path_traversal_is_a_format_error(compiled, signer):
    from edge_runtime.bundles.blob_store import artefact_digest

    manifest, payload = honest_manifest(compiled[:1], signer[0])
    files = [{"path": "../model.onnx", "size": 1, "sha256": "a" * 64}]
    manifest["target_model"] = {"sha256": artefact_digest(files), "manifest": {}, "files": files}
    with pytest.raises(BundleFormatError, match="escapes"):
        read_bundle(write_raw_bundle(manifest, payload, signer[0]), trusted_keys=[signer[1]])


def test_target_model_digest_must_match_its_files(compiled, signer):
    manifest, payload = honest_manifest(compiled[:1], signer[0])
    manifest["target_model"] = {"sha256": "b" * 64, "manifest": {}, "files": [{"path": "m", "size": 1, "sha256": "a" * 64}]}
    with pytest.raises(BundleFormatError, match="target_model sha256"):
        read_bundle(write_raw_bundle(manifest, payload, signer[0]), trusted_keys=[signer[1]])


def test_signed_malformed_manifests_are_format_errors(compiled, signer):
    good, payload = honest_manifest(compiled[:1], signer[0])
    bodies = {
        "not msgpack": b"\xc1\xc1\xc1",
        "extra data": msgpack.packb(good) + b"\x00",
        "not a map": msgpack.packb([1, 2, 3]),
        "extension type": msgpack.packb({**good, "routing": {"x": msgpack.ExtType(5, b"xx")}}),
        "missing key": msgpack.packb({k: v for k, v in good.items() if k != "files"}),
        "wrong type": msgpack.packb({**good, "files": "all of them"}),
        "bad name": msgpack.packb({**good, "name": "../../x"}),
        "bad key_id": msgpack.packb({**good, "key_id": "0" * 16}),
        "version mismatch": msgpack.packb({**good, "format_version": 2}),
    }
    for _what, body in bodies.items():
        with pytest.raises(BundleFormatError):
            read_bundle(write_raw_bundle(None, payload, signer[0], manifest_bytes=body), trusted_keys=[signer[1]])


def test_overlapping_or_gapped_offsets_are_format_errors(compiled, signer):
    for shift in (-1, 1):
        manifest, payload = honest_manifest(compiled[:2], signer[0])
        manifest["files"][1]["offset"] += shift
        with pytest.raises(BundleFormatError, match="offset"):
            read_bundle(write_raw_bundle(manifest, payload, signer[0]), trusted_keys=[signer[1]])


def test_oversized_file_entry_is_a_format_error(compiled, signer):
    manifest, payload = honest_manifest(compiled[:1], signer[0])
    manifest["files"][0]["size"] = 1 << 40
    with pytest.raises(BundleFormatError, match="truncated"):
        read_bundle(write_raw_bundle(manifest, payload, signer[0]), trusted_keys=[signer[1]])


def test_duplicate_paths_are_format_errors(compiled, signer):
    manifest, payload = honest_manifest(compiled[:1], signer[0])
    add_file(manifest, payload, "routing/a", b"1")
    add_file(manifest, payload, "routing/a", b"1")
    with pytest.raises(BundleFormatError, match="listed twice"):
        read_bundle(write_raw_bundle(manifest, payload, signer[0]), trusted_keys=[signer[1]])


def test_module_hash_in_entry_must_match(compiled, signer):
    manifest, payload = honest_manifest(compiled[:1], signer[0])
    manifest["entries"][0]["module_sha256"] = "0" * 64
    with pytest.raises(IntegrityError, match="module_sha256"):
        read_bundle(write_raw_bundle(manifest, payload, signer[0]), trusted_keys=[signer[1]])


def test_stray_module_is_refused(compiled, signer):
    manifest, payload = honest_manifest(compiled[:1], signer[0])
    add_file(manifest, payload, "modules/ghost.py", b"import os\n")
    with pytest.raises(BundleFormatError, match="belongs to no entry"):
        read_bundle(write_raw_bundle(manifest, payload, signer[0]), trusted_keys=[signer[1]])


def test_manifest_metadata_must_match_the_module(compiled, signer):
    """A signed manifest that widens a parameter's domain beyond what the module was compiled for."""
    manifest, payload = honest_manifest(compiled[:1], signer[0])
    manifest["entries"][0]["params"][0]["maximum"] = 10**12
    with pytest.raises(BundleFormatError, match="differs"):
        read_bundle(write_raw_bundle(manifest, payload, signer[0]), trusted_keys=[signer[1]])


def test_entry_module_path_must_be_its_own(compiled, signer):
    manifest, payload = honest_manifest(compiled[:2], signer[0])
    manifest["entries"][0]["module"] = manifest["entries"][1]["module"]
    with pytest.raises(BundleFormatError, match="module"):
        read_bundle(write_raw_bundle(manifest, payload, signer[0]), trusted_keys=[signer[1]])


BLOB = {"path": "routing/embedder/table.npy", "size": 3, "sha256": hashlib.sha256(b"abc").hexdigest()}


def test_format_2_lists_out_of_line_blobs_under_the_signature(compiled, signer):
    manifest, payload = honest_manifest(compiled[:1], signer[0])
    manifest.update(format_version=2, blobs=[BLOB])
    bundle = read_bundle(write_raw_bundle(manifest, payload, signer[0], version=2), trusted_keys=[signer[1]])
    assert bundle.blobs == {BLOB["path"]: {"sha256": BLOB["sha256"], "size": 3}} and BLOB["path"] not in bundle.files
    # A header claiming another format than the one signed breaks the signature.
    forged = bytearray(write_raw_bundle(manifest, payload, signer[0], version=2))
    forged[4:6] = struct.pack(">H", 1)
    with pytest.raises(SignatureError):
        read_bundle(bytes(forged), trusted_keys=[signer[1]])


@pytest.mark.parametrize("case,fragment", [
    ("format 2 without blobs", "needs 'blobs'"),
    ("format 1 with blobs", "format 1 has no 'blobs'"),
    ("a module out of line", "never out of line"),
    ("a blob also inline", "also inline"),
    ("a blob listed twice", "listed twice"),
    ("a bad hash", "64 lowercase hex"),
    ("an escaping path", "escapes"),
    ("an extra key", "exactly path, size and sha256"),
])
def test_malformed_blob_lists_are_refused(compiled, signer, case, fragment):
    manifest, payload = honest_manifest(compiled[:1], signer[0])
    module = manifest["files"][0]["path"]
    version, blobs = 2, [dict(BLOB)]
    if case == "format 2 without blobs":
        blobs = None
    elif case == "format 1 with blobs":
        version = 1
    elif case == "a module out of line":
        blobs[0]["path"] = "modules/other.py"
    elif case == "a blob also inline":
        blobs[0]["path"] = module
    elif case == "a blob listed twice":
        blobs.append(dict(BLOB))
    elif case == "a bad hash":
        blobs[0]["sha256"] = "A" * 64
    elif case == "an escaping path":
        blobs[0]["path"] = "../table.npy"
    else:
        blobs[0]["offset"] = 0
    manifest["format_version"] = version
    if blobs is not None:
        manifest["blobs"] = blobs
    with pytest.raises(BundleFormatError, match=re.escape(fragment)):
        read_bundle(write_raw_bundle(manifest, payload, signer[0], version=version), trusted_keys=[signer[1]])

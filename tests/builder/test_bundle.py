"""pack_bundle and the signing keys: what the builder writes, and what it refuses to write."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization

from builder.bundle import pack_bundle, target_model_reference
from builder.keys import (
    default_key_dir,
    ensure_default_key,
    generate_keypair,
    load_private_key,
    load_public_key,
)
from edge_runtime.bundles.blob_store import BlobStore, artefact_digest
from edge_runtime.bundles.bundle import read_bundle
from edge_runtime.entries.compiler import LoadedCompiledEntry, compile_entry
from edge_runtime.errors import BundleError, BundleFormatError, SigningKeyError
from tests.fakes import ScriptedTargetLM


@pytest.fixture(scope="module")
def compiled(example_registry):
    return [compile_entry(example_registry, entry_id) for entry_id in sorted(example_registry.entries)]


@pytest.fixture
def keys(tmp_path) -> tuple[Path, Path]:
    return generate_keypair(tmp_path / "keys")


@pytest.fixture
def artefact(tmp_path) -> Path:
    root = tmp_path / "artefact"
    root.mkdir()
    (root / "manifest.json").write_text(json.dumps({"artefact_version": 1, "architecture": "llama", "num_layers": 30}))
    (root / "model.onnx").write_bytes(b"MODEL-WEIGHTS-" * 64)
    (root / "lm_head.f16.npy").write_bytes(b"HEAD-WEIGHTS-" * 64)
    (root / "tokenizer.json").write_text("{}")
    (root / "chat_template.jinja").write_text("{{ x }}")
    return root


def pack(out: Path, compiled, private: Path | None, **kwargs) -> Path:
    return pack_bundle(out, name="examples", version="2.0.1", compiled=compiled, private_key_path=private, **kwargs)


# ---- keys -----------------------------------------------------------------------------------


def test_generate_keypair_writes_a_private_pem_0600_and_a_hex_public_key(tmp_path):
    private_path, public_path = generate_keypair(tmp_path / "k")
    assert stat.S_IMODE(private_path.stat().st_mode) == 0o600
    assert private_path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    key = load_private_key(private_path)
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert public_path.read_text().strip() == raw.hex()
    assert load_public_key(public_path) == raw
    pem = tmp_path / "pub.pem"
    pem.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    assert load_public_key(pem) == raw


def test_generate_keypair_never_overwrites_a_key(keys):
    before = keys[0].read_bytes()
    with pytest.raises(SigningKeyError, match="refusing to overwrite"):
        generate_keypair(keys[0].parent)
    assert keys[0].read_bytes() == before


def test_bad_key_files_are_signing_key_errors(tmp_path):
    from cryptography.hazmat.primitives.asymmetric import ec

    not_ed25519 = tmp_path / "ec.pem"
    not_ed25519.write_bytes(
        ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    garbage = tmp_path / "garbage"
    garbage.write_text("not a key")
    for path in (not_ed25519, garbage, tmp_path / "absent"):
        with pytest.raises(SigningKeyError):
            load_private_key(path)
    short = tmp_path / "short.pub"
    short.write_text("abcd")
    for path in (short, garbage):
        with pytest.raises(SigningKeyError):
            load_public_key(path)


def test_default_key_dir_and_ensure_default_key(tmp_path, monkeypatch):
    monkeypatch.delenv("ARC_KEY_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_key_dir() == tmp_path / "home" / ".config" / "arc" / "keys"
    monkeypatch.setenv("ARC_KEY_DIR", str(tmp_path / "override"))
    assert default_key_dir() == tmp_path / "override"
    private_path, created = ensure_default_key()
    assert created and private_path.parent == tmp_path / "override"
    assert ensure_default_key() == (private_path, False)
    load_private_key(private_path)


# ---- packing --------------------------------------------------------------------------------


def test_pack_writes_name_version_arcb_with_a_complete_manifest(compiled, keys, tmp_path):
    path = pack(tmp_path / "out", compiled, keys[0], extra_files={"routing/centroids.npy": b"\x01\x02"},
                routing={"embedder": "minilm", "threshold": 0.62})
    assert path == tmp_path / "out" / "examples-2.0.1.arcb"
    assert sorted(os.listdir(path.parent)) == ["examples-2.0.1.arcb"]  # no temp file left behind
    public = load_public_key(keys[1])
    bundle = read_bundle(path, trusted_keys=[public])
    manifest = bundle.manifest
    assert manifest["format_version"] == 2 and manifest["builder_version"] and manifest["blobs"] == []
    assert datetime.strptime(manifest["created_at"], "%Y-%m-%dT%H:%M:%SZ")
    assert manifest["public_key"] == public.hex()
    assert manifest["key_id"] == bundle.key_id == hashlib.sha256(public).hexdigest()[:16]
    assert [f["path"] for f in manifest["files"]] == [f"modules/{c.entry.id}.py" for c in compiled] + ["routing/centroids.npy"]
    assert [e["module_sha256"] for e in manifest["entries"]] == [c.sha256 for c in compiled]
    assert manifest["routing"] == bundle.routing == {"embedder": "minilm", "threshold": 0.62}
    assert bundle.files["routing/centroids.npy"] == b"\x01\x02"


def test_packed_modules_run_like_the_compiled_ones(compiled, keys, tmp_path):
    bundle = read_bundle(pack(tmp_path, compiled, keys[0]), trusted_keys=[load_public_key(keys[1])])
    assert set(bundle.modules) == {c.entry.id for c in compiled}
    for item in compiled:
        values = item.entry.original_values
        expected = LoadedCompiledEntry(item.source).run(values, target_lm=ScriptedTargetLM({"Literal:": "1.5"}))
        got = LoadedCompiledEntry(bundle.modules[item.entry.id]).run(
            bundle.entries[item.entry.id].validate(values), target_lm=ScriptedTargetLM({"Literal:": "1.5"})
        )
        assert got.result == expected.result


def test_target_model_is_referenced_never_copied(compiled, keys, artefact, tmp_path):
    path = pack(tmp_path / "out", compiled[:1], keys[0], target_model_dir=artefact)
    data = path.read_bytes()
    assert b"MODEL-WEIGHTS-" not in data and b"HEAD-WEIGHTS-" not in data
    target = read_bundle(path, trusted_keys=[load_public_key(keys[1])]).target_model
    assert target == target_model_reference(artefact)
    assert target["manifest"]["architecture"] == "llama"
    assert target["sha256"] == artefact_digest(target["files"])
    assert {f["path"] for f in target["files"]} == {
        "manifest.json", "model.onnx", "lm_head.f16.npy", "tokenizer.json", "chat_template.jinja"
    }
    # the device side: what a push must transfer, then the same digest after import
    store = BlobStore(tmp_path / "device")
    assert len(store.missing(target["files"])) == 5
    assert store.import_target_model(artefact) == target["sha256"]
    assert store.missing(target["files"]) == []
    directory = store.materialise_target_model(target["sha256"])
    assert (directory / "model.onnx").read_bytes() == (artefact / "model.onnx").read_bytes()


def test_unsigned_pack_is_explicit(compiled, tmp_path):
    path = pack(tmp_path, compiled[:1], None)
    bundle = read_bundle(path, trusted_keys=None, allow_unsigned=True)
    assert bundle.signed is False and bundle.manifest["public_key"] is None


def test_repacking_replaces_the_file_atomically(compiled, keys, tmp_path):
    first = pack(tmp_path / "out", compiled[:1], keys[0])
    second = pack(tmp_path / "out", compiled[:2], keys[0])
    assert first == second and os.listdir(tmp_path / "out") == ["examples-2.0.1.arcb"]
    assert len(read_bundle(second, trusted_keys=[load_public_key(keys[1])]).entries) == 2


@pytest.mark.parametrize("name, version", [
    ("../evil", "1"), ("a/b", "1"), ("", "1"), (".hidden", "1"), ("-x", "1"), ("ok", "1/2"), ("ok", ".."),
    ("ok", "1 0"), ("naïve", "1"), ("x" * 200, "1"),
])
def test_unsafe_name_or_version_is_refused(compiled, keys, tmp_path, name, version):
    with pytest.raises(BundleFormatError):
        pack_bundle(tmp_path, name=name, version=version, compiled=compiled[:1], private_key_path=keys[0])
    assert list(tmp_path.glob("*.arcb")) == []


@pytest.mark.parametrize("path", ["../x", "/etc/passwd", "a/../../b", "a//b", "./a", "a\\b", "", "modules/extra.py"])
def test_escaping_or_reserved_extra_paths_are_refused(compiled, keys, tmp_path, path):
    with pytest.raises(BundleFormatError):
        pack(tmp_path, compiled[:1], keys[0], extra_files={path: b"x"})


def test_unsafe_compiled_module_is_refused(compiled, keys, tmp_path):
    hostile = replace(compiled[0], source=compiled[0].source + "\nimport os\n")
    with pytest.raises(BundleError, match=f"{compiled[0].entry.id}.*safety validator"):
        pack(tmp_path, [hostile], keys[0])
    assert list(tmp_path.glob("*.arcb")) == []


def test_other_refusals(compiled, keys, tmp_path):
    with pytest.raises(BundleError, match="at least one"):
        pack(tmp_path, [], keys[0])
    with pytest.raises(BundleError, match="compiled twice"):
        pack(tmp_path, [compiled[0], compiled[0]], keys[0])
    with pytest.raises(BundleError, match="plain data"):
        pack(tmp_path, compiled[:1], keys[0], routing={"when": datetime.now()})
    with pytest.raises(BundleError, match="must be bytes"):
        pack(tmp_path, compiled[:1], keys[0], extra_files={"routing/a": "text"})
    with pytest.raises(SigningKeyError):
        pack(tmp_path, compiled[:1], tmp_path / "no-key.pem")
    assert list(tmp_path.glob("*.arcb")) == []


def test_blob_files_go_beside_the_bundle_by_hash_and_only_their_hashes_into_it(compiled, keys, tmp_path):
    table = b"TABLE" * 10_000
    path = pack(tmp_path / "out", compiled[:1], keys[0], blob_files={"routing/embedder/table.npy": table})
    digest = hashlib.sha256(table).hexdigest()
    assert (tmp_path / "out" / "blobs" / digest).read_bytes() == table
    assert path.stat().st_size < len(table)  # not inlined
    bundle = read_bundle(path, trusted_keys=[load_public_key(keys[1])])
    assert bundle.blobs == {"routing/embedder/table.npy": {"sha256": digest, "size": len(table)}}
    assert bundle.manifest["format_version"] == 2
    with pytest.raises(BundleFormatError, match="cannot be out of line"):
        pack(tmp_path / "bad", compiled[:1], keys[0], blob_files={f"modules/{compiled[0].entry.id}.py": b"x"})
    with pytest.raises(BundleError, match="must be bytes"):
        pack(tmp_path / "bad", compiled[:1], keys[0], blob_files={"routing/t": "text"})

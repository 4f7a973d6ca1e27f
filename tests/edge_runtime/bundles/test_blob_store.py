"""BlobStore: blobs named by their hash, written atomically, and target-model artefacts imported,
indexed and materialised from a small fake artefact directory (no real model needed)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from edge_runtime.bundles.blob_store import BlobStore, artefact_digest, list_artefact_files
from edge_runtime.errors import BlobStoreError


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def store(tmp_path) -> BlobStore:
    return BlobStore(tmp_path / "store")


@pytest.fixture
def artefact(tmp_path) -> Path:
    """A fake target-model artefact: the files LMEngine expects, with tiny contents."""
    root = tmp_path / "artefact"
    root.mkdir()
    (root / "manifest.json").write_text(json.dumps({"artefact_version": 1, "num_layers": 2, "recipe": "int8"}))
    (root / "model.onnx").write_bytes(b"\x08\x07onnx-graph" * 100)
    (root / "lm_head.f16.npy").write_bytes(b"\x93NUMPY" + bytes(range(256)))
    (root / "tokenizer.json").write_text('{"model": {"vocab": {}}}')
    (root / "chat_template.jinja").write_text("{{ messages }}")
    (root / "extra").mkdir()
    (root / "extra" / "notes.txt").write_text("{{ messages }}")  # same bytes as the template: one blob
    return root


def tmp_entries(store: BlobStore) -> list[str]:
    return os.listdir(store.root / "tmp")


def test_put_bytes_has_and_path(store):
    data = b"hello blob"
    assert not store.has(sha(data))
    digest = store.put_bytes(data)
    assert digest == sha(data)
    assert store.has(digest)
    assert store.path(digest).read_bytes() == data
    assert store.path(digest).name == digest
    assert not os.access(store.path(digest), os.W_OK) or os.geteuid() == 0  # stored read-only
    assert store.path(digest).stat().st_mode & 0o777 == 0o444
    assert store.put_bytes(data) == digest  # idempotent
    assert tmp_entries(store) == []


def test_put_file_hashes_the_bytes_it_stored(store, tmp_path):
    source = tmp_path / "big.bin"
    source.write_bytes(os.urandom(3 << 20))  # several read chunks
    digest = store.put_file(source)
    assert digest == sha(source.read_bytes())
    assert store.path(digest).read_bytes() == source.read_bytes()
    assert store.verify(digest)


def test_wrong_expected_hash_stores_nothing(store, tmp_path):
    with pytest.raises(BlobStoreError, match="does not match the expected"):
        store.put_bytes(b"evil", expected_sha256=sha(b"good"))
    assert not store.has(sha(b"evil")) and not store.has(sha(b"good"))
    source = tmp_path / "f"
    source.write_bytes(b"evil")
    with pytest.raises(BlobStoreError):
        store.put_file(source, expected_sha256=sha(b"good"))
    assert not store.has(sha(b"evil"))
    assert tmp_entries(store) == []
    assert store.put_bytes(b"good", expected_sha256=sha(b"good")) == sha(b"good")


def test_a_failed_write_leaves_no_blob_and_no_temp_file(store, tmp_path, monkeypatch):
    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        store.put_bytes(b"half written")
    monkeypatch.undo()
    assert not store.has(sha(b"half written"))
    assert tmp_entries(store) == []
    with pytest.raises(OSError):
        store.put_file(tmp_path / "does-not-exist")
    assert tmp_entries(store) == []


def test_hashes_are_checked_before_they_become_paths(store):
    for bad in ("../../etc/passwd", "A" * 64, "0" * 63, "", "g" * 64):
        with pytest.raises(BlobStoreError, match="not a sha256"):
            store.path(bad)
        with pytest.raises(BlobStoreError):
            store.has(bad)
    with pytest.raises(BlobStoreError):
        store.put_bytes(b"x", expected_sha256="../x")


def test_verify_notices_a_rotten_blob(store):
    digest = store.put_bytes(b"pristine")
    os.chmod(store.path(digest), 0o644)
    store.path(digest).write_bytes(b"rotten")
    assert not store.verify(digest)
    assert not store.verify(sha(b"never stored"))


def test_missing_lists_each_absent_hash_once(store):
    present = store.put_bytes(b"a")
    absent = [sha(b"b"), sha(b"c")]
    files = [{"sha256": present}, {"sha256": absent[0]}, {"sha256": absent[1]}, {"sha256": absent[0]}]
    assert store.missing(files) == absent
    assert store.missing([present, absent[1]]) == [absent[1]]
    assert store.missing([]) == []


def test_artefact_digest_is_order_free_and_covers_path_size_and_hash():
    files = [{"path": "model.onnx", "size": 3, "sha256": "a" * 64}, {"path": "manifest.json", "size": 2, "sha256": "b" * 64}]
    digest = artefact_digest(files)
    assert digest == artefact_digest(list(reversed(files)))
    assert len(digest) == 64
    for change in ({"path": "model2.onnx"}, {"size": 4}, {"sha256": "c" * 64}):
        assert artefact_digest([{**files[0], **change}, files[1]]) != digest


def test_import_and_materialise_a_target_model(store, artefact):
    listed = list_artefact_files(artefact)
    assert [f["path"] for f in listed] == [
        "chat_template.jinja", "extra/notes.txt", "lm_head.f16.npy", "manifest.json", "model.onnx", "tokenizer.json"
    ]
    assert store.missing(listed) == list(dict.fromkeys(f["sha256"] for f in listed))
    digest = store.import_target_model(artefact)
    assert digest == artefact_digest(listed)
    assert store.missing(listed) == []
    index = store.target_model_index(digest)
    assert index["manifest"]["num_layers"] == 2 and index["files"] == listed

    directory = store.materialise_target_model(digest)
    for item in listed:
        materialised = directory / item["path"]
        assert materialised.read_bytes() == (artefact / item["path"]).read_bytes()
        blob = store.path(item["sha256"])
        assert os.path.samefile(materialised, blob)  # a link into the store, not a copy
    assert json.loads((directory / "manifest.json").read_text())["recipe"] == "int8"
    assert store.materialise_target_model(digest) == directory  # second call reuses it
    assert tmp_entries(store) == []


def test_materialise_rebuilds_an_incomplete_directory(store, artefact):
    digest = store.import_target_model(artefact)
    directory = store.materialise_target_model(digest)
    (directory / "model.onnx").unlink()
    assert (store.materialise_target_model(digest) / "model.onnx").read_bytes() == (artefact / "model.onnx").read_bytes()


def test_materialise_refuses_unknown_or_incomplete_models(store, artefact):
    with pytest.raises(BlobStoreError, match="not in the store"):
        store.materialise_target_model("f" * 64)
    digest = store.import_target_model(artefact)
    blob = store.path(sha((artefact / "model.onnx").read_bytes()))
    blob.unlink()
    with pytest.raises(BlobStoreError, match="missing"):
        store.materialise_target_model(digest)


def test_register_requires_every_blob(store, artefact):
    """A push registers the artefact only after transferring what missing() named."""
    listed = list_artefact_files(artefact)
    manifest = json.loads((artefact / "manifest.json").read_text())
    with pytest.raises(BlobStoreError, match="missing"):
        store.register_target_model(listed, manifest)
    for sha256 in store.missing(listed):
        path = next(artefact / f["path"] for f in listed if f["sha256"] == sha256)
        store.put_bytes(path.read_bytes(), expected_sha256=sha256)
    digest = store.register_target_model(listed, manifest)
    assert digest == artefact_digest(listed)
    assert (store.materialise_target_model(digest) / "tokenizer.json").exists()


def test_register_refuses_escaping_paths(store):
    digest = store.put_bytes(b"x")
    with pytest.raises(BlobStoreError, match="plain relative path"):
        store.register_target_model([{"path": "../outside", "size": 1, "sha256": digest}], {})


def test_a_directory_without_manifest_is_not_an_artefact(store, tmp_path):
    with pytest.raises(BlobStoreError, match="no manifest.json"):
        store.import_target_model(tmp_path)


def test_prune_removes_unnamed_blobs_with_their_artefact_and_keeps_named_and_recent_ones(store, artefact):
    digest = store.import_target_model(artefact)
    directory = store.materialise_target_model(digest)
    kept = store.put_bytes(b"named by a held bundle")
    listed = [f["sha256"] for f in list_artefact_files(artefact)]
    assert store.prune({kept}) == []  # everything was written just now: a push may still be under way
    removed = store.prune({kept}, older_than_s=-1)
    assert sorted(removed) == sorted(set(listed)) and store.has(kept)
    assert not directory.exists()  # its hard links would hold the bytes on disk
    with pytest.raises(BlobStoreError, match="not in the store"):
        store.target_model_index(digest)
    store.import_target_model(artefact)
    assert store.prune({kept, *listed}, older_than_s=-1) == [] and store.missing(listed) == []

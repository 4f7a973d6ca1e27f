"""Routing table and tokenizer as content-addressed blobs (issue 25, item 3), over the real gRPC server.

A code-only update must move only the small bundle file; a blob with wrong bytes, or none, must be
refused with an error naming the blob and how to push it, while the active bundle keeps serving.
Format-1 bundles (routing inline) already on devices keep working; a restart prunes blobs no held
bundle names. The server logs every push, activation and rollback (item 7).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import time
from pathlib import Path

import grpc
import msgpack
import pytest
from edge_server_fixtures import EXAMPLES, example_bundle, make_keys, random_static_embedder

from builder.keys import load_private_key
from edge_runtime.bundles.bundle import HEADER, MAGIC, read_bundle, signed_message
from edge_runtime.proto import edge_pb2 as pb
from edge_runtime.route.bundle_routing import EMBEDDER_TABLE, EMBEDDER_TOKENIZER
from edge_runtime.serving.client import EdgeClient
from edge_runtime.serving.runtime import RuntimeOptions
from edge_runtime.serving.server import create_server

QUESTION = "What will $2000 grow to in 5 years at 4% per year, compounded quarterly?"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """v1 (the examples), v2 = v1 without one entry, v3 = v2 with one entry's code changed."""
    root = tmp_path_factory.mktemp("blob-bundles")
    key, public = make_keys(root / "keys")
    embedder = random_static_embedder(root / "embedder")
    fewer = root / "fewer"
    shutil.copytree(EXAMPLES, fewer, ignore=shutil.ignore_patterns("__pycache__"))
    (fewer / "school_trip.py").unlink()
    changed = root / "changed"
    shutil.copytree(fewer, changed)
    source = (changed / "charles_law.py").read_text(encoding="utf-8")
    (changed / "charles_law.py").write_text(source.replace('narrate(ctx, f"', 'narrate(ctx, f"Charles: ', 1), encoding="utf-8")
    out = root / "out"
    return {
        "key": key, "public": public, "out": out,
        "v1": example_bundle(out, key, embedder, "1"),
        "v2": example_bundle(out, key, embedder, "2", sources=fewer),
        "v3": example_bundle(out, key, embedder, "3", sources=changed),
    }


@pytest.fixture
def server(tmp_path, built):
    options = RuntimeOptions(data_dir=tmp_path / "device", trusted_keys=[built["public"]], use_worker_pool=False)
    edge = create_server(options, address="127.0.0.1:0")
    yield edge
    edge.stop(0)


def admin(edge) -> EdgeClient:
    return EdgeClient(f"127.0.0.1:{edge.port}", admin_socket=edge.admin_socket, timeout_s=60)


def serve(client: EdgeClient, path: Path, **kwargs) -> str:
    pushed = client.push(path, **kwargs)
    assert not pushed.still_missing
    return client.activate(pushed.staged.bundle_id).active


def blob_of(bundle_path: Path, public: bytes, path: str) -> str:
    return read_bundle(bundle_path, trusted_keys=[public]).blobs[path]["sha256"]


def test_the_builder_writes_the_routing_table_and_tokenizer_as_signed_blobs(built):
    bundle = read_bundle(built["v1"], trusted_keys=[built["public"]])
    assert set(bundle.blobs) == {EMBEDDER_TABLE, EMBEDDER_TOKENIZER}
    assert not set(bundle.blobs) & set(bundle.files)  # not inlined
    for path, ref in bundle.blobs.items():
        data = (built["out"] / "blobs" / ref["sha256"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == ref["sha256"] and len(data) == ref["size"], path
    # The same embedder gives the same blobs: v2 references what v1 already brought.
    assert read_bundle(built["v2"], trusted_keys=[built["public"]]).blobs == bundle.blobs
    assert built["v1"].stat().st_size < 200_000


def test_code_only_update_moves_under_a_megabyte_and_the_device_serves_it(server, built):
    with admin(server) as client:
        counter = client.count_admin_traffic()
        assert serve(client, built["v1"]) == "examples-1"
        first = counter.total
        assert first > 2_500_000  # the routing table (30522 x 32 float16) and tokenizer went once
        for version in ("2", "3"):
            before = counter.total
            pushed = client.push(built[f"v{version}"])
            assert pushed.blobs_sent == [] and not pushed.still_missing
            client.activate(pushed.staged.bundle_id)
            moved = counter.total - before
            assert moved < 1_000_000, moved
            assert moved < built[f"v{version}"].stat().st_size + 10_000  # the bundle file and a few messages
            assert client.invoke(QUESTION).bundle_version == version
        entries = {e.id for e in client.list_entries().entries}
        assert "school-trip-cost" not in entries and len(entries) >= 4
        assert "Charles: " in client.describe("charles-law-volume").module_source
    staged = sorted(p.stat().st_size for p in (server.runtime.bundles_dir).glob("*.arcb"))
    assert len(staged) == 3 and sum(staged) < 1_000_000  # three staged bundles, one copy of the table


def test_a_blob_with_wrong_bytes_for_its_hash_is_refused_and_the_device_keeps_serving(server, built):
    table = blob_of(built["v1"], built["public"], EMBEDDER_TABLE)
    with admin(server) as client:
        serve(client, built["v1"])
        forged = b"\x00" * 1000
        with pytest.raises(grpc.RpcError) as info:
            client.admin_stub.PushBlob(iter([pb.BlobChunk(sha256="a" * 64, size=len(forged), data=forged)]), timeout=10)
        assert info.value.code() == grpc.StatusCode.DATA_LOSS
        assert f"expected {'a' * 64}" in info.value.details()
        # Bytes rotted or rewritten on the device's disk: activation hashes them again and refuses.
        tokenizer = blob_of(built["v1"], built["public"], EMBEDDER_TOKENIZER)
        stored = server.runtime.blobs.path(tokenizer)
        stored.chmod(0o644)
        stored.write_bytes(stored.read_bytes().replace(b"[CLS]", b"[XLS]"))
        client.push(built["v2"])
        with pytest.raises(grpc.RpcError) as info:
            client.activate("examples-2")
        assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        details = info.value.details()
        assert tokenizer in details and EMBEDDER_TOKENIZER in details and "not to its signed hash" in details
        assert "arc-edge push" in details
        assert client.invoke(QUESTION).bundle_version == "1"  # still serving
        assert not stored.exists()  # removed, so that the next push sends it again
        assert table != tokenizer and server.runtime.blobs.has(table)
        pushed = client.push(built["v2"])
        assert pushed.blobs_sent == [tokenizer]
        client.activate("examples-2")
        assert client.invoke(QUESTION).bundle_version == "2"


def test_a_missing_blob_is_named_with_how_to_push_it(server, built, tmp_path):
    table = blob_of(built["v1"], built["public"], EMBEDDER_TABLE)
    with admin(server) as client:
        empty = tmp_path / "no-blobs"
        empty.mkdir()
        pushed = client.push(built["v1"], blob_dir=empty)
        assert table in pushed.still_missing and set(pushed.still_missing) == set(pushed.staged.missing_blobs)
        with pytest.raises(grpc.RpcError) as info:
            client.activate("examples-1")
        assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        details = info.value.details()
        assert "needs blob" in details and "does not hold" in details and "arc-edge push" in details
        assert any(sha in details for sha in pushed.still_missing)
        # Providing the blob directory fixes it.
        assert sorted(client.push(built["v1"]).blobs_sent) == sorted(pushed.still_missing)
        assert serve(client, built["v1"]) == "examples-1"


def test_an_old_format_1_bundle_with_inline_routing_still_serves(server, built, tmp_path):
    old = format_1_copy(built["v1"], built["out"] / "blobs", built["key"], tmp_path / "old" / "examples-1.arcb")
    bundle = read_bundle(old, trusted_keys=[built["public"]])
    assert bundle.blobs == {} and EMBEDDER_TABLE in bundle.files
    with admin(server) as client:
        assert serve(client, old, blob_dir=tmp_path / "nothing") == "examples-1"
        assert client.invoke(QUESTION).bundle_version == "1"
        assert not list((server.runtime.blobs.root / "blobs").glob("*/*"))  # nothing out of line was needed
        assert serve(client, built["v2"]) == "examples-2"  # and a format-2 update follows it


def test_push_activate_and_rollback_are_logged_with_the_bundle(server, built, caplog):
    with caplog.at_level(logging.INFO, logger="arc.edge"), admin(server) as client:
        serve(client, built["v1"])
        serve(client, built["v2"])
        client.rollback()
    lines = [r.getMessage() for r in caplog.records if r.name == "arc.edge"]
    pushed = [line for line in lines if line.startswith("pushed bundle examples-")]
    assert len(pushed) == 2 and "version 2" in pushed[1] and "name examples" in pushed[1]
    assert any(line.startswith("pushed blob ") for line in lines)
    assert any(line.startswith("activated bundle examples-2") and "version 2" in line for line in lines)
    assert any(line.startswith("rolled back to bundle examples-1") and "from examples-2" in line for line in lines)


def format_1_copy(bundle_path: Path, blob_dir: Path, key: Path, out: Path) -> Path:
    """The bundle as a format-1 builder wrote it: routing table and tokenizer inline, no ``blobs``."""
    data = bundle_path.read_bytes()
    _, _, length = HEADER.unpack_from(data, 0)
    manifest = msgpack.unpackb(data[HEADER.size:HEADER.size + length], raw=False)
    payload_start = HEADER.size + length + 64
    contents = [data[payload_start + f["offset"]:payload_start + f["offset"] + f["size"]] for f in manifest["files"]]
    for item in manifest.pop("blobs"):
        contents.append((blob_dir / item["sha256"]).read_bytes())
        manifest["files"].append({"path": item["path"], "size": item["size"], "sha256": item["sha256"], "offset": 0})
    offset = 0
    for item, content in zip(manifest["files"], contents):
        item["offset"] = offset
        offset += len(content)
    manifest["format_version"] = 1
    manifest_bytes = msgpack.packb(manifest, use_bin_type=True)
    signature = load_private_key(key).sign(signed_message(manifest_bytes, 1))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(HEADER.pack(MAGIC, 1, len(manifest_bytes)) + manifest_bytes + signature + b"".join(contents))
    return out


def test_a_restart_prunes_blobs_no_held_bundle_names_and_keeps_serving(tmp_path, built):
    options = RuntimeOptions(data_dir=tmp_path / "device", trusted_keys=[built["public"]], use_worker_pool=False)
    edge = create_server(options, address="127.0.0.1:0")
    try:
        with admin(edge) as client:
            serve(client, built["v1"])
        store = edge.runtime.blobs
        orphan, fresh = store.put_bytes(b"a blob no bundle names"), store.put_bytes(b"pushed a minute ago")
        hour_ago = time.time() - 7200
        for sha in (orphan, *read_and_hashes(built)):
            os.utime(store.path(sha), (hour_ago, hour_ago))
    finally:
        edge.stop(0)
    edge = create_server(options, address="127.0.0.1:0")
    try:
        store = edge.runtime.blobs
        assert not store.has(orphan)  # garbage
        assert store.has(fresh)  # may belong to a bundle still being pushed
        assert all(store.has(sha) for sha in read_and_hashes(built))  # v1's table and tokenizer, though old
        with admin(edge) as client:
            assert client.invoke(QUESTION).bundle_version == "1"
    finally:
        edge.stop(0)


def read_and_hashes(built) -> list[str]:
    return [ref["sha256"] for ref in read_bundle(built["v1"], trusted_keys=[built["public"]]).blobs.values()]

"""A bundle's reading pack, through the real gRPC server: plain/1 still answers the example bundle's demo
questions; an unknown pack is refused at push, naming the packs the device knows."""

from __future__ import annotations

import random

import grpc
import pytest
from edge_server_fixtures import EXAMPLES, make_keys, random_static_embedder

import builder.bundle as packer
from builder.bundle_build import build_bundle, sample_values
from edge_runtime.bundles.bundle import read_bundle
from edge_runtime.errors import BundleFormatError
from edge_runtime.serving.client import EdgeClient, decode
from edge_runtime.serving.runtime import RuntimeOptions
from edge_runtime.serving.server import create_server

GAS = "What is the pressure, in kPa, of 3 mol of an ideal gas at 100 degrees celsius held in a 20 litres container?"


def _bundle(root, key, embedder, version, reading=None):
    return build_bundle(EXAMPLES, root / "out", name="examples", version=version, private_key=key,
                        target_model_dir=None, embedder_dir=embedder, progress=lambda _: None, reading=reading).path


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("packs")
    key, public = make_keys(root / "keys")
    embedder = random_static_embedder(root / "embedder")
    return {"root": root, "key": key, "public": public, "embedder": embedder,
            "default": _bundle(root, key, embedder, "1"),
            "plain": _bundle(root, key, embedder, "2", {"pack": "plain/1", "settings": {}})}


def _answers(tmp_path, public, bundle, questions):
    edge = create_server(RuntimeOptions(data_dir=tmp_path / "device", trusted_keys=[public]), address="127.0.0.1:0")
    try:
        with EdgeClient(f"127.0.0.1:{edge.port}", admin_socket=edge.admin_socket, timeout_s=30) as client:
            client.activate(client.push(bundle).staged.bundle_id)
            return [decode(client.invoke(q)) for q in questions]
    finally:
        edge.stop(0)


def test_the_manifest_names_the_pack(built):
    assert read_bundle(built["plain"], trusted_keys=[built["public"]]).reading == {"pack": "plain/1", "settings": {}}
    assert read_bundle(built["default"], trusted_keys=[built["public"]]).reading is None  # no field: today's rules


def test_plain_answers_the_demo_questions_as_the_default_pack_does(tmp_path, built):
    bundle = read_bundle(built["plain"], trusted_keys=[built["public"]])
    rng = random.Random(1)  # the demo's questions (builder/demo.py): each entry's template with sampled values
    questions = [e.render(sample_values(e, rng)) for e in bundle.entries.values()]
    worded = GAS.replace("3 mol", "three mol")
    plain = _answers(tmp_path / "plain", built["public"], built["plain"], questions + [worded])
    default = _answers(tmp_path / "default", built["public"], built["default"], questions + [worded])
    # (no target model here: an entry whose reasoning asks the model, parcel shipping, misses under both)
    assert sum(d["outcome"] == "HIT" for d in default) >= len(questions) - 1
    for question, p, d in zip(questions, plain, default):
        assert (p["outcome"], p["miss_reason"], p["entry_id"]) == (d["outcome"], d["miss_reason"], d["entry_id"]), question
        if d["outcome"] == "HIT":
            assert p["serving_path"] == d["serving_path"] == "template"
            assert (p["answer"], p["narration"], p["parameters"]) == (d["answer"], d["narration"], d["parameters"])
    # a number word: read by the default pack, not by plain/1 (a miss, never a guess)
    assert default[-1]["outcome"] == "HIT" and default[-1]["parameters"]["moles"] == 3.0
    assert plain[-1]["outcome"] == "MISS" and plain[-1]["miss_reason"] == "VALIDATION_FAILED"


def test_an_unknown_pack_is_refused_at_push_naming_the_known_ones(tmp_path, built, monkeypatch):
    class Unknown:  # what a newer builder with a pack this device lacks would sign
        def __init__(self, reading):
            pass

        def manifest(self):
            return {"pack": "invoices/3", "settings": {}}

    monkeypatch.setattr(packer, "load_pack", Unknown)
    unknown = _bundle(built["root"] / "unknown", built["key"], built["embedder"], "3", {"pack": "invoices/3"})
    monkeypatch.undo()
    with pytest.raises(BundleFormatError, match=r"unknown reading pack 'invoices/3'.*en-word-problems/1, plain/1"):
        read_bundle(unknown, trusted_keys=[built["public"]])
    edge = create_server(RuntimeOptions(data_dir=tmp_path / "device", trusted_keys=[built["public"]]), address="127.0.0.1:0")
    try:
        with EdgeClient(f"127.0.0.1:{edge.port}", admin_socket=edge.admin_socket, timeout_s=30) as client:
            with pytest.raises(grpc.RpcError) as info:
                client.push(unknown)
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "invoices/3" in info.value.details() and "plain/1" in info.value.details()
    finally:
        edge.stop(0)


def test_the_builder_refuses_an_unknown_pack_or_bad_settings(built):
    from edge_runtime.errors import BundleError

    with pytest.raises(BundleError, match="unknown reading pack 'nope/1'"):
        _bundle(built["root"] / "nope", built["key"], built["embedder"], "4", {"pack": "nope/1"})
    with pytest.raises(BundleError, match="must be bool"):
        _bundle(built["root"] / "nope", built["key"], built["embedder"], "4",
                {"pack": "en-word-problems/1", "settings": {"check_added": "yes"}})

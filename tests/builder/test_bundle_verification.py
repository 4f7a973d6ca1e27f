"""An entry's verification status: the bundle's policy packs or leaves out unverified entries, the
signed manifest attests each status, and the device reports it with every answer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from edge_server_fixtures import EXAMPLES, make_keys, random_static_embedder

from builder.bundle_build import build_bundle
from edge_runtime.answer.verification import VerificationStatus
from edge_runtime.bundles.bundle import read_bundle
from edge_runtime.errors import BundleError
from edge_runtime.proto import edge_pb2 as pb
from edge_runtime.serving.client import EdgeClient, decode
from edge_runtime.serving.runtime import RuntimeOptions
from edge_runtime.serving.server import create_server

GAS = "What is the pressure, in kPa, of 3 mol of an ideal gas at 100 degrees celsius held in a 20 litres container?"
VERIFIED = {"status": "verified", "detail": "agrees with second on 8 of 8 variants", "sources": ["second"], "variants": 8}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("verification")
    key, public = make_keys(root / "keys")
    embedder = random_static_embedder(root / "embedder")
    sources = root / "sources"
    shutil.copytree(EXAMPLES, sources)
    (sources / "_meta").mkdir()
    (sources / "_meta" / "ideal-gas-pressure.json").write_text(json.dumps({"verification": VERIFIED}))
    (sources / "_meta" / "charles-law-volume.json").write_text("{not json")  # a broken record is no verification
    return {"root": root, "key": key, "public": public, "embedder": embedder, "sources": sources}


def build(setup, version: str, include_unverified: bool, sources: Path | None = None):
    return build_bundle(sources or setup["sources"], setup["root"] / "out", name="examples", version=version,
                        private_key=setup["key"], target_model_dir=None, embedder_dir=setup["embedder"],
                        progress=lambda _: None, include_unverified=include_unverified)


def test_the_manifest_attests_each_entrys_status_and_the_device_reads_it(setup) -> None:
    built = build(setup, "1", include_unverified=True)
    bundle = read_bundle(built.path, trusted_keys=[setup["public"]])
    assert built.verified == 1 and built.unverified_left_out == 0
    assert bundle.verification["ideal-gas-pressure"] is VerificationStatus.VERIFIED
    others = {e: s for e, s in bundle.verification.items() if e != "ideal-gas-pressure"}
    assert others and set(others.values()) == {VerificationStatus.UNVERIFIED}
    listed = {item["id"]: item["verification"] for item in bundle.manifest["entries"]}
    assert listed["ideal-gas-pressure"] == VERIFIED
    assert listed["charles-law-volume"]["status"] == "unverified"


def test_verified_only_leaves_the_unverified_entries_out(setup) -> None:
    built = build(setup, "2", include_unverified=False)
    bundle = read_bundle(built.path, trusted_keys=[setup["public"]])
    assert list(bundle.entries) == ["ideal-gas-pressure"]
    everything = read_bundle(build(setup, "5", include_unverified=True).path, trusted_keys=[setup["public"]])
    assert built.unverified_left_out == len(everything.entries) - 1


def test_verified_only_with_nothing_verified_is_a_clear_error(setup, tmp_path) -> None:
    with pytest.raises(BundleError, match="no entry is verified"):
        build(setup, "3", include_unverified=False, sources=EXAMPLES)


def test_every_hit_says_whether_its_entry_was_verified(setup, tmp_path) -> None:
    built = build(setup, "4", include_unverified=True)
    edge = create_server(RuntimeOptions(data_dir=tmp_path / "device", trusted_keys=[setup["public"]]),
                         address="127.0.0.1:0")
    try:
        with EdgeClient(f"127.0.0.1:{edge.port}", admin_socket=edge.admin_socket, timeout_s=30) as client:
            client.activate(client.push(built.path).staged.bundle_id)
            hit = client.invoke(GAS)
            assert hit.outcome == pb.HIT and hit.verification == pb.ENTRY_VERIFIED
            assert decode(hit)["verification"] == "verified"
            other = client.invoke("Convert 100 degrees celsius to fahrenheit.")
            if other.outcome == pb.HIT:
                assert other.entry_id != "ideal-gas-pressure" and other.verification == pb.ENTRY_UNVERIFIED
            miss = client.invoke("What is the capital of France?")
            assert miss.outcome == pb.MISS and miss.verification == pb.VERIFICATION_UNSPECIFIED
            listed = {e.id: e.verification for e in client.stub.ListEntries(pb.ListEntriesRequest(), timeout=10).entries}
            assert listed["ideal-gas-pressure"] == pb.ENTRY_VERIFIED and listed["charles-law-volume"] == pb.ENTRY_UNVERIFIED
    finally:
        edge.stop(0)

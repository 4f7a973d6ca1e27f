"""A verified scope on the device: an entry verified only with some parameters at their original values
(its record's ``fixed``) answers VERIFIED only while the question keeps them; outside, a bundle packed with
verified entries only misses naming the parameter, and one that packs unverified entries serves the answer
as UNVERIFIED. The signed manifest carries the scope and the packing policy, and the reader refuses a
malformed one naming the entry (hostile manifests, re-signed with a trusted key, below)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import pytest
from edge_server_fixtures import EXAMPLES, make_keys, random_static_embedder

from builder.bundle_build import build_bundle
from builder.keys import load_private_key
from edge_runtime.answer.verification import VerificationStatus
from edge_runtime.bundles.bundle import HEADER, MAGIC, read_bundle, signed_message
from edge_runtime.errors import BundleFormatError
from edge_runtime.proto import edge_pb2 as pb
from edge_runtime.serving.client import EdgeClient
from edge_runtime.serving.runtime import RuntimeOptions
from edge_runtime.serving.server import create_server

#: The entry's original volume is 10 litres; it is verified only for that volume.
INSIDE = "What is the pressure, in kPa, of 3 mol of an ideal gas at 100 degrees celsius held in a 10 litres container?"
OUTSIDE = "What is the pressure, in kPa, of 3 mol of an ideal gas at 100 degrees celsius held in a 20 litres container?"
SCOPED = {"status": "verified", "detail": "agrees with second on 8 of 8 variants with volume at the original",
          "sources": ["second"], "variants": 8, "fixed": ["volume"]}
FULL = {"status": "verified", "detail": "agrees with second on 8 of 8 variants", "sources": ["second"], "variants": 8}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("scope")
    key, public = make_keys(root / "keys")
    sources = root / "sources"
    shutil.copytree(EXAMPLES, sources)
    (sources / "_meta").mkdir()
    (sources / "_meta" / "ideal-gas-pressure.json").write_text(json.dumps({"verification": SCOPED}))
    (sources / "_meta" / "charles-law-volume.json").write_text(json.dumps({"verification": FULL}))
    setup = {"root": root, "key": key, "public": public, "embedder": random_static_embedder(root / "embedder"),
             "sources": sources}
    setup["verified_only"] = build(setup, "1", include_unverified=False)
    setup["all"] = build(setup, "2", include_unverified=True)
    return setup


def build(setup: dict, version: str, include_unverified: bool) -> Path:
    return build_bundle(setup["sources"], setup["root"] / "out", name="examples", version=version,
                        private_key=setup["key"], target_model_dir=None, embedder_dir=setup["embedder"],
                        progress=lambda _: None, include_unverified=include_unverified).path


def test_the_manifest_carries_the_scope_and_the_packing_policy(setup) -> None:
    only = read_bundle(setup["verified_only"], trusted_keys=[setup["public"]])
    assert only.manifest["verification_policy"] == "verified-only" and only.verified_only
    assert only.verified_scope == {"ideal-gas-pressure": ("volume",)}  # charles-law-volume: verified for every value
    assert only.verification["ideal-gas-pressure"] is VerificationStatus.VERIFIED
    listed = {i["id"]: i["verification"] for i in only.manifest["entries"]}
    assert listed["ideal-gas-pressure"] == SCOPED and "fixed" not in listed["charles-law-volume"]
    everything = read_bundle(setup["all"], trusted_keys=[setup["public"]])
    assert everything.manifest["verification_policy"] == "include-unverified" and not everything.verified_only


def resigned(setup: dict, path: Path, edit: Callable[[dict[str, Any]], None]) -> bytes:
    """The bundle at ``path`` with its manifest edited and signed again with the trusted key: a malicious or
    broken builder that skips the builder's own checks."""
    data = path.read_bytes()
    magic, version, length = HEADER.unpack_from(data)
    assert magic == MAGIC
    start = HEADER.size
    manifest = msgpack.unpackb(data[start:start + length], raw=False)
    edit(manifest)
    body = msgpack.packb(manifest, use_bin_type=True)
    signature = load_private_key(setup["key"]).sign(signed_message(body, version))
    return HEADER.pack(MAGIC, version, len(body)) + body + signature + data[start + length + 64:]


def gas_record(manifest: dict[str, Any]) -> dict[str, Any]:
    return next(i for i in manifest["entries"] if i["id"] == "ideal-gas-pressure")["verification"]


@pytest.mark.parametrize("fixed", ["volume", [], ["volume", "volume"], ["pressure"], [3], [["volume"]], {"volume": 1},
                                   None, ["volume"] * 40])
def test_a_malformed_scope_is_refused_naming_the_entry(setup, fixed) -> None:
    def edit(manifest: dict[str, Any]) -> None:
        gas_record(manifest)["fixed"] = fixed

    hostile = resigned(setup, setup["all"], edit)
    with pytest.raises(BundleFormatError, match="entry 'ideal-gas-pressure': verification 'fixed'"):
        read_bundle(hostile, trusted_keys=[setup["public"]])


def test_a_scope_on_an_unverified_record_is_refused(setup) -> None:
    def edit(manifest: dict[str, Any]) -> None:
        gas_record(manifest)["status"] = "unverified"

    with pytest.raises(BundleFormatError, match="'ideal-gas-pressure': verification 'fixed' on a record that is not"):
        read_bundle(resigned(setup, setup["all"], edit), trusted_keys=[setup["public"]])


@pytest.mark.parametrize("policy", ["verified", "", 1, True, ["verified-only"]])
def test_an_unknown_packing_policy_is_refused(setup, policy) -> None:
    def edit(manifest: dict[str, Any]) -> None:
        manifest["verification_policy"] = policy

    with pytest.raises(BundleFormatError, match="verification_policy"):
        read_bundle(resigned(setup, setup["all"], edit), trusted_keys=[setup["public"]])


def test_a_verified_only_bundle_that_lists_an_unverified_entry_is_refused(setup) -> None:
    def edit(manifest: dict[str, Any]) -> None:
        manifest["verification_policy"] = "verified-only"

    with pytest.raises(BundleFormatError, match="is unverified in a bundle whose verification_policy is 'verified-only'"):
        read_bundle(resigned(setup, setup["all"], edit), trusted_keys=[setup["public"]])


def test_a_manifest_from_before_the_fields_reads_as_before(setup) -> None:
    def edit(manifest: dict[str, Any]) -> None:
        del manifest["verification_policy"]
        del gas_record(manifest)["fixed"]

    old = read_bundle(resigned(setup, setup["all"], edit), trusted_keys=[setup["public"]])
    assert not old.verified_only and old.verified_scope == {}
    assert old.verification["ideal-gas-pressure"] is VerificationStatus.VERIFIED


def serve(setup: dict, tmp_path: Path, bundle: Path, check: Callable[[EdgeClient], None]) -> None:
    edge = create_server(RuntimeOptions(data_dir=tmp_path / "device", trusted_keys=[setup["public"]]),
                         address="127.0.0.1:0")
    try:
        with EdgeClient(f"127.0.0.1:{edge.port}", admin_socket=edge.admin_socket, timeout_s=30) as client:
            client.activate(client.push(bundle).staged.bundle_id)
            check(client)
    finally:
        edge.stop(0)


def test_a_verified_only_bundle_misses_outside_the_scope(setup, tmp_path) -> None:
    def check(client: EdgeClient) -> None:
        inside = client.invoke(INSIDE)
        assert inside.outcome == pb.HIT and inside.entry_id == "ideal-gas-pressure"
        assert inside.verification == pb.ENTRY_VERIFIED
        outside = client.invoke(OUTSIDE)
        assert outside.outcome == pb.MISS and outside.miss_reason == pb.VALIDATION_FAILED
        assert outside.miss_detail.startswith("volume outside the verified scope of ideal-gas-pressure"), outside.miss_detail
        assert not outside.answer_json
        listed = {e.id: e for e in client.stub.ListEntries(pb.ListEntriesRequest(), timeout=10).entries}
        assert listed["ideal-gas-pressure"].verification == pb.ENTRY_VERIFIED
        assert list(listed["ideal-gas-pressure"].verified_with_fixed) == ["volume"]
        assert list(listed["charles-law-volume"].verified_with_fixed) == []

    serve(setup, tmp_path, setup["verified_only"], check)


def test_a_bundle_with_unverified_entries_serves_outside_the_scope_as_unverified(setup, tmp_path) -> None:
    def check(client: EdgeClient) -> None:
        inside = client.invoke(INSIDE)
        assert inside.outcome == pb.HIT and inside.verification == pb.ENTRY_VERIFIED
        outside = client.invoke(OUTSIDE)
        assert outside.outcome == pb.HIT and outside.entry_id == "ideal-gas-pressure"
        assert outside.verification == pb.ENTRY_UNVERIFIED
        assert json.loads(outside.answer_json) == pytest.approx(json.loads(inside.answer_json) / 2, rel=1e-4)  # the entry rounds

    serve(setup, tmp_path, setup["all"], check)

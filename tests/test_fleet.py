"""A fleet with real parts (issue 23): Debian's docker-registry (CNCF distribution 2.8) on 127.0.0.1,
TUF metadata written by the builder, two real arc-edge servers following the registry.

v1 is published and both devices pick it up; a code-only v2 is published while both answer under load
and both switch with no failed request, moving only kilobytes; an old TUF timestamp replayed into the
registry is refused; a registry stopped mid-pull leaves both serving what they have; expired metadata
is refused with its reason; rotated miss logs come back (question text only where shared).
"""

from __future__ import annotations

import json
import shutil
import threading
import time
import urllib.request
from pathlib import Path

import grpc
import pytest
from edge_server_fixtures import EXAMPLES, example_bundle, make_keys, random_static_embedder

from builder.fleet.local_registry import LocalRegistry, registry_binary
from builder.fleet.publish import publish, push_metadata
from builder.fleet.tuf_repo import TufRepository
from edge_runtime.fleet import media
from edge_runtime.fleet.follower import FollowOptions
from edge_runtime.fleet.misslog_upload import download_misslogs
from edge_runtime.fleet.registry import RegistryClient
from edge_runtime.serving.client import EdgeClient, decode
from edge_runtime.serving.runtime import RuntimeOptions
from edge_runtime.serving.server import create_server

pytestmark = pytest.mark.skipif(registry_binary() is None, reason="docker-registry missing: run make setup")

GAS = "What is the pressure, in kPa, of 3 mol of an ideal gas at 100 degrees celsius held in a 20 litres container?"
INTERVAL = 0.4


def wait_for(predicate, timeout_s: float, what: str) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if predicate():
            return time.monotonic() - started
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet")
    registry = LocalRegistry(root / "registry").start()
    key, public = make_keys(root / "keys")
    embedder = random_static_embedder(root / "embedder")
    changed = root / "changed"
    shutil.copytree(EXAMPLES, changed, ignore=shutil.ignore_patterns("__pycache__"))
    source = (changed / "charles_law.py").read_text(encoding="utf-8")
    (changed / "charles_law.py").write_text(source.replace('narrate(ctx, f"', 'narrate(ctx, f"Charles: ', 1))
    out = root / "out"
    bundles = {"1": example_bundle(out, key, embedder, "1"), "2": example_bundle(out, key, embedder, "2", changed)}
    # v3 routes with another table: it needs a blob the devices do not hold
    bundles["3"] = example_bundle(root / "out3", key, random_static_embedder(root / "embedder3", seed=3), "3", changed)
    tuf = TufRepository.init(root / "tuf")
    ref = f"{registry.address}/arc/examples"
    yield {"root": root, "registry": registry, "public": public, "bundles": bundles, "tuf": tuf, "ref": ref}
    registry.stop()


def device(tmp: Path, fleet, name: str, **follow) -> object:
    options = RuntimeOptions(data_dir=tmp / name, trusted_keys=[fleet["public"]], use_worker_pool=False)
    return create_server(options, address="127.0.0.1:0", follow=FollowOptions(
        fleet["ref"], fleet["tuf"].root_path, interval_s=INTERVAL, jitter=0.2, timeout_s=5, **follow))


def test_publish_follow_update_replay_and_registry_down(fleet, tmp_path):
    registry, tuf, ref, bundles = fleet["registry"], fleet["tuf"], fleet["ref"], fleet["bundles"]
    first = publish(bundles["1"], ref, tuf)
    assert sorted(first.layers_uploaded) == sorted(["examples-1.arcb", "routing/embedder/table.npy",
                                                     "routing/embedder/tokenizer.json"])
    old_timestamp, _ = RegistryClient(ref).get_manifest(media.tuf_tag("timestamp.json"))
    devices = [device(tmp_path, fleet, "a", upload_misses=True), device(tmp_path, fleet, "b", upload_misses=True,
                                                                          share_questions=True)]
    try:
        # bytes_pulled is counted when a poll ends, just after its activation: wait for both
        wait_for(lambda: all(d.runtime.active_id == "examples-1" and d.follower.status["bytes_pulled"]
                             > first.sizes["blob_bytes"] for d in devices), 20, "both devices on v1, blobs pulled")
        pulled_v1 = [d.follower.status["bytes_pulled"] for d in devices]

        # ---- a code-only v2 under load ------------------------------------------------------------
        failures, seen, stop, lock = [], set(), threading.Event(), threading.Lock()

        def caller(edge) -> None:
            with EdgeClient(f"127.0.0.1:{edge.port}", timeout_s=30) as client:
                while not stop.is_set():
                    try:
                        data = decode(client.invoke(GAS))
                        with lock:
                            seen.add((edge.port, data["bundle"]))
                            if data["outcome"] != "HIT":
                                failures.append(data)
                    except grpc.RpcError as exc:
                        with lock:
                            failures.append(f"{exc.code()}: {exc.details()}")

        threads = [threading.Thread(target=caller, args=(d,)) for d in devices for _ in range(4)]
        for t in threads:
            t.start()
        try:
            time.sleep(0.3)
            second = publish(bundles["2"], ref, tuf)
            assert second.layers_uploaded == ["examples-2.arcb"]  # the routing blobs are in the registry already
            # two intervals is the benchmark's goal (benchmarks/fleet.py); here only a bound a busy host keeps
            switch = wait_for(lambda: all(d.runtime.active_id == "examples-2" for d in devices), 20, "both devices on v2")
            time.sleep(0.3)
        finally:
            stop.set()
            for t in threads:
                t.join(30)
        assert failures == []
        assert {(d.port, b) for d in devices for b in ("examples-1", "examples-2")} <= seen
        bundle_bytes = bundles["2"].stat().st_size
        wait_for(lambda: all(d.follower.status["bytes_pulled"] - p > bundle_bytes for d, p in zip(devices, pulled_v1)),
                 10, "the v2 polls counted")
        pulled_v2 = [d.follower.status["bytes_pulled"] - p for d, p in zip(devices, pulled_v1)]
        # the bundle file, its manifest and the TUF metadata of every poll since: kilobytes, not the 2.7 MB of blobs
        assert all(p < bundle_bytes + 150_000 for p in pulled_v2), (pulled_v2, bundle_bytes, switch)

        # ---- a replayed v1 timestamp is refused; the device stays on v2 ------------------------------
        client = RegistryClient(ref)
        client.put_manifest(old_timestamp, media.tuf_tag("timestamp.json"))
        outcome = devices[0].follower.poll_once()
        assert outcome == "failed: metadata_replayed"
        health = devices[0].follower.health()
        assert health["error_reason"] == "metadata_replayed" and "timestamp" in health["last_error"]
        assert devices[0].runtime.active_id == "examples-2"
        assert 'follow_error{reason="metadata_replayed"} 1' in devices[0].runtime.metrics.render()
        push_metadata(client, tuf)  # the real current set again
        assert devices[0].follower.poll_once().startswith("up to date")

        # ---- the registry stops mid-pull: both keep serving v2 --------------------------------------
        for d in devices:
            real = d.runtime.stage_bundle

            def stage_then_stop(data, real=real):
                staged = real(data)
                registry.stop()  # the bundle is in, its new routing table is not
                return staged

            d.runtime.stage_bundle = stage_then_stop
        publish(bundles["3"], ref, tuf, blob_dir=bundles["3"].parent / "blobs")
        wait_for(lambda: all(d.follower.status["error_reason"] == "registry_unreachable" for d in devices), 20,
                 "both devices to see the registry down")
        for d in devices:
            d.runtime.stage_bundle = d.runtime.stage_bundle.__defaults__[0]
            assert d.runtime.active_id == "examples-2"
            with EdgeClient(f"127.0.0.1:{d.port}", timeout_s=10) as query:
                assert decode(query.invoke(GAS))["outcome"] == "HIT"
        registry.start()
        wait_for(lambda: all(d.runtime.active_id == "examples-3" and d.follower.status["error_reason"] == ""
                             for d in devices), 20, "both devices on v3, their errors cleared")

        # ---- miss logs back: hashes only unless the device shares questions --------------------------
        for d in devices:
            d.runtime.miss_log.max_bytes = 1  # every miss rotates the log
            with EdgeClient(f"127.0.0.1:{d.port}", timeout_s=10) as query:
                for text in ("Who painted the ceiling of the Sistine Chapel?", "What is the capital of Peru?"):
                    assert decode(query.invoke(text))["outcome"] == "MISS"
            d.follower.poll_once()
        logs = download_misslogs(client, tmp_path / "misslogs")
        records = {p.name: [json.loads(line) for line in p.read_text().splitlines()] for p in logs}
        assert len(records) >= 2
        shared = [r for rs in records.values() for r in rs if "query" in r]
        hidden = [r for rs in records.values() for r in rs if "query" not in r]
        assert shared and hidden and all(len(r["query_sha256"]) == 64 and r["reason"] for r in hidden)
        assert not any("Sistine" in json.dumps(r) for r in hidden)
    finally:
        for d in devices:
            d.stop(0)


def test_expired_metadata_is_refused_with_its_reason(fleet, tmp_path):
    registry = fleet["registry"]
    registry.process or registry.start()
    tuf = TufRepository.init(tmp_path / "tuf", expiry_days={"timestamp": 1.5 / 86400})
    ref = f"{registry.address}/arc/expiring"
    publish(fleet["bundles"]["1"], ref, tuf)
    time.sleep(2.0)
    options = RuntimeOptions(data_dir=tmp_path / "dev", trusted_keys=[fleet["public"]], use_worker_pool=False)
    from edge_runtime.fleet.follower import Follower
    from edge_runtime.serving.runtime import EdgeRuntime

    runtime = EdgeRuntime(options)
    try:
        follower = Follower(runtime, FollowOptions(ref, tuf.root_path))
        assert follower.poll_once() == "failed: metadata_expired"
        assert "expired" in follower.health()["last_error"] and "arc-build tuf refresh" in follower.health()["last_error"]
        assert runtime.active_id == ""
        tuf.refresh(1.0)
        push_metadata(RegistryClient(ref), tuf)
        assert follower.poll_once() == "activated examples-1"
    finally:
        runtime.close()


def test_health_json_and_follow_health_service(fleet, tmp_path):
    """The follower's state on /health beside /metrics, and a gRPC health service of its own."""
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from builder.fleet.local_registry import free_port

    registry = fleet["registry"]
    registry.process or registry.start()
    port = free_port()
    options = RuntimeOptions(data_dir=tmp_path / "dev", trusted_keys=[fleet["public"]], use_worker_pool=False)
    edge = create_server(options, address="127.0.0.1:0", metrics_port=port, follow=FollowOptions(
        "127.0.0.1:1/arc/nothing-listens-here", fleet["tuf"].root_path, interval_s=0.2, timeout_s=1))
    try:
        wait_for(lambda: edge.follower.status["failed_polls"] > 0, 10, "a failed poll")
        body = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5).read())
        assert body["error_reason"] == "registry_unreachable" and body["last_ok"] is None
        with grpc.insecure_channel(f"127.0.0.1:{edge.port}") as channel:
            status = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service="arc.edge.v1.Follow"))
        assert status.status == health_pb2.HealthCheckResponse.NOT_SERVING
    finally:
        edge.stop(0)


def test_the_commands_publish_and_refuse_half_a_follow_configuration(fleet, tmp_path, capsys):
    """``arc-build tuf init`` and ``arc-build publish`` as typed; ``arc-edge serve --follow`` without a root."""
    from builder.cli import main as arc_build
    from edge_runtime.cli import main as arc_edge

    registry = fleet["registry"]
    registry.process or registry.start()
    ref = f"{registry.address}/arc/cli"
    assert arc_build(["tuf", "init", "--dir", str(tmp_path / "tuf")]) == 0
    assert "root.json" in capsys.readouterr().out
    assert arc_build(["tuf", "init", "--dir", str(tmp_path / "tuf")]) == 2  # a root is never replaced
    assert "refusing to replace" in capsys.readouterr().err
    assert arc_build(["publish", str(fleet["bundles"]["1"]), "--to", ref, "--tuf-dir", str(tmp_path / "tuf"),
                      "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["bundle"] == "examples-1" and summary["targets_version"] == 2 and len(summary["layers_uploaded"]) == 3
    assert arc_build(["publish", str(fleet["bundles"]["1"]), "--to", ref, "--tuf-dir", str(tmp_path / "tuf"),
                      "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["layers_uploaded"] == []  # nothing uploaded twice
    assert arc_edge(["serve", "--follow", ref, "--data-dir", str(tmp_path / "dev")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--follow needs --tuf-root ROOT.json" in err[0]

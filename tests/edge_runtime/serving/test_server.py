"""The real gRPC server on 127.0.0.1, called with the real Python stub."""

from __future__ import annotations

import threading
import urllib.request
from pathlib import Path

import grpc
import pytest
from edge_server_fixtures import example_bundle, make_keys, random_static_embedder
from grpc_health.v1 import health_pb2, health_pb2_grpc

from edge_runtime.bundles.bundle import read_bundle
from edge_runtime.entries.compiler import LoadedCompiledEntry
from edge_runtime.options import PoolOptions
from edge_runtime.proto import edge_pb2 as pb
from edge_runtime.serving.client import EdgeClient, decode
from edge_runtime.serving.runtime import RuntimeOptions
from edge_runtime.serving.server import SERVICE_NAME, create_server

GAS = "What is the pressure, in kPa, of 3 mol of an ideal gas at 100 degrees celsius held in a 20 litres container?"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("bundles")
    key, public = make_keys(root / "keys")
    embedder = random_static_embedder(root / "embedder")
    v1 = example_bundle(root / "out", key, embedder, "1")
    v2 = example_bundle(root / "out", key, embedder, "2")
    other_key, _ = make_keys(root / "other-keys")
    foreign = example_bundle(root / "foreign", other_key, embedder, "9")
    return {"key": key, "public": public, "v1": v1, "v2": v2, "foreign": foreign, "embedder": embedder, "root": root}


def start(tmp_path: Path, public: bytes, **overrides) -> object:
    options = RuntimeOptions(data_dir=tmp_path / "device", trusted_keys=[public], **overrides)
    return create_server(options, address="127.0.0.1:0")


@pytest.fixture
def server(tmp_path, built):
    edge = start(tmp_path, built["public"])
    yield edge
    edge.stop(0)


def client_for(edge) -> EdgeClient:
    return EdgeClient(f"127.0.0.1:{edge.port}", admin_socket=edge.admin_socket, timeout_s=30)


def activate(client: EdgeClient, path: Path) -> str:
    staged = client.push(path).staged
    client.activate(staged.bundle_id)
    return staged.bundle_id


def test_no_bundle_is_failed_precondition_and_health_not_serving(server):
    with client_for(server) as client:
        with pytest.raises(grpc.RpcError) as info:
            client.invoke(GAS)
        assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "no bundle is active" in info.value.details()
        health = health_pb2_grpc.HealthStub(client.channel)
        reply = health.Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING


def test_fast_path_hit_matches_direct_execution(server, built):
    with client_for(server) as client:
        bundle_id = activate(client, built["v1"])
        reply = client.invoke(GAS)
        data = decode(reply)
    assert bundle_id == "examples-1"
    assert data["outcome"] == "HIT" and data["serving_path"] == "template" and data["entry_id"] == "ideal-gas-pressure"
    bundle = read_bundle(built["v1"], trusted_keys=[built["public"]])
    entry = bundle.entries["ideal-gas-pressure"]
    values = entry.validate({"moles": 3, "temperature": 100, "temperature_unit": "celsius", "volume": 20,
                             "volume_unit": "litres"})
    direct = LoadedCompiledEntry(bundle.modules["ideal-gas-pressure"]).run(values)
    assert data["result"] == direct.result and data["answer"] == direct.result["pressure in kilopascals"]
    assert data["narration"] == [s.text for s in direct.narration]
    assert data["parameters"] == {"moles": 3.0, "temperature": 100.0, "temperature_unit": "celsius", "volume": 20.0,
                                  "volume_unit": "litres"}
    assert data["bundle"] == "examples-1" and data["timings_ms"]["total"] > 0


def test_stream_sends_steps_then_response(server, built):
    with client_for(server) as client:
        activate(client, built["v1"])
        events = list(client.invoke_stream(GAS))
    steps = [e.step.text for e in events if e.HasField("step")]
    assert events[-1].HasField("response") and all(e.HasField("step") for e in events[:-1])
    assert steps == [s.text for s in events[-1].response.narration] and len(steps) >= 4


def test_unroutable_question_is_a_logged_miss(server, built, tmp_path):
    with client_for(server) as client:
        activate(client, built["v1"])
        data = decode(client.invoke("Who painted the Mona Lisa?"))
        stats = client.stats()
    assert data["outcome"] == "MISS"
    assert data["miss_reason"] in ("BELOW_THRESHOLD", "EXTRACTION_FAILED")
    assert data["result"] == {} and data["answer"] is None
    logged = server.runtime.miss_log.read()
    assert logged[-1]["query"] == "Who painted the Mona Lisa?" and logged[-1]["bundle"] == "examples-1"
    assert stats.misses == 1 and stats.invocations == 1


def test_out_of_domain_value_is_validation_miss(server, built):
    question = GAS.replace("3 mol", "-3 mol")
    with client_for(server) as client:
        activate(client, built["v1"])
        data = decode(client.invoke(question))
    # The template matches but -3 mol is outside the domain: no model to ask, so a miss, never an answer.
    assert data["outcome"] == "MISS" and data["answer"] is None


@pytest.mark.parametrize(
    "query, fragment",
    [("", "empty"), ("   ", "empty"), ("x" * 5000, "at most 4096")],
)
def test_bad_queries_are_invalid_argument(server, built, query, fragment):
    with client_for(server) as client:
        activate(client, built["v1"])
        with pytest.raises(grpc.RpcError) as info:
            client.invoke(query)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert fragment in info.value.details()
        assert decode(client.invoke(GAS))["outcome"] == "HIT"  # and the server keeps serving


def test_non_utf8_query_is_invalid_argument(server, built):
    with client_for(server) as client:
        activate(client, built["v1"])
        raw = client.channel.unary_unary(f"/{SERVICE_NAME}/Invoke", request_serializer=None, response_deserializer=None)
        with pytest.raises(grpc.RpcError) as info:
            raw(b"\x0a\x02\xff\xfe", timeout=5)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "UTF-8" in info.value.details()
        assert client.stats().invalid_requests == 1


def test_entries_are_listed_and_described(server, built):
    with client_for(server) as client:
        activate(client, built["v1"])
        listed = client.list_entries()
        described = client.describe("ideal-gas-pressure")
        with pytest.raises(grpc.RpcError) as info:
            client.describe("nope")
    assert {e.id for e in listed.entries} >= {"ideal-gas-pressure", "charles-law-volume"}
    assert [p.name for p in described.parameters][:2] == ["moles", "temperature"]
    assert "def run(ctx, params)" in described.module_source
    assert info.value.code() == grpc.StatusCode.NOT_FOUND


def test_refused_bundles_leave_the_active_one_serving(server, built, tmp_path):
    data = built["v1"].read_bytes()
    truncated = tmp_path / "truncated.arcb"
    truncated.write_bytes(data[: len(data) // 2])
    flipped = tmp_path / "flipped.arcb"
    corrupt = bytearray(data)
    corrupt[-10] ^= 0xFF
    flipped.write_bytes(bytes(corrupt))
    with client_for(server) as client:
        activate(client, built["v1"])
        for bad, kind in ((truncated, "BundleFormatError"), (flipped, "IntegrityError"), (built["foreign"], "SignatureError")):
            with pytest.raises(grpc.RpcError) as info:
                _ = client.push(bad).staged
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert kind in info.value.details()
        with pytest.raises(grpc.RpcError) as info:
            client.activate("examples-9")
        assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert decode(client.invoke(GAS))["bundle"] == "examples-1"


def test_activate_rollback_and_restart(tmp_path, built):
    edge = start(tmp_path, built["public"])
    try:
        with client_for(edge) as client:
            activate(client, built["v1"])
            status = client.activate(activate(client, built["v2"]))
            assert (status.active, status.previous) == ("examples-2", "examples-1")
            assert decode(client.invoke(GAS))["bundle"] == "examples-2"
            listed = client.list_bundles()
            assert [b.bundle_id for b in listed.bundles] == ["examples-1", "examples-2"] and listed.active == "examples-2"
            status = client.rollback()
            assert status.active == "examples-1"
            assert decode(client.invoke(GAS))["bundle"] == "examples-1"
    finally:
        edge.stop(0)
    # A restart re-verifies and re-activates what was active.
    again = start(tmp_path, built["public"])
    try:
        with client_for(again) as client:
            assert decode(client.invoke(GAS))["bundle"] == "examples-1"
    finally:
        again.stop(0)


def test_swap_under_load_loses_nothing(server, built):
    """32 concurrent clients call Invoke while v2 is pushed and activated and then rolled back."""
    failures: list[str] = []
    seen: set[str] = set()
    counts = [0]
    stop = threading.Event()
    lock = threading.Lock()

    def caller() -> None:
        with client_for(server) as client:
            while not stop.is_set():
                try:
                    data = decode(client.invoke(GAS, timeout_s=30))
                    with lock:
                        counts[0] += 1
                        seen.add(data["bundle"])
                        if data["outcome"] != "HIT":
                            failures.append(str(data))
                except grpc.RpcError as exc:  # pragma: no cover - what the test forbids
                    with lock:
                        failures.append(f"{exc.code()}: {exc.details()}")

    with client_for(server) as admin:
        activate(admin, built["v1"])
        threads = [threading.Thread(target=caller) for _ in range(32)]
        for t in threads:
            t.start()
        try:
            staged = admin.push(built["v2"]).staged
            admin.activate(staged.bundle_id)
            admin.rollback()
            admin.activate(staged.bundle_id)
        finally:
            stop.set()
            for t in threads:
                t.join(60)
        total = admin.stats().invocations
    assert failures == []
    assert seen == {"examples-1", "examples-2"}
    assert counts[0] == total and total >= 32


def test_reflection_and_metrics(tmp_path, built):
    options = RuntimeOptions(data_dir=tmp_path / "device", trusted_keys=[built["public"]], use_worker_pool=False)
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    edge = create_server(options, address="127.0.0.1:0", metrics_port=port, reflection_on=True)
    try:
        with client_for(edge) as client:
            activate(client, built["v1"])
            client.invoke(GAS)
            client.invoke("Who painted the Mona Lisa?")
            from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

            stub = reflection_pb2_grpc.ServerReflectionStub(client.channel)
            replies = list(stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5))
            names = {s.name for s in replies[0].list_services_response.service}
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    finally:
        edge.stop(0)
    assert SERVICE_NAME in names and "grpc.health.v1.Health" in names
    assert 'arc_hits_total{path="template"} 1' in text
    assert "arc_misses_total{" in text and 'arc_stage_latency_ms_count{stage="total"} 2' in text


HOSTILE = '''"""An entry whose code misbehaves on purpose for some inputs (a test of containment)."""

from edge_runtime.semantic import Param, entry_point, load, narrate, semantic_function


@semantic_function(
    "Double a count, misbehaving for the numbers 13, 14 and 15",
    inputs={"the count to double": 3},
    outputs={"twice the count": 6},
)
def double_count(ctx):
    n = load(ctx, "the count to double", int)
    if n == 13:
        while True:
            n = n + 1
    if n == 14:
        hog = [0] * (10 ** 10)
        n = len(hog)
    if n == 15:
        grow = lambda k: grow(k + 1)
        n = grow(0)
    narrate(ctx, f"{n} doubled is {2 * n}.")
    return {"twice the count": 2 * n}


DOUBLE = entry_point(
    id="double-count",
    description="Double a count",
    template="What is twice {n}?",
    question="What is twice 3?",
    params=[Param(name="n", description="the count to double", type=int, original=3, examples=(5,), minimum=0, maximum=1000)],
    root="double a count, misbehaving for the numbers 13, 14 and 15",
    answer_key="twice the count",
)
'''


def test_hostile_entries_are_contained_by_the_worker_pool(tmp_path, built):
    sources = tmp_path / "sources"
    sources.mkdir()
    (sources / "double.py").write_text(HOSTILE)
    bundle = example_bundle(tmp_path / "out", built["key"], built["embedder"], "7", sources=sources)
    options = RuntimeOptions(data_dir=tmp_path / "device", trusted_keys=[built["public"]],
                             pool=PoolOptions(workers=2, entry_timeout_s=1.5))
    edge = create_server(options, address="127.0.0.1:0")
    try:
        with client_for(edge) as client:
            activate(client, bundle)
            assert decode(client.invoke("What is twice 21?"))["answer"] == 42
            outcomes = {n: decode(client.invoke(f"What is twice {n}?", timeout_s=30)) for n in (13, 14, 15)}
            assert outcomes[13]["miss_reason"] == "DEADLINE_EXCEEDED"
            assert outcomes[14]["miss_reason"] == "RESOURCE_EXHAUSTED"
            assert outcomes[15]["miss_reason"] == "EXECUTION_FAILED" and "recursion" in outcomes[15]["miss_detail"]
            # The server keeps serving, on replaced workers.
            assert decode(client.invoke("What is twice 8?"))["answer"] == 16
            workers = dict(client.stats().workers)
        assert workers["workers_replaced"] >= 2
    finally:
        edge.stop(0)


def test_a_bogus_entry_id_is_unknown_entry_not_an_empty_bundle(server, built):
    """NO_ENTRY means the bundle is empty; an entry_id the bundle lacks gets its own reason, naming the id."""
    with client_for(server) as client:
        activate(client, built["v1"])
        reply = client.invoke("What is the pressure of 3 mol of gas?", entry_id="no-such-entry")
    assert reply.outcome == pb.MISS and reply.miss_reason == pb.UNKNOWN_ENTRY
    assert "'no-such-entry'" in reply.miss_detail

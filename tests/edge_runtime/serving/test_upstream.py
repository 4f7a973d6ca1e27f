"""The optional upstream fallback: the real server on 127.0.0.1, the real anthropic SDK, a loopback
stub of the Messages API. A MISS stays a MISS; the source model's reply rides along with it."""

from __future__ import annotations

import socket

import pytest
from edge_server_fixtures import example_bundle, make_keys, random_static_embedder

from builder.llm.stub_server import StubMessagesServer
from edge_runtime.serving.client import EdgeClient, decode
from edge_runtime.serving.runtime import EdgeRuntime, RuntimeOptions
from edge_runtime.serving.server import create_server
from edge_runtime.serving.upstream import UpstreamConfig, UpstreamConfigError

GAS = "What is the pressure, in kPa, of 3 mol of an ideal gas at 100 degrees celsius held in a 20 litres container?"
UNRELATED = "Who painted the Mona Lisa?"
MODEL = "claude-source-model"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("upstream")
    key, public = make_keys(root / "keys")
    bundle = example_bundle(root / "out", key, random_static_embedder(root / "embedder"), "1")
    return bundle, public


def serve(tmp_path, built, upstream: UpstreamConfig | None):
    bundle, public = built
    edge = create_server(RuntimeOptions(data_dir=tmp_path / "device", trusted_keys=[public], upstream=upstream))
    with EdgeClient(f"127.0.0.1:{edge.port}", admin_socket=edge.admin_socket) as client:
        client.activate(client.push(bundle).staged.bundle_id)
    return edge


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_miss_carries_the_source_models_answer_and_a_hit_never_asks(tmp_path, built, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with StubMessagesServer([{"text": "Leonardo da Vinci painted it.", "match": "Mona Lisa"}]) as stub:
        edge = serve(tmp_path, built, UpstreamConfig(MODEL, base_url=stub.base_url))
        try:
            with EdgeClient(f"127.0.0.1:{edge.port}", admin_socket=edge.admin_socket) as client:
                miss = decode(client.invoke(UNRELATED))
                hit = decode(client.invoke(GAS))
                stats = edge.runtime.snapshot()
        finally:
            edge.stop(0)
    assert miss["outcome"] == "MISS" and miss["answer"] is None  # not turned into a hit
    assert miss["upstream"]["text"] == "Leonardo da Vinci painted it." and miss["upstream"]["error"] == ""
    assert miss["upstream"]["model"] and miss["upstream"]["latency_ms"] > 0
    assert hit["outcome"] == "HIT" and hit["upstream"] is None
    assert len(stub.requests) == 1  # the hit never reached the source model
    request = stub.requests[0]
    assert request.body["model"] == MODEL and request.body["messages"][0]["content"] == UNRELATED
    assert request.headers.get("x-api-key") == "test-key" or "test-key" in request.headers.get("authorization", "")
    assert stats["upstream"] == {"answered": 1}
    assert edge.runtime.miss_log.read()[-1]["query"] == UNRELATED  # still logged for the build server


def test_an_unreachable_upstream_is_the_same_miss_with_an_error(tmp_path, built, monkeypatch):
    """No network: the device answers exactly as without a fallback, plus a reason."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    edge = serve(tmp_path, built, UpstreamConfig(MODEL, base_url=f"http://127.0.0.1:{closed_port()}", timeout_s=2))
    try:
        with EdgeClient(f"127.0.0.1:{edge.port}", admin_socket=edge.admin_socket) as client:
            miss = decode(client.invoke(UNRELATED))
            hit = decode(client.invoke(GAS))
    finally:
        edge.stop(0)
    assert miss["outcome"] == "MISS" and miss["miss_reason"] in ("BELOW_THRESHOLD", "EXTRACTION_FAILED")
    assert miss["upstream"]["text"] == "" and "Connection" in miss["upstream"]["error"]
    assert hit["outcome"] == "HIT"


def test_upstream_errors_are_reported_not_raised(tmp_path, built, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with StubMessagesServer([{"status": 529, "error": "overloaded"}]) as stub:
        edge = serve(tmp_path, built, UpstreamConfig(MODEL, base_url=stub.base_url))
        try:
            with EdgeClient(f"127.0.0.1:{edge.port}", admin_socket=edge.admin_socket) as client:
                miss = decode(client.invoke(UNRELATED))
        finally:
            edge.stop(0)
    assert miss["outcome"] == "MISS" and "overloaded" in miss["upstream"]["error"]
    assert edge.runtime.snapshot()["upstream"] == {"error": 1}


def test_off_by_default_and_a_missing_key_is_a_clear_error(tmp_path, built, monkeypatch):
    edge = serve(tmp_path, built, None)
    try:
        with EdgeClient(f"127.0.0.1:{edge.port}", admin_socket=edge.admin_socket) as client:
            assert decode(client.invoke(UNRELATED))["upstream"] is None
    finally:
        edge.stop(0)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(UpstreamConfigError, match="ANTHROPIC_API_KEY"):
        EdgeRuntime(RuntimeOptions(data_dir=tmp_path / "other", use_worker_pool=False, upstream=UpstreamConfig(MODEL)))

"""The Node.js client (clients/node, real @grpc/grpc-js + @grpc/proto-loader) against the real server.

Needs `node` on PATH (skipped otherwise). The session fixture runs `npm ci` in clients/node when
node_modules is missing, so this file is also the install step for the Node client.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from edge_server_fixtures import example_bundle, make_keys, random_static_embedder

from edge_runtime.serving.client import EdgeClient
from edge_runtime.serving.runtime import RuntimeOptions
from edge_runtime.serving.server import create_server

REPO = Path(__file__).resolve().parents[1]
NODE_DIR = REPO / "clients" / "node"
CLIENT_JS = NODE_DIR / "client.js"
NODE = shutil.which("node")
TIMEOUT_S = 60

GAS = "What is the pressure, in kPa, of 3 mol of an ideal gas at 100 degrees celsius held in a 20 litres container?"
EXAMPLE_IDS = {
    "ideal-gas-pressure", "charles-law-volume", "compound-interest-balance",
    "parcel-shipping-cost", "recipe-ingredient-scaling", "school-trip-cost",
}

pytestmark = pytest.mark.skipif(NODE is None, reason="`node` (Node.js >= 18) is not on PATH: the Node client tests need it")


@pytest.fixture(scope="session")
def node_modules() -> Path:
    """`npm ci` once per session when the dependencies are not installed (the CI install step)."""
    installed = all((NODE_DIR / "node_modules" / "@grpc" / name / "package.json").is_file()
                    for name in ("grpc-js", "proto-loader"))
    if not installed:
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("`npm` is not on PATH and clients/node/node_modules is missing: cannot install the Node client")
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR, capture_output=True, text=True, timeout=600
        )
        if done.returncode != 0:
            pytest.fail(f"npm ci failed in {NODE_DIR} (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    return NODE_DIR / "node_modules"


@pytest.fixture(scope="module")
def server(tmp_path_factory, node_modules):
    root = tmp_path_factory.mktemp("node-client")
    key, public = make_keys(root / "keys")
    embedder = random_static_embedder(root / "embedder")
    bundle = example_bundle(root / "out", key, embedder, "1")
    edge = create_server(
        RuntimeOptions(data_dir=root / "device", trusted_keys=[public], use_worker_pool=False), address="127.0.0.1:0"
    )
    try:
        with EdgeClient(f"127.0.0.1:{edge.port}", admin_socket=edge.admin_socket, timeout_s=30) as client:
            staged = client.push(bundle).staged
            client.activate(staged.bundle_id)
        yield edge
    finally:
        edge.stop(0)


def address(edge) -> str:
    return f"127.0.0.1:{edge.port}"


def node(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([NODE, *args], cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT_S)


def test_cli_fast_path_hit_matches_python_client(server):
    done = node(str(CLIENT_JS), address(server), GAS)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    with EdgeClient(address(server), timeout_s=30) as client:
        reply = client.invoke(GAS)
    assert data["outcome"] == "HIT" and data["entry_id"] == "ideal-gas-pressure"
    assert data["serving_path"] == "template" and data["bundle_name"] == "examples" and data["bundle_version"] == "1"
    assert reply.answer_json and data["answer_json"] == json.loads(reply.answer_json)  # the CLI decodes it
    assert data["parameters_json"] == json.loads(reply.parameters_json)
    assert data["parameters_json"] == {"moles": 3, "temperature": 100, "temperature_unit": "celsius", "volume": 20,
                                       "volume_unit": "litres"}
    assert data["result_json"] == json.loads(reply.result_json)
    assert [s["text"] for s in data["narration"]] == [s.text for s in reply.narration]
    assert data["timings"]["total_ms"] > 0


SCRIPT = r"""
const { connect, DEFAULT_DEADLINE_MS } = require(process.argv[2]);
const [address, question] = process.argv.slice(3);
const seen = [];
// Records the deadline each call carries (grpc-js client interceptor).
const record = (options, nextCall) => {
  seen.push({ method: options.method_definition.path, ms: options.deadline ? options.deadline - Date.now() : null });
  return nextCall(options);
};
(async () => {
  const edge = connect(address, { interceptors: [record] });
  try {
    const before = await edge.stats();
    const live = [];
    const streamed = await edge.invokeStream(question, { deadlineMs: 30000, onStep: (s) => live.push(s.text) });
    const plain = await edge.invoke(question);
    const entries = await edge.listEntries();
    const after = await edge.stats();
    process.stdout.write(JSON.stringify({ before, streamed, live, plain, entries, after, seen, DEFAULT_DEADLINE_MS }));
  } finally {
    edge.close();
  }
})().catch((err) => {
  process.stderr.write(`${err.stack || err}\n`);
  process.exit(1);
});
"""


def test_library_stream_entries_and_stats(server, tmp_path):
    script = tmp_path / "use_client.js"
    script.write_text(SCRIPT)
    done = node(str(script), str(CLIENT_JS), address(server), GAS)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    streamed = out["streamed"]
    response = streamed["response"]
    assert response["outcome"] == "HIT" and response["entry_id"] == "ideal-gas-pressure"
    assert len(streamed["steps"]) >= 4 and streamed["steps"] == response["narration"]
    assert out["live"] == [s["text"] for s in response["narration"]]
    assert out["plain"]["answer_json"] == response["answer_json"]
    assert {e["id"] for e in out["entries"]["entries"]} >= EXAMPLE_IDS
    assert out["entries"]["bundle_name"] == "examples"
    # uint64 counters arrive as strings (longs: String); the two calls are two hits.
    assert isinstance(out["after"]["hits"], str)
    assert int(out["after"]["hits"]) - int(out["before"]["hits"]) == 2
    assert int(out["after"]["invocations"]) - int(out["before"]["invocations"]) == 2
    assert out["after"]["active_bundle"] == "examples-1"
    with EdgeClient(address(server), timeout_s=30) as client:
        assert client.stats().hits == int(out["after"]["hits"])
    # Every call carried a deadline: 30 s where asked, the 10 s default elsewhere.
    methods = [s["method"] for s in out["seen"]]
    assert methods == [f"/arc.edge.v1.EdgeCache/{m}" for m in ("GetStats", "InvokeStream", "Invoke", "ListEntries", "GetStats")]
    assert out["DEFAULT_DEADLINE_MS"] == 10000
    for call in out["seen"]:
        expected = 30000 if call["method"].endswith("/InvokeStream") else 10000
        assert call["ms"] is not None and expected - 5000 < call["ms"] <= expected, call


def test_cli_empty_query_is_invalid_argument(server):
    done = node(str(CLIENT_JS), address(server), "")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "INVALID_ARGUMENT" in done.stderr and "empty" in done.stderr
    assert done.stdout == ""


def test_cli_honours_a_1ms_deadline(server):
    done = node(str(CLIENT_JS), address(server), GAS, "--deadline-ms", "1")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "DEADLINE_EXCEEDED" in done.stderr
    with EdgeClient(address(server), timeout_s=30) as client:  # and the server keeps serving
        assert client.invoke(GAS).entry_id == "ideal-gas-pressure"

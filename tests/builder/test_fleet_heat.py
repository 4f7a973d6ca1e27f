"""``arc-build heat`` and ``arc-build entries --from-heat`` (issue 23): missed questions clustered by the
bundle's routing embedding, the top classes built by the LLM builder through the real anthropic SDK against
the loopback Messages stub (the scripted answers of tests/builder/fixtures/llm_build.json), and the next
bundle serving what the devices missed."""

from __future__ import annotations

import json
import shutil

import pytest
from edge_server_fixtures import EXAMPLES, example_bundle, make_keys, random_static_embedder
from test_llm_builder import load_fixture

from builder.cli import main as arc_build
from builder.fleet.heat import embedder_from_bundle, heat_rows, rank
from builder.llm.stub_server import StubMessagesServer
from edge_runtime.serving.runtime import EdgeRuntime, RuntimeOptions

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

BUS = (
    "A school takes 230 students and 12 teachers on a trip. Each bus has 50 seats and costs $350 to hire. How much "
    "does the bus hire cost in dollars?"
)
BUS_AGAIN = (
    "A school takes 230 students and 12 teachers on a trip. Each coach has 50 seats and costs $350 to hire. How much "
    "does the bus hire cost in dollars?"
)
OUTING = "A hiking club takes 95 members on an outing. Each bus has 40 seats. How many seats are left empty?"
FENCE = (
    "A rectangular garden is 12 metres long and 5 metres wide. Fencing costs $8 per metre. How much does it cost to "
    "fence the garden in dollars?"
)
NEW_BUS = (
    "A school takes 180 students and 3 teachers on a trip. Each bus has 50 seats and costs $420 to hire. How much does "
    "the bus hire cost in dollars?"
)


def misses(questions: dict[str, int]) -> list[dict]:
    return [{"query": q, "reason": "BELOW_THRESHOLD", "entry_id": "compound-interest", "bundle": "examples-1"}
            for q, n in questions.items() for _ in range(n)]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    root = tmp_path_factory.mktemp("heat")
    key, public = make_keys(root / "keys")
    return {"path": example_bundle(root / "out", key, random_static_embedder(root / "embedder"), "1"), "key": key,
            "public": public, "root": root}


def test_heat_ranks_classes_by_misses_and_keeps_hash_only_records_apart(bundle, tmp_path):
    records = misses({BUS: 4, BUS_AGAIN: 2, OUTING: 3, FENCE: 1})
    records += [{"query_sha256": "ab" * 32, "reason": "EXTRACTION_FAILED", "entry_id": "charles-law"}] * 2
    heat = rank(records, embedder_from_bundle(bundle["path"]), similarity=0.8)
    assert [c["count"] for c in heat] == [6, 3, 2, 1]
    assert heat[0]["examples"][:2] == [BUS, BUS_AGAIN] and heat[0]["distinct"] == 2  # reworded: one class
    assert heat[1]["examples"] == [OUTING] and heat[3]["examples"] == [FENCE]
    assert heat[2]["examples"] == [] and heat[2]["nearest_entry"] == "charles-law"  # no text was shared
    assert [r["question"] for r in heat_rows(heat, 3)] == [BUS, OUTING, FENCE]


def test_from_heat_builds_the_top_classes_and_the_next_bundle_serves_them(bundle, tmp_path, monkeypatch, capsys):
    log = tmp_path / "misses.1.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in misses({BUS: 4, OUTING: 3, FENCE: 2})))
    heat_json = tmp_path / "heat.json"
    assert arc_build(["heat", str(log), "--bundle", str(bundle["path"]), "--json", str(heat_json)]) == 0
    assert "9 misses in 1 file(s)" in capsys.readouterr().out
    data = load_fixture()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-key")
    registry = tmp_path / "registry"
    with StubMessagesServer(data["script"]) as stub:
        code = arc_build(["entries", "--from-heat", str(heat_json), "--top", "3", "--registry", str(registry),
                          "--base-url", stub.base_url, "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (summary["total"], summary["accepted"]) == (3, 2)  # the fence entry fails its round trip, as scripted
    sources = tmp_path / "v2-sources"
    # the examples' school trip declares the same bus-count function the builder reused: one of the two goes
    shutil.copytree(EXAMPLES, sources, ignore=shutil.ignore_patterns("__pycache__", "school_trip.py"))
    for module in registry.glob("*.py"):
        shutil.copy(module, sources / module.name)
    v2 = example_bundle(tmp_path / "out", bundle["key"], bundle["path"].parent.parent / "embedder", "2", sources)
    runtime = EdgeRuntime(RuntimeOptions(data_dir=tmp_path / "dev", trusted_keys=[bundle["public"]],
                                         use_worker_pool=False))
    try:
        staged, missing = runtime.stage_bundle(v2.read_bytes())
        runtime.blobs.import_from_dir(v2.parent / "blobs", missing)
        runtime.activate("examples-2")
        served = {q: runtime.answer(q)[1] for q in (BUS, NEW_BUS, OUTING, FENCE)}
    finally:
        runtime.close()
    assert served[BUS].hit and served[NEW_BUS].hit and served[OUTING].hit and not served[FENCE].hit
    assert served[NEW_BUS].answer == 1680  # 183 people -> 4 buses at $420


def test_heat_refuses_a_routing_blob_that_does_not_hash_to_its_signed_name(bundle, tmp_path):
    import shutil

    from edge_runtime.bundles.bundle import BLOBS_DIR, read_bundle
    from edge_runtime.errors import BundleError

    parsed = read_bundle(bundle["path"], trusted_keys=[], allow_unsigned=True)
    blobs = tmp_path / BLOBS_DIR
    shutil.copytree(bundle["path"].parent / BLOBS_DIR, blobs)
    victim = blobs / next(iter(parsed.blobs.values()))["sha256"]
    victim.write_bytes(victim.read_bytes() + b"x")
    with pytest.raises(BundleError, match="does not hash"):
        embedder_from_bundle(bundle["path"], blobs)

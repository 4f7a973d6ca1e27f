"""``arc-build eval``: metrics arithmetic, the exact cache, answer normalisation, query sets, and one
end-to-end run on the example bundle through a real edge server (no target model: template path)."""

from __future__ import annotations

import json

import pytest

from builder.eval.answers import answers_match, as_number, decimals_written
from builder.eval.gsm_bundle import bundle_version, choose_split, reuse_split
from builder.eval.metrics import percentiles, summarise, summarise_by_kind, sweep
from builder.eval.querysets import gsm8k_entry_id, load_query_set, parse_row
from builder.eval.sets import plus_split
from builder.eval.systems import CachedQuestion, ExactCache

SYSTEMS = ("arc", "arc_guard_off", "exact_cache", "gptcache", "gptcache_t0.9")
#: GPTCache 0.1.44 calls sqlalchemy's pre-2.0 declarative_base(); not this project's warning to fix.
pytestmark = pytest.mark.filterwarnings("ignore:.*declarative_base.*")


def rec(*, served, correct=False, should=True, changed=False, unrelated=False, kind="", path="template",
        ms=1.0, reason="", covered=True):
    return {"served": served, "correct": correct, "should_serve": should, "changed": changed, "unrelated": unrelated,
            "kind": kind, "path": path if served else "", "miss_reason": "" if served else reason, "latency_ms": ms,
            "covered": covered}


# ---- metrics ---------------------------------------------------------------------------------


def test_summarise_counts_and_rates():
    records = [
        rec(served=True, correct=True, kind="a", ms=1),
        rec(served=True, correct=False, kind="a", ms=2, path="lm-draft"),
        rec(served=False, reason="extraction_failed", kind="b", ms=3, covered=False),
        rec(served=False, reason="below_threshold", kind="b", ms=4),
        rec(served=True, correct=False, should=False, changed=True, kind="c", ms=5, path="lm-draft"),
        rec(served=False, should=False, changed=True, reason="reasoning_changed", kind="c", ms=6),
        rec(served=True, correct=False, should=False, unrelated=True, kind="d", ms=7, path="lm-draft"),
        rec(served=False, should=False, unrelated=True, reason="below_threshold", kind="d", ms=8),
    ]
    s = summarise(records)
    assert (s["queries"], s["should_serve"], s["served"]) == (8, 4, 4)
    assert (s["served_right"], s["served_wrong"], s["missed"], s["coverage"]) == (1, 1, 2, 3)
    assert (s["changed"], s["changed_served"], s["unrelated"], s["unrelated_served"]) == (2, 1, 2, 1)
    assert s["rates"]["served_right"] == 0.25 and s["rates"]["served_right_of_covered"] == round(1 / 3, 4)
    assert s["rates"]["changed_served"] == 0.5 and s["rates"]["unrelated_served"] == 0.5
    assert s["miss_reasons"] == {"below_threshold": 2, "extraction_failed": 1, "reasoning_changed": 1}
    assert s["served_by_path"] == {"lm-draft": 3, "template": 1}
    assert s["latency_ms"]["p50"] == 4.5 and s["latency_ms"]["by_path"]["template"]["n"] == 1
    assert s["latency_ms"]["by_path"]["miss"]["n"] == 4
    assert s["served_by_another_entry"] == 0  # these records name no entries

    by_kind = summarise_by_kind(records)["by_kind"]
    assert sorted(by_kind) == ["a", "b", "c", "d"]
    assert by_kind["a"]["served_right"] == 1 and by_kind["a"]["served_wrong"] == 1
    assert by_kind["c"]["rates"]["served_right"] is None  # no should-serve rows: no rate, not 0
    assert by_kind["d"]["unrelated_served"] == 1


def test_rows_served_by_another_entry_are_counted():
    """A row taken for another entry's question is counted whatever its answer (the two may answer alike)."""
    records = [
        {**rec(served=True, correct=True, ms=1), "expected_entry": "e1", "entry_id": "e1"},
        {**rec(served=True, correct=False, should=False, changed=True, ms=2), "expected_entry": "e1", "entry_id": "e2"},
        {**rec(served=True, correct=True, ms=3), "expected_entry": "e3", "entry_id": "e4"},
        {**rec(served=False, reason="below_threshold", ms=4), "expected_entry": "e5", "entry_id": "e6"},
        {**rec(served=True, correct=True, ms=5), "expected_entry": None, "entry_id": "e7"},  # a row naming no entry
    ]
    assert summarise(records)["served_by_another_entry"] == 2


def test_summarise_empty_and_percentiles():
    assert summarise([])["queries"] == 0
    assert percentiles([]) == {"n": 0, "p50": None, "p95": None, "p99": None}
    p = percentiles(list(range(1, 101)))
    assert p["n"] == 100 and p["p50"] == 50.5 and 95 <= p["p95"] <= 96 and 99 <= p["p99"] <= 100


def test_sweep_counts_hits_above_each_threshold():
    points = [(0.9, True, True, True), (0.7, True, True, True), (0.6, False, True, True), (0.95, False, False, True),
              (0.8, False, True, False), (0.5, False, True, False)]
    at = {p["threshold"]: p for p in sweep(points, [0.4, 0.75, 0.85, 1.0])}
    assert at[0.4]["served_right"] == 0.5 and at[0.4]["false_hits"] == 1.0
    assert at[0.75]["served_right"] == 0.25 and at[0.75]["false_hits"] == 0.5
    assert at[0.85]["false_hits"] == 0.0
    assert at[1.0]["served_right"] == 0.0


# ---- answers, exact cache, query sets ------------------------------------------------------------


@pytest.mark.parametrize("served, expected, same", [
    (18, 18, True), (18.0, 18, True), (17.9999999999, 18, True), (18.01, 18, False),
    (1000002, 1000000, False), (1000000.5, 1000000, True),  # relative tolerance 1e-6
    (13 / 3, "4.33", True), (4.34, "4.33", False), (3.2, "3.2", True),  # a reference written with 2 decimals
    ("$1,250.50", 1250.5, True), ("25%", 25, True), (" Paris ", "paris", True), ("Paris", "Rome", False),
    (5, "None", False), (None, 5, False), (True, 1, False), ({"answer": 7}, 7, True), ("7", "seven", False),
])
def test_answer_normalisation(served, expected, same):
    assert answers_match(served, expected) is same


def test_number_reading():
    assert as_number("-$3.50") == -3.5 and as_number("1,000") == 1000 and as_number("abc") is None
    assert decimals_written("4.33") == 2 and decimals_written(4.33) == 0 and decimals_written("7") == 0


def test_exact_cache_serves_only_an_identical_question():
    cache = ExactCache([CachedQuestion("e1", "How many legs do 3 spiders have?", 24)])
    hit = cache.answer("  How many legs do 3 spiders have?\n")
    assert hit.served and hit.answer == 24 and hit.entry_id == "e1"
    for other in ("How many legs do 4 spiders have?", "how many legs do 3 spiders have?", "How many legs do three spiders have?"):
        miss = cache.answer(other)
        assert not miss.served and miss.miss_reason == "no_exact_match"


def test_query_rows_kinds_entries_and_flags(tmp_path):
    row = parse_row(0, {"query": "q", "answer": "None", "perturbation_type": "adding operation",
                        "reasoning_changed": True, "gsm8k_row": 7, "seed_answer": "3"})
    assert row.kind == "adding operation" and row.changed and not row.should_serve
    assert row.entry_id == gsm8k_entry_id(7) == "gsm8k-0007" and row.extra == {"seed_answer": "3"}
    assert parse_row(1, {"query": "q", "answer": 1, "unrelated": "true"}).unrelated
    with pytest.raises(ValueError):
        parse_row(2, {"answer": 1})
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps({"query": f"q{i}", "answer": i, "kind": "ab"[i % 2]}) + "\n" for i in range(10)))
    qs = load_query_set(path)
    assert qs.name == "mixed" and qs.kinds == ["a", "b"]
    limited = qs.limited(4)
    assert len(limited.rows) == 4 and {r.kind for r in limited.rows} == {"a", "b"}


def test_gsm8k_entry_ids_match_the_importer():
    from builder.pot_import.transcripts import Transcript

    transcript = Transcript(row=3, code="", question="", gold=None, ref_index=42)
    assert transcript.entry_id == gsm8k_entry_id(42)


def test_splits_are_deterministic_and_disjoint():
    accepted = {gsm8k_entry_id(i) for i in range(50)}
    dev = {gsm8k_entry_id(i) for i in (1, 2, 3, 99)}  # 99 is a dev row the importer rejected
    split = choose_split(accepted, dev, unrelated=20, others=10, seed=1)
    assert split == choose_split(accepted, dev, unrelated=20, others=10, seed=1)
    assert len(split.unrelated_ids) == 20 and len(split.bundle_ids) == 13
    assert not set(split.unrelated_ids) & set(split.bundle_ids) and not set(split.unrelated_ids) & dev
    assert {gsm8k_entry_id(i) for i in (1, 2, 3)} <= set(split.bundle_ids) and gsm8k_entry_id(99) not in split.bundle_ids
    with pytest.raises(ValueError):
        choose_split(accepted, dev, unrelated=100)
    tune, held_out = plus_split(range(100))
    assert len(tune) == len(held_out) == 50 and not tune & held_out and plus_split(range(100))[0] == tune


def test_a_reused_split_keeps_its_held_out_entries_and_takes_every_dev_entry_accepted_now():
    """A re-import that accepts a dev entry it rejected before measures it on its own rows (it was counted a miss of the
    bundle), and keeps the held-out questions of the saved split; an entry accepted only now that is no dev entry
    stays out of both."""
    dev = {gsm8k_entry_id(i) for i in (1, 2, 3)}
    saved = choose_split({gsm8k_entry_id(i) for i in range(2, 40)}, dev, unrelated=10, seed=2)  # 1 rejected then
    now = {gsm8k_entry_id(i) for i in range(1, 45)} - {gsm8k_entry_id(2)}  # 1 accepted now, 2 rejected now, 40-44 new
    split = reuse_split(saved, now)
    assert gsm8k_entry_id(1) in split.bundle_ids and gsm8k_entry_id(2) not in split.bundle_ids
    assert split.unrelated_ids == saved.unrelated_ids
    assert not {gsm8k_entry_id(i) for i in range(40, 45)} & (set(split.bundle_ids) | set(split.unrelated_ids))
    assert set(split.bundle_ids) == (set(saved.bundle_ids) | {gsm8k_entry_id(1)}) - {gsm8k_entry_id(2)}


def test_the_evaluation_bundle_has_a_version_a_device_accepts():
    from edge_runtime.bundles.versions import BundleVersion

    split = choose_split({gsm8k_entry_id(i) for i in range(30)}, {gsm8k_entry_id(1)}, unrelated=5, seed=0)
    versions = {bundle_version(split, model, unverified) for model in (True, False) for unverified in (True, False)}
    assert len(versions) == 4 and all(split.digest in v for v in versions)
    for version in versions:
        BundleVersion(version)  # raises BundleVersionError for a bare hash


def test_hits_are_split_by_the_serving_entrys_verification():
    records = [
        {**rec(served=True, correct=True), "verification": "verified"},
        {**rec(served=True, correct=False), "verification": "unverified"},
        {**rec(served=True, should=False, changed=True), "verification": "unverified"},
        {**rec(served=True, should=False, unrelated=True), "verification": "verified"},
        rec(served=False, reason="below_threshold"),
    ]
    by = summarise(records)["by_verification"]
    assert by == {"unverified": {"served_right": 0, "served_wrong": 1, "changed_served": 1, "unrelated_served": 0},
                  "verified": {"served_right": 1, "served_wrong": 0, "changed_served": 0, "unrelated_served": 1}}


# ---- end to end ------------------------------------------------------------------------------------

TINY = [
    {"query": "A balloon holds 3 litres of air at 20 degrees celsius. If the air goes to 80 degrees celsius at constant "
              "pressure, what is its new volume in litres?", "answer": "3.61", "kind": "reworded values"},
    {"query": "If you deposit $2000 at 4% a year compounded monthly, what is the balance after 5 years?",
     "answer": "2441.99", "kind": "reworded values"},
    {"query": "A balloon holds 2 litres of air at 20 degrees celsius. If the air goes to 80 degrees celsius at constant "
              "pressure, what is its new volume in litres?", "answer": "2.41", "kind": "original"},
    {"query": "A balloon holds 2 litres of air at 20 degrees celsius and 3 litres of helium. If the air goes to 80 degrees "
              "celsius at constant pressure, what is the total volume in litres?", "answer": "None",
     "reasoning_changed": True, "kind": "changed"},
    {"query": "Who painted the Mona Lisa?", "answer": "Leonardo da Vinci", "unrelated": True, "kind": "unrelated"},
    {"query": "What is the capital city of Australia?", "answer": "Canberra", "unrelated": True, "kind": "unrelated"},
]


@pytest.fixture(scope="module")
def eval_run(tmp_path_factory):
    from builder.cli import main
    from builder.eval.gptcache_baseline import gptcache_missing
    from tests.edge_server_fixtures import example_bundle, make_keys, random_static_embedder

    root = tmp_path_factory.mktemp("eval")
    key, _ = make_keys(root / "keys")
    bundle = example_bundle(root / "bundles", key, random_static_embedder(root / "embedder"), "1")
    queries = root / "tiny.jsonl"
    queries.write_text("".join(json.dumps(r) + "\n" for r in TINY), encoding="utf-8")
    systems = [s for s in SYSTEMS if not (s.startswith("gptcache") and gptcache_missing())]
    out = root / "out"
    code = main(["eval", "--bundle", str(bundle), "--queries", str(queries), "--json", str(out / "eval.json"),
                 "--markdown", str(out / "eval.md"), "--plots", str(out / "img"), "--speed-seconds", "0.3",
                 "--systems", ",".join(systems)])
    assert code == 0
    return out, json.loads((out / "eval.json").read_text(encoding="utf-8"))


KEYS = {"queries", "should_serve", "served_right", "served_wrong", "changed", "changed_served", "unrelated",
        "unrelated_served", "coverage", "miss_reasons", "latency_ms", "rates", "by_kind"}


def test_eval_end_to_end_writes_every_figure_for_arc_and_the_exact_cache(eval_run):
    out, report = eval_run
    tiny = report["sets"]["tiny"]
    assert tiny["queries"] == 6 and tiny["kinds"] == ["changed", "original", "reworded values", "unrelated"]
    for system in ("arc", "arc_guard_off", "exact_cache"):
        figures = tiny["systems"][system]
        assert KEYS <= set(figures), system
        assert {"p50", "p95", "p99"} <= set(figures["latency_ms"])
        assert (figures["should_serve"], figures["changed"], figures["unrelated"]) == (3, 1, 2)
    arc = tiny["systems"]["arc"]
    assert arc["served_right"] == 3 and arc["served_wrong"] == 0  # template path; answers checked to 2 decimals
    assert arc["changed_served"] == 0 and arc["unrelated_served"] == 0
    assert "template" in arc["latency_ms"]["by_path"]
    exact = tiny["systems"]["exact_cache"]
    assert exact["served_right"] == 1 and exact["by_kind"]["original"]["served_right"] == 1
    assert report["speed"]["arc"]["throughput"][0]["concurrency"] == 1
    assert report["meta"]["command"].startswith("arc-build eval --bundle")
    assert {"arc", "exact_cache"} <= set(report["meta"]["systems"])
    assert (out / "eval.records.jsonl").exists() and "| arc |" in (out / "eval.md").read_text(encoding="utf-8")
    assert sorted(p.name for p in (out / "img").glob("*.png")) == ["eval_latency.png", "eval_outcomes.png", "eval_thresholds.png"]


def test_eval_end_to_end_gptcache(eval_run):
    from builder.eval.gptcache_baseline import gptcache_missing

    reason = gptcache_missing()
    if reason:
        pytest.skip(f"GPTCache baseline not runnable here: {reason}")
    _, report = eval_run
    for system in ("gptcache", "gptcache_t0.9"):
        figures = report["sets"]["tiny"]["systems"][system]
        assert KEYS <= set(figures)
    # GPTCache returns the nearest cached question's stored answer: the stale original answer for new values.
    gpt = report["sets"]["tiny"]["systems"]["gptcache"]
    assert gpt["by_kind"]["original"]["served_right"] == 1 and gpt["served_wrong"] >= 1
    assert "gptcache" in report["sweeps"] and report["speed"]["gptcache"]["lookup_latency_ms"]["n"] == 6


def test_the_throughput_mix_keeps_every_path_and_its_head_is_no_run_of_rare_paths():
    from builder.eval.speed import mixed_hits

    records = [{"served": True, "path": "template", "query": f"t{i}"} for i in range(300)]
    records += [{"served": True, "path": f"rare-{k}", "query": f"r{k}"} for k in range(6)]  # one slow hit each
    records += [{"served": False, "path": "miss", "query": "m"}]
    mix = mixed_hits(records, limit=200)
    assert len(mix) == 200 and "m" not in mix
    assert {q for q in mix if q.startswith("r")} == {f"r{k}" for k in range(6)}  # every path is in the mix
    assert mix == mixed_hits(records, limit=200)  # the same order run after run
    assert sum(q.startswith("r") for q in mix[:30]) < 6  # not all rare ones up front, as interleaving alone put them


def test_the_baselines_reference_answers_are_computed_in_the_devices_sandbox(tmp_path, monkeypatch):
    """Entry code is untrusted even in a bundle the evaluation built: the exact cache's and GPTCache's
    reference answers come from a sandboxed worker, never from code run in the evaluating process."""
    from builder.eval.systems import cache_contents
    from edge_runtime.bundles.bundle import read_bundle
    from edge_runtime.entries import compiler
    from tests.edge_server_fixtures import example_bundle, make_keys, random_static_embedder

    key, public = make_keys(tmp_path / "keys")
    path = example_bundle(tmp_path / "bundles", key, random_static_embedder(tmp_path / "embedder"), "1")
    bundle = read_bundle(path, trusted_keys=None, allow_unsigned=True)

    def refuse(*args, **kwargs):
        raise AssertionError("entry code ran in the evaluating process")

    monkeypatch.setattr(compiler.LoadedCompiledEntry, "run", refuse)
    contents = {c.entry_id: c for c in cache_contents(bundle)}
    assert set(contents) == set(bundle.entries)
    assert contents["school-trip-cost"].answer == 4510  # the entry's answer to its own question
    assert contents["parcel-shipping-cost"].answer is None  # it asks the target model: no reference here

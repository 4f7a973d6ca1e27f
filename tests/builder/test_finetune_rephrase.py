"""The source model's rephrasings (PT1) as tuning examples, through the real anthropic SDK against the loopback stub.

The scripted answers below were written for these tests (not model output): rephrasings of the example entry
school-trip-cost, some that keep its question and values, some that do not.
"""

from __future__ import annotations

import argparse
import json
from functools import partial
from typing import Any

import pytest
from llm_script import EXAMPLE_ENTRY as ENTRY
from llm_script import EXAMPLE_ORDER as ORDER
from llm_script import NOTHING_LISTENS, assert_no_file_holds_the_key, fast_config, verdict

from builder.finetune import benchmark_queries
from builder.finetune_data import build_dataset, split_entries, target_ids
from builder.finetune_rephrase import (
    KIND,
    RephraseCache,
    Rephraser,
    added_numbers,
    cache_key,
    numbers,
    rephrase_entry,
)
from builder.llm.client import ClientConfig, LLMClient
from builder.llm.stub_server import StubMessagesServer
from edge_runtime.entries.metadata import EntryPoint, Param
from edge_runtime.read.prompt_variants import short_prompt_parts

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

API_KEY = "sk-test-rephrase-key-0123456789"
config = partial(fast_config, API_KEY)

GOOD_WORDS = ("There are two hundred and thirty students and 12 teachers from a school visiting a museum. A bus seats 50 "
              "and costs $350 to hire; a student's museum ticket is $12, and teachers go free. How many buses are "
              "needed, and what is the total cost of the trip in dollars?")
GOOD_ORDER = ("Each bus has 50 seats and costs $350 to hire. A school is taking 230 students and 12 teachers to a museum, "
              "where a ticket costs $12 per student and teachers go free. How many buses does the school need, and "
              "what does the trip cost in total, in dollars?")
CHANGED = GOOD_ORDER.replace("230 students", "240 students")
ADDED = GOOD_ORDER.replace("to a museum,", "to a museum 15 miles away,")
JUDGED = ("A school takes 230 students and 12 teachers to a museum. Each bus has 50 seats and costs $350 to hire, and "
          "a museum ticket costs $12 per person. How many buses are needed, and what is the total cost in dollars?")
MISSING = GOOD_ORDER.replace("230 students", "two hundred thirty students")


def spans(students: str = "230") -> dict[str, str]:
    return {"students": students, "teachers": "12", "seats": "50", "bus_price": "350", "ticket_price": "12"}


def item(question: str, **overrides: str) -> dict[str, Any]:
    return {"question": question, "spans": spans(**overrides)}


GOOD_SCRIPT = [
    {"role": "source", "input": {"rephrasings": [item(GOOD_WORDS, students="two hundred and thirty"), item(GOOD_ORDER)]}},
    verdict("judge-1", True, repeat=True), verdict("judge-2", True, repeat=True),
]




def judge_requests(stub: StubMessagesServer) -> list[Any]:
    return [r for r in stub.requests if r.role in ("judge-1", "judge-2")]


def rephrasing_of(request: Any) -> str:
    return request.body["messages"][0]["content"].split("Rephrasing:\n", 1)[1].split("\n\n", 1)[0]


# ---- (a) accepted rephrasings become examples with the device's target ---------------------------------
def test_rephrasings_both_judges_accept_become_examples_with_the_constraint_target(entries, tokens, tmp_path):
    entry = entries[ENTRY]
    with StubMessagesServer(GOOD_SCRIPT) as stub:
        client = LLMClient(config(stub.base_url))
        result = rephrase_entry(client, entry, 2, tokens)
    assert result.dropped == {} and result.complete
    words, order = result.examples
    assert (words.entry_id, words.question, words.kind) == (ENTRY, GOOD_WORDS, KIND)
    assert words.spans == tuple(zip(ORDER, ("two hundred and thirty", "12", "50", "350", "12")))
    assert order.question == GOOD_ORDER and order.spans == tuple(zip(ORDER, ("230", "12", "50", "350", "12")))
    # Both judges reviewed each rephrasing, each in its own request with its own role.
    reviewed = sorted((r.role, rephrasing_of(r)) for r in judge_requests(stub))
    assert reviewed == sorted((j, q) for q in (GOOD_WORDS, GOOD_ORDER) for j in ("judge-1", "judge-2"))
    source = [r for r in stub.requests if r.role == "source"]
    assert len(source) == 1 and entry.question in source[0].raw and "record_rephrasings" in source[0].tools

    # In the data set: the same checks and target as every other example, in the digest, on the entry's side of the split.
    ids = sorted(entries)
    seeds = {side: next(s for s in range(100) if (ENTRY in split_entries(ids, 0.2, s)[1]) == (side == "held"))
             for side in ("train", "held")}
    settings: dict[str, Any] = {"renderings": 1, "rewordings": 1, "forbidden": benchmark_queries(entries),
                                "max_tokens": 2000}  # the tiny tokenizer spends many tokens on a question
    for side, seed in seeds.items():
        plain = build_dataset(entries, tokens, seed=seed, **settings)
        data = build_dataset(entries, tokens, seed=seed, extra_examples={ENTRY: result.examples}, **settings)
        trained = [(e, row) for e, row in zip(data.train, data.rows) if e.kind == KIND]
        held = [(e, row) for e, row in zip(data.held_out, data.held_out_rows) if e.kind == KIND]
        mine, other = (trained, held) if side == "train" else (held, trained)
        assert [e for e, _ in mine] == result.examples and other == []
        for example, (prompt, target) in mine:
            prefix, suffix = short_prompt_parts(entry, example.question)
            assert prompt == tokens.encode(prefix) + tokens.encode(suffix)
            assert target == target_ids(tokens, entry, example.question, dict(example.spans))
        assert (data.digest != plain.digest) == (side == "train")  # the digest covers the training rows


# ---- (b) what is dropped, and why -------------------------------------------------------------------
def test_changed_values_added_numbers_and_a_judge_rejection_are_dropped_with_their_reasons(entries, tokens):
    entry = entries[ENTRY]
    script = [
        {"role": "source", "input": {"rephrasings": [
            item(CHANGED, students="240"), item(ADDED), item(JUDGED), item(MISSING), item(entry.question),
            item(GOOD_ORDER), item(GOOD_ORDER)]}},
        verdict("judge-1", True, repeat=True),
        verdict("judge-2", False, match="per person", reason="teachers now pay for their tickets"),
        verdict("judge-2", True, repeat=True),
    ]
    with StubMessagesServer(script) as stub:
        result = rephrase_entry(LLMClient(config(stub.base_url)), entry, 7, tokens)
    reasons = [(d.question, d.reason, d.detail) for d in result.decisions]
    assert reasons == [
        (CHANGED, "a span reads as another value", "students=240"),
        (ADDED, "states a number the original does not", "15"),
        (JUDGED, "rejected by judge-2", "teachers now pay for their tickets"),
        (MISSING, "a span the rephrasing does not state", "students"),
        (entry.question, "identical to the original", ""),
        (GOOD_ORDER, None, ""),
        (GOOD_ORDER, "a duplicate", ""),
    ]
    assert [e.question for e in result.examples] == [GOOD_ORDER]
    assert result.dropped == {"a span reads as another value": 1, "states a number the original does not": 1,
                              "rejected by judge-2": 1, "a span the rephrasing does not state": 1,
                              "identical to the original": 1, "a duplicate": 1}
    # The mechanical checks come first: only the two that passed them were sent to the judges.
    assert sorted({rephrasing_of(r) for r in judge_requests(stub)}) == sorted([JUDGED, GOOD_ORDER])
    assert len(judge_requests(stub)) == 4


def test_an_evaluation_query_is_dropped_and_a_failed_source_call_is_not_cached(entries, tokens, tmp_path):
    entry = entries[ENTRY]
    with StubMessagesServer(GOOD_SCRIPT) as stub:
        result = rephrase_entry(LLMClient(config(stub.base_url)), entry, 2, tokens, forbidden={GOOD_ORDER.lower()})
    assert [d.reason for d in result.decisions] == [None, "an evaluation query"]
    with StubMessagesServer([{"role": "source", "text": "no tool", "repeat": True}]) as stub:
        rephraser = Rephraser(LLMClient(config(stub.base_url, answer_retries=1)), tmp_path / "cache.jsonl", 2)
        report = rephraser.run({ENTRY: entry}, tokens, progress=lambda m: None)
    assert report.dropped == {"the source model gave no valid answer": 1} and report.examples == {ENTRY: []}
    assert not (tmp_path / "cache.jsonl").exists()  # the next run asks again


# ---- (c) the cache ---------------------------------------------------------------------------------
def test_a_cache_file_cut_by_a_crash_or_edited_by_hand_is_read_around_its_bad_lines(tmp_path):
    """A line cut mid-write, a line that is not an object, an object without a key: skipped (their requests are asked
    again), never a crash; the good lines still answer."""
    from builder.finetune_misslog import LabelCache

    path = tmp_path / "cache.jsonl"
    path.write_text('{"key": "a", "asked": 4, "kept": [], "dropped": {}}\n[1, 2]\n{"no": "key"}\n\n{"key": "b", "ask',
                    encoding="utf-8")
    for cache in (RephraseCache(path), LabelCache(path)):
        assert list(cache.rows) == ["a"]
    RephraseCache(path).append({"key": "c", "asked": 1, "kept": [], "dropped": {}})
    assert sorted(RephraseCache(path).rows) == ["a", "c"]  # an append after a cut line is read again


def test_a_second_run_reads_the_cache_and_sends_no_request(entries, tokens, tmp_path):
    entry = entries[ENTRY]
    cache = tmp_path / "work" / "rephrasings.jsonl"
    with StubMessagesServer(GOOD_SCRIPT) as stub:
        first = Rephraser(LLMClient(config(stub.base_url)), cache, 2).run({ENTRY: entry}, tokens, progress=lambda m: None)
        sent = len(stub.requests)
        assert sent == 5 and first.asked == 1
        second = Rephraser(LLMClient(config(stub.base_url)), cache, 2).run({ENTRY: entry}, tokens, progress=lambda m: None)
        assert len(stub.requests) == sent  # nothing sent
    assert second.cached == 1 and second.asked == 0
    assert second.examples == first.examples and len(first.examples[ENTRY]) == 2
    # Without a key (no client) the cached rephrasings are still used; fewer asked for: the first ones.
    keyless = Rephraser(None, cache, 1).run({ENTRY: entry}, tokens, progress=lambda m: None)
    assert keyless.examples == {ENTRY: first.examples[ENTRY][:1]}
    rows = [json.loads(line) for line in cache.read_text().splitlines()]
    assert [r["key"] for r in rows] == [cache_key(entry)] and cache_key(entry).startswith(f"{ENTRY}:")
    # Another question or another original value is another key: not served from this cache.
    import dataclasses

    moved = dataclasses.replace(entry, question=entry.question.replace("230", "231"))
    assert RephraseCache(cache).get(moved, 1) is None and RephraseCache(cache).get(entry, 3) is None
    assert Rephraser(None, cache, 2).run({ENTRY: moved}, tokens, progress=lambda m: None).without_client == 1


# ---- (d) record, then replay without HTTP; (e) the key is written nowhere -----------------------------------
@pytest.fixture(scope="module")
def recorded(entries, tokens, tmp_path_factory):
    root = tmp_path_factory.mktemp("rephrase-record")
    with StubMessagesServer(GOOD_SCRIPT) as stub:
        client = LLMClient(config(stub.base_url, record=root / "cassette.jsonl"))
        report = Rephraser(client, root / "cache.jsonl", 2).run({ENTRY: entries[ENTRY]}, tokens, progress=lambda m: None)
        client.close()
    return root, stub, report, client


def test_a_recorded_cassette_replays_without_http(recorded, entries, tokens, tmp_path):
    root, stub, report, recording = recorded
    assert len(report.examples[ENTRY]) == 2
    client = LLMClient(ClientConfig(base_url=NOTHING_LISTENS, replay=root / "cassette.jsonl"))
    again = Rephraser(client, tmp_path / "fresh-cache.jsonl", 2).run({ENTRY: entries[ENTRY]}, tokens,
                                                                      progress=lambda m: None)
    assert again.asked == 1 and again.cached == 0  # not the cache: the cassette answered
    assert client.http_calls == 0
    assert again.examples == report.examples
    assert client.meter.usd == pytest.approx(recording.meter.usd) and set(client.meter.as_dict()) == {"source", "judge"}


def test_the_key_is_in_no_cache_file_and_no_cassette(recorded):
    root, stub, _, _ = recorded
    assert_no_file_holds_the_key(root, stub, API_KEY)


# ---- small parts ---------------------------------------------------------------------------------------
def test_numbers_in_digits_and_words():
    assert numbers("$1,250 at 2.5% for 3/4 of a year, twenty-three days, three hundred and five cups") == [
        1250, 2.5, 0.75, 23, 305]
    assert numbers("each one of a dozen boxes, half of them") == [12, 0.5]  # a lone "one" is no quantity
    assert added_numbers("Buy 3 apples at $2.", "Buy three apples at $2 each, 15 of them.", ["three", "2"]) == [15]
    assert added_numbers("Save 5% for 15 years.", "For 15 years, save 5%.", ["5", "15"]) == []
    # a span accounts for one statement of its number: a second "5" is another number
    assert added_numbers("Buy {n} pens.", "Buy 5 pens, then 5 more.", ["5"]) == [5]


def test_a_missed_question_may_not_state_the_entrys_original_values_again():
    """A missed question has values of its own: a number equal to one of the entry's original values is no longer
    explained by the entry's question (only its template's constants are)."""
    from builder.finetune_rephrase import mechanical_problem

    entry = EntryPoint(id="pens", description="d", root="r", answer_key="answer",
                       template="Sam buys {packs} packs of pens. Each pack has {per} pens. How many pens does he have?",
                       question="Sam buys 2 packs of pens. Each pack has 4 pens. How many pens does he have?",
                       params=(Param("packs", "packs", int, 2, minimum=0), Param("per", "pens a pack", int, 4, minimum=0)))
    question = "Sam buys 5 packs of pens. Each pack has 6 pens. He gives 2 pens to Ann. How many pens does he have?"
    problem = mechanical_problem(entry, question, {"packs": "5", "per": "6"}, None, original_values=False)
    assert problem is not None and problem[0] == "states a number the original does not" and problem[1] == "2"


def test_the_cli_asks_only_with_a_key_and_never_prints_it(monkeypatch, capsys, tmp_path):
    from builder.cli import _rephraser

    args = argparse.Namespace(rephrasings=0, rephrase_limit=3, work=tmp_path, base_url=None, record=None, replay=None,
                              model_source=None, model_judge=None)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert _rephraser(args) is None  # off by default
    args.rephrasings = 2
    keyless = _rephraser(args)
    assert keyless.client is None and keyless.cache == tmp_path / "rephrasings.jsonl"  # the cache alone
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    args.rephrasings, args.model_judge = 0, "judge-model"
    assert _rephraser(args) is None  # a key alone never spends money
    args.rephrasings = 4
    keyed = _rephraser(args)
    assert keyed.client is not None and (keyed.per_entry, keyed.limit) == (4, 3)
    assert keyed.client.config.judge_models == ("judge-model", "judge-model")
    assert API_KEY not in capsys.readouterr().err

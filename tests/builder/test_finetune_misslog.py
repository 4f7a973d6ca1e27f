"""Labelled miss-log rows as tuning examples, through the real anthropic SDK against the loopback stub.

The missed questions and the scripted answers below were written for these tests (not device or model output):
questions of the example entry school-trip-cost's class with other values, and some it does not answer.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from llm_script import EXAMPLE_ENTRY as ENTRY
from llm_script import EXAMPLE_ORDER as ORDER
from llm_script import NOTHING_LISTENS, assert_no_file_holds_the_key, fast_config
from llm_script import verdict as script_verdict

from builder.finetune import benchmark_queries, extra_rows, prepare_dataset
from builder.finetune_data import build_dataset, normalise, split_entries, target_ids
from builder.finetune_misslog import (
    EVALUATION,
    KIND,
    NO_TEXT,
    NOT_ASKED,
    LabelCache,
    MissedQuestion,
    MissLogLabeller,
    cache_key,
    candidates,
    label_question,
    missed_questions,
)
from builder.finetune_rephrase import NO_VERDICT
from builder.llm.client import ClientConfig, LLMClient
from builder.llm.stub_server import StubMessagesServer
from edge_runtime.read.prompt_variants import short_prompt_parts

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

API_KEY = "sk-test-misslog-key-9876543210"
config = partial(fast_config, API_KEY)
verdict = partial(script_verdict, reason="same reasoning, same values")

MISSED = ("Our school sends 180 pupils and 9 teachers to the museum. A coach seats 40 and costs $300 to hire; a pupil's "
          "ticket is $10, teachers go free. How many coaches do we need, and what is the total cost in dollars?")
CHANGED = MISSED.replace("teachers go free", "teachers pay $5")  # a value the entry fixes (teachers free) changed
REJECTED = ("A school takes 180 students and 9 teachers to a museum. Each bus has 40 seats and costs $300 to hire, and "
            "every museum ticket costs $10, teachers included. How many buses are needed, and what is the total cost?")
UNANSWERED = "A school takes 230 students to a museum with one teacher for every 20 students. How many teachers go?"
EVALUATED = MISSED.replace("180 pupils", "260 pupils")  # stands for a query of an evaluation set
SPANS = {"students": "180", "teachers": "9", "seats": "40", "bus_price": "300", "ticket_price": "10"}


def record(question: str | None, entry_id: str = ENTRY) -> dict[str, Any]:
    """A miss as the device logs it (``edge_runtime/serving/runtime.py``), or as a redacted upload carries it."""
    out: dict[str, Any] = {"ts": 1.0, "reason": "below_threshold", "entry_id": entry_id, "similarity": 0.61,
                           "bundle": "examples-1", "query_sha256": "0" * 64}
    if question is not None:
        out.update(query=question, detail="")
    return out


def write_log(path: Path, questions: list[str | None]) -> Path:
    path.write_text("".join(json.dumps(record(q)) + "\n" for q in questions), encoding="utf-8")
    return path


def source(question_part: str, entry_id: str = ENTRY, spans: dict[str, str] | None = None,
           reason: str = "the same question with other values") -> dict[str, Any]:
    answer: dict[str, Any] = {"entry_id": entry_id, "reason": reason}
    if entry_id != "none":
        answer["spans"] = dict(spans or SPANS)
    return {"role": "source", "match": question_part, "input": answer}


YES = [verdict("judge-1", True, repeat=True), verdict("judge-2", True, repeat=True)]
GOOD_SCRIPT = [source("go free. How many coaches"), *YES]
MIXED_SCRIPT = [
    source("teachers pay $5"),
    source("go free. How many coaches"),
    source("teachers included"),
    source("one teacher for every 20", "none", reason="asks for a number of teachers, which the entry does not compute"),
    verdict("judge-1", True, repeat=True),
    verdict("judge-2", False, match="teachers included", reason="teachers pay for their tickets here"),
    verdict("judge-2", True, repeat=True),
]
MIXED_LOG = [MISSED, None, CHANGED, MISSED, REJECTED, EVALUATED, UNANSWERED, None, MISSED]
FORBIDDEN = frozenset({normalise(EVALUATED)})




def question_in(request: Any, after: str) -> str:
    return request.body["messages"][0]["content"].split(after, 1)[1].split("\n\n", 1)[0]


def quiet(_message: str) -> None:
    return None


# ---- (a) a missed paraphrase labelled for the right entry becomes an example ------------------------------
def test_a_missed_paraphrase_becomes_an_example_of_its_entry_with_the_constraint_target(entries, tokens, tmp_path):
    entry = entries[ENTRY]
    options = candidates(MissedQuestion(MISSED, 1, ENTRY), entries)
    with StubMessagesServer(GOOD_SCRIPT) as stub:
        label = label_question(LLMClient(config(stub.base_url)), MISSED, options, tokens)
    assert (label.entry_id, label.reason, label.spans) == (ENTRY, None, SPANS)
    example = label.example(entries)
    assert (example.entry_id, example.question, example.kind) == (ENTRY, MISSED, KIND)
    assert example.spans == tuple((name, SPANS[name]) for name in ORDER)
    # One source request naming every candidate; then each judge once, shown the entry run on the labelled values.
    sent = [r for r in stub.requests if r.role == "source"]
    assert len(sent) == 1 and "record_label" in sent[0].tools and question_in(sent[0], "Question:\n") == MISSED
    assert all(f"id: {e.id}" in sent[0].body["messages"][0]["content"] for e in options)
    judged = sorted((r.role, question_in(r, "New question:\n")) for r in stub.requests if r.role != "source")
    assert judged == [("judge-1", MISSED), ("judge-2", MISSED)]
    rendered = entry.template.format(**SPANS)
    assert all(question_in(r, "labelled values:\n") == rendered for r in stub.requests if r.role != "source")

    # In the data set: the device's target, on the entry's side of the split (as the rephrasings are).
    ids = sorted(entries)
    seeds = {side: next(s for s in range(100) if (ENTRY in split_entries(ids, 0.2, s)[1]) == (side == "held"))
             for side in ("train", "held")}
    settings: dict[str, Any] = {"renderings": 1, "rewordings": 1, "forbidden": benchmark_queries(entries),
                                "max_tokens": 2000}
    for side, seed in seeds.items():
        data = build_dataset(entries, tokens, seed=seed, extra_examples={ENTRY: [example]}, **settings)
        trained = [(e, row) for e, row in zip(data.train, data.rows) if e.kind == KIND]
        held = [(e, row) for e, row in zip(data.held_out, data.held_out_rows) if e.kind == KIND]
        mine, other = (trained, held) if side == "train" else (held, trained)
        assert [e for e, _ in mine] == [example] and other == []
        (_, (prompt, target)), = mine
        prefix, suffix = short_prompt_parts(entry, MISSED)
        assert prompt == tokens.encode(prefix) + tokens.encode(suffix)
        assert target == target_ids(tokens, entry, MISSED, SPANS)
        assert extra_rows(data)["miss_log"] == ({"train": 1, "held_out": 0} if side == "train"
                                                else {"train": 0, "held_out": 1})


def test_the_candidates_are_the_nearest_entry_then_the_closest_templates(entries):
    assert [e.id for e in candidates(MissedQuestion(MISSED, 1, "charles-law-volume"), entries)][:2] == [
        "charles-law-volume", ENTRY]  # the device's nearest first, whatever its overlap
    for nearest in ("", "an-entry-the-registry-does-not-hold"):
        found = candidates(MissedQuestion(MISSED, 1, nearest), entries)
        assert found[0].id == ENTRY and len(found) == 3
    # An entry whose own question is an evaluation query is never trained on: never a candidate.
    assert ENTRY not in [e.id for e in candidates(MissedQuestion(MISSED, 1, ENTRY), entries,
                                                  {normalise(entries[ENTRY].question)})]


# ---- (b) what is dropped or skipped, and why ------------------------------------------------------------
def test_none_a_judge_rejection_and_a_changed_value_are_dropped_and_redacted_and_evaluation_rows_skipped(
        entries, tokens, tmp_path):
    log = write_log(tmp_path / "misses.1.jsonl", MIXED_LOG)
    with StubMessagesServer(MIXED_SCRIPT) as stub:
        labeller = MissLogLabeller(LLMClient(config(stub.base_url)), tmp_path / "labels.jsonl", [log])
        report = labeller.run(entries, tokens, FORBIDDEN, progress=quiet)
    assert report.examples == {ENTRY: [label_question_example(MISSED)]}
    assert report.dropped == {NOT_ASKED: 1, "rejected by judge-2": 1, "states a number the original does not": 1}
    assert report.skipped == {NO_TEXT: 2, EVALUATION: 1}
    assert (report.questions, report.asked, report.cached) == (4, 4, 0)
    # Distinct questions, each asked once; the evaluation query never sent; the mechanical checks before the judges.
    sent = [question_in(r, "Question:\n") for r in stub.requests if r.role == "source"]
    assert sorted(sent) == sorted([MISSED, CHANGED, REJECTED, UNANSWERED]) and not stub.unused()
    assert sent[0] == MISSED  # the most missed first
    assert all(EVALUATED not in r.raw for r in stub.requests)
    judged = sorted({question_in(r, "New question:\n") for r in stub.requests if r.role != "source"})
    assert judged == sorted([MISSED, REJECTED])
    labels = {row["question"]: row for row in LabelCache(tmp_path / "labels.jsonl").rows.values()}
    assert labels[CHANGED]["detail"] == "5" and labels[UNANSWERED]["entry_id"] is None
    assert labels[REJECTED]["detail"] == "teachers pay for their tickets here"
    assert report.usd.keys() == {"source", "judge"} and report.usd["source"] > 0


def label_question_example(question: str) -> Any:
    from builder.finetune_data import Example

    return Example(ENTRY, question, tuple((name, SPANS[name]) for name in ORDER), KIND)


def test_missed_questions_dedupe_count_and_limit(tmp_path, entries, tokens):
    from builder.fleet.heat import read_misslogs

    questions, skipped = missed_questions(read_misslogs([write_log(tmp_path / "m.jsonl", MIXED_LOG)]), FORBIDDEN)
    assert [(q.question, q.count, q.nearest) for q in questions] == [
        (MISSED, 3, ENTRY), (CHANGED, 1, ENTRY), (REJECTED, 1, ENTRY), (UNANSWERED, 1, ENTRY)]
    assert skipped == {NO_TEXT: 2, EVALUATION: 1}
    with StubMessagesServer(GOOD_SCRIPT) as stub:  # --miss-log-limit 1: only the most missed question is asked
        report = MissLogLabeller(LLMClient(config(stub.base_url)), tmp_path / "c.jsonl", [tmp_path / "m.jsonl"],
                                 limit=1).run(entries, tokens, FORBIDDEN, progress=quiet)
    assert report.questions == 1 and report.kept == 1 and len([r for r in stub.requests if r.role == "source"]) == 1


def test_a_failed_source_call_or_judge_call_is_dropped_and_not_cached(entries, tokens, tmp_path):
    log = write_log(tmp_path / "m.jsonl", [MISSED])
    no_tool = {"text": "no tool", "repeat": True}
    for script, reason in (([{"role": "source", **no_tool}], "the source model gave no valid answer"),
                           ([source("go free. How many coaches"), YES[0], {"role": "judge-2", **no_tool}], NO_VERDICT)):
        with StubMessagesServer(script) as stub:
            client = LLMClient(config(stub.base_url, answer_retries=1))
            report = MissLogLabeller(client, tmp_path / "labels.jsonl", [log]).run(entries, tokens, progress=quiet)
        assert report.dropped == {reason: 1} and report.examples == {}
        assert not (tmp_path / "labels.jsonl").exists()  # the next run asks again


# ---- (c) the cache ---------------------------------------------------------------------------------------
def test_a_second_run_asks_nothing_and_a_keyless_run_uses_the_cache(entries, tokens, tmp_path):
    log = write_log(tmp_path / "misses.1.jsonl", MIXED_LOG)
    cache = tmp_path / "work" / "misslog_labels.jsonl"
    with StubMessagesServer(MIXED_SCRIPT) as stub:
        first = MissLogLabeller(LLMClient(config(stub.base_url)), cache, [log]).run(entries, tokens, FORBIDDEN, quiet)
        sent = len(stub.requests)
        second = MissLogLabeller(LLMClient(config(stub.base_url)), cache, [log]).run(entries, tokens, FORBIDDEN, quiet)
        assert len(stub.requests) == sent == 4 + 2 * 2  # nothing sent the second time
    assert (second.asked, second.cached) == (0, 4)
    assert (second.examples, second.dropped, second.skipped) == (first.examples, first.dropped, first.skipped)
    keyless = MissLogLabeller(None, cache, [log]).run(entries, tokens, FORBIDDEN, quiet)
    assert (keyless.examples, keyless.dropped, keyless.cached) == (first.examples, first.dropped, 4)
    # Another candidate entry (its question changed) is another key: not served from this cache, and not askable.
    moved = {**entries, ENTRY: dataclasses.replace(entries[ENTRY], question=entries[ENTRY].question.replace("230", "231"))}
    assert MissLogLabeller(None, cache, [log]).run(moved, tokens, FORBIDDEN, quiet).without_client == 4
    options = candidates(MissedQuestion(MISSED, 1, ENTRY), entries)
    assert cache_key(MISSED, options) == cache_key("  " + MISSED.upper(), options)  # the normalised question
    assert cache_key(MISSED, options) != cache_key(MISSED, options[:2])


# ---- (d) record, then replay without HTTP; (e) the key is written nowhere -----------------------------------
@pytest.fixture(scope="module")
def recorded(entries, tokens, tmp_path_factory):
    root = tmp_path_factory.mktemp("misslog-record")
    log = write_log(root / "misses.1.jsonl", MIXED_LOG)
    with StubMessagesServer(MIXED_SCRIPT) as stub:
        client = LLMClient(config(stub.base_url, record=root / "cassette.jsonl"))
        report = MissLogLabeller(client, root / "cache.jsonl", [log]).run(entries, tokens, FORBIDDEN, quiet)
        client.close()
    return root, stub, report, client


def test_a_recorded_cassette_replays_without_http(recorded, entries, tokens, tmp_path):
    root, _, report, recording = recorded
    client = LLMClient(ClientConfig(base_url=NOTHING_LISTENS, replay=root / "cassette.jsonl"))
    again = MissLogLabeller(client, tmp_path / "fresh.jsonl", [root / "misses.1.jsonl"]).run(entries, tokens, FORBIDDEN,
                                                                                             quiet)
    assert (again.asked, again.cached, client.http_calls) == (4, 0, 0)  # the cassette answered, not the cache
    assert (again.examples, again.dropped) == (report.examples, report.dropped) and again.kept == 1
    assert client.meter.usd == pytest.approx(recording.meter.usd) and again.usd == report.usd


def test_the_key_is_in_no_cache_file_and_no_cassette(recorded):
    root, stub, _, _ = recorded
    assert_no_file_holds_the_key(root, stub, API_KEY)


# ---- (f) the training set and the command line -------------------------------------------------------------
def test_prepare_dataset_adds_the_labelled_rows_and_counts_what_was_dropped(recorded, entries, tokens, tmp_path):
    root, _, _, _ = recorded
    labeller = MissLogLabeller(None, root / "cache.jsonl", [root / "misses.1.jsonl"])  # no key: the cache alone
    seed = next(s for s in range(100) if ENTRY in split_entries(sorted(entries), 0.2, s)[0])
    evaluation = tmp_path / "build" / "ev" / "sets"
    evaluation.mkdir(parents=True)
    (evaluation / "q.jsonl").write_text(json.dumps({"query": EVALUATED}) + "\n")
    data = prepare_dataset(entries, tokens, seed=seed, build_dir=tmp_path / "build", gsm_examples=(0, 0),
                           misslog=labeller, progress=quiet)
    assert [e for e in data.train if e.kind == KIND] == [label_question_example(MISSED)]
    assert extra_rows(data) == {"source_rephrasings": {"train": 0, "held_out": 0}, "miss_log": {"train": 1, "held_out": 0}}
    assert {k: v for k, v in data.dropped.items() if k.startswith("miss log: ")} == {
        f"miss log: {NOT_ASKED}": 1, "miss log: rejected by judge-2": 1,
        "miss log: states a number the original does not": 1, f"miss log: {NO_TEXT}": 2, f"miss log: {EVALUATION}": 1}
    plain = prepare_dataset(entries, tokens, seed=seed, build_dir=tmp_path / "build", gsm_examples=(0, 0), progress=quiet)
    assert plain.digest != data.digest  # the labelled row is in the digest


def test_the_cli_labels_only_with_a_miss_log_asks_only_with_a_key_and_never_prints_it(monkeypatch, capsys, tmp_path):
    from builder import cli

    monkeypatch.chdir(tmp_path)
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_text('{"query": "How many pens?"}\n[1, 2]\nnot json\n', encoding="utf-8")
    args = argparse.Namespace(miss_log=None, miss_log_limit=None, work=tmp_path, base_url=None, record=None, replay=None,
                              model_source=None, model_judge=None)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert cli._misslog_labeller(args) is None  # off by default
    args.miss_log = [tmp_path / "a.jsonl"]
    keyless = cli._misslog_labeller(args)
    assert keyless.client is None and keyless.cache == tmp_path / "misslog_labels.jsonl"
    assert len(keyless.records) == 2 and keyless.unreadable == 1  # "not json" is counted, not a crash
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    args.miss_log = None
    assert cli._misslog_labeller(args) is None  # a key alone never spends money

    seen: dict[str, Any] = {}

    def finetune(registries: Any, **kwargs: Any) -> Path:
        seen.update(kwargs)
        return tmp_path / "artefact"

    monkeypatch.setattr("builder.finetune.finetune", finetune)
    assert cli.main(["finetune", "--registry", str(tmp_path), "--work", str(tmp_path), "--rephrasings", "2",
                     "--miss-log", "a.jsonl", "--miss-log", "b.jsonl", "--miss-log-limit", "5"]) == 0
    misslog, rephraser = seen["misslog"], seen["rephraser"]
    assert (misslog.paths, misslog.limit, misslog.cache) == ([Path("a.jsonl"), Path("b.jsonl")], 5,
                                                             tmp_path / "misslog_labels.jsonl")
    assert misslog.client is not None and misslog.client is rephraser.client  # one client: one meter, one cassette
    seen.clear()
    assert cli.main(["finetune", "--registry", str(tmp_path), "--work", str(tmp_path)]) == 0
    assert seen["misslog"] is None and seen["rephraser"] is None
    seen.clear()  # a missing miss log fails before anything is asked or trained
    assert cli.main(["finetune", "--registry", str(tmp_path), "--work", str(tmp_path), "--miss-log", "gone.jsonl"]) == 2
    assert not seen
    assert API_KEY not in capsys.readouterr().err

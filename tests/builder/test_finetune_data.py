"""The tuned reader's training set: targets the device's constraint accepts, no evaluation rows, a stable digest."""

from __future__ import annotations

import json
import random

import pytest

from builder.finetune import benchmark_queries
from builder.finetune_data import (
    build_dataset,
    check,
    entry_examples,
    evaluation_queries,
    normalise,
    split_entries,
)
from builder.finetune_rewording import TRANSFORMS, number_words, reword
from edge_runtime.read.extractor import _slot_spec, validate_spans
from edge_runtime.read.json_constraint import JsonSlotsConstraint
from edge_runtime.read.prompt_variants import short_prompt_parts


@pytest.fixture(scope="module")
def data(entries, tokens):
    return build_dataset(entries, tokens, seed=3, renderings=6, rewordings=12, held_out_fraction=0.2,
                         forbidden=benchmark_queries(entries))


def test_number_words() -> None:
    assert [number_words(n) for n in (0, 7, 20, 23, 100, 305, 999)] == [
        "zero", "seven", "twenty", "twenty-three", "one hundred", "three hundred and five",
        "nine hundred and ninety-nine"]


def test_rewordings_keep_every_slot(entries) -> None:
    rng = random.Random(0)
    for entry in entries.values():
        for _ in range(20):
            template, applied = reword(entry.template, rng)
            assert set(applied) <= set(TRANSFORMS)
            spans = {p.name: p.text(p.original) for p in entry.params}
            question = template.format(**spans)  # every slot still there, no stray brace
            for span in spans.values():
                assert span in question


def test_every_target_is_what_the_constraint_decodes(data, entries, tokens) -> None:
    assert data.rows and data.held_out_rows
    kinds = {e.kind.split(":")[0] for e in data.train}
    assert kinds == {"original", "rendering", "reworded"}
    for example, (prompt, target) in zip(data.train, data.rows):
        entry = entries[example.entry_id]
        spans = dict(example.spans)
        prefix, suffix = short_prompt_parts(entry, example.question)
        assert prompt == tokens.encode(prefix) + tokens.encode(suffix)
        # Replay the target through a fresh machine as the device's verifying pass does: every forced token
        # matches, every decided token is allowed, and the machine ends with exactly these spans.
        machine = JsonSlotsConstraint(tokens, [_slot_spec(p, example.question) for p in entry.params],
                                      example.question.strip())
        position = 0
        while not machine.done:
            for token in machine.forced():
                assert target[position] == token
                position += 1
            if machine.done:
                break
            assert target[position] in machine.allowed()
            machine.advance(target[position])
            position += 1
        assert position == len(target)
        assert machine.result() == spans
        values = validate_spans(entry, spans)  # the device's own reading of the spans
        assert set(values) == {p.name for p in entry.params}


def test_a_span_the_question_does_not_state_whole_is_refused(entries, tokens) -> None:
    entry = entries["school-trip-cost"]
    example = entry_examples(entry, random.Random(1), 1, 0)[0]
    spans = dict(example.spans)
    spans["students"] = spans["students"][:-1] or "1"  # "23" of "230": not a number the question states
    bad = type(example)(example.entry_id, example.question, tuple(spans.items()), example.kind)
    assert check(entry, bad, tokens) is not None
    assert check(entry, example, tokens) is None


def test_no_evaluation_row_is_trained_on(entries, tokens, tmp_path) -> None:
    benchmark = benchmark_queries(entries)
    assert len(benchmark) > 100
    first = build_dataset(entries, tokens, seed=3, renderings=6, rewordings=12, forbidden=benchmark)
    leaked = {normalise(e.question) for e in first.train} & benchmark
    assert not leaked
    # A query set that happens to hold a training question takes it out of the training set.
    victim = first.train[5].question
    sets = tmp_path / "run" / "sets"
    sets.mkdir(parents=True)
    (sets / "dev.jsonl").write_text(json.dumps({"query": victim, "answer": "1"}) + "\n")
    forbidden = benchmark | evaluation_queries([sets])
    second = build_dataset(entries, tokens, seed=3, renderings=6, rewordings=12, forbidden=forbidden)
    assert victim not in {e.question for e in second.train}
    assert second.dropped.get("an evaluation query", 0) >= 1
    # An entry whose own question is an evaluation query is left out whole.
    entry = entries["parcel-shipping-cost"]
    third = build_dataset(entries, tokens, seed=3, renderings=6, rewordings=12,
                          forbidden=forbidden | {normalise(entry.question)})
    assert entry.id not in third.train_entries + third.held_out_entries


def test_digest_is_deterministic_and_split_held_out(entries, tokens, data) -> None:
    again = build_dataset(entries, tokens, seed=3, renderings=6, rewordings=12, held_out_fraction=0.2,
                          forbidden=benchmark_queries(entries))
    assert again.digest == data.digest and again.rows == data.rows
    other = build_dataset(entries, tokens, seed=4, renderings=6, rewordings=12, forbidden=benchmark_queries(entries))
    assert other.digest != data.digest
    assert data.held_out_entries and not set(data.held_out_entries) & {e.entry_id for e in data.train}
    assert {e.entry_id for e in data.held_out} <= set(data.held_out_entries)
    train, held = split_entries([f"e{i}" for i in range(20)], 0.25, 0)
    assert len(held) == 5 and not set(train) & set(held)

"""The added-clause generator writes changed-reasoning variants a cache must not serve, and controls it must."""

from __future__ import annotations

import random

from builder.eval.added_clause import ADDED, MARKED, RESTATED, generate, half_of, stated_numbers

ROW = {"query": "Alex picks 148 grapes on Wednesday. Then he picks 91 grapes on Thursday. On Friday, he picks five "
                "times the number of grapes he did on Wednesday. How many grapes does Alex have?",
       "answer": 979, "gsm8k_row": 1, "template_id": 3, "instance": 0, "bindings": {"n": "Alex"}}


def test_an_added_clause_states_a_number_the_question_does_not_and_is_marked_changed() -> None:
    variants = [v for v in generate([ROW], per_row=4) if v.kind == ADDED]
    assert len(variants) == 4
    for v in variants:
        assert v.reasoning_changed and v.answer is None
        assert v.clause in v.query and v.added_value not in stated_numbers(ROW["query"])
        assert v.added_value in stated_numbers(v.query)


def test_controls_keep_the_answer_and_the_same_rows_give_the_same_variants() -> None:
    marked = generate([ROW])
    restated = generate([{**ROW, "instance": 1}])
    assert [v.kind for v in marked][-1] == MARKED and [v.kind for v in restated][-1] == RESTATED
    for v in (marked[-1], restated[-1]):
        assert not v.reasoning_changed and v.answer == ROW["answer"]
    assert [v.query for v in generate([ROW])] == [v.query for v in marked]


def test_every_variant_of_a_seed_is_in_one_half() -> None:
    rows = [{**ROW, "gsm8k_row": r} for r in random.Random(0).sample(range(1319), 40)]
    halves = {v.gsm8k_row: set() for v in generate(rows)}
    for v in generate(rows):
        halves[v.gsm8k_row].add(v.half)
    assert all(len(h) == 1 for h in halves.values())
    assert {half_of(r) for r in halves} == {"tune", "check"}

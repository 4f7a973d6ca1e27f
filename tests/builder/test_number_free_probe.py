"""Operations added without a number (builder/eval/number_free_probe.py)."""

from __future__ import annotations

import json
from pathlib import Path

from builder.eval.number_free_probe import ADDED, JOINED, added_without_numbers, opposite_swapped, write


def test_each_sentence_goes_before_the_final_question_and_names_the_counted_thing():
    question = "Mei uses 3 pads of paper a week. Each pad has 80 sheets. How many sheets does she use in 4 weeks?"
    changed = dict(added_without_numbers(question))
    assert set(changed) == set(ADDED) | set(JOINED)  # no word of SWAPPED in its story
    assert changed["clause: none"] == ("Mei uses 3 pads of paper a week. Each pad has 80 sheets, but none of the pads "
                                       "are counted. How many sheets does she use in 4 weeks?")
    assert changed["none"] == ("Mei uses 3 pads of paper a week. Each pad has 80 sheets. None of the pads are counted. "
                               "How many sheets does she use in 4 weeks?")
    assert added_without_numbers("A train goes 60 miles in 2 hours. How far does it go in 5 hours?") == []


def test_the_written_set_holds_only_changed_questions_split_by_half(tmp_path: Path):
    out = tmp_path / "nf.jsonl"
    counts = write(out, per_template=1)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and len(rows) == sum(counts.values())
    assert all(r["reasoning_changed"] and r["answer"] == "None" and r["half"] in ("tune", "check") for r in rows)
    kinds = {r["kind"].split("number-free, ", 1)[1] for r in rows}
    assert set(ADDED) | set(JOINED) <= kinds and any(k.startswith("opposite: ") for k in kinds)


def test_a_word_of_the_story_is_swapped_for_its_opposite_once():
    question = "Tom bought 5 apples and sold 2. He is 3 years older than Ann. How many apples did he buy?"
    swapped = dict(opposite_swapped(question))
    assert list(swapped) == ["opposite: older->younger", "opposite: bought->sold", "opposite: sold->bought"]
    assert swapped["opposite: bought->sold"] == ("Tom sold 5 apples and sold 2. He is 3 years older than Ann. How many "
                                                 "apples did he buy?")

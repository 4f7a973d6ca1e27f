"""Added operations stated with weak number words (builder/eval/added_quantity_probe.py)."""

from __future__ import annotations

from builder.eval.added_quantity_probe import ADDED, added_operations


def test_each_added_sentence_goes_before_the_final_question_and_names_a_counted_thing():
    question = "Mei uses 3 pads of paper a week. Each pad has 80 sheets. How many sheets does she use in 4 weeks?"
    changed = dict(added_operations(question))
    assert set(changed) == set(ADDED)
    assert changed["one of the"] == ("Mei uses 3 pads of paper a week. Each pad has 80 sheets. One of the pads is given "
                                     "away. How many sheets does she use in 4 weeks?")
    assert added_operations("A train goes 60 miles in 2 hours. How far does it go in 5 hours?") == []  # units only


"""Changed questions where what a story lets go is held instead (builder/eval/holding_probe.py)."""

from __future__ import annotations

from builder.eval.holding_probe import held


def test_the_first_verb_that_lets_a_thing_go_is_read_as_holding_it():
    question = "The pasta costs $5, and he spends $4 on cheese and sold 2 jars. How much does he spend in a year?"
    assert held(question) == [("spends->saves", "The pasta costs $5, and he saves $4 on cheese and sold 2 jars. How "
                                                "much does he spend in a year?")]
    assert held("Tom has 5 apples. How many does he sell?") == []  # only the story's verbs, not what is asked

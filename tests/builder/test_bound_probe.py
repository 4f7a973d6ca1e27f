"""Changed questions that give a number as a bound or an estimate (builder/eval/bound_probe.py)."""

from __future__ import annotations

from builder.eval.bound_probe import bounded


def test_the_first_count_of_the_story_is_given_as_each_bound():
    question = "Sven paid $5 and uses 4 pads of paper a week. How many pads does he use in 3 weeks?"
    assert bounded(question) == [
        ("at least", "Sven paid $5 and uses at least 4 pads of paper a week. How many pads does he use in 3 weeks?"),
        ("over", "Sven paid $5 and uses over 4 pads of paper a week. How many pads does he use in 3 weeks?"),
        ("about", "Sven paid $5 and uses about 4 pads of paper a week. How many pads does he use in 3 weeks?"),
    ]
    assert bounded("Sven paid $5. How many pads does he use?") == []

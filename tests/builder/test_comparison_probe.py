"""Changed questions whose comparison is dropped (builder/eval/comparison_probe.py)."""

from __future__ import annotations

from builder.eval.comparison_probe import comparison_dropped


def test_the_first_difference_the_story_states_is_read_as_a_multiple():
    question = ("Rick caught 10 perch and 15 salmon. Today he caught 4 fewer perch than the previous night and 3 more "
                "salmon than perch. How many fish did he catch?")
    assert comparison_dropped(question) == [(
        "fewer->times as many",
        "Rick caught 10 perch and 15 salmon. Today he caught 4 times as many perch as the previous night and 3 more "
        "salmon than perch. How many fish did he catch?")]
    assert comparison_dropped("Ann has 5 apples. How many more apples than pears does she have?") == []

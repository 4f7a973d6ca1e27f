"""Changed questions that state one number in another unit (builder/eval/unit_probe.py)."""

from __future__ import annotations

from builder.eval.unit_probe import unit_converted


def test_one_unit_is_converted_where_the_question_names_it_again():
    question = "A jet travels 420 miles in 6 hours. How long would it take to travel an additional 210 miles?"
    assert unit_converted(question) == [("miles->kilometers", "A jet travels 420 kilometers in 6 hours. How long "
                                                              "would it take to travel an additional 210 miles?")]
    # the unit named once: a rename throughout, the same reasoning, so no row
    assert unit_converted("A jet travels 420 miles in 6 hours. How far does it go in 9 hours?") == []

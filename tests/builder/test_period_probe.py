"""Changed questions that give a rate per another period (builder/eval/period_probe.py)."""

from __future__ import annotations

from builder.eval.period_probe import period_changed


def test_the_first_rate_period_is_put_as_the_next_where_the_question_names_another_time():
    question = "Dan plants 6 tulips a day in his garden. After 12 days, how many tulips does he have?"
    assert period_changed(question) == [("day->week", "Dan plants 6 tulips a week in his garden. After 12 days, how "
                                                      "many tulips does he have?")]
    assert period_changed("Ann earns $500 weekly. How much does she earn in 3 months?")[0][0] == "weekly->monthly"
    assert period_changed("Dan plants 6 tulips a day. How many tulips does he plant?") == []  # a rename throughout

"""Changed questions that give for all what the template gives for each (builder/eval/distributive_probe.py)."""

from __future__ import annotations

from builder.eval.distributive_probe import FOR_ALL, for_all


def test_the_first_amount_for_each_one_of_the_story_is_given_for_all():
    question = "Sam sold 30 pears to a neighbor at $3 each and 4 plums a day. How much did he get each day?"
    changed = dict(for_all(question))
    assert set(changed) == {f"each->{phrase}" for phrase in FOR_ALL}
    assert changed["each->in total"] == ("Sam sold 30 pears to a neighbor at $3 in total and 4 plums a day. How much "
                                         "did he get each day?")
    assert for_all("Sven uses 4 pads of paper a week. How many pads in 3 weeks?")[0][0] == "a week->in total"
    assert for_all("A train goes 60 miles in 2 hours. How far does it go each hour?") == []  # only the final question


def test_an_amount_for_each_in_the_final_sentence_s_condition_is_given_for_all():
    question = ("Jenna has 13 opals and 2 garnets. If opals are worth $300 each and garnets are worth $800 each, how much "
                "money are all her jewels worth?")
    assert [kind for kind, _ in for_all(question)] == ["each->in total", "each->altogether", "each->for all of them"]
    assert for_all(question)[0][1].startswith("Jenna has 13 opals and 2 garnets. If opals are worth $300 in total and")

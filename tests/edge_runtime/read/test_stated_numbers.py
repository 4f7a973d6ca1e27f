"""How a number is stated: a multiple, or a count of a thing the question counts."""

from __future__ import annotations

import pytest

from edge_runtime.read.mentions import scan
from edge_runtime.read.stated_numbers import counts_a_counted_thing, states_a_multiple


@pytest.mark.parametrize(("text", "multiple"), [
    ("the sum tripled in a year", True), ("it grew 3 times in a year", True), ("3 times as many pens", True),
    ("a four-fold rise", True), ("after 3 years", False),
    # a frequency is a number of times too: "3 times a week" restates the "twice a week" of an entry
    ("she runs 3 times a week", True),
])
def test_a_multiple_is_a_multiplying_word_or_a_number_of_times_not_a_count(text, multiple):
    assert states_a_multiple(text, scan(text)[0]) is multiple


def test_one_before_a_thing_the_question_counts_is_a_quantity():
    question = "Dave bought 25 fries. A squirrel dropped one fry. How many fries are left?"
    mentions = scan(question)
    one = next(i for i, m in enumerate(mentions) if m.text == "one")
    assert counts_a_counted_thing(question, one, mentions)
    rate = "Stickers come in packs of 25. One sticker costs $0.75. How much do 4 packs cost?"
    mentions = scan(rate)
    one = next(i for i, m in enumerate(mentions) if m.text.lower() == "one")
    assert not counts_a_counted_thing(rate, one, mentions)


@pytest.mark.parametrize(("question", "weak", "counted"), [
    ("Mei uses 3 pads of paper a week. One of the pads is given away. How many sheets does she use?", "one", True),
    ("Mei uses 3 pads of paper a week. Then a couple of pads are returned. How many sheets does she use?", "a couple",
     True),
    ("Mei uses 3 pads of paper a week. One of them is blue. How many sheets does she use?", "one", False),
    ("Mei uses 3 pads of paper a week. One of her friends draws too. How many sheets does she use?", "one", False),
])
def test_one_or_a_couple_of_the_things_the_question_counts_is_a_quantity(question, weak, counted):
    """"one of the pads", "a couple of pads" pick some of a counted thing; "one of them", "one of her friends" (not
    counted by any number of the question) do not."""
    mentions = scan(question)
    index = next(i for i, m in enumerate(mentions) if m.text.lower() == weak)
    assert mentions[index].weak and counts_a_counted_thing(question, index, mentions) is counted


@pytest.mark.parametrize(("text", "stated"), [
    ("A hundred more eggs arrive.", [("A hundred", 100.0)]), ("a thousand and five eggs", [("a thousand and five", 1005.0)]),
    ("one hundred eggs", [("one hundred", 100.0)]), ("hundreds of eggs", []), ("an hour later", []),
])
def test_a_scale_word_after_an_article_states_its_number(text, stated):
    """"A hundred more eggs arrive" adds 100 eggs: the guard must see the number to refuse the added operation."""
    assert [(m.text, m.values[0]) for m in scan(text)] == stated


def test_an_amount_in_cents_also_reads_as_dollars():
    assert scan("worth 30 cents")[0].values == (30.0, 0.3)
    assert scan("worth $30")[0].values == (30.0,) and scan("30 percent")[0].values == (30.0, 0.3)

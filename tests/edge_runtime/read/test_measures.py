from __future__ import annotations

import pytest

from edge_runtime.read.measures import counts_else, unit_of, units_named, word_after


def test_spellings_of_one_unit_are_one_unit():
    assert unit_of("kgs") == unit_of("kilograms") == unit_of("Kilo") == "kilogram"
    assert unit_of("litres") == unit_of("liter") and unit_of("ft") == unit_of("feet")
    assert unit_of("in") is None and unit_of("apples") is None  # "5 in the box" is no inch


def test_the_word_after_a_number():
    text = "John eats 200-gram cups, 3 kg. and 7"
    assert word_after(text, text.index("200") + 3) == "gram"
    assert word_after(text, text.index("3") + 1) == "kg"
    assert word_after(text, len(text)) is None
    assert word_after("5, then", 1) is None


@pytest.mark.parametrize(("template_word", "question_word", "differs"), [
    ("grams", "servings", True), ("grams", "kilograms", True), ("grams", "g", False), ("hours", "hrs", False),
    ("grams", "of", False), ("grams", None, False), ("apples", "pears", False), ("grams", "mushrooms", True),
])
def test_a_number_counts_something_else(template_word, question_word, differs):
    assert counts_else(template_word, question_word, frozenset({"gram", "kilogram"})) is differs


def test_a_unit_renamed_throughout_is_the_same_reasoning():
    """GSM-Symbolic writes a template's grams as ounces everywhere: the proportions are the same."""
    renamed = units_named("If a 175 oz bag has 7 servings, how many oz can you eat?")
    assert renamed == {"ounce"} and not counts_else("g", "oz", renamed)
    mixed = units_named("John eats 2 kilograms a day. How many grams of protein does he get?")
    assert counts_else("grams", "kilograms", mixed)

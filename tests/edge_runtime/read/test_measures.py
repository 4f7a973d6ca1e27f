from __future__ import annotations

from fractions import Fraction

import pytest

from edge_runtime.read.measures import (
    asked_unit_change,
    counts_else,
    in_currency,
    share_asked_as_count,
    unit_of,
    unit_refusal,
    units_named,
    word_after,
)


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


def test_a_unit_and_its_subunit_are_never_a_rename():
    """"worth 30 cents" for "worth ${v}": the entry would count 30 dollars, a hundred times the answer; the
    template's $ is read from the symbol before its slot."""
    assert unit_of("$") == "dollar" and unit_of("€") == "euro"
    assert counts_else("$", "cents", frozenset({"cent"})) and counts_else("cents", "$", frozenset({"dollar"}))
    assert not counts_else("meters", "cm", frozenset({"centimeter"}))  # a length renamed throughout
    assert not counts_else("$", "€", frozenset({"euro"}))  # a currency renamed throughout
    assert units_named("It costs $5 and €3.") == {"dollar", "euro"}


def test_unit_refusal_reads_currency_symbols_before_the_numbers():
    from edge_runtime.read.mentions import scan

    template = "Each cap is worth ${value}. He finds {caps} caps a day. How much money does he make in a week?"
    cents = "Each cap is worth 30 cents. He finds 6 caps a day. How much money does he make in a week?"
    dollars = "Each cap is worth $0.30. He finds 6 caps a day. How much money does he make in a week?"
    for question, refused in ((cents, True), (dollars, False)):
        mentions = scan(question)
        bound = {"value": 0, "caps": 1}
        refusal = unit_refusal(template, question, bound, mentions)
        assert (refusal is not None) is refused, refusal


CAPS = "Each cap is worth ${value}. He finds {caps} caps a day. How much money does he make in a {days} day month?"


def test_an_amount_in_cents_reads_as_dollars_only_where_read_converted():
    """The reading converts "30 cents" for "${value}" to 0.3, and the guard accepts the converted value only: 30 read
    as written is still a hundred times the answer."""
    from edge_runtime.read.mentions import scan

    question = "Each cap is worth 30 cents. He finds 6 caps a day. How much money does he make in a 30 day month?"
    mentions = scan(question)
    assert mentions[0].values == (30.0, 0.3)
    values = {"value": 30, "caps": 6, "days": 30}
    assert in_currency(CAPS, question, values, mentions) == {"value": Fraction(3, 10)}  # "30 day" counts days
    assert unit_refusal(CAPS, question, {"value": 0, "caps": 1}, mentions, values={"value": 0.3, "caps": 6}) is None
    assert "counts cents" in unit_refusal(CAPS, question, {"value": 0, "caps": 1}, mentions, values={"value": 30, "caps": 6})


@pytest.mark.parametrize("question", [
    "Each cap is worth $30. He finds 30 cents a day. How much money does he make in a 7 day month?",  # which 30?
    "Each cap is worth 30 dollars and 30 cents. He finds 6 caps a day. How much money does he make in a 7 day month?",
    "Each cap is worth 30 euros. He finds 6 caps a day. How much money does he make in a 7 day month?",
    "Each cap is worth 30. He finds 6 caps a day. How much money does he make in a 7 day month?",
])
def test_an_amount_is_not_converted_where_the_question_does_not_say_cents_alone(question):
    from edge_runtime.read.mentions import scan

    assert in_currency(CAPS, question, {"value": 30, "caps": 6, "days": 7}, scan(question)) == {}


def test_cents_asked_of_an_entry_that_counts_dollars_is_never_a_rename():
    """Named in the story too ("worth 30 cents ... how many cents"), the entry's answer would still be in dollars."""
    question = "Each cap is worth 30 cents. He finds 6 caps a day. How many cents does he make in a 30 day month?"
    assert asked_unit_change(CAPS, "How much money does he make in a", question,
                             "How many cents does he make in a 30 day month?") == "cent"


PLAYLIST = "Each song is {m} hours long and a playlist has {n} songs. If John has {k} playlists, how many hours will they last?"


@pytest.mark.parametrize("question, asks_in", [
    ("Each song is 3 hours long and a playlist has 20 songs. If Ann has 5 playlists, how many hours will they last?", None),
    ("Each song is 3 hours long and a playlist has 20 songs. If Ann has 5 playlists, how long will they last?", None),
    ("Each song is 3 hours long and a playlist has 20 songs. If Ann has 5 playlists, how many minutes will they last?",
     "minute"),
    ("Each song is 3 minutes long and a playlist has 20 songs. If Ann has 5 playlists, how many minutes will they last?",
     None),  # hours renamed minutes throughout: the same reasoning
    ("Each song is 3 hours long and a playlist has 20 songs. If Ann has 5 playlists, what percentage of a week will they "
     "last?", "percent"),
])
def test_the_unit_a_final_question_asks_in(question, asks_in):
    """The entry answers in the unit its final question asks in; asked in another one, its number is wrong by a
    factor (held-out changed questions: "how many minutes", "in cents", "what percent of the pieces")."""
    template_asks = "how many hours will they last?"
    asks = question[question.lower().rindex("how" if "how" in question.lower() else "what"):]
    assert asked_unit_change(PLAYLIST, template_asks, question, asks) == asks_in


def test_money_asked_by_its_name_is_the_templates_currency_not_its_subunit():
    template = "A book costs ${p} and a pen ${q}. How much money does she spend?"
    asks = "How much money does she spend?"
    assert asked_unit_change(template, asks, "A book costs $5 and a pen $2. How many dollars does she spend?",
                             "How many dollars does she spend?") is None
    assert asked_unit_change(template, asks, "A book costs $5 and a pen $2. How much does she spend, in cents?",
                             "How much does she spend, in cents?") == "cent"


def test_a_unit_renamed_throughout_beside_a_rate_is_still_a_rename():
    """GSM-Plus rewrote a grams entry in kilograms throughout; its final question keeps "per week"."""
    template = ("A cup weighs {w} grams and has {p} grams of protein. If John eats {e} grams a day, how many grams of "
                "protein does he get per week?")
    question = ("A cup weighs 0.1 kilograms and has 0.003 kilograms of protein. If John eats 0.2 kilograms a day, how "
                "many kilograms of protein does he get per week?")
    asks = question[question.index("how many"):]
    assert asked_unit_change(template, template[template.index("how many"):], question, asks) is None
    assert asked_unit_change(template, template[template.index("how many"):], question.replace("per week", "per month"),
                             asks.replace("per week", "per month")) == "month"


def test_a_percent_asked_as_a_plain_number_is_another_quantity():
    assert share_asked_as_count("What percent of the plants are flowering plants?", "What number of the plants are flowering?")
    assert share_asked_as_count("What % of the plants flower?", "How many of the plants flower?")
    assert not share_asked_as_count("What percent of the plants flower?", "What percentage of the plants flower?")
    assert not share_asked_as_count("How many plants flower?", "What number of the plants flower?")


def test_the_currency_by_name_beside_a_period_the_template_asks_in():
    """"How many dollars does he make in a week" asks what "How much money does he make in a week" does; cents do not."""
    template = "John collects garbage {n} times a week and gets paid ${p} per collection. How much money does he make in a week?"
    asks = "How much money does he make in a week?"
    question = "John collects garbage 4 times a week and gets paid $2 per collection. How many dollars does he make in a week?"
    assert asked_unit_change(template, asks, question, "How many dollars does he make in a week?") is None
    cents = question.replace("How many dollars", "How many cents")
    assert asked_unit_change(template, asks, cents, "How many cents does he make in a week?") == "cent"

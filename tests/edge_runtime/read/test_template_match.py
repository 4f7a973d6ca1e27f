"""match_template: the IS2 fast path's exact literal-text match."""

from __future__ import annotations

import pytest

from edge_runtime.read.template_match import match_template, template_pattern

SHIP = "Ship {count} boxes by {mode}."
GAS = (
    "What is the pressure, in kPa, of {moles} mol of an ideal gas at {temperature} degrees "
    "{temperature_unit} held in a {volume} {volume_unit} container?"
)


def test_exact_match_reads_the_slots():
    assert match_template(SHIP, "Ship 12 boxes by sea.") == {"count": "12", "mode": "sea"}


def test_slot_values_keep_their_own_text():
    template = "Heat {amount} litres of water from {start} to {end} degrees {unit}."
    found = match_template(template, "Heat a dozen litres of water from 1,200 to 3 1/2 degrees cubic fahrenheit.")
    assert found == {"amount": "a dozen", "start": "1,200", "end": "3 1/2", "unit": "cubic fahrenheit"}


@pytest.mark.parametrize(
    "question",
    [
        "ship 12 BOXES by Sea.",
        "  Ship   12 boxes\nby\tsea.  ",
        "SHIP 12 BOXES BY SEA.",
        "Ship 12  boxes  by  sea.",
    ],
)
def test_whitespace_and_case_insensitive(question):
    found = match_template(SHIP, question)
    assert found is not None
    assert found["count"] == "12" and found["mode"].lower() == "sea"


def test_template_whitespace_is_normalised_too():
    assert match_template("Ship  {count}\n boxes by {mode}.", "Ship 3 boxes by air.") == {"count": "3", "mode": "air"}


def test_slot_values_are_stripped_and_inner_whitespace_collapsed():
    assert match_template(SHIP, "Ship 3 boxes by  cubic\n metres.") == {"count": "3", "mode": "cubic metres"}


def test_repeated_slot_names_must_agree():
    template = "{a} plus {a} is {b}"
    assert match_template(template, "2 plus 2 is 4") == {"a": "2", "b": "4"}
    assert match_template(template, "two plus TWO is four") == {"a": "two", "b": "four"}
    assert match_template(template, "2 plus 3 is 4") is None


def test_a_repeated_slot_may_state_its_number_in_words_once():
    """"5 apple pies ... the five pies": one number written two ways is one slot; two numbers are not."""
    template = "She baked {pies} apple pies and set the {pies} pies out. {left} were left."
    assert match_template(template, "She baked 8 apple pies and set the eight pies out. 3 were left.") == {
        "pies": "8", "left": "3"}
    assert match_template(template, "She baked 8 apple pies and set the nine pies out. 3 were left.") is None
    assert match_template(template, "She baked 8 apple pies and set the 8 cakes out. 3 were left.") is None
    assert match_template("{cost} now, {cost} later", "$5 now, 5 later") is None  # a price and a count
    thrice = "{n} red, {n} blue and {n} green"
    assert match_template(thrice, "4 red, four blue and 4 green") == {"n": "4"}
    assert match_template(thrice, "4 red, 5 blue and four green") is None  # every repeat is compared


@pytest.mark.parametrize(
    ("template", "question", "expected"),
    [
        ("({x}, {y})", "(3, 4)", {"x": "3", "y": "4"}),
        ("{x}?", "seven?", {"x": "seven"}),
        ("Total: {amount}!", "Total: 1,200!", {"amount": "1,200"}),
        ("\"{quote}\" said {who}.", "\"hello there\" said Ann.", {"quote": "hello there", "who": "Ann"}),
        ("Price ${price}.", "Price $3.50.", {"price": "3.50"}),
    ],
)
def test_slots_adjacent_to_punctuation(template, question, expected):
    assert match_template(template, question) == expected


@pytest.mark.parametrize(
    "question",
    [
        "Ship 12 crates by sea.",  # different literal text
        "Please ship 12 boxes by sea.",  # extra words before
        "Ship 12 boxes by sea. Thanks",  # extra words after
        "Ship 12 boxes by sea!",  # punctuation is literal text
        "Ship 12 boxesby sea.",  # a word boundary became nothing
        "",
    ],
)
def test_no_match_returns_none(question):
    assert match_template(SHIP, question) is None


def test_regex_metacharacters_in_the_template_are_literal():
    template = "Is 2+2 = {x} (really)?"
    assert match_template(template, "Is 2+2 = 4 (really)?") == {"x": "4"}
    assert match_template(template, "Is 22 = 4 (really)?") is None
    assert match_template("Ship {n} boxes.", "Ship 3 boxesX") is None  # '.' is not a wildcard


@pytest.mark.parametrize(
    ("template", "question"),
    [
        ("[{x}]", "[ ]"),
        ("[{x}]", "[\t\n]"),
        ("{x} and {y}", "  and y"),
        ("A {x} B {y} C", "A 1 B   C"),
    ],
)
def test_empty_slot_returns_none(template, question):
    assert match_template(template, question) is None


def test_pattern_is_cached():
    assert template_pattern(SHIP) is template_pattern(SHIP)


def test_slots_separated_by_a_space_split_at_a_space():
    r"""A whitespace-only literal between two slots needs at least one space (it was r'\s*' before 6a4ba52,
    which read the ideal-gas question's '10 litres' as volume '1', unit '0 litres')."""
    assert match_template("{a} {b}", "12 34") == {"a": "12", "b": "34"}
    assert match_template("{a} {b}", "1234") is None
    found = match_template(GAS, "What is the pressure, in kPa, of 2 mol of an ideal gas at 25 degrees celsius "
                                "held in a 10 litres container?")
    assert found is not None and (found["volume"], found["volume_unit"]) == ("10", "litres")


def test_choices_anchor_the_split_between_adjacent_slots():
    units = {"volume_unit": ("litres", "millilitres", "cubic metres")}
    question = (
        "What is the pressure, in kPa, of 2 mol of an ideal gas at 25 degrees celsius held in a 3 1/2 cubic metres "
        "container?"
    )
    assert match_template(GAS, question)["volume"] == "3"  # without choices the first slot is the shortest
    found = match_template(GAS, question, units)
    assert (found["volume"], found["volume_unit"]) == ("3 1/2", "cubic metres")
    assert match_template(GAS, question.replace("cubic metres", "Cubic  METRES"), units)["volume_unit"] == "Cubic METRES"
    assert match_template(GAS, question.replace("cubic metres", "gallons"), units) is None
    assert match_template("{n} {unit}", "5 litres", units | {"unit": ("litres",)}) == {"n": "5", "unit": "litres"}


def test_a_slot_never_stretches_over_a_clause_the_question_inserted():
    """"with {n}. She sells": a question "with four. None of the eggs are counted. She sells" would put a whole
    sentence in the slot, which the template path (no guard) must not serve; the aligned path judges it instead."""
    template = "She bakes muffins with {n}. She sells the rest."
    assert match_template(template, "She bakes muffins with four. She sells the rest.") == {"n": "four"}
    assert match_template(template, "She bakes muffins with 1,000. She sells the rest.") == {"n": "1,000"}
    for inserted in ("four. None of the eggs are counted", "four, but none are counted", "four; none count", "four?"):
        assert match_template(template, f"She bakes muffins with {inserted}. She sells the rest.") is None, inserted


def test_a_small_number_the_template_keeps_may_be_spelt_the_other_way():
    """gsm8k-1128 keeps "Two years ago" as text: "2 years ago" is the same question, "3 years ago" another."""
    template = "Liam is {age} years old now. Two years ago, he was twice as old as Vince. He walks 3 miles."
    same = "Liam is 16 years old now. 2 years ago, he was twice as old as Vince. He walks three miles."
    assert match_template(template, same) == {"age": "16"}
    assert match_template(template, same.replace("2 years", "3 years")) is None
    assert match_template(template, same.replace("three miles", "4 miles")) is None
    assert match_template("It costs {p} dollars, one each.", "It costs 5 dollars, 1 each.") == {"p": "5"}


def test_a_hostile_question_against_a_slot_stated_many_times_is_refused_at_once():
    """Repeats of a slot are read by bounded groups: lazy groups of any length backtracked over one another, and a
    question of the server's 4 KB limit built from the template's own words held one match for seconds."""
    import time

    template = "{n} red, {n} blue and {n} green, {m} two, {n} more and Two left."
    hostile = "4 red, 4 blue and 4 green, " * 150 + "zz"
    started = time.perf_counter()
    assert match_template(template, hostile) is None
    assert time.perf_counter() - started < 2.0  # was 8 s with a lazy group per repeat; 5 ms bounded

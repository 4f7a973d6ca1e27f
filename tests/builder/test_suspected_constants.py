"""Parameters the planner suspects a program's constant was computed from (``Plan.suspects``): frozen by the
planner's arithmetic alone, unless the independent check decides. A constant that equals a product of stated
numbers by coincidence (8 pets of "3 cats and 5 dogs", where 2 cans * 4 days = 8) must not cost the entry its
numbers; one that was computed from them ("21 apples" of "3 bags with 7 apples") still must, and so must one that
every agreeing program writes as well ("4 wheels" a car, where 3 cars + 1 = 4): their agreement says nothing of it."""

from __future__ import annotations

import dataclasses

import pytest

from builder.independent import IndependentProgram, as_solution
from builder.pot_import.planner import plan_parameters
from builder.pot_import.program import PalProgram
from builder.pot_import.verify import Importer, ImportOptions
from tests.builder.test_pot_import import program, transcript

PETS = "Ann has 3 cats and 5 dogs. Each pet eats 2 cans a day. How many cans do her pets eat in 4 days?"
#: 8 pets, counted by hand from 3 + 5; 2 cans * 4 days = 8 too, so the planner suspects both.
PETS_ENTRY = "pets = 8\ncans = 2\ndays = 4\nreturn pets * cans * days"
PETS_CHECK = IndependentProgram("second", as_solution("cats = 3\ndogs = 5\ncans = 2\ndays = 4\n"
                                                      "ans = (cats + dogs) * cans * days"))

LOT = "A lot has 3 cars and 5 trucks. Each truck has 6 wheels. How many wheels are there in the lot?"
#: 4 wheels a car: no number of the question, but 3 + 1 and 5 - 1 make it, so the planner suspects both counts.
LOT_ENTRY = "cars = 3\ntrucks = 5\nper_truck = 6\nreturn cars * 4 + trucks * per_truck"
LOT_CHECK = IndependentProgram("second", as_solution("cars = 3\ntrucks = 5\nper_truck = 6\nans = 4 * cars + per_truck * trucks"))

BAGS = "Ann buys 3 bags with 7 apples in each bag. She eats 2 apples from each bag. How many apples are left?"
#: 21 is 3 bags * 7 apples, computed once: a variant with other bags would be answered for 21 apples.
BAGS_ENTRY = "bags = 3\neaten_each = 2\ntotal = 21\nreturn total - bags * eaten_each"
BAGS_CHECK = IndependentProgram("second", as_solution("bags = 3\nper = 7\neaten = 2\nans = bags * per - bags * eaten"))


@pytest.fixture(scope="module")
def importer() -> Importer:
    return Importer(ImportOptions(seed=5, alternatives=False))


def test_the_planner_freezes_suspects_unless_the_check_decides() -> None:
    frozen = plan_parameters(PETS, PalProgram(program(PETS, PETS_ENTRY)))
    assert frozen.derived == ["cans", "days"] and not frozen.suspects
    assert "days, kept constant: the program's 8 may be computed from it" in "; ".join(frozen.constants)
    varying = plan_parameters(PETS, PalProgram(program(PETS, PETS_ENTRY)), freeze_derived=False)
    assert varying.suspects == {"cans": ("the program's 8 may be computed from it", (8.0,), False),
                                "days": ("the program's 8 may be computed from it", (8.0,), False)}
    assert not varying.derived and not varying.frozen


def test_a_coincidence_the_check_refutes_leaves_the_numbers_varying(importer: Importer) -> None:
    result = importer.import_one(dataclasses.replace(transcript(PETS, PETS_ENTRY, 64), independent=(PETS_CHECK,)))
    assert result.accepted, result.detail
    assert result.info["read_params"] == ["cans", "days"] and not result.info["frozen"]
    assert result.info["suspects"] == ["cans", "days"]
    assert result.info["verification"]["status"] == "verified" and not result.info["verification"].get("fixed")
    assert "Varying on the independent check's evidence" in result.source


def test_without_an_independent_program_the_suspects_stay_frozen(importer: Importer) -> None:
    result = importer.import_one(transcript(PETS, PETS_ENTRY, 64))
    assert not result.accepted and result.reason == "no_parameters"


def test_a_constant_every_agreeing_program_writes_vouches_for_nothing(importer: Importer) -> None:
    result = importer.import_one(dataclasses.replace(transcript(LOT, LOT_ENTRY, 42), independent=(LOT_CHECK,)))
    assert not result.accepted and result.reason == "no_parameters", result.info
    assert "cars, kept constant: the program's 4 may be computed from it" in result.detail


def test_a_constant_computed_from_stated_numbers_keeps_them_constant(importer: Importer) -> None:
    assert plan_parameters(BAGS, PalProgram(program(BAGS, BAGS_ENTRY))).derived == ["bags"]
    result = importer.import_one(dataclasses.replace(transcript(BAGS, BAGS_ENTRY, 15), independent=(BAGS_CHECK,)))
    assert result.accepted, result.detail
    assert result.info["read_params"] == ["eaten_each"] and "suspects" not in result.info
    assert "bags, kept constant: the program's 21 may be computed from it" in result.source


def test_a_program_with_a_number_of_its_own_vouches_for_nothing(importer: Importer) -> None:
    """"x = 80/4 = 20": a solution that computed a value of its own beforehand answers as the entry does on variants
    where both are wrong (gsm8k-0931)."""
    precomputed = IndependentProgram("second", as_solution("cans_a_day = 16\ndays = 4\nans = cans_a_day * days"))
    result = importer.import_one(dataclasses.replace(transcript(PETS, PETS_ENTRY, 64), independent=(precomputed,)))
    assert not result.accepted and result.reason == "no_parameters", result.info


def test_a_suspect_whose_number_an_unread_mention_states_stays_frozen(importer: Importer) -> None:
    """gsm8k-1314: "turn 12 in 3 years ... be in 3 years", the entry's 9 = 12 - 3 and its parameter reading the other 3:
    a checking program that crosses the two 3s as the entry does agrees on every variant, and is wrong with it."""
    question = "Sam will be 12 in 3 years. His brother is twice as old as Sam is now. How old will his brother be in 3 years?"
    crossed = "sam_now = 9\nyears = 3\nreturn sam_now * 2 + years"
    plan = plan_parameters(question, PalProgram(program(question, crossed)), freeze_derived=False)
    assert plan.suspects["years"][2] and not plan.derived
    checker = IndependentProgram("second", as_solution("years = 3\nnow = 12 - 3\nans = now * 2 + years"))
    result = importer.import_one(dataclasses.replace(transcript(question, crossed, 21), independent=(checker,)))
    assert result.accepted and result.info["read_params"] == ["old_as_sam"], result.info
    assert "3 (years, kept constant: the program's 9 may be computed from it)" in result.source


def test_a_common_value_read_again_without_its_word_is_suspected() -> None:
    """gsm8k-0284 and 1128: "doubled" read by one ``* 2`` of three, "Two years ago" by one ``- 2`` of two: the others
    stay 2 on "tripled" or "Three years ago". Too common a value for the arithmetic test, a 2 is suspected where it is a
    number word's ratio or is added to something."""
    stories = ("Alani wrote 20 stories in the first week and her brother wrote 40. If they each doubled the number of "
               "stories in the second week, how many stories did they write in all?")
    doubled = ("alani = 20\nbrother = 40\nalani_2 = alani * 2\nbrother_2 = brother * 2\n"
               "return alani + brother + alani_2 + brother_2")
    plan = plan_parameters(stories, PalProgram(program(stories, doubled)))
    assert plan.derived == ["number_of_stories"] and [p.name for p in plan.params] == ["alani", "brother"]
    ages = "Liam is 16 years old now. Two years ago, Liam's age was twice the age of Vince. How old is Vince now?"
    plan = plan_parameters(ages, PalProgram(program(ages, "liam = 16\nthen = liam - 2\nvince_then = then / 2\n"
                                                         "return vince_then + 2")))
    assert [p.name for p in plan.params] == ["liam"], plan.params
    halving = "Two friends share 30 apples equally. How many apples does each friend get?"
    plan = plan_parameters(halving, PalProgram(program(halving, "friends = 2\napples = 30\nreturn apples / 2")))
    assert sorted(p.name for p in plan.params) == ["apples", "friends"]  # a 2 that divides is no age read again


def test_half_of_a_one_written_out_keeps_the_one_constant(importer: Importer) -> None:
    """gsm8k-0567: "$1.00 for each of the next 3 teeth ... half the amount per tooth" written ``0.5``: right only while
    the amount is $1, and two programs written the same way agreed on every variant of it."""
    question = ("The fairy left $5.00 for the first tooth. Then she gave $1.00 for each of the next 3 teeth. For each "
                "of the last 2 teeth she gave half the amount per tooth as for each of the previous 3. How much money "
                "did the fairy leave?")
    entry = "first = 5\nnext_each = 1\nlast_each = 0.5\nreturn first + 3 * next_each + 2 * last_each"
    alike = IndependentProgram("second", as_solution("a = 5\nb = 1\nc = 0.5\nans = a + 3 * b + 2 * c"))
    result = importer.import_one(dataclasses.replace(transcript(question, entry, 9), independent=(alike,)))
    assert result.accepted, result.detail
    assert "next_each" not in result.info["read_params"] and "first" in result.info["read_params"], result.info

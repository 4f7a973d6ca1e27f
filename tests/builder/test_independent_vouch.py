"""A parameter whose number a mention the entry keeps as text states too ("Two cars ... after 2 hours"), bound by a
guess: only an agreeing program that binds it by a name telling the two mentions apart vouches for it
(builder/independent_vouch.py); otherwise the import keeps it constant."""

from __future__ import annotations

import dataclasses

import pytest

from builder.independent import IndependentProgram, as_solution
from builder.independent_vouch import guessed_twins
from builder.pot_import.planner import plan_parameters
from builder.pot_import.program import PalProgram
from builder.pot_import.verify import Importer, ImportOptions
from tests.builder.test_pot_import import program, transcript

CARS = ("Two cars are driving on a highway. The first car goes 60 miles per hour and the second goes 70 miles per "
        "hour. How many miles apart are they after 2 hours?")
#: gsm8k-0804's shape: ``time`` fits "Two cars" as well as "2 hours" and the planner reads the first.
CARS_ENTRY = "speed1 = 60\nspeed2 = 70\ntime = 2\nreturn (speed2 - speed1) * time"
#: A program with the 2 inline: bound by the same guess, it agrees with the entry on every variant of "Two cars".
INLINE = IndependentProgram("second", as_solution("ans = (70 - 60) * 2"))

PIES = "Ann bakes 4 pies and cuts each pie into 4 slices. She eats 3 slices. How many slices are left?"
PIES_ENTRY = "pies = 4\nslices_per_pie = 4\neaten = 3\nreturn pies * slices_per_pie - eaten"


@pytest.fixture(scope="module")
def importer() -> Importer:
    return Importer(ImportOptions(seed=5, alternatives=False))


def test_a_parameter_bound_by_a_guess_between_two_mentions_is_a_guessed_twin() -> None:
    plan = plan_parameters(CARS, PalProgram(program(CARS, CARS_ENTRY)))
    time = next(p for p in plan.params if p.name == "time")
    assert time.mention.text == "Two"  # the guess this module exists for
    twins = guessed_twins(CARS, PalProgram(program(CARS, CARS_ENTRY)), plan)
    assert [m.text for m in twins["time"]] == ["2"] and set(twins) == {"time"}


def test_an_agreement_by_the_same_guess_does_not_vary_it(importer: Importer) -> None:
    result = importer.import_one(dataclasses.replace(transcript(CARS, CARS_ENTRY, 20), independent=(INLINE,)))
    assert result.accepted, result.detail
    assert "time" not in result.info["read_params"] and "time" in result.info["frozen"]
    assert result.info["verification"]["status"] == "verified"


def test_numbers_both_read_are_no_twins() -> None:
    """"4 pies ... 4 slices": each 4 is a parameter of its own, which the trade of two bound mentions judges."""
    plan = plan_parameters(PIES, PalProgram(program(PIES, PIES_ENTRY)))
    assert not guessed_twins(PIES, PalProgram(program(PIES, PIES_ENTRY)), plan)


def test_a_program_whose_names_tell_the_mentions_apart_vouches(importer: Importer) -> None:
    question = "Sam buys 3 apples for $2 each. He walks 3 miles home. How much did he spend?"
    entry = "n = 3\nprice = 2\nreturn n * price"
    plan = plan_parameters(question, PalProgram(program(question, entry)))
    assert set(guessed_twins(question, PalProgram(program(question, entry)), plan)) == {"n"}
    named = IndependentProgram("second", as_solution("apples = 3\nprice = 2\nans = apples * price"))
    result = importer.import_one(dataclasses.replace(transcript(question, entry, 6), independent=(named,)))
    assert result.accepted and sorted(result.info["read_params"]) == ["n", "price"], result.info
    guessing = IndependentProgram("second", as_solution("ans = 3 * 2"))
    result = importer.import_one(dataclasses.replace(transcript(question, entry, 6), independent=(guessing,)))
    assert result.accepted and result.info["read_params"] == ["price"], result.info


def test_a_price_beside_a_plain_number_of_its_value_is_no_guess() -> None:
    """gsm8k-1027: "in 3 different package sizes ... 2 sandwiches for $3": a price read by ``price_small`` fits "$3" by
    the planner's own score (a money word beside a plain number of the same value), so no program need tell them
    apart."""
    question = ("A store sells sandwiches in 3 different package sizes: the first with 2 sandwiches for $3 and the second "
                "with 4 sandwiches for $5. How much more does a sandwich cost in the first package?")
    entry = "price_small = 3\nsmall = 2\nprice_big = 5\nbig = 4\nreturn price_small / small - price_big / big"
    plan = plan_parameters(question, PalProgram(program(question, entry)))
    assert next(p for p in plan.params if p.name == "price_small").mention.text == "3"
    assert "price_small" not in guessed_twins(question, PalProgram(program(question, entry)), plan)

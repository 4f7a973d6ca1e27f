"""The rewording probes: each transformation rewords without changing a stated number, the expected answer is the
entry's answer to its original question, and the tune / check halves are fixed by the GSM8K row."""

from __future__ import annotations

import random

import pytest

from builder.eval.added_clause import half_of
from builder.eval.reword_probe import (
    ATTACHED,
    CENTS,
    FORM,
    KINDS,
    MERGED,
    MOVED,
    NAME_FOR,
    ORIGINAL,
    PASSIVE,
    PHRASE,
    PRONOUN_FOR,
    RELATIVE,
    SPLIT,
    STATED,
    People,
    amounts_in_cents,
    attach_elsewhere,
    generate,
    merge_sentences,
    move_condition,
    move_phrase,
    name_for_pronoun,
    passive,
    probes_for,
    pronoun_for_name,
    question_form,
    relative_clause,
    report,
    split_sentence,
    state_condition,
    stated_numbers,
)
from edge_runtime.entries.metadata import EntryPoint, Param

PEOPLE = People({"Ryan": "male", "Sophie": "female", "Tom": "male", "Jessica": "female"})
R = random.Random(0)


def _entry(row: int = 99) -> EntryPoint:
    return EntryPoint(
        id=f"gsm8k-{row:04d}", description="plants", root="answer",
        template=("Sophie is an avid gardener. She has {ledges} ledges with {per} plants each. On Monday, she gives "
                  "1 plant per ledge to Tom. If Tom buys a 10-foot fence, how many plants does Sophie have left?"),
        params=(Param("ledges", "ledges", int, 40, minimum=0), Param("per", "plants per ledge", int, 2, minimum=0)),
    )


def test_structural_rewordings_read_as_templates_do() -> None:
    text = "Ryan plants 2 flowers a day in his garden. On Friday, he picks 3 roses. If he has 6 pots, how many are left?"
    assert state_condition(text, R, PEOPLE).endswith("He has 6 pots. How many are left?")
    assert move_condition(text, R, PEOPLE).endswith("How many are left if he has 6 pots?")
    assert move_phrase(text, R, PEOPLE) == ("Ryan plants 2 flowers a day in his garden. He picks 3 roses on Friday. "
                                            "If he has 6 pots, how many are left?")
    assert merge_sentences(text, R, PEOPLE).startswith("Ryan plants 2 flowers a day in his garden, and on Friday,")
    assert passive(text, R, PEOPLE).startswith("2 flowers a day are planted by Ryan in his garden.")
    assert question_form("Ryan has 3 eggs. How many eggs will he eat?", R, PEOPLE) == (
        "Ryan has 3 eggs. What is the number of eggs that he will eat?")
    assert question_form("Calculate the total number of beds after 2 weeks.", R, PEOPLE) == (
        "What is the total number of beds after 2 weeks?")
    assert question_form("Ryan has 3 eggs. How much are his earnings?", R, PEOPLE) is None  # nothing to count
    assert name_for_pronoun("Ryan has 3 eggs. How many does he eat?", R, PEOPLE) == "Ryan has 3 eggs. How many does Ryan eat?"
    assert pronoun_for_name("Ryan has 3 eggs. How many does Ryan eat?", R, PEOPLE) == "Ryan has 3 eggs. How many does he eat?"
    # two people of one gender: "he" could be either, so neither direction applies
    assert name_for_pronoun("Ryan has 3 eggs. Tom has 2. How many does he eat?", R, PEOPLE) is None
    assert relative_clause("Sophie is a baker. She bakes 5 pies. How many?", R, PEOPLE) == (
        "Sophie, who is a baker, bakes 5 pies. How many?")
    assert split_sentence("Ryan had 61 apps. He deleted 9 apps and downloaded 18 more. How many are left?", R,
                          PEOPLE) == "Ryan had 61 apps. He deleted 9 apps. He downloaded 18 more. How many are left?"
    assert attach_elsewhere("Ryan saw a 10-foot shark with 2 6-inch fish.", R, PEOPLE) == (
        "Ryan saw a shark of 10 feet with 2 fish of 6 inches.")
    assert attach_elsewhere("It makes 5 tons per acre.", R, PEOPLE) == "It makes 5 tons for each acre."
    assert passive("Ryan buys 1/2 as many as Tom. How many?", R, PEOPLE) is None  # not a count of things


def test_every_probe_states_the_original_numbers_and_expects_the_original_answer() -> None:
    entry = _entry()
    probes = probes_for(entry, 79, PEOPLE, half_of(99))
    kinds = {p.kind for p in probes}
    assert ORIGINAL in kinds and {STATED, MOVED, FORM, RELATIVE, ATTACHED, PHRASE, MERGED} <= kinds
    original = next(p.query for p in probes if p.kind == ORIGINAL)
    assert original.startswith("Sophie is an avid gardener. She has 40 ledges with 2 plants each.")
    for probe in probes:
        assert probe.kind == CENTS or stated_numbers(probe.query) == stated_numbers(original), probe.kind
        assert probe.answer == 79 and probe.half == half_of(99) and probe.gsm8k_row == 99
    assert len({p.query for p in probes}) == len(probes)  # no kind repeats another's text
    assert {p.kind for p in probes} <= set(KINDS)
    assert [p.query for p in probes_for(entry, 79, PEOPLE, "tune")] == [p.query for p in probes]  # deterministic


def test_an_amount_under_a_dollar_is_written_in_cents_and_keeps_the_answer() -> None:
    assert amounts_in_cents("Each cap is worth $0.25, each pin $.05 and each hat $2.50.") == (
        "Each cap is worth 25 cents, each pin 5 cents and each hat $2.50.")
    assert amounts_in_cents("It costs $2.50.") is None
    entry = EntryPoint(id="gsm8k-0792", description="caps", root="answer",
                       template="He finds {caps} caps a day and each is worth ${value}. How much money does he make?",
                       params=(Param("caps", "caps", int, 6, minimum=0), Param("value", "value", float, 0.25, minimum=0)))
    cents = [p for p in probes_for(entry, 1.5, PEOPLE, "tune") if p.kind == CENTS]
    assert [(p.query, p.answer) for p in cents] == [("He finds 6 caps a day and each is worth 25 cents. How much money "
                                                      "does he make?", 1.5)]


def test_a_rewording_that_would_change_a_stated_number_is_dropped() -> None:
    assert stated_numbers("two 1-pound boxes and $2.50") == stated_numbers("$2.50 and two boxes of 1 pound")
    assert stated_numbers("3 eggs") != stated_numbers("three eggs")


def test_generate_takes_the_reference_answer_and_halves_by_row() -> None:
    entries = [_entry(row) for row in (5, 6, 7, 8)]
    probes = generate(entries, {5: 12.0, 6: 2.5, 7: 3.0}, PEOPLE, {"gsm8k-0005": "verified"})
    assert {p.entry_id for p in probes} == {"gsm8k-0005", "gsm8k-0006", "gsm8k-0007"}  # row 8 has no reference
    by_entry = {p.entry_id: p for p in probes if p.kind == ORIGINAL}
    assert by_entry["gsm8k-0005"].answer == 12 and isinstance(by_entry["gsm8k-0005"].answer, int)
    assert by_entry["gsm8k-0006"].answer == 2.5
    assert by_entry["gsm8k-0005"].verification == "verified" and by_entry["gsm8k-0006"].verification == "unverified"
    assert all(p.half == half_of(p.gsm8k_row) for p in probes)
    assert {half_of(r) for r in range(40)} == {"tune", "check"}


def test_report_counts_right_wrong_and_misses_per_kind_and_half() -> None:
    def record(kind: str, entry: str, served: bool, correct: bool, reason: str = "") -> dict:
        return {"system": "arc", "kind": kind, "expected_entry": entry, "served": served, "correct": correct,
                "path": "aligned" if served else "", "miss_reason": reason, "x_half": "tune"}

    records = [record(ORIGINAL, "gsm8k-0001", True, True), record(ORIGINAL, "gsm8k-0002", False, False, "x"),
               record(PASSIVE, "gsm8k-0001", True, False), record(PASSIVE, "gsm8k-0002", False, False,
                                                                   "extraction_failed")]
    table = report(records)
    assert "| passive | tune | 2 | 0 (0.0%) | 1 | 0/1 | extraction_failed 1 | aligned 1 |" in table
    assert "| original | tune | 2 | 1 (50.0%) | 0 | 1/1 | x 1 | aligned 1 |" in table


@pytest.mark.parametrize("kind", [NAME_FOR, PRONOUN_FOR, SPLIT])
def test_kinds_that_need_a_person_do_not_apply_without_one(kind: str) -> None:
    change = {NAME_FOR: name_for_pronoun, PRONOUN_FOR: pronoun_for_name, SPLIT: split_sentence}[kind]
    assert change("A farm has 3 cows and sells 2 goats. How many are left?", R, PEOPLE) is None

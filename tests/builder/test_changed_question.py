"""The changed-question probes: each change asks for something else, and a question it cannot change is skipped."""

from __future__ import annotations

import random

from builder.eval.changed_question import MORE, NEGATED, OTHER_NOUN, OTHER_PERSON, changes, final_question, generate

QUESTION = "Sam buys 5 apples and 6 pears at the market. How many apples does Sam buy?"


def test_each_change_rewrites_only_the_final_question():
    made = dict(changes(QUESTION, random.Random(0)))
    assert made[OTHER_NOUN] == "Sam buys 5 apples and 6 pears at the market. How many pears does Sam buy?"
    assert made[MORE] == "Sam buys 5 apples and 6 pears at the market. How many more apples does Sam buy?"
    assert made[NEGATED] == "Sam buys 5 apples and 6 pears at the market. How many apples does Sam not buy?"


def test_the_question_form_of_the_rewording_probes_is_changed_too():
    made = dict(changes("Sam buys 5 apples and 6 pears. What is the number of apples that Sam did buy?",
                        random.Random(0)))
    assert made[NEGATED].endswith("What is the number of apples that Sam did not buy?")
    assert made[MORE].endswith("What is the number of more apples that Sam did buy?")


def test_a_question_without_a_final_question_or_an_asked_noun_is_skipped():
    assert final_question("Sam buys 5 apples.") is None
    assert list(changes("Sam buys 5 apples.", random.Random(0))) == []
    assert OTHER_NOUN not in dict(changes("Sam buys 5 apples. How much does he pay?", random.Random(0)))


def test_rows_must_not_be_served_and_carry_their_half():
    rows = generate([{"query": QUESTION, "gsm8k_row": 3}, {"query": "no row"}])
    assert {r["kind"] for r in rows} == {OTHER_NOUN, MORE, NEGATED}
    assert all(r["reasoning_changed"] and r["answer"] is None and r["half"] in ("tune", "check") for r in rows)
    assert all(r["seed_query"] == QUESTION for r in rows)


def test_asked_about_another_person_the_question_names():
    made = dict(changes("Sam buys 5 apples. Kim buys 6 apples in May. How many apples does Sam buy?", random.Random(0)))
    assert made[OTHER_PERSON] == "Sam buys 5 apples. Kim buys 6 apples in May. How many apples does Kim buy?"
    # a month is not a person, and a question naming no one is not changed this way
    assert OTHER_PERSON not in dict(changes("Sam buys 5 apples in May. How many apples does Sam buy?", random.Random(0)))
    assert OTHER_PERSON not in dict(changes(QUESTION.replace("Sam buy", "he buy"), random.Random(0)))


def test_changes_read_what_the_final_question_asks_not_its_condition():
    made = dict(changes("Sam counts 100 customers and 7 cars. If the number of customers by Friday was 500, how many "
                        "customers did he count on Friday?", random.Random(0)))
    assert made[MORE].endswith("how many more customers did he count on Friday?")
    assert made[OTHER_NOUN].endswith("how many cars did he count on Friday?")  # a thing the question counts

"""Setting aside what a question itself calls irrelevant: what goes, and what must stay."""

from __future__ import annotations

import pytest

from edge_runtime.read.disclaimers import set_aside_disclaimed


def test_a_clause_that_calls_its_number_irrelevant_goes_and_the_rest_stays_as_written():
    question = ("She sold a third of her 30 vacuums at the green house, then baked 12 cupcakes for a fair, which is "
                "irrelevant to her sales.  She sold 2 more to the red house. How many are left?")
    aside = set_aside_disclaimed(question)
    assert aside.question == ("She sold a third of her 30 vacuums at the green house.  She sold 2 more to the red house. "
                              "How many are left?")
    assert aside.removed == ("then baked 12 cupcakes for a fair", "which is irrelevant to her sales")


@pytest.mark.parametrize("statement", [
    "They also find an old pack of 20 balloons, but they decide not to use them.",
    "She also notices a dress priced at $50, but decides not to buy it.",
    "She also saw a necklace for $50 but decided not to buy it.",
    "He also comes across a 10% coupon, but decides against it.",
    "She also saw a dress that cost $50, but she didn't buy it.",
    "She also saw a pair of shoes that cost $75, but again, she didn't buy them.",
    "She also saw a fish tank for $100, which she didn't buy.",
    "There are 20 other people at the park, but this is irrelevant to the contest.",
    "She also collected 200 pounds of rocks, but this doesn't affect her truck's capacity.",
])
def test_a_disclaimed_statement_is_set_aside(statement):
    question = f"Jo has 10 packs of 30 balloons. {statement} How many balloons are there?"
    aside = set_aside_disclaimed(question)
    assert aside.question == "Jo has 10 packs of 30 balloons. How many balloons are there?"
    assert aside.removed


def test_a_disclaimer_sentence_of_its_own_sets_aside_the_statement_before_it():
    question = ("Elvis has a saving target of $1125. He saves twice as much in the second half. During the first half, "
                "he also spends $5 daily on a hobby. This spending does not affect his saving target. How much does he "
                "save each day?")
    aside = set_aside_disclaimed(question)
    assert "$5" not in aside.question and "This spending" not in aside.question
    assert aside.question.startswith("Elvis has a saving target of $1125. He saves twice as much in the second half.")


def test_ignoring_something_sets_aside_the_sentence_that_alone_names_it():
    question = ("The bamboo grows 30 inches a day. Today it is 20 feet tall. She also has a maple tree that grows 2 "
                "inches a day, but it's already 50 feet tall. Ignoring the growth of the maple tree, in how many days "
                "will the bamboo be 600 inches tall?")
    aside = set_aside_disclaimed(question)
    assert aside.question == ("The bamboo grows 30 inches a day. Today it is 20 feet tall. In how many days will the "
                              "bamboo be 600 inches tall?")


def test_what_is_ignored_is_found_by_the_thing_not_by_the_attribute_or_a_verb():
    # "the number of apples they bought": apples are named in several sentences and "number", "bought" name no thing
    question = ("Rose bought 4 times the number of onions that Sophia bought. They split the apples equally. If Rose "
                "bought 12 onions and 10 apples, how many onions did Sophia buy, disregarding the number of apples they bought?")
    aside = set_aside_disclaimed(question)
    assert "4 times the number of onions" in aside.question and "12 onions and 10 apples" in aside.question


def test_a_disclaimer_with_a_subject_of_its_own_does_not_take_the_clause_before_it():
    question = ("A toy was $40. In January, the price of the toy decreased by 50%, while the board game was sold out and "
                "its price no longer mattered. What was the price of the toy?")
    assert "decreased by 50%" in set_aside_disclaimed(question).question


def test_the_number_a_disclaimer_names_as_unaffected_stays():
    question = ("Each small toy costs $4. She also sold keychains for $2 each, but the earnings from the keychains did not "
                "affect her total earnings of $120 from the toys. How many small toys did she sell?")
    aside = set_aside_disclaimed(question)
    assert "$2" not in aside.question and "$120" in aside.question


@pytest.mark.parametrize("question", [
    "Sam has 12 pears and buys 20 more pears. How many pears does Sam have?",
    "He deleted 99 apps he didn't use anymore and downloaded 18 more. How many apps are left if he had 120?",
    "The town had 900 people. The population declined by 20 each year. How many people are there after 3 years?",
    "A fee of $200 covers the room. This does affect the total of $50 per guest. How much do 10 guests cost?",
    # things taken away, not set aside
    "Sam has 12 pears and buys 20 more pears. He eats 4 pears, but he decides not to eat any more. How many pears are left?",
    "Mia has 10 coupons, 3 of which are expired. How many coupons can she use?",
    "There are 30 students in the class. 5 of them are not participating in the trip. How many students go on the trip?",
    "Sam has 12 apples and 3 pears. How many fruits does Sam have, not counting the pears?",
    "Sam has 12 apples and 3 pears. How many fruits does Sam have, ignoring the pears?",
    "A book costs $10. The tax is 8%. Despite the tax, she bought 3 books. How much did she pay?",
    "Sam has 20 apples and doesn't use 5 of them. He sells the rest. How many apples does he sell?",
    # "didn't use" sets aside a thing offered, not the scene's number before it
    "The shampoo costs $24.00 and comes with a conditioner worth $10.00, which Jo doesn't use. How much is a wash?",
    'Taffy is $5 a pound, "buy 2, get 1 pound 1/2 off." Despite a special offer on candy canes, which she didn\'t buy, '
    "she bought 2 pounds. How much did she pay?",
    # the sentence that asks is not the last one
    "Sam has 12 pears and buys 20 more pears. How many pears does Sam have? 4 of them are irrelevant. Answer with a number.",
])
def test_questions_without_a_disclaimed_number_are_left_as_they_are(question):
    aside = set_aside_disclaimed(question)
    assert aside.question == question and aside.removed == ()


def test_nothing_is_set_aside_when_it_would_leave_no_number():
    question = "She bought 3 apples, which is irrelevant. How many pears did she buy?"
    assert set_aside_disclaimed(question).question == question


def test_the_final_question_is_never_cut_except_for_its_ignoring_phrase():
    question = "Jo has 10 pens and 4 cups. How many pens does Jo have, ignoring the cups, if she decides not to buy 3 more?"
    aside = set_aside_disclaimed(question)
    assert aside.question.startswith("Jo has 10 pens and 4 cups.") and "decides not to buy 3 more" in aside.question


def test_a_long_question_full_of_disclaimers_keeps_its_final_question():
    things = [chr(97 + i % 26) * 3 + chr(97 + i // 26) * 2 for i in range(80)]
    question = " ".join(f"Bob has {i} {things[i]}, ignoring the {things[(i + 1) % 80]}, which is irrelevant."
                        for i in range(80))[:4000] + " How many?"
    aside = set_aside_disclaimed(question)  # 4 KB, the server's limit: ~8 ms (it was quadratic: 150 ms)
    assert aside.removed and aside.question.endswith("How many?") and "Bob has 0" in aside.question


def test_a_disclaimer_that_names_what_it_points_back_at_takes_the_clause_before_it():
    question = ("Each whale has 40 gallons of blood. A shark has three times as much blood as a whale. In class, she "
                "learned that a dolphin has half the blood of a whale, but this information is not relevant here. "
                "How many gallons of blood do ten sharks have?")
    aside = set_aside_disclaimed(question)
    assert "dolphin" not in aside.question and "three times" in aside.question


def test_what_a_set_aside_number_counts_is_checked_against_the_template():
    from edge_runtime.read.disclaimers import counts_what_template_counts

    template = "Gissela's truck can haul {a} pounds of gravel. How many pounds of gravel can Gary's truck carry?"
    rocks = set_aside_disclaimed("Gissela's truck can haul 4,000 pounds of gravel. She also collected 200 pounds of "
                                 "unique rocks, but this doesn't affect her truck's capacity. How many pounds of gravel "
                                 "can Gary's truck carry?")
    assert rocks.removed and counts_what_template_counts(rocks, template) is None  # rocks, not pounds, are counted
    gravel = set_aside_disclaimed("Gissela's truck can haul 4,000 pounds of gravel. She also dropped 200 pounds of "
                                  "gravel, but this doesn't affect her truck's capacity. How many pounds of gravel "
                                  "can Gary's truck carry?")
    assert counts_what_template_counts(gravel, template) == "gravel"
    maple = set_aside_disclaimed("The bamboo grows 30 inches a day. She also has a maple tree that grows 2 inches a "
                                 "day. Ignoring the maple tree, in how many days will the bamboo be 600 inches tall?")
    bamboo = "The bamboo grows {a} inches a day. In how many days will it be {b} inches?"
    assert counts_what_template_counts(maple, bamboo) is None
    assert counts_what_template_counts(maple, "A maple tree grows {a} inches a day. In how many days ...?") == "maple"

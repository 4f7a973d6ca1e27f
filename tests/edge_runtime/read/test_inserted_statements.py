"""A sentence without a number that says something of what the entry counts, and operations added in words alone."""

from __future__ import annotations

import pytest

from edge_runtime.entries.metadata import EntryPoint, Param
from edge_runtime.read.guard import GuardConfig, ReasoningGuard, check
from edge_runtime.read.inserted_statements import (
    TemplateWording,
    added_without_number,
    changed_in_words,
    counted_things,
    number_free_words,
    statement_refusal,
)
from edge_runtime.read.mentions import scan
from tests.edge_runtime.read.test_guard import DUCK_VALUES, DUCKS, VACUUMS

BASE = ("Janet's ducks lay 20 eggs per day. She eats 2 for breakfast every morning and bakes muffins for her friends "
        "every day with 5. {} She sells the remainder at the farmers' market daily for $3 per fresh duck egg. How much "
        "in dollars does she make every day at the farmers' market?")


def test_the_things_a_text_counts_follow_its_numbers():
    assert counted_things(DUCKS.template) == {"egg"}
    assert counted_things("Each {a} ounce can of tomatoes holds {b} tomatoes. She buys 5 pounds of apples.") == {
        "tomatoe", "apple"}  # past the unit: what it measures
    assert counted_things("She works {h} hours per day.") == frozenset()


def test_the_words_of_number_free_sentences_leave_out_names_and_sentences_with_numbers():
    words = number_free_words(VACUUMS.template)
    assert {"door", "saleswoman"} <= words and "melanie" not in words
    assert not words & {"vacuum", "cleaner", "house"}  # their sentences state numbers
    assert "read" in number_free_words(  # a condition of the final question, said as a statement
        "Dolly has {d} books. Pandora has {p}. If both read each other's books as well as their own, how many books "
        "will they read?")
    assert number_free_words("The employees went on a day trip. {b} buses were rented.") >= {"employee", "trip"}
    assert "display" in number_free_words("The city has a display for the 4th of July. It sets off {n} rockets.")


@pytest.mark.parametrize("statement", [
    "None of the eggs are counted.", "The rest of the eggs are sold.", "Both of her neighbours bring the same number "
    "of eggs.", "All but the first of the eggs are given away.",
])
def test_a_statement_of_its_own_about_what_the_entry_counts_is_refused(statement):
    question = BASE.format(statement)
    refusal = check(DUCKS, question, DUCK_VALUES)
    assert refusal is not None and "what the entry counts" in refusal and "eggs" in refusal
    assert check(DUCKS, question, DUCK_VALUES, "aligned") == refusal  # on the aligned path too
    config = GuardConfig(check_statements=False)
    assert ReasoningGuard(config)(DUCKS, question, DUCK_VALUES, "lm-draft") is None  # the switch


@pytest.mark.parametrize("aside", ["The sky was clear.", "Everyone was in a good mood.", "One of her ducks is brown.",
                                   "It was a busy week."])
def test_a_sentence_beside_the_reasoning_still_passes(aside):
    assert check(DUCKS, BASE.format(aside), DUCK_VALUES) is None


def test_a_number_free_sentence_of_the_template_said_again_passes():
    dolly = EntryPoint(id="dolly", description="books", root="r", template=(
        "Dolly has {d} books. Pandora has {p}. If both Dolly and Pandora read each others' books as well as their own, "
        "how many books will they collectively read by the end?"),
        params=(Param("d", "Dolly's books", int, 2, minimum=0), Param("p", "Pandora's books", int, 1, minimum=0)))
    stated = ("Dolly has 2 books. Pandora has 1. Both Dolly and Pandora read each others' books as well as their own. "
              "How many books will they collectively read by the end?")
    assert check(dolly, stated, {"d": 2, "p": 1}) is None
    question = ("Melanie sells vacuum cleaners door to door. At the green house she sold one third of them, then 3 "
                "more at the red house, and at the orange house half of the rest. If Melanie has 6 vacuum cleaners "
                "left, how many did she start with?")
    assert check(VACUUMS, question, {"red": 3, "left": 6}) is None
    changed = question.replace("Melanie sells vacuum cleaners door to door.", "None of the vacuum cleaners are sold.")
    assert check(VACUUMS, changed, {"red": 3, "left": 6}) is not None


@pytest.mark.parametrize("clause", [", but none of the eggs are counted", ", and the rest of the eggs are sold",
                                    "; all except the first of the eggs are given away"])
def test_a_clause_of_its_own_joined_to_a_sentence_with_numbers_is_refused(clause):
    question = BASE.format("").replace(" with 5.", f" with 5{clause}.")
    assert "what the entry counts" in check(DUCKS, question, DUCK_VALUES, "aligned")


def test_a_bare_list_of_things_is_no_clause_of_its_own():
    """"5 apples and oranges": the fragment after "and" names a counted thing and nothing else."""
    question = "Ann has 5 apples and oranges. She eats 2 apples. How many apples are left?"
    assert statement_refusal(question, frozenset({"apple", "orange"}), frozenset(), scan(question)) is None


def test_names_and_ordinals_are_no_words_of_a_clause_of_its_own():
    """"Calvin is an adult" (for "He is an adult") says nothing new; "March 1st and April 19th" counts no "th"."""
    calvin = ("Calvin has a pot with enough soup to fill 4 adult's bowls. Calvin is an adult and eats with his 2 "
              "children. How many bowls are left?")
    assert statement_refusal(calvin, frozenset({"adult", "bowl"}), frozenset({"adult"}), scan(calvin)) is None
    days = "He helps 2 people per day between March 1st and April 19th off. How many people does he help?"
    assert statement_refusal(days, frozenset({"people"}), frozenset(), scan(days)) is None
    assert counted_things(days) == {"people"}


def test_a_renamed_thing_is_counted_by_the_questions_own_numbers():
    """The template counts apples; a question that counts oranges names them in its own statement."""
    question = ("Mei bought 175 oranges from the store. None of the oranges are counted. She ate 2/5 of them. How "
                "many oranges are left?")
    refusal = statement_refusal(question, frozenset({"apple"}), frozenset(), scan(question))
    assert refusal is not None and "None of the oranges" in refusal


@pytest.mark.parametrize(("sentence", "refused"), [
    ("Then the whole thing happens again.", "again"), ("She does the same every day for a week.", "for a week"),
    ("This goes on for a fortnight.", "for a fortnight"), ("She buys another basket.", "another"),
    ("It was a busy week.", None),
])
def test_an_operation_added_in_words_alone(sentence, refused):
    question = BASE.format(sentence)
    said = added_without_number(question, TemplateWording.of(DUCKS.template), frozenset(DUCKS.template.lower().split()))
    assert (said is None) if refused is None else (refused in said)
    assert (check(DUCKS, question, DUCK_VALUES) is None) is (refused is None)


def test_a_span_of_time_the_template_states_or_a_number_of_them_is_not_added():
    template = "A man eats {man} tacos per day. How many tacos does he eat in a week?"
    question = "A man eats 4 tacos per day. How many tacos does he eat in a week?"
    assert added_without_number(question, TemplateWording.of(template), frozenset(template.lower().split())) is None
    weeks = TemplateWording.of("How many in {w} week?")
    assert added_without_number(question.replace("in a week", "in one week"), weeks, frozenset()) is None


def test_a_final_question_that_asks_in_one_week_where_the_template_names_no_week_is_refused():
    """"How many diapers does he change in one week?" of an entry that asks "per day": seven days' worth. The number
    rules leave a weak "one" alone, so the span itself says it."""
    template = "Jo has {k} children. Each needs {c} changes per day. How many changes does Jo make per day?"
    question = "Jo has 3 children. Each needs 5 changes per day. How many changes does Jo make in one week?"
    said = added_without_number(question, TemplateWording.of(template), frozenset(template.lower().split()))
    assert said is not None and "in one week" in said


@pytest.mark.parametrize("question", ["", "?", "....", "A" * 5000 + ".", "None of the {eggs} are counted. How many?",
                                      "\x00 eggs. None of the eggs. ?"])
def test_hostile_questions_are_judged_without_error(question):
    statement_refusal(question, frozenset({"egg"}), frozenset(), scan(question))
    added_without_number(question, TemplateWording.of(DUCKS.template), frozenset())
    assert isinstance(check(DUCKS, question, DUCK_VALUES), (str, type(None)))


SPRINTS = EntryPoint(id="sprints", description="sprints", root="r", template=(
    "James decides to run {n} sprints {k} times a week. He runs {m} meters each sprint. How many total meters does he "
    "run a week?"), params=(Param("n", "sprints", int, 3, minimum=0), Param("k", "times a week", int, 3, minimum=0),
                            Param("m", "meters", int, 60, minimum=0)))
SPRINT_VALUES = {"n": 3, "k": 3, "m": 60}


@pytest.mark.parametrize(("question", "why"), [
    ("James decides to run 3 sprints 3 times a week. He runs 60 meters less each sprint. How many total meters does "
     "he run a week?", "compares with 'less'"),
    ("James decides to run 3 sprints 3 times a month. He runs 60 meters each sprint. How many total meters does he "
     "run a week?", "rate per 'month'"),
])
@pytest.mark.parametrize("path", ["aligned", "lm-draft"])
def test_a_quantity_changed_by_its_words_is_refused(question, why, path):
    assert why in check(SPRINTS, question, SPRINT_VALUES, path)


ROWING = EntryPoint(id="rowing", description="rowing", root="r", template=(
    "Dijana rowed {d} miles. Anis rowed {f} times more miles than Dijana. How many miles did the two of them row?"),
    params=(Param("d", "Dijana's miles", int, 50, minimum=0), Param("f", "times more", float, 0.2, minimum=0)))


@pytest.mark.parametrize(("compared", "refused"), [
    ("1/4 times more miles than Dijana", None),
    ("1/4 times as many miles as Dijana", "no longer compares with 'more'"),  # a fraction of, not a fraction more
    ("1/4 of the miles Dijana rowed", "no longer compares with 'more'"),
])
@pytest.mark.parametrize("path", ["aligned", "lm-draft"])
def test_a_comparison_the_question_drops_changes_the_quantity(compared, refused, path):
    question = f"Dijana rowed 40 miles. Anis rowed {compared}. How many miles did the two of them row?"
    why = check(ROWING, question, {"d": 40, "f": 0.25}, path)
    assert (why is None) if refused is None else (why is not None and refused in why), why


@pytest.mark.parametrize(("question", "refused"), [
    ("If opals are worth $300 each and garnets are worth $800 each, how much are her jewels worth?", False),
    ("If opals are worth $300 and garnets are worth $800, how much are all her jewels worth in total?", False),
    ("If opals are worth $1700 in total and garnets are worth $800 each, how much are her jewels worth?", True),
    ("If opals are worth $1700 for all of them and garnets are worth $800, how much are her jewels worth?", True),
])
def test_an_amount_stated_as_a_total_where_the_template_states_it_plainly(question, refused):
    """"worth ${v}" is read per jewel by the entry; "worth $1700 in total" is the opals' total, another reasoning.
    "in total" in the final question totals the answer, which the entry does anyway."""
    template = "If opals are worth ${o} and garnets are worth ${g}, how much money are all her jewels worth?"
    said = changed_in_words(question, TemplateWording.of(template))
    assert (said is not None) == refused, said


def test_a_rate_or_a_share_beside_a_total_is_no_amount_given_for_all():
    """"$400 per month in total" is still per month, and "0.25 of the overall number" names no total of an amount."""
    template = "They spend ${s} per month on food. After an hour, {f} of the people left. How much do they spend?"
    question = "They spend $400 per month in total on food. After an hour, 0.25 of the overall number of people left. " \
               "How much do they spend?"
    assert changed_in_words(question, TemplateWording.of(template)) is None


@pytest.mark.parametrize(("question", "refused"), [
    ("Sven uses 4 pads of paper a week. If there are 60 sheets on a pad, how many sheets does he use every month?", False),
    ("Sven uses at least 4 pads of paper a week. If there are 60 sheets on a pad, how many sheets does he use every "
     "month?", True),
    ("Sven uses over 4 pads of paper a week. If there are 60 sheets on a pad, how many sheets does he use every "
     "month?", True),
    ("Sven uses 4 pads of paper a week. If there are about 60 sheets on a pad, how many sheets does he use every "
     "month?", True),
])
def test_a_number_given_as_a_bound_is_no_amount_to_read(question, refused):
    """"at least 4 pads" has no one answer: the entry's, read for exactly 4, would be served as if it had."""
    template = "Sven uses {p} pads of paper a week. If there are {s} sheets on a pad, how many sheets does he use every month?"
    said = changed_in_words(question, TemplateWording.of(template))
    assert (said is not None) == refused, said
    if "about 60" in question:  # a bound the template writes too is its own wording
        assert changed_in_words(question, TemplateWording.of(template.replace("{s} sheets", "about {s} sheets"))) is None


def test_than_alone_dropped_is_no_comparison_dropped():
    """"twice the number of emeralds *than* the rubies" and "2 times as many emeralds as rubies" compare alike."""
    template = "There were {d} diamonds, {r} fewer rubies than diamonds, and {e} the number of emeralds than the rubies."
    question = "There were 170 opals, 60 fewer garnets than opals, and 2 times as many pearls as garnets."
    assert changed_in_words(question, TemplateWording.of(template)) is None


@pytest.mark.parametrize("question", [
    "James decides to run 3 sprints 3 times a month. He runs 60 meters each sprint. How many total meters does he "
    "run a month?",  # the period renamed throughout: the same reasoning
    "James decides to run 3 sprints 3 times a week. He runs 60 meters per sprint. How many total meters does he run "
    "a week?",
])
def test_a_period_renamed_throughout_or_each_for_per_is_the_same_reasoning(question):
    assert check(SPRINTS, question, SPRINT_VALUES, "aligned") is None


@pytest.mark.parametrize(("story", "swapped"), [
    ("Tom is 10 years older than Ann, and Ann is 14 years older than Bo.", "younger"),
    ("Tom bought 5 apples and sold 2.", "sold"),
])
def test_a_word_in_place_of_its_opposite_is_refused(story, swapped):
    template = "Tom is {a} years younger than Ann, and Ann is {b} years older than Bo. If Bo is {c}, how old is Tom?"
    if "apples" in story:
        template = "Tom bought {a} apples and bought {b} more. If he ate {c}, how many are left?"
        question = "Tom bought 5 apples and sold 2 more. If he ate 3, how many are left?"
    else:
        question = story + " If Bo is 34, how old is Tom?"
    said = changed_in_words(question, TemplateWording.of(template))
    assert said is not None and "where the entry's question says" in said
    stated = template.replace("{a}", "5").replace("{b}", "2").replace("{c}", "3")
    assert changed_in_words(stated, TemplateWording.of(template)) is None


@pytest.mark.parametrize(("template", "question"), [
    ("The pasta costs ${p} a box, and he spends ${c} on cheddar. How much does he spend in a year?",
     "The pasta costs $5 a box, and he saves $4 on cheddar. How much does he spend in a year?"),
    ("She painted {n} mugs and sold them for ${p} each. How much did she earn?",
     "She painted 9 mugs and kept them for $16 each. How much did she earn?"),
])
def test_holding_money_or_goods_is_no_spending_or_selling(template, question):
    """"saves" and "keeps" hold what "spends" and "sells" let go: in the other's place they reverse the operation."""
    said = changed_in_words(question, TemplateWording.of(template))
    assert said is not None and "where the entry's question says" in said, said


def test_the_rest_explains_nothing_but_may_be_said_again():
    """"The rest of the plants are sold." adds a sale though the template says "the rest are flowering plants"."""
    template = ("There are {n} plants in her garden. {a} of her plants are indoor plants. {b} of the remaining are outdoor "
                "plants while the rest are flowering plants. What percent of the plants are flowering plants?")
    sold = ("There are 360 plants in her garden. 1/2 of her plants are indoor plants. 3/5 of the remaining are outdoor "
            "plants while the rest are flowering plants. The rest of the plants are sold. What percent of the plants "
            "are flowering plants?")
    assert statement_refusal(sold, counted_things(template), number_free_words(template), scan(sold)) is not None
    again = sold.replace("The rest of the plants are sold.", "The rest are flowering plants.")
    assert statement_refusal(again, counted_things(template), number_free_words(template), scan(again)) is None


LOAVES = ("A bakery bakes {n} loaves. It sells {a} of them in the morning and donates {f} of the remaining loaves to a "
          "shelter. How many loaves does it donate?")


@pytest.mark.parametrize(("question", "refused"), [
    ("A bakery bakes 90 loaves. It sells 30 of them in the morning and donates 1/2 of the sold loaves to a shelter. "
     "How many loaves does it donate?", True),  # another part of the loaves
    ("A bakery bakes 90 loaves. It sells 30 of them in the morning and donates 1/2 of the loaves to a shelter. "
     "How many loaves does it donate?", True),  # of all of them
    ("A bakery bakes 90 loaves. It sells 30 of them in the morning and donates 1/2 of the loaves left to a shelter. "
     "How many loaves does it donate?", False),
    ("A bakery bakes 90 loaves. In the morning 30 of them are sold, and 1/2 of the rest go to a shelter. How many "
     "loaves does it donate?", False),
])
def test_an_operation_on_what_remains_may_not_take_another_part(question, refused):
    assert _refused(LOAVES, question, "what remains") is refused


@pytest.mark.parametrize(("question", "refused"), [
    ("Lena had 12 plums. She ate 3 of them and sold 4. How many plums does she have now?", False),
    ("Lena had 12 plums. She consumed 3 of them and sold 4. How many plums does she have now?", False),
    ("Lena had 12 plums. She picked 3 of them and sold 4. How many plums does she have now?", True),
    ("Lena had 12 plums. She ate 3 of them and collected 4. How many plums does she have now?", True),
])
def test_a_verb_that_moves_a_thing_the_other_way_is_refused(question, refused):
    template = "Lena had {n} plums. She ate {a} of them and sold {b}. How many plums does she have now?"
    assert _refused(template, question, "where the entry's question says") is refused


@pytest.mark.parametrize(("question", "refused"), [
    ("Nell sells 40 mugs at $6 each and 12 bowls at $9 each. How much money does she make?", False),
    ("Nell sells 40 mugs at $6 apiece and 12 bowls at $9 per bowl. How much money does she make in total?", False),
    ("Nell sells 40 mugs at $6 in total and 12 bowls at $9 each. How much money does she make?", True),
    ("Nell sells 40 mugs at $6 each and 12 bowls for $9 altogether. How much money does she make?", True),
])
def test_an_amount_for_all_where_the_template_gives_it_for_each_is_refused(question, refused):
    template = "Nell sells {m} mugs at ${p} each and {b} bowls at ${q} each. How much money does she make?"
    assert _refused(template, question, "for all of something") is refused


@pytest.mark.parametrize(("question", "refused"), [
    ("A shop has 48 grey shirts and 110 floral shirts. The price of each shirt was increased by $4. What is the price "
     "of a shirt now?", False),
    ("A shop has 48 grey shirts and 110 floral shirts. The price of each shirt went up by $4. What is the price of a "
     "shirt now?", False),
    ("A shop has 48 grey shirts or 110 floral shirts. The price of each shirt was increased by $4. What is the price "
     "of a shirt now?", True),
    ("A shop has 48 grey shirts and 110 floral shirts. The price of each shirt was increased to $4. What is the price "
     "of a shirt now?", True),
])
def test_amounts_joined_or_changed_otherwise_are_refused(question, refused):
    template = ("A shop has {g} grey shirts and {f} floral shirts. The price of each shirt was increased by ${d}. What is "
                "the price of a shirt now?")
    assert _refused(template, question) is refused


def test_the_same_rate_is_not_a_different_one():
    template = "A jet travels {d} miles in {h} hours. At the same rate, how long would it take to travel {e} miles?"
    changed = "A jet travels 500 miles in 2 hours. At a different rate, how long would it take to travel 900 miles?"
    assert _refused(template, changed, "'different'")
    assert not _refused(template, changed.replace("a different", "that same"))


def _refused(template: str, question: str, why: str = "") -> bool:
    """``changed_in_words`` refuses ``question`` against ``template``, saying ``why``."""
    said = changed_in_words(question, TemplateWording.of(template))
    return said is not None and why in said


@pytest.mark.parametrize(("question", "refused"), [
    ("Dan plants 6 tulips each day in his garden. After 12 days, how many tulips has he planted?", False),
    ("Dan plants 6 tulips daily in his garden. After 12 days, how many tulips has he planted?", False),
    ("Dan plants 6 tulips a week in his garden. After 12 days, how many tulips has he planted?", True),
    ("Dan plants 6 tulips a week in his garden. After 12 weeks, how many tulips has he planted?", False),  # renamed
])
def test_a_rate_per_another_period_where_the_question_names_another_time_is_refused(question, refused):
    template = "Dan plants {n} tulips a day in his garden. After {d} days, how many tulips has he planted?"
    assert _refused(template, question, "another period") is refused


@pytest.mark.parametrize(("question", "refused"), [
    ("Rob earns $9 an hour at his first job for 10 hours and $6 an hour at a second job for 5 hours. How much does he "
     "earn?", False),  # "a second job": an ordinal, no rate per second
    ("Rob earns $9 an hour at his first job for 10 hours and $6 a second at his other job for 5 hours. How much does he "
     "earn?", True),
])
def test_second_before_a_thing_is_an_ordinal_not_a_period(question, refused):
    template = ("Rob earns ${a} an hour at his first job for {h} hours and ${b} an hour at his second job for {k} hours. "
                "How much does he earn?")
    assert _refused(template, question, "another period") is refused


CHORES = EntryPoint(
    id="chores",
    description="three people's chores",
    template=("Amalia's work was to mow the lawn, which took her {mow} hours. Megan walked the dog, which took her {dog} "
              "hours longer than Amalia. Dior did the laundry and took well over {laundry} hours longer than Amalia. "
              "Calculate the total time they all took."),
    params=(Param("mow", "hours mowing", int, 4, minimum=0), Param("dog", "hours longer walking", int, 2, minimum=0),
            Param("laundry", "hours longer on laundry", int, 3, minimum=0)),
    root="answer the chores question",
    answer_key="answer",
)


@pytest.mark.parametrize(("question", "refused"), [
    ("Amalia's work was to mow the lawn, which took over 5 hours. Megan walked the dog, which took her 2 hours longer "
     "than Amalia. Dior did the laundry and took 3 hours longer than Amalia. Calculate the total time they all took.",
     True),  # the template's one bound dropped and another number bounded: as many bounds, another amount
    ("Amalia's work was to mow the lawn, which took her 5 hours. Megan walked the dog, which took her 2 hours longer "
     "than Amalia. Dior did the laundry and took well over 3 hours longer than Amalia. Calculate the total time they "
     "all took.", False),
    ("Amalia's work was to mow the lawn, which took her 5 hours. Megan walked the dog, which took her 2 hours longer "
     "than Amalia. Dior did the laundry and took 3 hours longer than Amalia. Calculate the total time they all took.",
     False),  # a bound dropped leaves the amount the entry reads
    ("Amalia's work was to mow the lawn, which took her 5 hours. Megan walked the dog, which took her 2 hours longer "
     "than Amalia. Dior did the laundry and took about 3 hours longer than Amalia. Calculate the total time they all "
     "took.", True),
])
def test_a_bound_stays_with_the_number_the_template_bounds(question, refused):
    values = {"mow": 5, "dog": 2, "laundry": 3}
    said = check(CHORES, question, values)
    assert (said is not None and "bound" in said) == refused, said


def _school(unread: frozenset[str]) -> EntryPoint:
    return EntryPoint(
        id="school", description="students by age",
        template=("A school enrolls {total} students. {half} of these students are over {age} years old, and {quarter} "
                  "of the students over {age} years old are male. The remaining {rest} of the students are under {age} "
                  "years old, and {third} of the students under {age_again} are male. How many female students are "
                  "there?"),
        params=(Param("total", "students", int, 1000, minimum=0), Param("half", "share over", float, 0.5, minimum=0),
                Param("age", "age", int, 16, minimum=0), Param("quarter", "male share over", float, 0.25, minimum=0),
                Param("rest", "share under", float, 0.5, minimum=0),
                Param("third", "male share under", float, 0.5, minimum=0), Param("age_again", "age", int, 16, minimum=0)),
        root="answer the school question", answer_key="answer", unread=unread)


def test_a_number_the_reasoning_never_reads_may_be_bounded():
    """GSM8K 1009: "over 16 years old ... under 16" of a count of students, where the four 16s are bound to two slots
    by the words around them and one lands beside the other bound. The answer depends on no 16 (the device tells
    the unread parameters from the compiled code), so their bounds change nothing; read, they would."""
    question = ("A school enrolls 1200 students. Half of these students are over 16 years old, and 1/4 of the students "
                "over 16 years old are male. The remaining half of the students are under 16 years old, and 1/2 of the "
                "students under 16 are male. How many female students are there?")
    values = {"total": 1200, "half": 0.5, "age": 16, "quarter": 0.25, "rest": 0.5, "third": 0.5, "age_again": 16}
    assert check(_school(frozenset({"age", "age_again"})), question, values) is None
    assert "bound" in check(_school(frozenset()), question, values)
    assert "bound" in check(_school(frozenset({"age", "age_again"})), question.replace("enrolls 1200", "enrolls about 1200"),
                            values)

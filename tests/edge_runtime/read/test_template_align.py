"""The aligned fast path: the template reworded around its slots, and nothing else changed."""

from __future__ import annotations

import pytest

from edge_runtime.entries.metadata import Param
from edge_runtime.read.template_align import aligned_values, renamed_role_asked

TEMPLATE = (
    "Benny saw a {length}-foot shark with {count} {size}-inch remoras attached to it. "
    "Half of the remoras are grey. What percentage of the shark's body length is the combined length of the remoras?"
)
PARAMS = (
    Param(name="length", description="length of the shark in feet", type=int, original=10, minimum=1),
    Param(name="count", description="number of remoras", type=int, original=2, minimum=0),
    Param(name="size", description="length of one remora in inches", type=int, original=6, minimum=1),
)


def test_names_and_objects_reworded_around_the_slots():
    question = (
        "Michael saw a 140-foot dolphin with 7 24-inch remoras attached to it. "
        "Half of the remoras are grey. What percentage of the dolphin's body length is the combined length of the remoras?"
    )
    assert aligned_values(TEMPLATE, PARAMS, question) == {"length": "140", "count": "7", "size": "24"}


def test_number_words_in_a_slot_are_kept_for_the_value_reader():
    question = TEMPLATE.format(length="twelve", count="3", size="5")
    assert aligned_values(TEMPLATE, PARAMS, question) == {"length": "twelve", "count": "3", "size": "5"}


@pytest.mark.parametrize(
    "question",
    [
        # a constant of the cached reasoning changed: different reasoning, not new values
        TEMPLATE.format(length=140, count=7, size=24).replace("Half of", "One third of"),
        # a quantity added outside the slots
        TEMPLATE.format(length=140, count=7, size=24).replace("are grey.", "are grey and 3 more swim by."),
        # a value removed: the slot has nothing between its anchors
        "Benny saw a shark with 7 24-inch remoras attached to it. Half of the remoras are grey. "
        "What percentage of the shark's body length is the combined length of the remoras?",
        # a different question altogether
        "How many legs does a spider have?",
        # two numbers where one value belongs
        TEMPLATE.format(length="140 or 150", count=7, size=24),
    ],
)
def test_anything_else_declines(question):
    assert aligned_values(TEMPLATE, PARAMS, question) is None


def test_choice_slots_accept_only_their_choices():
    template = "Ship {n} boxes by {mode} to the warehouse."
    params = (Param(name="n", description="boxes", type=int, original=2),
              Param(name="mode", description="mode", type=str, original="air", choices=("air", "sea")))
    assert aligned_values(template, params, "Please ship 9 boxes by sea to the warehouse.") == {"n": "9", "mode": "sea"}
    assert aligned_values(template, params, "Please ship 9 boxes by train to the warehouse.") is None


def test_objects_units_and_currency_change_around_the_slots():
    template = ("Raphael went to buy some school supplies. He bought {pens} pens which cost ${pen_cost} each, "
                "and a rim of bond paper which cost ${paper}. How much did Raphael spend on everything?")
    params = (
        Param(name="pens", description="pens bought", type=int, original=4, minimum=0),
        Param(name="pen_cost", description="cost of a pen", type=float, original=1.5, minimum=0),
        Param(name="paper", description="cost of the paper", type=float, original=20.0, minimum=0),
    )
    question = ("William went to buy some school supplies. He bought 8 folders which cost £2.75 each, and a rim of "
                "bond paper which cost £13. How much did William spend on everything?")
    assert aligned_values(template, params, question) == {"pens": "8", "pen_cost": "2.75", "paper": "13"}
    # an added purchase is an added quantity: not the same reasoning
    added = question.replace("each, and", "each, 3 erasers, and")
    assert aligned_values(template, params, added) is None


def test_plural_units_and_number_words_in_a_changed_stretch():
    template = "He buys {count} {weight}-pound bales of hay for his horses."
    params = (Param(name="count", description="bales", type=int, original=4, minimum=0),
              Param(name="weight", description="pounds per bale", type=int, original=75, minimum=1))
    assert aligned_values(template, params, "He buys thirty-two 65-pounds bales of hay for his horses.") == {
        "count": "thirty-two", "weight": "65"}


def test_a_short_instruction_may_not_change_what_it_asks_for():
    template = "Convert {value} degrees {unit} to kelvin."
    params = (Param(name="value", description="temperature", type=float, original=20.0),
              Param(name="unit", description="scale", type=str, original="celsius", choices=("celsius", "fahrenheit")))
    assert aligned_values(template, params, "Please convert 451 degrees fahrenheit to kelvin.") == {
        "value": "451", "unit": "fahrenheit"}
    assert aligned_values(template, params, "Convert 451 degrees fahrenheit to rankine.") is None


def test_the_final_question_may_not_ask_for_what_the_template_gives():
    template = ("John earns {wage} dollars an hour and works {hours} hours a week. He buys {pens} pens that cost "
                "{pen_cost} dollars each. How many {pencil_cost} dollar pencils can he buy with the rest?")
    params = tuple(Param(name=n, description=n, type=int, original=o, minimum=0)
                   for n, o in (("wage", 50), ("hours", 6), ("pens", 4), ("pen_cost", 25), ("pencil_cost", 10)))
    same = template.format(wage=40, hours=5, pens=3, pen_cost=20, pencil_cost=5)
    assert aligned_values(template, params, same) is not None
    assert aligned_values(template, params, same.replace("dollar pencils", "dollar pens")) is None


def test_a_repeated_slot_must_read_one_value():
    template = "A {n}-item quiz has {n} questions and {k} answers."
    params = (Param(name="n", description="items", type=int, original=60),
              Param(name="k", description="answers", type=int, original=3))
    assert aligned_values(template, params, "A 30-item quiz has 30 questions and 4 answers.") == {"n": "30", "k": "4"}
    assert aligned_values(template, params, "A 30-item quiz has 31 questions and 4 answers.") is None


def test_two_words_trading_places_inside_the_final_question_is_a_swap():
    template = ("John has {money} dollars. How many {pen_cost} dollar pens can he buy after he buys {pencils} pencils "
                "that cost {pencil_cost} dollars each?")
    params = tuple(Param(name=n, description=n, type=int, original=o, minimum=0)
                   for n, o in (("money", 100), ("pen_cost", 10), ("pencils", 4), ("pencil_cost", 5)))
    question = template.format(money=90, pen_cost=10, pencils=4, pencil_cost=25)
    assert aligned_values(template, params, question) is not None
    swapped = question.replace("dollar pens", "dollar PENCILS").replace("4 pencils", "4 pens").replace("PENCILS", "pencils")
    assert aligned_values(template, params, swapped) is None


def test_the_final_question_may_use_a_template_word_the_question_renamed_throughout():
    template = ("A class of {total} students has hobbies. {bakers} like to bake, and the rest like to either play "
                "video games or play music. How many like to play video games if the number that like to play music "
                "is {ratio} the number that bake?")
    params = (Param(name="total", description="students", type=int, original=50),
              Param(name="bakers", description="bakers", type=int, original=10),
              Param(name="ratio", description="times", type=float, original=2.0))
    renamed = ("A class of 160 students has hobbies. 60 like to dance, and the rest like to either read or bake. "
               "How many like to read if the number that like to bake is twice the number that dance?")
    assert aligned_values(template, params, renamed) == {"total": "160", "bakers": "60", "ratio": "twice"}
    # the final question asks for the bakers the template states: a reversed question, not a rename
    reversed_question = ("A class of 160 students has hobbies. 60 like to bake, and the rest like to either play "
                         "video games or play music. How many like to bake if the number that like to play music "
                         "is twice the number that bake?")
    assert aligned_values(template, params, reversed_question) is None


def test_a_value_that_becomes_a_share_of_another_quantity_declines():
    template = ("Grandma walks 3 miles every day on her trail, which includes {beach} miles of walking on the beach "
                "and {sidewalk} mile of walking on the sidewalk. If {minutes} minutes are spent on the beach, how "
                "long does the walk take?")
    params = tuple(Param(name=n, description=n, type=float, original=o, minimum=0)
                   for n, o in (("beach", 2.0), ("sidewalk", 1.0), ("minutes", 40.0)))
    same = template.format(beach=2, sidewalk=1, minutes=30)
    assert aligned_values(template, params, same) == {"beach": "2", "sidewalk": "1", "minutes": "30"}
    share = same.replace("1 mile of walking", "1/3 of the total distance of walking")
    assert aligned_values(template, params, share) is None


KNITTING = ("Martha is knitting for her {kids} grandchildren. She wants to make a hat, scarf, and socks for each of "
            "them. It takes {hat} skeins of wool to make a hat, {scarf} for a scarf, and {socks} for a pair of "
            "socks. How many skeins of wool will she need to buy?")
KNITTING_PARAMS = tuple(Param(name=n, description=n, type=int, original=o, minimum=0)
                        for n, o in (("kids", 3), ("hat", 2), ("scarf", 3), ("socks", 4)))


def test_renames_that_reuse_each_others_words_keep_each_value_in_its_role():
    # hat → beanie, scarf → hat: "hat" now names the second item, and its value is the second one
    question = ("Maya is knitting for her 2 grandchildren. She wants to make a beanie, hat, and leg warmers for each "
                "of them. It takes 4 skeins of wool to make a beanie, 15 for a hat, and 7 for a pair of leg warmers. "
                "How many skeins of wool will she need to buy?")
    assert aligned_values(KNITTING, KNITTING_PARAMS, question) == {"kids": "2", "hat": "4", "scarf": "15", "socks": "7"}


def test_a_name_given_two_roles_declines():
    # scarf → hat in the list, but "hat" kept for the first item later: one word, two roles
    question = ("Maya is knitting for her 2 grandchildren. She wants to make a beanie, hat, and socks for each "
                "of them. It takes 4 skeins of wool to make a hat, 15 for a hat, and 7 for a pair of socks. "
                "How many skeins of wool will she need to buy?")
    assert aligned_values(KNITTING, KNITTING_PARAMS, question) is None


APPLES = ("Walter bought {apples} apples from the store. He ate {eaten} of them and gave his sister {share}% of the "
          "remaining number. If he then sold the remaining apples at ${price} each, how much money did he receive?")
APPLES_PARAMS = tuple(Param(name=n, description=n, type=float, original=o, minimum=0)
                      for n, o in (("apples", 160), ("eaten", 40), ("share", 25), ("price", 3)))


@pytest.mark.parametrize(("verb", "served"), [("ate", True), ("consumed", True), ("bought", False), ("sold", False)])
def test_a_word_next_to_a_value_may_not_take_the_name_of_another_template_word(verb, served):
    """Beside a slot as anywhere else, a reworded word ("ate" → "consumed") is a rename, but one that becomes another
    word the template keeps ("ate" → "bought", where "bought 160 apples" stays) gives that word two roles."""
    question = (f"Keisha bought 120 pears from the store. She {verb} 30 of them and gave her cousin 40% of the remaining "
                "number. If she then sold the remaining pears at $5 each, how much money did she receive?")
    read = aligned_values(APPLES, APPLES_PARAMS, question)
    assert read == ({"apples": "120", "eaten": "30", "share": "40", "price": "5"} if served else None)


SUPPLIES = ("Raphael bought {pens} pens which cost ${pen_cost} each and {books} notebooks which cost ${book_cost} each. "
            "How much did he spend on notebooks?")
SUPPLIES_PARAMS = tuple(Param(name=n, description=n, type=float, original=o, minimum=0)
                        for n, o in (("pens", 4.0), ("pen_cost", 1.5), ("books", 2.0), ("book_cost", 4.0)))


def test_names_trading_places_throughout_is_a_consistent_swap_of_roles():
    swapped = "Eric bought 16 notebooks which cost $2.25 each and 8 pens which cost $18.5 each. How much did he spend on pens?"
    # the final question follows the swap: it asks for the second item's spending, as the template does
    assert aligned_values(SUPPLIES, SUPPLIES_PARAMS, swapped) == {
        "pens": "16", "pen_cost": "2.25", "books": "8", "book_cost": "18.5"}
    # the final question does not follow it: it asks for the first item's spending now
    assert aligned_values(SUPPLIES, SUPPLIES_PARAMS, swapped.replace("on pens", "on notebooks")) is None


def test_a_chain_of_renames_must_reach_the_final_question():
    chained = (
        "Eric bought 16 notebooks which cost $2.25 each and 8 markers which cost $18.5 each. How much did he spend on "
        "markers?"
    )
    assert aligned_values(SUPPLIES, SUPPLIES_PARAMS, chained) == {
        "pens": "16", "pen_cost": "2.25", "books": "8", "book_cost": "18.5"}
    # the question still asks about notebooks, which it gave the pens' role: another question
    assert aligned_values(SUPPLIES, SUPPLIES_PARAMS, chained.replace("on markers", "on notebooks")) is None


def test_days_shifted_by_one_keep_their_order():
    # Saturday → Friday, Sunday → Saturday: a word alignment pairs the two Saturdays and loses the rest
    template = ("Sunny is selling gingerbread and apple pie. On Saturday, he sold {sat} boxes of gingerbread and {fewer} "
                "fewer boxes of apple pie than on Sunday. On Sunday, he sold {more} more boxes of gingerbread than on "
                "Saturday and {sun_pie} boxes of apple pie. How many boxes did Sunny sell?")
    params = tuple(Param(name=n, description=n, type=int, original=o, minimum=0)
                   for n, o in (("sat", 10), ("fewer", 4), ("more", 5), ("sun_pie", 12)))
    question = ("David is selling cupcakes and kiwi pie. On Friday, he sold 27 boxes of cupcakes and 5 fewer boxes of "
                "kiwi pie than on Saturday. On Saturday, he sold 14 more boxes of cupcakes than on Friday and 23 "
                "boxes of kiwi pie. How many boxes did David sell?")
    assert aligned_values(template, params, question) == {"sat": "27", "fewer": "5", "more": "14", "sun_pie": "23"}
    # only one of the two days shifted: Saturday now names both days
    assert aligned_values(template, params, question.replace("than on Friday", "than on Saturday")) is None


def test_a_month_states_its_days():
    template = "Derrick makes {dozens} dozen doughnuts every day at ${price} each. How much does he make in June?"
    params = (Param(name="dozens", description="dozens a day", type=int, original=10, minimum=0),
              Param(name="price", description="price", type=float, original=2.0, minimum=0))
    # September has June's 30 days: the same reasoning
    assert aligned_values(template, params, template.format(dozens=15, price=3).replace("June", "September")) == {
        "dozens": "15", "price": "3"}
    # July has 31: the program's 30 days no longer hold
    assert aligned_values(template, params, template.format(dozens=15, price=3).replace("June", "July")) is None


def test_a_percent_written_as_a_factor_declines():
    template = ("The price of carrots increases by {rise}% of the original price every year. What would be the "
                "price of carrots after {years} years if it was ${price} initially?")
    params = (Param(name="rise", description="yearly rise in percent", type=float, original=5.0, minimum=0),
              Param(name="years", description="years", type=int, original=3, minimum=0),
              Param(name="price", description="initial price", type=float, original=120.0, minimum=0))
    percent = template.format(rise=7, years=4, price=150)
    assert aligned_values(template, params, percent) == {"rise": "7", "years": "4", "price": "150"}
    assert aligned_values(template, params, percent.replace("7%", "7 percent"))["rise"] == "7"
    assert aligned_values(template, params, percent.replace("7%", "0.07 times")) is None  # not 0.07%


CARS = ("Of the {total} available cars for rent, {auto} are automatic cars, {manual} are manual cars, and the "
        "rest are semi-automatic. What percentage of the cars are semi-automatic?")
CARS_PARAMS = tuple(Param(name=n, description=n, type=int, original=o, minimum=0)
                    for n, o in (("total", 20), ("auto", 12), ("manual", 4)))


@pytest.mark.parametrize("inserted, read", [
    ("The shop opened in 1998.", True),  # a sentence beside the reasoning: the guard judges its number
    ("Each rental is $500 per day.", True),
    ("Additionally, there are 3 times as many vans as cars.", False),  # names an operation
    ("The shop also has 5 vans.", False),
    ("A customer returned 2 cars.", False),  # counts what the template counts
    ("A customer returned 2 of them.", False),  # may count what the template counts
    ("Why? The shop opened in 1998.", False),  # a question is no aside
])
def test_a_whole_sentence_inserted_beside_the_reasoning(inserted, read):
    question = CARS.format(total=30, auto=15, manual=5).replace("semi-automatic. What", f"semi-automatic. {inserted} What")
    values = aligned_values(CARS, CARS_PARAMS, question)
    assert (values == {"total": "30", "auto": "15", "manual": "5"}) if read else values is None


def test_a_number_inserted_into_a_sentence_or_the_final_question_declines():
    question = CARS.format(total=30, auto=15, manual=5)
    assert aligned_values(CARS, CARS_PARAMS, "The shop opened in 1998. " + question) is not None  # an aside first
    assert aligned_values(CARS, CARS_PARAMS, question + " The shop opened in 1998.") is None  # after the final question
    assert aligned_values(CARS, CARS_PARAMS, question.replace("for rent,", "for rent at $500 a day,")) is None
    assert aligned_values(CARS, CARS_PARAMS, question.replace("What percentage", "Of 3 vans, what percentage")) is None


def test_a_fraction_the_template_writes_as_two_slots_is_read_as_its_two_numbers():
    template = "There are {total} votes. The winner got {num}/{den} of the votes. How many votes did the loser get?"
    params = tuple(Param(name=n, description=n, type=int, original=o, minimum=1)
                   for n, o in (("total", 100), ("num", 3), ("den", 4)))
    question = "There are 80 ballots. The winner got 2/5 of the ballots. How many ballots did the loser get?"
    assert aligned_values(template, params, question) == {"total": "80", "num": "2", "den": "5"}
    assert aligned_values(template, params, question.replace("2/5", "0.4")) is None  # one number for two slots


MARIE = ("Marie ordered {meals} chicken meals that cost ${meal_cost} each and some boxes of pizza. Marie paid a "
         "total of ${total}. How many boxes of pizza did Marie order if each box costs ${box_cost}?")
MARIE_PARAMS = tuple(Param(name=n, description=n, type=float, original=o, minimum=0)
                     for n, o in (("meals", 1), ("meal_cost", 12), ("total", 50), ("box_cost", 8.5)))
MARIE_STATED = "Marie ordered 2 chicken meals that cost $10 each and some boxes of pizza. Marie paid a total of $60. "


@pytest.mark.parametrize("asked", [
    "What is the number of boxes of pizza that Marie did order if each box costs $8?",
    "What is the total number of boxes of pizza Marie did order if each box costs $8?",
])
def test_the_final_question_posed_another_way_asks_the_same(asked):
    assert aligned_values(MARIE, MARIE_PARAMS, MARIE_STATED + asked) == {
        "meals": "2", "meal_cost": "10", "total": "60", "box_cost": "8"}


@pytest.mark.parametrize("asked", [
    "What is the number of chicken meals that Marie did order if each box costs $8?",  # another thing asked for
    "What is the number of boxes of pizza that Marie did not order if each box costs $8?",  # negated
    "What is the number of more boxes of pizza that Marie did order if each box costs $8?",  # a comparison
    "What is the number of boxes of pizza that Marie did order or eat if each box costs $8?",  # a word added
])
def test_a_final_question_posed_another_way_must_keep_every_word_that_says_what_it_asks(asked):
    assert aligned_values(MARIE, MARIE_PARAMS, MARIE_STATED + asked) is None


def test_the_frame_does_not_let_a_word_renamed_away_come_back_in_the_final_question():
    template = ("Sam buys {a} apples and {b} pears. How many apples does Sam buy?")
    params = (Param(name="a", description="apples", type=int, original=3), Param(name="b", description="pears",
                                                                                 type=int, original=4))
    assert aligned_values(template, params, "Sam buys 5 plums and 6 pears. What is the number of plums that Sam "
                                            "does buy?") == {"a": "5", "b": "6"}
    assert aligned_values(template, params, "Sam buys 5 plums and 6 pears. What is the number of apples that Sam "
                                            "does buy?") is None


GIRLS = ("In a certain school, {classes} classes have a total of {students} students. Each class has the same amount "
         "of students, and in each class {girls}% of the students are girls. How many boys are in each class?")
GIRLS_PARAMS = (Param(name="classes", description="classes", type=int, original=2),
                Param(name="students", description="students", type=int, original=80),
                Param(name="girls", description="percent girls", type=int, original=40))
GIRLS_STATED = ("In a certain school, 3 classes have a total of 90 students. Each class has the same amount of students, "
                "and in each class 30% of the students are girls. ")


@pytest.mark.parametrize("asked", [
    "What is the number of girls that are in each class?",  # a name kept in the body, asked in the final question
    "What is the number of students that are in each class?",
])
def test_the_final_question_may_not_take_up_a_name_the_question_keeps_for_another_role(asked):
    assert aligned_values(GIRLS, GIRLS_PARAMS, GIRLS_STATED + asked) is None
    # posed another way, the same question is read
    assert aligned_values(GIRLS, GIRLS_PARAMS, GIRLS_STATED + "What is the number of boys that are in each class?") == {
        "classes": "3", "students": "90", "girls": "30"}


def test_a_word_of_a_longer_name_may_not_stand_for_two_template_names():
    template = ("Amy's test has {a} multiple-choice questions and {b} long answer questions. Each question is worth "
                "{p} points. How many points does Amy score if she gets all of them right?")
    params = (Param(name="a", description="multiple-choice questions", type=int, original=10),
              Param(name="b", description="long answer questions", type=int, original=5),
              Param(name="p", description="points per question", type=int, original=2))
    stated = "Amy's test has 12 multiple-choice questions and 4 long answer questions. Each question is worth 3 points. "
    assert aligned_values(template, params, stated + "What is the number of points that Amy does score if she gets all "
                                                     "of them right?") == {"a": "12", "b": "4", "p": "3"}
    assert aligned_values(template, params, stated + "What is the number of answers that Amy does score if she gets "
                                                     "all of them right?") is None


def test_the_final_question_may_name_the_person_its_pronoun_can_only_stand_for():
    template = ("Wendy places {a} books on each of {b} shelves in the school library early before the first class of the "
                "day starts. How many books will she need to carry?")
    params = (Param(name="a", description="books per shelf", type=int, original=5),
              Param(name="b", description="shelves", type=int, original=3))
    assert aligned_values(template, params, "Wendy places 6 books on each of 4 shelves in the school library early before the "
                          "first class of the day starts. How many books will Wendy need to carry?") == {"a": "6", "b": "4"}
    # with two people in the story, "she" is named by the question before or not at all
    two = ("Wendy and Kim place {a} books on each of {b} shelves with their friend Ann in the school library. She "
           "wants to finish first. How many books will she need to carry?")
    said = ("Wendy and Kim place 6 books on each of 4 shelves with their friend Ann in the school library. {} wants to "
            "finish first. How many books will {} need to carry?")
    assert aligned_values(two, params, said.format("Wendy", "Wendy")) == {"a": "6", "b": "4"}
    assert aligned_values(two, params, said.format("Wendy", "Kim")) is None
    assert aligned_values(two, params, said.format("She", "Kim")) is None


@pytest.mark.parametrize("hobby", ["play video games", "bake"])
def test_names_sharing_a_word_are_not_two_roles(hobby):
    template = ("Of {n} students, {a} like to bake, {b} like to play golf, and the rest like to either play video "
                "games or play music. How many like to play video games if the number that like to play music is "
                "twice the number that like to play golf?")
    params = (Param(name="n", description="students", type=int, original=100),
              Param(name="a", description="bakers", type=int, original=10),
              Param(name="b", description="golfers", type=int, original=5))
    question = (f"Of 120 students, 12 like to {hobby}, 7 like to play tennis, and the rest like to either hike or play "
                "music. How many like to hike if the number that like to play music is twice the number that like to "
                "play tennis?")
    assert aligned_values(template, params, question) == {"n": "120", "a": "12", "b": "7"}


BAG = ("Uma's backpack is too heavy. She must take out {weight} pounds. Her novels weigh {novel} pound each and her "
       "games weigh {game} pound each. If she takes out {novels} novels, how many games must she take out?")
BAG_PARAMS = tuple(Param(name=n, description=n, type=float, original=1.0, minimum=0)
                   for n in ("weight", "novel", "game", "novels"))


def test_a_final_question_that_trades_the_renamed_roles_is_declined():
    """Novels became magazines and games puzzles before the final question; "If she takes out 4 puzzles, how many
    magazines" then asks for the other role (a reversed question), whatever new words name them."""
    same = (BAG.format(weight=12, novel="1/4", game="1/2", novels=8)
            .replace("novels", "magazines").replace("games", "puzzles"))
    assert aligned_values(BAG, BAG_PARAMS, same) == {"weight": "12", "novel": "1/4", "game": "1/2", "novels": "8"}
    traded = same.replace("takes out 8 magazines, how many puzzles", "takes out 8 puzzles, how many magazines")
    assert aligned_values(BAG, BAG_PARAMS, traded) is None
    assert renamed_role_asked(BAG, traded) == "magazine" and renamed_role_asked(BAG, same) is None


def test_a_unit_or_a_condition_renamed_before_the_final_question_is_no_role_trade():
    """A unit renamed throughout ("inches" → "feet", then "how much fabric in feet") and a word that a condition before the
    question word repeats ("covering a distance of ...") name no role the final question asks for."""
    fabric = ("Luke is buying fabric for new curtains. There are {n} windows. Each window is {w} inches wide. "
              "How much fabric should he buy?")
    in_feet = ("Luke is buying fabric for new curtains. There are 5 windows. Each window is 3 feet wide. "
               "How much fabric in feet should he buy?")
    assert renamed_role_asked(fabric, in_feet) is None
    drive = ("It is {d} kilometers from San Diego to New York. If Bernice drove {k} kilometers a day, how many kilometers "
             "will she still need to drive?")
    covered = ("The distance from San Diego to New York is 1955 kilometers. Covering a distance of 325 kilometers a day, "
               "how many kilometers will she still need to drive?")
    assert renamed_role_asked(drive, covered) is None


def test_a_final_questions_asking_part_starts_at_its_question_word_contracted_or_not():
    from edge_runtime.read.final_question import asking as _asking

    assert _asking(["if", "sally", "is", "8", ",", "what'", "the", "total", "age"]) == ["what'", "the", "total", "age"]
    assert _asking(["if", "he", "sells", "4", ",", "how", "many", "are", "left"]) == ["how", "many", "are", "left"]


def test_a_person_renamed_is_the_same_role_wherever_the_final_question_names_them():
    """"How many cups will Omar need" posed as "What is the number of cups ... that Lena will need": Lena is Omar
    renamed, the person the template asks about; a person renamed from someone the template does not ask about is
    another role ("the combined weight of Zoe and Max", test below)."""
    template = ("{c} cups of sugar are needed for a tray of buns. Omar is baking {a} trays on Monday and {b} trays on "
                "Friday. How many cups of sugar will Omar need to bake the trays on both days?")
    params = tuple(Param(name=n, description=n, type=int, original=1, minimum=0) for n in "cab")
    question = ("3 cups of sugar are needed for a tray of buns, and Lena is baking 4 trays on Monday and 6 trays on "
                "Friday. What is the number of cups of sugar that Lena will need to bake the trays on both days?")
    assert aligned_values(template, params, question) == {"c": "3", "a": "4", "b": "6"}


def test_a_final_question_about_a_person_renamed_in_another_role_is_declined():
    template = ("Ada weighs {a} kg. Ben weighs {b} kg more than Ada. Cy is {c} kg lighter than Ben. "
                "What is the weight of Cy, in kg?")
    params = tuple(Param(name=n, description=n, type=int, original=1, minimum=0) for n in "abc")
    question = "Zoe weighs 40 kg. Ian weighs 9 kg more than Zoe. Max is 3 kg lighter than Ian. What is the weight of Max, in kg?"
    assert aligned_values(template, params, question) == {"a": "40", "b": "9", "c": "3"}
    both = question.replace("the weight of Max", "the combined weight of Zoe and Max")
    assert aligned_values(template, params, both) is None
    assert renamed_role_asked(template, both) is None  # people are the guard's to match (match_people)



def test_a_pronoun_of_the_final_question_may_become_the_name_renamed_before():
    """"How many emails does *he* respond to" → "does *Lucas*": Lucas is the rename of Tom, whom the pronoun stands
    for; only a template word of another role in that place trades roles."""
    template = ("Tom gets {n} emails a day. {p}% of those emails don't require any response. He responds to the rest "
                "of them. How many emails does he respond to in a {d} day work week?")
    params = tuple(Param(name=n, description=n, type=int, original=1) for n in "npd")
    question = ("Lucas gets 80 emails a day. 10% of those emails don't require any response. He responds to the rest "
                "of them. How many emails does Lucas respond to in a 3 day work week?")
    assert aligned_values(template, params, question) == {"n": "80", "p": "10", "d": "3"}


def _params(*names: str) -> tuple[Param, ...]:
    return tuple(Param(name=n, description=n, type=int, original=1, minimum=0) for n in names)


SHOPPING = "Tom has ${money}. He buys {n} books for ${price} each at the fair. How much money does Tom have left?"


@pytest.mark.parametrize("final, served", [
    ("How much money does Sam have left?", True),  # the rename the story made
    ("How much money does Sam spend?", False),  # "have left" -> "spend": another quantity
    ("How much money did Sam have before the fair?", False),
    ("How much money does Sam have left in cents?", False),
])
def test_a_final_question_may_change_only_by_the_renames_the_story_made(final, served):
    """A final question whose words change where the story's do not asks for something else, however much of the
    story it keeps: held-out changed questions ("How much money does Diego spend?" of an entry that asks what is
    left) were served 12% of the time on the aligned path, where the rule held only for templates under 30 words."""
    question = f"Sam has $50. He buys 3 books for $7 each at the fair. {final}"
    values = aligned_values(SHOPPING, _params("money", "n", "price"), question)
    assert (values == {"money": "50", "n": "3", "price": "7"}) if served else values is None


def test_a_rename_of_a_phrase_carries_into_the_final_question():
    template = ("Stephen placed an online order for groceries. His bill came to ${bill} and the delivery fee was ${fee}. "
                "What was the final price of Stephen's groceries?")
    question = ("Mei placed an online order for household items. Her bill came to $40 and the delivery fee was $5. "
                "What was the final price of Mei's household items?")
    assert aligned_values(template, _params("bill", "fee"), question) == {"bill": "40", "fee": "5"}
    assert aligned_values(template, _params("bill", "fee"), question.replace("household items?", "cleaning supplies?")) is None


def test_a_name_or_thing_only_the_final_question_mentions_may_be_renamed():
    """"Bentley" appears nowhere but in the final question, so "Diego" in its place is the same role; a pronoun may
    become the person's name; a thing named only in the condition may be renamed, not a verb; "its" may not become
    a thing of the story (which one it stood for is not known)."""
    balloons = ("The cost of filling {a} balloons was ${c}. How much did Bentley pay to fill {b} balloons if he went "
                "after the price rise?")
    question = ("The cost of filling 20 balloons was $200. How much did Diego pay to fill 150 balloons if Diego went "
                "after the price rise?")
    assert aligned_values(balloons, _params("a", "c", "b"), question) == {"a": "20", "c": "200", "b": "150"}
    uncle = "He bought {n} apples. If he then sold them to his uncle at ${p} each, how much money did he receive?"
    assert aligned_values(uncle, _params("n", "p"), "He bought 40 apples. If he then sold them to a neighbor at $3 each, "
                          "how much money did he receive?") == {"n": "40", "p": "3"}
    gives = "Mary has {a} apples. If she gives {n} apples to her brother, how many apples does she have left?"
    question = "Mary has 10 apples. If she receives 3 apples from her brother, how many apples does she have left?"
    assert aligned_values(gives, _params("a", "n"), question) is None  # a verb is not a thing renamed
    helmet = "A bike costs ${b} and a helmet ${h}. If the bike is {p}% off, what is its price now?"
    question = "A bike costs $100 and a helmet $30. If the bike is 20% off, what is the helmet's price now?"
    assert aligned_values(helmet, _params("b", "h", "p"), question) is None  # "its" is not any thing of the story


def test_a_unit_the_final_question_asks_in_is_not_renamed_alone():
    template = "Each song is {m} minutes long and a playlist has {n} songs. How many minutes will {k} playlists last?"
    question = "Each song is 3 minutes long and a playlist has 20 songs. How many hours will 5 playlists last?"
    assert aligned_values(template, _params("m", "n", "k"), question) is None
    assert aligned_values(template, _params("m", "n", "k"), question.replace("hours", "minutes")) is not None


def test_a_stretch_that_changes_a_quantity_by_its_words_declines():
    """A comparison added beside a value, "each" dropped with nothing in its place, a unit of time renamed where the
    question still names the template's: no rename of a name or an object, so the aligned path does not read them."""
    template = ("James decides to run {n} sprints {k} times a week. He runs {m} meters each sprint. How many total "
                "meters does he run a week?")
    params = tuple(Param(name=n, description=n, type=int, original=o) for n, o in (("n", 3), ("k", 3), ("m", 60)))
    same = "James decides to run 3 sprints 3 times a week. He runs 60 meters {} sprint. How many total meters does he run a week?"
    assert aligned_values(template, params, same.format("per")) == {"n": "3", "k": "3", "m": "60"}
    assert aligned_values(template, params, same.format("a")) is not None
    for changed in (same.format("less each"), same.format("for all the").replace("sprint.", "sprints."),
                    same.format("each").replace("times a week", "times a month")):
        assert aligned_values(template, params, changed) is None, changed
    renamed = same.format("each").replace("a week", "a month")
    assert aligned_values(template, params, renamed) == {"n": "3", "k": "3", "m": "60"}  # renamed throughout
    bagels = "A loaf costs ${a}. Bagels cost ${b} each. How much more do {c} loaves cost than {d} bagels?"
    params = tuple(Param(name=n, description=n, type=int, original=1) for n in "abcd")
    moved = "A loaf costs $4. Each bagel costs $1. How much more do 3 loaves cost than 6 bagels?"
    assert aligned_values(bagels, params, moved) == {"a": "4", "b": "1", "c": "3", "d": "6"}  # "each" moved, kept


AGES = "Ivy is {a} times older than Ben. Ben is {b} times older than Max. If Max is {c}, how old is Ivy?"
AGE_PARAMS = tuple(Param(name=n, description=n, type=float, original=v, minimum=0) for n, v in (("a", 3), ("b", 2), ("c", 4)))


@pytest.mark.parametrize("question, values", [
    # renamed throughout, the comparison kept: the same reasoning
    ("Noor is 5 times older than Sam. Sam is 2 times older than Lea. If Lea is 6, how old is Noor?",
     {"a": "5", "b": "2", "c": "6"}),
    # the comparison word renamed with the names: "3 times older" became "10 years older", a product a sum
    ("Noor is 10 years older than Sam. Sam is 14 years older than Lea. If Lea is 34, how old is Noor?", None),
    ("Noor is 10 days older than Sam. Sam is 14 days older than Lea. If Lea is 34, how old is Noor?", None),
])
def test_a_comparison_word_is_not_renamed(question, values):
    assert aligned_values(AGES, AGE_PARAMS, question) == values


JET = ("A jet travels {d} miles in {h} hours. At the same rate, how many additional hours would it take to travel "
       "an additional {e} miles?")
JET_PARAMS = (Param("d", "distance", int, 420), Param("h", "hours", int, 6), Param("e", "extra distance", int, 210))


@pytest.mark.parametrize(("question", "read"), [
    ("A jet travels 2500 kilometers in 5 hours. At the same rate, how many additional hours would it take to travel "
     "an additional 4000 kilometers?", True),  # the unit renamed throughout: the same reasoning
    ("A jet travels 2500 kilometers in 5 hours. At the same rate, how many additional hours would it take to travel "
     "an additional 4000 miles?", False),  # one unit read as another where it keeps its name: a conversion
])
def test_a_unit_may_be_renamed_throughout_but_not_in_one_place(question, read):
    assert (aligned_values(JET, JET_PARAMS, question) is not None) is read


def test_a_constant_spelt_the_other_way_is_the_same_constant():
    """gsm8k-1128 keeps "Two years ago": a rewording that writes "2 years ago" reads as the template, one with another
    number does not."""
    template = "Liam is {age} years old now. Two years ago, Liam's age was twice the age of Vince. How old is Vince now?"
    params = (Param(name="age", description="Liam's age now", type=int, original=16, minimum=1),)
    reworded = ("Liam is 16 years old now. 2 years ago, Liam's age was twice Vince's age. This was last spring. How old "
                "is Vince now?")
    assert aligned_values(template, params, reworded) == {"age": "16"}
    assert aligned_values(template, params, reworded.replace("2 years", "3 years")) is None

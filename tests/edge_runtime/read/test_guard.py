"""The changed-reasoning guard (edge_runtime/read/guard.py) on hand-written entries and questions,
and its place in the pipeline (a refusal is a MISS "reasoning_changed" before IS3 runs)."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from fakes import FixedRouter

from edge_runtime.entries.context import NarrationStep
from edge_runtime.entries.metadata import EntryPoint, Param
from edge_runtime.entries.registry import Execution
from edge_runtime.pipeline import Pipeline
from edge_runtime.read.extractor import Extraction, Extractor
from edge_runtime.read.guard import GuardConfig, ReasoningGuard, check, make_guard, scan
from edge_runtime.read.question_words import asked_noun, target_clause
from edge_runtime.read.values import months_named

DUCKS = EntryPoint(
    id="ducks",
    description="Janet's eggs: how much she makes at the market each day",
    template=("Janet's ducks lay {eggs} eggs per day. She eats {eaten} for breakfast every morning and bakes muffins "
              "for her friends every day with {baked}. She sells the remainder at the farmers' market daily for "
              "${price} per fresh duck egg. How much in dollars does she make every day at the farmers' market?"),
    params=(
        Param("eggs", "eggs laid per day", int, 16, minimum=0),
        Param("eaten", "eggs eaten per day", int, 3, minimum=0),
        Param("baked", "eggs baked per day", int, 4, minimum=0),
        Param("price", "price per egg in dollars", float, 2.0, minimum=0),
    ),
    root="answer the ducks question",
    answer_key="answer",
)

VACUUMS = EntryPoint(
    id="vacuums",
    description="Melanie's vacuum cleaners",
    template=("Melanie is a door-to-door saleswoman. She sold a third of her vacuum cleaners at the green house, "
              "{red} more to the red house, and half of what was left at the orange house. If Melanie has {left} "
              "vacuum cleaners left, how many did she start with?"),
    params=(Param("red", "sold at the red house", int, 2, minimum=0), Param("left", "left at the end", int, 5, minimum=0)),
    root="answer the vacuum question",
    answer_key="answer",
)

DUCK_VALUES = {"eggs": 20, "eaten": 2, "baked": 5, "price": 3.0}


def test_a_true_rephrase_passes():
    question = ("Every day Janet's ducks lay 20 eggs. She eats 2 of them for breakfast and bakes muffins for her "
                "friends with 5. She sells the remaining eggs at the farmers' market for $3 per fresh duck egg. "
                "How much in dollars does she make every day at the farmers' market?")
    assert check(DUCKS, question, DUCK_VALUES) is None


def test_numbers_written_as_words_and_with_separators_are_bound():
    entry = EntryPoint(
        id="salary", description="savings", template="Ann earns ${pay} a month and saves {share}% of it. How much does she "
                                                     "save in a year?",
        params=(Param("pay", "monthly pay", float, 2000.0), Param("share", "percent saved", float, 10.0)), root="r",
    )
    question = "Ann earns $2,500.00 a month and saves twenty percent of it. How much does she save in a year?"
    assert check(entry, question, {"pay": 2500.0, "share": 20.0}) is None


def test_an_added_operation_with_a_new_number_is_refused():
    question = ("Janet's ducks lay 20 eggs per day. She eats 2 for breakfast every morning and bakes muffins for her "
                "friends every day with 5. She also gives 4 eggs to her neighbour every day. She sells the remainder "
                "at the farmers' market daily for $3 per fresh duck egg. How much in dollars does she make every day "
                "at the farmers' market?")
    refusal = check(DUCKS, question, DUCK_VALUES)
    assert refusal is not None and "'4'" in refusal


def test_an_added_cost_in_dollars_is_refused():
    question = ("Janet's ducks lay 20 eggs per day. She eats 2 for breakfast every morning and bakes muffins for her "
                "friends every day with 5. She sells the remainder at the farmers' market daily for $3 per fresh duck "
                "egg, and pays $6 a day for the stall. How much in dollars does she make every day at the farmers' market?")
    assert check(DUCKS, question, DUCK_VALUES) is not None


def test_one_of_a_thing_the_question_counts_is_an_added_operation():
    """"one" is weak ("one of them", "each one", "one day"), but "she drops one egg" in a question that counts eggs
    states a quantity of the story: an added operation, refused like "she drops 2 eggs"."""
    base = ("Janet's ducks lay 20 eggs per day. She eats 2 for breakfast every morning and bakes muffins for her "
            "friends every day with 5. {} She sells the remainder at the farmers' market daily for $3 per fresh duck "
            "egg. How much in dollars does she make every day at the farmers' market?")
    refusal = check(DUCKS, base.format("On the way she drops one egg."), DUCK_VALUES)
    assert refusal is not None and "'one'" in refusal
    for aside in ("One of her ducks is brown.", "She loves each one of them.", "One morning it rained."):
        assert check(DUCKS, base.format(aside), DUCK_VALUES) is None, aside
    for operation in ("One of the eggs is cracked and thrown away.", "A couple of eggs break on the way.",
                      "Then the number of eggs doubles."):  # "doubles" shares its 2 with "eats 2": no restatement
        assert check(DUCKS, base.format(operation), DUCK_VALUES) is not None, operation
    rate = ("Janet's ducks lay 20 eggs per day. She eats 2 for breakfast every morning and bakes muffins for her "
            "friends every day with 5. She sells the remainder at the farmers' market daily, where one fresh duck egg "
            "sells for $3. How much in dollars does she make every day at the farmers' market?")
    assert check(DUCKS, rate, DUCK_VALUES) is None  # the unit of a rate, in a clause with its price


def test_a_reversed_question_target_is_refused():
    question = ("Janet's ducks lay 16 eggs per day. She bakes muffins for her friends every day with 4 and sells the "
                "remainder at the farmers' market daily for $2 per fresh duck egg, making $18 every day. How many eggs "
                "does she eat for breakfast every morning?")
    refusal = check(DUCKS, question, {"eggs": 16, "eaten": 18, "baked": 4, "price": 2.0})
    assert refusal is not None and "asks for" in refusal


def test_a_changed_final_question_without_a_named_quantity_is_refused():
    question = ("Janet's ducks lay 20 eggs per day. She eats 2 for breakfast every morning and bakes muffins for her "
                "friends every day with 5. She sells the remainder at the farmers' market daily for $3 per fresh duck "
                "egg. What fraction of the eggs does she eat?")
    assert check(DUCKS, question, DUCK_VALUES) is not None


def test_any_unexplained_number_is_an_added_operation_whatever_it_counts():
    """Words cannot tell "her neighbour owns 7 cats" from "her cousin ate 9 more": both are refused; only a
    question that says the number does not count is read again without it (edge_runtime/read/disclaimers.py)."""
    for sentence in ("Her garden is full of red roses, and her neighbour owns 7 cats.",
                     "Her cousin ate 9 more than her brother.", "She keeps 7 of them for a neighbour."):
        question = ("Janet's ducks lay 20 eggs per day. " + sentence + " She eats 2 for breakfast every morning and "
                    "bakes muffins for her friends every day with 5. She sells the remainder at the farmers' market "
                    "daily for $3 per fresh duck egg. How much in dollars does she make every day at the farmers' market?")
        reason = check(DUCKS, question, DUCK_VALUES)
        assert reason is not None and "a quantity the entry's reasoning does not use" in reason
    plain = question.replace(" She keeps 7 of them for a neighbour.", " Her garden is full of red roses.")
    assert check(DUCKS, plain, DUCK_VALUES) is None  # a sentence without a number changes nothing


def test_a_value_copied_from_inside_a_longer_number_is_refused():
    question = ("Janet's ducks lay 20 eggs per day. She eats 2 for breakfast every morning and bakes muffins for her "
                "friends every day with 50. She sells the remainder at the farmers' market daily for $3 per fresh "
                "duck egg. How much in dollars does she make every day at the farmers' market?")
    refusal = check(DUCKS, question, {**DUCK_VALUES, "baked": 5})
    assert refusal is not None and "baked" in refusal


def test_a_changed_constant_of_the_reasoning_is_refused():
    question = ("Melanie is a door-to-door saleswoman. She sold a quarter of her vacuum cleaners at the green house, "
                "4 more to the red house, and half of what was left at the orange house. If Melanie has 4 vacuum "
                "cleaners left, how many did she start with?")
    refusal = check(VACUUMS, question, {"red": 4, "left": 4})
    assert refusal is not None and "a third" in refusal


def test_the_constants_restated_in_other_words_pass():
    question = ("Melanie sells vacuum cleaners door to door. At the green house she sold one third of them, then 3 "
                "more at the red house, and at the orange house half of the rest. If Melanie has 6 vacuum cleaners "
                "left, how many did she start with?")
    assert check(VACUUMS, question, {"red": 3, "left": 6}) is None


def test_the_template_path_always_passes():
    guard = make_guard()
    question = DUCKS.render(DUCK_VALUES)
    assert guard(DUCKS, question, DUCK_VALUES, "template") is None
    assert guard(DUCKS, question, DUCK_VALUES, "lm-draft") is None


def test_each_check_can_be_switched_off():
    question = ("Janet's ducks lay 20 eggs per day. She eats 2 for breakfast every morning and bakes muffins for her "
                "friends every day with 5. She also gives 4 eggs to her neighbour every day. She sells the remainder "
                "at the farmers' market daily for $3 per fresh duck egg. How much in dollars does she make every day "
                "at the farmers' market?")
    lenient = ReasoningGuard(GuardConfig(check_added=False))
    assert lenient(DUCKS, question, DUCK_VALUES, "lm-draft") is None


def test_a_number_with_its_unit_written_on_is_a_stated_number():
    texts = [m.text for m in scan("It weighs 115g, runs at 73km/hr and costs $427/hour on the 4th and 21st day.")]
    assert texts == ["115", "73", "427"]
    stall = EntryPoint(
        id="stall", description="stall", root="r",
        template="A stall rents for ${rent}/day and sells {jars} jars of 250g honey. What is the rent for {days} days?",
        params=(Param("rent", "rent per day", float, 30.0), Param("jars", "jars", int, 8), Param("days", "days", int, 3)),
    )
    values = {"rent": 45.0, "jars": 9, "days": 4}
    assert check(stall, "A stall rents for $45/day and sells 9 jars of 250g honey. What is the rent for 4 days?",
                 values) is None
    # an added amount written with its unit on is as visible as any other number
    refusal = check(stall, "A stall rents for $45/day plus $5/day for power and sells 9 jars of 250g honey. "
                           "What is the rent for 4 days?", values)
    assert refusal is not None and "'5'" in refusal


def test_number_scanner_and_question_helpers():
    texts = [m.text for m in scan("She sold a third of 1,200 pens, twice 3 1/2 boxes and forty-two cups, 25% on the 1st day.")]
    assert texts == ["a third", "1,200", "twice", "3 1/2", "forty-two", "25"]
    percent = scan("25% of it")[0]
    assert percent.percent and 0.25 in percent.values
    assert target_clause("Tom has 3 cats. If each eats 2 cans, how many cans do they eat?") == "how many cans do they eat?"
    assert asked_noun("how many corn chips were there") == {"corn", "chip"}
    assert asked_noun("how much does it cost") == set()


# ---- in the pipeline -------------------------------------------------------------------------


class _Extractor(Extractor):
    """The template fast path for real; the model's reading stubbed."""

    def __init__(self) -> None:
        super().__init__(None, use_alignment=False)

    def extract(self, entry, question, *, fast_paths=True):
        return Extraction(dict(DUCK_VALUES), {}, "lm-draft")


def _answerer(guard) -> tuple[Pipeline, list]:
    ran = []

    def executor(digest, entry_id, source, values, timeout):
        ran.append(values)
        return Execution({"answer": 42}, [NarrationStep("f", "ran")])

    answerer = Pipeline(
        name="t", version="1", digest="d", entries={"ducks": DUCKS}, modules={"ducks": ""}, router=FixedRouter(("ducks", 0.9)),
        threshold=0.5, extractor=_Extractor(), executor=executor, guard=guard,
    )
    return answerer, ran


@pytest.mark.parametrize("guard_on", [True, False])
def test_the_answerer_misses_with_reasoning_changed_before_running_the_entry(guard_on):
    answerer, ran = _answerer(make_guard() if guard_on else None)
    question = ("Janet's ducks lay 20 eggs per day. She eats 2 for breakfast and bakes muffins with 5. She also gives "
                "4 eggs to her neighbour every day. She sells the rest for $3 per egg. How much in dollars does she make?")
    answer = answerer.answer(question)
    if guard_on:
        assert not answer.hit and answer.miss_reason == "reasoning_changed" and "'4'" in answer.miss_detail
        assert answer.entry_id == "ducks" and ran == []
    else:
        assert answer.hit and answer.answer == 42 and len(ran) == 1


def test_reasoning_changed_is_a_miss_reason_of_the_contract():
    from edge_runtime.answer.response import MISS_REASONS
    from edge_runtime.proto import edge_pb2 as pb

    assert MISS_REASONS["reasoning_changed"] == pb.REASONING_CHANGED == 9


BALLS = EntryPoint(
    id="balls",
    description="A juggler's balls",
    template="A juggler can juggle {total} balls. {golf} of the balls are golf balls. How many golf balls are there?",
    params=(Param("total", "balls", int, 16, minimum=0),
            Param("golf", "the share of golf balls, as a divisor", float, 2.0, minimum=0, exclusive_minimum=True,
                  reading="reciprocal")),
    root="answer the balls question",
    answer_key="answer",
)


def test_a_fraction_the_template_writes_as_two_slots_states_both_values():
    votes = EntryPoint(
        id="votes", description="votes", root="r", answer_key="answer",
        template="There are {total} votes. The winner got {num}/{den} of the votes. How many votes did the loser get?",
        params=tuple(Param(n, n, int, o, minimum=1) for n, o in (("total", 100), ("num", 3), ("den", 4))),
    )
    question = "There are 80 ballots. The winner got 2/5 of the ballots. How many ballots did the loser get?"
    assert check(votes, question, {"total": 80, "num": 2, "den": 5}, "aligned") is None
    assert check(votes, question, {"total": 80, "num": 5, "den": 2}, "aligned") is not None  # parts in their places
    assert check(votes, question, {"total": 80, "num": 2, "den": 2}, "aligned") is not None  # one part read twice
    loose = replace(votes, id="loose", template=votes.template.replace("{num}/{den}", "{num} out of every {den}"))
    assert check(loose, question, {"total": 80, "num": 2, "den": 5}, "aligned") is not None  # no fraction slots
    worded = replace(votes, id="worded", template=votes.template.replace("{num}/{den}", "{num} fifths"),
                     params=votes.params[:2])
    assert check(worded, question.replace("2/5", "two fifths"), {"total": 80, "num": 2}, "aligned") is None
    assert check(worded, question.replace("2/5", "two fifths"), {"total": 80, "num": 5}, "aligned") is not None


def test_a_fraction_in_slots_is_never_pieced_together_or_crossed():
    def entry(eid, template):
        names = re.findall(r"\{(\w+)\}", template)
        return EntryPoint(id=eid, description=eid, root="r", answer_key="answer", template=template,
                          params=tuple(Param(n, n, float, 1.0, minimum=0) for n in dict.fromkeys(names)))

    votes = entry("v2", "There are {total} votes. The winner got {num}/{den} of the votes. How many did the loser get?")
    pieced = "There are 80 votes from 2 towns. The winner got 3/5 of the votes. How many did the loser get?"
    assert check(votes, pieced, {"total": 80, "num": 2, "den": 5}, "lm-draft") is not None  # the 2 is the towns'
    two = entry("two", "Ann ate {a}/{b} of the pie and Bob ate {c}/{d} of the cake. How much did they eat?")
    question = "Ann ate 2/5 of the pie and Bob ate 3/7 of the cake. How much did they eat?"
    assert check(two, question, {"a": 2, "b": 5, "c": 3, "d": 7}, "lm-draft") is None
    assert check(two, question, {"a": 2, "b": 7, "c": 3, "d": 5}, "lm-draft") is not None  # crossed
    whole = entry("whole", "Ann ate {p} of the pie. Bob ate {a}/{b} of the cake. How much did they eat?")
    taken = "Ann ate 2/5 of the pie. Bob ate some of the cake. How much did they eat?"
    assert check(whole, taken, {"p": 0.4, "a": 2, "b": 5}, "lm-draft") is not None  # 2/5 is Ann's alone


def test_a_share_of_a_number_the_template_writes_in_slots_is_not_one_value():
    girls = EntryPoint(
        id="girls", description="girls", root="r", answer_key="answer",
        template="A school has {n} students. {f} of the {n} students are girls. How many boys are there?",
        params=(Param("n", "students", int, 40, minimum=0), Param("f", "share of girls", float, 0.5, minimum=0)),
    )
    question = "A school has 40 students. 3/4 of 40 students are girls. How many boys are there?"
    assert check(girls, question, {"n": 40, "f": 0.75}, "lm-draft") is None
    assert check(girls, question, {"n": 40, "f": 30.0}, "lm-draft") is not None  # "3/4 of 40" is the template's


def test_a_share_of_a_number_states_its_value():
    sodas = EntryPoint(
        id="sodas", description="sodas", root="r", answer_key="answer",
        template="Tom buys {sodas} sodas at $2 each. How much does he pay?",
        params=(Param("sodas", "sodas bought", int, 10, minimum=0),),
    )
    question = "Tom buys half of 40 sodas at $2 each. How much does he pay?"
    assert check(sodas, question, {"sodas": 20}, "aligned") is None
    assert check(sodas, question, {"sodas": 80}, "aligned") is not None
    assert check(sodas, question.replace("half of", "2 of"), {"sodas": 80}, "aligned") is not None  # no share
    assert check(sodas, question.replace("40", "40%"), {"sodas": 20}, "aligned") is not None  # no share of a rate


def test_a_value_read_as_a_reciprocal_is_a_stated_number():
    question = "A juggler can juggle 60 balls. Two thirds of the balls are golf balls. How many golf balls are there?"
    assert check(BALLS, question, {"total": 60, "golf": 1.5}, "lm-draft") is None  # "two thirds" states 1/1.5
    assert check(BALLS, question, {"total": 60, "golf": 4.0}, "lm-draft") is not None  # "a quarter" is not said


def test_the_aligned_path_is_not_refused_for_a_final_question_renamed_throughout():
    question = ("Joe picks 162 kiwis on Tuesday. Then he picks 73 kiwis on Wednesday. How many kiwis does Joe have?")
    entry = EntryPoint(
        id="picks", description="picking", root="r", answer_key="answer",
        template="John picks {a} bananas on Wednesday. Then he picks {b} bananas on Thursday. How many bananas does John have?",
        params=(Param("a", "first day", int, 4, minimum=0), Param("b", "second day", int, 6, minimum=0)),
    )
    values = {"a": 162, "b": 73}
    assert check(entry, question, values, "aligned") is None
    assert check(entry, question, values, "lm-draft") is not None  # the model path keeps the overlap test


@pytest.mark.parametrize("declared, outcomes, shown", [
    # whole_answer: the answer counts things; a fraction means the reasoning lacks a rounding step
    ({"whole_answer": True}, ((6.3, False), (6.0, True), (7, True)), "6.3"),
    # answer_minimum=0: the answer is a quantity; values that drive it below zero left its domain
    ({"answer_minimum": 0.0}, ((-4.0, False), (0, True), (26.5, True)), "-4.0"),
    ({"answer_minimum": 0.0}, ((float("nan"), False),), "nan"),
    ({"whole_answer": True}, ((float("nan"), False), (float("inf"), False)), "reasoning gives"),
])
def test_an_answer_outside_the_entrys_declared_domain_is_a_miss_not_an_answer(declared, outcomes, shown):
    from dataclasses import replace

    entry = replace(BALLS, id="e", **declared)
    for answer, hit in outcomes:
        def executor(digest, entry_id, source, values, timeout, answer=answer):
            return Execution({"answer": answer}, [])

        answerer = Pipeline(name="t", version="1", digest="d", entries={"e": entry}, modules={"e": ""},
                            router=None, threshold=0.5, extractor=_Extractor(), executor=executor, guard=None)
        served = answerer.answer("A juggler can juggle 80 balls. Half of the balls are golf balls. How many golf balls are "
                                 "there?")
        assert served.hit is hit, served
        if not hit:
            assert served.miss_reason == "answer_out_of_domain" and shown in served.miss_detail


def test_a_question_that_states_its_givens_apart_asks_the_same_thing():
    gas = EntryPoint(
        id="gas", description="gas pressure", root="r", answer_key="answer",
        template="What is the pressure, in kPa, of {moles} mol of an ideal gas at {kelvin} kelvin?",
        params=(Param("moles", "amount of gas in mol", float, 2.0, minimum=0), Param("kelvin", "temperature", float, 300.0)),
    )
    values = {"moles": 1.5, "kelvin": 280.0}
    assert check(gas, "A flask holds 1.5 mol of ideal gas at 280 kelvin. What is the pressure in kPa?", values) is None
    assert check(gas, "A flask holds 1.5 mol of ideal gas at 280 kelvin. What is its volume in litres?", values) is not None


def _counting(entry_id: str, description: str, template: str, *params: tuple[str, str, int]) -> EntryPoint:
    """An entry whose parameters are whole numbers of at least 0: (name, description, original) each."""
    return EntryPoint(id=entry_id, description=description, root="r", answer_key="answer", template=template,
                      params=tuple(Param(name, about, int, original, minimum=0) for name, about, original in params))


BUS = _counting(
    "bus", "how much farther a bus goes than a car",
    "A bus travels {bus_speed} miles per hour for {bus_hours} hours. A car travels {car_speed} miles per hour for "
    "{car_hours} hours. How much farther did the bus go than the car, in miles?",
    ("bus_speed", "bus speed in mph", 60), ("bus_hours", "bus hours", 5), ("car_speed", "car speed in mph", 30),
    ("car_hours", "car hours", 8),
)
BUS_VALUES = {"bus_speed": 60, "bus_hours": 5, "car_speed": 60, "car_hours": 8}


def test_a_reversal_that_asks_for_a_given_is_refused_on_the_model_path():
    """GSM-Plus 'reversing operation': the car's speed becomes the unknown; the model read '60 miles farther' as it."""
    question = ("A bus travels 60 miles per hour for 5 hours. A car travels a certain distance in 8 hours. If the bus "
                "travels 60 miles farther than the car, how fast was the car traveling, in miles per hour?")
    assert check(BUS, question, BUS_VALUES, "lm-draft") is not None  # it no longer asks "than" anything either
    refusal = ReasoningGuard(GuardConfig(check_modifiers=False, check_units=False))(BUS, question, BUS_VALUES, "lm-draft")
    assert refusal is not None and "takes as given" in refusal and "'hour'" in refusal
    off = GuardConfig(model_path_reversal_words=None, check_modifiers=False, check_units=False, check_asking_words=False)
    assert ReasoningGuard(off)(BUS, question, BUS_VALUES, "lm-draft") is None


WAGES = _counting(
    "wages", "a month's pay with weekly bonuses",
    "Watson works a {hours}-hour shift each day, {days} days a week. He earns ${rate} per hour and gets a ${bonus} bonus "
    "each week. How much money did Watson make in April?",
    ("hours", "hours a day", 10), ("days", "days a week", 5), ("rate", "pay per hour", 10), ("bonus", "weekly bonus", 300),
)
BAGS = _counting(
    "bags", "profit on painted bags",
    "Tara bought {packs} packs of {per_pack} canvas bags for ${cost} each. She painted them and sold them at a craft "
    "fair for ${price} each. How much profit did she earn on her bags?",
    ("packs", "packs", 3), ("per_pack", "bags a pack", 6), ("cost", "cost a bag", 4), ("price", "price a bag", 9),
)


@pytest.mark.parametrize("entry, values, story, given, word, same", [
    # "make *in bonuses*" asks for the part of the pay the entry takes as given: the plural of the story's "bonus" is
    # the same word (the stemmer once read "bonuses" as "bonuse", and the question was served)
    (WAGES, {"hours": 5, "days": 5, "rate": 22, "bonus": 350},
     "Priya works a 5-hour shift each day, 5 days a week. She earns $22 per hour and gets a $350 bonus each week. ",
     "How much money did Priya make in bonuses in April?", "'bonus'", "How much money did Priya make in April?"),
    # "her *canvas* bags" where the story always sells canvas bags and the entry asks about "her bags": the same
    # thing, named more fully; a word the story uses for another thing is still a given asked about
    (BAGS, {"packs": 12, "per_pack": 10, "cost": 8, "price": 13},
     "Keisha bought 12 packs of 10 canvas bags for $8 each. She painted them and sold them at a craft fair for $13 "
     "each. ", "How much profit did she earn on her packs?", "pack", "How much profit did she earn on her canvas bags?"),
])
def test_a_final_question_asking_about_a_given_is_refused_on_the_model_path(entry, values, story, given, word, same):
    refusal = check(entry, story + given, values, "lm-draft")
    assert refusal is not None and word in refusal
    assert check(entry, story + same, values, "lm-draft") is None


PETS = EntryPoint(
    id="pets", description="a month of pet food", root="r", answer_key="answer",
    template=("Jen got {pets} hamsters. They each need ${food} worth of food a day. How much does she spend on food for "
              "the hamsters in {days} days?"),
    params=(Param("pets", "hamsters", int, 8, minimum=0), Param("food", "food a day per hamster", int, 1, minimum=0),
            Param("days", "days", int, 30, minimum=0)),
)
PETS_STORY = "Priya got 3 hamsters. They each need $2 worth of food a day. "
PETS_VALUES = {"pets": 3, "food": 2, "days": 31}


@pytest.mark.parametrize("path", ["lm-draft", "aligned"])
def test_a_final_question_narrowed_to_one_of_the_things_counted_is_refused(path):
    """"for *one of them*", "for *one hamster*" of an entry that asks about all its hamsters: a weak "one" that the
    no-added-quantities check lets pass."""
    for asked in ("How much does she spend on food for one of them in 31 days?",
                  "How much does she spend on food for one hamster in 31 days?"):
        refusal = check(PETS, PETS_STORY + asked, PETS_VALUES, path)
        assert refusal is not None and "one of the things" in refusal, asked
    assert check(PETS, PETS_STORY + "How much does she spend on food for the hamsters in 31 days?", PETS_VALUES, path) is None


@pytest.mark.parametrize("asked", [
    "How much does she spend on food for the hamsters in 31 days, at one time?",
    "How much does she spend on food for each one of the hamsters in 31 days?",
    "How much does she spend on food for the hamsters in 31 days, one day after another?",
])
def test_one_that_does_not_pick_one_of_the_things_is_not_a_narrowed_question(asked):
    refusal = check(PETS, PETS_STORY + asked, PETS_VALUES, "lm-draft")
    assert refusal is None or "one of the things" not in refusal, refusal


def test_one_as_a_slot_value_a_compound_or_of_a_thing_asked_in_the_singular_is_not_narrowing():
    weekly = EntryPoint(
        id="weekly", description="a family's tacos", root="r", answer_key="answer",
        template="A man eats {man} tacos per day and his son eats {son}. How many tacos do they eat in {weeks} week?",
        params=(Param("man", "man", int, 3, minimum=0), Param("son", "son", int, 2, minimum=0),
                Param("weeks", "weeks", int, 1, minimum=0)),
    )
    question = "A man eats 4 tacos per day and his son eats 2. How many tacos do they eat in one week?"
    assert check(weekly, question, {"man": 4, "son": 2, "weeks": 1}, "lm-draft") is None
    from edge_runtime.read.question_words import narrows_to_one

    assert not narrows_to_one("what is the price of the ticket?", "What is the price of one ticket?")
    assert not narrows_to_one("how many apples do the # kids get?", "How many apples do the twenty-one kids get?")
    assert not narrows_to_one("which costs less?", "Which is the cheaper one?")
    assert narrows_to_one("how many hours will the # playlists last in total?", "how many hours will one playlist last?")


def test_a_reworded_final_question_that_asks_the_same_thing_is_served_on_the_model_path():
    question = ("A bus goes 60 miles per hour for 5 hours and a car goes 60 miles per hour for 8 hours. "
                "How much farther did the bus go than the car, in miles?")
    assert check(BUS, question, BUS_VALUES, "lm-draft") is None
    assert check(DUCKS, ("Every day Janet's ducks lay 20 eggs. She eats 2 of them for breakfast and bakes muffins for "
                         "her friends with 5. She sells the remaining eggs at the farmers' market for $3 per fresh duck "
                         "egg. How much in dollars does she make every day at the farmers' market?"),
                 DUCK_VALUES, "lm-draft") is None


def test_a_final_question_that_states_its_givens_is_not_a_reversal():
    """'What will $2000 grow to in 5 years at 4% per year, compounded quarterly?' asks for the balance; the
    words after its first number are givens it states, not what it asks for."""
    savings = EntryPoint(
        id="savings", description="compound interest", root="r", answer_key="answer",
        template=("If you deposit ${principal} at {rate}% a year compounded {frequency}, what is the balance after "
                  "{years} years?"),
        params=(Param("principal", "deposit in dollars", float, 1000.0, minimum=0),
                Param("rate", "yearly rate in percent", float, 5.0, minimum=0),
                Param("frequency", "compounding", str, "monthly", choices=("annually", "quarterly", "monthly")),
                Param("years", "years", int, 10, minimum=0)),
    )
    values = {"principal": 2000.0, "rate": 4.0, "frequency": "quarterly", "years": 5}
    question = "What will $2000 grow to in 5 years at 4% per year, compounded quarterly?"
    assert check(savings, question, values, "lm-draft") is None
    reversed_question = "If you deposit $2000 and have $2433.97 after 5 years, compounded quarterly, what was the yearly rate?"
    assert check(savings, reversed_question, {**values, "rate": 2433.97}, "lm-draft") is not None


def test_a_share_of_a_power_of_ten_is_one_stated_number():
    question = ("Janet's ducks lay 3/4 of one hundred eggs per day. She eats 2 for breakfast every morning and bakes "
                "muffins for her friends every day with 5. She sells the remainder at the farmers' market daily for $3 "
                "per fresh duck egg. How much in dollars does she make every day at the farmers' market?")
    assert [m.text for m in scan(question)][:1] == ["3/4 of one hundred"]
    assert check(DUCKS, question, {**DUCK_VALUES, "eggs": 75}) is None
    assert check(DUCKS, question, {**DUCK_VALUES, "eggs": 100}) is not None  # 100 is not what it states
    assert [m.text for m in scan("1/0 of ten ducks")] == ["ten"]  # no number at all, and no crash


def test_a_dropped_amount_of_time_the_template_states_with_an_article_is_refused():
    entry = EntryPoint(
        id="oranges", description="oranges peeled",
        template=("Ana spends {ana} minutes peeling an orange and Jane spends {jane} minutes. How many more oranges "
                  "will Ana have peeled than Jane after an hour?"),
        params=(Param("ana", "Ana's minutes per orange", int, 3, minimum=1),
                Param("jane", "Jane's minutes per orange", int, 4, minimum=1)),
        root="r",
    )
    same = ("Ana takes 3 minutes to peel an orange and Jane takes 4 minutes. After an hour, how many more oranges "
            "has Ana peeled than Jane?")
    assert check(entry, same, {"ana": 3, "jane": 4}) is None
    dropped = "Ana takes 3 minutes to peel an orange and Jane takes 4 minutes. How many more oranges has Ana peeled than Jane?"
    assert "an hour" in check(entry, dropped, {"ana": 3, "jane": 4})


def test_a_month_of_other_length_is_a_changed_constant():
    entry = EntryPoint(
        id="doughnuts", description="doughnut sales in a month",
        template="Derrick makes {dozens} dozen doughnuts every day at ${price} each. How much does he make in June?",
        params=(Param("dozens", "dozens a day", int, 10, minimum=0), Param("price", "price per doughnut", float, 2.0, minimum=0)),
        root="r",
    )
    values = {"dozens": 15, "price": 3.0}
    september = "Each day Derrick bakes 15 dozen doughnuts and sells them at $3 each. How much does he make in September?"
    assert check(entry, september, values) is None
    assert "June" in check(entry, september.replace("September", "July"), values)
    # the compiled reasoning tells whether it counts the month's days: writing 30, it does; writing no 30, the month
    # is a name the question may change ("the expenditure in May" of an entry that adds two months' spending)
    july = september.replace("September", "July")
    assert "June" in check(replace(entry, numbers=frozenset({12, 30})), july, values)
    assert check(replace(entry, numbers=frozenset({12})), july, values) is None


def test_a_text_slot_written_as_a_fraction_is_judged_not_a_crash():
    odd = EntryPoint(
        id="odd", description="odd", root="r", answer_key="answer",
        template="Mix {a}/{b} of the paint with 1/2 of the water. How much paint is left?",
        params=(Param("a", "colour", str, "red"), Param("b", "parts", int, 4, minimum=1)),
    )
    question = "Mix blue/4 of the paint with 1/2 of the water. How much paint is left?"
    assert check(odd, question, {"a": "blue", "b": 4}, "aligned") is None


def test_a_guard_that_fails_refuses_instead_of_failing_the_call():
    def broken(entry, question, values, path):
        raise ValueError("cannot read this")

    def executor(digest, entry_id, source, values, timeout):
        return Execution({"answer": 1}, [])

    answerer = Pipeline(name="t", version="1", digest="d", entries={"b": BALLS}, modules={"b": ""},
                        router=None, threshold=0.5, extractor=_Extractor(), executor=executor, guard=broken)
    served = answerer.answer("A juggler can juggle 80 balls. Half of the balls are golf balls. How many golf balls are there?")
    assert not served.hit and served.miss_reason == "reasoning_changed" and "could not judge" in served.miss_detail


COGNAC = EntryPoint(
    id="cognac", description="scotch and cognac",
    template=("John buys {bottles} bottles of scotch for a total cost of ${cost}.  He also buys twice as many bottles of "
              "cognac that cost {more}% more per bottle.  How much does he spend on everything?"),
    params=(Param("bottles", "scotch bottles", int, 10, minimum=0), Param("cost", "scotch cost", float, 600.0),
            Param("more", "percent more per cognac bottle", float, 50.0)),
    root="r", answer_key="answer",
)


def test_a_percent_slot_is_not_stated_by_a_plain_number():
    times = ("John buys 10 bottles of scotch for a total cost of $600.  He also buys twice as many bottles of cognac "
             "that cost 0.5 times more per bottle.  How much does he spend on everything?")
    refusal = check(COGNAC, times, {"bottles": 10, "cost": 600.0, "more": 0.5})
    assert refusal is not None and "as a percent" in refusal
    percent = times.replace("0.5 times more", "40% more")
    assert check(COGNAC, percent, {"bottles": 10, "cost": 600.0, "more": 40.0}) is None


def test_a_percent_is_not_read_as_a_plain_number():
    entry = EntryPoint(id="grow", description="growth", template="A plant is {h} cm tall and grows {g} times its height. How "
                                                                 "tall is it?",
                       params=(Param("h", "height", float, 10.0), Param("g", "growth factor", float, 2.0)), root="r")
    refusal = check(entry, "A plant is 10 cm tall and grows by 5% of its height. How tall is it?", {"h": 10.0, "g": 5.0})
    assert refusal is not None and "as a percent" in refusal


def test_a_value_restated_with_an_adding_word_is_an_added_operation():
    entry = EntryPoint(
        id="shoes", description="shoe savings",
        template=("Jessica makes ${pay} a month.  She sets {share}% of her paycheck aside to put towards fancy shoes.  "
                  "Each pair of shoes she buys costs ${price}.  How many shoes can she buy in a year?"),
        params=(Param("pay", "monthly pay", float, 2000.0), Param("share", "percent set aside", float, 25.0),
                Param("price", "price of a pair", float, 1000.0)), root="r", answer_key="answer")
    values = {"pay": 2000.0, "share": 25.0, "price": 1000.0}
    question = ("Jessica makes $2,000.00 a month.  She sets 25% of her paycheck aside to put towards fancy shoes.  Each pair "
                "of shoes she buys costs $1,000.00. However, she also decides to save an additional 25% of her paycheck "
                "aside to put towards fancy shoes. How many shoes can she buy in a year?")
    assert check(entry, question, values) is not None
    restated = question.replace("However, she also decides to save an additional 25% of her paycheck aside to put "
                                "towards fancy shoes.", "Note that she sets 25% of her paycheck aside.")
    assert check(entry, restated, values) is None  # the words of the sentence that states it, nothing added
    reworded = question.replace("However, she also decides to save an additional 25% of her paycheck aside to put "
                                "towards fancy shoes.", "Her sister also sets 25% of her paycheck aside.")
    assert check(entry, reworded, values) is not None  # someone else's 25%: not a repeat


def test_a_multiplying_word_is_never_a_restatement_of_a_number_of_the_same_value():
    """"doubles" shares its 2 with "$2.00 each", and neither counts a thing by the word after it: the words of its
    sentence repeat the story's, but it states a change."""
    entry = EntryPoint(
        id="fruit", description="change after buying fruit", root="r", answer_key="answer",
        template=("Olu bought {apples} apples at ${apple_cost} each and {kiwis} kiwis at ${kiwi_cost} each. If Olu gave "
                  "${given}, how much change did Olu receive?"),
        params=(Param("apples", "apples", int, 2, minimum=0), Param("apple_cost", "apple price", float, 1.2, minimum=0),
                Param("kiwis", "kiwis", int, 7, minimum=0), Param("kiwi_cost", "kiwi price", float, 2.0, minimum=0),
                Param("given", "money given", float, 25.0, minimum=0)))
    values = {"apples": 2, "apple_cost": 1.2, "kiwis": 7, "kiwi_cost": 2.0, "given": 25.0}
    question = ("Olu bought 2 apples at $1.20 each and 7 kiwis at $2.00 each. Then the number of apples doubles. If Olu "
                "gave $25, how much change did Olu receive?")
    assert check(entry, question, values, "aligned") is not None


def test_an_unexplained_number_compared_with_another_is_an_added_operation():
    entry = EntryPoint(
        id="ages", description="ages in a ratio",
        template="Darrell and Allen's ages are in the ratio of {d}:{a}. If their total age now is {total}, calculate Allen's "
                 "age {years} years from now.",
        params=(Param("d", "Darrell's share", int, 7), Param("a", "Allen's share", int, 11),
                Param("total", "total age", int, 162),
                Param("years", "years ahead", int, 10)), root="r", answer_key="answer")
    values = {"d": 7, "a": 11, "total": 172, "years": 10}
    question = (
        "Darrell and Allen's ages are in the ratio of 7:11. If their total age now is 10 less than 172, calculate "
        "Allen's age 10 years from now."
    )
    refusal = check(entry, question, values)
    assert refusal is not None and "'10'" in refusal


def test_a_percent_in_a_sentence_that_changes_a_price_is_an_added_operation():
    entry = EntryPoint(
        id="toy", description="toy price changes",
        template=("In November, a toy was ${price}. In December, the price increased by {up}%. In January, the price "
                  "decreased by {down}%. What was the price of the toy after it was discounted in January?"),
        params=(Param("price", "price", float, 40.0), Param("up", "rise", float, 80.0), Param("down", "fall", float, 50.0)),
        root="r", answer_key="answer")
    question = ("In November, a toy was $40. In December, the price increased by 80%. In January, the price decreased by "
                "50%. In February, prices decreased by 20%. What was the price of the toy after it was discounted in January?")
    assert check(entry, question, {"price": 40.0, "up": 80.0, "down": 50.0}) is not None


COINS = EntryPoint(
    id="coins", description="coins saved by Rong and Neil",
    template=("Rong saves {coins} coins every month. Neil saves {num}/{den} times more coins per month than Rong. "
              "How many coins do they have after ten years?"),
    params=(Param("coins", "coins Rong saves a month", int, 20, minimum=0), Param("num", "numerator", int, 2, minimum=0),
            Param("den", "denominator", int, 5, minimum=1)),
    root="r",
)


def test_a_template_fraction_is_one_fraction_of_the_question_not_two_numbers_from_apart():
    distracted = ("Rong saves 20 coins worth $1 each every month. Neil saves 2/5 times more coins per month than "
                  "Rong. How many coins do they have after ten years?")
    refusal = check(COINS, distracted, {"coins": 20, "num": 1, "den": 0.4})  # "$1" and "2/5" pieced together
    assert refusal is not None and "fraction" in refusal
    in_words = distracted.replace(" worth $1 each", "").replace("2/5 times", "2 out of 5 times")  # one fraction
    assert check(COINS, in_words, {"coins": 20, "num": 2, "den": 5}) is None


def test_a_value_the_question_leaves_unstated_is_refused_on_the_model_path():
    dosage = EntryPoint(
        id="dosage", description="medicine in doses",
        template=("Saanvi combines {first} mL of one medicine with {times} times that amount of the second medicine. "
                  "How many mL of medicine are in {doses} doses?"),
        params=(Param("first", "mL of the first medicine", int, 14, minimum=0),
                Param("times", "times as much of the second", int, 3, minimum=0),
                Param("doses", "doses", int, 8, minimum=1)),
        root="r",
    )
    reversed_question = ("Saanvi combines a certain mL of one medicine with 3 times that amount of the second medicine. "
                         "448 mL of medicine are in 8 doses. How many mL of medicine are in one dose?")
    refusal = check(dosage, reversed_question, {"first": 448, "times": 3, "doses": 8})
    assert refusal is not None and "unstated" in refusal and "a certain mL" in refusal
    rephrased = ("Saanvi combines 20 mL of one medicine with 3 times that amount of the second medicine. How many mL "
                 "of medicine are in 8 doses, if some doses are taken at night?")  # "some doses": no slot's number
    no_condition_check = ReasoningGuard(GuardConfig(check_asking_words=False))
    assert no_condition_check(dosage, rephrased, {"first": 20, "times": 3, "doses": 8}, "lm-draft") is None
    # (with every check on, the condition the entry's final question does not state is what refuses it)
    assert "adds a condition" in check(dosage, rephrased, {"first": 20, "times": 3, "doses": 8})


TEAM = EntryPoint(
    id="team",
    description="players on a team's defense",
    template=("A club has {members} members. There are {offense} as many players on the offense as on the defense. "
              "There is {special} the number of players on the special teams as on the defense. How many players "
              "are on the defense?"),
    params=(Param("members", "members of the club", int, 105, minimum=0),
            Param("offense", "offense players per defense player", float, 2.0, minimum=0),
            Param("special", "special-team players per defense player", float, 0.5, minimum=0)),
    root="answer the team question",
    answer_key="answer",
)
SWAPPED = ("A club has 105 members. There is 0.5 the number of players on the special teams as on the defense. "
           "There are 2 as many players on the offense as on the defense. How many players are on the defense?")


def test_values_read_crossed_from_reordered_statements_are_refused():
    guard = make_guard()
    crossed = {"members": 105, "offense": 0.5, "special": 2.0}  # read by position, as a word aligner would
    why = guard(TEAM, SWAPPED, crossed, "aligned")
    assert why is not None and "'offense' and 'special'" in why
    assert guard(TEAM, SWAPPED, {"members": 105, "offense": 2.0, "special": 0.5}, "aligned") is None
    in_order = ("A club has 105 members. There are 2 as many players on the offense as on the defense. There is 0.5 "
                "the number of players on the special teams as on the defense. How many players are on the defense?")
    assert guard(TEAM, in_order, {"members": 105, "offense": 2.0, "special": 0.5}, "aligned") is None
    assert ReasoningGuard(GuardConfig(check_crossed=False))(TEAM, SWAPPED, crossed, "aligned") is None


def test_equal_values_are_never_crossed():
    same = SWAPPED.replace("0.5 the number", "2 the number")
    assert make_guard()(TEAM, same, {"members": 105, "offense": 2.0, "special": 2.0}, "aligned") is None


def test_a_fraction_word_after_a_count_is_a_constant_of_the_template():
    """"One-eighth" is a number (0.125), not the weak "one" it was read as: a question that says "one-sixth"
    instead states another constant; a number two words run together ("days one and two") stays visible."""
    entry = EntryPoint(
        id="seats", description="occupied seats",
        template="There are {rows} rows of {seats} seats. One-eighth of the seats are empty. How many are taken?",
        params=(Param("rows", "rows", int, 4, minimum=1), Param("seats", "seats per row", int, 8, minimum=1)),
        root="r", answer_key="answer")
    values = {"rows": 5, "seats": 16}
    same = "There are 5 rows of 16 seats. One-eighth of the seats are empty. How many are taken?"
    assert check(entry, same, values) is None
    assert check(entry, same.replace("One-eighth", "One-sixth"), values) is not None
    assert [m.text for m in scan("On days one and two, Mack saw a total of 50 birds.")] == ["one", "two", "50"]


DUCKS_STATED = ("Janet's ducks lay 20 eggs per day. She eats 2 for breakfast every morning and bakes muffins for her "
                "friends every day with 5. She sells the remainder at the farmers' market daily for $3 per fresh duck "
                "egg. ")


@pytest.mark.parametrize("path", ["aligned", "lm-draft"])
@pytest.mark.parametrize(("asked", "why"), [
    ("How much more in dollars does she make every day at the farmers' market?", "adds a comparison"),
    ("How much less in dollars does she make every day than her sister at the farmers' market?", "adds a comparison"),
    ("How much in dollars does she not make every day at the farmers' market?", "adds a negation"),
    ("How much in dollars doesn't she make every day at the farmers' market?", "adds a negation"),
    ("How much additional money in dollars does she make every day at the farmers' market?", "adds a comparison"),
    ("How much in dollars does she make on average every day at the farmers' market?", "adds a mean"),
    ("How much in dollars do she and her sister make altogether every day at the farmers' market?", "adds a sum"),
])
def test_a_final_question_that_gains_an_asking_modifier_asks_for_something_else(asked, why, path):
    refusal = check(DUCKS, DUCKS_STATED + asked, DUCK_VALUES, path)
    assert refusal is not None and why in refusal
    config = GuardConfig(check_modifiers=False, check_statements=False)  # a comparison anywhere: inserted_statements
    assert ReasoningGuard(config)(DUCKS, DUCKS_STATED + asked, DUCK_VALUES, "aligned") is None


def test_a_final_question_posed_another_way_keeps_its_modifiers():
    asked = "What is the amount in dollars that she does make every day at the farmers' market?"
    assert check(DUCKS, DUCKS_STATED + asked, DUCK_VALUES, "aligned") is None
    # how a quantity is shared out is reworded freely: "each day" for "every day" is the same question
    assert check(DUCKS, DUCKS_STATED + asked.replace("every day", "each day"), DUCK_VALUES, "aligned") is None
    assert check(BUS, "A bus travels 60 miles per hour for 5 hours. A car travels 60 miles per hour for 8 hours. How "
                      "much farther did the bus go, in miles?", BUS_VALUES, "aligned") == (
        "the question's final question drops a comparison, which changes what it asks for")


@pytest.mark.parametrize("path", ["aligned", "lm-draft"])
@pytest.mark.parametrize("question", [
    # in the final sentence's condition, before its question word
    DUCKS_STATED.replace("She sells", "If she does not sell") .replace("egg. ", "egg, ")
    + "how much in dollars does she make every day at the farmers' market?",
    # in a statement
    DUCKS_STATED.replace("She eats 2", "She never eats 2") + "How much in dollars does she make every day at the "
    "farmers' market?",
    DUCKS_STATED.replace("bakes muffins", "doesn't bake muffins") + "How much in dollars does she make every day at "
    "the farmers' market?",
])
def test_a_negation_anywhere_in_the_question_changes_its_reasoning(question, path):
    refusal = check(DUCKS, question, DUCK_VALUES, path)
    assert refusal is not None and "adds a negation" in refusal
    # the same question without the negation is served
    plain = question.replace("does not sell", "sells").replace("never eats", "eats").replace("doesn't bake", "bakes")
    assert check(DUCKS, plain, DUCK_VALUES, path) is None


def test_a_negation_the_entry_states_may_stay_but_not_go():
    entry = EntryPoint(
        id="not-red", description="marbles that are not red", root="answer", answer_key="answer",
        template="A bag has {total} marbles. {red} of them are red. How many marbles are not red?",
        params=(Param("total", "marbles in the bag", int, 10, minimum=0), Param("red", "red marbles", int, 4, minimum=0)))
    values = {"total": 12, "red": 5}
    assert check(entry, "A bag has 12 marbles. 5 of them are red. How many marbles are not red?", values, "aligned") is None
    refusal = check(entry, "A bag has 12 marbles. 5 of them are red. How many marbles are red?", values, "aligned")
    assert refusal is not None and "drops a negation" in refusal


def test_a_negation_that_restates_or_disclaims_is_not_a_change():
    entry = EntryPoint(
        id="emails", description="emails answered in a week", root="answer", answer_key="answer",
        template=("Maya receives {emails} emails a day. {share}% of those emails don't require any response. She "
                  "responds to the rest of them. How many emails does Maya respond to in a {days} day work week?"),
        params=(Param("emails", "emails a day", int, 160, minimum=0), Param("share", "percent", int, 35, minimum=0),
                Param("days", "work days", int, 6, minimum=0)))
    values = {"emails": 150, "share": 12, "days": 4}
    stated = "Michael receives 150 emails a day. 12% of those emails don't require any response. "
    asked = "He responds to the rest of them. How many emails does Michael respond to in a 4 day work week?"
    # a sentence that only restates one before it says its "not" again
    assert check(entry, stated + "To be clear, 12% of those emails don't require any response. " + asked, values,
                 "lm-draft") is None
    # a phrase calling something irrelevant negates nothing of the reasoning
    assert check(entry, stated + "His office's new carpet does not affect this. " + asked, values, "lm-draft") is None
    refusal = check(entry, stated + "He does not respond to the rest of them. " + asked[33:], values, "lm-draft")
    assert refusal is not None and "adds a negation" in refusal


TWO_PEOPLE = EntryPoint(
    id="two-people", description="apples Sam buys", root="answer", answer_key="answer",
    template="Sam buys {a} apples at the market. Kim buys {b} pears there. How many apples does Sam buy in {w} weeks?",
    params=(Param("a", "apples a week", int, 3, minimum=0), Param("b", "pears a week", int, 4, minimum=0),
            Param("w", "weeks", int, 2, minimum=0)))


@pytest.mark.parametrize("path", ["aligned", "lm-draft"])
def test_a_final_question_about_another_person_of_the_story_asks_for_something_else(path):
    values = {"a": 5, "b": 6, "w": 3}
    renamed = "Lucy buys 5 apples at the market. Omar buys 6 pears there. How many apples does {} buy in 3 weeks?"
    assert check(TWO_PEOPLE, renamed.format("Lucy"), values, path) is None
    assert check(TWO_PEOPLE, renamed.format("Omar"), values, path) == (
        "the question asks about another person of its story than the entry's question does")
    # people are told apart by the order the story names them in: a story told in the other order is a miss (the
    # guard cannot tell it from a question about the other person), never a wrong answer
    swapped = "Omar buys 6 pears at the market. Lucy buys 5 apples there. How many apples does Lucy buy in 3 weeks?"
    assert check(TWO_PEOPLE, swapped, values, path) is not None
    # where the question keeps the entry's names, a name is the same person wherever the story first mentions it
    reordered = "Kim buys 6 pears at the market. Sam buys 5 apples there. How many apples does {} buy in 3 weeks?"
    assert check(TWO_PEOPLE, reordered.format("Sam"), values, path) is None
    assert check(TWO_PEOPLE, reordered.format("Kim"), values, path) == (
        "the question asks about another person of its story than the entry's question does")
    assert ReasoningGuard(GuardConfig(check_roles=False))(TWO_PEOPLE, renamed.format("Omar"), values, path) is None


@pytest.mark.parametrize("path", ["aligned", "lm-draft"])
def test_a_final_question_about_more_people_of_the_story_asks_for_a_total(path):
    """"How many apples does Lucy buy" → "How many apples do Lucy and Omar buy": a total over both, not Lucy's."""
    values = {"a": 5, "b": 6, "w": 3}
    story = "Lucy buys 5 apples at the market. Omar buys 6 pears there. "
    assert check(TWO_PEOPLE, story + "How many apples do Lucy and Omar buy in 3 weeks?", values, path) == (
        "the question asks about more people of its story than the entry's question does")
    assert check(TWO_PEOPLE, story + "How many apples does Lucy buy in 3 weeks?", values, path) is None
    # a name where the entry asks with a pronoun is that person, whatever else the asking part names
    papers = EntryPoint(
        id="papers", description="newspapers to District B", root="answer", answer_key="answer",
        template="Jack delivers {n} newspapers a day, {a} of them to District A. How many does he deliver to District B?",
        params=(Param("n", "newspapers a day", int, 600, minimum=0), Param("a", "to District A", int, 198, minimum=0)))
    named = "James delivers 500 newspapers a day, 120 of them to District A. How many does James deliver to District B?"
    assert check(papers, named, {"n": 500, "a": 120}, path) is None


CHORES = EntryPoint(
    id="chores", description="hours of chores", root="answer", answer_key="answer",
    template="Ada washed the car in {a} hours. Ben took {b} hours longer than Ada. Cy took {c} hours longer than Ben. "
             "Calculate the total time they took to do their chores.",
    params=(Param("a", "Ada's hours", int, 4, minimum=0), Param("b", "Ben's longer", int, 2, minimum=0),
            Param("c", "Cy's longer", int, 1, minimum=0)))


@pytest.mark.parametrize("path", ["aligned", "lm-draft"])
@pytest.mark.parametrize(("asked", "served"), [
    ("the total time they took", True),
    ("the total time Ben and Cy took", False),  # two of the three: another total
    ("the time Cy took", False),
])
def test_a_final_question_that_names_some_of_a_group_asks_for_less(path, asked, served):
    """The entry asks about its people together ("the total time *they* took"); a question that names some of them
    asks for a part of that total, whoever they are."""
    question = (f"Ada washed the car in 3 hours. Ben took 5 hours longer than Ada. Cy took 2 hours longer than Ben. "
                f"Calculate {asked} to do their chores.")
    refused = check(CHORES, question, {"a": 3, "b": 5, "c": 2}, path)
    assert (refused is None) == served, refused
    if not served:
        assert refused == "the question asks about some of the people of its story by name, the entry's about them all"


@pytest.mark.parametrize(("question", "served"), [
    # a pronoun named, or a name made a pronoun: the same person
    ("Lucy buys 5 apples at the market. Omar buys 6 pears there. How many apples does she buy in 3 weeks?", True),
    # the condition names another person than the entry's condition
    ("Lucy buys 5 apples at the market. Omar buys 6 pears there. If Omar is busy, how many apples does Lucy buy in 3 "
     "weeks?", False),
])
def test_whom_the_final_question_names(question, served):
    entry = replace(TWO_PEOPLE, id="two-people-if", template=(
        "Sam buys {a} apples at the market. Kim buys {b} pears there. If Sam is busy, how many apples does Sam buy in "
        "{w} weeks?"))
    if "If" not in question:
        entry = TWO_PEOPLE
    assert (check(entry, question, {"a": 5, "b": 6, "w": 3}, "lm-draft") is None) is served


@pytest.mark.parametrize(("question", "served"), [
    ("Lucy buys 5 apples at the market. Omar buys 6 pears there. How many apples does Lucy buy in 3 weeks if Lucy "
     "is busy?", True),
    ("Lucy buys 5 apples at the market. Omar buys 6 pears there. How many apples does Lucy buy in 3 weeks if Omar "
     "is busy?", False),
])
def test_an_entry_that_asks_with_an_instruction_has_its_people_read_too(question, served):
    # "Calculate" opens the instruction: a verb, not a third person of the story
    entry = replace(TWO_PEOPLE, id="two-people-calc", template=(
        "Sam buys {a} apples at the market. Kim buys {b} pears there. Calculate how many apples Sam buys in {w} weeks "
        "if Sam is busy."))
    refusal = check(entry, question, {"a": 5, "b": 6, "w": 3}, "lm-draft")
    assert (refusal is None) is served, refusal


MUSHROOMS = EntryPoint(
    id="mushrooms", description="protein a week", root="answer", answer_key="answer",
    template=("A cup of mushrooms weighs {cup} grams and has {protein} grams of protein. If John eats {eaten} grams of "
              "mushrooms every day how many grams of protein does he get per week?"),
    params=(Param("cup", "grams a cup", float, 100.0, minimum=0), Param("protein", "grams of protein", float, 3.0,
            minimum=0), Param("eaten", "grams eaten a day", float, 200.0, minimum=0)))


@pytest.mark.parametrize(("question", "eaten", "refusal"), [
    # the number read as grams counts servings: 2 servings taken for 2 grams is a wrong answer
    ("If a serving of mushrooms weighing 100 grams contains 3 grams of protein, and John consumes two servings daily, "
     "how much protein in grams does he get in a week?", 2, "the number read for 'eaten' ('two') counts servings, not grams"),
    # another unit: 2 kilograms read as 2 grams
    ("A cup of mushrooms weighs 100 grams and has 3 grams of protein. John eats 2 kilograms of them a day. How many "
     "grams of protein does he get per week?", 2, "the number read for 'eaten' ('2') counts kilograms, not grams"),
    # the unit spelt another way, hyphenated, or a function word after the number: the same mass
    ("Mushrooms: a 100 g cup has 3 g of protein. John eats 200 g of mushrooms daily. Protein per week in grams?", 200, None),
    ("A 100-gram cup of mushrooms has 3 grams of protein; John eats 200 grams a day. Grams of protein a week?", 200, None),
])
def test_a_value_read_for_a_measured_slot_must_count_what_the_slot_measures(question, eaten, refusal):
    values = {"cup": 100.0, "protein": 3.0, "eaten": eaten}
    assert check(MUSHROOMS, question, values, "lm-draft") == refusal
    assert ReasoningGuard(GuardConfig(check_units=False))(MUSHROOMS, question, values, "lm-draft") != refusal or not refusal


def test_a_slot_the_template_follows_with_a_count_noun_is_not_checked():
    """"{a} apples" read from "5 red apples": an adjective between, not another thing counted."""
    question = "Sam buys 5 red apples at the market. Kim buys 6 pears there. How many apples does Sam buy in 3 weeks?"
    assert check(TWO_PEOPLE, question, {"a": 5, "b": 6, "w": 3}, "lm-draft") is None


def test_may_is_a_month_inside_a_sentence():
    """A template "in the month of May" counts 31 days; June states 30, so it is another constant (a verb "may"
    names no month)."""
    entry = EntryPoint(
        id="fish", description="fish food in May", root="r",
        template="Jo got {fish} fish. They each need ${food} worth of food a day. How much does she spend in the month of May?",
        params=(Param("fish", "fish", int, 3, minimum=0), Param("food", "food a day", float, 1.0, minimum=0)),
    )
    values = {"fish": 5, "food": 2.0}
    question = "Ana got 5 fish. They each need $2 worth of food a day. How much does she spend in the month of {}?"
    assert check(entry, question.format("July"), values) is None
    assert "May" in check(entry, question.format("June"), values)
    assert months_named("You may buy it in May. June is hot.") == {"may": 31, "june": 30}


def test_a_reversed_question_with_renamed_roles_is_refused_on_the_model_path():
    entry = EntryPoint(
        id="bag", description="bag", root="r",
        template=("Uma's backpack is too heavy. She must take out {weight} pounds. Her novels weigh {novel} pound each and "
                  "her games weigh {game} pound each. If she takes out {novels} novels, how many games must she take out?"),
        params=tuple(Param(n, n, float, 1.0, minimum=0) for n in ("weight", "novel", "game", "novels")),
    )
    values = {"weight": 12.0, "novel": 0.25, "game": 0.5, "novels": 8.0}
    same = ("Ida's backpack is too heavy. She must take out 12 pounds. Her magazines weigh 1/4 pound each and her "
            "puzzles weigh 1/2 pound each. If she takes out 8 magazines, how many puzzles must she take out?")
    traded = same.replace("8 magazines, how many puzzles", "8 puzzles, how many magazines")
    assert check(entry, same, values, "lm-draft") is None
    assert "in place of another" in check(entry, traded, values, "lm-draft")


def test_on_the_aligned_path_only_a_subunit_is_another_unit():
    """The aligner pins a slot between the template's words, so "5 mph" in place of "{s} miles" is its rename; an
    amount in cents in place of "${v}" is a hundred times the value whatever the words around it."""
    caps = EntryPoint(id="caps", description="caps", root="r",
                      template="He finds {caps} caps a day and each cap is worth ${value}. How much money does he make?",
                      params=(Param("caps", "caps", int, 10, minimum=0), Param("value", "value", float, 0.25, minimum=0)))
    cents = "He finds 6 caps a day and each cap is worth 30 cents. How much money does he make?"
    assert "counts cents" in check(caps, cents, {"caps": 6, "value": 30.0}, "aligned")
    assert check(caps, cents, {"caps": 6, "value": 0.3}, "aligned") is None  # read in dollars (measures.in_currency)
    ride = EntryPoint(id="ride", description="ride", root="r",
                      template="Ann rides at {speed} miles an hour for {hours} hours. How far does she ride?",
                      params=(Param("speed", "speed", int, 10, minimum=0), Param("hours", "hours", int, 2, minimum=0)))
    mph = "Ann rides at 12 mph an hour for 3 hours. How far does she ride?"
    assert check(ride, mph, {"speed": 12, "hours": 3}, "aligned") is None
    assert check(ride, mph, {"speed": 12, "hours": 3}, "lm-draft") is not None


@pytest.mark.parametrize("path", ["aligned", "lm-draft"])
def test_a_final_question_in_another_unit_is_refused_on_every_path(path):
    question = ("A bus travels 60 miles per hour for 5 hours. A car travels 60 miles per hour for 8 hours. How much "
                "farther did the bus go than the car, in kilometers?")
    refusal = check(BUS, question, BUS_VALUES, path)
    assert refusal is not None and "'kilometer'" in refusal
    assert check(BUS, question.replace("kilometers", "miles"), BUS_VALUES, path) is None


def test_a_final_question_that_asks_for_another_noun_while_the_story_keeps_the_entrys_is_refused():
    """"How many pounds of vegetables" of an entry that asks "how many pounds of carrots", in a story that still has
    its carrots: another quantity (a sum), not the carrots renamed; renamed throughout, it is the same question."""
    entry = EntryPoint(
        id="veg", description="carrots bought", root="r", answer_key="answer",
        template="Daisy bought {o} pounds of onions and {c} pounds of carrots. How many pounds of carrots did Daisy buy?",
        params=(Param("o", "onions", int, 2, minimum=0), Param("c", "carrots", int, 3, minimum=0)))
    values = {"o": 2, "c": 3}
    story = "Daisy bought 2 pounds of onions and 3 pounds of carrots. "
    refusal = check(entry, story + "How many pounds of vegetables did she buy in all?", values, "lm-draft")
    assert refusal is not None and "'carrot'" in refusal
    renamed = "Daisy bought 2 pounds of onions and 3 pounds of beets. How many pounds of beets did Daisy buy?"
    assert check(entry, renamed, values, "lm-draft") is None


@pytest.mark.parametrize("path", ["aligned", "lm-draft"])
def test_a_final_question_about_another_lettered_thing_is_refused(path):
    """"exit B" for "exit C": one-letter names are shorter than any content word the overlap checks compare."""
    entry = EntryPoint(
        id="exits", description="students through exit C", root="r", answer_key="answer",
        template=("{n} students were in the hall. {a} went out through exit A, {b} through exit B and the rest through exit "
                  "C. How many students went out through exit C?"),
        params=(Param("n", "students", int, 100, minimum=0), Param("a", "exit A", int, 30, minimum=0),
                Param("b", "exit B", int, 20, minimum=0)))
    values = {"n": 100, "a": 30, "b": 20}
    story = "100 students were in the hall. 30 went out through exit A, 20 through exit B and the rest through exit C. "
    assert check(entry, story + "How many students went out through exit C?", values, path) is None
    for asked in ("How many students went out through exit B?", "How many students went out through exits B and C?"):
        refusal = check(entry, story + asked, values, path)
        assert refusal is not None and "entry's about C" in refusal


COURSE = EntryPoint(
    id="course", description="a course's fee", root="r",
    template=("A pottery studio charges ${fee} per week for a course of {weeks} weeks. Clay is included. How much does "
              "a student pay for {weeks} weeks?"),
    params=(Param("fee", "fee per week in dollars", float, 30.0), Param("weeks", "weeks of the course", int, 6)),
)


def test_every_mention_of_a_repeated_slot_counts_the_slots_unit():
    values = {"fee": 25.0, "weeks": 8}
    reworded = ("For a course of 8 weeks a pottery studio charges $25 per week, clay included. What does a student pay "
                "for those 8 weeks?")
    assert check(COURSE, reworded, values) is None
    # the second mention of the 8 counts days: another quantity, though it repeats the number
    changed = ("A pottery studio charges $25 per week for a course of 8 weeks. Clay is included. How much does a "
               "student pay for 8 days?")
    refusal = check(COURSE, changed, values)
    assert refusal is not None and "counts days" in refusal


def test_a_percent_and_an_amount_of_one_value_bind_each_to_its_own_slot():
    """"20% off $20.00": both numbers are 20, and the words around them fit either slot; the one written as a percent
    states the slot the template writes as one, so neither is read as the other and refused as no percent."""
    entry = EntryPoint(
        id="pan", description="a pan on sale and towels",
        template=("Sheila charged ${charged} on her card. She bought a frying pan that was on sale for {pan_off}% off "
                  "${pan_price} and a set of towels that was {towels_off}% off ${towels_price}. What does she owe?"),
        params=(Param("charged", "charged", float, 85.0), Param("pan_price", "pan price", float, 20.0),
                Param("pan_off", "pan discount", float, 20.0), Param("towels_off", "towels discount", float, 10.0),
                Param("towels_price", "towels price", float, 30.0)), root="r", answer_key="answer")
    values = {"charged": 85.0, "pan_off": 20.0, "pan_price": 20.0, "towels_off": 10.0, "towels_price": 30.0}
    question = ("Sheila charged $85 worth of merchandise on her credit card. Then she bought a frying pan that was on "
                "sale for 20% off $20.00 and a set of towels that was 10% off $30. What does she owe?")
    assert check(entry, question, values) is None
    assert check(entry, question.replace("20% off $20.00", "20 off $20.00"), values) is not None


def test_a_question_of_many_number_words_is_read_in_linear_work(monkeypatch):
    """A 4 KB question of "ten ten ten ..." is one run of number words that reads as no number: each word starts a
    run looked for over at most a few words (a number is never written in more), where every run from every word was
    tried before (half a million readings; minutes of a worker's time)."""
    import edge_runtime.read.mentions as mentions

    calls = []
    read = mentions.read_values
    monkeypatch.setattr(mentions, "read_values", lambda text: calls.append(text) or read(text))
    hostile = "ten " * 1024
    assert [m.text for m in mentions.scan(hostile)] == ["ten"] * 1024
    assert len(calls) <= 10 * 1024 and max(len(c.split()) for c in calls[1:]) <= 8
    assert [m.text for m in mentions.scan("On days one and two, Mack saw a total of 50 birds.")] == ["one", "two", "50"]


def test_the_words_around_a_number_are_read_near_it_not_across_a_long_sentence(monkeypatch):
    """Each number's context words came from the whole sentence before and after it: 1 200 numbers in one sentence
    of 4 KB made the guard read the sentence 2 400 times (2 s). Three content words lie well within the window, so a
    long sentence of words reads as before."""
    import edge_runtime.read.template_facts as facts

    story = ("On the long road north past the old mill and the quiet farms where the river bends twice before the "
             "bridge, the careful baker with the red cart and the small dog that never barks at strangers carried "
             "exactly 16 fresh loaves of rye bread, wrapped in linen cloth and tied with string from the market stall "
             "near the church, all the way to the village fair that opens every spring when the cherry trees bloom.")
    at = story.index("16")
    near = facts.context(story, at, at + 2)
    monkeypatch.setattr(facts, "_CONTEXT_CHARS", 10**6)
    assert near == facts.context(story, at, at + 2) and len(near[0]) == len(near[1]) == 3
    monkeypatch.setattr(facts, "_CONTEXT_CHARS", 240)
    seen = []
    remove = facts.remove_numbers
    monkeypatch.setattr(facts, "remove_numbers", lambda text: seen.append(len(text)) or remove(text))
    long = "He ate " + "10 " * 1300 + "apples today."
    last = long.rindex("10")
    assert facts.context(long, last, last + 2)[1] == facts.context("10 apples today.", 0, 2)[1]
    assert max(seen) <= 240


def test_a_sentence_of_many_numbers_is_read_once_for_its_restatements(monkeypatch):
    """Whether a number restates another asks for its sentence's words: read once per sentence, not once per number
    (1 200 numbers in one 4 KB sentence read it 1 200 times: 2 s in the guard)."""
    import edge_runtime.read.restatement as restatement

    calls = []
    remove = restatement.remove_numbers
    monkeypatch.setattr(restatement, "remove_numbers", lambda text: calls.append(len(text)) or remove(text))
    restatement._sentence_words.cache_clear()
    question = ("Janet's ducks lay 16 eggs per day. She eats 3 for breakfast every morning and bakes muffins for her "
                "friends every day with 4. She sells the remainder at the farmers' market daily for $2 per fresh duck "
                "egg. " + "10 " * 1000 + "How much in dollars does she make every day at the farmers' market?")
    assert check(DUCKS, question, {"eggs": 16, "eaten": 3, "baked": 4, "price": 2.0}) is not None
    assert len(calls) <= 10

"""Independent agreement before an entry is trusted: a second program for the same question decides
whether an imported entry is verified, which of its parameters must stay constant, or that it is
rejected — and the status travels into the importer's records."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from builder.gsm8k import ReferenceIndex
from builder.independent import IndependentProgram, as_solution, load_independent
from builder.pot_import.batch import run_import
from builder.pot_import.program import PalProgram
from builder.pot_import.verify import Importer, ImportOptions
from builder.worked_solution import WORKED_SOLUTION
from edge_runtime.read.extractor import Extractor
from tests.builder.test_pot_import import answer, load_entry, program, transcript

PENS = "Sam buys 2 packs of pens. Each pack has 4 pens. How many pens does he have?"
RIGHT = "packs = 2\npens_per_pack = 4\nreturn packs * pens_per_pack"
#: Right on the original numbers only: 4 * 4 / 2 = 8 = 2 * 4, and it never reads the 2.
BY_COINCIDENCE = "pens_per_pack = 4\nreturn pens_per_pack * pens_per_pack / 2"
INDEPENDENT = IndependentProgram("second", as_solution("num_packs = 2\nper_pack = 4\nans = num_packs * per_pack"))


@pytest.fixture(scope="module")
def importer() -> Importer:
    return Importer(ImportOptions(seed=3))


def with_independent(t, *programs: IndependentProgram):
    return dataclasses.replace(t, independent=programs)


def test_an_entry_that_agrees_with_an_independent_program_is_verified(importer: Importer) -> None:
    result = importer.import_one(with_independent(transcript(PENS, RIGHT, 8), INDEPENDENT))
    assert result.accepted, result.detail
    assert result.info["verification"]["status"] == "verified"
    assert result.info["verification"]["sources"] == ["second"]
    assert result.info["verification"]["variants"] >= 8
    assert result.info["params"] == ["packs", "pens_per_pack"]
    assert result.info["program"] == "own"  # trusted with every number: no other program is tried in its place


def test_an_entry_right_only_by_coincidence_is_not_accepted(importer: Importer) -> None:
    alone = importer.import_one(transcript(PENS, BY_COINCIDENCE, 8))
    assert alone.accepted, "its own round trips cannot see the coincidence"
    assert alone.info["verification"]["status"] == "unverified"
    checked = importer.import_one(with_independent(transcript(PENS, BY_COINCIDENCE, 8), INDEPENDENT))
    if checked.accepted:  # what is left must be right on every question it serves
        entry, compiled = load_entry(checked.source, checked.id)
        assert checked.info["verification"]["status"] == "verified"
        assert not checked.info["params"], checked.info
    else:
        assert checked.reason in ("independent_disagreement", "no_parameters"), checked.detail


def test_a_disagreement_freezes_the_blamed_parameter_and_keeps_the_rest(importer: Importer) -> None:
    question = "Ann has 5 red balls and 4 blue balls. She gets 3 more red balls. How many red balls does she have?"
    # 5 + 3 * 4 - 4 * 2 - 1 = 8 = 5 + 3: right only while there are 4 blue balls and 3 more red ones
    body = "red = 5\nblue = 4\nmore = 3\nreturn red + more * blue - blue * 2 - 1"
    independent = IndependentProgram("second", as_solution("red = 5\nmore = 3\nans = red + more"))
    alone = importer.import_one(transcript(question, body, 8))
    assert alone.accepted and alone.info["params"] == ["red", "blue", "more"]
    result = importer.import_one(with_independent(transcript(question, body, 8), independent))
    assert result.accepted, result.detail
    assert result.info["verification"]["status"] == "verified"
    assert result.info["params"] == ["red"], result.info  # the blue balls and the 3 more stay as stated
    assert result.info["attempts"] == 2
    # the second program reads both numbers, but only the row's own program could check it, and disagrees
    assert result.info["program"] == "own"


ANN = "Ann has 5 red balls and 4 blue balls. She gets 3 more red balls. How many red balls does she have?"
#: Right only while there are 4 blue balls and 3 more red ones.
ANN_BY_COINCIDENCE = "red = 5\nblue = 4\nmore = 3\nreturn red + more * blue - blue * 2 - 1"


def test_another_authors_program_replaces_one_that_loses_parameters_when_a_third_agrees(importer: Importer) -> None:
    """The row's own program keeps two numbers constant; two other programs read them and agree with each
    other on every variant: the entry is compiled from one of them, verified, with every number it reads."""
    second = IndependentProgram("second", as_solution("red = 5\nmore = 3\nans = red + more"))
    third = IndependentProgram("third", as_solution("start = 5\nextra = 3\nans = extra + start"))
    result = importer.import_one(with_independent(transcript(ANN, ANN_BY_COINCIDENCE, 8), second, third))
    assert result.accepted, result.detail
    assert result.info["program"] == "second"
    assert {"red", "more"} <= set(result.info["params"]) and not result.info["frozen"], result.info
    assert result.info["verification"]["status"] == "verified"
    assert "third" in result.info["verification"]["sources"]
    assert "the second program for its question in place of the row's own" in result.source
    entry, compiled = load_entry(result.source, result.id)
    answer = compiled.run({p.name: {5: 7, 4: 9, 3: 10}[p.original] for p in entry.params}).result["answer"]
    assert answer == 17  # 7 red balls and 10 more: the blue balls no longer decide it


def test_a_worked_solution_checks_entries_but_never_becomes_one(importer: Importer) -> None:

    worked = IndependentProgram(WORKED_SOLUTION, as_solution("red = 5\nmore = 3\nans = red + more"))
    third = IndependentProgram("third", as_solution("start = 5\nextra = 3\nans = extra + start"))
    result = importer.import_one(with_independent(transcript(ANN, ANN_BY_COINCIDENCE, 8), worked, third))
    assert result.accepted and result.info["program"] == "third", result.info
    assert result.info["verification"]["status"] == "verified"


def test_the_rows_own_program_checks_others_with_its_gsm_hard_numbers_mapped_back() -> None:
    """A GSM-Hard program states the variant's number (4933828 eggs); as a checker of another author's entry it must
    answer the original question, or it is "wrong on the original" and checks nothing."""
    from builder.pot_import.planner import plan_parameters
    from builder.pot_import.program import PalProgram

    question = "Her ducks lay 16 eggs a day. She eats 3 and sells the rest at $2 each. How much does she make a day?"
    variant = question.replace("16 eggs", "4933828 eggs")
    code = as_solution("eggs = 4933828\neaten = 3\nprice = 2\nans = (eggs - eaten) * price")
    program = PalProgram(code)
    program.set_defaults(plan_parameters(question, program, variant, question).restored)
    original = program.code
    assert "4933828" not in original and "16" in original
    assert PalProgram(original).run({}) == 26


def test_an_unverified_program_does_not_stand_in_for_a_rejected_one(importer: Importer) -> None:
    """The row's own program reads no stated number (rejected); the one other program has nothing to agree
    with: it would be an unverified guess, so the row stays rejected."""
    second = IndependentProgram("second", as_solution("red = 5\nmore = 3\nans = red + more"))
    result = importer.import_one(with_independent(transcript(ANN, "return 16 / 2", 8), second))
    assert not result.accepted and result.reason == "no_parameters", result.info


def test_the_reference_solution_outweighs_a_program_that_shares_the_entrys_mistake(importer: Importer) -> None:

    shares_the_mistake = IndependentProgram("same-mistake", as_solution("p = 4\nans = p * p / 2"))
    result = importer.import_one(with_independent(transcript(PENS, BY_COINCIDENCE, 8), shares_the_mistake))
    assert result.accepted and result.info["verification"]["status"] == "verified"  # alone, it cannot tell
    reference = dataclasses.replace(INDEPENDENT, source=WORKED_SOLUTION)
    both = importer.import_one(with_independent(transcript(PENS, BY_COINCIDENCE, 8), shares_the_mistake, reference))
    assert not both.accepted or "pens_per_pack" not in both.info["params"]
    other_model = importer.import_one(with_independent(transcript(PENS, BY_COINCIDENCE, 8), shares_the_mistake,
                                                       INDEPENDENT))
    assert other_model.accepted and other_model.info["verification"]["status"] == "verified"  # one model against one


COOKIES = ("Matt wants cookies for a snack, but his dad wants him to eat healthily. He tells Matt he can have half as many "
           "cookies as the number of carrot sticks he eats, plus two extra for cleaning his room. If Matt wants to eat five "
           "cookies in total, how many carrot sticks does he have to eat?")
#: GSM8K 472's PAL program: right, but which of its two 2s reads "half" (doubling) and which "two extra" the planner must
#: guess from its names; it guesses them crossed, so "a third as many ... plus 4 extra" would be answered wrong.
#: SAME_GUESS is the worked solution ("5 - 2 = 3", "3 * 2 = 6"): its inline 2s have no names, but the one it subtracts
#: cannot be the half (a ratio scales), so it binds them apart, as APART, which writes 0.5 for the half, does.
COOKIES_PAL = ("cookies_total = 5\ncookies_extra = 2\ncookies_carrot_sticks = cookies_total - cookies_extra\n"
               "carrot_sticks = cookies_carrot_sticks * 2\nresult = carrot_sticks\nreturn result")
SAME_GUESS = IndependentProgram("same-guess", as_solution("left = 5 - 2\nans = left * 2"))
APART = IndependentProgram("apart", as_solution("num_cookies = 5\nsticks = num_cookies - 2\nper_stick = 0.5\n"
                                                "ans = sticks / per_stick"))


def test_a_program_that_binds_equal_numbers_apart_outweighs_a_crossed_entry(importer: Importer) -> None:
    """Two numbers of one value in a program are bound to the question by a guess. A program that tells them apart
    (a subtracted 2 is no "half"; 0.5 for half) and disagrees leaves them constant in the crossed entry, and where two
    such programs agree, one of them becomes the entry, with every number varying."""
    alone = importer.import_one(with_independent(transcript(COOKIES, COOKIES_PAL, 6), SAME_GUESS))
    assert alone.accepted and alone.info["verification"]["status"] == "verified"
    assert alone.info["params"] == ["cookies_total"]  # the crossed 2s stay as stated
    both = importer.import_one(with_independent(transcript(COOKIES, COOKIES_PAL, 6), SAME_GUESS, APART))
    assert both.accepted and both.info["verification"]["status"] == "verified", both.detail
    assert both.info["program"] == "same-guess" and len(both.info["params"]) == 3, both.info
    entry, compiled = load_entry(both.source, "gsm8k-0007")
    third = COOKIES.replace("half as many", "a third as many").replace("two extra", "4 extra").replace("five", "ten")
    assert answer(entry, compiled, third) == 18  # (10 - 4) * 3


GARBAGE = ("Jo collects garbage from 3 apartment complexes. The first two have 20 apartments each and the last one has 15 "
           "apartments. She is paid $4 per apartment. How much is she paid?")
#: Writes the count of equal complexes into its structure: "two" is read by no literal, so it becomes a free slot.
BY_STRUCTURE = "first = 20\nlast = 15\npay = 4\nreturn (first + first + last) * pay"
READS_TWO = IndependentProgram("reads", as_solution("equal = 2\nsize = 20\nlast = 15\npay = 4\n"
                                                     "ans = (equal * size + last) * pay"))
IGNORES_TWO = IndependentProgram("ignores", as_solution("size = 20\nlast = 15\npay = 4\nans = (size + size + last) * pay"))


def test_a_number_the_entry_ignores_but_another_program_needs_is_not_a_free_slot(importer: Importer) -> None:
    """A free slot lets the device serve any value the question gives for a number the entry's reasoning ignores.
    A program that reads that number and answers otherwise with it ("the first *three* have ...") is outvoted on the
    entry's verification by one that agrees, but not on the slot: the number stays the template's text, and a
    question that changes it is not served this entry's answer."""
    for others, free in (((IGNORES_TWO,), True), ((IGNORES_TWO, READS_TWO), False)):
        checked = importer.import_one(with_independent(transcript(GARBAGE, BY_STRUCTURE, 220), *others))
        assert checked.accepted, checked.detail
        assert checked.info["verification"]["status"] == "verified"
        assert "ignores" in checked.info["verification"]["sources"]
        assert ("unused_have_apartments" in checked.info["params"]) is free, checked.info["params"]
        assert "unused_apartment_complexes" in checked.info["params"]  # the 3 no program reads stays free
        assert set(checked.info["read_params"]) == {"first", "last", "pay"}


def test_an_independent_program_wrong_on_the_original_is_not_used(importer: Importer) -> None:
    wrong = IndependentProgram("wrong", as_solution("ans = 2 + 4"))
    result = importer.import_one(with_independent(transcript(PENS, RIGHT, 8), wrong))
    assert result.accepted
    assert result.info["verification"] == {"status": "unverified", "detail": "no independent program right on the "
                                           "original question", "sources": [], "variants": 0}


def test_a_counting_answer_and_a_fraction_are_not_compared(importer: Importer) -> None:
    """"How many packs can he make": one program rounds down, the other divides; a variant whose
    division leaves a fraction says nothing, a variant where both are whole must agree."""
    question = "There are 40 apples in one box. Franky has 2 boxes. He packs 8 apples in one pack. How many packs can he make?"
    body = "apples_per_box = 40\nboxes = 2\nper_pack = 8\nreturn apples_per_box * boxes // per_pack"
    independent = IndependentProgram("second", as_solution("a = 40\nb = 2\nc = 8\nans = a * b / c"))
    result = importer.import_one(with_independent(transcript(question, body, 10), independent))
    assert result.accepted, result.detail
    assert set(result.info["params"]) == {"apples_per_box", "boxes", "per_pack"}
    assert result.info["verification"]["status"] in ("verified", "unverified")
    assert "disagree" not in result.info["verification"]["detail"]


GLASSES = ("Kylar buys 16 glasses. One glass costs $5, but every second glass costs only 60% of the price. "
           "How much does he pay?")
#: Two right programs that part only where the count is odd: pairs as a whole number, or as a fraction.
GLASSES_BY_PAIRS = "glasses = 16\nprice = 5\npercent = 60\nreturn glasses // 2 * price + glasses / 2 * price * percent / 100"
GLASSES_BY_HALVES = IndependentProgram("second", as_solution(
    "n = 16\nprice = 5\npercent = 60\nans = n / 2 * price + n / 2 * price * percent / 100"))


def test_variants_that_leave_a_whole_count_fractional_are_not_compared(importer: Importer) -> None:
    """15 glasses leave 7.5 pairs, a question with no agreed answer: two right programs that round it apart must not
    freeze the count; on even counts they agree, and the entry is verified with every number."""
    result = importer.import_one(with_independent(transcript(GLASSES, GLASSES_BY_PAIRS, 64), GLASSES_BY_HALVES))
    assert result.accepted, result.detail
    assert result.info["verification"]["status"] == "verified", result.info["verification"]
    assert set(result.info["params"]) == {"glasses", "price", "percent"}
    assert not result.info["frozen"]


def test_a_disagreement_on_well_posed_variants_still_freezes(importer: Importer) -> None:
    """The rule skips only fractional counts: a program right by coincidence on the original ("every second glass"
    read as 8 glasses, whatever the count) disagrees on even counts and loses the count as before."""
    coincidence = "glasses = 16\nprice = 5\npercent = 60\nreturn 8 * price + 8 * price * percent / 100"
    result = importer.import_one(with_independent(transcript(GLASSES, coincidence, 64), GLASSES_BY_HALVES))
    assert "glasses" not in result.info.get("params", [])


def test_fractional_quotients_names_the_divisions_a_run_leaves_fractional() -> None:
    pairs = PalProgram(program(GLASSES, GLASSES_BY_PAIRS))
    assert pairs.fractional_quotients() == frozenset()
    odd = pairs.fractional_quotients({pairs.literals[0].id: 15})
    assert len(odd) == 3  # both halvings of 15 (the one rounded down counts as well) and the discount on 7.5 glasses
    assert pairs.run({pairs.literals[0].id: 15}) == 7 * 5 + 7.5 * 5 * 60 / 100


def test_as_solution_reads_both_program_shapes_and_refuses_the_rest() -> None:
    few = as_solution("x = 3\ny = x * 2\nans = y + 1")
    zero = as_solution("import math\nimport numpy as np\n# Question: ...\ndef solver():\n    x = 3\n    return x * 2\nans = "
                       "solver()")
    assert "def solution():" in few and few.rstrip().endswith("return ans")
    assert "def solution():" in zero and "numpy" not in zero and "import math" in zero
    assert as_solution("def solver(n):\n    return n\nans = solver(3)") is None  # takes an argument
    assert as_solution("x = 3\nprint(x)") is None  # no ans
    assert as_solution("def a():\n    return 1\ndef solver():\n    return a()\nans = solver()") is None
    assert as_solution("this is not python (") is None


def test_a_program_that_answers_with_a_pair_answers_with_its_first_element() -> None:
    """The PoT harness recorded the first element of a returned tuple as the program's answer ("return packs, extra")."""
    zero = as_solution("def solver():\n    packs = 7\n    extra = 2\n    return packs, extra\nans = solver()")
    few = as_solution("packs = 7\nextra = 2\nans = packs, extra")
    assert PalProgram(zero).run() == 7 and PalProgram(few).run() == 7
    # an earlier pair the program unpacks itself stays a pair; a starred first element is left alone
    assert PalProgram(as_solution("a = 3\nb = 4\nans = a, b\nans = ans[0] * ans[1]")).run() == 12
    assert as_solution("def solver():\n    xs = [7, 2]\n    return *xs,\nans = solver()") is not None


def test_load_independent_joins_on_the_question_and_drops_wrong_programs(tmp_path: Path) -> None:
    reference = tmp_path / "ref.jsonl"
    reference.write_text("\n".join(json.dumps(r) for r in [
        {"question": PENS, "answer": "2 * 4 = 8\n#### 8"},
        {"question": "Bo has 3 cats and 2 dogs. How many pets does Bo have?", "answer": "#### 5"},
    ]) + "\n", encoding="utf-8")
    programs = tmp_path / "pot.jsonl"
    programs.write_text("\n".join(json.dumps(r) for r in [
        {"question": PENS.replace("  ", " "), "gold": 8.0, "executed": 8.0, "program": "a = 2\nb = 4\nans = a * b"},
        {"question": "Bo has 3 cats and 2 dogs. How many pets does Bo have?", "gold": 5.0, "executed": 6.0,
         "program": "ans = 3 * 2"},
        {"question": "A question nobody asked?", "gold": 1.0, "executed": 1.0, "program": "ans = 1"},
    ]) + "\n", encoding="utf-8")
    found = load_independent([programs], ReferenceIndex.load(reference))
    assert list(found) == [0]
    assert found[0][0].source == "pot"


def test_run_import_records_the_status_and_counts_verified_entries(tmp_path: Path) -> None:
    reference = tmp_path / "ref.jsonl"
    reference.write_text(json.dumps({"question": PENS, "answer": "#### 8"}) + "\n", encoding="utf-8")
    pal = tmp_path / "pal.jsonl"
    code = 'def solution():\n    """' + PENS + '"""\n    packs = 2\n    pens_per_pack = 4\n    return packs * pens_per_pack\n'
    pal.write_text(json.dumps({"input": PENS, "code": code, "target": 8}) + "\n", encoding="utf-8")
    independent = tmp_path / "second.jsonl"
    independent.write_text(json.dumps({"question": PENS, "gold": 8, "executed": 8,
                                       "program": "n = 2\nk = 4\nans = n * k"}) + "\n", encoding="utf-8")
    summary = run_import(pal, reference, tmp_path / "reg", workers=1, independent=[independent])
    assert summary["accepted"] == 1 and summary["verified"] == 1
    meta = json.loads((tmp_path / "reg" / "entries" / "_meta" / "ref-0000.json").read_text())
    assert meta["verification"]["status"] == "verified"
    index = json.loads((tmp_path / "reg" / "index.json").read_text())
    assert index["independent"] == [str(independent)]


def test_a_worked_solution_becomes_a_program_that_chains_its_steps() -> None:
    from builder.pot_import.program import PalProgram
    from builder.worked_solution import worked_solution_program

    answer = ("She has 16 - 3 - 4 = <<16-3-4=9>>9 eggs left.\nShe makes 9 * 2 = $<<9*2=18>>18 every day.\n#### 18")
    code = worked_solution_program(answer, 18, "Ducks lay 16 eggs. She eats 3 and bakes with 4. Each egg sells for $2. How much?")
    program = PalProgram(code)
    assert program.run() == 18
    assert sorted(lit.value for lit in program.literals) == [2, 3, 4, 16]  # the 9 is read from the first step
    assert worked_solution_program("By hand, x = 2 + 2 and y = 5\n#### 4", 4) is None  # nothing reaches the gold
    assert worked_solution_program("<<__import__('os')=0>>0\n#### 0", 0) is None  # arithmetic only


def test_a_worked_solution_whose_number_could_be_a_result_or_a_given_is_not_used() -> None:
    from builder.worked_solution import worked_solution_program

    question = "He sold 10 boxes on Saturday and 5 more on Sunday, and 15 pies. Boxes cost $2, pies $15. How much?"
    answer = "Sunday: 10+5=<<10+5=15>>15 boxes.\nBoxes: 25*2=<<25*2=50>>50. Pies: 15*15=<<15*15=225>>225.\n" \
             "Total 50+225=<<50+225=275>>275\n#### 275"
    assert worked_solution_program(answer, 275, question) is None
    assert worked_solution_program(answer, 275, "") is not None  # without the question nothing is ambiguous


def test_a_number_that_is_the_only_reader_of_a_result_reads_it() -> None:
    """"20 * 3" after "4 * 5 = 20" pens, of a question that states $20 too: read as the price, the step that made 20
    pens would be for nothing, so it is the pens; where a later step writes 20 again, either could be, and the
    solution is unused."""
    from builder.pot_import.program import PalProgram
    from builder.worked_solution import worked_solution_program

    question = "A shop sells 4 packs of 5 pens a day for 3 days, and each pen costs $20. How many pens does it sell?"
    answer = "Pens a day: 4*5=<<4*5=20>>20.\nPens in all: 20*3=<<20*3=60>>60\n#### 60"
    program = PalProgram(worked_solution_program(answer, 60, question))
    six = {lit.id: (6 if lit.value == 5 else lit.value) for lit in program.literals}
    assert program.run() == 60 and program.run(six) == 4 * 6 * 3
    money = answer.replace("\n#### 60", "\nMoney: 60*20=<<60*20=1200>>1200\n#### 1200")
    assert worked_solution_program(money, 1200, question) is None


def test_a_product_that_writes_a_result_and_a_stated_value_of_one_value_reads_one_each() -> None:
    """"6 cups ... so 6 * 6" where a step made 6 cups and the question states 6 lemons: one 6 is the cups, the other
    the lemons (a product does not mind which), never the cups twice; written three times, nothing tells."""
    from builder.pot_import.program import PalProgram
    from builder.worked_solution import worked_solution_program

    question = "Tim needs 6 lemons for each cup of juice. He makes 2 cups for himself and 4 for friends. How many lemons?"
    answer = ("He makes 2 + 4 = <<2+4=6>>6 cups of juice.\nEach cup needs 6 lemons and he makes 6 cups so "
              "6 * 6 = <<6*6=36>>36 lemons\n#### 36")
    program = PalProgram(worked_solution_program(answer, 36, question))
    lemons = {lit.id: (7 if lit.value == 6 else lit.value) for lit in program.literals}
    cups = {lit.id: (3 if lit.value == 2 else lit.value) for lit in program.literals}
    assert program.run() == 36 and program.run(lemons) == 7 * 6 and program.run(cups) == (3 + 4) * 6
    thrice = answer.replace("6 * 6 = <<6*6=36>>36", "6 * 6 * 6 = <<6*6*6=216>>216").replace("#### 36", "#### 216")
    assert worked_solution_program(thrice, 216, question) is None


def test_a_unit_factor_read_as_a_result_that_leaves_numbers_idle_is_the_factor() -> None:
    """"120 / 60" of minutes to hours, after a step made 60 minutes: read as that step, the answer would be 2 whatever
    the cat sleeps; the 60 is the hour's. An answer the question's own arithmetic makes idle stands."""
    from builder.pot_import.program import PalProgram
    from builder.worked_solution import worked_solution_program

    question = "A cat sleeps 20 minutes, a dog twice as long, and a fox as long as both. How many hours in all?"
    answer = ("Dog: 20*2=<<20*2=40>>40 minutes.\nFox: 20+40=<<20+40=60>>60 minutes.\n"
              "All: 20+40+60=<<20+40+60=120>>120 minutes.\nIn hours: 120/60=<<120/60=2>>2 hours.\n#### 2")
    program = PalProgram(worked_solution_program(answer, 2, question))
    thirty = {lit.id: (30 if lit.value == 20 else lit.value) for lit in program.literals}
    assert program.run() == 2 and program.run(thirty) == (30 + 60 + 90) / 60
    question = "Ann has 5 red and 3 blue pens, then finds 2 more. How many more pens has she than before?"
    answer = "Before: 5+3=<<5+3=8>>8 pens.\nAfter: 8+2=<<8+2=10>>10 pens.\nMore: 10-8=<<10-8=2>>2\n#### 2"
    assert PalProgram(worked_solution_program(answer, 2, question)).run() == 2  # the 5 and the 3 cancel in the story


def test_a_percents_whole_is_a_unit_constant_not_the_dollars_of_its_value() -> None:
    """"$100 x 2/100" of "owes $100 at 2%": the 100 that divides is the percent's whole, a unit constant; the $100
    is named once and follows the question's number (owing $200 costs 200 + 200 x 2% x 3)."""
    from builder.pot_import.matching import unit_name
    from builder.pot_import.program import PalProgram
    from builder.worked_solution import worked_solution_program

    question = "Mia owes $100 at a monthly interest of 2%. She pays it all after 3 months. How much does she pay?"
    answer = ("Interest: $100 x 2/100 = $<<100*2/100=2>>2 a month.\nOver 3 months: $2 x 3 = $<<2*3=6>>6.\n"
              "Total: $100 + $6 = $<<100+6=106>>106\n#### 106")
    program = PalProgram(worked_solution_program(answer, 106, question))
    wholes = [lit for lit in program.literals if unit_name(lit)]
    owed = [lit for lit in program.literals if lit.value == 100 and not unit_name(lit)]
    assert len(wholes) == 1 and len(owed) == 1
    assert program.run({owed[0].id: 200}) == 200 + 200 * 2 / 100 * 3


def test_a_given_that_a_worked_solution_repeats_is_one_parameter() -> None:
    """Each step writes the given again ("3 * 20", "4 * 20", "20 + ..."): a variant must change all of them,
    or the solution disagrees with a right entry and the importer freezes a parameter that was fine."""
    from builder.independent import IndependentProgram
    from builder.independent_check import bind
    from builder.worked_solution import worked_solution_program

    question = ("Twenty kernels pop in the first minute, then three times that amount in the second. "
                "In the third minute four times the first minute's number pop. How many pop in all?")
    answer = ("Second: 3*20=<<3*20=60>>60. Third: 4*20=<<4*20=80>>80.\nAll: 20+60+80=<<20+60+80=160>>160\n#### 160")
    code = worked_solution_program(answer, 160, question)
    (bound,) = bind(question, 160, [IndependentProgram("reference_worked_solution", code)], 2.0)
    twenty = next(q for q in bound.plan.params if q.original == 20)
    assert bound.program.run(twenty.literal_values(10)) == 10 + 30 + 40  # every step follows the new given


def test_a_repeat_written_with_a_unit_the_mention_does_not_state_is_not_that_given() -> None:
    """"4 weeks * $500" and "1/4 of the workers": both write 4, one mention states it; named once, a variant of the
    fraction would change the weeks in a month too, and the solution would disagree with a right entry."""
    from builder.independent import IndependentProgram
    from builder.independent_check import bind
    from builder.worked_solution import worked_solution_program

    question = ("A shop hires 20 workers at $500 a week each. In March, 1/4 of the staff leave. How much does it pay "
                "in February and March?")
    answer = ("A worker earns 4 weeks * $500 = $<<4*500=2000>>2000 a month.\nFebruary: 20*2000=<<20*2000=40000>>40000.\n"
              "Staff leaving: 1/4*20=<<1/4*20=5>>5 workers.\nMarch: (20-5)*2000=<<(20-5)*2000=30000>>30000.\n"
              "Total: 40000+30000=<<40000+30000=70000>>70000\n#### 70000")
    code = worked_solution_program(answer, 70000, question)
    assert code is not None and "4 * 500" in code and "1 / 4" in code, code
    (bound,) = bind(question, 70000, [IndependentProgram("reference_worked_solution", code)], 2.0)
    fraction = next(q for q in bound.plan.params if q.mention.text == "1/4")
    fifth = fraction.literal_values(5 if fraction.reading == "reciprocal" else 1 / 5)
    assert bound.program.run(fifth) == 20 * 2000 + (20 - 4) * 2000  # "1/5": the weeks in a month stay 4


def test_a_currency_sign_is_a_unit_that_tells_repeats_apart() -> None:
    """"2 years * 12 months" and "8 months * $12": a price and the months of a year, both 12, one mention ("$12 a
    month"); named once, a variant of the price would change the year's months too."""
    from builder.worked_solution import worked_solution_program

    question = "A gym costs $12 a month for the first 8 months and $15 a month after that. What do 2 years cost?"
    answer = ("2 years is 2 * 12 months = 24 months, so 24 - 8 = <<24-8=16>>16 months at $15.\n"
              "The first months cost 8 months * $12 = $<<8*12=96>>96 and the rest 16 * $15 = $<<16*15=240>>240.\n"
              "In all $96 + $240 = $<<96+240=336>>336\n#### 336")
    code = worked_solution_program(answer, 336, question)
    assert code is not None and code.count("* 12") == 2, code  # each 12 written where it stands, none named


def test_two_worded_fractions_are_read_by_the_pairs_that_write_them() -> None:
    """"two-thirds ... three-fifths" written "* 2 / 3" and "* 3 / 5": the 3 of the first pair is not the numerator
    of the second fraction; each pair reads its fraction, so a checker varies both."""
    from builder.pot_import.planner import plan_parameters
    from builder.pot_import.program import PalProgram

    question = ("A tank holds 12 liters that are two-thirds oil and a drum holds 20 liters that are three-fifths oil. "
                "How much oil is there?")
    code = "def solution():\n    a = 20 * 3 / 5\n    b = 12 * 2 / 3\n    return a + b\n"
    plan = plan_parameters(question, PalProgram(code), freeze_derived=False)
    read = {p.mention.text: p.original for p in plan.params}
    assert read.get("two-thirds") == 2 / 3 and read.get("three-fifths") == 3 / 5, read


def test_two_equal_operands_of_a_product_read_the_two_mentions_of_their_value() -> None:
    """"10 * 10" of a question that states 10 twice ("a 10-hour shift", "$10 per hour"): which operand reads which
    mention cannot change the product, so each reads one; otherwise the second stays a constant and the solution
    checks an entry only with the hourly rate at 10."""
    from builder.independent import IndependentProgram
    from builder.independent_check import bind
    from builder.worked_solution import worked_solution_program

    question = ("Watson works a 10-hour shift each day, five days a week. He earns $10 per hour and gets a $300 bonus "
                "each week. How much money does Watson make in a week, without the bonus?")
    answer = "In a day, Watson makes 10 * 10 = $<<10*10=100>>100\nA week: 100 * 5 = $<<100*5=500>>500\n#### 500"
    code = worked_solution_program(answer, 500, question)
    (bound,) = bind(question, 500, [IndependentProgram("reference_worked_solution", code)], 2.0)
    tens = sorted((q for q in bound.plan.params if q.original == 10), key=lambda q: q.mention.start)
    assert [q.mention.text for q in tens] == ["10", "10"] and tens[0].mention.start < tens[1].mention.start
    rate = tens[1]
    assert bound.program.run(rate.literal_values(12)) == 10 * 12 * 5  # the rate alone moves the answer


def test_a_worked_solution_that_adds_two_equal_results_reads_both_steps() -> None:
    """"6 + 6" after two steps that both gave 6 reads each of them once (a sum, so their order does not matter);
    "6 - 6" cannot say which is which and leaves the solution unused."""
    from builder.pot_import.program import PalProgram
    from builder.worked_solution import worked_solution_program

    question = "A class has 30 students; 20% play football and 25% of the rest are in the band. How many leave early?"
    steps = "Football: 30*0.2=<<30*0.2=6>>6. Rest: 30-6=<<30-6=24>>24. Band: 24*0.25=<<24*0.25=6>>6.\n"
    program = PalProgram(worked_solution_program(steps + "Leaving: 6+6=<<6+6=12>>12\n#### 12", 12, question))
    forty = {lit.id: (40 if lit.value == 30 else lit.value) for lit in program.literals}
    assert program.run() == 12 and program.run(forty) == 8 + 8  # both steps follow the class's size
    assert worked_solution_program(steps + "Leaving: 6-6=<<6-6=0>>0\n#### 0", 0, question) is None


def test_a_number_two_steps_reached_is_the_one_no_step_has_read() -> None:
    """"9 + 6" after "15 x 3/5 = 9" (water) and "10 - 1 = 9" (drink, which "9 x 2/3 = 6" read): the water's 9, the
    result nothing has used yet; the 9 right before "9 x 2/3" is the latest unread one, the drink's."""
    from builder.pot_import.program import PalProgram
    from builder.worked_solution import worked_solution_program

    question = ("I have 10 liters of orange drink that are two-thirds water and 15 liters of pineapple drink that "
                "is three-fifths water. I spill one liter of the orange drink. How much water is left?")
    answer = ("There are 15 x 3/5 = <<15*3/5=9>>9 liters of water from the pineapple drink.\n"
              "There were 10 - 1 = <<10-1=9>>9 liters of orange drink left.\n"
              "Out of the 9 liters, 9 x 2/3 = <<9*2/3=6>>6 liters are water.\n"
              "Thus there are 9 + 6 = <<9+6=15>>15 liters of water.\n#### 15")
    program = PalProgram(worked_solution_program(answer, 15, question))
    twelve = {lit.id: (12 if lit.value == 10 else lit.value) for lit in program.literals}
    assert program.run() == 15 and program.run(twelve) == 9 + 11 * 2 / 3



def test_a_last_line_worked_by_hand_is_the_final_step() -> None:
    """GSM8K solutions often compute the last step without a calculator annotation ("so the boots cost
    99 + 5 = $104"); it is the step that reaches the gold, read as plain arithmetic once its words go."""
    from builder.pot_import.program import PalProgram
    from builder.worked_solution import worked_solution_program

    question = "Heels cost $33 a pair and she buys 3 pairs; the boots cost $5 more than the heels together. Boots?"
    answer = "The heels cost 33 * 3 = $<<33*3=99>>99 together.\nSo the boots cost 99 + 5 = $104.\n#### 104"
    program = PalProgram(worked_solution_program(answer, 104, question))
    assert program.run() == 104 and sorted(lit.value for lit in program.literals) == [3, 5, 33]
    percent = "Girls: 20-8=<<20-8=12>>12.\nThis is 12/20 x 100% = 60% of the students.\n#### 60"
    assert PalProgram(worked_solution_program(percent, 60, "20 students, 8 boys. What percent are girls?")).run() == 60
    algebra = "Two thirds are 8+4=<<8+4=12>>12.\nSo 2/3 * x = 12, and x = 18\n#### 18"
    assert worked_solution_program(algebra, 18, "...") is None  # an equation to solve, not arithmetic
    apart = "Cars: 5*5=<<5*5=25>>25.\nThere were 25 total cars – 20 cars in the last 15 minutes = 5 cars\n#### 5"
    assert worked_solution_program(apart, 5, "...") is None  # "20 cars ... 15 minutes": two numbers, no operator


def test_a_step_that_chains_a_result_annotated_without_its_calculation_is_not_used() -> None:
    """"12 inches / 12 inches/foot = <<1=1>>1 foot" hides what the 1 was computed from: chained, the
    solution would keep it constant on every variant and veto a right entry."""
    from builder.worked_solution import worked_solution_program

    answer = ("Remoras: 6*2=<<6*2=12>>12 inches.\nIn feet: 12 / 12 = <<1=1>>1 foot.\n"
              "Share: 1/10*100=<<1/10*100=10>>10%\n#### 10")
    assert worked_solution_program(answer, 10, "A 10-foot shark has 2 6-inch remoras. What percent?") is None


def test_a_bare_annotation_takes_the_arithmetic_its_line_writes() -> None:
    """"costs $5 because 3 + 2 = <<5=5>>5" writes its inputs in the prose: the step reads them, so a variant of
    the $3 lemons changes it; a step that divides one earlier result by itself is still not used."""
    from builder.pot_import.program import PalProgram
    from builder.worked_solution import worked_solution_program

    question = "Lemons cost $3 and sugar $2 a gallon. They sell 20 glasses a gallon at $0.50. Profit a gallon?"
    answer = ("Each gallon sells for 20 x .5 = <<20*.5=10>>10\nEach gallon costs $5 to make because 3 + 2 = <<5=5>>5\n"
              "Profit: 10 - 5 = <<10-5=5>>5\n#### 5")
    program = PalProgram(worked_solution_program(answer, 5, question))
    assert program.run() == 5 and sorted(lit.value for lit in program.literals) == [0.5, 2, 3, 20]
    cancels = ("Remoras: 6*2=<<6*2=12>>12 inches.\nIn feet: 12 inches / 12 inches/foot = <<1=1>>1 foot.\n"
               "Share: 1/10*100=<<1/10*100=10>>10%\n#### 10")
    assert worked_solution_program(cancels, 10, "A 10-foot shark has 2 6-inch remoras. What percent?") is None


def test_a_result_added_to_itself_is_one_step_read_twice() -> None:
    """"15 + 15" for two riders doubles one result: chained, both follow the step on every variant."""
    from builder.pot_import.program import PalProgram
    from builder.worked_solution import worked_solution_program

    answer = "Each rides 3 x 5 = <<3*5=15>>15 times.\nTogether 15+15 = <<15+15=30>>30 times.\n#### 30"
    program = PalProgram(worked_solution_program(answer, 30, "Two friends ride 3 times a day for 5 days. Rides?"))
    assert program.run() == 30 and sorted(lit.value for lit in program.literals) == [3, 5]


def test_a_calculation_written_without_an_annotation_is_a_step() -> None:
    """"Amy is 11 - 2 = 9 years old" has no calculator annotation: read as a step, the next one chains from it
    and a variant of James's age reaches the answer (held as a literal 9, the solution disagreed with a right
    entry). A step the answer never reads is left out, so the program reads only the numbers it uses."""
    from builder.pot_import.program import PalProgram
    from builder.worked_solution import worked_solution_program

    question = ("Amy is 5 years older than Jackson and 2 years younger than Corey. If James is 10 and is 1 year "
                "younger than Corey, how old is Jackson?")
    answer = ("Corey is 10 + 1 = <<10+1=11>>11 years old\nAmy is 2 years younger than Corey so is 11 - 2 = 9 years old\n"
              "Jackson is 9 - 5 = <<9-5=4>>4 years old\n#### 4")
    program = PalProgram(worked_solution_program(answer, 4, question))
    assert program.run() == 4 and sorted(lit.value for lit in program.literals) == [1, 2, 5, 10]
    dead = "Cars: 3*4=<<3*4=12>>12.\nVans: 2*5=<<2*5=10>>10 wheels.\n#### 10"
    assert sorted(lit.value for lit in PalProgram(worked_solution_program(dead, 10, "3 cars, 2 vans of 5")).literals) == [2, 5]
    bare = "Let m be the mugs.\n8+4*m=40\n4*m=40-8=32\nm=<<8=8>>8\n#### 8"
    assert worked_solution_program(bare, 8, "Eight more than four times the mugs is 40. Mugs?") is None  # reads nothing


def test_a_calculation_in_prose_is_arithmetic_only() -> None:
    """The prose of a reference file is untrusted: what it writes before an "=" is read only as digits and
    operators, so code there is no step (and never runs)."""
    from builder.worked_solution import worked_solution_program

    hostile = "It costs __import__('os').system('true') + 2 = 5 dollars\nSo 2 + 3 = 5\n#### 5"
    code = worked_solution_program(hostile, 5, "It costs 2 and 3. How much?")
    assert code is not None and "import" not in code and "system" not in code
    assert worked_solution_program("Total is (1+)*2 = 5\n#### 5", 5, "...") is None  # malformed: no step


HOUSES = ("John has 2 houses with 3 bedrooms each. Each bedroom has 2 windows each. There are an additional 4 windows in "
          "each house not connected to bedrooms. How many total windows are there between the houses?")
NAMED = IndependentProgram("second", as_solution("num_houses = 2\nnum_bedrooms = 3\nwindows_per_bedroom = 2\n"
                                                 "extra_windows = 4\nans = num_houses * (num_bedrooms * windows_per_bedroom"
                                                 " + extra_windows)"))


def test_a_worked_solution_that_guesses_two_equal_numbers_crossed_does_not_veto(importer: Importer) -> None:
    """GSM8K 271: a worked solution's inline numbers have no names, so which of its 2s is the houses and which the
    windows per bedroom is the planner's guess by order ("3 * 2" first), and a crossed guess disagrees with a right
    entry on every variant that sets the two apart. Where the entry's own names tell the two apart, the worked
    solution agrees with the pair traded and a named program agrees as it is, the disagreement freezes nothing."""

    worked = IndependentProgram(WORKED_SOLUTION, as_solution("per_house = 3 * 2\nwith_extra = per_house + 4\n"
                                                             "ans = with_extra * 2"))
    named = "houses = 2\nbedrooms_per_house = 3\nwindows_per_bedroom = 2\nextra_windows = 4\n" \
            "return houses * (bedrooms_per_house * windows_per_bedroom + extra_windows)"
    result = importer.import_one(with_independent(transcript(HOUSES, named, 20), worked, NAMED))
    assert result.accepted, result.detail
    assert result.info["params"] == ["houses", "bedrooms_per_house", "windows_per_bedroom", "extra_windows"], result.info
    assert result.info["verification"]["status"] == "verified"
    assert result.info["verification"]["sources"] == ["second"]
    alone = importer.import_one(with_independent(transcript(HOUSES, named, 20), worked))
    assert alone.accepted and not {"houses", "windows_per_bedroom"} & set(alone.info["params"])  # nothing else agrees
    # names that do not tell the two apart: the worked solution, which disagrees only where it guesses the pair, says
    # nothing about it; the named program judges the planner's guess, and the guess stands only where it agrees
    unnamed = "a = 2\nb = 3\nc = 2\nd = 4\nreturn a * (b * c + d)"
    judged = importer.import_one(with_independent(transcript(HOUSES, unnamed, 20), worked, NAMED))
    assert judged.accepted and judged.info["verification"]["sources"] == ["second"], judged.info
    entry, compiled = load_entry(judged.source, judged.id)
    assert answer(entry, compiled, HOUSES.replace("2 houses", "5 houses")) == 5 * (3 * 2 + 4)
    assert answer(entry, compiled, HOUSES.replace("2 windows", "7 windows")) == 2 * (3 * 7 + 4)



def test_a_number_written_in_another_unit_than_the_result_it_equals_is_a_constant() -> None:
    """"2 hours * 7 days" after a step gave "7 hours": the 7 is the days of a week, a constant the question never
    states; read as that step, the solution would double the first weeks' hours and veto a right entry."""
    from builder.pot_import.program import PalProgram
    from builder.worked_solution import worked_solution_program

    question = ("Kris wants to play 30 hours. She plays half an hour every day for 2 weeks, then 2 hours every day "
                "for a week. How many hours does she still need to play?")
    answer = ("Two weeks is 2 weeks * 7 days = <<2*7=14>>14 days.\n"
              "So she plays 0.5 hours * 14 days = <<0.5*14=7>>7 hours.\n"
              "Then another 2 hours * 7 days = <<2*7=14>>14 hours.\n"
              "She still needs 30 - 7 - 14 = <<30-7-14=9>>9 hours.\n#### 9")
    program = PalProgram(worked_solution_program(answer, 9, question))
    half = next(lit.id for lit in program.literals if lit.value == 0.5)
    assert program.run() == 9 and program.run({half: 1.0}) == 30 - 14 - 14  # the second week's 14 stays 2 * 7


def test_a_number_a_step_reached_and_the_question_states_is_told_apart_by_its_unit() -> None:
    """"3 miles / 2" after a step gave "3 hours", of a question that states 3 miles: the given; "3 hours + 1.5
    hours": the step. Without a unit to tell them apart the solution stays unused."""
    from builder.pot_import.program import PalProgram
    from builder.worked_solution import worked_solution_program

    question = "Ann runs 12 miles at 4 miles an hour. Then she walks 3 miles at 2 miles an hour. How many hours in all?"
    answer = ("Running takes 12 / 4 = <<12/4=3>>3 hours.\nWalking takes 3 miles / 2 = <<3/2=1.5>>1.5 hours.\n"
              "In all 3 hours + 1.5 hours = <<3+1.5=4.5>>4.5 hours.\n#### 4.5")
    program = PalProgram(worked_solution_program(answer, 4.5, question))
    twelve, three = (next(lit.id for lit in program.literals if lit.value == v) for v in (12, 3))
    assert program.run() == 4.5 and program.run({twelve: 16}) == 4 + 1.5 and program.run({three: 5}) == 3 + 2.5
    bare = answer.replace("3 miles / 2", "3 / 2").replace("3 hours + 1.5 hours", "3 + 1.5")
    assert worked_solution_program(bare, 4.5, question) is None


CHORES = ("Noor, Tim and Ada split the chores. Noor's job was to wash the car, which took her 3 hours. Tim cleaned the "
          "garage and took 1 hour longer than Noor. Ada painted the fence and took 3 hours longer than the time Noor "
          "took to wash the car. How many hours did they work altogether?")
#: ``noor_time = 3`` is nearer "the time Noor took" by its words, so the planner binds it to Ada's 3 hours longer
CHORES_OWN = "noor_time = 3\ntim_time = noor_time + 1\nada_time = noor_time + 3\nreturn noor_time + tim_time + ada_time"
CHORES_OTHER = IndependentProgram("second", as_solution("noor_hours = 3\ntim_hours = noor_hours + 1\n"
                                                        "ada_hours = noor_hours + 3\nans = noor_hours + tim_hours + ada_hours"))
CHORES_THIRD = IndependentProgram("third", as_solution("a = 3\nb = 1\nans = a + (a + b) + (a + 3)"))


def chores_answer(entry, compiled, noor: int, tim_longer: int, ada_longer: int) -> float:
    """The entry's answer to the chores question with other numbers, read through its template."""
    question = CHORES.replace("her 3", f"her {noor}").replace("1 hour ", f"{tim_longer} hours ").replace(
        "took 3 hours longer", f"took {ada_longer} hours longer")
    return compiled.run(Extractor(None).extract(entry, question).values).result["answer"]


def test_two_mentions_of_one_value_bound_crossed_are_traded_when_other_authors_agree(importer: Importer) -> None:
    """The planner's word overlap binds ``noor_time = 3`` to Ada's "3 hours longer than the time Noor took": the
    entry is then wrong whenever the two 3s differ, and every other program disagrees. With the two mentions traded
    the entry agrees with two other authors' programs on every variant, and nothing else disagrees: the import plans
    the pair the other way round and keeps both numbers, instead of freezing them."""
    alone = importer.import_one(transcript(CHORES, CHORES_OWN, 13))
    assert alone.accepted
    crossed, compiled = load_entry(alone.source, alone.id)
    assert chores_answer(crossed, compiled, 2, 1, 5) != 12  # the planner's guess alone: Noor's 2 hours read as Ada's
    result = importer.import_one(with_independent(transcript(CHORES, CHORES_OWN, 13), CHORES_OTHER, CHORES_THIRD))
    assert result.accepted, result.detail
    assert result.info["verification"]["status"] == "verified"
    assert not result.info["frozen"] and len(result.info["params"]) == 3, result.info
    assert result.info["traded"] and "Bound the other way round" in result.source
    entry, compiled = load_entry(result.source, result.id)
    assert chores_answer(entry, compiled, 2, 1, 5) == 12  # 2 + 3 + 7
    assert chores_answer(entry, compiled, 6, 2, 1) == 21  # 6 + 8 + 7


@pytest.mark.parametrize("others", [
    (dataclasses.replace(CHORES_OTHER, source=WORKED_SOLUTION), CHORES_THIRD),  # the worked solution never decides
    (CHORES_OTHER,),  # one program against the entry: which of the two is crossed, nothing says
])
def test_a_pair_is_not_traded_on_one_program_s_word(importer: Importer, others) -> None:
    """Where fewer than two authors' programs (the worked solution not counted) agree with the traded entry, the pair
    is not traded: the disagreement freezes the two 3s as before, or another author's program becomes the entry."""
    result = importer.import_one(with_independent(transcript(CHORES, CHORES_OWN, 13), *others))
    assert result.accepted and "traded" not in result.info, result.info
    entry, compiled = load_entry(result.source, result.id)
    assert len(entry.params) < 3 or chores_answer(entry, compiled, 2, 1, 5) == 12, result.info


WORKWEEK = ("In May, a bakery hired 40 workers, paying each worker $15 per hour for a 40-hour workweek. In June, 1/4 of "
            "the workers' contracts expired. How much did the bakery pay its workers in the two months?")
WORKWEEK_ENTRY = ("workers_may = 40\nleft = workers_may / 4\nworkers_june = workers_may - left\nhourly_rate = 15\n"
                  "hours_per_week = 40\nweeks_per_month = 4\ntotal_hours = hours_per_week * weeks_per_month\n"
                  "return workers_may * total_hours * hourly_rate + workers_june * total_hours * hourly_rate")
#: GSM8K 409's worked solution, as its reader writes it: one 4 for both the weeks of a month and the "1/4", and four
#: inline 40s that nothing names, so which of them is the workweek is the planner's guess.
WORKWEEK_WORKED = IndependentProgram(WORKED_SOLUTION, as_solution(
    "given_1 = 4\neach = 15 * 40\nmonthly = given_1 * each\nmay = 40 * monthly\nexpired = 1 / given_1 * 40\n"
    "june_workers = 40 - expired\njune = june_workers * monthly\nans = june + may"))
WORKWEEK_NAMED = IndependentProgram("named", as_solution(
    "num_workers = 40\nhourly_wage = 15\nhours_per_week = 40\nweeks = 4\njune_workers = num_workers * 3 / 4\n"
    "ans = (num_workers + june_workers) * hours_per_week * weeks * hourly_wage"))


def test_a_program_that_disagrees_only_where_it_guesses_a_tie_neither_vetoes_nor_freezes(importer: Importer) -> None:
    """GSM8K 409: "40 workers ... a 40-hour workweek". The worked solution binds its 40s by a guess and crossed,
    grouped so that no trade of the two mentions puts them right; it disagrees on every variant that sets the two
    apart and agrees on all others. Its disagreement on the tie is put off while the "1/4" that only it reads is
    blamed, then explained, and both 40s vary where the named program agrees; with the worked solution alone, no
    program tells the two apart and one of them stays constant."""
    result = importer.import_one(with_independent(transcript(WORKWEEK, WORKWEEK_ENTRY, 168000), WORKWEEK_WORKED,
                                                  WORKWEEK_NAMED))
    assert result.accepted, result.detail
    assert {"workers_may", "hourly_rate", "hours_per_week"} <= set(result.info["read_params"]), result.info
    assert result.info["verification"]["status"] == "verified" and result.info["verification"]["sources"] == ["named"]
    entry, compiled = load_entry(result.source, result.id)
    variant = WORKWEEK.replace("40 workers", "48 workers").replace("40-hour", "35-hour")
    assert answer(entry, compiled, variant) == 48 * 35 * 4 * 15 + 36 * 35 * 4 * 15
    alone = importer.import_one(with_independent(transcript(WORKWEEK, WORKWEEK_ENTRY, 168000), WORKWEEK_WORKED))
    assert alone.accepted and not {"workers_may", "hours_per_week"} <= set(alone.info["read_params"]), alone.info


LAUNDRY = ("Ann washes 6 towels and 1 rug every week. Her machine takes 3 towels at a time and 1 rug at a time. "
           "How many loads does she wash in 4 weeks?")
LAUNDRY_ENTRY = ("towels = 6\nrugs = 1\ntowels_per_load = 3\nrugs_per_load = 1\nweeks = 4\n"
                 "return (towels / towels_per_load + rugs / rugs_per_load) * weeks")
LAUNDRY_NAMED = IndependentProgram("named", as_solution(
    "towel_count = 6\nrug_count = 1\ntowel_load = 3\nrug_load = 1\nweek_count = 4\n"
    "ans = (towel_count / towel_load + rug_count / rug_load) * week_count"))


def test_a_program_that_reads_two_numbers_the_entry_sets_apart_through_one_literal_does_not_veto(
        importer: Importer) -> None:
    """"2 + 1" of "1 rug ... 1 rug at a time": the worked solution writes one 1 for both, so on a variant that sets
    them apart it follows one of them by a guess. Where a program that reads them apart agrees, both vary."""
    from builder.worked_solution import worked_solution_program

    solution = ("Towel loads: 6/3=<<6/3=2>>2 loads.\nEach week: 2+1=<<2+1=3>>3 loads.\n"
                "In 4 weeks: 3*4=<<3*4=12>>12 loads.\n#### 12")
    worked = IndependentProgram(WORKED_SOLUTION, worked_solution_program(solution, 12, LAUNDRY), solution)
    result = importer.import_one(with_independent(transcript(LAUNDRY, LAUNDRY_ENTRY, 12), worked, LAUNDRY_NAMED))
    assert result.accepted, result.detail
    assert len(result.info["read_params"]) == 5, result.info
    assert result.info["verification"]["sources"] == ["named"], result.info
    entry, compiled = load_entry(result.source, result.id)
    variant = LAUNDRY.replace("1 rug every", "2 rugs every")
    assert answer(entry, compiled, variant) == (6 / 3 + 2 / 1) * 4


PENS_HALF = "Mia has 2 red pens. Leo has 4 times as many pens as Mia. Ann has half as many pens as Leo. " \
            "How many more pens does Ann have than Mia?"
PENS_HALF_ENTRY = "mia = 2\nleo = mia * 4\nann = leo / 2\nreturn ann - mia"
PENS_HALF_NAMED = IndependentProgram("named", as_solution(
    "mia_pens = 2\nleo_pens = mia_pens * 4\nann_pens = leo_pens / 2\nans = ann_pens - mia_pens"))


def test_a_number_and_a_word_read_as_its_value_are_a_tie_a_checker_guesses(importer: Importer) -> None:
    """"2 red pens ... half": the worked solution writes three 2s, and which is Mia's is the planner's guess, as
    between two written 2s; where the named program agrees, Mia's pens vary."""
    from builder.worked_solution import worked_solution_program

    solution = "Leo: 4*2=<<4*2=8>>8 pens.\nAnn: 8/2=<<8/2=4>>4 pens.\nMore: 4-2=<<4-2=2>>2\n#### 2"
    worked = IndependentProgram(WORKED_SOLUTION, worked_solution_program(solution, 2, PENS_HALF), solution)
    result = importer.import_one(with_independent(transcript(PENS_HALF, PENS_HALF_ENTRY, 2), worked, PENS_HALF_NAMED))
    assert result.accepted, result.detail
    assert len(result.info["read_params"]) == 3, result.info
    entry, compiled = load_entry(result.source, result.id)
    assert answer(entry, compiled, PENS_HALF.replace("has 2 red", "has 3 red")) == 3 * 4 / 2 - 3


def test_a_worked_solution_with_a_power_tower_is_read_at_once() -> None:
    """A reference file is input: "9**9**9" in a step's prose or annotation overflows as floats at once where whole
    numbers grew for minutes (the reading runs in the importer's own process, not a confined worker), and a solution
    of hundreds of steps, which no person writes (GSM8K's longest has 8), is not read (its checks cost steps x
    steps)."""
    import subprocess
    import sys

    from builder.worked_solution import worked_solution_program

    steps = "\n".join(f"Day {i}: {i}+1=<<{i}+1={i + 1}>>{i + 1}" for i in range(1, 400))
    assert worked_solution_program(steps + "\n#### 400", 400, "One apple, one more each day.") is None
    assert worked_solution_program("\n".join(steps.split("\n")[:7]) + "\n#### 8", 8, "One apple, one more each day.")

    code = ("from builder.worked_solution import worked_solution_program as w\n"
            "print(w('Big: 9**9**9 = <<1=1>>1 and 2+3=<<2+3=5>>5\\nTower: 9^9^9*1=<<9^9^9*1=1>>1\\n#### 1', 1, 'Two 2s.'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr

"""Partial verification: when no independent program reads every number an entry varies, the programs
that read the most of them check it with the others held at their original values, and an agreement
verifies the entry *within that scope* (``fixed``). A worked solution bound to a number its own prose
says counts something else ("2 people" bound to "two books") may disagree but never be the source that
agrees (builder/prose_units.py)."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

import pytest

from builder.gsm8k import scan_numbers
from builder.independent import IndependentProgram, as_solution
from builder.independent_check import bind, check
from builder.pot_import.plan import oracle_values
from builder.pot_import.verify import Importer, ImportOptions
from builder.prose_units import doubtful_binding, nouns_after_numbers
from builder.verification import Verification
from builder.worked_solution import WORKED_SOLUTION, worked_solution_program
from edge_runtime.answer.verification import VerificationStatus
from tests.builder.test_pot_import import transcript

GSM8K = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "gsm8k" / "gsm8k_test.jsonl"

SHOP = "Sam buys 2 packs of pens. Each pack has 4 pens. He also buys 3 pencils. How many pens and pencils does he have?"
SHOP_RIGHT = "packs = 2\nper = 4\npencils = 3\nreturn packs * per + pencils"
#: Reads only the pencils: it writes the 8 pens out, so it cannot say anything about the packs.
PENCILS_ONLY = IndependentProgram("second", as_solution("pens = 8\npencils = 3\nans = pens + pencils"))

#: Hand-made twin of GSM8K 241: the right answer multiplies by the 2 children, the entry by Tom's 2 apples.
APPLES = ("Tom has two apples. Sue has one. If both Tom and Sue eat each other's apples as well as their own, "
          "how many apples will they eat in all?")
APPLES_ENTRY = "tom_apples = 2\nsue_apples = 1\ntotal = tom_apples + sue_apples\nreturn total * tom_apples"
APPLES_SOLUTION = ("There are 2 + 1 = <<2+1=3>>3 apples.\n"
                   "Both eat all 3 apples, so 3 apples/child x 2 children = <<3*2=6>>6 apples\n#### 6")


@pytest.fixture(scope="module")
def importer() -> Importer:
    """The row's own program only: these tests are about how far one program's check reaches (the programs tried in
    its place are tests/builder/test_independent_check.py's)."""
    return Importer(ImportOptions(seed=5, alternatives=False))


def verified(result) -> dict:
    assert result.accepted, result.detail
    return result.info["verification"]


def test_a_program_that_reads_some_numbers_verifies_the_entry_within_a_scope(importer: Importer) -> None:
    record = verified(importer.import_one(dataclasses.replace(transcript(SHOP, SHOP_RIGHT, 11),
                                                              independent=(PENCILS_ONLY,))))
    assert record["status"] == "verified"
    assert record["fixed"] == ["packs", "per"], record
    assert record["sources"] == ["second"] and record["variants"] >= 8
    assert "packs, per at the original" in record["detail"]


def test_a_program_that_reads_every_number_verifies_with_no_scope(importer: Importer) -> None:
    every = IndependentProgram("second", as_solution("a = 2\nb = 4\nc = 3\nans = a * b + c"))
    record = verified(importer.import_one(dataclasses.replace(transcript(SHOP, SHOP_RIGHT, 11), independent=(every,))))
    assert record["status"] == "verified" and "fixed" not in record  # the record reads exactly as before


def test_a_disagreement_within_a_scope_leaves_the_entry_unverified_and_freezes_nothing(importer: Importer) -> None:
    # 8 + 3 * 3 - 3 * 2 = 11: right while there are 3 pencils and 2 packs
    wrong = "packs = 2\nper = 4\npencils = 3\nreturn packs * per + pencils * pencils - pencils * packs"
    candidate = importer.generate([transcript(SHOP, wrong, 11)], [])
    bound = bind(SHOP, 11, [PENCILS_ONLY], 1.0)
    found = check(candidate.plan, bound, lambda values: candidate.program.run(oracle_values(candidate.plan.params, values)),
                  rng=random.Random(0))
    # a program that reads only the pencils is weaker evidence against the entry than for it: no blame, no freeze
    assert isinstance(found, Verification) and found.status is VerificationStatus.UNVERIFIED
    assert "reads only some of its numbers disagrees" in found.detail
    result = importer.import_one(dataclasses.replace(transcript(SHOP, wrong, 11), independent=(PENCILS_ONLY,)))
    assert result.accepted and "pencils" in result.info["params"]
    assert result.info["verification"]["status"] == "unverified"  # left out of a verified-only bundle


def test_a_program_that_reads_no_number_the_entry_varies_checks_nothing(importer: Importer) -> None:
    none = IndependentProgram("second", as_solution("ans = 11"))
    record = verified(importer.import_one(dataclasses.replace(transcript(SHOP, SHOP_RIGHT, 11), independent=(none,))))
    assert record["status"] == "unverified"


def test_the_worked_solution_cannot_agree_through_a_number_its_prose_counts_otherwise(importer: Importer) -> None:
    worked = IndependentProgram(WORKED_SOLUTION, worked_solution_program(APPLES_SOLUTION, 6, APPLES), APPLES_SOLUTION)
    without_prose = dataclasses.replace(worked, prose="")
    trapped = verified(importer.import_one(dataclasses.replace(transcript(APPLES, APPLES_ENTRY, 6),
                                                               independent=(without_prose,))))
    assert trapped["status"] == "verified", "without its words the solution agrees by the same coincidence"
    record = verified(importer.import_one(dataclasses.replace(transcript(APPLES, APPLES_ENTRY, 6), independent=(worked,))))
    assert record["status"] == "unverified", record
    assert "its 2 child is bound to the question's 'two' (apples)" in record["detail"]


def test_the_worked_solution_still_agrees_when_its_nouns_are_the_questions(importer: Importer) -> None:
    question = "Tom has two boxes. Each box has 3 apples. How many apples does Tom have?"
    solution = "Tom has 2 boxes x 3 apples/box = <<2*3=6>>6 apples\n#### 6"
    worked = IndependentProgram(WORKED_SOLUTION, worked_solution_program(solution, 6, question), solution)
    record = verified(importer.import_one(dataclasses.replace(
        transcript(question, "boxes = 2\nper_box = 3\nreturn boxes * per_box", 6), independent=(worked,))))
    assert record["status"] == "verified" and record["sources"] == [WORKED_SOLUTION], record


def test_a_worked_solution_may_still_veto_through_a_doubtful_binding(importer: Importer) -> None:
    question = "Sam buys 2 packs of pens. Each pack has 4 pens. How many pens does he have?"
    by_coincidence = "pens_per_pack = 4\nreturn pens_per_pack * pens_per_pack / 2"  # 4 * 4 / 2 = 8 = 2 * 4
    shares_the_mistake = IndependentProgram("same-mistake", as_solution("p = 4\nans = p * p / 2"))
    solution = "He has 2 boxes x 4 pens = <<2*4=8>>8 pens\n#### 8"  # "2 boxes": not the question's "2 packs"
    worked = IndependentProgram(WORKED_SOLUTION, worked_solution_program(solution, 8, question), solution)
    assert bind(question, 8, [worked], 1.0)[0].doubtful, "the solution's 2 boxes are bound to the 2 packs"
    result = importer.import_one(dataclasses.replace(transcript(question, by_coincidence, 8),
                                                     independent=(shares_the_mistake, worked)))
    assert not result.accepted or "pens_per_pack" not in result.info["params"], result.info


def test_the_nouns_a_solution_writes_after_its_numbers() -> None:
    nouns = nouns_after_numbers("3 books/person x 2 people = <<3*2=6>>6 books total\nSo $1,200 dollars and 2 more\n#### 6")
    assert nouns[3.0] == ({"book"},) and nouns[2.0] == ({"person"},) and nouns[1200.0] == ({"dollar"},)
    assert 6.0 not in nouns  # a step's result, written after its annotation, counts what the step computed
    assert nouns_after_numbers("Dave ate 14 french fries, so")[14.0] == ({"french", "fry"},)
    question = "Dolly has two books. Pandora has one."
    two, one = scan_numbers(question)[:2]
    assert doubtful_binding(question, two, 2, nouns) == "its 2 person is bound to the question's 'two' (books)"
    assert doubtful_binding(question, one, 1, nouns_after_numbers("1 person")) == ""  # "has one.": nothing to compare
    assert doubtful_binding(question, two, 2, nouns_after_numbers("2 books + 1 = <<2+1=3>>3")) == ""
    fries = "Dave bought a pack of french fries and ate fourteen before a seagull stole it."
    assert doubtful_binding(fries, scan_numbers(fries)[0], 14, nouns_after_numbers("Dave ate 14 french fries")) == ""
    price = "A pen costs $2 each."
    assert doubtful_binding(price, scan_numbers(price)[0], 2, nouns_after_numbers("2 dollars x 3 = <<2*3=6>>6")) == ""


def test_a_record_with_a_scope_round_trips_and_an_unreadable_one_is_no_verification() -> None:
    v = Verification(VerificationStatus.VERIFIED, "agrees", ("second",), 8, ("packs",))
    assert Verification.from_dict(v.to_dict()) == v
    old = {"status": "verified", "detail": "agrees", "sources": ["second"], "variants": 8}
    assert Verification.from_dict(old).to_dict() == old
    assert Verification.from_dict({**old, "fixed": "packs"}).status is VerificationStatus.UNVERIFIED
    assert Verification.from_dict({**old, "fixed": [3]}).status is VerificationStatus.UNVERIFIED


@pytest.mark.skipif(not GSM8K.exists(), reason="../shared/data/gsm8k is not here")
def test_gsm8k_0241_is_not_verified_by_its_worked_solutions_coincidence(importer: Importer) -> None:
    row = [json.loads(line) for line in GSM8K.read_text(encoding="utf-8").splitlines()][241]
    assert row["question"].startswith("Dolly has two books")
    worked = IndependentProgram(WORKED_SOLUTION, worked_solution_program(row["answer"], 6, row["question"]), row["answer"])
    # the entry the importer makes of PAL's program: its "* 2" is read as Dolly's two books
    pal = "dolly_books = 2\npandora_books = 1\ntotal_books = dolly_books + pandora_books\nreturn total_books * dolly_books"
    trapped = importer.import_one(dataclasses.replace(transcript(row["question"], pal, 6, index=241),
                                                      independent=(dataclasses.replace(worked, prose=""),)))
    assert verified(trapped)["status"] == "verified" and verified(trapped)["fixed"] == ["pandora_books"]
    result = importer.import_one(dataclasses.replace(transcript(row["question"], pal, 6, index=241), independent=(worked,)))
    record = verified(result)
    assert record["status"] == "unverified", record
    assert "2 person" in record["detail"]


def test_run_import_counts_the_entries_verified_within_a_scope(tmp_path: Path) -> None:
    from builder.pot_import.batch import run_import

    reference = tmp_path / "ref.jsonl"
    reference.write_text(json.dumps({"question": SHOP, "answer": "#### 11"}) + "\n", encoding="utf-8")
    pal = tmp_path / "pal.jsonl"
    code = 'def solution():\n    """' + SHOP + '"""\n    ' + SHOP_RIGHT.replace("\n", "\n    ") + "\n"
    pal.write_text(json.dumps({"input": SHOP, "code": code, "target": 11}) + "\n", encoding="utf-8")
    independent = tmp_path / "second.jsonl"
    independent.write_text(json.dumps({"question": SHOP, "gold": 11, "executed": 11,
                                       "program": "pens = 8\npencils = 3\nans = pens + pencils"}) + "\n", encoding="utf-8")
    summary = run_import(pal, reference, tmp_path / "reg", workers=1, independent=[independent],
                         options=ImportOptions(alternatives=False))
    assert summary["accepted"] == 1 and summary["verified"] == 1 and summary["verified_within_scope"] == 1
    meta = json.loads((tmp_path / "reg" / "entries" / "_meta" / "ref-0000.json").read_text())
    assert meta["verification"]["fixed"] == ["packs", "per"]

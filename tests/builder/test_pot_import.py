"""Offline PoT import (MiniCache construction): programs the tests write, the group mechanics, the
CLI, and — when /work/shared/data is present — the first 40 GSM8K rows."""

from __future__ import annotations

import io
import json
import tempfile
import textwrap
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from builder.gsm8k import ReferenceIndex, gold_answer, normalise_question, replaced_numbers, scan_numbers
from builder.pot_groups import GenerationFailed, GroupPolicy, PotGroup, Validation
from builder.pot_import.batch import run_import
from builder.pot_import.planner import plan_parameters
from builder.pot_import.program import PalProgram
from builder.pot_import.transcripts import REASONS, Transcript
from builder.pot_import.verify import ExactEmbedder, Importer, ImportOptions
from edge_runtime.entries.compiler import LoadedCompiledEntry, compile_entry
from edge_runtime.entries.registry import Registry
from edge_runtime.entries.validator import validate_source
from edge_runtime.errors import ExtractionError
from edge_runtime.read.extractor import Extractor
from edge_runtime.read.guard import check

DATA = Path("/work/shared/data/gsm8k")


def program(question: str, body: str, imports: str = "") -> str:
    """A PAL-style program: def solution() with the question as docstring."""
    lines = textwrap.indent(textwrap.dedent(body).strip(), "    ")
    return f'{imports}\ndef solution():\n    """{question}"""\n{lines}\n'


def transcript(question: str, body: str, gold, *, index: int = 7, variant: str = "", imports: str = "") -> Transcript:
    return Transcript(
        row=0, code=program(question, body, imports), question=question, gold=gold, ref_index=index,
        docstring=question, variant=variant,
    )


@pytest.fixture(scope="module")
def importer() -> Importer:
    return Importer(ImportOptions(seed=1))


def accepted(importer: Importer, t: Transcript):
    result = importer.import_one(t)
    assert result.accepted, f"{result.reason}: {result.detail}"
    return result


def load_entry(source: str, entry_id: str):
    """Register + compile an accepted source the way a bundle build does."""
    registry = Registry(ExactEmbedder())
    registry.add_source(source, f"{entry_id}.py", entry_id.replace("-", "_"))
    registry.check_entry(entry_id)
    compiled = LoadedCompiledEntry(compile_entry(registry, entry_id).source, entry_id.replace("-", "_"))
    return registry.entries[entry_id], compiled


def accepted_entry(importer: Importer, t: Transcript):
    """The entry an accepted transcript becomes, registered and compiled."""
    result = accepted(importer, t)
    return load_entry(result.source, result.id)


def answer(entry, compiled, question: str):
    values = Extractor(None).extract(entry, question).values
    return compiled.run(values).result["answer"]


# ---------------------------------------------------------------------------------------------
# Programs written here
# ---------------------------------------------------------------------------------------------
def test_simple_arithmetic_becomes_a_parameterised_entry(importer):
    q = "Tom has 5 apples and buys 7 more apples. Each apple costs $2. How much are all his apples worth?"
    t = transcript(q, """
        apples_initial = 5
        apples_bought = 7
        price_per_apple = 2
        total = (apples_initial + apples_bought) * price_per_apple
        result = total
        return result
    """, 24)
    result = accepted(importer, t)
    validate_source(result.source)
    assert result.id == "gsm8k-0007"
    assert set(result.info["params"]) == {"apples_initial", "apples_bought", "price_per_apple"}
    entry, compiled = load_entry(result.source, result.id)
    assert "{apples_initial} apples" in entry.template and "${price_per_apple}" in entry.template
    assert entry.question == q
    assert answer(entry, compiled, q) == 24
    assert answer(entry, compiled, q.replace("5 apples", "10 apples").replace("$2", "$3")) == 51
    trace = compiled.run({"apples_initial": 5, "apples_bought": 7, "price_per_apple": 2}).narration_text()
    # every step is narrated with its numbers: "total = (apples_initial + ...) * ... = (5 + 7) * 2.0 = 24.0"
    assert any("(5 + 7) * 2" in step and step.endswith("24.0") for step in trace), trace
    assert result.info["round_trip"] == "5/5"


def test_number_word_is_a_parameter_rendered_as_digits(importer):
    q = "Sara has three boxes with 12 pens in each box. How many pens does she have?"
    t = transcript(q, """
        boxes = 3
        pens_per_box = 12
        result = boxes * pens_per_box
        return result
    """, 36)
    result = accepted(importer, t)
    entry, compiled = load_entry(result.source, result.id)
    assert "{boxes} boxes" in entry.template
    assert entry.question == q.replace("three", "3")  # check_entry renders values as digits
    assert "Sara has three boxes" in result.source  # the verbatim original stays in the module docstring
    assert answer(entry, compiled, q) == 36  # the fast path reads "three" on the original question
    assert answer(entry, compiled, q.replace("three", "5")) == 60
    # the option to keep number words constant instead
    plain = Importer(ImportOptions(number_words="constant")).import_one(t)
    assert plain.accepted and plain.info["params"] == ["pens_per_box"]


def test_unit_constant_stays_a_constant(importer):
    q = "A movie lasts 2 hours and 15 minutes. How many minutes long is the movie?"
    t = transcript(q, """
        hours = 2
        extra_minutes = 15
        total_minutes = hours * 60 + extra_minutes
        result = total_minutes
        return result
    """, 135)
    result = accepted(importer, t)
    assert set(result.info["params"]) == {"hours", "extra_minutes"}
    assert "60 (unit constant, not stated in the question)" in result.source
    entry, compiled = load_entry(result.source, result.id)
    assert answer(entry, compiled, q.replace("2 hours", "3 hours")) == 195


def test_unit_conversion_variable_never_takes_a_question_number(importer):
    q = "A gym costs $12 a month. How much does it cost for 2 years?"
    t = transcript(q, """
        months_in_year = 12
        price_per_month = 12
        years = 2
        result = months_in_year * years * price_per_month
        return result
    """, 288)
    result = accepted(importer, t)
    assert set(result.info["params"]) == {"price_per_month", "years"}
    entry, compiled = load_entry(result.source, result.id)
    assert answer(entry, compiled, q.replace("$12", "$10")) == 240


def test_weeks_in_a_named_month_are_a_unit_conversion(importer):
    """``weeks_in_april = 4`` is the week-per-month conversion, not a number computed from the question's: the
    stated numbers stay parameters."""
    q = "Tom works 6 hours a day, 5 days a week, for $9 per hour. How much does he make in April?"
    t = transcript(q, """
        hours_per_day = 6
        days_per_week = 5
        weeks_in_april = 4
        hourly_rate = 9
        result = hours_per_day * days_per_week * weeks_in_april * hourly_rate
        return result
    """, 1080)
    result = accepted(importer, t)
    assert set(result.info["params"]) == {"hours_per_day", "days_per_week", "hourly_rate"}
    assert "4 (unit constant (month per week))" in result.source
    entry, compiled = load_entry(result.source, result.id)
    assert answer(entry, compiled, q.replace("6 hours", "8 hours")) == 1440


def test_a_number_scaled_to_a_share_reads_the_percent_of_two_equal_numbers(importer):
    """``100000 * 20 * .01`` (a worked solution's way of writing 20%) beside ``/ 20`` for the years: the 20 scaled to
    a share is the "20%", whatever the order; bound by order it was the years, and the entry answered with the two
    crossed (GSM8K 1105: its worked solution then vetoed the right entry and froze both)."""
    q = ("Lauren won $100000 and spreads what she keeps over 20 years. She keeps 20% of the prize. How much does she "
         "spend each year?")
    t = transcript(q, """
        step_1 = 100000 * 20 * .01
        step_2 = step_1 / 20
        return step_2
    """, 1000)
    result = accepted(importer, t)
    entry, compiled = load_entry(result.source, result.id)
    assert answer(entry, compiled, q.replace("20%", "10%")) == 500
    assert answer(entry, compiled, q.replace("20 years", "5 years")) == 4000


@pytest.mark.parametrize("q, body, gold, change, expected", [
    # the base of a product that has the percent as a complement: the 40 students stay the students
    ("There are 40 students in a class. 40% of the students are boys. How many girls are in the class?",
     "girls = 40 * (100 - 40) / 100\nreturn girls", 24, ("40 students", "50 students"), 30),
    # cents turned into dollars (/ 100) beside a percent of another value: the 20 pencils stay the pencils
    ("Sam buys 20 pencils at 25 cents each. He gets a 20% discount. How many dollars does he pay?",
     "cost = 20 * 25 / 100 * 0.8\nreturn cost", 4, ("20 pencils", "30 pencils"), 6),
])
def test_only_the_number_written_next_to_the_scale_reads_the_percent(importer, q, body, gold, change, expected):
    result = accepted(importer, transcript(q, body, gold))
    entry, compiled = load_entry(result.source, result.id)
    assert answer(entry, compiled, q.replace(*change)) == pytest.approx(expected)


def test_literal_not_in_the_question_stays_constant(importer):
    q = (
        "Jim earns $10 an hour and works 40 hours. Overtime pays more. He works 5 hours of overtime. How much does he "
        "earn?"
    )
    t = transcript(q, """
        wage = 10
        hours = 40
        overtime_hours = 5
        overtime_wage = wage * 1.5
        result = wage * hours + overtime_wage * overtime_hours
        return result
    """, 475)
    result = accepted(importer, t)
    assert set(result.info["params"]) == {"wage", "hours", "overtime_hours"}
    assert "1.5 (not stated in the question)" in result.source
    assert result.info["unexplained_constants"] == ["1.5"]


def test_program_with_a_wrong_answer_is_rejected(importer):
    q = "Ann has 4 cats and 3 dogs. How many pets does she have?"
    t = transcript(q, """
        cats = 4
        dogs = 3
        result = cats * dogs
        return result
    """, 7)
    result = importer.import_one(t)
    assert not result.accepted and result.reason == "wrong_on_original"


def test_unsafe_program_is_rejected(importer):
    q = "Ann has 4 cats and 3 dogs. How many pets does she have?"
    t = transcript(q, """
        cats = 4
        dogs = 3
        result = cats + dogs
        return result
    """, 7, imports="import os")
    result = importer.import_one(t)
    assert not result.accepted and result.reason == "unsafe_program"
    t = transcript(q, """
        cats = 4
        dogs = eval("3")
        return cats + dogs
    """, 7)
    assert importer.import_one(t).reason == "unsafe_program"


def test_divisor_parameter_excludes_zero(importer):
    q = "There are 12 cookies shared equally among 4 friends. How many cookies does each friend get?"
    t = transcript(q, """
        cookies = 12
        friends = 4
        result = cookies / friends
        return result
    """, 3)
    entry, compiled = accepted_entry(importer, t)
    friends, cookies = entry.param("friends"), entry.param("cookies")
    assert friends.minimum == 0 and friends.exclusive_minimum
    assert cookies.minimum == 0 and not cookies.exclusive_minimum
    assert answer(entry, compiled, q.replace("4 friends", "6 friends")) == 2


def test_failed_round_trip_is_retried_with_the_blamed_parameter_constant():
    q = "There are 12 cookies shared equally among 4 friends. How many cookies does each friend get?"
    t = transcript(q, """
        cookies = 12
        friends = 4
        result = cookies / friends
        return result
    """, 3)
    flaky = Importer(ImportOptions(seed=1))
    real = flaky._one_round_trip

    def one_round_trip(entry, loaded, values, expected):  # pretend "friends" cannot be read back
        if values.get("friends", 4) != 4:
            return False, "param friends: extracted as None"
        return real(entry, loaded, values, expected)

    flaky._one_round_trip = one_round_trip
    result = flaky.import_one(t)
    assert result.accepted, result.detail
    assert result.info["params"] == ["cookies"] and result.info["frozen"] == ["friends"]
    assert result.info["attempts"] == 2  # MiniCache retry with the failure summary as reflection
    assert "friends, kept constant: a failed round trip" in result.source
    assert "{cookies} cookies" in result.source and "among 4 friends" in result.source
    # with no retries left the same transcript is rejected
    flaky.options.max_retries = 0
    assert flaky.import_one(t).reason == "round_trip_failed"


def test_percent_written_as_a_complement(importer):
    q = "A jacket costs $50. It is on sale for 20% off. How much does the jacket cost now?"
    t = transcript(q, """
        price = 50
        sale_factor = 0.8
        result = price * sale_factor
        return result
    """, 40)
    result = accepted(importer, t)
    entry, compiled = load_entry(result.source, result.id)
    assert "{sale_factor_percent}% off" in entry.template
    assert entry.param("sale_factor_percent").original == 20
    assert "sale_factor = 1 - sale_factor_percent / 100" in result.source  # the literal became an expression
    assert answer(entry, compiled, q.replace("20%", "25%")) == pytest.approx(37.5)


def test_gsm_hard_number_is_mapped_back_to_the_original(importer):
    q = "Janet's ducks lay 16 eggs per day. She eats three for breakfast. She sells the rest for $2 each. How much does she make?"
    variant = q.replace("16 eggs", "4933828 eggs")
    t = transcript(q, """
        eggs_per_day = 4933828
        eggs_eaten = 3
        price = 2
        result = (eggs_per_day - eggs_eaten) * price
        return result
    """, 26, variant=variant)
    entry, compiled = accepted_entry(importer, t)
    assert entry.param("eggs_per_day").original == 16
    assert answer(entry, compiled, variant) == (4933828 - 3) * 2  # and it serves the GSM-Hard question too


def test_program_without_question_numbers_and_crashing_program(importer):
    q = "Ann has 4 cats and 3 dogs. How many pets does she have?"
    hard_coded = importer.import_one(transcript(q, "return 7", 7))
    assert hard_coded.reason == "no_parameters"
    crash = importer.import_one(transcript(q, """
        cats = 4
        dogs = 3
        return (cats + dogs) / 0
    """, 7))
    assert crash.reason == "runtime_error"


def test_while_loop_gets_a_step_cap(importer):
    q = "A plant is 3 cm tall and doubles every week. After how many weeks is it taller than 40 cm?"
    t = transcript(q, """
        height = 3
        target = 40
        weeks = 0
        while height <= target:
            height *= 2
            weeks += 1
        return weeks
    """, 4)
    result = accepted(importer, t)
    assert "the loop did not finish" in result.source
    entry, compiled = load_entry(result.source, result.id)
    assert answer(entry, compiled, q.replace("40 cm", "100 cm")) == 6


def test_number_scanning_and_gsm_hard_diff():
    mentions = scan_numbers("She eats three of the 1,200 eggs, half of them, and 25% more for $2.50.")
    assert [(m.text, m.value, m.kind) for m in mentions] == [
        ("three", 3, "word"), ("1,200", 1200, "digits"), ("half", 0.5, "structural"),
        ("25", 25, "digits"), ("2.50", 2.5, "digits"),
    ]
    assert mentions[3].percent and mentions[4].money
    reps = replaced_numbers("He runs 99 sprints 3 times.", "He runs three sprints 3 times.")
    assert [(r.variant_value, r.mention.text) for r in reps] == [(99.0, "three")]
    assert gold_answer("so 1,000 - 2 = 998\n#### 998") == 998
    assert normalise_question("Janet’s  ducks!") == normalise_question("janet s ducks")


# ---------------------------------------------------------------------------------------------
# MiniCache group mechanics
# ---------------------------------------------------------------------------------------------
def test_group_accepts_at_pass_rate_alpha_and_retries_with_reflections():
    seen: list[tuple] = []

    def generate(transcripts, reflections):
        seen.append(tuple(reflections))
        return len(reflections)  # the candidate improves with each reflection

    def validate(candidate, generation, held_out):
        passed = 3 + candidate
        return Validation(passed, 5, tuple(f"failure {i}" for i in range(5 - passed)))

    group = PotGroup("g", GroupPolicy(alpha=0.8, nu=1, max_retries=2), generate, validate)
    outcome = group.add("t1")
    assert outcome is not None and outcome.accepted is not None
    assert group.status == "built" and len(outcome.attempts) == 2
    assert seen == [(), ("failure 0", "failure 1")]  # the retry saw the failure summaries


def test_group_backs_off_and_becomes_uncacheable():
    policy = GroupPolicy(alpha=0.8, nu=2, beta=2.0, max_retries=1, max_build_failures=2, generation_share=0.5)
    splits = []

    def generate(transcripts, reflections):
        return "candidate"

    def validate(candidate, generation, held_out):
        splits.append((list(generation), list(held_out)))
        return Validation(1, 2, ("wrong on a held-out transcript",))

    group = PotGroup("g", policy, generate, validate)
    assert group.add("a") is None  # waiting for nu = 2 transcripts
    first = group.add("b")
    assert first is not None and first.accepted is None and first.reason == "round_trip_failed"
    assert splits[0] == (["a"], ["b"])  # generation / validation split
    assert group.nu == 4 and group.status == "collecting"  # nu <- beta * nu
    assert group.add("c") is None
    second = group.add("d")
    assert second is not None and group.status == "uncacheable"
    assert group.add("e") is None


def test_group_stops_at_a_fatal_result():
    calls = []

    def generate(transcripts, reflections):
        calls.append(1)
        raise GenerationFailed("wrong_on_original", "returns 5, gold 7")

    group = PotGroup("g", GroupPolicy(max_retries=3), generate, lambda *a: Validation(1, 1))
    outcome = group.add("t")
    assert outcome.reason == "wrong_on_original" and len(calls) == 1


# ---------------------------------------------------------------------------------------------
# Batch import and CLI
# ---------------------------------------------------------------------------------------------
def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_run_import_is_resumable_and_the_cli_prints_one_json_object(tmp_path, monkeypatch):
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))  # the workers' directories land here
    questions = [
        ("Tom has 5 apples and buys 7 more. How many apples does he have?", "a = 5\nb = 7\nreturn a + b", 12),
        ("Ann has 4 cats and 3 dogs. How many pets does she have?", "cats = 4\ndogs = 3\nreturn cats * dogs", 7),
        ("A box holds 6 eggs. How many eggs are in 9 boxes?", "per_box = 6\nboxes = 9\nreturn per_box * boxes", 54),
    ]
    reference = _write_jsonl(tmp_path / "mini_test.jsonl", [
        {"question": q, "answer": f"work\n#### {gold}"} for q, _, gold in questions
    ])
    rows = [{"code": program(q, body)} for q, body, _ in questions]
    rows.append({"code": program("What is the meaning of life?", "return 42")})
    source = _write_jsonl(tmp_path / "pot.jsonl", rows)
    out = tmp_path / "registry"
    first = run_import(source, reference, out, limit=2, workers=1)
    assert first["accepted"] == 1 and first["rejected_by_reason"]["wrong_on_original"] == 1
    assert (out / "entries" / "mini-0000.py").exists()  # ids: reference file prefix + reference row
    buffer = io.StringIO()
    from builder.cli import main

    with redirect_stdout(buffer):
        code = main(["import-pot", str(source), "--reference", str(reference), "--registry", str(out), "--json",
                     "--workers", "1"])
    assert code == 0
    summary = json.loads(buffer.getvalue())  # exactly one JSON object on stdout
    assert set(summary) == {"total", "accepted", "verified", "verified_within_scope", "rejected_by_reason",
                            "wrong_on_original", "seconds"}
    assert 0 <= summary["verified_within_scope"] <= summary["verified"] <= summary["accepted"]
    assert summary["total"] == 4 and summary["accepted"] == 2 and summary["wrong_on_original"] == 0
    assert summary["rejected_by_reason"]["no_match_in_gsm8k"] == 1
    assert set(summary["rejected_by_reason"]) == set(REASONS)
    rejections = [json.loads(line) for line in (out / "rejections.jsonl").read_text().splitlines()]
    assert sorted(r["row"] for r in rejections) == [1, 3]  # the resumed run did not decide row 1 again
    index = json.loads((out / "index.json").read_text())
    assert index["accepted"] == ["mini-0000", "mini-0002"]
    assert list(temporary.iterdir()) == []  # no worker leaves its directory behind


# ---------------------------------------------------------------------------------------------
# Real data
# ---------------------------------------------------------------------------------------------
@pytest.mark.skipif(not (DATA / "pal_gsmhard_v2.jsonl").exists(),
                    reason="GSM8K data not found at /work/shared/data/gsm8k (see its README); skipping the real-data import")
def test_first_40_gsm8k_rows(tmp_path):
    out = tmp_path / "gsm8k"
    summary = run_import(DATA / "pal_gsmhard_v2.jsonl", DATA / "gsm8k_test.jsonl", out, limit=40, workers=1)
    assert summary["total"] == 40
    assert summary["accepted"] >= 32, summary
    assert summary["wrong_on_original"] == 0
    reference = ReferenceIndex.load(DATA / "gsm8k_test.jsonl")
    extractor = Extractor(None)
    embedder = ExactEmbedder()
    files = sorted((out / "entries").glob("*.py"))
    assert len(files) == summary["accepted"]
    for path in files:
        source = path.read_text(encoding="utf-8")
        validate_source(source, path.name)
        registry = Registry(embedder)
        registry.add_source(source, path.name, path.stem.replace("-", "_"))
        compiled = compile_entry(registry, path.stem)
        validate_source(compiled.source)
        row = reference.rows[int(path.stem.split("-")[1])]
        values = extractor.extract(registry.entries[path.stem], row.question).values
        got = LoadedCompiledEntry(compiled.source, path.stem.replace("-", "_")).run(values).result["answer"]
        assert abs(float(got) - float(row.gold)) <= 1e-6 * max(1.0, abs(float(row.gold))), path.name


# ---------------------------------------------------------------------------------------------
# Numbers the reasoning ignores, number words as parameters, precomputed constants, counts
# ---------------------------------------------------------------------------------------------
def test_a_number_the_program_never_reads_becomes_a_free_slot(importer):
    q = ("Grandma walks 3 miles every day: 2 miles on the beach and 1 mile on the sidewalk. She walks the beach "
         "at 4 miles per hour and the sidewalk at 2 miles per hour. How many hours does she walk?")
    t = transcript(q, """
        beach = 2
        sidewalk = 1
        beach_speed = 4
        sidewalk_speed = 2
        result = beach / beach_speed + sidewalk / sidewalk_speed
        return result
    """, 1)
    result = accepted(importer, t)
    entry, compiled = load_entry(result.source, result.id)
    free = [p for p in entry.params if p.name.startswith("unused")]
    assert len(free) == 1 and "not read by the reasoning" in free[0].description
    assert f"{{{free[0].name}}} miles every day" in entry.template
    assert f"load(ctx, {free[0].description!r}" not in result.source  # the root never loads it
    assert answer(entry, compiled, q.replace("walks 3 miles", "walks 5 miles")) == 1  # a free value changes nothing
    assert answer(entry, compiled, q.replace("2 miles on", "4 miles on").replace("walks 3", "walks 5")) == 1.5


def test_a_conversion_the_program_precomputed_becomes_the_stated_number(importer):
    q = "John has 10 trees. He can harvest every 3 months, 100 apples a tree. How many apples does he get in a year?"
    t = transcript(q, """
        trees = 10
        apples_per_tree = 100
        harvests_per_year = 4
        result = trees * apples_per_tree * harvests_per_year
        return result
    """, 4000)
    entry, compiled = accepted_entry(importer, t)
    assert not [p for p in entry.params if p.name.startswith("unused")]
    assert "every {months} months" in entry.template  # 4 = 12 / 3: the harvests a year, from the months
    assert answer(entry, compiled, q.replace("every 3 months", "every 6 months")) == 2000
    assert answer(entry, compiled, q.replace("every 3 months", "every 2 months")) == 6000


def test_days_precomputed_from_weeks_follow_the_weeks(importer):
    q = "A hospital has 1000 beds, 200 of them occupied. 50 patients are admitted each day. How many beds are free after 2 weeks?"
    t = transcript(q, """
        beds = 1000
        occupied = 200
        per_day = 50
        days = 14
        return beds - occupied - per_day * days
    """, 100)
    entry, compiled = accepted_entry(importer, t)
    assert "after {weeks} weeks" in entry.template
    assert answer(entry, compiled, q.replace("after 2 weeks", "after 1 weeks")) == 450


def test_no_conversion_without_the_other_unit():
    program_text = program("Bo walks his dog for 2 weeks. It chases 7 squirrels a walk. How many squirrels?", """
        squirrels = 7
        walks = 14
        return squirrels * walks
    """)
    q = "Bo walks his dog for 2 weeks. It chases 7 squirrels a walk. How many squirrels?"
    plan = plan_parameters(q, PalProgram(program_text))
    assert "weeks" not in [p.name for p in plan.params]  # 14 = 2 x 7, but nothing here counts days
    days = program_text.replace("walks = 14", "walk_days = 14").replace("* walks", "* walk_days")
    lifted = plan_parameters(q, PalProgram(days))
    assert sorted(p.name for p in lifted.params) == ["squirrels", "weeks"]


def test_a_number_written_into_a_measure_is_a_parameter(importer):
    q = "He buys four 12-pound bags of carrots and two 75-pound bales of hay. How many pounds does he buy?"
    t = transcript(q, """
        carrots = 4
        hay = 2
        bale = 75
        return carrots * 12 + hay * bale
    """, 198)
    entry, compiled = accepted_entry(importer, t)
    assert "{" in entry.template.split("-pound bags")[0].split()[-1]  # the 12 of "12-pound" is a slot
    assert answer(entry, compiled, q.replace("12-pound", "8-pound")) == 182


def test_an_inline_literal_sharing_a_word_with_a_mention_reads_it(importer):
    q = ("On Saturday he sold 10 boxes of gingerbread. On Sunday he sold 5 more boxes of gingerbread than on "
         "Saturday. How many boxes of gingerbread in all?")
    t = transcript(q, """
        saturday_gingerbread = 10
        sunday_gingerbread = 10 + 5
        return saturday_gingerbread + sunday_gingerbread
    """, 25)
    entry, compiled = accepted_entry(importer, t)
    assert "sold 10 boxes" not in entry.template
    assert answer(entry, compiled, q.replace("sold 10 boxes", "sold 12 boxes")) == 29
    twice = q.replace("10 boxes of gingerbread.", "10 boxes of gingerbread and 10 boxes of pie.")
    t = transcript(twice, """
        saturday_gingerbread = 10
        pie = 10
        sunday_gingerbread = 10 + 5
        return saturday_gingerbread + sunday_gingerbread
    """, 25)
    entry, _ = load_entry(accepted(importer, t).source, "gsm8k-0007")
    assert "sold 10 boxes of gingerbread" in entry.template  # which 10 the inline one reads is unknowable


def test_number_words_become_parameters_read_as_their_number_or_its_reciprocal(importer):
    q = "A juggler has 16 balls. Half of the balls are golf balls, and he buys twice as many tennis balls. How many tennis balls?"
    t = transcript(q, """
        balls = 16
        golf = balls / 2
        tennis = golf * 2
        return tennis
    """, 16)
    entry, compiled = accepted_entry(importer, t)
    readings = {p.reading for p in entry.params if p.type is float}
    assert readings == {"reciprocal", "multiple"}  # "Half" divides by 2; "twice" is a multiple, as "three times"
    assert answer(entry, compiled, q.replace("Half", "One quarter")) == 8
    assert answer(entry, compiled, q.replace("Half", "Three quarters").replace("twice", "three times")) == 36
    assert answer(entry, compiled, q.replace("twice", "thrice")) == 24


def test_a_multiplying_verb_is_a_parameter_another_verb_can_restate(importer):
    """GSM8K 743: "she tripled the number of slices" is the 3 of ``* 3``; kept constant, every variant that doubles
    them was refused (the entry's 3 is not stated). As a slot, "doubled" reads 2 there and "3 times" 3."""
    q = ("Mara added 3 slices of cake to a plate that already had 2 slices on it. She was getting hungrier so she "
         "tripled the number of slices she currently has. She ate 2 slices. How many slices remained on the plate?")
    t = transcript(q, """
        cake_initial = 2
        cake_added = 3
        cake_now = (cake_initial + cake_added) * 3
        return cake_now - 2
    """, 13)
    entry, compiled = accepted_entry(importer, t)
    assert "tripled" not in entry.template, entry.template
    assert answer(entry, compiled, q.replace("tripled", "doubled")) == 8
    assert answer(entry, compiled, q.replace("tripled", "quadrupled")) == 18


def test_a_multiplying_word_is_stated_only_by_a_multiple(importer):
    """GSM8K 237 read "tripled" as a slot; an unrelated question ("$300 ... after 3 years") then seemed to state it
    with its 3 years. The slot reads as a multiple: "quadrupled" states it, a count of years does not."""
    q = ("Johnny took his allowance of $20 and added an extra $10 to it. He then invested this sum of money, which "
         "tripled in a year. How much money did he have after a year?")
    t = transcript(q, """
        allowance = 20
        extra = 10
        return (allowance + extra) * 3
    """, 90)
    entry, compiled = accepted_entry(importer, t)
    assert [p.reading for p in entry.params if p.original == 3] == ["multiple"]
    assert answer(entry, compiled, q.replace("tripled", "quadrupled")) == 120
    years = "Johnny took his allowance of $20 and added an extra $10 to it. After 3 years, how much money did he have?"
    assert check(entry, years, {p.name: p.original for p in entry.params}) is not None
    assert check(entry, q.replace("tripled", "quadrupled"), {**{p.name: p.original for p in entry.params},
                                                             **{p.name: 4.0 for p in entry.params if p.reading}}) is None


def test_a_fraction_in_words_written_as_two_literals_is_one_parameter(importer):
    """GSM8K 890: "Two-thirds of the remaining" is the ``* 2 / 3`` of the program. Neither literal is the fraction
    on its own, so both stayed constant and every variant with another fraction was refused. As one parameter the
    numerator holds the fraction and the denominator 1: "One-third" and "3/4" take its place."""
    q = ("There are 120 plants in Mrs. Smith's garden. One-fourth of her plants are indoor plants. Two-thirds of the "
         "remaining are outdoor plants while the rest are flowering plants. How many flowering plants are there?")
    t = transcript(q, """
        plants_total = 120
        plants_indoor = plants_total / 4
        plants_outdoor = (plants_total - plants_indoor) * 2 / 3
        return plants_total - plants_indoor - plants_outdoor
    """, 30)
    entry, compiled = accepted_entry(importer, t)
    assert "Two-thirds" not in entry.template, entry.template
    assert answer(entry, compiled, q.replace("Two-thirds", "One-third")) == 60
    assert answer(entry, compiled, q.replace("Two-thirds", "3/4")) == 22.5


def test_a_parameter_a_constant_was_precomputed_from_is_kept_constant(importer):
    q = ("In a 45-item quiz, 40% of the questions are easy, and the rest are equally divided as average and hard. "
         "If Ann gets 90% of the easy ones and all the others right, how many points does she get?")
    t = transcript(q, """
        total = 45
        easy = total * 40 / 100
        average = total * 0.3
        hard = total * 0.3
        return easy * 90 / 100 + average + hard
    """, 43.2)
    result = accepted(importer, t)
    entry, _ = load_entry(result.source, result.id)
    assert "40% of the questions" in entry.template  # (1 - 40/100) / 2 = 0.3: the 40 cannot vary
    assert "90%" not in entry.template and "45-item" not in entry.template  # these can


def test_a_unit_constant_equal_to_a_parameter_freezes_it(importer):
    q = "On Saturday he sold 10 boxes. On Sunday he sold 5 more boxes than on Saturday. How many boxes in all?"
    t = transcript(q, """
        saturday = 10
        sunday = 10 + 5
        return saturday + sunday
    """, 25)
    result = accepted(importer, t)
    entry, _ = load_entry(result.source, result.id)
    assert "sold 10 boxes" in entry.template  # 10 + 5 may read Saturday's 10 again: it stays fixed


def test_a_count_is_marked_a_whole_answer(importer):
    q = "Mary has 9 jars. Each jar decorates 7 cupcakes and each pan holds 12 cupcakes. How many pans does she need?"
    t = transcript(q, """
        jars = 9
        per_jar = 7
        per_pan = 12
        return jars * per_jar / per_pan
    """, 5.25)
    assert "whole_answer" not in accepted(importer, t).source  # the gold answer is no whole number
    whole = transcript(q.replace("12 cupcakes", "9 cupcakes"), """
        jars = 9
        per_jar = 7
        per_pan = 9
        return jars * per_jar / per_pan
    """, 7)
    result = accepted(importer, whole)
    entry, _ = load_entry(result.source, result.id)
    assert entry.whole_answer
    days = transcript("Imma feeds her 2 cats twice a day with 60 grams each. How many days will 480 grams last?", """
        cats = 2
        feeds = 2
        grams = 60
        food = 480
        return food / (cats * feeds * grams)
    """, 2)  # 2.5 days for 500 grams is no answer to "how many days": the program lacks a rounding step
    assert "whole_answer=True" in accepted(importer, days).source
    hours = transcript("Tom walks 4 miles at 2 miles per hour and 4 miles at 4 miles per hour. How many hours does "
                       "he walk?", """
        a = 4
        b = 2
        c = 4
        d = 4
        return a / b + c / d
    """, 3)
    assert "whole_answer" not in accepted(importer, hours).source  # hours are a measure
    for measure in ("kilometers", "deciliters", "square feet"):  # 653.5 km, 44.8 dl: answers, not missing rounding
        asked = transcript(f"Tom drives 4 {measure} a day for 3 days. How many {measure} does he drive?", """
            a = 4
            b = 3
            return a * b
        """, 12)
        assert "whole_answer" not in accepted(importer, asked).source, measure


def test_a_quantity_answer_never_goes_below_zero(importer):
    q = "Carl buys 4 packs of 6 cookies at $0.50 each. How much change does he get from a $20 bill?"
    t = transcript(q, """
        packs = 4
        per_pack = 6
        price = 0.5
        paid = 20
        return paid - packs * per_pack * price
    """, 8)
    entry, compiled = load_entry(accepted(importer, t).source, "gsm8k-0007")
    assert entry.answer_minimum == 0  # the pipeline refuses what falls below (tests/edge_runtime/read/test_guard.py)
    assert answer(entry, compiled, q.replace("$20", "$10")) == -2
    owed = transcript(q.replace("How much change does he get", "How much is he short"), """
        packs = 4
        per_pack = 6
        price = 0.5
        paid = 20
        return paid - packs * per_pack * price - 10
    """, -2)
    assert "answer_minimum" not in accepted(importer, owed).source  # a negative gold answer: no such domain


def test_a_unit_fraction_is_one_number_read_as_stated_or_as_its_denominator(importer):
    q = (
        "He has 32 ounces of water. Small cubes use 1/2 an ounce and big cubes 4 ounces. He makes 8 small and 3 big "
        "cubes. How many ounces are left?"
    )
    t = transcript(q, """
        water = 32
        small = 8
        big = 3
        return water - small * 0.5 - big * 4
    """, 16)
    entry, compiled = accepted_entry(importer, t)
    assert "1/2" not in entry.template and "{unused" not in entry.template  # one number, no free numerator
    assert answer(entry, compiled, q.replace("1/2 an ounce", "1/4 an ounce")) == 18
    assert answer(entry, compiled, q.replace("1/2 an ounce", "a quarter of an ounce")) == 18


def test_a_unit_fraction_a_program_divides_by_is_read_as_its_denominator(importer):
    q = "A hospital has 1000 beds with 1/5 occupied. How many beds are free?"
    t = transcript(q, """
        beds = 1000
        occupied = beds / 5
        return beds - occupied
    """, 800)
    entry, compiled = load_entry(accepted(importer, t).source, "gsm8k-0007")
    assert "{unused" not in entry.template  # "2/5 occupied" is another question, not a new value of an ignored 1
    assert answer(entry, compiled, q.replace("1/5", "1/4")) == 750


def test_a_measure_may_be_stated_with_decimals_a_count_may_not(importer):
    q = "Ana peels an orange in 2 minutes and has 12 oranges. How many minutes does she need?"
    t = transcript(q, """
        minutes_per_orange = 2
        oranges = 12
        return minutes_per_orange * oranges
    """, 24)
    entry, compiled = load_entry(accepted(importer, t).source, "gsm8k-0007")
    types = {p.name: p.type for p in entry.params}
    assert types == {"minutes_per_orange": float, "oranges": int}
    assert answer(entry, compiled, q.replace("in 2 minutes", "in 2.5 minutes")) == 30
    floors = transcript(q, """
        minutes_per_orange = 2
        oranges = 12
        return (minutes_per_orange * oranges) // 1
    """, 24)
    entry, _ = load_entry(accepted(importer, floors).source, "gsm8k-0007")
    assert all(p.type is int for p in entry.params)  # the program floors: a decimal could change its path


def test_an_inline_literal_never_shares_a_mention_no_named_variable_took(importer):
    q = ("Rayna has 60 more dollars than Kassidy, and Kassidy has 3/4 times as much money as Aurelia. If Aurelia "
         "has $120, how much would each have if they shared their money equally?")
    t = transcript(q, """
        aurelia_money = 120
        kassidy_money = aurelia_money * 3 / 4
        rayna_money = kassidy_money + 60
        total_money = aurelia_money + kassidy_money + rayna_money
        money_per_person = total_money / 3
        return money_per_person
    """, 120)
    source = accepted(importer, t).source
    assert "total_money / 3" in source  # three people share: not the 3 of "3/4", whatever "3/4" becomes


def test_a_one_is_never_a_free_slot(importer):
    q = ("He needs 2 implants at $2000 each. For one of the implants he wants a crown that costs an extra $500. "
         "How much does he pay?")
    t = transcript(q, """
        implants = 2
        price = 2000
        crown = 500
        return implants * price + crown
    """, 4500)
    entry, _ = load_entry(accepted(importer, t).source, "gsm8k-0007")
    assert "For one of the implants" in entry.template  # "for two of them" would double the crowns


def test_minutes_a_program_wrote_as_hours_follow_the_minutes(importer):
    q = "Frankie watches a 30-minute show 3 times. How many hours does he watch?"
    t = transcript(q, """
        shows = 3
        hours = 0.5 * shows
        return hours
    """, 1.5)
    entry, compiled = load_entry(accepted(importer, t).source, "gsm8k-0007")
    assert "a {" in entry.template and "}-minute show" in entry.template  # 0.5 hours = 30 / 60
    assert answer(entry, compiled, q.replace("30-minute", "45-minute")) == 2.25


def test_a_number_restated_for_the_same_thing_is_the_same_slot(importer):
    q = ("Katherine has 5 hanging baskets to fill. In each basket she adds 3 petunias at $2 apiece. "
         "It rained for 5 days. How much will she spend filling all 5 hanging baskets?")
    t = transcript(q, """
        baskets = 5
        petunias = 3
        cost = 2
        return baskets * petunias * cost
    """, 30)
    entry, compiled = load_entry(accepted(importer, t).source, "gsm8k-0007")
    assert entry.template.count("{baskets} hanging baskets") == 2
    assert "for 5 days" in entry.template  # the same number for another thing stays as stated
    seven = q.replace("5 hanging", "7 hanging")
    assert answer(entry, compiled, seven) == 42
    with pytest.raises(ExtractionError):  # the two mentions must agree
        Extractor(None).extract(entry, q.replace("has 5 hanging", "has 7 hanging"))


def test_a_number_restated_in_words_for_the_same_thing_is_the_same_slot(importer):
    """GSM8K 42: "baked 5 apple pies ... set the five pies out", the program reading the second: left a constant, the
    first 5 refused every question with another number of pies."""
    q = ("Grandma baked 5 apple pies. She cut each pie into 8 pieces and set the five pies out on the table. "
         "At the end there were 14 pieces left. How many pieces were eaten?")
    t = transcript(q, """
        pies = 5
        pieces = 8
        left = 14
        return pies * pieces - left
    """, 26)
    entry, compiled = load_entry(accepted(importer, t).source, "gsm8k-0007")
    assert entry.template.count("{pies}") == 2, entry.template
    assert answer(entry, compiled, q.replace("5 apple", "6 apple").replace("five pies", "six pies")) == 34
    with pytest.raises(ExtractionError):  # the two mentions must agree
        Extractor(None).extract(entry, q.replace("5 apple", "6 apple"))


def test_a_unit_like_number_summed_with_stated_counts_is_a_stated_count(importer):
    """GSM8K 1071: ``25 + 7 + 13 - 4`` of "25 classmates and the 7 girls ... 13 family members ... 4 could not come":
    a 7 written inline among stated counts is the 7 girls, not the days of a week (a lone "/ 60" next to "60%", or
    "+ 1" next to "1 dog", stays arithmetic)."""
    q = ("Kayla invited her 25 classmates and the 7 girls in her dance class, as well as 13 family members. Only 4 "
         "people said they could not come. How many people came?")
    t = transcript(q, """
        came = 25 + 7 + 13 - 4
        return came
    """, 41)
    entry, compiled = load_entry(accepted(importer, t).source, "gsm8k-0007")
    assert "the {" in entry.template and "} girls" in entry.template, entry.template
    assert answer(entry, compiled, q.replace("the 7 girls", "the 9 girls")) == 43


def test_an_amount_the_question_makes_equal_follows_the_stated_one(importer):
    """GSM8K 716: "a 6 egg omelet with 2 oz of cheese and an equal amount of ham" written ``cheese = 2`` and
    ``ham = 2``: the ham's 2 is the cheese's, so a question with 3 oz of cheese has 3 oz of ham too."""
    q = ("John makes a 6 egg omelet with 2 oz of cheese and an equal amount of ham. Eggs are 75 calories each. Cheese "
         "is 120 calories per ounce. Ham is 40 calories per ounce. How many calories is the omelet?")
    t = transcript(q, """
        eggs = 6
        egg_calories = 75
        cheese = 2
        ham = 2
        return eggs * egg_calories + cheese * 120 + ham * 40
    """, 770)
    entry, compiled = load_entry(accepted(importer, t).source, "gsm8k-0007")
    assert answer(entry, compiled, q.replace("2 oz", "3 oz")) == 6 * 75 + 3 * 120 + 3 * 40


def test_a_number_restated_in_the_singular_is_the_same_slot(importer):
    """GSM8K 146: "a set with 500 pieces ... 3 times more pieces than the 500 piece one": the thing counted, in either
    number; left a constant, the second 500 would refuse every question that changes both."""
    q = ("Johnny dumped a lego set with 500 pieces on the floor, and another one that had 3 times more pieces than "
         "the 500 piece one. How many pieces are on the floor?")
    t = transcript(q, """
        first = 500
        times = 3
        return first + first * times
    """, 2000)
    entry, compiled = load_entry(accepted(importer, t).source, "gsm8k-0007")
    assert entry.template.count("{first} piece") == 2, entry.template
    assert answer(entry, compiled, q.replace("500", "600")) == 2400


def test_a_number_restated_with_a_word_between_is_the_same_slot(importer):
    """GSM8K 759: "20 such playlists ... will the 20 playlists last": the thing counted is the same one word later."""
    q = ("The number of songs in a playlist is 300. If John has 20 such playlists, and each song is 10 hours long, "
         "how many hours will the 20 playlists last in total?")
    t = transcript(q, """
        songs_per_playlist = 300
        num_playlists = 20
        song_length = 10
        return songs_per_playlist * num_playlists * song_length
    """, 60000)
    entry, compiled = load_entry(accepted(importer, t).source, "gsm8k-0007")
    assert "the 20 playlists" not in entry.template, entry.template
    assert answer(entry, compiled, q.replace("20", "17")) == 300 * 17 * 10
    with pytest.raises(ExtractionError):  # the two mentions must agree
        Extractor(None).extract(entry, q.replace("has 20", "has 17"))


def test_cents_a_program_precomputed_follow_the_dollars(importer):
    q = "The jumbo bottle of shampoo costs $24.00. It gives 120 washes. How much does each wash cost, in cents?"
    t = transcript(q, """
        washes = 120
        cost_cents = 2400
        return cost_cents / washes
    """, 20)
    entry, compiled = load_entry(accepted(importer, t).source, "gsm8k-0007")
    assert "costs $24.00" not in entry.template  # the price is a slot, read in dollars
    assert answer(entry, compiled, q.replace("$24.00", "$27.00").replace("120 washes", "180 washes")) == 15


def test_cents_a_program_precomputed_as_dollars_follow_the_cents(importer):
    q = "Each pencil costs 50 cents. How many dollars does he spend on 4 pencils?"
    t = transcript(q, """
        pencils = 4
        price_dollars = 0.5
        return pencils * price_dollars
    """, 2)
    entry, compiled = load_entry(accepted(importer, t).source, "gsm8k-0007")
    assert "costs 50 cents" not in entry.template  # 0.5 dollars = 50 / 100
    assert answer(entry, compiled, q.replace("50 cents", "75 cents")) == 3


def test_cents_written_as_dollars_beside_a_dollar_amount_are_read():
    """GSM8K 434: "chips for 40 cents ... George spent $5", and a program that counts in dollars ("cost_of_chips =
    0.4"): the "$5" says the question counts in dollars too, so 0.4 is the 40 cents, not a constant of its own."""
    q = ("The vending machines sell chips for 40 cents and candy bars for 75 cents. George spent $5 and got 3 bags of "
         "chips and had 1% of his money left. How many candy bars did he buy?")
    plan = plan_parameters(q, PalProgram(program(q, """
        cost_of_chips = 0.4
        cost_of_candy_bar = 0.75
        num_chips = 3
        total_cost = 5
        left_money = total_cost * 0.01
        return (total_cost - left_money - num_chips * cost_of_chips) / cost_of_candy_bar
    """)))
    read = {q[p.mention.start:p.mention.end + 6] for p in plan.params}
    assert {"40 cents", "75 cents"} <= read, read
    no_dollars = q.replace("$5", "500 cents")
    assert not any(p.mention.text == "40" for p in plan_parameters(no_dollars, PalProgram(program(no_dollars, """
        cost_of_chips = 0.4
        return (500 - 5 - 3 * 40) / 75 + cost_of_chips * 0
    """))).params)


def test_a_price_is_read_from_the_money_mention_not_a_same_valued_size():
    q = "He has $24 to buy wood. A 2 x 4 costs $4. A 2 x 8 costs $6. How many 2 x 4 boards can he buy?"
    plan = plan_parameters(q, PalProgram(program(q, """
        money = 24
        cost_2x4 = 4
        return money // cost_2x4
    """)))
    cost = next(p for p in plan.params if p.name == "cost_2x4")
    assert q[cost.mention.start - 1] == "$"  # the "$4", not the 4 of "2 x 4"


@pytest.mark.parametrize(("q", "body", "expected"), [
    # in a list, a window of words on each side reaches the neighbour's noun: the noun right after a number says
    ("A ride costs $26 for an adult and $12 for a child. If there are 2 adults and 2 children in the family, how "
     "much do they pay?", "children = 2\nadults = 2\nreturn adults * 26 + children * 12",
     {"adults": "2 adults", "children": "2 children"}),
    ("He wants to buy five notebooks, two pens, one calculator, and one geometry set. How many things is that?",
     "geometry_sets_bought = 1\ncalculators_bought = 1\nnotebooks = 5\npens = 2\n"
     "return notebooks + pens + calculators_bought + geometry_sets_bought",
     {"calculators_bought": "one calculator", "geometry_sets_bought": "one geometry"}),
])
def test_a_number_counts_the_thing_named_right_after_it(q, body, expected):
    plan = plan_parameters(q, PalProgram(program(q, body)))
    after = {p.name: " ".join(q[p.mention.start:].split()[:2]).strip(",") for p in plan.params}
    assert {name: after[name] for name in expected} == expected


def test_a_fraction_more_written_as_one_plus_it_is_that_fraction(importer):
    """"1/5 times more" is written 1.2 by the program: the slot is the fraction, and "1/4 times more" takes its place."""
    q = "Dijana rowed 50 miles. Anis rowed 1/5 times more miles than Dijana. How many miles did Anis row?"
    entry, compiled = accepted_entry(importer, transcript(q, "dijana = 50\nanis = dijana * 1.2\nreturn anis", 60))
    fraction = next(p for p in entry.params if p.original == pytest.approx(0.2))
    assert "{" + fraction.name + "} times more" in entry.template
    other = q.replace("50 miles", "40 miles").replace("1/5", "1/4")
    assert compiled.run(Extractor(None).extract(entry, other).values).result["answer"] == pytest.approx(50)


def test_the_one_of_a_complement_is_never_a_question_quantity():
    q = "She returns one item that cost $15. A pan is 20% off $20.00. How much does she pay for the pan?"
    plan = plan_parameters(q, PalProgram(program(q, """
        discount = 20 / 100
        pan = 20.00 * (1 - discount)
        return pan
    """)))
    assert all(p.mention.text != "one" for p in plan.params)  # "one item" is not the 1 of (1 - discount)


@pytest.mark.parametrize("by", ["x", "×"])
def test_a_size_written_as_a_dimension_is_not_the_count_or_the_price(by):
    q = ("She has leftover ten 2 x 4 x 10 boards that cost her $10 each. She also has five 4 x 4 x 10 boards she "
         "bought for $16 each. How much did they cost?").replace(" x ", f" {by} ")
    plan = plan_parameters(q, PalProgram(program(q, """
        two_by_four_cost = 10
        two_by_four_count = 10
        four_by_four_cost = 16
        four_by_four_count = 5
        return two_by_four_cost * two_by_four_count + four_by_four_cost * four_by_four_count
    """)))
    texts = {p.name: q[p.mention.start - 1:p.mention.end] for p in plan.params}
    assert texts["two_by_four_count"].strip() == "ten" and texts["two_by_four_cost"] == "$10"  # not "4 x 10"


def test_a_fraction_the_question_states_is_the_program_s_fraction_not_another_number_of_the_same_value():
    """"3/4ths" (one number to the device, 3 and 4 to a program that writes ``* 3 / 4``) binds those two literals;
    ``student_windows = 4`` reads "four windows each", not the 4 of the fraction, though both are 4."""
    q = ("She smashes a quarter of the students' cars' windows and 3/4ths of the teachers' cars' windows. If there "
         "are 64 students' cars with four windows each and 32 teachers' cars with two windows each, how many "
         "windows does she smash?")
    program_text = (f'def solution():\n    """{q}"""\n    student_cars = 64\n    student_windows = 4\n'
                    '    teacher_cars = 32\n    teacher_windows = 2\n'
                    '    student_smashed = student_cars * student_windows / 4\n'
                    '    teacher_smashed = teacher_cars * teacher_windows * 3 / 4\n'
                    '    return student_smashed + teacher_smashed\n')
    plan = plan_parameters(q, PalProgram(program_text))
    read = {p.name: q[p.mention.start:p.mention.end] for p in plan.params}
    assert read["student_windows"] == "four"
    assert sorted(text for text in read.values() if text in ("3", "4")) == ["3", "4"]  # the fraction's two pieces


def test_a_large_number_restated_inline_is_the_same_parameter(importer):
    """GSM8K 131: ``may = 500`` then ``june = 500 - 60``: the inline 500 is the stated $500 again, whose words lie
    beyond the mention's window ("The expenditure of Joseph in May was $500"). Left a constant, it froze the $500
    and every variant that changes May's spending was refused."""
    q = ("The expenditure of Joseph in May was $500. In June, his expenditure was $60 less. How much was his total "
         "expenditure for those two months?")
    t = transcript(q, """
        expenditure_may = 500
        expenditure_june = 500 - 60
        return expenditure_may + expenditure_june
    """, 940)
    entry, compiled = accepted_entry(importer, t)
    assert "$500" not in entry.template, entry.template
    assert answer(entry, compiled, q.replace("$500", "$800")) == 1540


def test_cents_a_program_writes_in_dollars_follow_the_stated_cents(importer):
    """GSM8K 1067: "each small coupon costs 5 cents ... how much does he spend" is ``0.05`` in a program that answers
    in dollars; the 5 cents are the parameter, so "8 cents" becomes 0.08."""
    q = ("Anthony wants to send out 700 small coupons and 300 big coupons. If each small coupon costs 5 cents to mail "
         "and each big coupon costs 15 cents, how much does he spend on postage total?")
    t = transcript(q, """
        small = 700
        big = 300
        return small * 0.05 + big * 0.15
    """, 80)
    entry, compiled = accepted_entry(importer, t)
    assert "5 cents" not in entry.template and "15 cents" not in entry.template, entry.template
    assert answer(entry, compiled, q.replace("5 cents to mail", "8 cents to mail")) == pytest.approx(101)


def test_a_fraction_a_program_writes_as_a_decimal_is_one_parameter(importer):
    """GSM8K 239: "3/5 of the remaining" is ``* 0.6``. No mention is 0.6, so the literal stayed a constant and every
    variant with another fraction was refused. The whole fraction is the slot, read and written as a fraction."""
    q = ("The number of students in a school hall was 1000. If after a meeting 30% of the students went out through "
         "exit A, 3/5 of the remaining went out through exit B, and the rest went out through exit C, calculate the "
         "number of students who went out through exit C.")
    t = transcript(q, """
        students = 1000
        out_a = students * 0.3
        out_b = (students - out_a) * 0.6
        return students - out_a - out_b
    """, 280)
    entry, compiled = accepted_entry(importer, t)
    assert "3/5" not in entry.template and [p.reading for p in entry.params if p.original == 0.6] == ["fraction"]
    assert answer(entry, compiled, q.replace("3/5", "1/2")) == 350
    assert answer(entry, compiled, q.replace("3/5", "2/7")) == pytest.approx(500)


def test_a_number_added_or_subtracted_is_never_a_ratio_word():
    """GSM8K 182: ``jan_age_now - 2`` was bound to "half" (its reciprocal is 2, and the names "jan age" sit by it), so
    the entry subtracted a third's 3 years from Jan's age on "a third of Jan's age". A ratio scales: the 2 subtracted
    is one of the question's "two years", and the 2 Jan's age is divided by reads "half"."""
    q = ("Jean is two years older than Mark. Two years ago Mark was 5 years older than half Jan's age. If Jan is 30 how "
         "old is Jean?")
    plan = plan_parameters(q, PalProgram(program(q, """
        jan_age_now = 30
        jan_age_then = jan_age_now - 2
        mark_age_then = jan_age_then / 2 + 5
        return mark_age_then + 2 + 2
    """)), freeze_derived=False)  # bound, before the "+ 2"s make it a suspect of the check's (test_suspected_constants)
    words = {p.mention.text: [lid for lid, _ in p.literals] for p in plan.params}
    assert words["half"] == [2], plan.params  # the divisor, the third literal as written
    assert "half" not in {p.mention.text for p in plan.params if 1 in (lid for lid, _ in p.literals)}

"""IS2 extraction on the tiny random Llama (fp32): copy constraint, draft-and-verify exactness, pass counts,
the disagreement policy, validation, the template fast path; plus one slow test on the real SmolLM2 artefact.

The tiny model's answers are arbitrary but deterministic, so the tests check properties that hold for any
weights (structure, copy constraint, draft == no-draft) rather than the answers themselves. Most model-path
tests read the spans from ``Extractor._with_model`` (before validation), because a random model's spans
rarely validate as numbers.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import numpy as np
import pytest
from tiny_llama import chatml

from builder.target_model import DEFAULT_RECIPE
from edge_runtime.entries.metadata import EntryPoint, Param
from edge_runtime.errors import DefinitionError, ExtractionError, ParameterValidationError, TargetModelError
from edge_runtime.model.lm_engine import LMEngine
from edge_runtime.outcome import MissReason, ServingPath
from edge_runtime.read.draft import draft_values
from edge_runtime.read.extractor import Extraction, Extractor, example_spans, prompt_parts, validate_spans
from edge_runtime.read.json_constraint import JsonSlotsConstraint
from edge_runtime.read.param_values import read_param

REPO = Path(__file__).resolve().parents[3]

SHIP = EntryPoint(
    id="ship-boxes",
    description="Shipping a number of boxes by a transport mode",
    template="Ship {count} boxes by {mode}.",
    question="Ship 7 boxes by air.",
    params=(
        Param("count", "number of boxes", type=int, original=7, examples=(12,), minimum=1, maximum=100),
        Param("mode", "transport mode", type=str, original="air", examples=("sea",), choices=("air", "sea", "road")),
    ),
    root="ship boxes",
)

NAME = EntryPoint(
    id="name-a-river",
    description="A river's name",
    template="Name {river}.",
    params=(Param("river", "the river", type=str, original="the Thames"),),
    root="river",
)

GAS_TRUTH = {
    # the entry's own question, and re-parameterised ones the aligner reads right
    "What is the pressure, in kPa, of 2 mol of an ideal gas at 25 degrees celsius held in a 10 litres container?":
        ("2", "25", "celsius", "10", "litres"),
    "What is the pressure, in kPa, of 0.5 mol of an ideal gas at 100 degrees fahrenheit held in a 2.5 millilitres "
    "container?": ("0.5", "100", "fahrenheit", "2.5", "millilitres"),
    "How much pressure do twelve mol of gas exert at 300 degrees kelvin in a 1,200 litres tank?":
        ("twelve", "300", "kelvin", "1,200", "litres"),
    "What's the pressure of 3 1/2 mol at 20 celsius in 4 litres?": ("3 1/2", "20", "celsius", "4", "litres"),
    "A 10 litres container holds 2 mol of an ideal gas at 25 degrees celsius. What is the pressure in kPa?":
        ("2", "25", "celsius", "10", "litres"),
    # the aligner reads this one wrong (it drops the minus sign: a bug, see below)
    "At -40 degrees fahrenheit, 3 mol sit in 500 cubic metres: the pressure?":
        ("3", "-40", "fahrenheit", "500", "cubic metres"),
    # no draft at all (too few numbers; two units named)
    "Gas in a box at room temperature, in litres and celsius": None,
    "2 mol at 25 degrees celsius in 10 litres or millilitres?": None,
}
GAS_QUESTIONS = list(GAS_TRUTH)

SHIP_TRUTH = {
    "Ship 7 boxes by air.": ("7", "air"),
    "Please ship 12 boxes by sea.": ("12", "sea"),
    "By road: 5 boxes.": ("5", "road"),
    "Send twelve boxes, by air": ("twelve", "air"),
    "Could you ship 8 boxes by road?": ("8", "road"),
    "Ship -5 boxes by sea.": ("-5", "sea"),  # the aligner drops the minus sign (a bug, see below)
    "Not 12 boxes by air: ship 7 by air.": ("7", "air"),  # the aligner's context words favour the 12
    # the tiny model happens to agree with the aligner's draft on "9 air" (the prompt decides which)
    "9 boxes by air": ("9", "air"),
    "7, air": ("7", "air"),
    "9 air": ("9", "air"),
    "7 by air": ("7", "air"),
    "7 boxes air": ("7", "air"),
    # no draft
    "ship boxes by rail": None,
    "3 boxes by air or sea": None,
}
SHIP_QUESTIONS = list(SHIP_TRUTH)

CARGO = dataclasses.replace(  # SHIP with free text between its numbers
    SHIP, id="ship-goods", description="Shipping boxes of some goods by a transport mode", root="ship goods",
    template="Ship {count} boxes of {goods} by {mode} within {days} days.",
    question="Ship 7 boxes of glass vases by air within 3 days.",
    params=(SHIP.params[0], Param("goods", "what the boxes hold", type=str, original="glass vases",
                                  examples=("frozen fish",)), SHIP.params[1],
            Param("days", "days allowed", type=int, original=3, examples=(5,), minimum=1, maximum=60)),
)
#: the aligner's draft: free text ("goods") is left to the model (None)
CARGO_TRUTH = {
    "Ship 7 boxes of glass vases by air within 3 days.": ("7", None, "air", "3"),
    "Please send 12 boxes of frozen fish by sea, 5 days at most.": ("12", None, "sea", "5"),
    "By road, within 9 days: 4 boxes of old paperback novels.": ("4", None, "road", "9"),
    "Twenty boxes holding spare bicycle parts go by air in 2 days.": ("Twenty", None, "air", "2"),
    "ship boxes of tea by rail": None,
}
CARGO_QUESTIONS = list(CARGO_TRUTH)


@pytest.fixture(scope="module")
def engine(tiny_fp32) -> LMEngine:
    return LMEngine(tiny_fp32)


@pytest.fixture(scope="module")
def gas(example_registry) -> EntryPoint:
    return example_registry.entries["ideal-gas-pressure"]


@pytest.fixture(scope="module")
def entries(gas) -> dict[str, tuple[EntryPoint, list[str]]]:
    return {"gas": (gas, GAS_QUESTIONS), "ship": (SHIP, SHIP_QUESTIONS), "cargo": (CARGO, CARGO_QUESTIONS)}


CASES = [("gas", i) for i in range(len(GAS_QUESTIONS))] + [("ship", i) for i in range(len(SHIP_QUESTIONS))] + [
    ("cargo", i) for i in range(len(CARGO_QUESTIONS))]
TRUTH = {**GAS_TRUTH, **SHIP_TRUTH, **CARGO_TRUTH}


def model_read(engine: LMEngine | None, entry: EntryPoint, question: str, **options) -> Extraction:
    """The model path's spans before validation (decoding on disagreement unless told otherwise)."""
    options.setdefault("on_disagreement", "decode")
    return Extractor(engine, use_fast_path=False, **options)._with_model(entry, question)


def outcome(extractor: Extractor, entry: EntryPoint, question: str):
    try:
        result = extractor.extract(entry, question)
    except ExtractionError as exc:
        return ("miss", exc.reason, exc.detail)
    return ("hit", result.values, result.spans)


class NoCallsEngine:
    """Stands in for an engine and fails the test if anything but ``root`` is touched."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def __getattr__(self, name):
        raise AssertionError(f"the template fast path used engine.{name}")


class CountingEngine:
    """A transparent proxy that records every engine method the extractor calls."""

    def __init__(self, engine: LMEngine) -> None:
        self._engine = engine
        self.root = engine.root
        self.calls: list[str] = []

    def __getattr__(self, name):
        attr = getattr(self._engine, name)
        if not callable(attr):
            return attr

        def recorded(*args, **kwargs):
            self.calls.append(name)
            return attr(*args, **kwargs)

        return recorded


@pytest.fixture
def answer_tokens(monkeypatch) -> list[int]:
    """Every token of the answer in order: forced structure plus every decision (verified or decoded)."""
    tokens: list[int] = []
    forced, advance = JsonSlotsConstraint.forced, JsonSlotsConstraint.advance

    def forced_recorded(self):
        out = forced(self)
        tokens.extend(out)
        return out

    def advance_recorded(self, token):
        tokens.append(token)
        return advance(self, token)

    monkeypatch.setattr(JsonSlotsConstraint, "forced", forced_recorded)
    monkeypatch.setattr(JsonSlotsConstraint, "advance", advance_recorded)
    return tokens


# ---- prompt ------------------------------------------------------------------------------------------


def test_prompt_prefix_depends_on_the_entry_only(gas):
    prefix_a, suffix_a = prompt_parts(gas, "  What about 3 mol?  ")
    prefix_b, suffix_b = prompt_parts(gas, "Another question")
    assert prefix_a == prefix_b and prefix_a.startswith("<|im_start|>system\n")
    assert suffix_a == " What about 3 mol?<|im_end|>\n<|im_start|>assistant\n"
    assert suffix_b.startswith(" Another question")
    examples = example_spans(gas)
    assert examples == [{"moles": "0.5", "temperature": "100", "temperature_unit": "fahrenheit", "volume": "2.5",
                         "volume_unit": "millilitres"}]  # the registered variant, not the original question
    for spans in examples:
        assert json.dumps(spans) in prefix_a and gas.template.format(**spans) in prefix_a


def test_extractor_needs_a_chatml_template(tiny_fp32, tmp_path):
    import shutil

    copy = tmp_path / "no-chatml"
    shutil.copytree(tiny_fp32, copy)
    (copy / "chat_template.jinja").write_text("{{ messages }}")
    with pytest.raises(TargetModelError, match="ChatML"):
        Extractor(LMEngine(copy))
    with pytest.raises(ValueError):
        Extractor(None, on_disagreement="ask")


# ---- (a) copy constraint and complete JSON -----------------------------------------------------------


@pytest.mark.parametrize("use_draft", [True, False], ids=["draft", "no-draft"])
@pytest.mark.parametrize(("entry_name", "index"), CASES)
def test_values_are_copied_and_the_json_is_complete(engine, entries, answer_tokens, entry_name, index, use_draft):
    entry, questions = entries[entry_name]
    question = questions[index]
    result = model_read(engine, entry, question, use_draft=use_draft)
    assert result.path in ("lm", "lm-draft")
    assert list(result.spans) == [p.name for p in entry.params]
    for param in entry.params:
        span = result.spans[param.name]
        if param.choices is not None:
            assert span in [str(c) for c in param.choices], (param.name, span)
        else:
            assert span.strip() and span in question.strip(), (param.name, span)
    # The emitted tokens spell the JSON object; when the model closes the last value with a bare '"' the
    # machine is done and the final '}' is implied (nothing is decoded after the end), never anything else.
    answer = engine.decode(answer_tokens)
    complete = json.dumps(result.spans, ensure_ascii=False)
    assert complete.startswith(answer) and complete[len(answer) :] in ("", "}"), answer
    assert json.loads(answer if answer.endswith("}") else answer + "}") == result.spans


# ---- (b) exactness: the draft never changes the answer ------------------------------------------------


@pytest.mark.parametrize(("entry_name", "index"), CASES)
def test_draft_and_verify_gives_exactly_the_constrained_greedy_answer(engine, entries, entry_name, index):
    entry, questions = entries[entry_name]
    question = questions[index]
    drafted = model_read(engine, entry, question, use_draft=True)
    plain = model_read(engine, entry, question, use_draft=False)
    assert drafted.spans == plain.spans
    assert plain.path == "lm" and plain.draft_tokens == 0
    assert drafted.path == ("lm-draft" if draft_values(entry.template, entry.params, question) else "lm")
    assert drafted.forward_passes <= plain.forward_passes
    # the public API agrees too (values, or the same MISS)
    assert outcome(Extractor(engine, use_fast_path=False, use_draft=True, on_disagreement="decode"), entry, question) == (
        outcome(Extractor(engine, use_fast_path=False, use_draft=False, on_disagreement="decode"), entry, question)
    )


def test_the_exactness_cases_cover_right_wrong_and_absent_drafts(engine, entries):
    """The exactness cases include drafts the model accepts whole and rejects, drafts that are a person's
    reading and drafts that are not, and questions with no draft."""
    kinds = {"accepted whole": 0, "rejected": 0, "no draft": 0, "aligner right": 0, "aligner wrong": 0}
    truths = TRUTH
    for entry, questions in entries.values():
        for question in questions:
            draft = draft_values(entry.template, entry.params, question)
            assert (draft is None) == (truths[question] is None), question
            if draft is None:
                kinds["no draft"] += 1
                continue
            result = model_read(engine, entry, question, use_draft=True)
            kinds["accepted whole" if result.draft_tokens_accepted == result.draft_tokens else "rejected"] += 1
            right = tuple(draft[p.name] for p in entry.params) == truths[question]
            kinds["aligner right" if right else "aligner wrong"] += 1
    assert sum(kinds[k] for k in ("accepted whole", "rejected", "no draft")) == len(CASES) >= 10
    assert all(count > 0 for count in kinds.values()), kinds


ALIGNER_CASES = list(CASES)


@pytest.mark.parametrize(("entry_name", "index"), ALIGNER_CASES)
def test_aligner_drafts_a_persons_reading(entries, entry_name, index):
    entry, questions = entries[entry_name]
    question = questions[index]
    truth = TRUTH[question]
    draft = draft_values(entry.template, entry.params, question)
    if question.startswith("Not 12"):
        assert draft == {"count": "12", "mode": "air"}  # a heuristic's limit, not a bug: the model verifies it
    elif truth is None:
        assert draft is None
    else:
        assert tuple(draft[p.name] for p in entry.params) == truth


def test_number_spans_keep_the_sign():
    from edge_runtime.read.draft import number_spans

    assert number_spans("at -40 degrees, -0.5 mol") == ["-40", "-0.5"]


def test_number_spans_read_the_multiplying_verbs_a_slot_may_hold():
    """An entry whose slot stands for "tripled" (builder: a structural parameter) is drafted from "doubled"."""
    from edge_runtime.read.draft import number_spans

    assert number_spans("She doubled the 6 slices, then tripled them") == ["doubled", "6", "tripled"]


# ---- (c) a draft accepted whole costs one forward pass --------------------------------------------------


def test_a_draft_accepted_whole_costs_one_forward_pass(engine):
    whole = []
    for question in SHIP_QUESTIONS:
        draft = draft_values(SHIP.template, SHIP.params, question)
        result = model_read(engine, SHIP, question, use_draft=True)
        if draft is None:
            assert result.path == "lm" and result.draft_tokens == 0
            continue
        assert result.path == "lm-draft"
        assert 0 <= result.draft_tokens_accepted <= result.draft_tokens > 0
        if result.draft_tokens_accepted == result.draft_tokens:
            whole.append(question)
            assert result.forward_passes == 1, question
            assert result.spans == draft
        else:
            assert result.forward_passes >= 1
    assert whole, "no question in the pool has a draft the tiny model accepts whole"


def test_accepted_draft_through_the_public_api(engine):
    spy = CountingEngine(engine)
    result = Extractor(spy).extract(SHIP, "9 air")  # not the template's text: the model path
    assert result.path == "lm-draft"
    assert result.values == {"count": 9, "mode": "air"} and isinstance(result.values["count"], int)
    assert result.forward_passes == 1 == spy.calls.count("forward")
    assert result.draft_tokens_accepted == result.draft_tokens > 0
    assert set(result.timings) == {"prefix_s", "decode_s"} and result.seconds > 0


def test_prefix_state_is_reused_across_questions(tiny_fp32):
    engine = LMEngine(tiny_fp32)
    extractor = Extractor(engine, use_fast_path=False, on_disagreement="decode")
    extractor._with_model(SHIP, SHIP_QUESTIONS[0])
    entries_after_first = engine.prefix_cache_entries
    state = engine.prefix_state(engine.encode(prompt_parts(SHIP, "x")[0]))
    extractor._with_model(SHIP, SHIP_QUESTIONS[1])
    assert engine.prefix_cache_entries == entries_after_first == 1
    assert engine.prefix_state(engine.encode(prompt_parts(SHIP, "y")[0])) is state


# ---- (d) on_disagreement="miss" ---------------------------------------------------------------------------


def test_miss_policy_refuses_when_the_model_rejects_the_draft(engine):
    rejected = accepted = 0
    for question in SHIP_QUESTIONS:
        if draft_values(SHIP.template, SHIP.params, question) is None:
            continue
        decoded = model_read(engine, SHIP, question, use_draft=True)
        strict = Extractor(engine, use_fast_path=False, on_disagreement="miss")
        if decoded.draft_tokens_accepted == decoded.draft_tokens:
            accepted += 1
            same = strict._with_model(SHIP, question)
            assert (same.spans, same.path, same.forward_passes) == (decoded.spans, "lm-draft", 1)
            continue
        rejected += 1
        with pytest.raises(ExtractionError) as info:
            strict.extract(SHIP, question)
        assert info.value.reason == "extraction_failed"
        assert "disagree" in info.value.detail
    assert rejected >= 3 and accepted >= 1


def test_miss_is_the_default_policy(engine, gas):
    question = GAS_QUESTIONS[0]
    decoded = model_read(engine, gas, question, use_draft=True)
    assert decoded.draft_tokens_accepted < decoded.draft_tokens  # the random model reads it differently
    with pytest.raises(ExtractionError) as info:
        Extractor(engine, use_fast_path=False).extract(gas, question)
    assert info.value.reason == "extraction_failed" and "disagree" in info.value.detail


def test_miss_policy_without_a_draft_does_not_serve_a_single_reading(engine):
    """'miss' serves only what two independent readers agree on: no draft, no answer. Free text is the one thing
    no aligner can place: the draft leaves it to the model (below)."""
    question = "Ship 3 boxes by air or by sea."  # two modes named: no draft
    assert draft_values(SHIP.template, SHIP.params, question) is None
    for extractor in (
        Extractor(engine, use_fast_path=False, on_disagreement="miss"),
        Extractor(engine, use_fast_path=False, use_draft=False, on_disagreement="miss"),
    ):
        with pytest.raises(ExtractionError) as info:
            extractor.extract(SHIP, question)
        assert info.value.reason == "extraction_failed"
    assert draft_values(NAME.template, NAME.params, "Name the river Thames.") == {"river": None}
    with pytest.raises(ExtractionError):
        Extractor(engine, use_fast_path=False, use_draft=False, on_disagreement="miss").extract(NAME, "Name the Thames.")
    served = Extractor(engine, use_fast_path=False, on_disagreement="decode").extract(NAME, "Name the river Thames.")
    assert served.path == "lm-draft" and served.values["river"].strip() in "Name the river Thames."


TRIP = EntryPoint(
    id="trip-mode",
    description="How boxes travel on a trip whose length the answer does not depend on",
    template="Ship the boxes by {mode} on a {days} day trip.",
    question="Ship the boxes by air on a 2 day trip.",
    params=(
        Param("mode", "transport mode", type=str, original="air", examples=("sea",), choices=("air", "sea", "road")),
        Param("days", "days of the trip, not read by the reasoning", type=int, original=2, examples=(4,), minimum=1),
    ),
    root="mode",
    unread=frozenset({"days"}),
)
TRIP_QUESTIONS = [f"Ship the {n} boxes by {mode} on a {d} day trip, {k} km" for n, mode, d, k in
                  [(7, "air", 2, 300), (12, "sea", 4, 80), (9, "road", 6, 45), (4, "air", 3, 12), (15, "sea", 9, 700),
                   (21, "road", 30, 5), (3, "air", 5, 14), (40, "sea", 12, 2)]]


def test_the_model_need_not_agree_on_a_number_the_reasoning_never_reads(engine):
    """Agree-or-miss asks the model to agree with the draft on every value the answer depends on: where it first
    disagrees in a slot the compiled reasoning never reads (and only unread slots follow), the draft is served; where
    it disagrees on a read slot, or on any slot of an entry that reads them all, the question misses as before."""
    everything_read = dataclasses.replace(TRIP, unread=frozenset())
    strict = Extractor(engine, use_fast_path=False, on_disagreement="miss")
    seen = set()
    for question in TRIP_QUESTIONS:
        draft = draft_values(TRIP.template, TRIP.params, question)
        assert draft is not None
        reading = model_read(engine, TRIP, question, use_draft=True).spans
        differ = {n for n in draft if reading.get(n) != draft[n]}
        assert "mode" not in differ  # the question names the mode: the model has nothing to decide there
        if not differ:
            seen.add("agrees")
            assert strict.extract(TRIP, question).spans == draft
        elif differ <= {"days"}:
            seen.add("unread only")
            assert strict.extract(TRIP, question).spans == draft  # the draft's value, which the guard judges
            with pytest.raises(ExtractionError, match="disagree"):
                strict.extract(everything_read, question)
    assert "unread only" in seen, seen
    days_read = dataclasses.replace(TRIP, params=(TRIP.params[1], TRIP.params[0]),
                                    template="Ship the boxes on a {days} day trip by {mode}.", unread=frozenset({"mode"}))
    disagreed = 0
    for question in TRIP_QUESTIONS:  # the slot it disagrees on comes first and is read: not served
        draft = draft_values(days_read.template, days_read.params, question)
        if model_read(engine, days_read, question, use_draft=True).spans != draft:
            disagreed += 1
            with pytest.raises(ExtractionError, match="disagree"):
                strict.extract(days_read, question)
    assert disagreed


def test_unread_parameters_must_be_parameters_of_the_entry():
    with pytest.raises(DefinitionError, match="unread"):
        dataclasses.replace(TRIP, unread=frozenset({"weeks"}))


# ---- (e) validation ---------------------------------------------------------------------------------------


def test_validate_spans(gas):
    good = {"moles": "a dozen", "temperature": "-40", "temperature_unit": "Fahrenheit", "volume": "3 1/2",
            "volume_unit": "cubic metres"}
    assert validate_spans(gas, good) == {"moles": 12.0, "temperature": -40.0, "temperature_unit": "fahrenheit",
                                         "volume": 3.5, "volume_unit": "cubic metres"}
    for name, bad in [("moles", "-5"), ("moles", "0"), ("temperature", "-500"), ("temperature_unit", "rankine"),
                      ("volume", "lots"), ("volume", "")]:
        with pytest.raises(ExtractionError) as info:
            validate_spans(gas, {**good, name: bad})
        assert info.value.reason == "validation_failed"
        assert repr(name) in info.value.detail
    with pytest.raises(ExtractionError, match="validation_failed"):
        validate_spans(gas, {k: v for k, v in good.items() if k != "volume"})


@pytest.mark.parametrize("use_draft", [True, False], ids=["draft", "no-draft"])
def test_out_of_domain_value_through_the_fast_path_and_the_model(engine, use_draft):
    """The template matches but count=0 is out of domain; the model then reads the question, and no span it
    can copy is a valid count, so the MISS reason is validation_failed whatever the weights."""
    question = "Ship 0 boxes by air."
    text = question.strip()
    substrings = {text[i:j] for i in range(len(text)) for j in range(i + 1, len(text) + 1)}
    for span in substrings:
        with pytest.raises(ParameterValidationError):
            read_param(SHIP.param("count"), span)
    with pytest.raises(ExtractionError) as info:
        Extractor(engine, use_draft=use_draft, on_disagreement="decode").extract(SHIP, question)
    assert info.value.reason == "validation_failed"
    assert "'count'" in info.value.detail


def test_out_of_domain_value_without_a_model_is_a_validation_miss(gas):
    question = "What is the pressure, in kPa, of -5 mol of an ideal gas at 25 degrees celsius held in a 5 litres container?"
    with pytest.raises(ExtractionError) as info:
        Extractor(None).extract(gas, question)
    assert info.value.reason == "validation_failed"


# ---- (f) no model, no template match ----------------------------------------------------------------------


def test_no_engine_and_no_template_match(gas):
    # a short instruction that names another object is another question; the model is needed to read it
    for entry, question in [(gas, "How hot is the gas?"), (SHIP, "Ship 7 crates by air.")]:
        with pytest.raises(ExtractionError) as info:
            Extractor(None).extract(entry, question)
        assert info.value.reason == "extraction_failed"
    with pytest.raises(ExtractionError, match="extraction_failed"):
        Extractor(None, use_fast_path=False).extract(SHIP, "Ship 7 boxes by air.")
    # punctuation is not part of the question: the aligned path reads it without a model
    served = Extractor(None).extract(SHIP, "ship 7 boxes by air")
    assert (served.path, served.values) == ("aligned", {"count": 7, "mode": "air"})


# ---- (g) the template fast path -----------------------------------------------------------------------------


FAST = [
    (
        "What is the pressure, in kPa, of twelve mol of an ideal gas at 1,200 degrees fahrenheit held in a 5 litres container?",
        {"moles": 12.0, "temperature": 1200.0, "temperature_unit": "fahrenheit", "volume": 5.0, "volume_unit": "litres"},
    ),
    (
        "What is the pressure, in kPa, of a dozen mol of an ideal gas at -40 degrees fahrenheit held in a 2 millilitres "
        "container?",
        {"moles": 12.0, "temperature": -40.0, "temperature_unit": "fahrenheit", "volume": 2.0, "volume_unit": "millilitres"},
    ),
    (
        "what is the pressure, in kPa, of 3 1/2 mol of an ideal gas at 0.5 degrees KELVIN held in a 8 cubic metres container?",
        {"moles": 3.5, "temperature": 0.5, "temperature_unit": "kelvin", "volume": 8.0, "volume_unit": "cubic metres"},
    ),
]


@pytest.mark.parametrize(("question", "expected"), FAST, ids=["twelve", "a-dozen", "fraction"])
def test_fast_path_binds_new_values_without_a_model(gas, question, expected):
    result = Extractor(None).extract(gas, question)
    assert result.path == "template"
    assert result.values == expected
    assert all(type(result.values[k]) is type(v) for k, v in expected.items())
    assert result.forward_passes == 0 and result.draft_tokens == 0
    assert set(result.spans) == set(expected)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Ship twelve boxes by SEA.", {"count": 12, "mode": "sea"}),
        ("ship a dozen boxes by road.", {"count": 12, "mode": "road"}),
        ("Ship 101 boxes by air.", None),  # above the maximum: the fast path declines
        ("Ship 3 1/2 boxes by air.", None),  # not an int: the fast path declines
        ("Ship 7 boxes  by\nair.", {"count": 7, "mode": "air"}),
    ],
)
def test_fast_path_types_and_domains(tiny_fp32, question, expected):
    extractor = Extractor(NoCallsEngine(tiny_fp32))
    if expected is None:
        with pytest.raises(AssertionError, match="the template fast path used engine"):
            extractor.extract(SHIP, question)  # it had to ask the model
        return
    result = extractor.extract(SHIP, question)
    assert (result.path, result.values, result.forward_passes) == ("template", expected, 0)
    assert type(result.values["count"]) is int


def test_fast_path_never_touches_the_engine(tiny_fp32, gas):
    extractor = Extractor(NoCallsEngine(tiny_fp32))
    for question, expected in FAST:
        result = extractor.extract(gas, question)
        assert (result.path, result.values, result.forward_passes) == ("template", expected, 0)


def test_different_literal_text_takes_the_model_path(engine, gas):
    spy = CountingEngine(engine)
    result = Extractor(spy).extract(SHIP, "9 air")
    assert result.path == "lm-draft" and "forward" in spy.calls
    question = FAST[0][0].replace("held in", "kept in")
    with pytest.raises(ExtractionError) as info:
        Extractor(None).extract(gas, question)
    assert info.value.reason == "extraction_failed"
    spy = CountingEngine(engine)
    try:
        assert Extractor(spy).extract(gas, question).path != "template"
    except ExtractionError:  # the tiny model's reading may be refused; the model was asked all the same
        pass
    assert "forward" in spy.calls


def test_fast_path_can_be_disabled(engine):
    spy = CountingEngine(engine)
    try:
        assert Extractor(spy, use_fast_path=False).extract(SHIP, "Ship 9 boxes by air.").path == "lm-draft"
    except ExtractionError:
        pass
    assert "forward" in spy.calls


def test_fast_path_on_the_entrys_own_question(tiny_fp32, gas):
    """'{volume} {volume_unit}': the choice slot anchors the split ('10' / 'litres', not '1' / '0 litres')."""
    result = Extractor(NoCallsEngine(tiny_fp32)).extract(gas, gas.question)
    assert result.path == "template" and result.values == gas.original_values


def test_fast_path_with_a_multi_word_value_before_a_choice_slot(gas):
    for written, value in [("3 1/2", 3.5), ("a dozen", 12.0), ("1,200", 1200.0), ("twelve", 12.0)]:
        question = gas.question.replace("a 10 litres", f"a {written} LITRES")
        result = Extractor(None).extract(gas, question)
        assert result.path == "template"
        assert (result.values["volume"], result.values["volume_unit"]) == (value, "litres")
        assert result.spans["volume"] == written


# ---- the real target model (slow) ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def smollm2():
    """The real artefact (built once into build/target-models, ~2.5 min the first time) and its load time."""
    from builder.target_model import build_target_model

    artefact = build_target_model(cache_dir=REPO / "build" / "target-models", progress=lambda _m: None)
    started = time.perf_counter()
    engine = LMEngine(artefact)
    return engine, time.perf_counter() - started


@pytest.mark.slow
def test_real_smollm2_artefact(smollm2, gas):
    engine, load_seconds = smollm2
    assert engine.manifest["recipe"] == DEFAULT_RECIPE and engine.manifest["vocab_size"] == 49152
    assert load_seconds < 10, f"the SmolLM2 artefact took {load_seconds:.2f}s to load"

    prompt = chatml("What is the capital of France?")
    stop = engine.encode("<|im_end|>")
    answer = engine.decode(engine.greedy(engine.encode(prompt), max_new_tokens=24, stop_ids=stop))
    assert "Paris" in answer, answer

    drafted = Extractor(engine, use_fast_path=False, use_draft=True).extract(gas, gas.question)  # default "miss"
    plain = Extractor(engine, use_fast_path=False, use_draft=False, on_disagreement="decode").extract(gas, gas.question)
    assert drafted.values == plain.values == gas.original_values
    assert drafted.spans == plain.spans
    assert (drafted.path, plain.path) == ("lm-draft", "lm")
    assert drafted.forward_passes == 1 and drafted.draft_tokens_accepted == drafted.draft_tokens, (
        f"SmolLM2 should accept the aligner's draft of the original question whole "
        f"({drafted.draft_tokens_accepted}/{drafted.draft_tokens} tokens, {drafted.forward_passes} passes; "
        f"load {load_seconds:.2f}s)"
    )
    assert plain.forward_passes > 1


@pytest.mark.slow
def test_real_smollm2_out_of_domain_question(smollm2, gas):
    engine, _ = smollm2
    question = gas.question.replace("of 2 mol", "of -5 mol")
    with pytest.raises(ExtractionError) as info:
        served = Extractor(engine).extract(gas, question)
        pytest.fail(f"served {served.values} via {served.path}")
    assert info.value.reason == "validation_failed"


class _ClosesEarly(Extractor):
    """A reader that ends every value after its first token (as a small model does with '21' → '2')."""

    def _choose(self, hidden, allowed):
        closers = sorted((t for t in allowed if self.engine.token_text(t).startswith('"')),
                         key=lambda t: -len(self.engine.token_text(t)))  # '",' as the draft spells it
        first = [t for t in allowed if self.engine.token_text(t) in ("sea", "2")]  # the draft's first tokens
        return (closers or first or allowed)[0]


def test_a_value_cut_short_by_the_model_is_not_agreement(engine):
    """The machine finishes when the model closes the last value early; that must not pass for agreement."""
    entry = EntryPoint(
        id="count-late",
        description="boxes shipped",
        template="Ship {mode} boxes: {count}.",
        params=(
            Param("mode", "transport mode", type=str, original="air", choices=("air", "sea")),
            Param("count", "number of boxes", type=int, original=21, minimum=1, maximum=100),
        ),
        root="ship boxes",
    )
    question = "In 2 trips by sea, please ship 21 boxes."  # "2" is a whole number of the question too
    assert len(engine.encode("21")) == 2  # digits are single tokens, so '2' is a proper prefix
    with pytest.raises(ExtractionError) as info:
        _ClosesEarly(engine, use_fast_path=False, on_disagreement="miss").extract(entry, question)
    assert info.value.reason == "extraction_failed", info.value.detail
    assert "disagree after" in info.value.detail, info.value.detail
    decoded = _ClosesEarly(engine, use_fast_path=False, on_disagreement="decode")._with_model(entry, question)
    assert decoded.spans == {"mode": "sea", "count": "2"}  # 'decode' serves the model's own reading


def test_a_value_cannot_close_inside_a_number_of_the_question(engine):
    """'2' out of '21' (or '5' out of '0.5') is no number the question states: the machine does not let the model
    close there, so even a reader that closes as early as it can copies the whole number."""
    entry = EntryPoint(
        id="count-late", description="boxes shipped", template="Ship {mode} boxes: {count}.",
        params=(Param("mode", "transport mode", type=str, original="air", choices=("air", "sea")),
                Param("count", "number of boxes", type=int, original=21, minimum=1, maximum=100)),
        root="ship boxes",
    )
    decoded = _ClosesEarly(engine, use_fast_path=False, on_disagreement="decode")._with_model(entry, "By sea, please ship 21 "
                                                                                                     "boxes.")
    assert decoded.spans == {"mode": "sea", "count": "21"}


class _ReadsRightSpellsClosersShort(Extractor):
    """A reader that gets every value right but closes each with a bare '"' where the draft has '",'."""

    truth = ("sea", "21")

    def _verify(self, machine, draft_ids, hidden_rows):
        self.machine = machine
        return super()._verify(machine, draft_ids, hidden_rows)

    def _choose(self, hidden, allowed):
        value, target = self.machine._value_text, self.truth[self.machine._slot]
        texts = {t: self.engine.token_text(t) for t in allowed}
        closers = [t for t in allowed if texts[t].startswith('"')]
        if value == target or not target.startswith(value):  # done, or steered off its own reading: close
            return min(closers, key=lambda t: len(texts[t]))
        return next(t for t in allowed if texts[t] and target.startswith(value + texts[t]))


def test_the_spelling_of_a_closing_quote_is_not_a_disagreement(engine):
    """'"' and '",' both end a value; a model preferring the other spelling still agrees with the draft."""
    entry = EntryPoint(
        id="count-late",
        description="boxes shipped",
        template="Ship {mode} boxes: {count}.",
        params=(
            Param("mode", "transport mode", type=str, original="air", choices=("air", "sea")),
            Param("count", "number of boxes", type=int, original=21, minimum=1, maximum=100),
        ),
        root="ship boxes",
    )
    reader = _ReadsRightSpellsClosersShort(engine, use_fast_path=False, on_disagreement="miss")
    served = reader.extract(entry, "By sea, please ship 21 boxes.")
    assert served.values == {"mode": "sea", "count": 21} and served.path == "lm-draft"
    assert served.forward_passes == 1


class _PrefersTheExamplesOption(_ReadsRightSpellsClosersShort):
    """Reads numbers right but, asked about the mode, answers the worked example's 'air'."""

    truth = ("air", "21")

    def _verify(self, machine, draft_ids, hidden_rows):
        self.machine = machine
        return Extractor._verify(self, machine, draft_ids, hidden_rows)


def test_an_option_the_question_names_is_not_put_to_the_model(engine):
    """'By sea' names one option of the choice word for word; the model's preference is not asked."""
    entry = EntryPoint(
        id="count-late",
        description="boxes shipped",
        template="Ship {mode} boxes: {count}.",
        params=(
            Param("mode", "transport mode", type=str, original="air", choices=("air", "sea")),
            Param("count", "number of boxes", type=int, original=21, minimum=1, maximum=100),
        ),
        root="ship boxes",
    )
    reader = _PrefersTheExamplesOption(engine, use_fast_path=False, on_disagreement="miss")
    served = reader.extract(entry, "By sea, please ship 21 boxes.")
    assert served.values == {"mode": "sea", "count": 21}
    from edge_runtime.read.extractor import _slot_spec

    mode = entry.params[0]  # decoding without a draft leaves the model the named option only, too
    assert _slot_spec(mode, "By sea, please ship 21 boxes.").choices == ("sea",)
    assert _slot_spec(mode, "By air or sea, please ship 21 boxes.").choices == ("air", "sea")
    with pytest.raises(ExtractionError):  # 'air or sea': no single option named, so no draft and no answer
        reader.extract(entry, "By air or sea, please ship 21 boxes.")


# ---- an impossible reading of the model ------------------------------------------------------------------

RISE = EntryPoint(
    id="rise", description="a price after yearly rises",
    template="A toy costs ${price} and its price rises 5% a year for {years} years. What does it cost then?",
    params=(Param("price", "the toy's price now, in dollars", type=float, original=120, minimum=0),
            Param("years", "how many years the price rises", type=int, original=3, minimum=0, maximum=1000)),
    root="rise",
)
RISE_QUESTION = "The toy is priced at $120 today and its price rises 5% a year for three years. What does it cost then?"


def test_a_reading_that_puts_one_stated_number_in_two_slots_is_impossible():
    from edge_runtime.read.extractor import _over_used

    assert _over_used(RISE, {"price": "120", "years": "120"}, RISE_QUESTION) == {"price", "years"}
    assert _over_used(RISE, {"price": "120", "years": "three"}, RISE_QUESTION) == set()
    stated_twice = RISE_QUESTION.replace("three years", "120 years")  # stated twice, it may fill two slots
    assert _over_used(RISE, {"price": "120", "years": "120"}, stated_twice) == set()


class _ScriptedReader(Extractor):
    """A model whose greedy reading is ``reading`` and whose second choice is the draft's token (third when
    ``draft_rank`` says so): scores 3 for the reading's token, ``3 - draft_rank`` for the draft's, 0 else."""

    reading = {"price": "120", "years": "120"}
    draft = {"price": "120", "years": "three"}
    draft_rank = 1

    def _verify(self, machine, draft_ids, hidden_rows):
        self.machine = machine
        return super()._verify(machine, draft_ids, hidden_rows)

    def _continues(self, machine, token, values) -> bool:
        text = self.engine.token_text(token)
        value, target = machine._value_text, values[machine.slots[machine._slot].name]
        if value == target:
            return text.startswith('"')
        return bool(text) and target.startswith(value + text)

    def _scores(self, machine, hidden, allowed):
        return np.array([3.0 if self._continues(machine, t, self.reading) else
                         3.0 - self.draft_rank if self._continues(machine, t, self.draft) else 0.0 for t in allowed])

    def _choose(self, hidden, allowed):
        scores = self._scores(self.machine, hidden, allowed)
        return allowed[int(np.argmax(scores))]


def test_the_draft_is_served_where_the_models_only_disagreement_is_an_impossible_reading(engine):
    assert draft_values(RISE.template, RISE.params, RISE_QUESTION) == _ScriptedReader.draft
    served = _ScriptedReader(engine, use_fast_path=False, impossible_rereads=2).extract(RISE, RISE_QUESTION)
    assert served.path == "lm-reread" and served.values == {"price": 120, "years": 3}
    assert served.forward_passes >= 2  # the verifying pass, then the model's own reading


def test_a_reread_runs_on_spare_capacity_and_gives_way_to_other_requests(engine, monkeypatch):
    """The reread's passes wait for an idle model; while another request's pass holds it past ``REREAD_SECONDS`` the
    question misses as it would without rereads, and the model serves the others undisturbed."""
    import edge_runtime.read.extractor as extractor_module

    monkeypatch.setattr(extractor_module, "REREAD_SECONDS", 0.2)
    reader = _ScriptedReader(engine, use_fast_path=False, impossible_rereads=2)
    engine._run_slots.acquire(False, None)  # another request's pass is running
    try:
        with pytest.raises(ExtractionError) as busy:
            reader.extract(RISE, RISE_QUESTION)
    finally:
        engine._run_slots.release(False)
    assert busy.value.reason == "extraction_failed" and "disagree" in busy.value.detail
    assert reader.extract(RISE, RISE_QUESTION).path == "lm-reread"  # the model idle again: the reread serves


class _ReadsAnotherStatedNumber(_ScriptedReader):
    reading = {"price": "120", "years": "5"}  # "5% a year": a wrong reading, but one the question can have


class _DraftIsThird(_ScriptedReader):
    def _scores(self, machine, hidden, allowed):
        scores = super()._scores(machine, hidden, allowed)
        scores[int(np.argmin(scores))] = 2.5  # a third reading between the model's and the draft's
        return scores


class _DisagreesTwice(_ScriptedReader):
    reading = {"price": "5", "years": "5"}  # impossible too, but it agrees with the draft on no slot


@pytest.mark.parametrize("reader", [_ReadsAnotherStatedNumber, _DraftIsThird, _DisagreesTwice])
def test_other_disagreements_still_miss(engine, reader):
    with pytest.raises(ExtractionError) as info:
        reader(engine, use_fast_path=False, impossible_rereads=2).extract(RISE, RISE_QUESTION)
    assert info.value.reason == "extraction_failed" and "disagree" in info.value.detail
    with pytest.raises(ExtractionError):  # and with the re-read off (the default), the impossible reading misses too
        _ScriptedReader(engine, use_fast_path=False).extract(RISE, RISE_QUESTION)


CARGO_QUESTION = "Please send 12 boxes of frozen fish by sea, 5 days at most."


class _ReadsCargo(_ScriptedReader):
    draft = reading = {"count": "12", "goods": "frozen fish", "mode": "sea", "days": "5"}


class _ReadsTheDaysAsTheCount(_ReadsCargo):
    reading = {**_ReadsCargo.reading, "count": "5"}


class _ReadsTheCountAsTheDays(_ReadsCargo):
    reading = {**_ReadsCargo.reading, "days": "12"}


def test_free_text_is_read_by_the_model_and_the_numbers_around_it_still_need_two_readers(engine):
    """The aligner drafts the numbers and choices and leaves the goods ("frozen fish") to the model: one pass checks
    the draft up to the free text, the model copies the free text from the question, one pass checks the rest. A
    disagreement on a drafted value, before or after the free text, is still a miss."""
    served = _ReadsCargo(engine, use_fast_path=False).extract(CARGO, CARGO_QUESTION)
    assert served.path == "lm-draft"
    assert served.values == {"count": 12, "goods": "frozen fish", "mode": "sea", "days": 5}
    assert 3 <= served.forward_passes < model_read(engine, CARGO, CARGO_QUESTION, use_draft=False).forward_passes + 3
    assert served.draft_tokens_accepted == served.draft_tokens > 0
    assert not served.guarded  # nobody judged the free text before the pass: the runtime's guard reads it after
    for reader, slot in ((_ReadsTheDaysAsTheCount, "count"), (_ReadsTheCountAsTheDays, "days")):
        with pytest.raises(ExtractionError) as info:
            reader(engine, use_fast_path=False).extract(CARGO, CARGO_QUESTION)
        assert info.value.reason == "extraction_failed" and f"disagree on {slot}" in info.value.detail
    checked: list[dict] = []
    guarded = _ReadsCargo(engine, use_fast_path=False, draft_check=lambda e, q, v: checked.append(v))
    assert guarded.extract(CARGO, CARGO_QUESTION).values["goods"] == "frozen fish"
    assert checked == []  # the draft check cannot judge values the model has not read yet: the guard runs after IS2


PARCEL_QUESTION = "What is the postage for a 23 kg parcel with frozen salmon fillets going to a local address?"


@pytest.mark.parametrize(("value", "why"), [
    ("frozen salmon fillets", None),
    ("a local address", "holds the value of zone"),  # the zone's drafted option: one stated thing fills one slot
    ("local", "holds the value of zone"),
    ("23", "a number"),
    ("a", "names nothing"),
    ("salmon", "part of a longer name"),  # "frozen salmon fillets" names the goods; "salmon" is cut out of it
    ("frozen salmon", "part of a longer name"),
    ("postage", None),  # a whole phrase of its own: the model's choice, which the free text has no second reader for
])
def test_a_free_text_reading_must_be_a_whole_description_of_its_own(value, why):
    from edge_runtime.read.draft import free_text_conflict

    conflict = free_text_conflict(value, {"weight": "23", "contents": None, "zone": "local"}, PARCEL_QUESTION)
    assert (conflict is None) if why is None else (why in conflict)


def test_a_text_amount_is_drafted_from_the_numbers_and_free_text_is_left_to_the_model(example_registry):
    recipe = example_registry.entries["recipe-ingredient-scaling"]
    draft = draft_values(recipe.template, recipe.params, "My recipe uses two and a half cups of dark chocolate for 6 "
                         "servings. How many cups of dark chocolate for 15 servings?")
    assert draft == {"quantity": "two and a half", "unit": "cups", "ingredient": None, "servings": "6", "wanted": "15"}


def test_the_models_reading_is_not_spent_on_a_draft_the_guard_would_refuse(engine):
    asked = []

    def refuses(entry, question, values):
        asked.append(values)
        return "the guard refuses it"

    counting = CountingEngine(engine)
    reader = _ScriptedReader(counting, use_fast_path=False, impossible_rereads=2, draft_check=refuses)
    with pytest.raises(ExtractionError) as missed:
        reader.extract(RISE, RISE_QUESTION)
    assert asked == [{"price": 120.0, "years": 3}]
    assert counting.calls.count("forward") == 0  # decided before any pass: the model's agreement could not serve it
    assert missed.value.reason is MissReason.REASONING_CHANGED and "the guard refuses it" in str(missed.value)


def test_a_draft_the_guard_would_serve_is_still_verified_by_the_model(engine):
    counting = CountingEngine(engine)
    reader = _ScriptedReader(counting, use_fast_path=False, draft_check=lambda entry, question, values: None)
    with pytest.raises(ExtractionError) as missed:  # the scripted model disagrees with this draft
        reader.extract(RISE, RISE_QUESTION)
    assert counting.calls.count("forward") == 1 and missed.value.reason is MissReason.EXTRACTION_FAILED


def test_a_draft_the_guard_cannot_judge_is_refused_without_a_pass(engine):
    def breaks(entry, question, values):
        raise ValueError("no idea")

    counting = CountingEngine(engine)
    reader = _ScriptedReader(counting, use_fast_path=False, draft_check=breaks)
    with pytest.raises(ExtractionError) as missed:
        reader.extract(RISE, RISE_QUESTION)
    assert counting.calls.count("forward") == 0 and "could not judge" in str(missed.value)



class _PrefersTheSwap(_ScriptedReader):
    """Reads "120" twice, but scores the other repair of that reading ("three" dollars, 120 years) above the draft."""

    swap = {"price": "three", "years": "120"}

    def _scores(self, machine, hidden, allowed):
        return np.array([3.0 if self._continues(machine, t, self.swap) else
                         1.0 if self._continues(machine, t, self.draft) else 0.0 for t in allowed])

    def _choose(self, hidden, allowed):
        return next((t for t in allowed if self._continues(self.machine, t, self.reading)), allowed[0])


def test_the_draft_is_not_served_when_the_swapped_repair_reads_better(engine):
    with pytest.raises(ExtractionError) as info:
        _PrefersTheSwap(engine, use_fast_path=False, impossible_rereads=2).extract(RISE, RISE_QUESTION)
    assert "disagree" in info.value.detail


def test_values_the_draft_check_passed_are_marked_so_the_guard_is_not_asked_twice(engine):
    """Under the miss policy the draft check (the runtime's guard) judges the draft before the pass; a model path that
    serves the draft's values (here the re-read of an impossible reading) serves those very values, which IS2's guard
    would judge again (about 2 ms)."""
    asked = []
    checked = _ScriptedReader(engine, use_fast_path=False, impossible_rereads=2,
                              draft_check=lambda entry, question, values: asked.append(values))
    served = checked.extract(RISE, RISE_QUESTION)
    assert served.path is ServingPath.LM_REREAD and served.guarded and len(asked) >= 1
    unchecked = _ScriptedReader(engine, use_fast_path=False, impossible_rereads=2).extract(RISE, RISE_QUESTION)
    assert unchecked.values == served.values and not unchecked.guarded


def test_is2_skips_the_guard_only_for_values_its_own_guard_passed():
    """ReadStage does not judge a reading again when the extractor's draft check, built from the same guard, passed
    those values; a draft check of another guard (or none) does not count."""
    from edge_runtime.outcome import StageTimings
    from edge_runtime.read.reading import Reading
    from edge_runtime.read.stage import DraftCheck, ReadStage

    asked = []

    def guard(entry, question, values, path):
        asked.append(path)
        return None

    reading = Reading("rise", 1.0, {"price": 120.0, "years": 3}, ServingPath.LM_DRAFT, guarded=True)
    same = ReadStage({"rise": RISE}, Extractor(None, draft_check=DraftCheck(guard)), guard, model_attempts=1)
    same._guard(RISE_QUESTION, reading, StageTimings())
    assert asked == []
    other = ReadStage({"rise": RISE}, Extractor(None, draft_check=DraftCheck(lambda *a: None)), guard, model_attempts=1)
    other._guard(RISE_QUESTION, reading, StageTimings())
    assert asked == [ServingPath.LM_DRAFT]


# ---- (h) a value stated in another unit than its slot ------------------------------------------------------


def _caps(value_type: type) -> EntryPoint:
    return EntryPoint(
        id="caps", description="bottle caps", root="caps",
        template="He finds {caps} caps a day and each cap is worth ${value}. How much money does he make in a week?",
        params=(Param("caps", "caps a day", int, 6, minimum=0),
                Param("value", "dollars a cap", value_type, value_type(1), minimum=0)),
    )


def test_an_amount_in_cents_for_a_dollar_slot_is_read_in_dollars():
    """The entry's reasoning counts dollars: "30 cents" is 0.3 of them on every path, and an entry that takes a whole
    number of dollars cannot take it (a miss, never 30 dollars)."""
    question = "He finds 6 caps a day and each cap is worth 30 cents. How much money does he make in a week?"
    read = Extractor(None).extract(_caps(float), question)
    assert read.values == {"caps": 6, "value": 0.3}
    assert Extractor(None).extract(_caps(float), question.replace("30 cents", "$3")).values["value"] == 3.0
    with pytest.raises(ExtractionError) as info:
        Extractor(None).extract(_caps(int), question)
    assert info.value.reason == "validation_failed" and "question's unit" in info.value.detail


def test_a_slot_that_holds_a_clause_of_its_own_is_no_value():
    """"with {n}." read from "with four eggs which she then throws away.": the template path matched, but the slot
    says more than a number, and the template path has no guard to judge it."""
    entry = EntryPoint(id="bake", description="eggs", root="r", template="She bakes with {n}. How many are left?",
                       params=(Param("n", "eggs baked", int, 4, minimum=0),))
    with pytest.raises(ExtractionError) as info:
        Extractor(None).extract(entry, "She bakes with four eggs which she then throws away. How many are left?")
    assert info.value.reason == "validation_failed" and "words of its own" in info.value.detail
    assert Extractor(None).extract(entry, "She bakes with four eggs. How many are left?").values == {"n": 4}


@pytest.mark.parametrize("amount", ["9" * 400 + " cents", "0.000000001 cents", "-30 cents", "30 cents and 30 cents"])
@pytest.mark.parametrize("value_type", [float, int])
def test_hostile_amounts_in_cents_give_a_value_or_a_clear_miss(amount, value_type):
    question = f"He finds 6 caps a day and each cap is worth {amount}. How much money does he make in a week?"
    try:
        read = Extractor(None).extract(_caps(value_type), question)
    except ExtractionError as exc:
        assert exc.reason in ("validation_failed", "extraction_failed")
    else:
        assert read.values["caps"] == 6

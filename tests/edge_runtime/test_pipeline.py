"""The pipeline: how many routed candidates the model path verifies (each costs a forward pass), the set-aside
reading, and a question's path stage to stage."""

from __future__ import annotations

import pytest
from fakes import FixedRouter

from edge_runtime.entries.context import NarrationStep
from edge_runtime.entries.metadata import EntryPoint, Param
from edge_runtime.entries.registry import Execution
from edge_runtime.errors import ExtractionError
from edge_runtime.options import PipelineOptions
from edge_runtime.pipeline import Pipeline
from edge_runtime.read.extractor import Extraction, Extractor


def _entry(entry_id: str, thing: str) -> EntryPoint:
    return EntryPoint(
        id=entry_id, description=f"counting {thing}", root=f"count the {thing}", answer_key="answer",
        template=f"Sam has {{a}} {thing} and buys {{b}} more {thing}. How many {thing} does Sam have?",
        params=(Param("a", f"{thing} at first", int, 3, minimum=0), Param("b", f"{thing} bought", int, 4, minimum=0)),
    )


ENTRIES = {"apples": _entry("apples", "apples"), "pears": _entry("pears", "pears")}


class _ModelReads(Extractor):
    """No template matches; the model path reads 'pears' only, and counts what it was asked to read."""

    def __init__(self) -> None:
        super().__init__(None, use_alignment=False)
        self.tried: list[str] = []

    def extract(self, entry, question, *, fast_paths=True):
        self.tried.append(entry.id)
        if entry.id != "pears":
            raise ExtractionError("extraction_failed", "the model and the aligner disagree")
        return Extraction({"a": 5, "b": 6}, {}, "lm-draft")


def _answerer(attempts: int) -> tuple[Pipeline, _ModelReads]:
    extractor = _ModelReads()

    def executor(digest, entry_id, source, values, timeout):
        return Execution({"answer": values["a"] + values["b"]}, [NarrationStep("f", "added")])

    answerer = Pipeline(name="t", version="1", digest="d", entries=ENTRIES, modules={k: "" for k in ENTRIES},
                        router=FixedRouter(("apples", 0.9), ("pears", 0.8)), threshold=0.5, extractor=extractor,
                        executor=executor, options=PipelineOptions(model_attempts=attempts))
    return answerer, extractor


def test_the_model_path_verifies_only_the_best_candidate_by_default():
    answerer, extractor = _answerer(PipelineOptions().model_attempts)
    answer = answerer.answer("Sam owns five fruits, then gets six more. How many fruits now?")
    assert not answer.hit and answer.miss_reason == "extraction_failed" and answer.entry_id == "apples"
    assert extractor.tried == ["apples"]  # one forward pass, not one per candidate


@pytest.mark.parametrize("attempts", [2, 3])
def test_more_attempts_verify_the_next_candidates_in_order(attempts):
    answerer, extractor = _answerer(attempts)
    answer = answerer.answer("Sam owns five fruits, then gets six more. How many fruits now?")
    assert answer.hit and answer.entry_id == "pears" and answer.answer == 11
    assert extractor.tried == ["apples", "pears"]


def test_a_template_question_is_served_from_the_exact_skeleton_without_a_search():
    answerer, extractor = _answerer(1)
    answerer.read.extractor = Extractor(None)  # the template path only

    def no_search(*args, **kwargs):
        raise AssertionError("the exact skeleton should have found the entry")

    answerer.route.skeleton.search = no_search
    answer = answerer.answer("Sam has 12 pears and buys twenty more pears. How many pears does Sam have?")
    assert answer.hit and answer.entry_id == "pears" and answer.path == "template" and answer.answer == 32


# ---- statements the question calls irrelevant ---------------------------------------------------------------
def _guarded(set_aside: bool, entries: dict[str, EntryPoint] = ENTRIES) -> Pipeline:
    from edge_runtime.read.guard import make_guard

    def executor(digest, entry_id, source, values, timeout):
        return Execution({"answer": values["a"] + values["b"]}, [NarrationStep("f", "added")])

    return Pipeline(name="t", version="1", digest="d", entries=entries, modules={k: "" for k in entries}, router=None,
                    threshold=0.5, extractor=Extractor(None), executor=executor, guard=make_guard(),
                    options=PipelineOptions(set_aside_disclaimers=set_aside))


def test_a_statement_the_question_calls_irrelevant_is_set_aside_and_narrated():
    question = ("Sam has 12 pears and buys 20 more pears. He also sees 7 plums at $3 each, but decides not to buy them. "
                "How many pears does Sam have?")
    assert not _guarded(set_aside=False).answer(question).hit  # the plums' numbers are not the entry's
    answer = _guarded(set_aside=True).answer(question)
    assert answer.hit and answer.entry_id == "pears" and answer.answer == 32 and answer.path == "template+set-aside"
    assert answer.narration[0].function == "set aside" and "7 plums" in answer.narration[0].text


@pytest.mark.parametrize("statement", [
    "He eats 4 pears, which does not affect his plans.",  # the question says so, but 4 pears is the entry's own count
    "He gives away 4 pears, but that is irrelevant.",
])
def test_a_set_aside_number_that_counts_what_the_entry_counts_is_not_set_aside(statement):
    question = f"Sam has 12 pears and buys 20 more pears. {statement} How many pears does Sam have?"
    answer = _guarded(set_aside=True).answer(question)
    first = _guarded(set_aside=False).answer(question)
    assert not answer.hit and (answer.miss_reason, answer.miss_detail) == (first.miss_reason, first.miss_detail)


def test_a_question_that_misses_either_way_reports_the_question_as_written():
    question = ("Sam has 12 pears and buys 20 more pears. He eats 3 pears. He also sees 7 plums, but decides not to buy "
                "them. How many pears does Sam have?")
    first = _guarded(set_aside=False).answer(question)
    answer = _guarded(set_aside=True).answer(question)
    assert not answer.hit and (answer.miss_reason, answer.miss_detail) == (first.miss_reason, first.miss_detail)


def test_a_template_that_holds_a_setting_aside_phrase_matches_as_written():
    entry = EntryPoint(
        id="venue", description="venue cost", root="venue cost", answer_key="answer",
        template="A venue charges {a} dollars, regardless of how many guests attend, and {b} dollars for food. What is the cost?",
        params=(Param("a", "flat fee", int, 200, minimum=0), Param("b", "food", int, 50, minimum=0)))
    answerer = _guarded(set_aside=True, entries={"venue": entry})
    answer = answerer.answer(entry.template.format(a=300, b=40), entry_id="venue")
    assert answer.hit and answer.path == "template" and answer.answer == 340
    assert all(step.function != "set aside" for step in answer.narration)


# ---- each stage's Miss, and the guard per bundle ---------------------------------------------------------------
def test_a_miss_in_execution_reports_the_reading_and_is_not_read_again():
    from edge_runtime.errors import DeadlineExceededError
    from edge_runtime.outcome import MissReason, ServingPath

    calls = []

    def slow(digest, entry_id, source, values, timeout):
        calls.append(values)
        raise DeadlineExceededError("ran past 0.1 s")

    pipeline = Pipeline(name="t", version="1", digest="d", entries=ENTRIES, modules={k: "" for k in ENTRIES},
                        router=None, threshold=0.5, extractor=Extractor(None), executor=slow)
    answer = pipeline.answer("Sam has 12 pears and buys 20 more pears. How many pears does Sam have?")
    assert not answer.hit and answer.miss_reason is MissReason.DEADLINE_EXCEEDED and answer.entry_id == "pears"
    assert answer.parameters == {"a": 12, "b": 20} and answer.path is ServingPath.TEMPLATE
    assert "ran past" in answer.miss_detail and len(calls) == 1
    assert set(answer.timings) == {"is1_ms", "is2_ms", "is3_ms", "is4_ms", "total_ms"}


class _DraftReads(Extractor):
    """No model-free path; the model path reads Sam's apples as the draft would."""

    def __init__(self) -> None:
        super().__init__(None, use_fast_path=False, use_alignment=False)

    def fast_path(self, entry, question):
        return None

    def extract(self, entry, question, *, fast_paths=True):
        return Extraction({"a": 5, "b": 6}, {}, "lm-draft")


def _apples(template: str) -> EntryPoint:
    return EntryPoint(id="e", description="apples", root="count apples", answer_key="answer", template=template,
                      params=(Param("a", "apples at first", int, 3, minimum=0), Param("b", "apples bought", int, 4, minimum=0)))


def test_two_bundles_with_one_entry_id_get_their_own_guard_verdicts():
    """An entry id names an entry within one bundle only: the guard of each bundle judges by its own template
    (the device's guard once cached its template facts by entry id, module-wide, and judged the second bundle's
    question by the first bundle's template)."""
    plain = _apples("Sam has {a} apples and buys {b} more apples. How many apples does Sam have?")
    eats = _apples("Sam has {a} apples and buys {b} more apples, then eats 3 of them. How many apples does Sam have?")
    question = "Sam has 5 apples and buys 6 more apples, then eats 3 of them. How many apples does Sam have?"

    def run(digest, entry_id, source, values, timeout):
        return Execution({"answer": values["a"] + values["b"] - 3}, [NarrationStep("f", "counted")])

    def pipeline(entry: EntryPoint, version: str) -> Pipeline:
        built = Pipeline.for_bundle(name="b", version=version, digest=version, entries={"e": entry}, modules={"e": ""},
                                    router=FixedRouter(("e", 0.9)), threshold=0.5, engine=None, executor=run)
        built.read.extractor = _DraftReads()
        return built

    for order in ((plain, eats), (eats, plain)):
        first, second = (pipeline(entry, str(i)) for i, entry in enumerate(order))
        assert first.guard is not None and first.guard is not second.guard
        for built, entry in ((first, order[0]), (second, order[1])):
            answer = built.answer(question)
            if entry is eats:
                assert answer.hit and answer.answer == 8, answer
            else:
                assert not answer.hit and answer.miss_reason == "reasoning_changed" and "'3'" in answer.miss_detail
    shared = pipeline(plain, "3").guard  # and one guard judging both judges each by its template
    assert shared(plain, question, {"a": 5, "b": 6}, "lm-draft") is not None
    assert shared(eats, question, {"a": 5, "b": 6}, "lm-draft") is None


def test_each_stage_imports_only_the_stages_before_it():
    """A question goes route → read → execute → answer: no stage reaches back into a later one (on the import
    graph, transitively), so each owns its step and the pipeline only hands results on."""
    from test_layout import EDGE, import_graph, reachable

    graph = import_graph(EDGE)
    order = ["route", "read", "execute", "answer"]
    for i, stage in enumerate(order):
        later = {f"edge_runtime.{s}.stage" for s in order[i + 1:]} | {"edge_runtime.pipeline"}
        assert not reachable(graph, f"edge_runtime.{stage}.stage") & later, stage


# ---- the skeleton search ranks, the aligned path decides ------------------------------------------------------
def _robe_bundle() -> dict[str, EntryPoint]:
    def entry(entry_id: str, template: str) -> EntryPoint:
        return EntryPoint(id=entry_id, description=entry_id, root=entry_id, answer_key="answer", template=template,
                          params=(Param("a", "first", int, 2, minimum=0), Param("b", "second", int, 1, minimum=0)))

    return {
        "robe": entry("robe", "A robe takes {a} bolts of blue fiber and {b} bolts of white fiber. How many bolts in "
                              "total does it take?"),
        "eggs": entry("eggs", "Janet's ducks lay {a} eggs per day and she eats {b} of them. How many eggs are left?"),
        "buses": entry("buses", "A school takes {a} students to a museum in {b} buses. How many students ride in "
                                "each bus?"),
    }


def test_a_question_with_every_object_renamed_is_read_on_the_aligned_path_below_the_old_floor():
    entries = _robe_bundle()
    question = "A scarf takes 3 skeins of red yarn and 2 skeins of green yarn. How many skeins in total does it take?"
    answerer = _guarded(set_aside=False, entries=entries)
    top = answerer.route.skeleton.search(question, k=1, min_score=0.0)[0]
    assert top.entry_id == "robe" and top.score < 0.25  # ranked first, yet under the floor a bigram score suggests
    answer = answerer.answer(question)
    assert answer.hit and answer.entry_id == "robe" and answer.path == "aligned" and answer.answer == 5
    strict = Pipeline(name="t", version="1", digest="d", entries=entries, modules={k: "" for k in entries},
                      router=None, threshold=0.5, extractor=Extractor(None), executor=answerer.execute.executor,
                      options=PipelineOptions(skeleton_min_score=0.25))
    assert not strict.answer(question).hit  # what the old floor did: the right template was never tried


def test_a_low_scoring_candidate_that_is_not_the_question_is_still_refused_by_the_aligner():
    answer = _guarded(set_aside=False, entries=_robe_bundle()).answer(
        "A scarf takes 3 skeins of red yarn and 2 skeins of green yarn. How many more red skeins than green are there?")
    assert not answer.hit

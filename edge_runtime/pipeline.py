"""IS1 → IS4 for one active bundle: a question goes route → read → execute → answer, stage to stage.

Each stage is one object in its stage's package (``route/stage.py``, ``read/stage.py``, ``execute/stage.py``,
``answer/stage.py``) that owns its step and raises a ``Miss`` (edge_runtime/errors.py) when the question cannot go
on; the pipeline only passes each stage's result to the next and turns a Miss into the MISS answer.

A ``Pipeline`` is an immutable snapshot of one bundle: activating another bundle builds a new one (with its own
guard) and swaps the reference, so calls in flight finish on the bundle they started with.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from edge_runtime.answer.result import Answer
from edge_runtime.answer.stage import AnswerStage
from edge_runtime.answer.verification import VerificationStatus
from edge_runtime.entries.context import NarrationStep
from edge_runtime.entries.metadata import EntryPoint
from edge_runtime.errors import Miss
from edge_runtime.execute.stage import ExecuteStage, Executor
from edge_runtime.options import PipelineOptions
from edge_runtime.outcome import STAGES, StageTimings
from edge_runtime.read.extractor import Extractor
from edge_runtime.read.packs import load_pack
from edge_runtime.read.packs.base import ReadingPack
from edge_runtime.read.stage import DraftCheck, Guard, ReadStage
from edge_runtime.route.stage import Router, RouteStage


class Pipeline:
    """Answers questions from one verified bundle."""

    def __init__(self, *, name: str, version: str, digest: str, entries: Mapping[str, EntryPoint],
                 modules: Mapping[str, str], router: Router | None, threshold: float, extractor: Extractor,
                 executor: Executor, guard: Guard | None = None,
                 verification: Mapping[str, VerificationStatus] | None = None,
                 options: PipelineOptions | None = None, verified_scope: Mapping[str, tuple[str, ...]] | None = None,
                 verified_only: bool = False) -> None:
        self.name = name
        self.version = version
        self.digest = digest
        self.entries = entries
        self.modules = modules
        self.options = options or PipelineOptions()
        o = self.options
        self.route = RouteStage(self.bundle_id, entries, router, threshold, top_k=o.top_k,
                                skeleton_min_score=o.skeleton_min_score, skeleton_model_score=o.skeleton_model_score)
        self.read = ReadStage(entries, extractor, guard, model_attempts=o.model_attempts)
        self.execute = ExecuteStage(digest, modules, executor)
        self.finish = AnswerStage(entries, verification or {}, verified_scope, verified_only)

    @classmethod
    def for_bundle(cls, *, name: str, version: str, digest: str, entries: Mapping[str, EntryPoint],
                   modules: Mapping[str, str], router: Router | None, threshold: float, engine: Any,
                   executor: Executor, verification: Mapping[str, VerificationStatus] | None = None,
                   options: PipelineOptions | None = None, reading: ReadingPack | None = None,
                   verified_scope: Mapping[str, tuple[str, ...]] | None = None,
                   verified_only: bool = False) -> Pipeline:
        """The pipeline the runtime activates: the bundle's reading pack (``reading``; None: the default), its
        own guard from that pack (on the bundle's routing embedder) and an extractor on the shared ``engine``
        whose impossible-reading rescue asks that guard; ``verified_scope`` and ``verified_only`` as the bundle
        attests them (answer/stage.py)."""
        o = options or PipelineOptions()
        pack = reading if reading is not None else load_pack(None)
        guard = pack.make_guard(getattr(router, "embedder", None)) if o.guard else None
        extractor = Extractor(engine, on_disagreement=o.on_disagreement, use_alignment=o.use_alignment,
                              use_draft=o.use_draft, impossible_rereads=o.impossible_rereads if guard else None,
                              draft_check=DraftCheck(guard) if guard else None, reading=pack)
        return cls(name=name, version=version, digest=digest, entries=entries, modules=modules, router=router,
                   threshold=threshold, extractor=extractor, executor=executor, guard=guard,
                   verification=verification, options=o, verified_scope=verified_scope, verified_only=verified_only)

    @property
    def bundle_id(self) -> str:
        return f"{self.name}-{self.version}"

    @property
    def extractor(self) -> Extractor:
        return self.read.extractor

    @property
    def guard(self) -> Guard | None:
        return self.read.guard

    def verification_of(self, entry_id: str) -> VerificationStatus:
        """What the bundle attests for ``entry_id`` (unverified when it says nothing)."""
        return self.finish.verification_of(entry_id)

    def scope_of(self, entry_id: str) -> tuple[str, ...]:
        """The parameters ``entry_id`` is verified with at their original values only (none: every value)."""
        return self.finish.scope_of(entry_id)

    def answer(self, query: str, *, entry_id: str = "", timeout_s: float | None = None) -> Answer:
        """IS1-IS4 for ``query``. A miss is tried once more without the statements the question itself calls
        irrelevant ("..., which is irrelevant to her sales"), and only then: a template that contains such a
        phrase ("regardless of how many guests attend") still matches the question as written."""
        started = time.perf_counter()
        first = self.answer_once(query, entry_id=entry_id, timeout_s=timeout_s)
        if first.hit or not self.options.set_aside_disclaimers or first.miss_reason.final:
            return first
        pack = self.extractor.pack  # the bundle's reading pack: its set-aside phrases, if it has any
        try:
            aside = pack.set_aside(query)
        except Exception:  # noqa: BLE001 - the reading as written stands
            return first
        left = None if timeout_s is None else timeout_s - (time.perf_counter() - started)
        if aside is None or not aside.removed or (left is not None and left <= 0):
            return first
        second = self.answer_once(aside.question, entry_id=entry_id, timeout_s=left)
        counted = pack.set_aside_counts(aside, self.entries[second.entry_id].template) if second.hit else None
        if not second.hit or counted is not None:
            # the question as written is the one to report on; a set-aside number the entry counts ("he eats 4
            # pears, which does not affect ...") was reasoning after all
            first.timings["total_ms"] = (time.perf_counter() - started) * 1000
            return first
        said = "; ".join(repr(r) for r in aside.removed)
        note = f"The question says this does not count, so it was set aside: {said}"
        second.narration.insert(0, NarrationStep("set aside", note))
        for stage in STAGES:
            second.timings[stage] = second.timings.get(stage, 0.0) + first.timings.get(stage, 0.0)
        second.timings["total_ms"] = (time.perf_counter() - started) * 1000
        assert second.path is not None
        second.path = second.path.set_aside
        return second

    def answer_once(self, query: str, *, entry_id: str = "", timeout_s: float | None = None) -> Answer:
        """IS1-IS4 for ``query`` as written: each stage's result goes to the next; the first Miss is the answer."""
        timings = StageTimings()
        try:
            routes = self.route.plan(query, entry_id, timings)
            reading = self.read.read(query, routes, timings)
            verification = self.finish.verification_for(reading)  # outside a verified-only scope: miss unrun
            execution = self.execute.run(reading, timeout_s, timings)
            answer = self.finish.answer(query, reading, execution, timings, verification)
        except Miss as miss:
            answer = Answer(False, miss.reason, miss.detail, entry_id=miss.entry_id, similarity=miss.similarity,
                            parameters=miss.parameters, path=miss.path)
        answer.timings = timings.done()
        return answer

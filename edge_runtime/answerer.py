"""IS1 → IS4 for one active bundle: route, extract and validate, execute, package.

An ``Answerer`` is an immutable snapshot of one bundle: activating another bundle builds
a new one and swaps the reference, so calls in flight finish on the bundle they started.
Every failure is a MISS with a reason, never a guess.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

from edge_runtime.context import NarrationStep
from edge_runtime.errors import (
    ArcError,
    DeadlineExceededError,
    ExtractionError,
    ResourceExhaustedError,
)
from edge_runtime.extractor import Extractor, validate_spans
from edge_runtime.metadata import EntryPoint
from edge_runtime.registry import Execution
from edge_runtime.template_match import longest_literal, match_template, normalised

#: Runs compiled entry code: (bundle digest, entry id, module source, values, timeout seconds) -> Execution.
Executor = Callable[[str, str, str, dict[str, Any], float | None], Execution]
#: Checked after a successful IS2: (entry, question, extracted values, IS2 path) -> None, or why the
#: question needs other reasoning than the entry's (a MISS "reasoning_changed"); see edge_runtime/guard.py.
Guard = Callable[[EntryPoint, str, dict[str, Any], str], str | None]


class RouteCandidate(Protocol):
    entry_id: str
    similarity: float


class Router(Protocol):
    def route(self, query: str, k: int = 3) -> Sequence[RouteCandidate]: ...


@dataclass
class Answer:
    """Everything IS4 returns, HIT or MISS."""

    hit: bool
    miss_reason: str = ""
    miss_detail: str = ""
    entry_id: str = ""
    similarity: float = 0.0
    parameters: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] = field(default_factory=dict)
    answer: Any = None
    narration: list[NarrationStep] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    path: str = ""


class Answerer:
    """Answers questions from one verified bundle."""

    def __init__(
        self,
        *,
        name: str,
        version: str,
        digest: str,
        entries: dict[str, EntryPoint],
        modules: dict[str, str],
        router: Router | None,
        threshold: float,
        extractor: Extractor,
        executor: Executor,
        top_k: int = 3,
        guard: Guard | None = None,
    ) -> None:
        self.name = name
        self.version = version
        self.digest = digest
        self.entries = entries
        self.modules = modules
        self.router = router
        self.threshold = threshold
        self.extractor = extractor
        self.executor = executor
        self.top_k = top_k
        self.guard = guard
        self._choices = {
            eid: {p.name: tuple(str(c) for c in p.choices) for p in e.params if p.choices} for eid, e in entries.items()
        }
        self._literals = {eid: longest_literal(e.template) for eid, e in entries.items()}

    @property
    def bundle_id(self) -> str:
        return f"{self.name}-{self.version}"

    def answer(self, query: str, *, entry_id: str = "", timeout_s: float | None = None) -> Answer:
        started = time.perf_counter()
        timings = {"is1_ms": 0.0, "is2_ms": 0.0, "is3_ms": 0.0, "is4_ms": 0.0}

        def miss(reason: str, detail: str, **extra: Any) -> Answer:
            timings["total_ms"] = (time.perf_counter() - started) * 1000
            return Answer(False, reason, detail, timings=timings, **extra)

        if not self.entries:
            return miss("no_entry", "the active bundle has no entries")
        if entry_id and entry_id not in self.entries:
            return miss("no_entry", f"no entry {entry_id!r} in bundle {self.bundle_id}")

        # Fast path first: a question that is an entry's template with new values needs neither IS1 nor the model.
        t = time.perf_counter()
        chosen: tuple[str, float, dict[str, Any], str] | None = None
        text = normalised(query)
        for eid in [entry_id] if entry_id else self.entries:
            if self._literals[eid] not in text:
                continue  # cannot match: the template's longest literal text is absent
            entry = self.entries[eid]
            slots = match_template(entry.template, query, self._choices[eid])
            if slots is not None:
                try:
                    chosen = (eid, 1.0, validate_spans(entry, slots), "template")
                    break
                except ExtractionError:
                    continue
        timings["is2_ms"] += (time.perf_counter() - t) * 1000

        if chosen is None:
            t = time.perf_counter()
            if entry_id:
                candidates: list[tuple[str, float]] = [(entry_id, 1.0)]
            elif self.router is None:
                return miss("below_threshold", "this bundle has no routing index")
            else:
                routed = self.router.route(query, self.top_k)
                candidates = [(c.entry_id, float(c.similarity)) for c in routed if c.entry_id in self.entries]
            timings["is1_ms"] = (time.perf_counter() - t) * 1000
            if not candidates:
                return miss("below_threshold", "no entry is similar to the question")
            passing = [(eid, sim) for eid, sim in candidates if sim >= self.threshold]
            if not passing:
                eid, sim = candidates[0]
                return miss(
                    "below_threshold",
                    f"closest entry {eid!r} at similarity {sim:.3f} < threshold {self.threshold:.3f}",
                    entry_id=eid,
                    similarity=sim,
                )
            t = time.perf_counter()
            first_failure: ExtractionError | None = None
            first_candidate = passing[0]
            for eid, sim in passing:
                try:
                    extraction = self.extractor.extract(self.entries[eid], query)
                except ExtractionError as exc:
                    first_failure = first_failure or exc
                    continue
                chosen = (eid, sim, extraction.values, extraction.path)
                break
            timings["is2_ms"] += (time.perf_counter() - t) * 1000
            if chosen is None:
                assert first_failure is not None
                return miss(
                    first_failure.reason,
                    first_failure.detail,
                    entry_id=first_candidate[0],
                    similarity=first_candidate[1],
                )

        eid, sim, values, path = chosen
        if self.guard is not None:
            t = time.perf_counter()
            refusal = self.guard(self.entries[eid], query, values, path)
            timings["is2_ms"] += (time.perf_counter() - t) * 1000
            if refusal:
                return miss("reasoning_changed", refusal, entry_id=eid, similarity=sim, parameters=values, path=path)
        t = time.perf_counter()
        try:
            execution = self.executor(self.digest, eid, self.modules[eid], values, timeout_s)
        except DeadlineExceededError as exc:
            return miss("deadline_exceeded", str(exc), entry_id=eid, similarity=sim, parameters=values, path=path)
        except ResourceExhaustedError as exc:
            return miss("resource_exhausted", str(exc), entry_id=eid, similarity=sim, parameters=values, path=path)
        except ArcError as exc:
            return miss("execution_failed", str(exc), entry_id=eid, similarity=sim, parameters=values, path=path)
        timings["is3_ms"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        entry = self.entries[eid]
        result = dict(execution.result)
        answer_value = result.get(entry.answer_key) if entry.answer_key else None
        timings["is4_ms"] = (time.perf_counter() - t) * 1000
        timings["total_ms"] = (time.perf_counter() - started) * 1000
        return Answer(
            True,
            entry_id=eid,
            similarity=sim,
            parameters=values,
            result=result,
            answer=answer_value,
            narration=list(execution.narration),
            timings=timings,
            path=path,
        )

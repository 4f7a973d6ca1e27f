"""IS1 → IS4 for one active bundle: route, extract and validate, execute, package.

An ``Answerer`` is an immutable snapshot of one bundle: activating another bundle builds
a new one and swaps the reference, so calls in flight finish on the bundle they started.
Every failure is a MISS with a reason, never a guess.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Protocol, Sequence

from edge_runtime.answer.currency import in_question_currency
from edge_runtime.answer.domain import answer_value as answer_value_of
from edge_runtime.answer.domain import out_of_domain
from edge_runtime.answer.result import Answer
from edge_runtime.answer.verification import VerificationStatus
from edge_runtime.entries.context import NarrationStep
from edge_runtime.entries.metadata import EntryPoint
from edge_runtime.entries.registry import Execution
from edge_runtime.errors import (
    ArcError,
    DeadlineExceededError,
    ExtractionError,
    ResourceExhaustedError,
)
from edge_runtime.read.extractor import Extractor
from edge_runtime.read.packs import load_pack
from edge_runtime.route.skeleton_index import SkeletonIndex

#: Runs compiled entry code: (bundle digest, entry id, module source, values, timeout seconds) -> Execution.
Executor = Callable[[str, str, str, dict[str, Any], float | None], Execution]
#: Checked after a successful IS2: (entry, question, extracted values, IS2 path) -> None, or why the
#: question needs other reasoning than the entry's (a MISS "reasoning_changed"); see edge_runtime/read/guard.py.
Guard = Callable[[EntryPoint, str, dict[str, Any], str], str | None]


class RouteCandidate(Protocol):
    entry_id: str
    similarity: float


class Router(Protocol):
    def route(self, query: str, k: int = 3) -> Sequence[RouteCandidate]: ...


#: Misses a second reading cannot change: the bundle or the deadline, not the question's text.
_FINAL_MISSES = frozenset({"no_entry", "unknown_entry", "deadline_exceeded", "resource_exhausted", "execution_failed"})


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
        skeleton_min_score: float = 0.25,
        skeleton_model_score: float = 0.5,
        model_attempts: int = 1,
        set_aside_disclaimers: bool = True,
        verification: dict[str, VerificationStatus] | None = None,
    ) -> None:
        """``skeleton_min_score``: the least skeleton score at which an entry is tried on the fast paths
        (template, aligned: both strict, so this is permissive); ``skeleton_model_score``: the least at
        which an entry the embedding router missed is also tried on the model path; ``model_attempts``: how
        many candidates the model path verifies, best first (each costs a forward pass; measured on GSM-Plus
        and the example paraphrases, a second or third candidate served nothing the first did not and added
        6-30% passes: docs/target-model.md); ``set_aside_disclaimers``: a question that misses is answered once
        more without the statements it calls irrelevant (edge_runtime/read/disclaimers.py)."""
        self.name = name
        self.version = version
        self.digest = digest
        self.entries = entries
        self.verification = dict(verification or {})
        self.modules = modules
        self.router = router
        self.threshold = threshold
        self.extractor = extractor
        self.executor = executor
        self.top_k = top_k
        self.guard = guard
        self.skeleton = SkeletonIndex((eid, e.template) for eid, e in entries.items())
        self.skeleton_min_score = skeleton_min_score
        self.skeleton_model_score = skeleton_model_score
        self.model_attempts = model_attempts
        self.set_aside_disclaimers = set_aside_disclaimers

    def _fast_path(self, eid: str, query: str) -> tuple[tuple[str, float, dict[str, Any], str] | None, ExtractionError | None]:
        """(chosen, None) when ``query`` is ``eid``'s template with new values or reworded around its slots;
        (None, why) when it matched but a value is invalid; (None, None) when it does not match."""
        try:
            fast = self.extractor.fast_path(self.entries[eid], query)
        except ExtractionError as exc:
            return None, exc
        return ((eid, 1.0, fast.values, fast.path), None) if fast is not None else (None, None)

    @property
    def bundle_id(self) -> str:
        return f"{self.name}-{self.version}"

    def verification_of(self, entry_id: str) -> VerificationStatus:
        """What the bundle attests for ``entry_id`` (unverified when it says nothing)."""
        return self.verification.get(entry_id, VerificationStatus.UNVERIFIED)

    def answer(self, query: str, *, entry_id: str = "", timeout_s: float | None = None) -> Answer:
        """IS1-IS4 for ``query``, with the answering entry's verification status on a hit."""
        answer = self._answer_reading_aside(query, entry_id=entry_id, timeout_s=timeout_s)
        if answer.hit:
            answer.verification = self.verification_of(answer.entry_id)
        return answer

    def _answer_reading_aside(self, query: str, *, entry_id: str, timeout_s: float | None) -> Answer:
        """IS1-IS4 for ``query``. A miss is tried once more without the statements the question itself calls
        irrelevant ("..., which is irrelevant to her sales"), and only then: a template that contains such a
        phrase ("regardless of how many guests attend") still matches the question as written."""
        started = time.perf_counter()
        first = self._answer_once(query, entry_id=entry_id, timeout_s=timeout_s)
        if first.hit or not self.set_aside_disclaimers or first.miss_reason in _FINAL_MISSES:
            return first
        # the bundle's reading pack (the extractor's): its set-aside phrases, if it has any
        pack = getattr(self.extractor, "pack", None) or load_pack(None)
        try:
            aside = pack.set_aside(query)
        except Exception:  # noqa: BLE001 - the reading as written stands
            return first
        left = None if timeout_s is None else timeout_s - (time.perf_counter() - started)
        if aside is None or not aside.removed or (left is not None and left <= 0):
            return first
        second = self._answer_once(aside.question, entry_id=entry_id, timeout_s=left)
        counted = pack.set_aside_counts(aside, self.entries[second.entry_id].template) if second.hit else None
        if not second.hit or counted is not None:
            # the question as written is the one to report on; a set-aside number the entry counts ("he eats 4
            # pears, which does not affect ...") was reasoning after all
            first.timings["total_ms"] = (time.perf_counter() - started) * 1000
            return first
        said = "; ".join(repr(r) for r in aside.removed)
        second.narration.insert(0, NarrationStep("set aside", f"The question says this does not count, so it was set aside: {said}"))
        for stage in ("is1_ms", "is2_ms", "is3_ms", "is4_ms"):
            second.timings[stage] = second.timings.get(stage, 0.0) + first.timings.get(stage, 0.0)
        second.timings["total_ms"] = (time.perf_counter() - started) * 1000
        second.path += "+set-aside"
        return second

    def _answer_once(self, query: str, *, entry_id: str, timeout_s: float | None) -> Answer:
        started = time.perf_counter()
        timings = {"is1_ms": 0.0, "is2_ms": 0.0, "is3_ms": 0.0, "is4_ms": 0.0}

        def miss(reason: str, detail: str, **extra: Any) -> Answer:
            timings["total_ms"] = (time.perf_counter() - started) * 1000
            return Answer(False, reason, detail, timings=timings, **extra)

        def failed_fast(failure: tuple[str, float, ExtractionError]) -> Answer:
            failed_id, score, exc = failure
            return miss(exc.reason, exc.detail, entry_id=failed_id, similarity=score)

        if not self.entries:
            return miss("no_entry", "the active bundle has no entries")
        if entry_id and entry_id not in self.entries:
            return miss("unknown_entry", f"no entry {entry_id!r} in bundle {self.bundle_id}; ListEntries gives the ids")

        # IS1, first by skeleton: the entries whose template the question could be (reworded around the slots).
        # Fast paths: the template with new values, or the template reworded around its slots — no model.
        # The entries with the question's exact skeleton are tried first (one dictionary lookup); the
        # skeleton search only when none of them takes it.
        chosen: tuple[str, float, dict[str, Any], str] | None = None
        fast_failure: tuple[str, float, ExtractionError] | None = None  # a template matched, a value was invalid
        def searched() -> list[tuple[str, float]]:
            found = self.skeleton.search(query, k=max(self.top_k, 5), min_score=self.skeleton_min_score)
            return [(c.entry_id, c.score) for c in found]

        sources: tuple[Callable[[], list[tuple[str, float]]], ...] = (
            (lambda: [(entry_id, 1.0)],) if entry_id
            else (lambda: [(eid, 1.0) for eid in self.skeleton.exact(query)], searched))
        tried: set[str] = set()
        skeletal: list[tuple[str, float]] = []
        for source in sources:
            t = time.perf_counter()
            skeletal = source()
            timings["is1_ms"] += (time.perf_counter() - t) * 1000
            t = time.perf_counter()
            for eid, score in skeletal:
                if eid in tried:
                    continue
                tried.add(eid)
                chosen, failure = self._fast_path(eid, query)
                if failure is not None and fast_failure is None:
                    fast_failure = (eid, score, failure)
                if chosen is not None:
                    break
            timings["is2_ms"] += (time.perf_counter() - t) * 1000
            if chosen is not None:
                break

        if chosen is None:
            t = time.perf_counter()
            if entry_id:
                candidates: list[tuple[str, float]] = [(entry_id, 1.0)]
            elif self.router is None:
                candidates = []
            else:
                routed = self.router.route(query, self.top_k)
                candidates = [(c.entry_id, float(c.similarity)) for c in routed if c.entry_id in self.entries]
            timings["is1_ms"] += (time.perf_counter() - t) * 1000
            passing = [(eid, sim) for eid, sim in candidates if sim >= self.threshold]
            routed_ids = {eid for eid, _ in passing}
            # An entry whose skeleton the question shares closely is worth the model's reading even when
            # the embedding missed it (names and objects changed); the model and the guard still decide.
            passing += [(eid, score) for eid, score in skeletal
                        if score >= self.skeleton_model_score and eid not in routed_ids and not entry_id]
            if not passing:
                if fast_failure is not None:
                    return failed_fast(fast_failure)
                if not candidates:
                    reason = "this bundle has no routing index" if self.router is None else "no entry is similar to the question"
                    return miss("below_threshold", reason)
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
            for eid, sim in passing[: self.model_attempts]:
                try:
                    extraction = self.extractor.extract(self.entries[eid], query, fast_paths=False)
                except ExtractionError as exc:
                    first_failure = first_failure or exc
                    continue
                chosen = (eid, sim, extraction.values, extraction.path)
                break
            timings["is2_ms"] += (time.perf_counter() - t) * 1000
            if chosen is None:
                assert first_failure is not None
                if fast_failure is not None:  # the template matched but a value is invalid: the more useful reason
                    return failed_fast(fast_failure)
                return miss(
                    first_failure.reason,
                    first_failure.detail,
                    entry_id=first_candidate[0],
                    similarity=first_candidate[1],
                )

        eid, sim, values, path = chosen
        if self.guard is not None:
            t = time.perf_counter()
            try:
                refusal = self.guard(self.entries[eid], query, values, path)
            except Exception as exc:  # noqa: BLE001 - a guard that cannot judge refuses: a miss is never a wrong answer
                refusal = f"the guard could not judge this question ({type(exc).__name__}: {exc})"
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
        answer_value = answer_value_of(entry, result)
        timings["is4_ms"] = (time.perf_counter() - t) * 1000
        outside = out_of_domain(entry, answer_value)
        if outside is not None:
            return miss("answer_out_of_domain", outside, entry_id=eid, similarity=sim, parameters=values, path=path)
        timings["total_ms"] = (time.perf_counter() - started) * 1000
        return Answer(
            True,
            entry_id=eid,
            similarity=sim,
            parameters=values,
            result=result,
            answer=answer_value,
            narration=in_question_currency(execution.narration, entry.template, query),
            timings=timings,
            path=path,
        )

"""IS2 as one stage: read the question's values against the entries IS1 proposes, then the guard.

The model-free paths first (template, aligned), over the skeleton's candidates; the model path only when none of
them takes the question, over the candidates IS1 gives for it. A reading that passes is checked by the bundle's
changed-reasoning guard before IS3 runs it. Every failure is a ``Miss``: the reason most useful to the user wins
(a template that matched with an invalid value says more than "below threshold").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from edge_runtime.entries.metadata import EntryPoint
from edge_runtime.errors import ExtractionError, Miss
from edge_runtime.outcome import MissReason, ServingPath, StageTimings
from edge_runtime.read.extractor import Extractor
from edge_runtime.read.reading import Reading
from edge_runtime.route.stage import Routes

#: Checked after a successful reading: (entry, question, values, path) -> None, or why the question needs other
#: reasoning than the entry's (a MISS ``reasoning_changed``); see edge_runtime/read/guard.py.
Guard = Callable[[EntryPoint, str, dict[str, Any], ServingPath], "str | None"]


@dataclass(frozen=True)
class DraftCheck:
    """The extractor's ``draft_check``: why ``guard`` would refuse the aligner's draft on the model path (None: it
    would serve it). The draft path and the re-read path are guarded alike, so a reading whose values this check
    passed is not judged again by the same guard after IS2."""

    guard: Guard

    def __call__(self, entry: EntryPoint, question: str, values: dict[str, Any]) -> str | None:
        return self.guard(entry, question, values, ServingPath.LM_DRAFT)


class ReadStage:
    """IS2 for one bundle: its extractor and its guard."""

    def __init__(self, entries: Mapping[str, EntryPoint], extractor: Extractor, guard: Guard | None, *,
                 model_attempts: int) -> None:
        self.entries = entries
        self.extractor = extractor
        self.guard = guard
        self.model_attempts = model_attempts

    def read(self, query: str, routes: Routes, timings: StageTimings) -> Reading:
        """The reading to execute, or a Miss."""
        reading, fast_failure = self._model_free(query, routes, timings)
        if reading is None:
            reading = self._by_model(query, routes, timings, fast_failure)
        self._guard(query, reading, timings)
        return reading

    def _model_free(self, query: str, routes: Routes, timings: StageTimings) -> tuple[Reading | None, Miss | None]:
        """The first skeletal candidate the template or aligned path reads; else None and the first candidate
        whose template matched with an invalid value (None when none matched)."""
        tried: set[str] = set()
        failure: Miss | None = None
        for batch in routes.skeletal():
            with timings.stage("is2_ms"):
                for candidate in batch:
                    if candidate.entry_id in tried:
                        continue
                    tried.add(candidate.entry_id)
                    try:
                        fast = self.extractor.fast_path(self.entries[candidate.entry_id], query)
                    except ExtractionError as exc:
                        failure = failure or exc.at(candidate.entry_id, candidate.score)
                        continue
                    if fast is not None:
                        return Reading(candidate.entry_id, 1.0, fast.values, fast.path), None
        return None, failure

    def _by_model(self, query: str, routes: Routes, timings: StageTimings, fast_failure: Miss | None) -> Reading:
        """The model path over IS1's candidates, ``model_attempts`` of them, best first (each costs a pass)."""
        try:
            candidates = routes.for_model()
        except Miss as below:
            raise (fast_failure or below) from None
        first_failure: ExtractionError | None = None
        with timings.stage("is2_ms"):
            for candidate in candidates[: self.model_attempts]:
                try:
                    extraction = self.extractor.extract(self.entries[candidate.entry_id], query, fast_paths=False)
                except ExtractionError as exc:
                    first_failure = first_failure or exc
                    continue
                return Reading(candidate.entry_id, candidate.score, extraction.values, extraction.path,
                               guarded=extraction.guarded)
        if fast_failure is not None:  # the template matched but a value is invalid: the more useful reason
            raise fast_failure
        assert first_failure is not None
        raise first_failure.at(candidates[0].entry_id, candidates[0].score)

    def _guard(self, query: str, reading: Reading, timings: StageTimings) -> None:
        """The changed-reasoning guard between IS2 and IS3; a guard that cannot judge refuses (a miss is never a
        wrong answer)."""
        check = self.extractor.draft_check
        if self.guard is None or (reading.guarded and isinstance(check, DraftCheck) and check.guard is self.guard):
            return  # no guard, or this guard judged these very values before the model's pass
        with timings.stage("is2_ms"):
            try:
                refusal = self.guard(self.entries[reading.entry_id], query, reading.values, reading.path)
            except Exception as exc:  # noqa: BLE001 - see the docstring
                refusal = f"the guard could not judge this question ({type(exc).__name__}: {exc})"
        if refusal:
            raise reading.miss(MissReason.REASONING_CHANGED, refusal)

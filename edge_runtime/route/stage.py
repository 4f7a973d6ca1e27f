"""IS1 as one stage: the entries a question could be, in the order IS2 tries them.

The skeleton index comes first (the entries whose template the question is, numbers and slots masked: one
dictionary lookup; then a TF-IDF search over templates), for the model-free readings; the embedding router only
when none of those takes the question. ``Routes`` computes each part when IS2 asks for it, so a template hit
never pays for the embedding.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from edge_runtime.entries.metadata import EntryPoint
from edge_runtime.errors import Miss
from edge_runtime.outcome import MissReason, StageTimings
from edge_runtime.route.skeleton_index import SkeletonIndex


class RouteCandidate(Protocol):
    entry_id: str
    similarity: float


class Router(Protocol):
    def route(self, query: str, k: int = 3) -> Sequence[RouteCandidate]: ...


@dataclass(frozen=True)
class Candidate:
    """An entry IS1 proposes, with its score (skeleton score or embedding similarity)."""

    entry_id: str
    score: float


class RouteStage:
    """IS1 for one bundle: its skeleton index, its embedding router and calibrated threshold."""

    def __init__(self, bundle_id: str, entries: Mapping[str, EntryPoint], router: Router | None, threshold: float, *,
                 top_k: int, skeleton_min_score: float, skeleton_model_score: float) -> None:
        self.bundle_id = bundle_id
        self.entries = entries
        self.router = router
        self.threshold = threshold
        self.top_k = top_k
        self.skeleton = SkeletonIndex((eid, e.template) for eid, e in entries.items())
        self.skeleton_min_score = skeleton_min_score
        self.skeleton_model_score = skeleton_model_score

    def plan(self, query: str, entry_id: str, timings: StageTimings) -> Routes:
        """The routes for ``query`` (only ``entry_id`` when the caller names one); a Miss when the bundle has no
        entry at all, or not the one named."""
        if not self.entries:
            raise Miss(MissReason.NO_ENTRY, "the active bundle has no entries")
        if entry_id and entry_id not in self.entries:
            raise Miss(MissReason.UNKNOWN_ENTRY, f"no entry {entry_id!r} in bundle {self.bundle_id}; ListEntries gives the ids")
        return Routes(self, query, entry_id, timings)

    def searched(self, query: str) -> list[Candidate]:
        """The skeleton search: entries whose template shares the question's word bigrams."""
        found = self.skeleton.search(query, k=max(self.top_k, 5), min_score=self.skeleton_min_score)
        return [Candidate(c.entry_id, c.score) for c in found]

    def embedded(self, query: str) -> list[Candidate]:
        """The embedding router's top-k entries of this bundle, best first (none without a routing index)."""
        if self.router is None:
            return []
        routed = self.router.route(query, self.top_k)
        return [Candidate(c.entry_id, float(c.similarity)) for c in routed if c.entry_id in self.entries]


class Routes:
    """IS1's answer for one question, computed part by part as IS2 asks for it."""

    def __init__(self, stage: RouteStage, query: str, entry_id: str, timings: StageTimings) -> None:
        self.stage = stage
        self.query = query
        self.entry_id = entry_id
        self.timings = timings
        self._last: list[Candidate] = []

    def skeletal(self) -> Iterator[list[Candidate]]:
        """Batches for the model-free paths: the exact skeleton's entries, then the skeleton search's; the
        second only if IS2 asks for it (none of the first took the question)."""
        sources: tuple[Callable[[], list[Candidate]], ...]
        if self.entry_id:
            sources = (lambda: [Candidate(self.entry_id, 1.0)],)
        else:
            sources = (lambda: [Candidate(eid, 1.0) for eid in self.stage.skeleton.exact(self.query)],
                       lambda: self.stage.searched(self.query))
        for source in sources:
            with self.timings.stage("is1_ms"):
                self._last = source()
            yield self._last

    def for_model(self) -> list[Candidate]:
        """The candidates the model path reads, best first: the embedding router's above the threshold, then the
        entries whose skeleton the question shares closely (names and objects changed: worth the model's reading
        even when the embedding missed them; the model and the guard still decide). A Miss ``below_threshold``
        when there are none."""
        stage = self.stage
        with self.timings.stage("is1_ms"):
            candidates = [Candidate(self.entry_id, 1.0)] if self.entry_id else stage.embedded(self.query)
        passing = [c for c in candidates if c.score >= stage.threshold]
        routed = {c.entry_id for c in passing}
        if not self.entry_id:
            passing += [c for c in self._last if c.score >= stage.skeleton_model_score and c.entry_id not in routed]
        if passing:
            return passing
        if not candidates:
            why = "this bundle has no routing index" if stage.router is None else "no entry is similar to the question"
            raise Miss(MissReason.BELOW_THRESHOLD, why)
        best = candidates[0]
        raise Miss(MissReason.BELOW_THRESHOLD,
                   f"closest entry {best.entry_id!r} at similarity {best.score:.3f} < threshold {stage.threshold:.3f}",
                   entry_id=best.entry_id, similarity=best.score)

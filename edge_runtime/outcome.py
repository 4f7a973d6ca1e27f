"""What a question comes to, as values every stage shares: the MISS reasons and the serving paths.

Both used to travel as strings decoded in several places; they are enums from the extractor to the response now,
and ``answer/response.py`` maps them onto the proto once. Both are ``str`` enums whose value is the name the
device has always reported (miss log, metrics labels, stats, ``serving_path`` on the wire), so a record written
from them is the same text as before.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Iterator
from contextlib import contextmanager


class _Named(str, enum.Enum):
    """A ``str`` enum that prints and formats as its value ("below_threshold", not "MissReason.BELOW_THRESHOLD")."""

    __str__ = str.__str__
    __format__ = str.__format__


class MissReason(_Named):
    """Why a question was not served. The proto's ``MissReason`` has one value for each (``answer/response.py``)."""

    NO_ENTRY = "no_entry"
    UNKNOWN_ENTRY = "unknown_entry"
    BELOW_THRESHOLD = "below_threshold"
    EXTRACTION_FAILED = "extraction_failed"
    VALIDATION_FAILED = "validation_failed"
    REASONING_CHANGED = "reasoning_changed"
    EXECUTION_FAILED = "execution_failed"
    DEADLINE_EXCEEDED = "deadline_exceeded"
    RESOURCE_EXHAUSTED = "resource_exhausted"
    ANSWER_OUT_OF_DOMAIN = "answer_out_of_domain"

    @property
    def final(self) -> bool:
        """A miss a second reading of the question cannot change: the bundle or the deadline, not the text."""
        return self in _FINAL


_FINAL = frozenset({MissReason.NO_ENTRY, MissReason.UNKNOWN_ENTRY, MissReason.DEADLINE_EXCEEDED,
                    MissReason.RESOURCE_EXHAUSTED, MissReason.EXECUTION_FAILED})


class ServingPath(_Named):
    """How IS2 read a question's values (read/extractor.py explains each); ``+set-aside`` when it was read without
    the statements the question calls irrelevant (read/disclaimers.py)."""

    TEMPLATE = "template"
    ALIGNED = "aligned"
    LM_DRAFT = "lm-draft"
    LM = "lm"
    LM_REREAD = "lm-reread"
    TEMPLATE_SET_ASIDE = "template+set-aside"
    ALIGNED_SET_ASIDE = "aligned+set-aside"
    LM_DRAFT_SET_ASIDE = "lm-draft+set-aside"
    LM_SET_ASIDE = "lm+set-aside"
    LM_REREAD_SET_ASIDE = "lm-reread+set-aside"

    @property
    def base(self) -> ServingPath:
        """The reading path without ``+set-aside``."""
        return ServingPath(self.value.removesuffix(_SET_ASIDE))

    @property
    def set_aside(self) -> ServingPath:
        """The same path, read without what the question calls irrelevant."""
        return ServingPath(self.base.value + _SET_ASIDE)

    @property
    def model_free(self) -> bool:
        """Read with no model call (the template with new values, or reworded around its slots)."""
        return self.base in (ServingPath.TEMPLATE, ServingPath.ALIGNED)


_SET_ASIDE = "+set-aside"

#: The stages a question's time is reported under (the proto's ``Timings``), and the whole.
STAGES = ("is1_ms", "is2_ms", "is3_ms", "is4_ms")


class StageTimings:
    """Milliseconds spent in each stage of one question; a stage entered twice (IS1 by skeleton, then by
    embedding) adds up."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.ms: dict[str, float] = dict.fromkeys(STAGES, 0.0)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the block under ``name`` (also when it raises)."""
        t = time.perf_counter()
        try:
            yield
        finally:
            self.ms[name] += (time.perf_counter() - t) * 1000

    def done(self) -> dict[str, float]:
        """The per-stage times with ``total_ms``, the time since this question started."""
        self.ms["total_ms"] = (time.perf_counter() - self.started) * 1000
        return self.ms


__all__ = ["STAGES", "MissReason", "ServingPath", "StageTimings"]

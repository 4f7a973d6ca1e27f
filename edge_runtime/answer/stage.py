"""IS4 as one stage: the HIT an execution comes to, or a Miss when its answer leaves the entry's domain or the
question leaves the scope the entry was verified in."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from edge_runtime.answer.currency import in_question_currency
from edge_runtime.answer.domain import answer_value, out_of_domain
from edge_runtime.answer.result import Answer
from edge_runtime.answer.verification import VerificationStatus
from edge_runtime.entries.metadata import EntryPoint
from edge_runtime.entries.registry import Execution
from edge_runtime.outcome import MissReason, StageTimings
from edge_runtime.read.reading import Reading


class AnswerStage:
    """IS4 for one bundle: its entries' answer keys and domains, and what the bundle attests of each entry.

    ``verified_scope``: entry id -> the parameters it was verified with at their original values only
    (the manifest's ``fixed``). A question that gives one of them another value is outside what any
    independent solution checked: in a bundle packed with verified entries only (``verified_only``) that is
    a MISS, since the bundle promises verified answers; otherwise the answer is served as unverified."""

    def __init__(self, entries: Mapping[str, EntryPoint], verification: Mapping[str, VerificationStatus],
                 verified_scope: Mapping[str, tuple[str, ...]] | None = None, verified_only: bool = False) -> None:
        self.entries = entries
        self.verification = dict(verification)
        self.verified_scope = dict(verified_scope or {})
        self.verified_only = verified_only

    def verification_of(self, entry_id: str) -> VerificationStatus:
        """What the bundle attests for ``entry_id`` (unverified when it says nothing)."""
        return self.verification.get(entry_id, VerificationStatus.UNVERIFIED)

    def scope_of(self, entry_id: str) -> tuple[str, ...]:
        """The parameters ``entry_id`` is verified with at their original values only (none: every value)."""
        return self.verified_scope.get(entry_id, ())

    def verification_for(self, reading: Reading) -> VerificationStatus:
        """The status of this answer: the entry's, unless a fixed parameter of its verified scope was read with
        another value; then unverified, or, in a verified-only bundle, a MISS naming the parameter."""
        status = self.verification_of(reading.entry_id)
        if status is not VerificationStatus.VERIFIED:
            return status
        entry = self.entries[reading.entry_id]
        originals = {p.name: p.original for p in entry.params}
        outside = [n for n in self.scope_of(reading.entry_id) if not _same(reading.values.get(n), originals.get(n))]
        if not outside:
            return status
        if self.verified_only:
            name = outside[0]
            raise reading.miss(MissReason.VALIDATION_FAILED,
                               f"{name} outside the verified scope of {reading.entry_id}: it was verified only with "
                               f"{name} = {originals[name]!r}, the question gives {reading.values.get(name)!r}")
        return VerificationStatus.UNVERIFIED

    def answer(self, query: str, reading: Reading, execution: Execution, timings: StageTimings,
               verification: VerificationStatus | None = None) -> Answer:
        """The HIT: the answer under the entry's key, the narration in the question's currency; ``verification``:
        ``verification_for(reading)`` when the caller asked it before running the entry."""
        entry = self.entries[reading.entry_id]
        with timings.stage("is4_ms"):
            verification = verification or self.verification_for(reading)
            result = dict(execution.result)
            value = answer_value(entry, result)
        outside = out_of_domain(entry, value)
        if outside is not None:
            raise reading.miss(MissReason.ANSWER_OUT_OF_DOMAIN, outside)
        return Answer(True, entry_id=reading.entry_id, similarity=reading.similarity, parameters=reading.values,
                      result=result, answer=value, path=reading.path,
                      narration=in_question_currency(execution.narration, entry.template, query),
                      verification=verification)


def _same(value: Any, original: Any) -> bool:
    """The value read equals the original (numbers to 1e-9, relative; other values exactly)."""
    if isinstance(value, bool) or isinstance(original, bool):
        return value == original
    try:
        return math.isclose(float(value), float(original), rel_tol=1e-9, abs_tol=1e-12)
    except (TypeError, ValueError, OverflowError):
        return value == original

"""IS4 as one stage: the HIT an execution comes to, or a Miss when its answer leaves the entry's domain."""

from __future__ import annotations

from collections.abc import Mapping

from edge_runtime.answer.currency import in_question_currency
from edge_runtime.answer.domain import answer_value, out_of_domain
from edge_runtime.answer.result import Answer
from edge_runtime.answer.verification import VerificationStatus
from edge_runtime.entries.metadata import EntryPoint
from edge_runtime.entries.registry import Execution
from edge_runtime.outcome import MissReason, StageTimings
from edge_runtime.read.reading import Reading


class AnswerStage:
    """IS4 for one bundle: its entries' answer keys and domains, and what the bundle attests of each entry."""

    def __init__(self, entries: Mapping[str, EntryPoint], verification: Mapping[str, VerificationStatus]) -> None:
        self.entries = entries
        self.verification = dict(verification)

    def verification_of(self, entry_id: str) -> VerificationStatus:
        """What the bundle attests for ``entry_id`` (unverified when it says nothing)."""
        return self.verification.get(entry_id, VerificationStatus.UNVERIFIED)

    def answer(self, query: str, reading: Reading, execution: Execution, timings: StageTimings) -> Answer:
        """The HIT: the answer under the entry's key, the narration in the question's currency."""
        entry = self.entries[reading.entry_id]
        with timings.stage("is4_ms"):
            result = dict(execution.result)
            value = answer_value(entry, result)
        outside = out_of_domain(entry, value)
        if outside is not None:
            raise reading.miss(MissReason.ANSWER_OUT_OF_DOMAIN, outside)
        return Answer(True, entry_id=reading.entry_id, similarity=reading.similarity, parameters=reading.values,
                      result=result, answer=value, path=reading.path,
                      narration=in_question_currency(execution.narration, entry.template, query),
                      verification=self.verification_of(reading.entry_id))

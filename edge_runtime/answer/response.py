"""IS4 on the contract: an answer as the ``InvokeResponse`` the gRPC service returns (edge.proto).

The miss reasons, serving paths and verification statuses are mapped onto the proto here, once, so the
service only sends what this module built.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from edge_runtime.answer.result import Answer
from edge_runtime.answer.verification import VerificationStatus
from edge_runtime.outcome import STAGES, MissReason
from edge_runtime.proto import edge_pb2 as pb

if TYPE_CHECKING:
    from edge_runtime.pipeline import Pipeline

#: The one map from the runtime's miss reasons to the proto's (whose wire values clients depend on);
#: tests/edge_runtime/answer/test_response.py checks that every MissReason has its value.
MISS_REASONS = {
    MissReason.NO_ENTRY: pb.NO_ENTRY,
    MissReason.BELOW_THRESHOLD: pb.BELOW_THRESHOLD,
    MissReason.EXTRACTION_FAILED: pb.EXTRACTION_FAILED,
    MissReason.VALIDATION_FAILED: pb.VALIDATION_FAILED,
    MissReason.EXECUTION_FAILED: pb.EXECUTION_FAILED,
    MissReason.DEADLINE_EXCEEDED: pb.DEADLINE_EXCEEDED,
    MissReason.RESOURCE_EXHAUSTED: pb.RESOURCE_EXHAUSTED,
    MissReason.REASONING_CHANGED: pb.REASONING_CHANGED,
    MissReason.ANSWER_OUT_OF_DOMAIN: pb.ANSWER_OUT_OF_DOMAIN,
    MissReason.UNKNOWN_ENTRY: pb.UNKNOWN_ENTRY,
}
VERIFICATION = {VerificationStatus.VERIFIED: pb.ENTRY_VERIFIED, VerificationStatus.UNVERIFIED: pb.ENTRY_UNVERIFIED}


def as_json(value: Any) -> str:
    """``value`` as JSON text for the response (non-JSON values, e.g. Fractions, as their ``str``)."""
    return json.dumps(value, ensure_ascii=False, default=str)


def to_response(answerer: Pipeline, answer: Answer) -> pb.InvokeResponse:
    """The response for ``answer``, served from ``answerer``'s bundle (its name and version go with it)."""
    return pb.InvokeResponse(
        outcome=pb.HIT if answer.hit else pb.MISS,
        miss_reason=MISS_REASONS[answer.miss_reason] if answer.miss_reason is not None else pb.MISS_REASON_UNSPECIFIED,
        miss_detail=answer.miss_detail,
        entry_id=answer.entry_id,
        similarity=answer.similarity,
        parameters_json=as_json(answer.parameters) if answer.parameters else "",
        result_json=as_json(answer.result) if answer.hit else "",
        answer_json=as_json(answer.answer) if answer.hit and answer.answer is not None else "",
        narration=[pb.NarrationStep(function=s.function, text=s.text) for s in answer.narration],
        timings=pb.Timings(**{k: v for k, v in answer.timings.items() if k in (*STAGES, "total_ms")}),
        serving_path=answer.path.value if answer.path is not None else "",
        bundle_name=answerer.name,
        bundle_version=answerer.version,
        verification=VERIFICATION[answer.verification] if answer.verification is not None else pb.VERIFICATION_UNSPECIFIED,
    )


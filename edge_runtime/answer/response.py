"""IS4 on the contract: an answer as the ``InvokeResponse`` the gRPC service returns (edge.proto).

The miss reasons and verification statuses are mapped onto the proto's enums here, once, so the
service only sends what this module built.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from edge_runtime.answer.result import Answer
from edge_runtime.answer.verification import VerificationStatus
from edge_runtime.proto import edge_pb2 as pb

if TYPE_CHECKING:
    from edge_runtime.answerer import Answerer

_REASONS = {
    "no_entry": pb.NO_ENTRY,
    "below_threshold": pb.BELOW_THRESHOLD,
    "extraction_failed": pb.EXTRACTION_FAILED,
    "validation_failed": pb.VALIDATION_FAILED,
    "execution_failed": pb.EXECUTION_FAILED,
    "deadline_exceeded": pb.DEADLINE_EXCEEDED,
    "resource_exhausted": pb.RESOURCE_EXHAUSTED,
    "reasoning_changed": pb.REASONING_CHANGED,
    "answer_out_of_domain": pb.ANSWER_OUT_OF_DOMAIN,
    "unknown_entry": pb.UNKNOWN_ENTRY,
}
VERIFICATION = {VerificationStatus.VERIFIED: pb.ENTRY_VERIFIED, VerificationStatus.UNVERIFIED: pb.ENTRY_UNVERIFIED}


def as_json(value: Any) -> str:
    """``value`` as JSON text for the response (non-JSON values, e.g. Fractions, as their ``str``)."""
    return json.dumps(value, ensure_ascii=False, default=str)


def to_response(answerer: Answerer, answer: Answer) -> pb.InvokeResponse:
    """The response for ``answer``, served from ``answerer``'s bundle (its name and version go with it)."""
    return pb.InvokeResponse(
        outcome=pb.HIT if answer.hit else pb.MISS,
        miss_reason=_REASONS.get(answer.miss_reason, pb.MISS_REASON_UNSPECIFIED) if not answer.hit else pb.MISS_REASON_UNSPECIFIED,
        miss_detail=answer.miss_detail,
        entry_id=answer.entry_id,
        similarity=answer.similarity,
        parameters_json=as_json(answer.parameters) if answer.parameters else "",
        result_json=as_json(answer.result) if answer.hit else "",
        answer_json=as_json(answer.answer) if answer.hit and answer.answer is not None else "",
        narration=[pb.NarrationStep(function=s.function, text=s.text) for s in answer.narration],
        timings=pb.Timings(**{k: v for k, v in answer.timings.items() if k in ("is1_ms", "is2_ms", "is3_ms", "is4_ms", "total_ms")}),
        serving_path=answer.path,
        bundle_name=answerer.name,
        bundle_version=answerer.version,
        verification=VERIFICATION[answer.verification] if answer.verification is not None else pb.VERIFICATION_UNSPECIFIED,
    )


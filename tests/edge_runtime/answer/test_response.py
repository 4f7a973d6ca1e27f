"""The enums on the contract: every miss reason has its proto value, and the wire values never change."""

from __future__ import annotations

from edge_runtime.answer.response import MISS_REASONS, to_response
from edge_runtime.answer.result import Answer
from edge_runtime.outcome import MissReason, ServingPath
from edge_runtime.proto import edge_pb2 as pb

#: What clients were given (edge.proto): a change here breaks every deployed client.
WIRE = {"no_entry": 1, "below_threshold": 2, "extraction_failed": 3, "validation_failed": 4, "execution_failed": 5,
        "deadline_exceeded": 6, "resource_exhausted": 7, "reasoning_changed": 9, "answer_out_of_domain": 10,
        "unknown_entry": 11}


class _Bundle:
    name, version = "b", "1"


def test_every_miss_reason_keeps_its_wire_value():
    assert {reason.value: MISS_REASONS[reason] for reason in MissReason} == WIRE
    for reason in MissReason:
        sent = to_response(_Bundle(), Answer(False, reason, "why"))
        assert sent.miss_reason == WIRE[reason.value] and pb.MissReason.Name(sent.miss_reason) == reason.name


def test_serving_paths_go_out_as_the_names_the_device_always_reported():
    names = {p.value for p in ServingPath}
    assert names == {"template", "aligned", "lm-draft", "lm", "lm-reread", "template+set-aside", "aligned+set-aside",
                     "lm-draft+set-aside", "lm+set-aside", "lm-reread+set-aside"}
    for path in ServingPath:
        assert path.set_aside.base is path.base and path.set_aside.value == path.base.value + "+set-aside"
        hit = to_response(_Bundle(), Answer(True, entry_id="e", path=path, answer=1, result={"x": 1}))
        assert hit.serving_path == path.value and hit.miss_reason == pb.MISS_REASON_UNSPECIFIED
    assert to_response(_Bundle(), Answer(False, MissReason.NO_ENTRY, "none")).serving_path == ""
    assert ServingPath.ALIGNED.model_free and ServingPath.TEMPLATE_SET_ASIDE.model_free
    assert not ServingPath.LM_DRAFT.model_free and not ServingPath.LM_REREAD_SET_ASIDE.model_free


def test_reasons_print_as_their_names_in_logs_and_records():
    assert f"{MissReason.BELOW_THRESHOLD}" == str(MissReason.BELOW_THRESHOLD) == "below_threshold"
    assert MissReason.DEADLINE_EXCEEDED.final and not MissReason.REASONING_CHANGED.final

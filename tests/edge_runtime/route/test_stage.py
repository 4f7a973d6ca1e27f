"""IS1 as one stage: which entries the model path reads when the embedding router misses (route/stage.py)."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from edge_runtime.errors import Miss
from edge_runtime.options import PipelineOptions
from edge_runtime.outcome import MissReason, StageTimings
from edge_runtime.route.stage import RouteStage
from tests.edge_runtime.route.test_skeleton_index import TEMPLATES


@dataclass(frozen=True)
class _Routed:
    entry_id: str
    similarity: float


class _FarRouter:
    """An embedding router that ranks the right entry first, below any threshold (names and things renamed)."""

    def __init__(self, entry_id: str) -> None:
        self.entry_id = entry_id

    def route(self, query: str, k: int = 3) -> list[_Routed]:
        return [_Routed(self.entry_id, 0.6)]


def _stage(entry_id: str) -> RouteStage:
    entries = {eid: SimpleNamespace(template=template) for eid, template in TEMPLATES.items()}
    return RouteStage("b", entries, _FarRouter(entry_id), 0.84, top_k=3, skeleton_min_score=0.05,
                      skeleton_model_score=PipelineOptions().skeleton_model_score)


def _for_model(stage: RouteStage, question: str) -> list[str]:
    routes = stage.plan(question, "", StageTimings())
    for _ in routes.skeletal():  # the model-free paths try these first and take none here
        pass
    return [c.entry_id for c in routes.for_model()]


def test_the_model_reads_an_entry_whose_phrasing_the_renamed_question_keeps():
    """"an 8-foot whale with 3 12-inch fish" of the remoras template: the embedding misses it, the skeleton search
    scores it about 0.4 and first, so the model reads it (the guard still decides)."""
    question = ("Mei saw an 8-foot whale with 3 12-inch fish stuck to it. What percentage of the whale's length is the "
                "total length of the fish?")
    assert _for_model(_stage("remoras"), question) == ["remoras"]


def test_a_question_that_shares_little_phrasing_is_a_miss():
    question = ("Sven places walnuts in the box. Each box holds 30 walnuts. If Sven has 200 walnuts and 5 boxes, how many "
                "walnuts won't Sven be able to put in the boxes?")
    with pytest.raises(Miss) as missed:
        _for_model(_stage("trays"), question)
    assert missed.value.reason is MissReason.BELOW_THRESHOLD and missed.value.entry_id == "trays"

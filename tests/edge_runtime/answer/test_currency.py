"""A question asked in another currency is narrated in that currency (issue 25: euros narrated with "$")."""

from __future__ import annotations

from fakes import FixedRouter

from edge_runtime.answer.currency import in_question_currency, question_currency
from edge_runtime.entries.context import NarrationStep
from edge_runtime.entries.metadata import EntryPoint, Param
from edge_runtime.entries.registry import Execution
from edge_runtime.pipeline import Pipeline
from edge_runtime.read.extractor import Extractor

TRIP = EntryPoint(
    id="trip", description="a school trip's cost", root="r", answer_key="answer",
    template="A bus costs ${bus} to hire and a ticket costs ${ticket}. What do {n} students pay?",
    params=(Param("bus", "bus hire", float, 350.0), Param("ticket", "ticket", float, 12.0), Param("n", "students", int, 30)),
)


def test_only_a_one_for_one_rename_of_the_currency_is_rewritten() -> None:
    assert question_currency(TRIP.template, "A bus costs €300 to hire and a ticket costs €10.") == ("$", "€")
    assert question_currency(TRIP.template, "A bus costs £ 300 and a ticket £10.") == ("$", "£")
    assert question_currency(TRIP.template, "A bus costs $300 and a ticket $10.") is None
    assert question_currency(TRIP.template, "A bus costs €300 and a ticket $10.") is None  # two currencies: leave it
    assert question_currency(TRIP.template, "A bus costs 300 and a ticket 10.") is None
    steps = [NarrationStep("f", "bus: $300 + 30 × $10 = $600"), NarrationStep("f", "say $ANSWER, 5 kg")]
    out = in_question_currency(steps, TRIP.template, "A bus costs €300 to hire and a ticket €10.")
    assert [s.text for s in out] == ["bus: €300 + 30 × €10 = €600", "say $ANSWER, 5 kg"]
    assert out[0].function == "f"


class _Extractor(Extractor):
    def __init__(self) -> None:
        super().__init__(None, use_alignment=False)

    def extract(self, entry, question, *, fast_paths=True):
        from edge_runtime.read.extractor import Extraction

        return Extraction({"bus": 300.0, "ticket": 10.0, "n": 30}, {}, "aligned")


def test_the_answer_to_a_question_in_euros_is_narrated_in_euros() -> None:
    def executor(digest, entry_id, source, values, timeout):
        total = values["bus"] + values["n"] * values["ticket"]
        return Execution({"answer": total}, [NarrationStep("f", f"${values['bus']:g} + {values['n']} × "
                                                                 f"${values['ticket']:g} = ${total:g}")])

    answerer = Pipeline(name="t", version="1", digest="d", entries={"trip": TRIP}, modules={"trip": ""},
                        router=FixedRouter(("trip", 0.9)), threshold=0.5, extractor=_Extractor(), executor=executor,
                        guard=None)
    answer = answerer.answer("A bus costs €300 to hire and a ticket costs €10. What do 30 students pay?")
    assert answer.hit and answer.answer == 600
    assert [s.text for s in answer.narration] == ["€300 + 30 × €10 = €600"]
    dollars = answerer.answer("A bus costs $300 to hire and a ticket costs $10. What do 30 students pay?")
    assert [s.text for s in dollars.narration] == ["$300 + 30 × $10 = $600"]

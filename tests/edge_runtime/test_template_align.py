"""The aligned fast path: the template reworded around its slots, and nothing else changed."""

from __future__ import annotations

import pytest

from edge_runtime.metadata import Param
from edge_runtime.template_align import aligned_values

TEMPLATE = (
    "Benny saw a {length}-foot shark with {count} {size}-inch remoras attached to it. "
    "Half of the remoras are grey. What percentage of the shark's body length is the combined length of the remoras?"
)
PARAMS = (
    Param(name="length", description="length of the shark in feet", type=int, original=10, minimum=1),
    Param(name="count", description="number of remoras", type=int, original=2, minimum=0),
    Param(name="size", description="length of one remora in inches", type=int, original=6, minimum=1),
)


def test_names_and_objects_reworded_around_the_slots():
    question = (
        "Michael saw a 140-foot dolphin with 7 24-inch remoras attached to it. "
        "Half of the remoras are grey. What percentage of the dolphin's body length is the combined length of the remoras?"
    )
    assert aligned_values(TEMPLATE, PARAMS, question) == {"length": "140", "count": "7", "size": "24"}


def test_number_words_in_a_slot_are_kept_for_the_value_reader():
    question = TEMPLATE.format(length="twelve", count="3", size="5")
    assert aligned_values(TEMPLATE, PARAMS, question) == {"length": "twelve", "count": "3", "size": "5"}


@pytest.mark.parametrize(
    "question",
    [
        # a constant of the cached reasoning changed: different reasoning, not new values
        TEMPLATE.format(length=140, count=7, size=24).replace("Half of", "One third of"),
        # a quantity added outside the slots
        TEMPLATE.format(length=140, count=7, size=24).replace("are grey.", "are grey and 3 more swim by."),
        # a value removed: the slot has nothing between its anchors
        "Benny saw a shark with 7 24-inch remoras attached to it. Half of the remoras are grey. "
        "What percentage of the shark's body length is the combined length of the remoras?",
        # a different question altogether
        "How many legs does a spider have?",
        # two numbers where one value belongs
        TEMPLATE.format(length="140 or 150", count=7, size=24),
    ],
)
def test_anything_else_declines(question):
    assert aligned_values(TEMPLATE, PARAMS, question) is None


def test_choice_slots_accept_only_their_choices():
    template = "Ship {n} boxes by {mode} to the warehouse."
    params = (Param(name="n", description="boxes", type=int, original=2), Param(name="mode", description="mode", type=str, original="air", choices=("air", "sea")))
    assert aligned_values(template, params, "Please ship 9 boxes by sea to the warehouse.") == {"n": "9", "mode": "sea"}
    assert aligned_values(template, params, "Please ship 9 boxes by train to the warehouse.") is None

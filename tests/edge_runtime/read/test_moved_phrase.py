"""A sentence's fronted phrase moved to its end (or back) is read where the template has it, and only that move."""

from __future__ import annotations

import pytest

from edge_runtime.entries.metadata import EntryPoint, Param
from edge_runtime.outcome import ServingPath
from edge_runtime.read.extractor import Extractor
from edge_runtime.read.moved_phrase import restore_moved_phrase
from edge_runtime.read.template_align import aligned_values

TEMPLATE = ("Jaime places eggs on the tray. Each tray can hold {hold} eggs. If he has {eggs} eggs and {trays} trays, "
            "how many eggs won't he be able to place on the tray?")
PARAMS = (Param("hold", "eggs a tray holds", int, 24, minimum=1), Param("eggs", "eggs he has", int, 64, minimum=0),
          Param("trays", "trays he has", int, 2, minimum=0))
ENTRY = EntryPoint(id="gsm8k-0491", description="eggs", root="answer", template=TEMPLATE, params=PARAMS)
MOVED = ("Jaime places eggs on the tray. Each tray can hold 24 eggs. How many eggs won't he be able to place on the "
         "tray if he has 64 eggs and 2 trays?")


def test_a_condition_moved_to_the_end_is_read_where_the_template_states_it() -> None:
    assert aligned_values(TEMPLATE, PARAMS, MOVED) is None  # the word alignment alone declines
    restored = restore_moved_phrase(TEMPLATE, MOVED)
    assert restored is not None
    assert aligned_values(TEMPLATE, PARAMS, restored) == {"hold": "24", "eggs": "64", "trays": "2"}
    fast = Extractor(None).fast_path(ENTRY, MOVED)
    assert fast is not None and fast.path == ServingPath.ALIGNED
    assert fast.values == {"hold": 24, "eggs": 64, "trays": 2}


def test_the_reverse_move_and_a_moved_time_phrase() -> None:
    trailing = "Jaime places eggs. How many eggs can he place on the tray if he has {eggs} eggs?"
    params = (PARAMS[1],)
    fronted = "Jaime places eggs. If he has 64 eggs, how many eggs can he place on the tray?"
    assert aligned_values(trailing, params, restore_moved_phrase(trailing, fronted) or "") == {"eggs": "64"}
    picks = "John picks {a} bananas. On Friday, he picks {b} more. How many bananas does John have?"
    two = (Param("a", "a", int, 4, minimum=0), Param("b", "b", int, 6, minimum=0))
    moved = "John picks 4 bananas. He picks 6 more on Friday. How many bananas does John have?"
    assert aligned_values(picks, two, restore_moved_phrase(picks, moved) or "") == {"a": "4", "b": "6"}


@pytest.mark.parametrize("question", [
    # a word of the phrase changed on the way: the phrase's numbers may not mean what the template's do
    MOVED.replace("if he has 64 eggs", "if he buys 64 eggs"),
    # a number added to the moved phrase
    MOVED.replace("and 2 trays?", "and 2 trays and 3 bowls?"),
    # moved into another sentence: the order of sentences may be the order of the operations
    "Jaime places eggs on the tray if he has 64 eggs and 2 trays. Each tray can hold 24 eggs. How many eggs won't "
    "he be able to place on the tray?",
])
def test_nothing_but_the_same_words_within_one_sentence_is_moved_back(question: str) -> None:
    restored = restore_moved_phrase(TEMPLATE, question)
    assert restored is None or aligned_values(TEMPLATE, PARAMS, restored) is None
    assert Extractor(None).fast_path(ENTRY, question) is None


def test_a_question_in_the_template_order_needs_no_restoring() -> None:
    assert restore_moved_phrase(TEMPLATE, TEMPLATE.format(hold=24, eggs=64, trays=2)) is None

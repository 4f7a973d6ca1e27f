"""How a final question's asking words change what it asks for (edge_runtime/read/question_words.py)."""

from __future__ import annotations

import pytest

from edge_runtime.read.question_words import modifier_change


@pytest.mark.parametrize(("template", "question", "change"), [
    # two things joined by "and" are asked for as a sum, with "together" or without it
    ("How many letters are in Ines and her sister's names?", "How many letters are in Ana's and her sister's names "
     "together?", None),
    ("How much do Sam and Al earn together?", "How much do Sam and Al earn?", None),
    # one thing asked for, then two together: another quantity
    ("How much does the trip cost?", "How much do the trip and the hotel cost together?", "adds a sum"),
    ("How much does she make every day?", "How much do she and her sister make altogether every day?", "adds a sum"),
    ("How many cards did the first box hold?", "How many cards did both boxes hold?", "adds a sum"),
])
def test_a_sum_word_beside_things_already_joined_asks_for_the_same_sum(template, question, change):
    assert modifier_change(template, question) == change

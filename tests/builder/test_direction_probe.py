"""Changed questions whose story moves a thing the other way (builder/eval/direction_probe.py)."""

from __future__ import annotations

from builder.eval.direction_probe import REVERSED, direction_reversed
from builder.eval.number_free_probe import SWAPPED
from edge_runtime.read.english_words import AWAY, TO_THEM, word_stem


def test_the_first_verb_of_the_story_is_put_the_other_way_and_the_final_question_is_kept():
    question = "Ann found 12 shells and gave 5 to Bo. How many shells has she given away?"
    assert direction_reversed(question) == [("found->dropped", "Ann dropped 12 shells and gave 5 to Bo. How many shells "
                                                               "has she given away?")]
    assert direction_reversed("A train goes 60 miles in 2 hours. How far does it go in 5 hours?") == []


def test_every_pair_reverses_the_way_and_none_is_a_pair_the_guard_was_written_from():
    ways = {word_stem(w): side for side, words in (("to", TO_THEM), ("away", AWAY)) for w in words}
    for a, b in REVERSED.items():
        assert {ways[word_stem(a)], ways[word_stem(b)]} == {"to", "away"}, (a, b)
    assert not set(REVERSED.items()) & set(SWAPPED)

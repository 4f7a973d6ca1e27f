"""Restatements: a number a question states a second time, for the same thing, adds nothing to its reasoning.

The guard's third check (no added quantities) accepts a number that is not bound to a parameter only when it
repeats one that is: "Note that Kenneth picks 256 melons on Wednesday" after "Kenneth picks 256 melons on
Wednesday". Anything that does more than repeat ("also", "more", another subject) is an added operation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from edge_runtime.read.english_words import MULTIPLIERS
from edge_runtime.read.mentions import NUMBER, Mention, shares_value
from edge_runtime.read.question_words import STOP_WORDS, WORD, content_words, stem


def remove_numbers(text: str) -> str:
    return NUMBER.sub(" ", text)


def _unit_words(text: str, mention: Mention, count: int) -> set[str]:
    """Up to ``count`` content words right after a number, within its clause: what it counts."""
    clause = re.split(r"[.?!;,:]", text[mention.end:], maxsplit=1)[0]
    words = [w for w in WORD.findall(clause.lower().replace("-", " ")) if w not in STOP_WORDS]
    return {stem(w) for w in words[:count]}


#: Words by which a sentence that repeats a number does more than repeat it ("she *also* picks 256 melons").
_NOT_A_REPEAT = frozenset("also again too more another extra additional additionally less fewer than plus minus besides "
                          "further furthermore addition".split())
#: Words a restatement may add to the words of the sentence it repeats ("Note that ...", "To be clear, ...").
_RESTATING = frozenset("note noted remember recall recap reminder clear said stated mentioned already earlier above "
                       "indeed repeat summary precisely exactly".split())


def restated(question: str, mentions: Sequence[Mention], used: set[int], index: int, span: tuple[int, int],
              spans: Sequence[tuple[int, int]]) -> str | None:
    """The accounted-for number that mention ``index`` states again, or None: the same value, counting the same
    thing (the word after it), stated in another sentence whose words are all that sentence's own (besides a
    restating phrase: "Note that ...") and none of which adds ("also", "more", "than" ...): "Note that
    Kenneth picks 256 melons on Wednesday", not "His sister picks 256 melons on Wednesday" nor "Kenneth also
    picks 256 melons". A number whose reading cannot be shown a repeat is an added operation."""
    start, end = span
    words, own = _sentence_words(question[start:end])
    if words & _NOT_A_REPEAT:
        return None
    if mentions[index].text.lower().split()[-1] in MULTIPLIERS:
        return None  # "the number of apples doubles" states a change, whatever number it shares a value with
    own = own - _RESTATING
    head = _unit_words(question, mentions[index], 1)
    for j in sorted(used):
        other = mentions[j]
        if start <= other.start < end or not shares_value(mentions[index], other):
            continue
        if _unit_words(question, other, 1) != head:
            continue
        s, e = next(((s, e) for s, e in spans if s <= other.start < e), (0, len(question)))
        if own <= _sentence_words(question[s:e])[1]:
            return other.text
    return None


@lru_cache(maxsize=64)
def _sentence_words(sentence: str) -> tuple[frozenset[str], frozenset[str]]:
    """A sentence's words and its content words without its numbers, read once per sentence: every number of a
    sentence asks for them (1 200 numbers in one 4 KB sentence read it 1 200 times: 2 s in the guard)."""
    return frozenset(WORD.findall(sentence.lower())), frozenset(content_words(remove_numbers(sentence)))

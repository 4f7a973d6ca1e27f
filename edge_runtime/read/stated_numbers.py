"""How a number is stated in a question: as a count of a thing the question counts, or as a multiple.

The guard binds values to mentions and judges the numbers left over; these rules say what a mention stands for
beyond its value: "one fry" in a question about 25 fries is a quantity (not the "one" of "one of them"), and "3
times" or "tripled" states a multiple where "3 years" does not.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from edge_runtime.read.english_words import MULTIPLIERS, plural_stem
from edge_runtime.read.mentions import Mention

_NEXT_WORD = re.compile(r"[\s-]+([a-z]+)")
#: What "one of ..." picks from: "one *of the pads*", "a couple *of her pens*" (not "one of them")
_OF_THING = re.compile(r"\s+of\s+(?:(?:the|her|his|their|its|my|our|your|these|those)\s+)?([a-z]+)")
_CLAUSE_END = re.compile(r"[,;.?!]")


def counts_a_counted_thing(question: str, index: int, mentions: Sequence[Mention]) -> bool:
    """A weak number ("one", "a couple") before a thing the question counts with another number: "25 fries ... the squirrel
    dropped one fry", "3 pads ... *one of the pads* is given away" state a quantity of the story, unlike "one of
    them", "each one" or "one day" in a question that counts no days. The thing is the word right after each number
    (or after "of the"), plurals folded. A "one" in a clause that states another number is the unit of a rate ("one
    sticker costs $0.75", "one box holds 12 eggs"), not a count."""
    mention, low = mentions[index], question.lower()
    thing = _OF_THING.match(low, mention.end) or _NEXT_WORD.match(low, mention.end)
    if thing is None:
        return False
    start = max((m.end() for m in _CLAUSE_END.finditer(question, 0, mention.start)), default=0)
    end = next((m.start() for m in _CLAUSE_END.finditer(question, mention.end)), len(question))
    if any(start <= other.start < end for j, other in enumerate(mentions) if j != index):
        return False
    counted = {plural_stem(m[1]) for j, other in enumerate(mentions) if j != index and not other.weak
               if (m := _NEXT_WORD.match(low, other.end))}
    return plural_stem(thing[1]) in counted


_TIMES = re.compile(r"[\s-]*(?:times|fold|x)\b", re.IGNORECASE)


def states_a_multiple(question: str, mention: Mention) -> bool:
    """The mention names a multiple: a multiplying word ("twice", "tripled") or a number of times ("3 times",
    "four-fold", "3x"), not a count of something ("3 years")."""
    last_word = (mention.text.lower().split() or [""])[-1]
    return last_word in MULTIPLIERS or _TIMES.match(question, mention.end) is not None

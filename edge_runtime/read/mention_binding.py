"""Which mention of a question states which slot's value: the guard's binding helpers.

The guard reads values (from the template, the aligner or the model) and then finds, for each, the number of the
question that states it, by value and by the words around it (:func:`best_mention`); these are the pieces of that
binding that are not the guard's checks themselves: fractions written in slots, a value stated as a share of a
number, and two values read crossed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from edge_runtime.read.mentions import Mention, same_value
from edge_runtime.read.mentions import read_values as _read
from edge_runtime.read.template_facts import PARTS as _PARTS
from edge_runtime.read.template_facts import Context, TemplateFacts
from edge_runtime.read.values import reads_as_share

_FRACTION = re.compile(r"(\d+)\s*/\s*(\d+)")
_WORDED_FRACTION = re.compile(rf"(.+?)[\s-]+{_PARTS}", re.IGNORECASE)  # "two thirds"
_SHARE_BETWEEN = re.compile(r"\s+(?:times\s+)?of\s+(?:(?:a|an)\s+)?", re.IGNORECASE)


def best_mention(mentions: Sequence[Mention], contexts: Sequence[Context], used: set[int], context: Context,
                 test: Any) -> int | None:
    """The unused mention passing ``test`` whose neighbouring words best match ``context`` (first on ties)."""
    best, best_score = None, -1
    for i, mention in enumerate(mentions):
        if i in used or not test(mention):
            continue
        score = len(contexts[i][0] & context[0]) + len(contexts[i][1] & context[1])
        if score > best_score:
            best, best_score = i, score
    return best


def crossed(bound: dict[str, int], values: dict[str, Any], slots: dict[str, Context],
             contexts: Sequence[Context]) -> tuple[str, str] | None:
    """Two parameters each of whose values fits the other's slot better than its own (the words just before it
    against the slot's words before, the words after against the words after), or None. Both must: one value
    alone that fits elsewhere better is a renamed neighbour ("on Tuesday" where the template has "on Wednesday"
    one slot later), not a crossing. Values that are equal, or read from one mention, cannot be crossed in a way
    that changes the answer."""
    def fit(index: int, name: str) -> int:
        before, after = slots.get(name, (set(), set()))
        return len(contexts[index][0] & before) + len(contexts[index][1] & after)

    names = sorted(bound)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            if bound[a] == bound[b] or same_value(float(values[a]), float(values[b])):
                continue
            if fit(bound[a], b) > fit(bound[a], a) and fit(bound[b], a) > fit(bound[b], b):
                return a, b
    return None


def bind_fractions(facts: TemplateFacts, mentions: Sequence[Mention], values: dict[str, float], used: set[int],
                   bound: dict[str, int]) -> list[str]:
    """Bind the slots the template writes as a fraction to one unused fraction of the question that holds
    all their values: "{a}/{b}" to "2/5" (a=2, b=5, never crossed with another fraction or pieced together
    from two numbers), "{n} thirds" to "two thirds" (the same fraction word). Returns the fraction words so
    stated, which the template's constants then need not find again."""
    stated_words: list[str] = []
    for a, b in facts.fraction_pairs:
        if a not in values or b not in values:
            continue
        for i, mention in enumerate(mentions):
            fraction = _FRACTION.fullmatch(mention.text)
            if (i not in used and fraction and same_value(float(fraction[1]), values[a])
                    and same_value(float(fraction[2]), values[b])):
                used.add(i)
                bound[a] = bound[b] = i
                break
    for name, word in facts.worded_numerators.items():
        if name not in values or name in bound:
            continue
        for i, mention in enumerate(mentions):
            worded = _WORDED_FRACTION.fullmatch(mention.text)
            numerator = _read(worded[1]) if worded else None
            if (i not in used and numerator and re.split(r"[\s-]+", mention.text.lower())[-1] == word
                    and same_value(numerator[0], values[name])):
                used.add(i)
                bound[name] = i
                stated_words.append(word)
                break
    return stated_words


def share_of(text: str, mentions: Sequence[Mention], used: set[int], value: float,
             others: Sequence[float]) -> tuple[int, int] | None:
    """Two unused neighbouring mentions that state ``value`` as a share of a number ("half of 40",
    "3/5 of 20", "half of a thousand"), as the value reader reads such a span. Not a percentage or an
    amount of money, and not a share of a number another slot holds ("3/4 of 40 students" where the
    entry's 40 students are a slot of their own: the 30 is then the reasoning's to compute)."""
    for i, (share, whole) in enumerate(zip(mentions, mentions[1:])):
        between = text[share.end:whole.start]
        if (i in used or i + 1 in used or not _SHARE_BETWEEN.fullmatch(between)
                or share.percent or share.money or whole.percent or whole.money
                or any(same_value(whole.values[0], other) for other in others)):
            continue
        if reads_as_share(share.values[0], "times" in between.lower()) and same_value(share.values[0] * whole.values[0], value):
            return i, i + 1
    return None

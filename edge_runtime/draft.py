"""A cheap aligner that drafts the extractor's answer for the model to verify in one pass.

Numbers in the question are assigned to the numeric parameters in template order, and a
choice parameter takes the choice the question names. The model then checks the whole
draft in a single forward pass; wherever it disagrees, decoding continues from there, so
the result is exactly the constrained greedy answer, only cheaper when the draft is right.
"""

from __future__ import annotations

import re
import string
from fractions import Fraction

from edge_runtime.metadata import Param

_NUMBER_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million "
    "dozen half quarter third thirds quarters twice thrice"
).split()
_WORD = "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True))
_SPAN = re.compile(
    rf"(?<![\w.])(?:\d+\s+\d+/\d+|\d+/\d+|\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?|\d*\.\d+|\d+)(?![\w/])"
    rf"|\b(?:(?:{_WORD})(?:[\s-]+(?:and\s+)?(?:a\s+)?(?:{_WORD}))*)\b",
    re.IGNORECASE,
)


def number_spans(question: str) -> list[str]:
    """Number-like spans in reading order: digits, fractions, separators, number words."""
    return [m.group(0) for m in _SPAN.finditer(question)]


def draft_values(template: str, params: tuple[Param, ...], question: str) -> dict[str, str] | None:
    """A guess of every parameter's span, or None when the aligner has no confident guess."""
    order = [f for _, f, _, _ in string.Formatter().parse(template) if f]
    by_name = {p.name: p for p in params}
    numeric = [by_name[n] for n in dict.fromkeys(order) if by_name[n].type in (int, float, Fraction) and by_name[n].choices is None]
    spans = number_spans(question)
    if len(spans) < len(numeric):
        return None
    draft: dict[str, str] = {}
    for param, span in zip(numeric, spans):
        draft[param.name] = span
    low = question.lower()
    for param in params:
        if param.name in draft:
            continue
        if param.choices is None:
            return None
        named = [str(c) for c in param.choices if re.search(rf"\b{re.escape(str(c).lower())}\b", low)]
        if len(named) != 1:
            return None
        draft[param.name] = named[0]
    return {p.name: draft[p.name] for p in params}

"""The question's currency in the answer's narration.

An entry's narration is written once, in the currency of the question it was cached from ("bus hire:
7 buses × $350"). IS2 reads a question that names another currency as the same question ("€350 to
hire": a rename, like an object's), so the narration must speak the question's currency, not the
template's: a user who asked in euros and reads dollars is told something the cache did not compute.
Only a plain one-for-one rename is rewritten: the template states money in one symbol and the question
in exactly one other. Anything else (both symbols in the question, no symbol) leaves the narration
as the entry wrote it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from edge_runtime.entries.context import NarrationStep

#: The currency symbols a question may write before an amount (the aligner reads one as a rename of another).
SYMBOLS = "$€£¥₹"
_AMOUNT = re.compile(rf"([{re.escape(SYMBOLS)}])\s?(?=[\d{{.])")


def _symbols(text: str) -> set[str]:
    return set(_AMOUNT.findall(text))


def question_currency(template: str, question: str) -> tuple[str, str] | None:
    """(the template's symbol, the question's) when the question renames the one currency; else None."""
    cached, asked = _symbols(template), _symbols(question)
    if len(cached) == 1 and len(asked) == 1 and cached != asked:
        return next(iter(cached)), next(iter(asked))
    return None


def in_question_currency(steps: Sequence[NarrationStep], template: str, question: str) -> list[NarrationStep]:
    """``steps`` with each amount in the template's currency written in the question's (a no-op otherwise)."""
    rename = question_currency(template, question)
    if rename is None:
        return list(steps)
    old, new = rename
    pattern = re.compile(rf"{re.escape(old)}(?=\s?[\d.])")
    return [replace(step, text=pattern.sub(new, step.text)) for step in steps]

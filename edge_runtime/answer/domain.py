"""IS4's checks on the value an entry computed: the answer under its key, and whether it is in the entry's domain.

An entry's reasoning was cached from one question; new values can carry it where it never went. An entry
that counts things (``whole_answer``) and comes out fractional lacks a rounding step it never needed, and an
answer below ``answer_minimum`` ("change" of −4 dollars) is a question the cached reasoning does not cover:
both are a MISS ``answer_out_of_domain``, never a wrong answer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any

from edge_runtime.entries.metadata import EntryPoint


def answer_value(entry: EntryPoint, result: Mapping[str, Any]) -> Any:
    """The answer: the result's value under the entry's answer key (None when the entry names none)."""
    return result.get(entry.answer_key) if entry.answer_key else None


def out_of_domain(entry: EntryPoint, value: Any) -> str | None:
    """Why ``value`` is outside what ``entry`` answers (the miss detail), or None when it is inside."""
    if entry.whole_answer and not _whole(value):
        return (f"the entry counts things, but its reasoning gives {value!r} "
                "for these values (a rounding step it never needed)")
    if entry.answer_minimum is not None and not _at_least(value, entry.answer_minimum):
        return (f"the entry's answer is at least {entry.answer_minimum:g}, but its "
                f"reasoning gives {value!r} for these values (they leave the case it was cached for)")
    return None


def _number(value: Any) -> float | None:
    """The answer as a float, or None when it is no number (text, a dict, a bool: nothing to judge)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction, Decimal)):
        return None
    return float(value)


def _whole(value: Any) -> bool:
    """A whole number (or not a number at all: nothing to judge). NaN and infinities are not whole."""
    number = _number(value)
    if number is None:
        return True
    return math.isfinite(number) and abs(number - round(number)) <= 1e-9 * max(1.0, abs(number))


def _at_least(value: Any, minimum: float) -> bool:
    """Not below ``minimum`` (or not a number at all). NaN is below everything."""
    number = _number(value)
    return number is None or number >= minimum

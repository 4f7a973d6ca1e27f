"""Answer normalisation: when does a served answer equal a query set's expected answer?

Rules (docs/benchmarks.md repeats them):

1. Numbers are compared as numbers, with a relative tolerance of 1e-6
   (``|a - b| <= 1e-6 * max(1, |a|, |b|)``), so an int and a float equal when the float is
   within that tolerance of the int (``18 == 18.0 == 17.9999999999``).
2. A numeric string is read as a number: surrounding whitespace, a currency sign, thousands
   separators and a trailing ``%`` are dropped (``"$1,250.50"`` -> 1250.5).
3. An expected answer written as a string with ``d >= 1`` decimal places also matches a served
   number that rounds to it at ``d`` places (GSM-Plus writes ``"4.33"`` for 13/3): a reference
   rounded by its authors is not a disagreement.
4. Anything else is compared as text: stripped and lower-cased.
5. ``None`` (or the string ``"None"``: GSM-Plus's unanswerable questions) matches nothing.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

REL_TOL = 1e-6
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


def as_number(value: Any) -> float | None:
    """The value as a finite float, or None when it is not a number (bools are not numbers)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float, Fraction)):
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, str):
        text = value.strip().replace(",", "")
        text = re.sub(r"^[$€£¥₹]\s*", "", text)
        text = re.sub(r"^([-+])\s*[$€£¥₹]\s*", r"\1", text)
        text = text.removesuffix("%").strip()
        if _NUMBER.fullmatch(text):
            number = float(text)
            return number if math.isfinite(number) else None
    return None


def decimals_written(value: Any) -> int:
    """How many decimal places a string answer was written with ("4.33" -> 2; 4.33 or "4" -> 0)."""
    if not isinstance(value, str):
        return 0
    text = value.strip().replace(",", "").removesuffix("%")
    match = re.fullmatch(r"[^\d.]*\d*\.(\d+)", text)
    return len(match.group(1)) if match else 0


def numbers_close(a: float, b: float, rel: float = REL_TOL) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def is_unanswerable(expected: Any) -> bool:
    return expected is None or (isinstance(expected, str) and expected.strip().lower() in ("none", ""))


def answers_match(served: Any, expected: Any) -> bool:
    """True when ``served`` is the ``expected`` answer under the rules in the module docstring."""
    if served is None or is_unanswerable(expected):
        return False
    if isinstance(served, dict) and "answer" in served:
        served = served["answer"]
    a, b = as_number(served), as_number(expected)
    if a is not None and b is not None:
        if numbers_close(a, b):
            return True
        places = decimals_written(expected)
        return places > 0 and numbers_close(round(a, places), b, 1e-12)
    if a is not None or b is not None:
        return False
    return str(served).strip().lower() == str(expected).strip().lower()

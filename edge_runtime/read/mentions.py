"""The numbers an English word problem states, as the guard and the extractor see them ("Mention"s).

One scanner for every stage that asks "which numbers does this text state?": digits, fractions, number words,
"half", "twice", "a dozen", a share of a power of ten ("3/4 of one hundred"), each with the values a program
may use for it (a percent also as a rate, "half" also as a divisor of 2). The words come from the one English
table (edge_runtime/read/english_words.py); the values from the one span reader (edge_runtime/read/values.py).
It is the en-word-problems/1 pack's scanner; plain/1 has its own, digits only (edge_runtime/read/packs/plain.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from edge_runtime.errors import ConversionError
from edge_runtime.read.english_words import CARDINALS, DEVICE_NUMBER_WORDS
from edge_runtime.read.values import (
    DIGITS,
    DIGITS_END,
    SHARE_OF_POWER,
    parse_quantity,
    share_of_power,
)

#: Words that state a number without being a cardinal, with every value a program may use for them.
STRUCTURAL: dict[str, tuple[float, ...]] = DEVICE_NUMBER_WORDS
_CARD = "|".join(sorted(CARDINALS, key=len, reverse=True))
_STRUCT = "|".join(sorted(STRUCTURAL, key=len, reverse=True))
NUMBER = re.compile(
    rf"(?<![\w.]){DIGITS}{DIGITS_END}"  # "1st" is dropped in scan()
    rf"|\b(?:(?:{_CARD})(?:[\s-]+(?:and\s+)?(?:{_CARD}))*(?:[\s-]+(?:{_STRUCT}))?)\b"
    rf"|\b(?:(?:a|an)\s+)?(?:{_STRUCT})\b",
    re.IGNORECASE,
)
PERCENT_AFTER = re.compile(r"\s*(?:%|percent\b|per\s*cent\b)", re.IGNORECASE)
_ORDINAL_AFTER = re.compile(r"(?:st|nd|rd|th)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Mention:
    """A number stated in a text: where, as written, and the values a program may use for it."""

    start: int
    end: int
    text: str
    values: tuple[float, ...]  # the first is the value as read; then alternatives (percent as a rate, "half" as /2)
    weak: bool = False  # "one", "zero": often not a quantity of the problem ("one of them", "each one")
    percent: bool = False
    money: bool = False


def read_values(text: str) -> tuple[float, ...] | None:
    """The values a program may use for a number as written (the value as read first), or None."""
    low = text.lower().strip()
    last = re.split(r"[\s-]+", low)[-1]
    try:
        value = float(Fraction(parse_quantity(text).value))
    except (ConversionError, ValueError, ZeroDivisionError):
        value = None
    if last in STRUCTURAL:
        alternatives = STRUCTURAL[last]
        if value is None:
            return alternatives
        return (value,) + tuple(a for a in alternatives if abs(a - value) > 1e-12)
    return (value,) if value is not None else None


def scan(text: str) -> list[Mention]:
    """Every number stated in ``text``, in order (digits, fractions, number words, "half", "twice", "a dozen")."""
    found: list[Mention] = []
    for match in NUMBER.finditer(text):
        raw = match.group(0)
        if _ORDINAL_AFTER.match(text, match.end()) and raw[-1].isdigit():
            continue  # "1st", "3rd"
        values = read_values(raw)
        if values is None:
            continue
        percent = bool(PERCENT_AFTER.match(text, match.end()))
        if percent:
            values = values + (values[0] / 100,)
        money = text[max(0, match.start() - 1):match.start()] in ("$", "€", "£") or bool(
            re.match(r"\s*(?:dollars?|cents?|bucks|euros?|pounds?)\b", text[match.end():], re.IGNORECASE))
        weak = raw.lower() in ("one", "zero")
        found.append(Mention(match.start(), match.end(), raw, values, weak, percent, money))
    for match in SHARE_OF_POWER.finditer(text):  # "3/4 of one hundred" is one number, 75: it replaces its parts
        try:
            value = float(share_of_power(match))
        except ConversionError:
            continue
        found = [m for m in found if not (match.start() <= m.start and m.end <= match.end())]
        found.append(Mention(match.start(), match.end(), match.group(0), (value,)))
    return sorted(found, key=lambda m: m.start)


def same_value(a: float, b: float) -> bool:
    """Two numbers equal up to float noise ("0.1 + 0.2" and "0.3")."""
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def shares_value(a: Mention, b: Mention) -> bool:
    """Two mentions state the same number: same value as read ("a half" = "0.5", "ten" = "10"), or one is
    the other's percentage as a rate ("25%" = "0.25"). "half" is not "twice", though a program may divide
    by 2 for either."""
    if same_value(a.values[0], b.values[0]):
        return True
    return (a.percent and same_value(a.values[-1], b.values[0])) or (b.percent and same_value(b.values[-1], a.values[0]))

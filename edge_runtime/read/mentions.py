"""The numbers an English word problem states, as the guard and the extractor see them ("Mention"s).

One scanner for every stage that asks "which numbers does this text state?": digits, fractions, number words,
"half", "twice", "a dozen", "one-fourth", a share of a power of ten ("3/4 of one hundred"), each with the values
a program may use for it (a percent also as a rate, "half" also as a divisor of 2). The words come from the one
English table (edge_runtime/read/english_words.py); the values from the one span reader (edge_runtime/read/values.py).
It is the en-word-problems/1 pack's scanner, and the importer's (builder/gsm8k.py: it makes its slots of the
``parts`` of each mention, so both read every number of a question alike); plain/1 has its own, digits only
(edge_runtime/read/packs/plain.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from edge_runtime.errors import ConversionError
from edge_runtime.read.english_words import CARDINALS, DEVICE_NUMBER_WORDS, FRACTIONS, NUMBER_WORDS, SCALES
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
#: Fraction words read only after a count ("one-fourth", "three eighths"): alone, "the fourth day" and "a sixth
#: time" are ordinals, which the device does not read as numbers.
COUNTED_FRACTIONS: dict[str, tuple[float, ...]] = {
    w: v for w, v in NUMBER_WORDS.items() if w not in STRUCTURAL and w.rstrip("s") in FRACTIONS and w.rstrip("s") != "hundredth"}
_COUNTED = "|".join(sorted(COUNTED_FRACTIONS, key=len, reverse=True))
_SCALE = "|".join(SCALES)
NUMBER = re.compile(
    rf"(?<![\w.]){DIGITS}{DIGITS_END}"  # "1st" is dropped in scan()
    rf"|\b(?:(?:a|an)\s+(?={_SCALE}))?(?:(?:{_CARD})(?:[\s-]+(?:and\s+)?(?:{_CARD}))*(?:[\s-]+(?:{_STRUCT}|{_COUNTED}))?)\b"
    rf"|\b(?:(?:a|an)\s+)?(?:{_STRUCT})\b",
    re.IGNORECASE,
)
PERCENT_AFTER = re.compile(r"\s*(?:%|percent\b|per\s*cent\b)", re.IGNORECASE)
CENTS_AFTER = re.compile(r"[\s-]*cents?\b", re.IGNORECASE)
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
    except (ConversionError, ValueError, ZeroDivisionError, OverflowError):  # 400 digits are no number a float holds
        value = None
    if last in STRUCTURAL or (last in COUNTED_FRACTIONS and value is not None):
        alternatives = STRUCTURAL.get(last) or COUNTED_FRACTIONS[last]
        if value is None:
            return alternatives
        return (value,) + tuple(a for a in alternatives if abs(a - value) > 1e-12)
    return (value,) if value is not None else None


#: "a couple of pads": two, a weak mention as "one" is (a couple may be two people)
_COUPLE = re.compile(r"\ba couple\b", re.IGNORECASE)


def scan(text: str) -> list[Mention]:
    """Every number stated in ``text``, in order (digits, fractions, number words, "half", "twice", "a dozen")."""
    found: list[Mention] = []
    for match in NUMBER.finditer(text):
        raw = match.group(0)
        if _ORDINAL_AFTER.match(text, match.end()) and raw[-1].isdigit() and "/" not in raw:
            continue  # "1st", "3rd"; "1/3rd" is a third
        for start, end in _readable_runs(text, match.start(), match.end()):
            found.append(_mention(text, start, end))
    for match in SHARE_OF_POWER.finditer(text):  # "3/4 of one hundred" is one number, 75: it replaces its parts
        try:
            value = float(share_of_power(match))
        except ConversionError:
            continue
        found = [m for m in found if not (match.start() <= m.start and m.end <= match.end())]
        found.append(Mention(match.start(), match.end(), match.group(0), (value,)))
    for match in _COUPLE.finditer(text):
        found.append(Mention(match.start(), match.end(), match.group(0), (2.0,), weak=True))
    return sorted(found, key=lambda m: m.start)



def _mention(text: str, start: int, end: int) -> Mention:
    """The mention at ``text[start:end]``, a span ``read_values`` reads."""
    raw = text[start:end]
    values = read_values(raw) or ()
    percent = bool(PERCENT_AFTER.match(text, end))
    if percent:
        values = values + (values[0] / 100,)
    elif values and CENTS_AFTER.match(text, end) and text[max(0, start - 1):start] not in ("$", "€", "£"):
        values = values + (values[0] / 100,)  # "30 cents" is also $0.30 (edge_runtime/read/measures.in_currency)
    money = text[max(0, start - 1):start] in ("$", "€", "£") or bool(
        re.match(r"\s*(?:dollars?|cents?|bucks|euros?|pounds?)\b", text[end:], re.IGNORECASE))
    return Mention(start, end, raw, values, raw.lower() in ("one", "zero"), percent, money)


_RUN_WORD = re.compile(r"[A-Za-z]+|[^\sA-Za-z-]+")
#: The most words one number is written in ("nine hundred and ninety-nine thousand nine hundred and ninety-nine" is 13):
#: a run is looked for no longer, so a match of many number words ("ten ten ten ...", 4 KB of them took minutes, every
#: run tried from every word) costs a few readings per word.
_MAX_RUN_WORDS = 8


def _readable_runs(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The spans of one NUMBER match that each read as a number: the whole match, or, when the words run
    together two numbers ("days one and two", "one fifty-dollar bill", "three fourth"), the longest readable
    run of words from each word on (a number the match held must not vanish from the guard's view)."""
    if read_values(text[start:end]) is not None:
        return [(start, end)]
    words = [(m.start() + start, m.end() + start) for m in _RUN_WORD.finditer(text[start:end])]
    runs, i = [], 0
    while i < len(words):
        for j in range(min(len(words) - 1, i + _MAX_RUN_WORDS - 1), i - 1, -1):
            piece = text[words[i][0]:words[j][1]]
            if piece.lower().split()[-1] != "and" and read_values(piece) is not None:
                runs.append((words[i][0], words[j][1]))
                i = j
                break
        i += 1
    return runs


#: The pieces a compound number is written from, as a program may write them apart: the digits of "2/5", the
#: count and the fraction word of "two thirds", the share and the power of "3/10 of one hundred".
_PIECE = re.compile(
    rf"(?<![\d/])1/\d+(?![\d/])"  # "1/5": a unit fraction is one piece (0.2, or a division by 5)
    rf"|\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?|\d*\.\d+|\d+"
    rf"|\b(?:{_CARD})(?:[\s-]+(?:and\s+)?(?:{_CARD}))*-(?:{_STRUCT}|{_COUNTED})\b"  # "one-third": one word
    rf"|\b(?:{_CARD})(?:[\s-]+(?:and\s+)?(?:{_CARD}))*\b"
    rf"|\b(?:{_STRUCT}|{_COUNTED})\b",
    re.IGNORECASE,
)


def parts(text: str, mention: Mention) -> list[Mention]:
    """The pieces of ``mention`` (a mention of ``text``) that a program may write as literals of their own:
    "2/5" is 2 and 5, "two thirds" is "two" and "thirds", "1.2 times of ten" is 1.2 and ten, "a pair" is
    "pair"; a number written in one piece ("1/5", "one-third", "twenty five") is itself. The importer makes
    its slots of these pieces; the guard binds "{a}/{b}" and "{n} thirds" back to the whole mention."""
    pieces = []
    for match in _PIECE.finditer(text, mention.start, mention.end):
        values = read_values(match.group(0)) or COUNTED_FRACTIONS.get(match.group(0).lower())  # "fourths" of "three fourths"
        if values is not None:
            pieces.append(Mention(match.start(), match.end(), match.group(0), values, match.group(0).lower() in (
                "one", "zero")))
    return pieces or [mention]


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

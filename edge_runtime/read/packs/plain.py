"""``plain/1``: numbers written in digits, and no phrase rules — for caches whose questions are not English
word problems (unit conversions, invoices, API payloads).

What it keeps, and why:
- **numbers**: digits, decimals, thousands separators, fractions ("1/2") and mixed numbers ("3 1/2"), with a
  sign, a currency symbol before ("$12.50") and a one-word unit after ("2.5 kg", "3 apples", "15%"), read exactly.
  These mean the same in any language and any domain. No number words ("three", "a dozen", "twice", "half"):
  a word is read as a word, so a slot filled by "three" fails validation and the question misses.
- **the guard's structural checks** (edge_runtime/read/guard.py with ``phrase_rules=False``): every numeric
  value is a number the question states, every number of the template's own text is stated with the same
  value, no other number is stated (no restatement is recognised: that needs English words), a fraction the
  template writes in slots is one fraction of the question, a percent slot is stated with "%". These compare
  numbers with the entry, never words.
- **the template and aligned paths**: the question is the template with new values, or the template reworded
  around its slots token by token (edge_runtime/read/template_align.py); what both read is then checked above.

What it drops, and why: set-aside phrases ("..., which is irrelevant"), the restatement and "another" rules,
months and time units stated with an article, and the final-question checks, which all read English words;
and with them the model path (``reads_reworded = False``): without a check of what a reworded question asks
("how fast was the car" of an entry that takes the speed), the model's reading of it must not be served.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from edge_runtime.errors import ConversionError
from edge_runtime.read.guard import GuardConfig, ReasoningGuard
from edge_runtime.read.mentions import Mention
from edge_runtime.read.packs.base import Guard, ReadingPack
from edge_runtime.read.values import DIGITS, DIGITS_END, Quantity

_CURRENCY = "$€£¥₹"
_MENTION = re.compile(rf"(?<![\w.]){DIGITS}{DIGITS_END}")
_ORDINAL_AFTER = re.compile(r"(?:st|nd|rd|th)\b", re.IGNORECASE)
_PERCENT_AFTER = re.compile(r"\s*%")
#: A unit is one word with no digit and no sign in front: "kg", "apples", "%", "km/h", "°C". Several words may
#: hide a number plain/1 cannot read ("3/4 of one hundred"), so they are refused rather than taken for a unit.
_UNIT = re.compile(r"%|[^\s\d+\-–~/][^\s\d]*")
_SPAN = re.compile(
    rf"(?P<s1>[+-])?\s*(?P<cur>[{_CURRENCY}])?\s*(?P<s2>[+-])?\s*"
    r"(?P<num>\d+\s+\d+\s*/\s*\d+|\d+\s*/\s*\d+|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d*\.\d+|\d+)"
    r"(?![\d,./]\d)(?P<rest>.*)", re.DOTALL)


def _value(number: str) -> Fraction:
    """The exact value of a digit-written number ("3 1/2", "1,250.50", "2/3")."""
    number = number.replace(",", "")
    parts = number.split()
    if len(parts) == 3 or (len(parts) == 2 and "/" in parts[1]):  # "3 1/2" (spaces around "/" tolerated)
        whole, fraction = parts[0], "".join(parts[1:])
        return Fraction(whole) + _value(fraction)
    if "/" in number:
        numerator, denominator = (int(p) for p in number.replace(" ", "").split("/"))
        if denominator == 0:
            raise ConversionError(f"{number!r} divides by zero")
        return Fraction(numerator, denominator)
    return Fraction(number)


def read_plain(text: str) -> Quantity:
    """One digit-written number and its optional unit; ConversionError for anything else ("three", "2 or 3")."""
    if not isinstance(text, str):
        raise ConversionError(f"expected the text of a number, got {type(text).__name__}")
    body = re.sub(r"[\u00a0\u2009\u202f]", " ", text).replace("\u2212", "-").strip().rstrip(".,").strip()
    match = _SPAN.fullmatch(body)
    if match is None:
        raise ConversionError(f"{text!r} is not a number written in digits (plain/1 reads no number words)")
    if match["s1"] and match["s2"]:
        raise ConversionError(f"{text!r} has two signs")
    value = _value(match["num"])
    rest = match["rest"].strip()
    unit: str | None = None
    if rest:
        if not _UNIT.fullmatch(rest):  # "3/4 of one hundred", "2 or 3", "5 - 3": more than one number and a unit
            raise ConversionError(f"{text!r} does not hold exactly one number and a one-word unit (left over: {rest!r})")
        unit = rest
    if match["cur"]:
        if unit:
            raise ConversionError(f"{text!r} has two units: {match['cur']!r} and {unit!r}")
        unit = match["cur"]
    if (match["s1"] or match["s2"]) == "-":
        value = -value
    return Quantity(int(value) if value.denominator == 1 else value, unit, text)


def scan_plain(text: str) -> list[Mention]:
    """Every digit-written number of ``text`` ("1st" is not one); "15%" also reads as the rate 0.15."""
    found = []
    for match in _MENTION.finditer(text):
        if _ORDINAL_AFTER.match(text, match.end()):
            continue
        try:
            value = float(_value(match.group(0)))
        except (ConversionError, ValueError, ZeroDivisionError):
            continue
        percent = bool(_PERCENT_AFTER.match(text, match.end()))
        values = (value, value / 100) if percent else (value,)
        money = text[max(0, match.start() - 1):match.start()] in tuple(_CURRENCY)
        found.append(Mention(match.start(), match.end(), match.group(0), values, False, percent, money))
    return found


class Plain(ReadingPack):
    """Digits, decimals and fractions; the guard's structural checks; template and aligned paths only."""

    name = "plain/1"
    reads_reworded = False

    def read_quantity(self, text: str) -> Quantity:
        return read_plain(text)

    def scan(self, text: str) -> list[Mention]:
        return scan_plain(text)

    def make_guard(self, embedder: Any = None) -> Guard:
        return ReasoningGuard(GuardConfig(), embedder, scanner=scan_plain, phrase_rules=False)

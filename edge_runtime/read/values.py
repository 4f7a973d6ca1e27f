"""Read a number span the target LM copied verbatim ("forty-two", "$1,250.50", "3 1/2") into an exact value.

The small model only copies text; meaning is decided here, deterministically, so one span always gives one value.
Anything that is not exactly one unambiguous number raises ConversionError instead of being guessed.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from fractions import Fraction

from edge_runtime.errors import ConversionError
from edge_runtime.read.english_words import FRACTIONS, MULTIPLIERS, ONES, SCALES, TENS

_ONES, _TENS, _SCALES = ONES, TENS, SCALES
_BIG = {w: v for w, v in _SCALES.items() if w != "hundred"}
_ORDINALS = {w: d for w, d in FRACTIONS.items() if d <= 10}  # "one hundredth" is left to digits
_DENOMINATORS = {**_ORDINALS, **{w + "s": d for w, d in _ORDINALS.items() if w != "half"}, "halves": 2}
#: Units of time, which a question may state with an article alone ("after an hour", "a week later").
TIME_UNITS = ("second", "minute", "hour", "day", "week", "month", "year")
#: A number written in digits: a mixed number, a fraction, thousands separators, a decimal, an integer.
DIGITS = r"(?:\d+\s+\d+/\d+|\d+/\d+|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d*\.\d+|\d+)"
#: What may not follow it: more digits or the rest of a number ("2/3", "1.5"). A unit may, without a space:
#: "115g", "73km/hr", "$427/hour" state 115, 73 and 427 (the guard must see every stated number).
DIGITS_END = r"(?![\d_]|[.,/]\d)"
#: The days a month's name states, which a program may use ("how much does he make in June" sells 30 days of
#: doughnuts). "May" is left out: it is mostly the verb.
MONTH_DAYS = {"january": 31, "february": 28, "march": 31, "april": 30, "june": 30, "july": 31, "august": 31,
              "september": 30, "october": 31, "november": 30, "december": 31}
#: (MONTH_DAYS leaves out "may", which the aligner would read as a quantity wherever it is a verb.)
#: "May" is a month where it is capitalised inside a sentence ("in the month of May"), a verb elsewhere ("may").
_MAY = re.compile(r"(?<![.?!]\s)(?<![.?!]\s\s)(?<!^)\bMay\b")


def months_named(text: str) -> dict[str, int]:
    """The months a text names (lower-cased, in order of first mention) -> the days each states."""
    found = [(m.start(), m.group(0).lower()) for m in re.finditer(r"[A-Za-z]+", text) if m.group(0).lower() in MONTH_DAYS]
    found += [(m.start(), "may") for m in _MAY.finditer(text)]
    return {w: MONTH_DAYS.get(w, 31) for _, w in sorted(found)}


_ALONE = MULTIPLIERS
_HALF_OF = {"dozen": 12, **_SCALES}  # "half a dozen", "half a million"
_AFTER_ARTICLE = {"dozen", *_SCALES, *_DENOMINATORS}  # "a" means one only before these
_VULGAR = {ch: Fraction(unicodedata.numeric(ch)).limit_denominator(10) for ch in "½⅓⅔¼¾⅕⅖⅗⅘⅙⅚⅛⅜⅝⅞"}
_VOCAB = {*_ONES, *_TENS, *_AFTER_ARTICLE, *_ALONE, "pair", "couple", "a", "an", "and"}
# Words a unit may not contain: a second number, a range or an ordinal ("2 hours and a half", "5 kg or more").
_NOT_IN_UNIT = (_VOCAB - {"a", "an"}) | {"or", "to", "than", "plus", "minus", "first", "eleventh", "twelfth",
    "st", "nd", "rd", "th", *(w + "s" for w in _SCALES), "dozens", *(w + "th" for w in list(_ONES)[13:]),
    *(w[:-1] + "ieth" for w in _TENS), *(w + "th" for w in _SCALES)}

_SIGN = r"(?P<{}>[+-]|(?i:minus|negative)\b)?\s*"
_PREFIX = re.compile(_SIGN.format("s1") + r"(?P<cur>[$€£¥₹]|(?!ONE|TWO|SIX|TEN)[A-Z]{3}(?=\s*[\d.]))?\s*"
                     + _SIGN.format("s2"))
_TOKEN = re.compile(
    r"(?:\s|(?<=[a-zA-Z])-(?=[a-zA-Z]))*(?:"  # spaces, or the hyphen of "forty-two"
    r"(?P<frac>\d+\s*/\s*\d+)(?![\d/])"
    r"|(?P<num>(?:\d{1,3}(?:,\d{3})+|\d{1,3}(?: \d{3})+|\d+)(?:\.\d+)?|\.\d+)(?!\d|[,.]\d)"
    r"|(?P<vulgar>[" + "".join(_VULGAR) + r"])"
    r"|(?P<word>[a-zA-Z]+)\b)"
)
_PERCENT = re.compile(r"%|percent|per\s*cent|pct", re.IGNORECASE)
#: A number written as a share of a power of ten: "3/4 of one hundred" (75), "2.8 times of ten" (28), "0.01 times
#: of a million" (10 000). Only powers of ten in words, so "3/4 of 40 students" stays two numbers.
SHARE_OF_POWER = re.compile(
    r"(?<![\w.])(?P<share>\d+\s*/\s*\d+|\d*\.\d+|\d+)\s+(?:times\s+)?of\s+"
    r"(?P<power>ten|(?:one|a)\s+(?:hundred|thousand|million)|hundred|thousand|million)\b",
    re.IGNORECASE,
)
_POWERS = {"ten": 10, "hundred": 100, "thousand": 1000, "million": 10**6}


def share_of_power(match: re.Match[str]) -> Fraction:
    """The value of a SHARE_OF_POWER match, exact; ConversionError for a zero denominator ("1/0 of ten")."""
    share = match["share"].replace(" ", "")
    try:
        return Fraction(share) * _POWERS[match["power"].lower().split()[-1]]
    except ZeroDivisionError as exc:
        raise ConversionError(f"{match.group(0)!r} divides by zero") from exc


#: A whole span that is a share of a number: "half of 40", "3/5 of 20", "1.5 times of 8" (one value, 20, 12, 12).
_SHARE_OF = re.compile(r"(?P<share>.+?)\s+(?P<times>times\s+)?of\s+(?P<whole>.+)", re.IGNORECASE)


def reads_as_share(share: float, said_times: bool) -> bool:
    """Whether "<share> of <number>" is a product: a share below 1 ("half of 40", "3/5 of 20") or one said
    with "times" ("1.5 times of 8"); "2 of 5" (two out of five) is not. The value reader and the guard agree."""
    return 0 < share < 1 or (said_times and share > 0)


def _share_of(body: str) -> Fraction | None:
    """The value of a span that is entirely a share of a number (``reads_as_share``), else None."""
    match = _SHARE_OF.fullmatch(body)
    if match is None:
        return None
    try:
        share, whole = parse_quantity(match["share"]), parse_quantity(match["whole"])
    except ConversionError:
        return None
    if share.unit is not None or whole.unit is not None or whole.value < 0:
        return None
    if not reads_as_share(share.value, bool(match["times"])):
        return None
    return Fraction(share.value) * Fraction(whole.value)


@dataclass(frozen=True)
class Quantity:
    """A number with its unit kept apart, so an entry can check the unit instead of it being silently dropped."""

    value: int | float | Fraction  # exact: int when whole, else Fraction (2.5 -> Fraction(5, 2) == 2.5)
    unit: str | None  # as written ("kg", "litres", "$", "USD"); every percent spelling becomes "%"
    text: str  # the span as received


def parse_quantity(text: str) -> Quantity:
    """Read one number and its optional unit; raise ConversionError unless the span holds exactly one number."""
    if not isinstance(text, str):
        raise ConversionError(f"expected the text of a number, got {type(text).__name__}")
    body = re.sub(r"[\u00a0\u2009\u202f]", " ", text).replace("\u2212", "-").strip().rstrip(".,").strip()
    if not body:
        raise ConversionError(f"{text!r} is empty, not a number")
    share = SHARE_OF_POWER.fullmatch(body)
    value = share_of_power(share) if share else _share_of(body)
    if value is not None:
        return Quantity(int(value) if value.denominator == 1 else value, None, text)
    prefix = _PREFIX.match(body)
    if prefix["s1"] and prefix["s2"]:
        raise ConversionError(f"{text!r} has two signs")
    tokens = _lex(body, prefix.end(), text)
    for count in range(len(tokens), 0, -1):  # the longest run of tokens that reads as one number
        parser = _Parser(tokens[:count])
        value = parser.expression()
        if value is not None and parser.pos == count:
            break
    else:
        raise ConversionError(f"{text!r} holds no number")
    unit = _unit(body[tokens[count - 1][2]:].strip(), text)
    if prefix["cur"]:
        if unit:
            raise ConversionError(f"{text!r} has two units: {prefix['cur']!r} and {unit!r}")
        unit = prefix["cur"]
    if (prefix["s1"] or prefix["s2"] or "").lower() in ("-", "minus", "negative"):
        value = -value
    return Quantity(int(value) if value.denominator == 1 else value, unit, text)


def parse_number(text: str, kind: type = float) -> int | float | Fraction:
    """The number in ``text`` as ``kind`` (int, float or Fraction), unit dropped.

    int refuses non-whole values rather than rounding; Fraction is exact ("0.1" -> 1/10). A percentage is
    returned as written ("35%" -> 35, not 0.35): whether it is a rate or a share is for the entry to decide.
    """
    value = Fraction(parse_quantity(text).value)
    if kind is int:
        if value.denominator != 1:
            raise ConversionError(f"{text!r} is {value}, not a whole number")
        return int(value)
    if kind is float:
        return float(value)
    if kind is Fraction:
        return value
    raise ConversionError(f"cannot read {text!r} as {getattr(kind, '__name__', kind)}; use int, float or Fraction")


def _lex(body: str, pos: int, text: str) -> list[tuple[str, object, int]]:
    """Tokens (kind, value, end offset) from ``pos`` up to the first thing that cannot be part of a number."""
    tokens: list[tuple[str, object, int]] = []
    while match := _TOKEN.match(body, pos):
        if match["frac"]:
            numerator, denominator = (int(part) for part in match["frac"].split("/"))
            if denominator == 0:
                raise ConversionError(f"{text!r} divides by zero")
            token = ("frac", Fraction(numerator, denominator))
        elif match["num"]:
            token = ("num", Fraction(re.sub("[, ]", "", match["num"])))  # Fraction("0.1") is exactly 1/10
        elif match["vulgar"]:
            token = ("frac", _VULGAR[match["vulgar"]])
        elif match["word"].lower() in _VOCAB:
            token = ("word", match["word"].lower())
        else:
            break
        tokens.append((*token, match.end()))
        pos = match.end()
    return tokens


#: Where one sentence ends and another starts ("four. None of them are counted").
_SENTENCE_END = re.compile(r"[.;:]\s+[A-Z]|[?!]")


def _unit(rest: str, text: str) -> str | None:
    """The text after the number, refused when it hides another number or a range ("2 or 3", "5 and 7"), or runs
    into another sentence ("four. None of them are counted": a span a template's slot stretched over)."""
    if not rest:
        return None
    if _SENTENCE_END.search(rest):
        raise ConversionError(f"{text!r} runs past its sentence (left over: {rest!r})")
    if _PERCENT.fullmatch(rest):
        return "%"
    words = set(re.findall(r"[a-z]+", rest.lower()))
    if (re.search(r"\d", rest) or words & _NOT_IN_UNIT or rest[0] in "-+–~"
            or rest.lower() in ("a", "an") or any(ch in _VULGAR for ch in rest)):
        raise ConversionError(f"{text!r} does not hold exactly one number (left over: {rest!r})")
    return rest


class _Parser:
    """Recursive descent over tokens; a rule that does not apply returns None and consumes nothing."""

    def __init__(self, tokens: list[tuple[str, object, int]]) -> None:
        self.tokens, self.pos = tokens, 0

    def _peek(self, kind: str = "word"):
        if self.pos < len(self.tokens) and self.tokens[self.pos][0] == kind:
            return self.tokens[self.pos][1]
        return None

    def _take(self, *words: str) -> str | None:
        word = self._peek()
        if word is not None and word in words:
            self.pos += 1
            return word
        return None

    def expression(self) -> Fraction | None:
        """once | half [a dozen] | a pair | count [dozen | thirds | and a half]."""
        if (word := self._take(*_ALONE)) is not None:
            return Fraction(_ALONE[word])
        if self._take("half"):
            mark = self.pos
            if self._take("a", "an") and (word := self._take(*_HALF_OF)):
                return Fraction(_HALF_OF[word], 2)
            self.pos = mark
            return Fraction(1, 2)
        if self._take("a", "an"):
            if self._take("pair", "couple"):
                return Fraction(2)
            self.pos -= 1
        start = self.pos
        if (count := self._count()) is None:
            return None
        if self._take("dozen"):
            return count * 12
        if (fraction := self._over(count, start)) is not None:
            return fraction
        mark = self.pos
        if count.denominator == 1 and self._take("and"):  # "two and a half", "2 and 1/2"
            if (part := self._peek("frac")) is not None:
                self.pos += 1
            elif (part := self._count()) is not None:
                part = self._over(part, mark + 1)
            if part is not None and 0 < part < 1:
                return count + part
        self.pos = mark
        return count

    def _over(self, count: Fraction, start: int) -> Fraction | None:
        """A worded whole over a denominator ("two thirds", "a quarter"); digits ("3 quarters") are a count of
        things, and a singular needs "one"/"a", so the ordinal "twenty-fourth" is not read as 20/4."""
        word = self._peek()
        if (word in _DENOMINATORS and self.tokens[start][0] == "word" and count.denominator == 1
                and (word in _ORDINALS) == (count == 1)):
            self.pos += 1
            return count / _DENOMINATORS[word]
        return None

    def _count(self) -> Fraction | None:
        """Digits or words, with scales: "1/2", "3 1/2", "1½", "1.2 million", "a hundred", "two thousand and five"."""
        if (value := self._peek("frac")) is not None:
            self.pos += 1
            return value
        value = self._peek("num")
        digits = value is not None
        if digits:
            self.pos += 1
            fraction = self._peek("frac")
            if fraction is not None and value.denominator == 1 and fraction < 1:  # "3 1/2", "1½"
                self.pos += 1
                return value + fraction
            if self._take("hundred"):
                value *= 100
        elif self._take("zero"):
            return Fraction(0)
        elif (value := self._hundreds(article=True)) is None:
            return None
        total, last = 0, None
        while (word := self._peek()) in _BIG and (last is None or _BIG[word] < last):
            self.pos += 1
            last = _BIG[word]
            total += value * last
            mark = self.pos
            self._take("and")
            if digits or (value := self._hundreds(article=False)) is None:  # "1.2 million" ends there
                self.pos, value = mark, 0
                break
        return Fraction(total + value)

    def _hundreds(self, article: bool) -> int | None:
        if article and self._take("a", "an"):
            if self._peek() not in _AFTER_ARTICLE:
                self.pos -= 1
                return None
            value = 1
        elif (value := self._tens()) is None:
            return None
        if self._take("hundred"):
            value *= 100
            mark = self.pos
            self._take("and")
            if (rest := self._tens()) is None:
                self.pos, rest = mark, 0
            value += rest
        return value

    def _tens(self) -> int | None:
        word = self._peek()
        if word in _TENS:
            self.pos += 1
            ones = _ONES.get(self._peek(), 0)
            if 0 < ones < 10:  # "forty-two"
                self.pos += 1
                return _TENS[word] + ones
            return _TENS[word]
        if word in _ONES and word != "zero":
            self.pos += 1
            return _ONES[word]
        return None

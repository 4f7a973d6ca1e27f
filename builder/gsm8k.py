"""GSM8K and GSM-Hard (PAL) data: loading, the question join, gold answers, numbers in question text.

Nothing here executes a program; :mod:`builder.pot_import` does that. The data files stay in
``/work/shared/data`` (see its README): this module only reads them.

- :func:`normalise_question` is the join key: lowercase, punctuation stripped, whitespace collapsed.
- :class:`ReferenceIndex` joins a transcript's question to a reference row (exact on the key; a
  conservative fuzzy fallback for the few docstrings that differ by a word).
- :func:`scan_numbers` finds every number a question states, with the device's scanner (digits, cardinal
  words, and the "structural" words such as *half*, *twice* or *dozen* that name a number but cannot be
  re-rendered as digits in the sentence), with character spans so a template can replace exactly one of them.
- :func:`replaced_numbers` diffs a GSM-Hard question against its original and says which original
  mention each large number replaced.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edge_runtime.read.english_words import DEVICE_UNREAD_WORDS, NUMBER_WORDS
from edge_runtime.read.mentions import Mention as DeviceMention
from edge_runtime.read.mentions import parts, read_values, scan

DEFAULT_DATA = Path("/work/shared/data")
GSM8K_TEST = DEFAULT_DATA / "gsm8k" / "gsm8k_test.jsonl"
PAL_GSMHARD = DEFAULT_DATA / "gsm8k" / "pal_gsmhard_v2.jsonl"


# ---------------------------------------------------------------------------------------------
# Loading and joining
# ---------------------------------------------------------------------------------------------
def normalise_question(text: str) -> str:
    """Join key: lowercase, every Unicode punctuation character removed, whitespace collapsed."""
    stripped = "".join(" " if unicodedata.category(ch).startswith("P") else ch for ch in text.lower())
    return " ".join(stripped.split())


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def gold_answer(answer: Any) -> int | float | None:
    """The number after ``####`` in a GSM8K worked answer (commas removed); plain numbers pass through."""
    if isinstance(answer, bool):
        return None
    if isinstance(answer, (int, float)):
        return answer
    text = str(answer)
    if "####" in text:
        text = text.rsplit("####", 1)[1]
    text = text.strip().replace(",", "").replace("$", "").strip()
    match = re.fullmatch(r"[-+]?(\d+(\.\d*)?|\.\d+)", text)
    if match is None:
        return None
    value = float(text)
    return int(value) if value.is_integer() and "." not in text else value


@dataclass(frozen=True)
class ReferenceRow:
    """One reference question: its row in the reference file, its text and its gold answer."""

    index: int
    question: str
    gold: int | float | None


@dataclass
class ReferenceIndex:
    """Reference rows by normalised question, with a conservative fuzzy fallback."""

    rows: list[ReferenceRow]
    fuzzy_cutoff: float = 0.93
    _by_key: dict[str, ReferenceRow] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        for row in self.rows:
            self._by_key.setdefault(normalise_question(row.question), row)

    @classmethod
    def load(cls, path: str | Path) -> ReferenceIndex:
        rows = []
        for i, record in enumerate(read_jsonl(path)):
            question = record.get("question") or record.get("input") or ""
            rows.append(ReferenceRow(i, question, gold_answer(record.get("answer", record.get("target")))))
        return cls(rows)

    def exact(self, question: str) -> ReferenceRow | None:
        return self._by_key.get(normalise_question(question)) if question.strip() else None

    def fuzzy(self, text: str, exclude: set[int] = frozenset()) -> ReferenceRow | None:  # type: ignore[assignment]
        """The single reference row whose normalised text is within ``fuzzy_cutoff`` of ``text``
        (numbers masked, so a GSM-Hard question can find its original); None when unsure."""
        if not text.strip():
            return None
        masked = _mask_numbers(normalise_question(text))
        scored = []
        for row in self.rows:
            if row.index in exclude:
                continue
            other = _mask_numbers(normalise_question(row.question))
            matcher = difflib.SequenceMatcher(None, masked, other, autojunk=False)
            if matcher.real_quick_ratio() < self.fuzzy_cutoff or matcher.quick_ratio() < self.fuzzy_cutoff:
                continue
            scored.append((matcher.ratio(), row))
        scored.sort(key=lambda item: -item[0])
        if not scored or scored[0][0] < self.fuzzy_cutoff:
            return None
        if len(scored) > 1 and scored[1][0] > scored[0][0] - 0.02:
            return None  # two candidates: refuse rather than guess
        return scored[0][1]


def _mask_numbers(text: str) -> str:
    return re.sub(r"\d+", "#", text)


# ---------------------------------------------------------------------------------------------
# Numbers in question text
# ---------------------------------------------------------------------------------------------
#: Words that name a number but cannot be rendered back as digits in their sentence ("half that
#: much", "twice as long", "a dozen eggs"): a program literal with one of these values comes from the
#: question, yet it stays a constant of the entry. The device's table (edge_runtime.read.english_words), each
#: tuple reversed: here the value as read is the last one.
STRUCTURAL_WORDS: dict[str, tuple[float, ...]] = {w: tuple(reversed(v)) for w, v in NUMBER_WORDS.items()}
#: Words the device does not read as a stated number ("weekly", "percentage", "once", the ordinal "fourth"),
#: which may still explain a constant of the program: the importer adds them as structural mentions of its own.
_UNREAD_WORDS = frozenset(DEVICE_UNREAD_WORDS)
_WORD = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)*")
#: A cue for the literal's name (a price is money), not a reading: "pounds" is a weight here more often than
#: the currency the device also reads it as.
_MONEY_AFTER = re.compile(r"\s*(dollars?|cents?|bucks)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Mention:
    """One number stated in a question: where, as written, its value and how it may be used.

    A piece of a number the device reads as one ("2" of "2/5", "two" of "two thirds") is a mention of its
    own here, since a program writes it as a literal of its own; ``stated`` is then the span and value of
    the whole number, as the device reads it (edge_runtime.read.mentions.scan). None for a word the device
    does not read as a number (``_UNREAD_WORDS``)."""

    index: int  # position among the question's mentions, in text order
    start: int
    end: int
    text: str
    value: float | int  # the number as a person reads it ("25%" -> 25, "three" -> 3, "half" -> 0.5)
    kind: str  # "digits" | "word" (a cardinal that may be re-rendered as digits) | "structural"
    percent: bool = False
    money: bool = False
    alternatives: tuple[float, ...] = ()  # other values a program may write for it ("half" -> 2)
    stated: tuple[int, int, float] | None = None  # (start, end, value) of the device's mention this is part of

    @property
    def parameterisable(self) -> bool:
        return self.kind in ("digits", "word")

    def literal_values(self) -> list[tuple[float, str]]:
        """(literal value, form) pairs a program may write for this mention: ``value`` (the number
        itself), ``percent`` ("25%" as 0.25), ``complement`` ("30% off" as 0.7), or, for the numerator of a
        fraction the question states, ``fraction`` (the 3 of "3/5" written 0.6: the whole fraction is the slot)."""
        pairs = [(float(self.value), "value")]
        if self.kind == "digits" and self.stated is not None and self.start == self.stated[0] < self.end < self.stated[1]:
            denominator = round(float(self.value) / self.stated[2]) if self.stated[2] else 0
            if denominator > 1 and abs(float(self.value) / denominator - self.stated[2]) < 1e-9:  # the 3 of "3/5"
                pairs.append((self.stated[2], "fraction"))
        if self.percent:
            pairs.append((float(self.value) / 100, "percent"))
            pairs.append((1 - float(self.value) / 100, "complement"))
        pairs += [(float(v), "value") for v in self.alternatives]
        return pairs


def _piece_reading(piece: DeviceMention) -> tuple[float | int, str, tuple[float, ...]]:
    """(value, kind, alternatives) of one piece of a stated number, from the device's reading of it."""
    raw, low = piece.text, piece.text.lower()
    read = piece.values[0]
    if raw[0].isdigit() or raw[0] == ".":
        if "/" in raw:  # "1/5": a unit fraction, 0.2 or a division by 5
            denominator = float(raw.split("/")[1])
            return read, "structural", (denominator, read)
        return (int(read) if "." not in raw and float(read).is_integer() else read), "digits", ()
    words = re.split(r"[\s-]+", low)
    if words[-1] in STRUCTURAL_WORDS:
        table = STRUCTURAL_WORDS[words[-1]]
        if len(words) == 1:
            return table[-1], "structural", tuple(float(v) for v in table)
        numerator = read_values("-".join(words[:-1]))  # "two-thirds": the count is a value a program may use too
        return read, "structural", (float(numerator[0]) if numerator else read, *(float(v) for v in table))
    return (int(read) if float(read).is_integer() else read), "word", ()


def scan_numbers(text: str) -> list[Mention]:
    """Every number stated in ``text``, in order, as the device reads it (edge_runtime.read.mentions.scan),
    each cut into the pieces a program writes apart (``mentions.parts``), plus the words that name a number
    only to explain a constant (``_UNREAD_WORDS``)."""
    found: list[tuple[int, int, str, float | int, str, tuple[float, ...], bool, tuple[int, int, float] | None]] = []
    stated = scan(text)
    for whole in stated:
        span = (whole.start, whole.end, whole.values[0])
        for piece in parts(text, whole):
            value, kind, alternatives = _piece_reading(piece)
            percent = kind != "structural" and whole.percent and piece.end == whole.end
            found.append((piece.start, piece.end, piece.text, value, kind, alternatives, percent, span))
    for m in _WORD.finditer(text):
        low = m.group(0).lower()
        if low in _UNREAD_WORDS and not any(w.start < m.end() and m.start() < w.end for w in stated):
            table = STRUCTURAL_WORDS[low]
            found.append((m.start(), m.end(), m.group(0), table[-1], "structural", tuple(float(v) for v in table), False, None))
    found.sort(key=lambda item: item[0])
    mentions: list[Mention] = []
    for start, end, raw, value, kind, alternatives, percent, span in found:
        money = text[max(0, start - 1):start] in ("$", "€", "£") or bool(_MONEY_AFTER.match(text[end:end + 12]))
        mentions.append(Mention(len(mentions), start, end, raw, value, kind, percent, money, alternatives, span))
    return mentions


def context_words(text: str, mention: Mention, before: int = 3, after: int = 3) -> str:
    """A few words around a mention, within its sentence: "ducks lay 16 eggs per day"."""
    left, right = context_sides(text, mention, before, after)
    return " ".join((left + mention.text + right).split()).strip(" ,;\"'")


def context_sides(text: str, mention: Mention, before: int = 3, after: int = 3) -> tuple[str, str]:
    """The text of up to ``before`` words before a mention and ``after`` words after it, within its sentence."""
    left = re.split(r"[.?!;:](?:\s|$)", text[:mention.start])[-1]
    right = re.split(r"[.?!;:](?:\s|$)", text[mention.end:])[0]
    lm = re.search(rf"(?:\S+\s+){{0,{before}}}\S*$", left)
    rm = re.match(rf"\S*(?:\s+\S+){{0,{after}}}", right)
    return (lm.group(0) if lm else ""), (rm.group(0) if rm else "")


def words_after(text: str, mention: Mention, count: int = 2) -> list[str]:
    """Lowercase words following a mention in the same clause (for naming a parameter)."""
    right = re.split(r"[.?!;,:]", text[mention.end:])[0]
    return re.findall(r"[a-z]+", right.lower())[:count]


# ---------------------------------------------------------------------------------------------
# GSM-Hard: which original mention did each large number replace?
# ---------------------------------------------------------------------------------------------
_TOKEN = re.compile(r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+|[A-Za-z]+(?:-[A-Za-z]+)*|\S")


@dataclass(frozen=True)
class Replacement:
    """A number of the variant question that stands where the original stated ``mention``."""

    variant_value: float
    mention: Mention


def replaced_numbers(variant: str, original: str, mentions: list[Mention] | None = None) -> list[Replacement]:
    """Numbers of ``variant`` that replaced a stated number of ``original`` (word-level diff)."""
    mentions = scan_numbers(original) if mentions is None else mentions
    if variant.strip() == original.strip():
        return []
    a = [(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(variant)]
    b = [(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(original)]
    matcher = difflib.SequenceMatcher(None, [t for t, _, _ in a], [t.lower() if t.isalpha() else t for t, _, _ in b],
                                      autojunk=False)
    # compare case-insensitively on words
    matcher.set_seq1([t.lower() if t.isalpha() else t for t, _, _ in a])
    out: list[Replacement] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "replace":
            continue
        numbers = [float(t.replace(",", "")) for t, _, _ in a[i1:i2] if re.fullmatch(r"[\d,]*\.?\d+", t)]
        if not numbers:
            continue
        span_start, span_end = b[j1][1], b[j2 - 1][2]
        inside = [m for m in mentions if m.start < span_end and m.end > span_start]
        for number, mention in zip(numbers, inside):
            out.append(Replacement(number, mention))
    return out


def is_close(a: Any, b: Any, rel: float = 1e-6) -> bool:
    """Numeric equality with a relative tolerance (answers that are floats close to integers count)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return False
    try:
        fa, fb = float(a), float(b)
    except (TypeError, ValueError, OverflowError):
        return False
    if not (math.isfinite(fa) and math.isfinite(fb)):
        return False
    return abs(fa - fb) <= rel * max(1.0, abs(fa), abs(fb))


def iter_pot_rows(path: str | Path) -> Iterable[dict[str, Any]]:
    """Rows of a PoT transcript file (``code`` plus optional ``input``/``question``/``target``)."""
    return read_jsonl(path)

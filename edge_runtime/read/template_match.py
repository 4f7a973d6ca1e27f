"""IS2 fast path: a question that is the entry's template with new slot values binds with no model.

Agents repeat one instruction template with new payloads; matching the template's
literal text exactly and reading the slots is sub-millisecond and cannot hallucinate.
"""

from __future__ import annotations

import re
import string
from functools import lru_cache

from edge_runtime.errors import ArcError
from edge_runtime.read.english_words import ONES
from edge_runtime.read.values import parse_quantity

_SPACE = re.compile(r"\s+")
#: Punctuation that ends a clause inside a slot's text ("four. The sky was clear", "four, but none are counted"):
#: a value is never written across it ("1,000" and "2.5" have no space after theirs).
_CLAUSE_END = re.compile(r"[.,;:]\s|[?!]")


@lru_cache(maxsize=1024)
def template_pattern(template: str, choices: tuple[tuple[str, tuple[str, ...]], ...] = ()) -> re.Pattern[str]:
    """A regex that matches the template's literal text exactly (whitespace- and case-insensitively).

    A slot with ``choices`` matches only one of them, so adjacent slots ("{volume} {volume_unit}")
    split where a person would split them."""
    allowed = dict(choices)
    parts: list[str] = []
    seen: set[str] = set()
    for literal, field, _, _ in string.Formatter().parse(template):
        if literal:
            parts.append(r"\s+".join(_word(word) for word in literal.split(" ")) if literal.strip() else r"\s+")
        if field is not None:
            if field in seen and field in allowed:
                parts.append(f"(?P={field})")
            elif field in seen:  # a number stated twice, perhaps spelt two ways ("5 pies ... the five pies")
                parts.append(f"(?P<{field}{_REPEAT}{len(parts)}>{_REPEATED_NUMBER})")
            else:
                options = allowed.get(field)
                body = "|".join(re.escape(o) for o in sorted(options, key=len, reverse=True)) if options else ".+?"
                parts.append(f"(?P<{field}>{body})")
                seen.add(field)
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


#: A small whole number the template's own text states, as a word or in digits ("Two years ago", "2 years ago").
_SMALL = {w: i for w, i in ONES.items() if 0 < i < 20}
_SMALL_DIGITS = {str(i): w for w, i in _SMALL.items()}


def spelt_alike(a: str, b: str) -> bool:
    """Two words that are one word, or one small whole number spelt as a word and in digits ("Two", "2")."""
    if a.lower() == b.lower():
        return True
    x, y = _small_value(a), _small_value(b)
    return x is not None and x == y


def _small_value(word: str) -> int | None:
    low = word.lower()
    return _SMALL.get(low, int(low) if low in _SMALL_DIGITS else None)


def _word(word: str) -> str:
    """One word of the template's literal text as a pattern: itself, or a small number it states in the other spelling
    (a number the entry keeps constant, stated in digits for its word or as a word for its digits, is the same text)."""
    found = re.fullmatch(r"([A-Za-z]+|\d+)(\W*)", word)
    if found is None:
        return re.escape(word)
    head, tail = found.groups()
    other = str(_SMALL[head.lower()]) if head.lower() in _SMALL else _SMALL_DIGITS.get(head)
    return f"(?:{re.escape(head)}|{other}){re.escape(tail)}" if other else re.escape(word)


def match_template(
    template: str, question: str, choices: dict[str, tuple[str, ...]] | None = None
) -> dict[str, str] | None:
    """Slot texts if ``question`` equals ``template`` apart from the slot values, else None."""
    text = _SPACE.sub(" ", question.strip())
    key = tuple(sorted((name, tuple(str(c) for c in opts)) for name, opts in (choices or {}).items()))
    found = template_pattern(_SPACE.sub(" ", template.strip()), key).fullmatch(text)
    if found is None:
        return None
    texts = {name: value.strip() for name, value in found.groupdict().items()}
    if not all(texts.values()) or any(_CLAUSE_END.search(v) for v in texts.values()):
        return None  # a slot stretched over a clause the question inserted: the aligned path judges it
    fields = {field for _, field, _, _ in string.Formatter().parse(template) if field}
    slots = {name: text for name, text in texts.items() if name in fields}
    repeats = [(name.rsplit(_REPEAT, 1)[0], text) for name, text in texts.items() if name not in fields]
    if not all(same_number(slots[name], text) for name, text in repeats):
        return None  # a repeated slot states two different numbers
    return slots


#: Joins a repeated slot's name to the place of its repeat in the pattern: the group of a repeat is no field.
_REPEAT = "__again"
#: What a repeat of a slot may hold: a number, in at most four words ("5", "$1,000", "twenty-five", "two and a half").
#: Bounded, unlike a slot's first reading: lazy groups of any length, one per repeat, backtrack over each other, and a
#: hostile question of the server's 4 KB made one match take seconds.
_REPEATED_NUMBER = r"\S+(?:\s+\S+){0,3}?"


def same_number(a: str, b: str) -> bool:
    """Whether two slot texts state one number: the same text, or the same value and unit ("5" and "five")."""
    if a.lower() == b.lower():
        return True
    try:
        x, y = parse_quantity(a), parse_quantity(b)
    except ArcError:
        return False
    return x.value == y.value and x.unit == y.unit

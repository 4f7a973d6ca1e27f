"""A cheap aligner that drafts the extractor's answer for the model to verify in one pass.

Numbers in the question are assigned to the numeric parameters in template order, and a
choice parameter takes the choice the question names. The model then checks the whole
draft in a single forward pass; wherever it disagrees, decoding continues from there, so
the result is exactly the constrained greedy answer, only cheaper when the draft is right.
A free-text parameter ("a glass flower vase") has no draft: its value is left to the model
(``None``, a hole the extractor decodes), while the numbers and choices around it are drafted.
"""

from __future__ import annotations

import re
import string
from fractions import Fraction

from edge_runtime.entries.metadata import Param
from edge_runtime.read.english_words import CARDINALS, FUNCTION_WORDS, IRREGULAR_FORMS, MULTIPLIERS
from edge_runtime.read.values import DIGITS, DIGITS_END, SHARE_OF_POWER

_NUMBER_WORDS = [*CARDINALS, *(
    "dozen half quarter third thirds quarters fifth fifths sixth sixths eighth eighths tenth tenths").split(),
    *(w for w, n in MULTIPLIERS.items() if n > 1)]
_WORD = "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True))
_SPAN = re.compile(
    rf"(?<![\w.])-?{DIGITS}{DIGITS_END}(?!(?:st|nd|rd|th)\b)"  # not the "1" of "1st"
    rf"|\b(?:(?:{_WORD})(?:[\s-]+(?:and\s+)?(?:a\s+)?(?:{_WORD}))*)\b"
    rf"|\ban?\s+(?:half|third|quarter|fifth|sixth|eighth|tenth|dozen)\b",  # "a third", "a dozen"
    re.IGNORECASE,
)


_WORDS = re.compile(r"[a-z%$€£]+", re.IGNORECASE)
_ARTICLES = frozenset({"a", "an", "the", "some", "of"})


def number_spans(question: str) -> list[str]:
    """Number-like spans in reading order: digits, fractions, separators, number words; a share of a power of
    ten ("3/4 of one hundred") is one span."""
    shares = [(m.start(), m.end()) for m in SHARE_OF_POWER.finditer(question)]
    spans = [(m.start(), m.end()) for m in _SPAN.finditer(question) if not any(a <= m.start() < b for a, b in shares)]
    return [question[a:b] for a, b in sorted(spans + shares)]


def _context(text: str, start: int, end: int) -> tuple[list[str], list[str]]:
    """Up to two words before and after a span, lower-cased."""
    before = [w.lower() for w in _WORDS.findall(text[:start])][-2:]
    after = [w.lower() for w in _WORDS.findall(text[end:])][:2]
    return before, after


def _slot_contexts(template: str) -> dict[str, tuple[list[str], list[str]]]:
    """For each slot, the template words around it (other slots blanked out)."""
    blank = string.Formatter()
    pieces = list(blank.parse(template))
    contexts: dict[str, tuple[list[str], list[str]]] = {}
    for i, (_, field, _, _) in enumerate(pieces):
        if not field or field in contexts:
            continue
        left = "".join(p[0] + (" \x00 " if p[1] and j < i else "") for j, p in enumerate(pieces[: i + 1]))
        right = "".join(p[0] for p in pieces[i + 1 :][:1])
        left_words = [w.lower() for w in _WORDS.findall(left.split("\x00")[-1])][-2:]
        right_words = [w.lower() for w in _WORDS.findall(right)][:2]
        contexts[field] = (left_words, right_words)
    return contexts


def _score(slot: tuple[list[str], list[str]], span: tuple[list[str], list[str]], description: set[str]) -> float:
    (t_left, t_right), (q_left, q_right) = slot, span
    score = 0.0
    if t_right and q_right and t_right[0] == q_right[0]:
        score += 2
    score += 0.5 * len(set(t_right) & set(q_right))
    if t_left and q_left and t_left[-1] == q_left[-1]:
        score += 1
    score += 0.5 * len(set(t_left) & set(q_left))
    score += 0.5 * len(description & (set(q_left) | set(q_right)))
    return score


def reads_as_number(param: Param) -> bool:
    """A numeric parameter, or a text one whose value is an amount written loosely ("1 1/2", "two and a half"):
    the draft reads both from the question's numbers."""
    if param.choices is not None:
        return False
    if param.type in (int, float, Fraction):
        return True
    original = str(param.original or "").strip()
    return param.type is str and bool(original) and number_spans(original) == [original]


def is_free_text(param: Param) -> bool:
    """A text parameter with no choices that is no amount: nothing in the question marks where it is but its words."""
    return param.type is str and param.choices is None and not reads_as_number(param)


def draft_values(template: str, params: tuple[Param, ...], question: str) -> dict[str, str | None] | None:
    """A guess of every parameter's span (None for a free-text one, which the model reads), or None when the
    aligner has no confident guess.

    Numbers are matched to numeric slots by the words around them in the template and in
    the question (a paraphrase keeps "mol" next to the amount of gas), then by order."""
    order = [f for _, f, _, _ in string.Formatter().parse(template) if f]
    by_name = {p.name: p for p in params}
    numeric = [n for n in dict.fromkeys(order) if reads_as_number(by_name[n])]
    found = list(_SPAN.finditer(question))
    if len(found) < len(numeric):
        return None
    slots = _slot_contexts(template)
    spans = [_context(question, m.start(), m.end()) for m in found]
    pairs = []
    for i, name in enumerate(numeric):
        words = {w.lower() for w in _WORDS.findall(by_name[name].description) if len(w) > 3}
        for j, span in enumerate(spans):
            pairs.append((-_score(slots[name], span, words), abs(i - j), i, j))
    draft: dict[str, str | None] = {}
    used: set[int] = set()
    for _, _, i, j in sorted(pairs):
        name = numeric[i]
        if name not in draft and j not in used:
            draft[name] = found[j].group(0)
            used.add(j)
    for param in params:
        if param.name in draft:
            continue
        if is_free_text(param):
            draft[param.name] = None
            continue
        if param.choices is None:
            return None
        named = named_choice(param, question)
        if named is None:
            return None
        draft[param.name] = named
    return {p.name: draft[p.name] for p in params}


def free_text_conflict(value: str, draft: dict[str, str | None], question: str) -> str | None:
    """Why the model's reading of a free-text slot cannot be that slot's value (None: it can). A description is
    more than a number ("three" of "three paperback novels" is an amount cut short), a whole phrase of the question
    (not "salmon" of "frozen salmon fillets"), and one thing the question states fills one slot: the value must not
    repeat, hold or lie inside another slot's drafted value ("cups" read as the ingredient of "two cups of butter"
    where the unit is "cups")."""
    text = value.strip()
    if not text or number_spans(text) == [text]:
        return f"the model read {text!r}, a number, as a description"
    if not any(w.lower() not in _ARTICLES for w in re.findall(r"[^\W\d_]+", text)):
        return f"the model read {text!r}, which names nothing, as a description"
    low = text.lower()
    for name, drafted in draft.items():
        other = (drafted or "").strip().lower()
        if other and (_holds(other, low) or _holds(low, other)):
            return f"the model read {text!r}, which holds the value of {name} ({drafted!r}), as a description"
    if not _whole_phrase(question, text):
        return f"the model read {text!r}, part of a longer name in the question, as a description"
    return None


def _whole_phrase(question: str, text: str) -> bool:
    """Somewhere in ``question``, ``text`` is not cut out of a run of naming words: the word right before it and the
    word right after it (no punctuation between) are each a function word, a verb form ("going", "frozen", "sent") or
    absent. "salmon" of "frozen salmon fillets" ends before "fillets", "glass" of "a glass flower vase" before
    "flower": each names a part of the thing."""
    for m in re.finditer(rf"(?<!\w){re.escape(text)}(?!\w)", question):
        before = re.search(r"([^\W\d_]+)\s+$", question[: m.start()])
        after = re.match(r"\s+([^\W\d_]+)", question[m.end():])
        if all(w is None or _joins(w.group(1)) for w in (before, after)):
            return True
    return False


def _joins(word: str) -> bool:
    """A word that does not continue a name: a function word or a verb form."""
    w = word.lower()
    return w in FUNCTION_WORDS or w in IRREGULAR_FORMS or w.endswith(("ing", "ed"))


def _holds(text: str, part: str) -> bool:
    """``part`` occurs in ``text`` as whole words or a whole number (never "a" of "national" or "5" of "2.5")."""
    return re.search(rf"(?<![\w.]){re.escape(part)}(?![\w]|\.\d)", text) is not None


def named_choice(param: Param, question: str) -> str | None:
    """The one option of a choice parameter the question names as a whole word, else None."""
    low = question.lower()
    named = [str(c) for c in param.choices or () if re.search(rf"\b{re.escape(str(c).lower())}\b", low)]
    return named[0] if len(named) == 1 else None

"""What a worked solution's prose says a number counts, against what the question says it counts.

The GSM8K worked solution is bound to the question's numbers by value, like every independent
program. A value the question states for one thing can appear in the solution for another: "Dolly
has two books ... 3 books/person x 2 people = 6" binds the solution's 2 people to Dolly's two books,
so an entry that multiplies by Dolly's books (wrong: the question means the two readers) agrees with
the solution on every variant by the same coincidence. The solution's own words give it away: the
noun right after its number ("2 people") is not the question's ("two books").

Such a binding is *doubtful*: the solution may still disagree (a veto needs no right binding to be
evidence of a problem), but it must not count as the source that agrees
(:func:`builder.independent_check.check`). Words are compared with the device's plural stemmer
(``edge_runtime.read.english_words.plural_stem``), so "2 books" and "two book" are one noun.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from builder.gsm8k import Mention, words_after
from edge_runtime.read.english_words import plural_stem

#: A number in prose (digits, thousands separators, decimals) and the two words after it.
_NUMBER_WORDS = re.compile(r"(?<![\w./])\$?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?((?:\s+[A-Za-z]+){1,2})")
#: A calculator annotation and the result the solution writes right after it ("<<3*2=6>>6 books"): a result's
#: noun says what the step computed, not what a given counts.
_ANNOTATION = re.compile(r"<<[^<>]*>>\s*[\d,.]*")
_SENTENCE = re.compile(r"(?<=[.?!])(?!\d)\s+")
#: Words after a number that do not name what it counts (operators, comparisons, quantifiers, verbs).
_NOT_NOUNS = frozenset(
    "x times more less fewer each per of and or to in on a an the is are was were be for at by from with minus "
    "plus divided multiplied than as so then total left remaining altogether extra percent that this which who "
    "it he she they we i you will would can could if but all now over into out off up down because since after "
    "before every much many equals equal other others another years old those these them their its his her our "
    "your my long short high wide tall deep kind kinds type types sort see find ago away even".split())
#: Irregular plurals the plural stemmer leaves alone.
_IRREGULAR = {"people": "person", "children": "child", "men": "man", "women": "woman", "feet": "foot", "teeth": "tooth",
              "mice": "mouse", "geese": "goose"}
#: Abbreviations a solution writes for the unit a question spells out ("20 min" for "20 minutes").
_ABBREVIATIONS = {"min": "minute", "mins": "minute", "hr": "hour", "hrs": "hour", "sec": "second", "secs": "second",
                  "kg": "kilogram", "kilo": "kilogram", "kilos": "kilogram", "lb": "pound", "lbs": "pound",
                  "ft": "foot", "km": "kilometer", "mi": "mile", "oz": "ounce"}
#: Currency words a money mention may be named by in prose ("$5" in the question, "5 dollars" in the solution).
_CURRENCY = frozenset({"dollar", "cent", "euro", "pound", "buck"})


def _stem(word: str) -> str:
    word = word.lower()
    return _ABBREVIATIONS.get(word) or _IRREGULAR.get(word) or plural_stem(word)


def _may_name(word: str) -> bool:
    """Whether a word after a number may name what it counts: not a function word, a name (capitalised),
    or a verb form ("15 checked", "120 selling")."""
    return (word.lower() not in _NOT_NOUNS and not word[:1].isupper()
            and not (len(word) > 4 and word.lower().endswith(("ed", "ing"))))


def nouns_after_numbers(prose: str) -> dict[float, tuple[frozenset[str], ...]]:
    """Value -> for each time the prose writes that number followed by words, the stemmed words (up to two, the
    non-nouns left out) that may name what it counts ("14 french fries": {french, fry}). Calculator annotations
    and the result written after each are left out, and so is the final ``####`` line."""
    found: dict[float, list[frozenset[str]]] = {}
    for line in prose.split("\n"):
        if line.lstrip().startswith("####"):
            continue
        for match in _NUMBER_WORDS.finditer(_ANNOTATION.sub(" ; ", line)):
            words = frozenset(_stem(w) for w in match.group(3).split() if _may_name(w))
            if not words:
                continue
            value = float(match.group(1).replace(",", "") + (f".{match.group(2)}" if match.group(2) else ""))
            found.setdefault(value, []).append(words)
    return {value: tuple(named) for value, named in found.items()}


def sentence_words(question: str, mention: Mention) -> frozenset[str]:
    """The stemmed words of the sentence of the question that states ``mention``."""
    bounds = [0, *(m.end() for m in _SENTENCE.finditer(question)), len(question)]
    for start, end in zip(bounds, bounds[1:]):
        if start <= mention.start < end:
            return frozenset(_stem(w) for w in re.findall(r"[A-Za-z]+", question[start:end]))
    return frozenset()


def doubtful_binding(question: str, mention: Mention, value: float,
                     prose_nouns: Mapping[float, tuple[frozenset[str], ...]]) -> str:
    """Why binding the solution's ``value`` to ``mention`` is doubtful ("" when it is not).

    Doubtful when the prose writes that number followed by words none of which the question's sentence
    that states the mention uses ("2 people" against "Dolly has two books."): the solution counts something
    with it that the question does not count there. A number the prose names by no noun, or a mention the
    question writes no word after ("Pandora has one."), cannot be compared: not doubtful. A money mention may be named by a
    currency word, and "14 french fries" agrees with "ate fourteen" in a sentence about french fries."""
    said = next((named for v, named in prose_nouns.items() if abs(v - float(value)) <= 1e-9 * max(1.0, abs(v))), ())
    if not [w for w in words_after(question, mention, 3) if w not in _NOT_NOUNS]:
        return ""  # "Pandora has one.": the question names nothing after it to compare with
    context = sentence_words(question, mention) | (_CURRENCY if mention.money else frozenset())
    for words in said:
        if not words & context:
            return f"its {value:g} {sorted(words)[0]} is bound to the question's {mention.text!r} ({_after(question, mention)})"
    return ""


def _after(question: str, mention: Mention) -> str:
    words = words_after(question, mention, 2)
    return " ".join(words) if words else "no noun"

"""Value-preserving rewordings of an entry's template, for the tuned reader's training set.

Each transformation changes the wording of the template's literal text (never a slot) or the way a
value is written, so the parameter values a question states stay exactly those the example is
labelled with: number words for digits, "$350" as "350 dollars" and back, other unit spellings,
synonyms from a table, other names and objects, the statements in another order, a sentence that
states nothing the reasoning uses inserted before the question. All are deterministic given the
``random.Random`` passed in, so a seed fixes the training set (and its digest).
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Callable

from edge_runtime.read.english_words import ONES, TENS

#: the one English number-word table the device reads (edge_runtime/read/english_words.py), by value
_ONES = tuple(ONES)
_TENS = ("_", "_", *TENS)


def number_words(n: int) -> str:
    """0..999 in words ("twenty-three", "three hundred and five"), as word problems write them."""
    if not 0 <= n < 1000:
        raise ValueError(n)
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else "-" + _ONES[n % 10])
    rest = n % 100
    return _ONES[n // 100] + " hundred" + ("" if rest == 0 else " and " + number_words(rest))


#: Words and phrases of the literal text with a value-preserving replacement (both directions are tried).
SYNONYMS: tuple[tuple[str, str], ...] = (
    ("How much", "What amount"), ("how many", "what number of"), ("costs", "is priced at"), ("buys", "purchases"),
    ("bought", "purchased"), ("each", "every"), ("uses", "needs"), ("needs", "requires"), ("gets", "receives"),
    ("gives", "hands"), ("makes", "earns"), ("total", "overall"), ("Find", "Work out"), ("What is", "What's"),
    ("also", "as well"), ("wants to", "would like to"), ("has", "owns"), ("sells", "offers"), ("large", "big"),
    ("small", "little"), ("store", "shop"), ("container", "vessel"), ("held in", "kept in"), ("hire", "rent"),
    ("a year", "per year"), ("per day", "a day"), ("every day", "each day"), ("started", "began"),
)
#: Unit spellings that read the same (literal text only: a choice's spelling is the choice).
UNITS: tuple[tuple[str, str], ...] = (
    ("kg", "kilograms"), ("litres", "liters"), ("km", "kilometres"), ("cm", "centimetres"), ("kPa", "kilopascals"),
    ("metres", "meters"), ("mph", "miles per hour"), ("hrs", "hours"),
)
FEMALE = ("Janet", "Maria", "Sofia", "Emma", "Olivia", "Aisha", "Mei", "Priya", "Lena", "Chloe", "Hana", "Grace",
          "Rosa", "Nadia", "Julia", "Ava", "Zoe", "Fatima", "Ines", "Carla")
MALE = ("James", "Tom", "Ahmed", "Luis", "Kenji", "Omar", "Noah", "Liam", "Raj", "Diego", "Marco", "Ben", "Ivan",
        "Samuel", "Jamal", "Leo", "Felix", "Arjun", "Hugo", "Mateo")
OBJECTS: tuple[tuple[str, str], ...] = (
    ("apples", "pears"), ("cookies", "muffins"), ("pencils", "pens"), ("books", "magazines"), ("marbles", "stickers"),
    ("cupcakes", "brownies"), ("cars", "bikes"), ("shirts", "sweaters"), ("balloon", "ball"), ("museum", "zoo"),
    ("flowers", "plants"), ("candies", "chocolates"), ("cards", "stamps"), ("toys", "games"),
)
#: Sentences that state nothing a reasoning could use (no number, no operation word).
ASIDES = (
    "The weather was pleasant that day.", "Everyone was in a good mood.", "It was a busy week.",
    "The town is known for its old library.", "Nobody was in a hurry.", "The sky was clear.",
    "This happened last spring.", "A friend had recommended it.",
)


def literal_map(template: str, change: Callable[[str], str]) -> str:
    """``change`` applied to the template's literal text only; every slot kept as it is."""
    out = []
    for literal, field, spec, conv in string.Formatter().parse(template):
        out.append(change(literal.replace("{", "{{").replace("}", "}}")))
        if field is not None:
            out.append("{" + field + ("!" + conv if conv else "") + (":" + spec if spec else "") + "}")
    return "".join(out)


def _swap_words(template: str, pairs: tuple[tuple[str, str], ...], rng: random.Random) -> str:
    """Each pair's direction and whether it applies drawn once, so the whole template says it one way."""
    chosen = [(a, b) if rng.random() < 0.5 else (b, a) for a, b in pairs]
    chosen = [(a, b) for a, b in chosen if rng.random() < 0.7 and re.search(rf"\b{re.escape(a)}\b", template)]

    def change(text: str) -> str:
        for a, b in chosen:
            text = re.sub(rf"\b{re.escape(a)}\b", b, text)
        return text

    return literal_map(template, change)


def synonyms(template: str, rng: random.Random) -> str:
    return _swap_words(template, SYNONYMS, rng)


def units(template: str, rng: random.Random) -> str:
    return _swap_words(template, UNITS, rng)


def objects(template: str, rng: random.Random) -> str:
    return _swap_words(template, OBJECTS, rng)


def names(template: str, rng: random.Random) -> str:
    """Each name of the table the template uses becomes another of the same list, the same throughout."""
    found = {w for w in re.findall(r"\b[A-Z][a-z]+\b", template) if w in FEMALE or w in MALE}
    mapping = {}
    for name in sorted(found):
        pool = [n for n in (FEMALE if name in FEMALE else MALE) if n not in found and n not in mapping.values()]
        mapping[name] = rng.choice(pool)
    if not mapping:
        return template
    return literal_map(template, lambda t: re.sub(r"\b(" + "|".join(mapping) + r")\b", lambda m: mapping[m.group(1)], t))


def currency(template: str, rng: random.Random) -> str:
    """"${x}" as "{x} dollars", or back."""
    if "${" in template:
        return re.sub(r"\$\{(\w+)\}", r"{\1} dollars", template)
    return re.sub(r"\{(\w+)\} dollars\b", r"${\1}", template)


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z{$])")


def clause_order(template: str, rng: random.Random) -> str:
    """The statements before the final question in another order (the question stays last)."""
    parts = _SENTENCE.split(template.strip())
    if len(parts) < 3:
        return template
    statements, last = parts[:-1], parts[-1]
    order = list(range(len(statements)))
    while order == sorted(order):
        rng.shuffle(order)
    return " ".join([statements[i] for i in order] + [last])


def aside(template: str, rng: random.Random) -> str:
    """A sentence that changes nothing inserted before the final question."""
    parts = _SENTENCE.split(template.strip())
    sentence = rng.choice(ASIDES).replace("{", "{{").replace("}", "}}")
    return " ".join(parts[:-1] + [sentence, parts[-1]]) if len(parts) > 1 else sentence + " " + template


#: Template transformations in the order they are applied.
TRANSFORMS: dict[str, Callable[[str, random.Random], str]] = {
    "currency": currency, "units": units, "synonyms": synonyms, "names": names, "objects": objects,
    "clause_order": clause_order, "aside": aside,
}


def reword(template: str, rng: random.Random) -> tuple[str, list[str]]:
    """A reworded template and the transformations that changed it (at least one is tried)."""
    kinds = [k for k in TRANSFORMS if rng.random() < 0.45] or [rng.choice(list(TRANSFORMS))]
    applied = []
    for kind in kinds:
        changed = TRANSFORMS[kind](template, rng)
        if changed != template:
            template = changed
            applied.append(kind)
    return template, applied

"""Units of measure written after a number, and what a number read for a slot counts.

A template that writes ``{grams_eaten} grams`` reads that slot as a mass. A reworded question whose number
read there is followed by another word ("John consumes *two servings* daily") counts something else, and
the entry's reasoning would take 2 servings for 2 grams: a wrong answer, not a rewording. Only slots the
template follows with a unit of measure are checked, so "5 apples" read as "5 red apples" is not.
"""

from __future__ import annotations

import re

from edge_runtime.read.question_words import STOP_WORDS

#: Spellings of units of measure -> one name per unit (singular, plural, abbreviation, British spelling); no
#: one-letter abbreviation but "g", and not "in", which are words of their own after a number.
_UNITS: dict[str, str] = {}
for _name, _spellings in {
    "gram": "g gram grams gramme grammes", "kilogram": "kg kgs kilo kilos kilogram kilograms kilogramme",
    "milligram": "mg milligram milligrams", "pound": "lb lbs pound pounds", "ounce": "oz ounce ounces",
    "ton": "ton tons tonne tonnes", "mile": "mi mile miles", "kilometer": "km kilometer kilometers kilometre kilometres",
    "meter": "meter meters metre metres", "centimeter": "cm centimeter centimeters centimetre centimetres",
    "millimeter": "mm millimeter millimeters millimetre millimetres", "foot": "ft foot feet", "inch": "inch inches",
    "yard": "yd yds yard yards", "liter": "liter liters litre litres", "milliliter": "ml milliliter milliliters "
    "millilitre millilitres", "gallon": "gal gallon gallons", "quart": "qt quart quarts", "pint": "pint pints",
    "cup": "cup cups", "hour": "hr hrs hour hours", "minute": "min mins minute minutes",
    "second": "sec secs second seconds", "day": "day days", "week": "wk wks week weeks",
    "month": "month months", "year": "yr yrs year years", "dollar": "dollar dollars buck bucks",
    "cent": "cent cents", "euro": "euro euros", "percent": "percent per-cent", "degree": "degree degrees",
}.items():
    for _spelling in _spellings.split():
        _UNITS[_spelling] = _name

_WORD_AFTER = re.compile(r"[\s-]*([A-Za-z]+)")


def unit_of(word: str) -> str | None:
    """The unit a word names ("kgs" -> kilogram), or None when it names none."""
    return _UNITS.get(word.lower())


def word_after(text: str, end: int) -> str | None:
    """The word right after position ``end`` (a hyphen or spaces between), lower-cased; None at punctuation."""
    match = _WORD_AFTER.match(text, end)
    return match.group(1).lower() if match else None


def units_named(text: str) -> frozenset[str]:
    """The units of measure a text names anywhere."""
    return frozenset(u for w in re.findall(r"[A-Za-z]+", text) if (u := unit_of(w)) is not None)


def counts_else(template_word: str | None, question_word: str | None, question_units: frozenset[str]) -> bool:
    """Whether a number the question follows with ``question_word`` counts something else than the slot the
    template follows with ``template_word``, a unit of measure: the question's word is no unit ("two *servings*"
    for "{g} grams", "200 *mushrooms*"), or another unit while the question still names the template's
    ("2 *kilograms* a day ... how many grams": a conversion the reasoning does not make). A unit renamed
    throughout ("a 175 oz bag ... how many oz" for "a {w}g bag ... how many grams") is the same reasoning, and a
    function word after the number, or none, says nothing ("200 of them")."""
    unit = unit_of(template_word) if template_word else None
    if unit is None or question_word is None or question_word in STOP_WORDS:
        return False
    other = unit_of(question_word)
    return other is None or (other != unit and unit in question_units)

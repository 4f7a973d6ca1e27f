"""Units of measure written after a number, and what a number read for a slot counts.

A template that writes ``{grams_eaten} grams`` reads that slot as a mass. A reworded question whose number
read there is followed by another word ("John consumes *two servings* daily") counts something else, and
the entry's reasoning would take 2 servings for 2 grams: a wrong answer, not a rewording. Only slots the
template follows with a unit of measure, or writes after a currency symbol ("${price}"), are checked, so "5 apples"
read as "5 red apples" is not. An amount in a unit's own subunit ("worth 30 cents" for "worth ${value}") is a
conversion the reasoning does not make, never a rename: read as written its answer would be a hundred times too
large, so the reading converts it (:func:`in_currency`) and the guard accepts only the converted value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from edge_runtime.read.mentions import Mention, same_value
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
    "cent": "cent cents", "euro": "euro euros", "percent": "percent per-cent percentage percentages",
    "degree": "degree degrees",
}.items():
    for _spelling in _spellings.split():
        _UNITS[_spelling] = _name

#: A currency symbol written before an amount -> the unit it names.
CURRENCY_UNITS = {"$": "dollar", "€": "euro", "£": "sterling", "¥": "yen", "₹": "rupee"}
#: A currency's subunit -> the currencies it divides: an amount in one is never the other renamed, because a question
#: asks "how much money" in the currency itself. (A length in mm for one in cm is a rename when the question asks in
#: mm too; GSM-Plus rewrites units that way, so other subunits are left to the renamed-throughout test.)
_SUBUNIT_OF = {"cent": frozenset({"dollar", "euro"})}
#: How many of a subunit make its unit.
SUBUNITS_PER_UNIT = {"cent": 100}

_WORD_AFTER = re.compile(r"[\s-]*([A-Za-z]+)")


def unit_of(word: str) -> str | None:
    """The unit a word or currency symbol names ("kgs" -> kilogram, "$" -> dollar), or None when it names none."""
    return CURRENCY_UNITS.get(word) or _UNITS.get(word.lower())


def currency_before(text: str, start: int) -> str | None:
    """The currency symbol written right before position ``start`` ("$ 5", "$5"), or None."""
    before = text[:start].rstrip()
    return before[-1] if before and before[-1] in CURRENCY_UNITS else None


def word_after(text: str, end: int) -> str | None:
    """The word right after position ``end`` (a hyphen or spaces between), lower-cased; None at punctuation."""
    match = _WORD_AFTER.match(text, end)
    return match.group(1).lower() if match else None


def units_named(text: str) -> frozenset[str]:
    """The units of measure a text names anywhere, currencies by symbol too."""
    return frozenset(u for w in re.findall(rf"[A-Za-z]+|[{''.join(CURRENCY_UNITS)}]", text) if (u := unit_of(w)) is not None)


def asked_unit_change(template: str, template_asks: str, question: str, question_asks: str) -> str | None:
    """The unit the question's final question asks in that the template's does not, or None. "How many *minutes*
    will the playlists last" of an entry that answers in hours, "how much change, *in cents*", "what *percent* of
    the pieces" of one that counts pieces: the entry's answer would come in the wrong unit. Allowed: the currency
    the template writes its amounts in, asked by name where the template's final question names no amount of money
    ("how much money" → "how many dollars", "in a week" kept); and a unit renamed throughout, which the question names
    before its final question, the template nowhere, and whose place the template's asked unit left ("a 125 oz bag
    ... how many oz" for "a {w}g bag ... how many grams"), unless it is a subunit of the template's currency ("how
    many cents"). A unit the template asks in and the question does not name ("how long") is not refused."""
    t_units, q_units = units_named(template_asks), units_named(question_asks)
    template_units = units_named(template)
    currencies = {CURRENCY_UNITS[c] for c in template if c in CURRENCY_UNITS} | (template_units & {"dollar", "euro"})
    before = question[: question.rfind(question_asks)] if question_asks in question else question
    money = currencies | {sub for sub, units in _SUBUNIT_OF.items() if units & currencies}
    for unit in sorted(q_units - t_units):
        if unit in currencies and not t_units & money:
            continue
        if any(_subunit(unit, c) for c in currencies):
            return unit  # "how many cents" of an entry that counts dollars: never a rename
        renamed_throughout = unit not in template_units and unit in units_named(before)
        if renamed_throughout and not (t_units - q_units) & units_named(question):
            continue
        return unit
    return None


def share_asked_as_count(template_asks: str, question_asks: str) -> bool:
    """The template's final question asks for a percent and the question's for a plain number ("What *number* of
    the plants" for "What *percent* of the plants"): a share and a count are other quantities, not one unit
    renamed, so unlike other units a percent may not be dropped."""
    def percent(text: str) -> bool:
        return "percent" in units_named(text) or "%" in text
    return percent(template_asks) and not percent(question_asks)


def counts_else(template_word: str | None, question_word: str | None, question_units: frozenset[str]) -> bool:
    """Whether a number the question follows with ``question_word`` counts something else than the slot the
    template follows with ``template_word``, a unit of measure: the question's word is no unit ("two *servings*"
    for "{g} grams", "200 *mushrooms*"), or another unit while the question still names the template's
    ("2 *kilograms* a day ... how many grams": a conversion the reasoning does not make). A unit renamed
    throughout ("a 175 oz bag ... how many oz" for "a {w}g bag ... how many grams") is the same reasoning, and a
    function word after the number, or none, says nothing ("200 of them"). A unit's subunit is never the unit
    renamed ("30 *cents*" for "${v}")."""
    unit = unit_of(template_word) if template_word else None
    if unit is None or question_word is None or question_word in STOP_WORDS:
        return False
    other = unit_of(question_word)
    if other is None:
        return True
    return other != unit and (_subunit(unit, other) or unit in question_units)


def _subunit(a: str | None, b: str | None) -> bool:
    """One of two units divides the other (cent and dollar)."""
    return a is not None and b is not None and (a in _SUBUNIT_OF.get(b, ()) or b in _SUBUNIT_OF.get(a, ()))


def slot_unit(template: str, name: str) -> str | None:
    """The unit the template writes a slot in: the currency symbol before it, else the word after it."""
    start = template.index("{" + name + "}")
    return currency_before(template, start) or word_after(template, start + len(name) + 2)


def in_subunit(question: str, mention: Mention) -> str | None:
    """The subunit a mention is stated in ("30 *cents*"; not "$30"), or None."""
    if currency_before(question, mention.start):
        return None
    unit = unit_of(word_after(question, mention.end) or "")
    return unit if unit in SUBUNITS_PER_UNIT else None


def in_currency(template: str, question: str, values: Mapping[str, Any], mentions: Sequence[Mention]) -> dict[str, Fraction]:
    """The values of slots the template writes after a currency symbol ("${price}") that the question states in the
    currency's subunit ("30 cents"), in the currency (3/10): name -> value. Only where the question states the value
    read in that subunit and never as an amount of the currency itself ("$30 ... 30 cents": which is meant is not
    known); the same number counting something else ("a 30 day month") leaves the guard to bind each in its place."""
    out: dict[str, Fraction] = {}
    for name, value in values.items():
        if "{" + name + "}" not in template or isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
            continue
        try:
            amount = float(value)
        except OverflowError:
            continue  # no mention holds it either (mentions.read_values)
        unit = unit_of(slot_unit(template, name) or "")
        same = [m for m in mentions if m.values and same_value(m.values[0], amount)]
        subunits = {s for m in same if (s := in_subunit(question, m)) is not None}
        in_unit = any(currency_before(question, m.start) or unit_of(word_after(question, m.end) or "") == unit for m in same)
        if len(subunits) == 1 and not in_unit and _subunit(unit, sub := next(iter(subunits))):
            out[name] = Fraction(value) / SUBUNITS_PER_UNIT[sub]
    return out


def unit_refusal(template: str, question: str, bound: Mapping[str, int], mentions: Sequence[Mention], *,
                 subunits_only: bool = False, values: Mapping[str, Any] | None = None) -> str | None:
    """Why a value read for a slot the template measures counts something else in the question, or None: each
    slot's unit (the word after it, or a currency symbol before it) against the number's in the question.
    ``subunits_only`` (the aligned path, which pins each slot between the template's own words): only a unit's
    subunit ("30 cents" for "${v}") is refused; a word of the question's own there is a rename the aligner read.
    A subunit amount read converted into the slot's unit (0.3 for "30 cents", :func:`in_currency`) is accepted."""
    named = units_named(question)
    for name, index in bound.items():
        unit = slot_unit(template, name)
        mention = mentions[index]
        counted = currency_before(question, mention.start) or word_after(question, mention.end)
        subunit = _subunit(unit_of(unit or ""), unit_of(counted or ""))
        if subunit and values is not None and _converted(float(values.get(name, 0.0)), mention, unit_of(counted or "")):
            continue
        if counts_else(unit, counted, named) and (not subunits_only or subunit):
            return f"the number read for {name!r} ({mention.text!r}) counts {counted}, not {unit}"
    return None


def _converted(value: float, mention: Mention, subunit: str | None) -> bool:
    """``value`` is the mention's amount in its subunit's unit (0.3 for "30 cents")."""
    per = SUBUNITS_PER_UNIT.get(subunit or "")
    return bool(per and mention.values) and same_value(value * per, mention.values[0])

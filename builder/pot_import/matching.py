"""How a program literal matches a number of the question.

The value forms a literal may take for a mention (the number, its percent or complement, a unit
conversion the program precomputed) and the word overlap between the literal's variable names and
the mention's context; with the small unit and stop-word vocabularies both use. Kept apart from
:mod:`builder.pot_import.plan` so the plan reads as the steps it takes.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable, Sequence
from typing import Any

from builder.gsm8k import Mention, context_sides, context_words, words_after
from builder.pot_import.program import Literal, close_to
from edge_runtime.read.measures import unit_of

#: Numbers that are usually unit conversions, not quantities of the question (60 minutes, 7 days...).
UNIT_CONSTANTS = frozenset({7, 10, 12, 24, 30, 31, 52, 60, 100, 365, 1000, 3600, 0.01})
STOP_WORDS = frozenset("a an the of for to and or than that more less each per in on at by with from is are was were "
                  "his her their its it he she they we you this these those as".split())
_SYNONYMS = {
    "daily": "day", "days": "day", "weekly": "week", "weeks": "week", "monthly": "month", "months": "month",
    "yearly": "year", "years": "year", "annual": "year", "hourly": "hour", "hours": "hour", "hr": "hour",
    "minutes": "minute", "mins": "minute", "min": "minute", "percentage": "percent", "pct": "percent",
    "cents": "cent", "dollars": "dollar", "price": "cost", "costs": "cost", "dozens": "dozen",
}
def name_tokens(text: str) -> set[str]:
    words = re.findall(r"[a-z]+", text.lower().replace("_", " "))
    out = set()
    for w in words:
        if w in STOP_WORDS or len(w) < 2:
            continue
        w = _SYNONYMS.get(w, w)
        if len(w) > 3 and w.endswith("s"):
            w = w[:-1]
        out.add(w[:5])
    return out


_MONEY_WORDS = (
    "price cost dollar cent pay paid earn spend spent money fee wage salary charge budget income profit bill tip "
    "tax rent fare sell sold buy bought saving discount allowance cash fund worth revenue debt loan change "
    "expense amount value rate"
)
_TIMES = re.compile(r"\s*(times|x)\b", re.IGNORECASE)
_DIMENSION_BEFORE = re.compile(r"\d\s*[x×]\s*$", re.IGNORECASE)


_MONEY_TOKENS = name_tokens(_MONEY_WORDS)
#: Words that make a variable a price or an amount of money (not "bought" or "sold": those name counts too).
_PRICE_TOKENS = name_tokens("price cost dollar cent fee wage salary charge fare rent tip tax money worth value")


def plain_values(mentions: Sequence[Mention]) -> set[float]:
    """The values a question states as plain numbers, not prices: a price beside a plain number of its value is scored
    as that number's twin (``similarity``'s ``plain_twin``: the "$3" of "3 different package sizes ... for $3")."""
    return {m.value for m in mentions if not m.money}


def similarity(literal: Literal, question: str, mention: Mention, plain_twin: bool = False) -> float:
    """Word overlap of the mention's neighbourhood with the literal's variable names, plus cues. ``plain_twin``:
    the question also states the mention's value as a plain number (the "4" of "2 x 4" beside "$4")."""
    ctx = name_tokens(context_words(question, mention, 5, 5))
    own_text = " ".join([literal.direct or "", literal.target or ""])
    own = name_tokens(own_text)
    others = name_tokens(" ".join(literal.names))
    score = len(ctx & own) + 0.25 * len(ctx & others)
    name_money = bool(name_tokens(literal.direct or " ".join(literal.names)) & _MONEY_TOKENS)
    # the thing a number counts is named right after it ("2 adults and 2 children", "one calculator, and one
    # geometry set"): a window of five words on each side reaches the neighbour of a list as far. Only for a variable
    # named for what it holds (``adults = 2``; the target of an inline number names what it computes), a count (not a
    # price, whose thing comes before it: "a ticket for $7 and popcorn for $7"; nor a word that is a number by what it
    # names, "2 pairs"), and a thing (a unit says how much, not what: "after 3 weeks" is no ``height_after_first_week``)
    head = words_after(question, mention, 1)
    if literal.direct and head and unit_of(head[0]) is None and mention.kind != "structural" and not mention.money \
            and not own & _PRICE_TOKENS:
        score += 0.5 * len(name_tokens(head[0]) & name_tokens(literal.direct))
    # "trees_with_7_birds = 3" of "3 trees each had 7 blue birds ... 1 final tree had 3 blue birds": a number the
    # variable's name writes, stated beside the mention, says which of two equal numbers the literal is
    score += len(_numbers_named(own_text) & _numbers_beside(question, mention))
    if mention.money and literal.direct and not name_money:
        score -= 0.5
    elif mention.money and name_money and plain_twin:
        score += 0.5  # "A 2 x 4 costs $4": a price is the "$4", not the "4" of "2 x 4"
    if literal.in_share and mention.percent:
        score += 1.0  # "100000 * 20 * .01": the 20 scaled to a share is the "20%", not the "20 years" beside it
    if _DIMENSION_BEFORE.search(question[max(0, mention.start - 4):mention.start]):
        score -= 0.5  # the 10 of "2 x 4 x 10 boards" is a size, not the count or price of the boards
    if _TIMES.match(question[mention.end:mention.end + 8]):
        if literal.direct and not re.search(r"times|factor|multipl|ratio|rate", literal.direct):
            score -= 0.5
        elif not literal.direct:
            score += 0.25
    return score


def _numbers_named(name: str) -> set[str]:
    """The whole numbers a variable name writes as words of their own between other words ("birds_in_7_trees" ->
    {"7"}); not an index at its end ("year_1", a worked solution's "trees_step1")."""
    parts = name.lower().split("_")
    return {p.lstrip("0") or "0" for p in parts[:-1] if p.isdigit() and len(p) <= 2}


def _numbers_beside(question: str, mention: Mention) -> set[str]:
    """The whole numbers written within five words of the mention, in its sentence, other than the mention itself."""
    left, right = context_sides(question, mention, 5, 5)
    return {m.lstrip("0") or "0" for w in (left + " " + right).split()
            for m in re.findall(r"(?<![0-9.,/])[0-9]+(?![0-9.,/])", w)}


def literal_form(value: Any, form: str) -> Any:
    """The program literal for a parameter value: the same arithmetic as the generated entry."""
    if ":" in form:  # a unit conversion the program precomputed (see _UNIT_LIFTS)
        operation, _, factor, factor_first = conversion(form)
        try:
            return operation(factor, value) if factor_first else operation(value, factor)
        except ZeroDivisionError:
            return math.inf
    if form == "one":  # the denominator of a fraction whose numerator literal holds the whole fraction
        return 1
    if form == "percent":
        return value / 100
    if form == "complement":
        return 1 - value / 100
    if form == "increase":
        return 1 + value / 100
    if form == "one_plus":  # "1/5 times more" written as 1.2
        return 1 + value
    if form == "one_minus":  # "a quarter less" written as 0.75
        return 1 - value
    return value


_DECREASE = re.compile(r"\b(decrease[sd]?|off|discount(ed)?|less|reduc(e|ed|es|tion)|lower|drop(s|ped)?|los[te]s?|fall"
                       r"|fell|cheaper|sale)\b", re.IGNORECASE)


_INCREASE = re.compile(r"\b(more|increase[sd]?|longer|larger|bigger|taller|higher|extra|additional|and\s+an?\s+half)\b",
                       re.IGNORECASE)


def value_matches(value: float, mention: Mention, question: str = "") -> str | None:
    """The form under which ``value`` is this mention's number, else None (a percent whose value
    and complement coincide, "50% off", is read by the words around it)."""
    forms = [form for candidate, form in mention.literal_values() if close_to(candidate, value)]
    if mention.percent and close_to(1 + float(mention.value) / 100, value):
        forms.append("increase")  # "50% more" written as 1.5
    if mention.kind == "structural" and 0 < float(mention.value) < 1:  # a fraction in words or "1/5"
        # "1/5 times more" written as 1.2, "a quarter less" as 0.75; by the words around it, as a complement is read
        # ("get 1 pound 1/2 off" at $3 is 1.5 as well, and no 1 + 1/2)
        around = question[max(0, mention.start - 40):mention.end + 40]
        if close_to(1 + float(mention.value), value) and _INCREASE.search(around) and not _DECREASE.search(around):
            forms.append("one_plus")
        if close_to(1 - float(mention.value), value) and _DECREASE.search(around):
            forms.append("one_minus")
    if not forms:
        return None
    if "percent" in forms and "complement" in forms:
        around = question[max(0, mention.start - 40):mention.end + 40]
        return "complement" if _DECREASE.search(around) else "percent"
    return forms[0]


#: Variables named after a unit conversion hold that conversion, whatever the question says nearby.
_UNIT_NAMES: dict[frozenset[str], float] = {
    frozenset(k.split()): v for k, v in {
        "month year": 12, "week year": 52, "day year": 365, "day week": 7, "hour day": 24, "minute hour": 60,
        "second minute": 60, "second hour": 3600, "cent dollar": 100, "inch foot": 12, "inch feet": 12,
        "foot yard": 3, "feet yard": 3, "ounce pound": 16, "day month": 30, "minute day": 1440, "week month": 4,
        "centimeter meter": 100, "cm meter": 100, "gram kilogram": 1000, "gram kg": 1000, "meter kilometer": 1000,
        "meter km": 1000, "milliliter liter": 1000, "ml liter": 1000, "quart gallon": 4, "egg dozen": 12,
        "item dozen": 12, "percent whole": 100,
    }.items()
}


#: A calendar month named in a variable is a month: ``weeks_in_april = 4`` is the week-per-month conversion.
_MONTH_NAMES = frozenset("january february march april may june july august september october november december".split())


def unit_name(literal: Literal) -> str | None:
    """``months_in_year = 12``: a unit conversion by its variable's name (never a parameter)."""
    if not literal.direct:
        return None
    words = {"month" if w in _MONTH_NAMES else _SYNONYMS.get(w, w) for w in literal.direct.lower().split("_")}
    words = {w[:-1] if len(w) > 3 and w.endswith("s") and w != "inches" else ("inch" if w == "inches" else w) for w in words}
    for pair, value in _UNIT_NAMES.items():
        if pair <= words and close_to(float(literal.value), value):
            return f"unit constant ({' per '.join(sorted(pair))})"
    return None


#: Conversions a program precomputes from a stated duration or measure: (smaller unit, larger unit, factor).
#: "after 2 weeks" became ``days = 14`` (2 x 7), "every 3 months ... in a year" ``harvests = 4`` (12 / 3),
#: "a 30-minute show" ``0.5`` hours (30 / 60).
_UNIT_LIFTS: tuple[tuple[str, str, int], ...] = (
    ("day", "week", 7), ("month", "year", 12), ("week", "year", 52), ("day", "year", 365), ("hour", "day", 24),
    ("minute", "hour", 60), ("second", "minute", 60), ("inch", "foot", 12), ("ounce", "pound", 16),
    ("cent", "dollar", 100),
)
_LIFT_UNITS = {unit for small, big, _ in _UNIT_LIFTS for unit in (small, big)}
#: Plurals _SYNONYMS does not already fold.
_UNIT_WORDS = {"seconds": "second", "inches": "inch", "feet": "foot", "ounces": "ounce", "pounds": "pound", "hrs": "hour"}
#: A conversion form "kind:factor": kind -> (operation, its AST operator, whether the factor comes first).
_CONVERSIONS = {"times": (operator.mul, ast.Mult, False), "per": (operator.truediv, ast.Div, True),
                "div": (operator.truediv, ast.Div, False)}


def conversion(form: str) -> tuple[Callable[[Any, Any], Any], type[ast.operator], int | float, bool]:
    """(operation, AST operator, factor, factor first) of a conversion form: "per:12" is 12 / value."""
    kind, text = form.split(":")
    number = float(text)
    operation, ast_operator, factor_first = _CONVERSIONS[kind]
    return operation, ast_operator, int(number) if number.is_integer() else number, factor_first


def unit_word(word: str) -> str:
    word = word.lower()
    return _UNIT_WORDS.get(word, _SYNONYMS.get(word, word))


_ASKS_MONEY = re.compile(r"\$|\bhow\s+much\s+(?:money\b|(?:does|did|do|will|would)\s+\w+\s+(?:spend|pay|earn|make|save))",
                         re.IGNORECASE)


def lifted_form(value: float, mention: Mention, question: str, question_units: set[str], literal: Literal) -> str | None:
    """How a constant the program precomputed is this mention converted between units, else None.

    The mention must name its unit ("2 weeks", "every 3 months", "a 30-minute show", "$24" for 2400 cents) and the other unit of
    the conversion must appear in the question (``question_units``: its words as units) or in the program's
    variable names, so that ``14`` is read as 2 weeks in days only where days are what the question counts."""
    after = words_after(question, mention, 1)
    unit = unit_word(after[0]) if after else None
    if mention.money and unit not in _LIFT_UNITS:
        unit = "dollar"  # "$24.00" names dollars; "50 cents" and "$2 weekly" keep their own unit
    if unit is None or not mention.parameterisable or float(mention.value) == 0:
        return None
    around = question_units | {unit_word(w) for name in literal.names for w in name.lower().split("_")}
    asked_in_dollars = (unit == "cent" and "dollar" not in around
                        and _ASKS_MONEY.search(re.split(r"(?<=[.!])\s+", question)[-1]) is not None)
    if asked_in_dollars:  # "costs 5 cents ... how much does he spend": an amount asked in dollars, 5 cents as 0.05
        return "div:100" if close_to(value, float(mention.value) / 100) else None
    m = float(mention.value)
    for small, big, factor in _UNIT_LIFTS:
        if unit == big and small in around and close_to(value, m * factor):
            return f"times:{factor}"  # 2 weeks -> 14 days
        if unit == small and big in around and close_to(value, factor / m):
            return f"per:{factor}"  # every 3 months -> 4 times a year
        if unit == small and big in around and close_to(value, m / factor):
            return f"div:{factor}"  # 30 minutes -> 0.5 hours
    return None


def hyphenated_measure(question: str, mention: Mention) -> bool:
    """"12-pound bags", "a 1-pound box": a number written into a measure is stated, not a unit constant."""
    return mention.kind == "digits" and re.match(r"-[A-Za-z]", question[mention.end:mention.end + 2]) is not None


def compound_word(question: str, mention: Mention) -> bool:
    """"a two-speed mower", "a six-inch sub", "a four-week month": a number word written into a compound, which
    names a kind more often than it counts; a literal reads it only when no other mention fits as well."""
    return mention.kind == "word" and re.match(r"-[A-Za-z]", question[mention.end:mention.end + 2]) is not None


def fraction_piece(question: str, mention: Mention) -> bool:
    """The "4" of "3/4ths", the "2" of "2/5": a part of a fraction the question states, which a literal reads only
    when no number stated whole ("four windows each") fits as well."""
    if mention.kind != "digits" or mention.stated is None or mention.stated[:2] == (mention.start, mention.end):
        return False
    return "/" in question[mention.stated[0]:mention.stated[1]]


def all_names(func: ast.FunctionDef) -> set[str]:
    return {n.id for n in ast.walk(func) if isinstance(n, ast.Name)} | {
        a.arg for n in ast.walk(func) if isinstance(n, ast.arguments) for a in n.args
    }


def sanitise(name: str) -> str:
    name = re.sub(r"[^0-9a-zA-Z_]", "_", name).strip("_").lower()
    name = re.sub(r"_+", "_", name)
    if not name or name[0].isdigit():
        name = "n_" + name
    return name



#: Words after a number that make it a measure, which a question may state with decimals ("2.5 hours", "6.5 foot",
#: "3.5 times as many"); a count ("12 cars") stays whole.
MEASURES = frozenset(
    "second minute hour day week month year foot inch mile yard meter metre kilometer km centimeter cm millimeter "
    "pound lb ounce oz gram kilogram kg ton liter litre milliliter millilitre ml deciliter decilitre centiliter "
    "centilitre gallon quart pint cup degree mph kph times percent acre hectare kilometre centimetre millimetre "
    "decimeter decimetre".split())

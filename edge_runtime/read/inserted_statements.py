"""Operations a question adds without a number: a statement of its own about what the entry counts, a word.

The guard accounts for every number a question states; a sentence without one passed that account. Most such
sentences stand beside the reasoning ("The sky was clear."), but one that names a thing the reasoning counts changes
it without a digit ("None of the eggs are counted.", "The rest of the rolls are sold.", "Both of her neighbours
bring the same number of pads."), and so do a word that repeats or adds an operation ("Then the whole thing happens
again."), a span of time stated with an article ("She does the same every day for a week."), a comparison added ("60
meters *less* each sprint"), what remains taken no more ("of the *used* pieces"), an amount for all in place of one
for each ("$3 *in total*" for "$3 each"), a change to an amount for a change by it ("increased *to* $4"), a word for
its opposite ("sold" for "bought", "or" for "and") and a rate per another period ("3 times a *month*" where the
final question asks "a week"). Our generated probes of these (builder/eval/number_free_probe.py) were served 41%
(tune) and 37% (check) of the time before these checks, about 1% after (the later rules: docs/benchmarks.md, with
probes of their own). The things an entry counts are the naming words right after the numbers of its template and of
the question (which may rename them). A number-free sentence of the template may be said again in other words
("Melanie sells vacuum cleaners door to door." for "Melanie is a door-to-door saleswoman.", a condition of the final
question stated as a sentence), so a statement is refused only when it shares no word but the counted things with
such a sentence ("None of the toothpicks are counted." is not "Her mom puts toothpicks in her sandwiches.")."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from edge_runtime.read.english_words import FUNCTION_WORDS, opposites, word_stem
from edge_runtime.read.measures import unit_of
from edge_runtime.read.mentions import Mention, scan
from edge_runtime.read.question_words import STOP_WORDS, WORD, final_sentence, sentences, stem
from edge_runtime.read.values import TIME_UNITS

_SLOT = re.compile(r"\{[^{}]*\}")
#: A span of time stated with an article ("after an hour", "for a week"): a quantity without a number.
ARTICLE_TIME_SPAN = re.compile(rf"\b(?:after|in|for|within|over)\s+(?P<article>an?|one)\s+"
                               rf"(?P<unit>{'|'.join((*TIME_UNITS, 'fortnight', 'decade', 'century'))})\b", re.IGNORECASE)
#: Words that add an operation even without a number ("She bought *another* set", "it happens *again*").
ADDING_WORDS = frozenset({"another", "again"})
#: Words that compare a quantity with another ("60 meters *less*", "3 *fewer* than").
COMPARING_WORDS = frozenset({"more", "less", "fewer", "than"})
_OPPOSITES = opposites()
#: Words that point at a quantity of the story rather than say what happens to it ("the *rest* of the plants").
_REFERRING = frozenset({"rest", "remaining", "remainder", "others"})
#: Words that take what remains of a quantity ("3/4 of the *remaining* pieces", "the *other* half", "what is *left*"):
#: fewer of them than the template writes and an operation takes another part ("3/4 of the *used* pieces").
REMAINDER_WORDS = _REFERRING | {"remain", "remains", "remained", "left", "leftover", "leftovers", "other"}
#: A period a rate is given per ("3 times *a week*", "*per* day", "*every* month").
RATE_PERIOD = re.compile(rf"\b(?:per|a|an|each|every)\s+(?P<unit>{'|'.join(TIME_UNITS)})\b", re.IGNORECASE)
#: A period said as an adverb ("earns $500 *weekly*") and any word that names a unit of time ("12 *days*").
_PERIOD_ADVERBS = {"hourly": "hour", "daily": "day", "weekly": "week", "monthly": "month", "yearly": "year",
                   "annually": "year", "mph": "hour", "kph": "hour"}
_ADVERB = re.compile(rf"(?<![a-z])({'|'.join(_PERIOD_ADVERBS)})\b", re.I)  # "32MPH" too
_TIME_UNIT = re.compile(rf"\b({'|'.join(TIME_UNITS)})s?\b", re.I)
#: Words that give an amount for each one of something ("$3 *each*", "4 pads *a week*"), and phrases that give it for
#: all of them together ("$3 *in total*"): an amount said for all where the template says it for each is another one.
DISTRIBUTIVE = re.compile(rf"\b(?:each|per|every|apiece)\b|\b(?:a|an)\s+(?:{'|'.join(TIME_UNITS)})s?\b",
                          re.IGNORECASE)
TOTALLING = re.compile(r"\b(?:in total|altogether|all together|in all|combined|overall|for all of them)\b",
                       re.IGNORECASE)
#: A number given as a bound or an estimate, not an amount: "*at least* 4 pads", "*over* 20 people", "*about* $5".
_BOUND_WORDS = (r"at least|at most|no more than|no less than|more than|less than|fewer than|over|under|up to|nearly|"
                r"almost|about|around|approximately|roughly|close to")
BOUNDED = re.compile(rf"\b({_BOUND_WORDS})\s+[$€£]?\d", re.IGNORECASE)
#: The bound or estimate right before a number (the text up to it ends so): "took *over* ", "*about* $".
_BOUND_BEFORE = re.compile(rf"\b({_BOUND_WORDS})\s+[$€£]?\s*$", re.IGNORECASE)
#: A number, and at most one word, before "more than": a difference from the number after ("10 *less than* 172").
_DIFFERENCE = re.compile(r"\d[\d,.]*%?\s+(?:[A-Za-z]+\s+)?$")
#: A price stated as a total: "worth *$1700 in total*", "*$100 for all of them*" (not "$400 *per month* in total", a rate
#: already, nor "0.25 of the *overall* number", an adjective).
_AMOUNT_TOTALLED = re.compile(r"[$€£]\s?\d[\d,.]*(?:\s+(?!(?:of|the|per|a|an|each|every)\b)[a-z]+){0,2}\s+"
                              r"(?:in total|altogether|all together|in all|combined|for all of them)\b", re.IGNORECASE)
#: A change stated as a difference ("increased *by* $4") or as the new amount ("increased *to* $4"): another number.
_CHANGED = r"\b(?:increas|decreas|rais|reduc|ris|rose|grow|grew|drop|cut|lower|went up|went down|goes up|goes down)\w*"
CHANGED_BY, CHANGED_TO = re.compile(_CHANGED + r"\s+by\b", re.I), re.compile(_CHANGED + r"\s+to\b", re.I)
_TOKEN = re.compile(r"\d+(?:st|nd|rd|th)\b|[a-z]+|\d+|[^\sa-z\d]")  # "19th" is an ordinal: it counts nothing
_CLAUSE = re.compile(r"\s*[,;:]\s*|\s+(?=(?:and|but|so|then|while|yet)\b)", re.IGNORECASE)
#: A counted thing is named within this many words after its number ("12 large brown eggs").
_NAMING_WORDS = 3


def counted_things(text: str) -> frozenset[str]:
    """Stems of the naming words right after each slot and number of a text, past a unit of measure, up to a function
    word or punctuation ("{n} eggs per day" gives eggs; "5 pounds of apples" apples; "${p} per fresh egg" none)."""
    words = _TOKEN.findall(_SLOT.sub(" 0 ", text).lower().replace("’", "'"))
    out: set[str] = set()
    for k, word in enumerate(words):
        if not word.isdigit():
            continue
        measured = False
        for after in words[k + 1:k + 1 + _NAMING_WORDS]:
            if unit_of(after) is not None or (measured and after == "of"):
                measured = True  # "12 ounce can", "5 pounds of apples": the unit is no thing counted, what follows is
                continue
            if not after.isalpha() or after in STOP_WORDS:
                break
            out.add(stem(after))
    return frozenset(out)


def clauses(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """(start, end) of each clause of ``text[start:end]``: split at commas, semicolons and colons and before a joining
    word ("and", "but", "so", "then", "while", "yet")."""
    end = len(text) if end is None else end
    spans, at = [], start
    for match in _CLAUSE.finditer(text, start, end):
        spans.append((at, match.start()))
        at = match.end()
    spans.append((at, end))
    return [(a, b) for a, b in spans if text[a:b].strip()]


def number_free_words(template: str) -> frozenset[str]:
    """Stems of the content words of the template's clauses that state no number and hold no slot ("Melanie is a
    door-to-door saleswoman.", "If both read each other's books, how many ...?"), names left out: what a question
    may say again in its own words without a number ("Melanie sells vacuum cleaners door to door", a condition
    stated as a sentence of its own)."""
    text = _SLOT.sub("7", template)  # any digit: "{a}/{b}" must still read as a number
    names = {w.lower() for w in re.findall(r"\b[A-Z][a-z]+", text)}
    out: set[str] = set()
    for start, end in (c for s in sentences(text) for c in clauses(text, *s)):
        if not any(not m.weak for m in scan(text[start:end])):  # a slot is a "7" here; "the 4th of July" states none
            out.update(stem(w) for w in WORD.findall(text[start:end].lower()) if w not in STOP_WORDS and w not in names)
    return frozenset(out)


def statement_refusal(question: str, counted: frozenset[str], explained: frozenset[str],
                      mentions: Sequence[Mention]) -> str | None:
    """Why the question changes the reasoning without a number: its first clause before the final question that
    states none (a weak "one" aside), names a thing the template or the question counts (``counted``: the template's
    ``counted_things``) beside words of its own (names and capitalised words aside), none of which a number-free clause
    of the template has (``explained``: ``number_free_words``); None when it has no such clause."""
    counted = counted | counted_things(question)  # the question's own names for them ("175 oranges" for apples)
    final = final_sentence(question)
    for start, end in (c for s in sentences(question) if s[0] < final[0] for c in clauses(question, *s)):
        if any(start <= m.start < end and not m.weak for m in mentions):
            continue
        words = {stem(w.lower()) for w in re.findall(r"\b[a-z]+", question[start:end]) if w not in STOP_WORDS}  # no names
        own = words - counted - _REFERRING  # "the rest" points at a quantity wherever it is said: it explains nothing
        if words & counted and own and not own & explained:
            return f"the question says something of its own about what the entry counts ({question[start:end].strip()[:80]!r})"
    return None


@dataclass(frozen=True)
class TemplateWording:
    """The template's side of these checks, read once per entry: the guard keeps it with its template facts, so a
    question pays only for its own words."""

    counted: frozenset[str]  # counted_things
    number_free: frozenset[str]  # number_free_words
    stems: Counter[str]  # every word, as english_words.word_stem, counted
    comparing: Counter[str]  # its comparing words, counted
    rate_periods: frozenset[str]  # the periods it gives a rate per ("a week", "weekly"): rate_periods()
    span_units: frozenset[str]  # the units of time it states a span of with an article ("for a week")
    remainders: int = 0  # its REMAINDER_WORDS
    distributive: int = 0  # its DISTRIBUTIVE words
    totalling: int = 0  # its TOTALLING phrases
    changed_by: tuple[int, int] = (0, 0)  # its changes stated with "by" and with "to" (CHANGED_BY, CHANGED_TO)
    time_units: frozenset[str] = frozenset()  # every unit of time it names: time_units()
    totalled_amounts: int = 0  # its amounts stated as a total (_AMOUNT_TOTALLED)
    bounded: Counter[str] = field(default_factory=Counter)  # its bounds and estimates before a number (BOUNDED)

    @classmethod
    def of(cls, template: str) -> TemplateWording:
        literal = _SLOT.sub(" ", template)
        numbered = _SLOT.sub(" 0 ", template)  # "an {n} hour day" is no rate "an hour"
        words = WORD.findall(literal.lower())
        return cls(counted_things(template), number_free_words(template), Counter(word_stem(w) for w in words),
                   Counter(w for w in words if w in COMPARING_WORDS), rate_periods(numbered),
                   frozenset(m["unit"].lower() for m in ARTICLE_TIME_SPAN.finditer(literal)),
                   sum(w in REMAINDER_WORDS for w in words), len(DISTRIBUTIVE.findall(numbered)),
                   len(TOTALLING.findall(literal)),
                   (len(CHANGED_BY.findall(literal)), len(CHANGED_TO.findall(literal))), time_units(template),
                   len(_AMOUNT_TOTALLED.findall(numbered)), _bounds(numbered))


def _bounds(text: str) -> Counter[str]:
    """The bounds and estimates ``text`` puts before a number ("at least", "over", "about"), counted."""
    return Counter(m.lower() for m in BOUNDED.findall(text))


def bound_moved(template: str, question: str, mentions: Sequence[Mention], bound: dict[str, int],
                repeats: Sequence[tuple[str, int]], unread: frozenset[str]) -> str | None:
    """Why a number the reasoning reads is given as a bound where the template's slot for it is not, or None: "which
    took *over* 3 hours" for "which took her {t} hours" says no one amount, even where the template bounds another of
    its numbers ("she took well *over* {d} hours longer"), which a count of bounds over the whole question cannot tell
    apart. Each slot's mentions (a repeated slot's too) against its places in the template. A number the reasoning
    never reads (``unread``: "over 16 years old" of a count of students) may be bounded, and a bound dropped leaves
    an amount."""
    for name, index in bound.items():
        if name in unread:
            continue
        asked = Counter(b for i in (index, *(j for n, j in repeats if n == name))
                        if (b := _bound_before(question, mentions[i].start)))
        kept = Counter(b for slot in re.finditer(re.escape("{" + name + "}"), template)
                       if (b := _bound_before(template, slot.start())))
        if extra := sorted(asked - kept):
            return f"the question gives {name!r} as a bound ({extra[0]!r}), not the amount the entry reads"
    return None


def _bound_before(text: str, at: int) -> str | None:
    """The bound or estimate written right before position ``at`` ("over", "at least"), or None; "more than" after a
    number is a difference, not a bound."""
    window = text[max(0, at - 60):at]
    match = _BOUND_BEFORE.search(window)
    if match is None or (match.group(1).lower().endswith("than") and _DIFFERENCE.search(window[:match.start()])):
        return None
    return match.group(1).lower()


def rate_periods(text: str) -> frozenset[str]:
    """The periods ``text`` gives a rate per: "3 times *a week*", "*per* day", "*every* month", "*weekly*"."""
    return frozenset({m["unit"].lower() for m in RATE_PERIOD.finditer(text) if not _ordinal(text, m.start("unit"), m.end("unit"))}
                     | _adverb_periods(text))


def time_units(text: str) -> frozenset[str]:
    """Every unit of time ``text`` names, in any form ("12 *days*", "*daily*", "a *week*")."""
    return frozenset({m[1].lower() for m in _TIME_UNIT.finditer(text) if not _ordinal(text, m.start(1), m.end(0))}
                     | _adverb_periods(text))


def _ordinal(text: str, start: int, end: int) -> bool:
    """"second" that counts in order, as the word before a thing it names shows ("at a *second* job", "the second
    week"): no unit of time. "10 meters a second", "a second or two" are."""
    following = _NEXT_WORD.match(text, end)
    return text[start:end].lower() == "second" and following is not None and following[1].lower() not in FUNCTION_WORDS


_NEXT_WORD = re.compile(r"\s+([A-Za-z]+)")


def _adverb_periods(text: str) -> set[str]:
    """The periods ``text`` names by an adverb ("*weekly*", "32*MPH*")."""
    return {_PERIOD_ADVERBS[w.lower()] for w in _ADVERB.findall(text)}


def added_without_number(question: str, template: TemplateWording, template_words: frozenset[str]) -> str | None:
    """Why the question adds an operation in words alone, or None: a word that repeats or adds one ("another",
    "again") that the template does not write (``template_words``: its words, lower-cased), or a span of time stated
    with an article ("for a week") whose unit the template states no span of that way, or with "one" ("in one week")
    whose unit the template never names."""
    extra = (set(WORD.findall(question.lower())) & ADDING_WORDS) - template_words
    if extra:
        return f"the question says {sorted(extra)[0]!r}, which adds to the entry's reasoning"
    # "in one week" too, where the template names no week at all ("in {w} week" may read the one): the number rules
    # leave a weak "one" alone ("for one of them"), and "in one week" where the entry asks "per day" asks for 7 days
    for span in ARTICLE_TIME_SPAN.finditer(question):
        unit = span["unit"].lower()
        if unit not in template.span_units and (span["article"].lower() != "one" or unit not in template.time_units):
            return f"the question states {span.group(0)!r}, a span of time the entry's reasoning does not use"
    return None


def changed_in_words(question: str, template: TemplateWording) -> str | None:
    """Why the question changes a quantity by its words, or None: a number given as a bound ("*at least* 4 pads"), a
    comparing word more often than the template ("60 meters *less* each sprint") or less often ("1/5 times *more*
    miles than" → "1/5 times as many miles as"), fewer words that take what remains ("3/4 of the *used* pieces" for
    "of the remaining pieces"), an amount for all where the template gives it for each ("$3 *in total*" for "$3
    each"), a change to an amount where the template's is by one ("increased *to* $4"), a word in place of its
    opposite ("sold" for "bought", "younger" for "older", "or" for "and": english_words.OPPOSITE_PAIRS; or a verb that
    moves a thing the other way, "bought" for "ate": TO_THEM, AWAY), or a rate per another period where a text names
    another unit of time to relate it to ("3 times a *month*" where the final question still asks "a week"; "plants 6
    tulips *a week* ... after 12 days")."""
    if bounds := sorted(_bounds(question) - template.bounded):  # "uses *at least* 4 pads": no one amount to read
        return f"the question gives a number as a bound ({bounds[0]!r}), not the amount the entry reads"
    words = WORD.findall(question.lower())
    comparing = Counter(w for w in words if w in COMPARING_WORDS)
    if more := sorted(comparing - template.comparing):
        return f"the question compares with {more[0]!r} where the entry's question does not"
    # a comparative dropped ("1/5 times *more* miles than" → "1/5 times as many miles as"); not "than" alone: "twice
    # the number of emeralds *than* the rubies" is "2 times as many emeralds as rubies"
    if dropped := sorted(w for w in template.comparing - comparing if w != "than"):
        return f"the question no longer compares with {dropped[0]!r} where the entry's question does"
    if sum(w in REMAINDER_WORDS for w in words) < template.remainders:
        return "the question takes what remains of a quantity fewer times than the entry's question (another part)"
    if (len(TOTALLING.findall(question)) > template.totalling
            and len(DISTRIBUTIVE.findall(question)) < template.distributive) \
            or len(_AMOUNT_TOTALLED.findall(question)) > template.totalled_amounts:  # "worth $1700 in total" for "worth ${v}"
        return "the question gives an amount for all of something where the entry's question gives it for each"
    (t_by, t_to), by, to = template.changed_by, len(CHANGED_BY.findall(question)), len(CHANGED_TO.findall(question))
    if (by < t_by and to > t_to) or (to < t_to and by > t_by):  # "increased *to* $4" for "increased by $4"
        return "the question states a change as a new amount where the entry's states the difference, or the other way"
    q_stems = Counter(word_stem(w) for w in words)
    for word in sorted(q_stems - template.stems):  # more often than in the template, its opposite less often
        if swapped := sorted(o for o in _OPPOSITES.get(word, ()) if q_stems[o] < template.stems[o]):
            return f"the question says {word!r} where the entry's question says {swapped[0]!r}"
    # A rate per another period: renamed throughout ("3 times a *month* ... run a month?") it is the same reasoning
    # only where neither text names another unit of time to relate it to ("4 pads *a month* ... every month" of "a
    # week ... every month" is not; nor "plants 6 tulips *a week* ... after 12 days" of "a day ... after {n} days")
    q_periods, t_periods = rate_periods(question), template.rate_periods
    if q_periods != t_periods and not (len(template.time_units) == 1 == len(time_units(question))):
        other = sorted(q_periods ^ t_periods)[0]
        return f"the question gives a rate per {other!r}, another period than the entry's question"
    return None

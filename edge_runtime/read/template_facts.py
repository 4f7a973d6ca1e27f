"""What the guard reads from an entry's template once: its constants, each slot's neighbouring words, its final
question (and whether it asks by a pronoun), the months it names, the slots written as fractions, percents or
money.

The guard (guard.py) compares a question with these facts; they depend on the entry alone, so the guard computes
them once per entry and keeps them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from edge_runtime.entries.metadata import EntryPoint
from edge_runtime.read.asking_words import AskedWords
from edge_runtime.read.inserted_statements import TemplateWording
from edge_runtime.read.measures import currency_before
from edge_runtime.read.mentions import PERCENT_AFTER, Mention
from edge_runtime.read.question_words import (
    STOP_WORDS,
    WORD,
    asks_about_a_group,
    asks_with_pronoun,
    content_words,
    fixed_compounds,
    stem,
    target_clause,
)
from edge_runtime.read.restatement import remove_numbers
from edge_runtime.read.values import months_named

SLOT = re.compile(r"\{([A-Za-z_]\w*)\}")
#: Fraction words a slot may count ("{n} thirds")
PARTS = r"(?:halves|thirds|quarters|fourths|fifths|sixths|sevenths|eighths|ninths|tenths)\b"
Context = tuple[set[str], set[str]]


@dataclass(frozen=True)
class TemplateFacts:
    """An entry's template as the guard reads it."""

    literal: str  # the template with every slot blanked
    constants: list[tuple[Mention, Context]]  # numbers of the literal text, with their neighbouring words
    slots: dict[str, Context]  # each slot's neighbouring words
    words: set[str]  # content words of the literal text
    plain_words: frozenset[str]  # every word of the literal text, lower-cased
    months: tuple[tuple[str, int], ...]  # the months it names ("june"), in order, with the days each states
    target: str  # the template's final question
    fraction_pairs: list[tuple[str, str]]  # slots written as a fraction: "{a}/{b}"
    worded_numerators: dict[str, str]  # a slot before a fraction word: "{n} thirds" -> {"n": "thirds"}
    before_of: frozenset[str]  # slots the template writes right before "of": "{f} of the students"
    asked_words: AskedWords  # its final sentence's words, as the model path's check compares them (asking_words)
    percent_slots: frozenset[str] = frozenset()  # slots the template writes as a percent: "{p}%", "{p} percent"
    #: the words right before and after a slot -> the slot: ("combines", "ml") -> "first" of "combines {first} mL"
    after_slot: dict[tuple[str, str], str] = field(default_factory=dict)
    asks_with_pronoun: bool = False  # its final question asks about someone by a pronoun ("how many does she have")
    asks_about_a_group: bool = False  # ... about its people together by a plural pronoun ("the time they all took")
    #: what it says in words alone: the things it counts, its number-free clauses, comparisons, periods (inserted_statements)
    wording: TemplateWording = TemplateWording.of("")
    #: the names its story always gives things ("canvas bags"; question_words.fixed_compounds)
    story_compounds: frozenset[tuple[str, str]] = frozenset()


def template_facts(entry: EntryPoint, scan: Callable[[str], Sequence[Mention]], *, phrase_rules: bool = True) -> TemplateFacts:
    """The facts of ``entry``'s template; ``scan`` reads its numbers (the reading pack's); without ``phrase_rules``
    (a pack without English words) the months it names are not read."""
    template = entry.template
    literal = SLOT.sub(" \x00 ", template)
    constants = [(m, context(literal, m.start, m.end)) for m in scan(literal)]
    slots: dict[str, Context] = {}
    for match in SLOT.finditer(template):
        name = match.group(1)
        if name not in slots:
            blanked = SLOT.sub(" ", template[:match.start()]) + " \x00 " + SLOT.sub(" ", template[match.end():])
            at = blanked.index("\x00")
            slots[name] = context(blanked, at, at + 1)
    words = content_words(literal.replace("\x00", " ")) | {w for p in entry.params if p.unit for w in content_words(p.unit)}
    target = target_clause(SLOT.sub("#", template))
    head = target.split("#")[0]
    if "#" in target and len(content_words(head)) >= 2:
        # "What is the pressure, in kPa, of # mol ... held in a # container?": what it asks for is before its
        # givens; a rewording may state them in a sentence of their own
        target = head
    after_slot = {}
    for m in SLOT.finditer(template):
        word = re.match(r"[\s-]*([A-Za-z]+)", template[m.end():])
        after = "money" if currency_before(template, m.start()) else word[1].lower() if word else None
        before = WORD.findall(template[:m.start()].lower())
        if after and before:  # "found ${m}": "found some money" leaves it unstated
            after_slot[(before[-1], after)] = m.group(1)
    return TemplateFacts(
        literal, constants, slots, words, frozenset(WORD.findall(literal.lower())),
        months=tuple((month, days) for month, days in months_named(literal).items()
                     if entry.numbers is None or days in entry.numbers) if phrase_rules else (),
        target=target,
        fraction_pairs=re.findall(r"\{(\w+)\}\s*/\s*\{(\w+)\}", template),
        worded_numerators={name: word.lower() for name, word in re.findall(rf"\{{(\w+)\}}[\s-]+({PARTS})", template)},
        before_of=frozenset(re.findall(r"\{(\w+)\}\s+(?:times\s+)?of\b", template)),
        percent_slots=frozenset(m.group(1) for m in SLOT.finditer(template) if PERCENT_AFTER.match(template, m.end())),
        after_slot=after_slot,
        asks_with_pronoun=asks_with_pronoun(literal),
        asks_about_a_group=asks_about_a_group(literal),
        asked_words=AskedWords.of(literal),
        wording=TemplateWording.of(template),
        story_compounds=fixed_compounds(literal),
    )


#: How far either side of a span its context words are looked for: many times three content words, and a bound on the
#: work per number of a long sentence (a 4 KB question of 1 200 numbers read its whole sentence for each: 2 s).
_CONTEXT_CHARS = 240


def context(text: str, start: int, end: int, width: int = 3) -> Context:
    """Content words just before and just after a span, within its sentence."""
    window = text[max(0, start - _CONTEXT_CHARS):start]
    left = re.split(r"[.?!](?:\s|$)", window)[-1]
    if start > _CONTEXT_CHARS and left == window:  # cut inside the sentence: not inside a word
        left = "".join(left.split(None, 1)[1:])
    window = text[end:end + _CONTEXT_CHARS]
    right = re.split(r"[.?!](?:\s|$)", window)[0]
    if end + _CONTEXT_CHARS < len(text) and right == window:
        right = "".join(right.rsplit(None, 1)[:-1])
    before = [stem(w) for w in WORD.findall(remove_numbers(left).lower()) if w not in STOP_WORDS][-width:]
    after = [stem(w) for w in WORD.findall(remove_numbers(right).lower()) if w not in STOP_WORDS][:width]
    return set(before), set(after)



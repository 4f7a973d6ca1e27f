"""Does a question read by the model keep the words its final sentence asks with?

On the aligned path the aligner has compared the final question word by word, renames included
(``final_question``). On the model path nothing has: the statements were reworded too much to align, so the guard
only knew that the final questions share a third of their content words. That let through final sentences that
keep the story but ask for another quantity of it: "how many feet of line does he *need*" for "need *to buy*",
"how many tulips *has he planted*" for "does he have", "*if he puts all the rolls and croissants* end to end" for
"all the baked goods", "*after the second week*, how many ...".

Without an alignment, the evidence of a rename is the question itself: a rewording renames a thing everywhere, so
a word of the template's final sentence that the question's final sentence drops while its story still uses it
was not renamed — the question no longer asks with it; and a word the question's final sentence adds that the
template uses only before its final sentence asks about a given. A condition of the final sentence that states no
number ("*After the first week*, how many ...") must be the template's own, in its words: another one narrows what
is asked. And the words it asks with must come from one of the two texts: a word for the asked thing that neither
story names ("how many pounds of *vegetables*" of a story of beets and turnips) asks for another quantity (months
and units are left to the checks that compare them).

People are left to the role checks (a name for a pronoun is not a change here), and so are the givens a final
sentence may restate: the asking clause counts up to its first number ("how much does he pay for 16 glasses" asks
as "how much does he pay for"), a condition that states a number, or a value read for a slot of words ("compounded
*quarterly*"), not at all.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from edge_runtime.read.english_words import NUMBER_WORDS, ONES, TENS, word_stem
from edge_runtime.read.measures import unit_of
from edge_runtime.read.question_words import STOP_WORDS, WORD, people, sentences
from edge_runtime.read.values import MONTH_DAYS

#: Words that pose a question or count, not what it asks for ("how many", "what is the number of", "calculate"), and
#: adverbs that say when or how exactly ("does she *still* have" for "does she have left").
_FRAME = frozenset("""how what which who whom whose when where why calculate compute find determine figure work
                   number amount total overall value many much still now currently actually really exactly approximately
                   roughly""".split())
_NUMBER = re.compile(r"[#$\d]|\x00")
_QUESTION_WORD = re.compile(r"\b(?:how|what|which|who|whom|whose|calculate|compute|find|determine)\b", re.IGNORECASE)
#: Clauses end at punctuation and start at a condition's word or the question word ("If he eats 5 a day how many ...")
_CLAUSE = re.compile(rf"[,;:]|\b(?:if|when|after|before)\b|(?={_QUESTION_WORD.pattern})", re.IGNORECASE)
_NUMBER_WORDS = frozenset(NUMBER_WORDS) | frozenset(ONES) | frozenset(TENS)


def final_sentence(text: str) -> tuple[int, int]:
    """(start, end) of the last sentence with a '?' (else the last sentence)."""
    spans = sentences(text)
    if not spans:
        return 0, len(text)
    asked = [(s, e) for s, e in spans if "?" in text[s:e]]
    return (asked or spans)[-1]


def _words(text: str, names: set[str]) -> dict[str, str]:
    """Content stems of ``text`` -> the word as written (not frame words, number words or names)."""
    out: dict[str, str] = {}
    for w in WORD.findall(text.lower()):
        if w not in STOP_WORDS and w not in _FRAME and w not in _NUMBER_WORDS and w not in names and len(w) >= 3:
            out.setdefault(word_stem(w), w)
    return out


def _clauses(final: str, names: set[str], stated: re.Pattern[str] | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """A final sentence's words: those it asks with (the clause with the question word, up to its first number) and
    those of its conditions that state no number (one that does restates a given: "If she sells the rest for $3
    each, how much ...")."""
    asking: dict[str, str] = {}
    conditions: dict[str, str] = {}
    for clause in _CLAUSE.split(final):
        number = _NUMBER.search(clause) or (stated.search(clause) if stated else None)
        if _QUESTION_WORD.search(clause):
            asking.update({k: v for k, v in _words(clause[: number.start()] if number else clause, names).items()
                           if k not in asking})
        elif not number:
            conditions.update({k: v for k, v in _words(clause, names).items() if k not in conditions})
    return asking, conditions


def _story_words(text: str, names: set[str]) -> set[str]:
    return {word_stem(w) for w in WORD.findall(text.lower()) if w not in STOP_WORDS and w not in names}


def asking_word_change(template_literal: str, question: str, word_values: Sequence[str] = ()) -> str | None:
    """Why the question's final sentence asks with other words than the template's (``template_literal``: slots
    blanked), judged by what each story still names; None when it keeps them or renames them everywhere.
    ``word_values``: the values read for slots of words, stated like numbers."""
    names = {p.lower() for p in people(template_literal) + people(question)}
    stated = re.compile(r"\b(?:" + "|".join(re.escape(v) for v in word_values) + r")\b", re.IGNORECASE) if word_values else None
    ts, te = final_sentence(template_literal)
    qs, qe = final_sentence(question)
    t_asking, t_conditions = _clauses(template_literal[ts:te], names)
    q_asking, q_conditions = _clauses(question[qs:qe], names, stated)
    t_asks, q_asks = {**t_conditions, **t_asking}, {**q_conditions, **q_asking}
    t_story = _story_words(template_literal[:ts] + " " + template_literal[te:], names)
    q_story = _story_words(question[:qs] + " " + question[qe:], names)
    kept_aside = [word for w, word in t_asks.items() if w not in q_asks and w in q_story]
    if kept_aside:
        return f"the question's final sentence no longer asks with {kept_aside[0]!r}, which its story still names"
    t_final = _story_words(template_literal[ts:te], names)
    added = [word for w, word in q_conditions.items() if w not in t_final]
    if added:
        return f"the question's final sentence adds a condition with {added[0]!r}, which the entry's does not state"
    given = [word for w, word in q_asks.items() if w not in t_asks and w in t_story]
    if given:
        return f"the question's final sentence asks with {given[0]!r}, which the entry's story states as given"
    t_all = t_story | _story_words(template_literal[ts:te], names)
    unnamed = [word for w, word in q_asking.items() if w not in t_all and w not in q_story and not _named_apart(word)]
    if unnamed:
        return f"the question's final sentence asks with {unnamed[0]!r}, which neither its story nor the entry's names"
    return None


def _named_apart(word: str) -> bool:
    """A month or a unit: other checks compare those (the days a month states, the unit asked in)."""
    return word in MONTH_DAYS or word == "may" or unit_of(word) is not None

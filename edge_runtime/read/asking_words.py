"""Does a question read by the model keep the words its final sentence asks with?

On the aligned path the aligner has compared the final question word by word, renames included
(``final_question``). On the model path nothing has: the statements were reworded too much to align, so the guard
only knew that the final questions share a third of their content words. That let through final sentences that
keep the story but ask for another quantity of it: "how many feet of line does he *need*" for "need *to buy*",
"how many tulips *has he planted*" for "does he have", "*if he puts all the rolls and croissants* end to end" for
"all the baked goods", "*after the second week*, how many ...".

Without an alignment, the evidence of a rename is the question itself: a rewording renames a thing everywhere. The
final sentence is read as the clause that asks (from its question word up to its first number: a given restated
after it is story) and its conditions, words compared by a stem that meets a verb in any tense (``word_stem``).
Refused, each with the reason a miss reports:

- a word the template's asking clause asks with, dropped while the question's story still uses it and with nothing
  of the question's own in its place ("need" for "need *to buy*"); the subject may go ("how many animals *are
  there*", "*were sold*") and a pronoun may take a noun's place ("does *he* have"), not a verb's; a template
  condition dropped while both stories still name its words;
- a word the question asks with that the template uses only before its final sentence: a given ("has he
  *planted*"), or a condition of the template's narrowed to givens ("all the *rolls and croissants*" for "all the
  baked goods"); units, and a noun in the place of the template's pronoun, are not givens;
- a condition that states no number in words the template's final sentence does not have ("*After the first week*,
  how many ..."; "After buying the books" as well: its words cannot tell a restatement from a narrowing);
- what remains asked as all of it ("does he *have*" for "have *left*"), another time ("5 years *ago*", "*at
  first*"), and "each" one where the template asks about them all ("how much will *each donut* cost");
- a thing asked for that neither story names ("how many pounds of *vegetables*" of a story of beets and turnips);
  units, months and money are left to the checks that compare them.

People are left to the role checks; a value read for a slot of words ("compounded *quarterly*") counts as stated, a
lead-in ("Tell me how much", "Calculate ...") and a unit to answer in (", in dollars?") are not conditions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from edge_runtime.read.english_words import NUMBER_WORDS, ONES, SCALES, TENS, word_stem
from edge_runtime.read.measures import unit_of
from edge_runtime.read.question_words import (
    STOP_WORDS,
    WORD,
    compound_modifiers,
    final_sentence,
    fixed_compounds,
    people,
)
from edge_runtime.read.values import MONTH_DAYS, TIME_UNITS

#: Words that pose a question or count, not what it asks for ("how many", "what is the number of", "calculate"), and
#: adverbs that say when or how exactly ("does she *still* have" for "does she have left").
_FRAME = frozenset("""how what which who whom whose when where why number amount total overall value values many
                   much still now currently actually really exactly approximately roughly once until unless assuming
                   suppose supposing""".split())
#: An instruction's verb before what it asks ("*Calculate* the total cost", "*Work out* how much"): a lead, not content.
_INSTRUCTION = re.compile(r"\s*(?:please\s+)?(?:calculate|compute|find|determine|figure\s+out|work\s+out)\b\s*", re.IGNORECASE)
_PRONOUNS = frozenset("he she it they him her them his its their hers theirs".split())
#: Verbs that frame what is asked rather than name it ("does he *need* to work", "were they *able* to make").
_MODAL = frozenset("need needs needed able want wants wanted going have has had get gets got".split())
_SO_FAR = re.compile(r"\bso\s+far\b")
_NUMBER = re.compile(r"[#$\d\x00]")
_QUESTION_WORD = re.compile(r"\b(?:how|what|which|who|whom|whose|calculate|compute|find|determine)\b", re.IGNORECASE)
#: A final sentence's clauses end at punctuation and at a condition's word ("If he eats 5 a day, how many ...").
_OPENERS = r"(?:if|when|after|before|once|until|unless|given\s+that|assuming|suppose|supposing)\b"
_CLAUSE = re.compile(rf"[,;:]|\b(?={_OPENERS})", re.IGNORECASE)
_CONDITION = re.compile(rf"\s*{_OPENERS}", re.IGNORECASE)
_WH = re.compile(r"\b(?:how|what|which|who|whom|whose)\b", re.IGNORECASE)
#: The words between an auxiliary and the subject it asks about ("does *the* farmer have").
_AUXILIARIES = frozenset("do does did is are was were will would can could should has have had must might may".split())
_DETERMINERS = frozenset("the a an this that these those his her their its my our your each every which".split())
_NUMBER_WORDS = frozenset(NUMBER_WORDS) | frozenset(ONES) | frozenset(TENS) | frozenset(SCALES)
_NUMBER_WORD = re.compile(rf"\b(?:{'|'.join(sorted(_NUMBER_WORDS, key=len, reverse=True))})\b", re.IGNORECASE)


def _plain(text: str) -> str:
    """Lower case, "didn't" as "did not", "Ann's" as "Ann", "so far" as "now" (an adverb of when, as "now" is)."""
    text = re.sub(r"'s\b", "", text.lower().replace("’", "'").replace("n't", " not").replace("cannot", "can not"))
    return _SO_FAR.sub("now", text)


def _words(text: str, names: set[str]) -> dict[str, str]:
    """Content stems of ``text`` -> the word as written (not frame words, number words, names or pronouns)."""
    out: dict[str, str] = {}
    for w in WORD.findall(_plain(text)):
        if len(w) >= 3 and w not in names and w not in _NUMBER_WORDS and w not in _PRONOUNS and w not in STOP_WORDS \
                and w not in _FRAME:
            out.setdefault(word_stem(w), w)
    return out


@dataclass(frozen=True)
class AskedWords:
    """A text's words, its final sentence's parts apart: what it asks with (the clause with the question word, up to
    its first number), its conditions that state no number, the pronouns of both, the thing it asks for, and the
    words of everything else (the story, and conditions that state a number: they restate givens). A template's
    depend on the entry alone: the guard keeps them with its template facts."""

    asking: dict[str, str]
    conditions: dict[str, str]
    pronouns: frozenset[str]
    asked: dict[str, str]
    story: frozenset[str]
    final: frozenset[str]
    subject: str  # the stem of the noun its asking clause asks about ("does the *farmer* have"), or ""
    phrase_words: frozenset[str]  # stems of its final sentence's words in a noun phrase ("the *baked goods*")
    each: str  # how its final sentence asks about each one ("how much will *each donut* cost", "*each of* them"), or ""
    plain_final: str  # its final sentence in lower case, contractions spelled out
    story_compounds: frozenset[tuple[str, str]]  # the names its story always gives things (question_words.fixed_compounds)

    @classmethod
    def of(cls, text: str, stated: re.Pattern[str] | None = None) -> AskedWords:
        start, end = final_sentence(text)
        final = text[start:end]
        story_part = text[:start] + " " + text[end:]
        names = {p.lower() for p in people(story_part)} | {
            p.lower() for p in people(final) if not re.match(rf"\s*{p}\b", final)}  # not a sentence's first word
        asking: dict[str, str] = {}
        conditions: dict[str, str] = {}
        restated, condition_texts = [], []
        pronouns: set[str] = set()
        clauses = [c for c in _CLAUSE.split(final) if c and c.strip()]
        asks_at = next((i for i, c in enumerate(clauses) if _WH.search(c)),
                       next((i for i, c in enumerate(clauses) if _QUESTION_WORD.search(c)), len(clauses) - 1))
        asked_text = ""
        for i, clause in enumerate(clauses):
            if i == asks_at:
                wh = _WH.search(clause) or _QUESTION_WORD.search(clause)
                if wh and wh.start() and _CONDITION.match(clause):  # "If he eats 5 a day how many ...": its own condition
                    clauses.append(clause[: wh.start()])
                clause = clause[wh.start():] if wh else clause  # "Tell me how much ...": a lead-in, not a condition
                clause = clause[_INSTRUCTION.match(clause).end():] if _INSTRUCTION.match(clause) else clause
                clause = _ONE.sub(lambda m: m.group(0)[:-3] + "it", clause)  # "does each one get": a pronoun, no number
                number = _first_number(clause, stated)
                asked_text = clause[: number.start()] if number else clause
                asking.update({k: v for k, v in _words(asked_text, names).items() if k not in asking})
                restated.append(clause[number.start():] if number else "")
                pronouns |= _PRONOUNS & set(WORD.findall(_plain(asked_text)))
                continue
            number = _first_number(clause, stated)
            if number:
                restated.append(clause)
            elif _in_unit(clause):  # ", in liters?": the unit asked in, as the asking clause's
                asking.update({k: v for k, v in _words(clause, names).items() if k not in asking})
            else:
                conditions.update({k: v for k, v in _words(clause, names).items() if k not in conditions})
                pronouns |= _PRONOUNS & set(WORD.findall(_plain(clause)))
                condition_texts.append(clause)
        story = set(_words(story_part + " " + " ".join(restated), names))
        asked = {word_stem(w): w for w in _asked_thing(asked_text) if w not in names}
        each = _EACH.search(_plain(" . ".join([asked_text, *condition_texts])))
        return cls(asking, conditions, frozenset(pronouns), asked, frozenset(story), frozenset(_words(final, names)),
                   _subject(asked_text), _phrase_words(final), each.group(0).strip(" ?.!") if each else "", _plain(final),
                   fixed_compounds(text, word_stem))


def _first_number(clause: str, stated: re.Pattern[str] | None) -> re.Match[str] | None:
    """The first number a clause states: digits or a slot, a number word, or a value read for a slot of words."""
    return _NUMBER.search(clause) or _NUMBER_WORD.search(clause) or (stated.search(clause) if stated else None)


_ASKED = re.compile(r"\bhow\s+(?:many|much)\s+(?:more\s+|fewer\s+|less\s+|total\s+)?(?P<what>[a-z]+)"
                    r"(?:\s+of\s+(?:the\s+)?(?P<of>[a-z]+))?"
                    r"|\b(?:number|amount)\s+of\s+(?:the\s+)?(?P<counted>[a-z]+)")


def _asked_thing(asking: str) -> list[str]:
    """The words naming what a question asks for: "how many *pounds* of *vegetables*", "the number of *pens*" (not a
    verb or a name after it: "how much money *remains*")."""
    found = _ASKED.search(_plain(asking))
    if not found:
        return []
    return [w for w in found.group("what", "of", "counted")
            if w and w not in STOP_WORDS and w not in _AUXILIARIES and w not in _FRAME]


#: Words that ask for what remains ("how much does he have *left*"); a final sentence without any asks for all of it.
_REMAINS = frozenset("left remaining remain remains rest leftover still now".split())
#: "each" picking the things one by one: "each of", "each donut" (not "each day": a rate; "every" and "per" likewise)
_EACH = re.compile(rf"\beach(?:\s+of\b|\s*[?.!]|\s+(?!(?:{'|'.join(TIME_UNITS)})s?\b)[a-z]+)")
_ONE_BY_ONE = re.compile(r"\b(?:each|every|per|apiece|individually)\b")
_ONE = re.compile(r"\b(?:each|every|which|the|this|that)\s+one\b", re.IGNORECASE)
#: Words that move the asked time ("how old was she 5 years *ago*", "how much did he have *at first*"), read over the
#: whole final sentence: after a number as well.
_WHEN = frozenset("ago originally initially earlier previously formerly again first beginning".split())
#: "before" or "after" with nothing after it ("how much did he have *before*?"): another time, not a condition.
_ENDS_WHEN = re.compile(r"\b(before|after|afterwards|later)\W*$")


def _phrase_words(text: str) -> frozenset[str]:
    """Stems of the words a determiner opens, with one word between ("the baked goods", "the book"): what a pronoun
    may stand for, unlike a verb ("spend on *making*")."""
    tokens = WORD.findall(_plain(text))
    return frozenset(word_stem(w) for i, w in enumerate(tokens)
                     if (i >= 1 and tokens[i - 1] in _DETERMINERS) or (i >= 2 and tokens[i - 2] in _DETERMINERS))


def _subject(asking: str) -> str:
    """The stem of the noun right after the asking clause's first auxiliary ("does the farmer have" -> farmer)."""
    tokens = WORD.findall(_plain(asking))
    at = next((i for i, w in enumerate(tokens) if w in _AUXILIARIES), None)
    if at is None:
        return ""
    rest = tokens[at + 1:]
    while rest and rest[0] in _DETERMINERS:
        rest.pop(0)
    return word_stem(rest[0]) if rest and rest[0] not in STOP_WORDS and rest[0] not in _PRONOUNS else ""


def asking_word_change(template_literal: str, question: str, word_values: Sequence[str] = ()) -> str | None:
    """Why the question's final sentence asks with other words than the template's (``template_literal``: slots
    blanked), judged by what each story still names; None when it keeps them or renames them everywhere.
    ``word_values``: the values read for slots of words, stated like numbers."""
    return asking_change(AskedWords.of(template_literal), question, word_values)


def asking_change(t: AskedWords, question: str, word_values: Sequence[str] = ()) -> str | None:
    """``asking_word_change`` with the template's words read once (``AskedWords.of`` its blanked template)."""
    values = [re.escape(v) for v in word_values if v and v.strip()]
    stated = re.compile(rf"\b(?:{'|'.join(values)})\b", re.IGNORECASE) if values else None
    q = AskedWords.of(question, stated)
    t_final, q_final = t.plain_final, q.plain_final
    if (remains := _REMAINS & set(WORD.findall(t_final)) - {"still", "now"}) and not _REMAINS & set(WORD.findall(q_final)):
        return f"the question's final sentence drops {sorted(remains)[0]!r}: it asks for all, the entry's for what remains"
    ended = {m.group(1) for m in [_ENDS_WHEN.search(q_final)] if m} - {m.group(1) for m in [_ENDS_WHEN.search(t_final)] if m}
    if shifted := sorted((_WHEN & set(WORD.findall(q_final))) - set(WORD.findall(t_final)) | ended):
        return f"the question's final sentence asks about another time ({shifted[0]!r}) than the entry's"
    if q.each and not _ONE_BY_ONE.search(t_final):
        return f"the question's final sentence asks about {q.each!r} one by one, the entry's about them all"
    # the subject may go: "How many animals *are there*", "how many muffins *were sold*" ask about the same thing
    kept_aside = {w: word for w, word in t.asking.items()
                  if w not in q.asking and w in q.story and w != t.subject and not _named_apart(word)}
    if t.conditions and q.conditions:  # a condition the question keeps, with its words changed
        kept_aside.update({w: word for w, word in t.conditions.items() if w not in q.conditions and w in q.story})
    elif t.conditions:  # dropped, unless the question's story took it in ("She sells all the baked goods.")
        moved = any(w in q.story and w not in t.story for w in t.conditions)
        kept_aside.update({w: word for w, word in t.conditions.items() if w in q.story and not moved})
    # a word of the question's own may stand in for a dropped one, and a pronoun for a noun ("does *he* have"); not a
    # word its story uses where the entry's does not: that renames a thing everywhere ("game discs" for "DVDs") and
    # stands in for the entry's name of it, not for the dropped word
    renamed = {w for w in q.asking if w in q.story and w not in t.story}
    stands_in = bool(set(q.asking) - set(t.asking) - renamed) or (
        bool(q.pronouns - t.pronouns) and set(kept_aside) <= t.phrase_words)
    if kept_aside and not stands_in:
        return (f"the question's final sentence no longer asks with {next(iter(kept_aside.values()))!r}, which its story "
                "still names")
    # what it asks with replaced by words of its own that neither story names, more than one ("how much money does he
    # *take in from sales*" for "how much money does he *lose*"): a rewording says it again in a word or keeps one
    dropped = [word for w, word in t.asking.items()
               if w not in q.asking and w != t.subject and word not in _MODAL and not _named_apart(word)]
    own = [word for w, word in q.asking.items() if w not in t.final and w not in t.story and w not in q.story]
    if dropped and len(own) >= 2:
        return (f"the question's final sentence asks with {', '.join(map(repr, own))} in place of {dropped[0]!r}: "
                "another quantity than the entry's")
    # a word that names a thing of the entry's final sentence more fully, as its story does ("the *board* game" for
    # "the game" where the story buys a board game), asks about the same thing
    fuller = compound_modifiers(t.story_compounds, q_final, t.final, word_stem)
    # a condition of the question's own narrows what is asked, even in the story's words ("After the second week")
    added = [word for w, word in q.conditions.items() if w not in t.final and w not in fuller]
    if added:
        return f"the question's final sentence adds a condition with {added[0]!r}, which the entry's does not state"
    asks = {**q.asking, **q.conditions} if t.conditions else q.asking
    # a noun in the place of the template's pronoun names whom it stood for ("will *the printer* print" for "will it")
    referent = q.subject if t.pronouns and not t.subject else ""
    given = [word for w, word in asks.items()
             if w not in t.final and w in t.story and w != referent and w not in fuller and not _named_apart(word)]
    if given:
        return f"the question's final sentence asks with {given[0]!r}, which the entry's story states as given"
    unnamed = sorted(word for w, word in q.asked.items()
                     if w not in t.final | t.story and w not in q.story and not _named_apart(word))
    if unnamed:
        return f"the question asks for {unnamed[0]!r}, which neither its story nor the entry's names"
    return None


def _in_unit(clause: str) -> bool:
    """A clause that only names a unit to answer in ("in dollars", "in total kilograms")."""
    words = WORD.findall(_plain(clause))
    return bool(words) and words[0] in ("in", "into") and unit_of(words[-1]) is not None and len(words) <= 3


def _named_apart(word: str) -> bool:
    """A month, a unit or money: other checks compare those (the days a month states, the unit asked in)."""
    return word in MONTH_DAYS or word == "money" or unit_of(word) is not None

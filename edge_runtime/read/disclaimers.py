"""Statements a question itself calls irrelevant are set aside before IS2 reads it once more.

Word problems often insert a fact and say in the same breath that it does not count: "then baked
12 cupcakes for a charity event, which is irrelevant to her sales", "an old pack of 20 balloons,
but they decide not to use them", "ignoring the growth of the maple tree". Such a statement is
not part of the reasoning, but its number would make the guard refuse the question (a quantity
the entry does not use) and it confuses the small target model. The question says the number is
irrelevant, so it is "shown irrelevant" in the guard's terms: the statement is removed and the
rest of the question is answered as usual (every other check still runs on what is left).

Only explicit phrases count ("irrelevant", "does not affect", "no longer matters", a choice not
taken of something offered: "notices a dress for $50, but decides not to buy it"; "ignoring X");
words that often describe a quantity taken away ("expired", "not participating", "excluding",
"not counting") and concessions ("despite", "regardless of") do not. What is removed is local:
the clause that holds the disclaimer, the clause with the number it points back at, or, for a
disclaimer that is a sentence of its own ("This spending does not affect his saving target."),
the sentence before it (never the first sentence); for "ignoring X", the clauses whose numbers
are about a thing X names that no other sentence names, and the phrase only when there are
such clauses. Nothing from the sentence that asks (the last one with a "?") on is removed but
the "ignoring" phrase. The answerer reads a question this way only after it missed as written,
discards the reading when a removed number counts something the entry's template counts, and
says in the narration what was set aside.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from edge_runtime.read.mentions import scan
from edge_runtime.read.question_words import content_words, sentences

#: Phrases by which a question declares a statement irrelevant to what it asks. Not "expired", "not
#: participating", "unaffected" or "not counted": those often describe a quantity to take away ("3 of which
#: are expired"), which is reasoning, not a distraction.
_IRRELEVANT = (r"irrelevant|not\s+relevant|no\s+longer\s+matter(?:s|ed)?"
               r"|(?:does|do|did|will|would)(?:\s+not|n[’']t)\s+(?:affect|matter)|(?:won|don)[’']t\s+(?:affect|matter)"
               r"|not\s+affect(?:ed|ing)?")
_DISCLAIMER = re.compile(
    rf"\b(?:{_IRRELEVANT}"
    r"|(?P<choice>(?:decides?|decided|chooses?|chose)\s+(?:not\s+to|against)|declined?s?\s+(?:because|the\s+offer))"
    r"|(?P<refused>(?:(?:does|do|did|will|would)(?:\s+not|n[’']t)|(?:won|don)[’']t)\s+(?:buy|purchase|use|accept)(?:\s+(?:it|them|any|one)\b|\s*$)))(?:\b|$)",
    re.IGNORECASE,
)
#: The phrases alone that call something irrelevant: their "not" states no negation of the reasoning.
IRRELEVANCE = re.compile(rf"\b(?:{_IRRELEVANT})\b", re.IGNORECASE)
#: A choice not taken sets aside only an option the question offered ("notices a dress priced at $50, but decides
#: not to buy it"), not something done ("eats 4 pears, but decides not to eat any more").
_OPTION = re.compile(
    r"\b(?:consider(?:s|ed|ing)?|sees?|saw|notic(?:e|es|ed)|offer(?:s|ed)?|finds?|found|spott?(?:s|ed)?|"
    r"picks?\s+up|picked\s+up|tempted|thinks?\s+about|thought\s+about|looks?\s+at|looked\s+at|"
    r"c(?:o|a)mes?\s+across|c(?:o|a)mes?\s+with|ha(?:s|ve|d)|habit)\b", re.IGNORECASE)
#: A phrase that sets its object aside: "ignoring the maple tree". Not "despite" or "regardless of" (they concede,
#: they do not set aside), nor "not counting" or "excluding" (they take something away).
_SETS_ASIDE = re.compile(r"\b(?:ignoring|ignore|disregarding|disregard)\s+(?P<object>[^,.;?!]+)", re.IGNORECASE)
#: Words that name an attribute, not the thing set aside ("the *number* of apples", "the *growth* of the tree").
_ATTRIBUTES = frozenset(
    "number amount total price cost distance time growth size weight height length rate speed value fact presence "
    "other another some any all their his her its they them".split())
#: A disclaimer that points back at an earlier statement ("this doesn't affect", "these offers do not").
_POINTS_BACK = re.compile(r"\b(?:this|these|that|those|it|such)\b", re.IGNORECASE)
#: A clause that goes on with the statement before it ("..., but it's already 50 feet tall").
_CONTINUES = re.compile(r"^(?:but|and|which|who|where|while)\b", re.IGNORECASE)
#: Words a disclaimer may open with that name nothing: "but", "which", "this", "they", "again".
_LEADING = re.compile(
    r"\b(?:but|and|so|yet|though|although|which|who|that|this|these|those|it|they|he|she|we|you|i|him|her|them|"
    r"again|also|eventually|then|still|however|therefore)\b", re.IGNORECASE)
_DEMONSTRATIVE = re.compile(r"^\W*(?:(?:but|and|so|yet|though|although)\s+)?(?:this|these|those|such)\b", re.IGNORECASE)
_WORD = re.compile(r"[a-z]+")
_NAME = re.compile(r"\b[A-Z][a-z]+\b")  # "but Frederick declines": the actor, named again
_CLAUSE_BREAK = re.compile(r"[,;]\s+")
_SLOT = re.compile(r"\{\w+\}")


@dataclass(frozen=True)
class SetAside:
    """The question without its disclaimed statements, and those statements in question order."""

    question: str
    removed: tuple[str, ...] = ()
    #: what the removed numbers count, and the things an "ignoring" phrase named: an entry whose template talks
    #: about one of them cannot have them set aside (``counts_what_template_counts``)
    counted: frozenset[str] = frozenset()


def _clauses(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) of each clause of one sentence: split at ", " and "; " (not inside "4,000")."""
    body_end = end
    while body_end > start and text[body_end - 1] in ".?!\"'” ":
        body_end -= 1
    spans, at = [], start
    for match in _CLAUSE_BREAK.finditer(text, start, body_end):
        spans.append((at, match.start()))
        at = match.end()
    spans.append((at, body_end))
    return [(s, e) for s, e in spans if e > s]


@lru_cache(maxsize=512)
def _mentions(text: str) -> tuple:
    return tuple(scan(text))


@lru_cache(maxsize=512)
def _words(text: str) -> frozenset[str]:
    return frozenset(content_words(text))


def _has_number(text: str) -> bool:
    return bool(_mentions(text))


def set_aside_disclaimed(question: str) -> SetAside:
    """``question`` without the statements it calls irrelevant (unchanged when there are none)."""
    spans = sentences(question)
    if len(spans) < 2:
        return SetAside(question)
    asked = [i for i, (a, b) in enumerate(spans) if "?" in question[a:b]]
    final = asked[-1] if asked else len(spans) - 1  # the sentence that asks; what follows it is never cut
    clause_lists = [_clauses(question, s, e) for s, e in spans]
    text = [[question[cs:ce] for cs, ce in clauses] for clauses in clause_lists]
    said: dict[tuple[int, int], bool] = {}  # (sentence, clause) -> set aside by a disclaimer (True) or "ignoring" (False)
    things: set[str] = set()  # the things "ignoring X" names
    named: list[frozenset[str]] = []  # each sentence's content words, once some phrase sets a thing aside

    for si, clauses in enumerate(text[:final + 1]):
        for ci, clause in enumerate(clauses):
            marker = _DISCLAIMER.search(clause)
            if marker is not None and si < final:
                before = clause[: marker.start()]
                back = ci - 1
                if back > 0 and not _has_number(clauses[back]) and not _words(_LEADING.sub("", clauses[back])):
                    back -= 1  # "she saw shoes that cost $75, but again, she didn't buy them": skip "but again"
                previous = back >= 0 and _has_number(clauses[back]) and _refers_back(before, clauses[back])
                offered = _OPTION.search(" ".join(clauses[:ci]) + " " + before)
                if (marker["choice"] or marker["refused"]) and not offered:
                    pass  # a choice not taken, but nothing was offered: "eats 4 pears, but decides not to eat more"
                elif marker["refused"] and not _offered_first(before if _has_number(before) else
                                                             clauses[back] if previous else ""):
                    pass  # "didn't buy it" sets aside only a priced thing offered: "saw shoes that cost $75"
                elif _has_number(before):
                    said[(si, ci)] = True  # "a 300-pound spare tire in it that doesn't affect ..."
                elif previous:  # "an old pack of 20 balloons, but they decide not to use them"
                    said.update({(si, cj): True for cj in range(back, ci)})
                    if not _has_number(clause):  # keep "... did not affect her total earnings of $120"
                        said[(si, ci)] = True
                elif (si > 1 and _POINTS_BACK.search(clause) and not any(_has_number(c) for c in clauses)
                      and any(_has_number(c) for c in text[si - 1])):
                    # "This spending does not affect his saving target.": the sentence before goes too (never
                    # the first sentence: it sets the scene the question is about)
                    said.update({(sj, cj): True for sj in (si - 1, si) for cj in range(len(text[sj]))})
            aside = _SETS_ASIDE.search(clause)
            if aside is not None and not _has_number(clause):
                named = named or [_words(" ".join(c)) for c in text]
                about, distinctive = _about(text[:final], named, si, _head(aside["object"]))
                if about:  # nothing found to set aside: the phrase may be taking something away, leave it
                    said.update({key: False for key in about | {(si, ci)}})
                    things |= distinctive

    # what goes on with a dropped statement goes with it; a sentence left without a number goes whole
    for si, clauses in enumerate(text[:final]):
        for ci in range(1, len(clauses)):
            if (si, ci - 1) in said and (si, ci) not in said and _CONTINUES.match(clauses[ci]) \
                    and not _DISCLAIMER.search(clauses[ci]):
                said[(si, ci)] = said[(si, ci - 1)]
        cut_here = [ci for ci in range(len(clauses)) if (si, ci) in said]
        if cut_here and not any(_has_number(c) for ci, c in enumerate(clauses) if (si, ci) not in said):
            said.update({(si, ci): said[(si, cut_here[0])] for ci in range(len(clauses)) if (si, ci) not in said})
    if not said:
        return SetAside(question)
    kept = _remove(question, spans, clause_lists, set(said))
    if not _has_number(kept):
        return SetAside(question)
    removed, counted = [], set(things)
    for si, clauses in enumerate(text):
        if all((si, ci) in said for ci in range(len(clauses))):
            removed.append(question[spans[si][0]:spans[si][1]].strip())
        else:
            removed += [clause for ci, clause in enumerate(clauses) if (si, ci) in said]
        counted |= {w for ci, clause in enumerate(clauses) if said.get((si, ci)) for w in _counted(clause)}
    return SetAside(kept, tuple(removed), frozenset(counted))


def _offered_first(statement: str) -> bool:
    """The statement offers something before it states a number ("saw a pair of shoes that cost $75"), so its
    numbers are the offered thing's, not the scene's ("get 1 pound 1/2 off ... a special offer on candy canes")."""
    option, mentions = _OPTION.search(statement), _mentions(statement)
    return option is not None and bool(mentions) and option.end() <= mentions[0].start


def _counted(statement: str) -> set[str]:
    """What the numbers of a statement count: the words after each number, past a measure ("200 pounds of unique
    *rocks*", "a 500-pound decorative *ornament*")."""
    out: set[str] = set()
    for mention in _mentions(statement):
        after = statement[mention.end:].split()[:4]
        if after and after[0].startswith("-"):
            after = after[1:]
        if "of" in after[:2]:
            after = after[after.index("of") + 1:]
        out |= content_words(" ".join(after[:2]))
    return out


def _refers_back(subject: str, previous: str) -> bool:
    """Whether a disclaimer's words before its verb ("but they", "which", "but the coupon") point at the clause
    before it, not at a statement of their own ("while the board game was sold out and ...")."""
    if _DEMONSTRATIVE.match(subject):  # "but this information is not relevant", "these expenses do not affect"
        return True
    words = content_words(_NAME.sub("", _LEADING.sub("", subject))) - _ATTRIBUTES
    return not words or bool(words & content_words(previous))


def _head(phrase: str) -> set[str]:
    """The first word of what a phrase sets aside that names a thing ("apples" of "the number of apples")."""
    for word in _WORD.findall(phrase.lower()):
        named = content_words(word) - _ATTRIBUTES
        if named:
            return named
    return set()


def _about(text: list[list[str]], named: list[frozenset[str]], own: int,
           words: set[str]) -> tuple[set[tuple[int, int]], set[str]]:
    """The clauses outside the final question whose numbers are about what is set aside, named by a word no other
    sentence names ("the maple tree" of "ignoring the growth of the maple tree")."""
    distinctive = {w for w in words if sum(w in n for i, n in enumerate(named) if i != own) == 1}
    if not distinctive:
        return set(), set()
    return {(si, ci) for si, clauses in enumerate(text) if si != own for ci, clause in enumerate(clauses)
            if _counts_only(clause, distinctive)}, distinctive


def _counts_only(clause: str, things: set[str]) -> bool:
    """Every number of ``clause`` is about ``things``: the clause's one number comes after the thing ("a maple tree
    that grows 2 inches"), or each number counts it ("4 cups and 3 cups"); not "10 pens and 4 cups"."""
    if not _words(clause) & things:
        return False
    mentions = _mentions(clause)
    if not mentions:
        return False
    if len(mentions) == 1 and content_words(clause[: mentions[0].start]) & things:
        return True
    return all(content_words(" ".join(clause[m.end:].split()[:3])) & things for m in mentions)


def _remove(question: str, spans: list[tuple[int, int]], clause_lists: list[list[tuple[int, int]]],
            cut_clauses: set[tuple[int, int]]) -> str:
    """The question with the cut clauses removed (a whole sentence with the space after it, a clause with its
    separator); what is kept stays as written, except that a sentence whose first clause went starts with a
    capital. The cuts never overlap: each clause is cut once, sentences and clauses in order."""
    cuts: list[tuple[int, int]] = []
    capitalise: list[int] = []
    for index, ((s, e), clauses) in enumerate(zip(spans, clause_lists)):
        drop = {clauses[ci] for si, ci in cut_clauses if si == index}
        if not drop:
            continue
        if len(drop) == len(clauses):
            cuts.append((s, spans[index + 1][0] if index + 1 < len(spans) else e))
            continue
        kept = [i for i, c in enumerate(clauses) if c not in drop]
        for i, (cs, ce) in enumerate(clauses):
            if (cs, ce) not in drop:
                continue
            if i > kept[-1]:  # a trailing run: cut from the end of the last kept clause
                cuts.append((clauses[kept[-1]][1], clauses[-1][1]))
                break
            cuts.append((cs, clauses[i + 1][0]))
        if kept[0] > 0:
            capitalise.append(clauses[kept[0]][0])
    pieces, at = [], 0
    for cs, ce in sorted(cuts):
        pieces.append(question[at:cs])
        at = ce
    pieces.append(question[at:])
    out = "".join(pieces)
    for position in sorted(capitalise, reverse=True):
        p = position - sum(ce - cs for cs, ce in cuts if ce <= position)
        out = out[:p] + out[p].upper() + out[p + 1:]
    return out.strip()


def counts_what_template_counts(aside: SetAside, template: str) -> str | None:
    """A word the template uses for something the set-aside statements count ("he eats 4 *pears*" for an entry
    about pears; "ignoring the *pears*" of one that adds them up), or None. The answerer discards a set-aside
    reading then: what the question calls irrelevant must not be part of the entry's own reasoning."""
    shared = aside.counted & content_words(_SLOT.sub(" ", template))
    return min(shared) if shared else None


__all__ = ["SetAside", "counts_what_template_counts", "set_aside_disclaimed"]

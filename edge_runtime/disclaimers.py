"""Statements a question itself calls irrelevant are set aside before IS2 reads it.

Word problems often insert a fact and say in the same breath that it does not count: "then baked
12 cupcakes for a charity event, which is irrelevant to her sales", "an old pack of 20 balloons,
but they decide not to use them", "ignoring the growth of the maple tree". Such a statement is
not part of the reasoning, but its number would make the guard refuse the question (a quantity
the entry does not use) and it confuses the small target model. The question says the number is
irrelevant, so it is "shown irrelevant" in the guard's terms: the statement is removed and the
rest of the question is answered as usual (every other check still runs on what is left).

Only explicit disclaimers count (a fixed list of phrases), and what is removed is local: the
clause that holds the disclaimer, the clause with the number it refers to, or, for a disclaimer
that is a sentence of its own ("This spending does not affect his saving target."), the sentence
before it. A clause of the final question is removed only when it is the "ignoring ..." phrase
itself. The answer's narration lists what was set aside.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from edge_runtime.guard import content_words, scan, sentences

#: Phrases by which a question declares a statement irrelevant to what it asks.
_DISCLAIMER = re.compile(
    r"\b(?:irrelevant|not\s+relevant|unaffected|no\s+longer\s+matter(?:s|ed)?"
    r"|(?:does|do|did|will|would)(?:\s+not|n[’']t)\s+(?:affect|matter)|(?:won|don)[’']t\s+(?:affect|matter)"
    r"|not\s+affect(?:ed|ing)?|not\s+to\s+be\s+counted"
    r"|(?:decides?|decided|chooses?|chose)\s+(?:not\s+to|against)|declined?s?\s+(?:because|the\s+offer)"
    r"|(?:is|was|are|were)\s+expired"
    r"|not\s+participating|not\s+taking\s+part)\b",
    re.IGNORECASE,
)
#: A phrase that sets its object aside: "ignoring the maple tree", "regardless of the weather".
_SETS_ASIDE = re.compile(
    r"\b(?:ignoring|ignore|regardless\s+of|not\s+counting|excluding|disregarding|despite)\s+(?P<object>[^,.;?!]+)",
    re.IGNORECASE,
)
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
_WORD = re.compile(r"[a-z]+")
_NAME = re.compile(r"\b[A-Z][a-z]+\b")  # "but Frederick declines": the actor, named again
_CLAUSE_BREAK = re.compile(r"[,;]\s+")


@dataclass(frozen=True)
class SetAside:
    """The question without its disclaimed statements, and those statements in question order."""

    question: str
    removed: tuple[str, ...] = ()


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


@lru_cache(maxsize=512)
def _has_number(text: str) -> bool:
    return bool(scan(text))


def set_aside_disclaimed(question: str) -> SetAside:
    """``question`` without the statements it calls irrelevant (unchanged when there are none)."""
    spans = sentences(question)
    if len(spans) < 2:
        return SetAside(question)
    final = len(spans) - 1
    clause_lists = [_clauses(question, s, e) for s, e in spans]
    text = [[question[cs:ce] for cs, ce in clauses] for clauses in clause_lists]
    dropped: set[tuple[int, int]] = set()  # (sentence, clause)
    named: list[set[str]] = []  # each sentence's content words, once some phrase sets a thing aside
    whole: set[int] = set()  # sentences dropped whole

    for si, clauses in enumerate(text):
        for ci, clause in enumerate(clauses):
            marker = _DISCLAIMER.search(clause)
            if marker is not None and si != final:
                previous = ci > 0 and _has_number(clauses[ci - 1]) and _refers_back(clause[: marker.start()], clauses[ci - 1])
                if _has_number(clause[: marker.start()]):
                    dropped.add((si, ci))  # "a 300-pound spare tire in it that doesn't affect ..."
                elif previous:  # "an old pack of 20 balloons, but they decide not to use them"
                    dropped.add((si, ci - 1))
                    if not _has_number(clause):  # keep "... did not affect her total earnings of $120"
                        dropped.add((si, ci))
                elif (si > 1 and _POINTS_BACK.search(clause) and not any(_has_number(c) for c in clauses)
                      and any(_has_number(c) for c in text[si - 1])):
                    whole.update({si - 1, si})  # "This spending does not affect his saving target."
            aside = _SETS_ASIDE.search(clause)
            if aside is not None and not _has_number(clause):
                dropped.add((si, ci))
                named = named or [content_words(" ".join(c)) for c in text]
                dropped.update(_about(text, named, si, _head(aside["object"])))

    # what goes on with a dropped statement goes with it; a sentence left without a number goes whole
    for si, clauses in enumerate(text):
        for ci in range(1, len(clauses)):
            if (si, ci - 1) in dropped and _CONTINUES.match(clauses[ci]) and not _DISCLAIMER.search(clauses[ci]) \
                    and si != final:
                dropped.add((si, ci))
        if si != final and any((si, ci) in dropped for ci in range(len(clauses))) and not any(
                _has_number(c) for ci, c in enumerate(clauses) if (si, ci) not in dropped):
            whole.add(si)
    if not dropped and not whole:
        return SetAside(question)
    cut = {(si, ci) for si, clauses in enumerate(text) for ci in range(len(clauses)) if si in whole or (si, ci) in dropped}
    kept = _remove(question, spans, clause_lists, cut)
    if not _has_number(kept):
        return SetAside(question)
    removed = tuple(question[spans[si][0]:spans[si][1]].strip() if si in whole else text[si][ci]
                    for si, ci in sorted(cut) if si not in whole or ci == 0)
    return SetAside(kept, removed)


def _refers_back(subject: str, previous: str) -> bool:
    """Whether a disclaimer's words before its verb ("but they", "which", "but the coupon") point at the clause
    before it, not at a statement of their own ("while the board game was sold out and ...")."""
    words = content_words(_NAME.sub("", _LEADING.sub("", subject))) - _ATTRIBUTES
    return not words or bool(words & content_words(previous))


def _head(phrase: str) -> set[str]:
    """The first word of what a phrase sets aside that names a thing ("apples" of "the number of apples")."""
    for word in _WORD.findall(phrase.lower()):
        named = content_words(word) - _ATTRIBUTES
        if named:
            return named
    return set()


def _about(text: list[list[str]], named: list[set[str]], own: int, words: set[str]) -> set[tuple[int, int]]:
    """The clauses outside the final question whose numbers are about what is set aside, named by a word no other
    sentence names ("the maple tree" of "ignoring the growth of the maple tree")."""
    if not words:
        return set()
    distinctive = {w for w in words if sum(w in n for i, n in enumerate(named) if i != own) == 1}
    if not distinctive:
        return set()
    return {(si, ci) for si, clauses in enumerate(text[:-1]) if si != own for ci, clause in enumerate(clauses)
            if _counts_only(clause, distinctive)}


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
    """The question with the dropped spans cut out; everything kept stays byte for byte as written."""
    cuts: list[tuple[int, int]] = []
    capitalise: list[int] = []
    for index, ((s, e), clauses) in enumerate(zip(spans, clause_lists)):
        drop = {clauses[ci] for si, ci in cut_clauses if si == index}
        if all(c in drop for c in clauses):
            cuts.append((s, spans[index + 1][0] if index + 1 < len(spans) else e))
            continue
        kept = [i for i, c in enumerate(clauses) if c not in drop]
        last_kept = kept[-1]
        for i, (cs, ce) in enumerate(clauses):
            if (cs, ce) not in drop:
                continue
            if i > last_kept:  # a trailing run: cut from the end of the last kept clause
                cuts.append((clauses[last_kept][1], clauses[-1][1]))
                break
            cuts.append((cs, clauses[i + 1][0]))
        if kept[0] > 0:
            capitalise.append(clauses[kept[0]][0])
    text, at = [], 0
    for cs, ce in sorted(cuts):
        if cs < at:
            cs = at
        text.append(question[at:cs])
        at = max(at, ce)
    text.append(question[at:])
    out = "".join(text)
    for position in sorted(capitalise, reverse=True):
        shift = sum(ce - cs for cs, ce in cuts if ce <= position)
        p = position - shift
        if 0 <= p < len(out):
            out = out[:p] + out[p].upper() + out[p + 1:]
    return out.strip()


__all__ = ["SetAside", "set_aside_disclaimed"]

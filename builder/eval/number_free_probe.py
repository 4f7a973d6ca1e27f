"""Operations added without a number, generated from the probe templates.

The guard accounts for every number a question states, so a changed question that states none passed it: one
sentence before the final question that says something of a counted thing ("None of the pads are counted.", "The
rest of the pads are sold.", "Both of her neighbours bring the same number of pads.", "All but the first of the
pads are given away."), repeats the story ("Then the whole thing happens again."), or stretches it over a span of
time with an article ("She does the same every day for a week.", "This goes on for a fortnight."); and, as
controls of the number words, "A hundred more pads arrive.", "A pair of the pads is lost.", "Later the number of
pads triples.", "Only every other one of the pads is kept."; the first six again as clauses joined to the
sentence before the final question (", but none of the pads are counted"); and a word of the story swapped for its
opposite ("sold" for "bought", "younger" for "older", "earns" for "spends"). Each row's reasoning changed, so any
answer served is a changed question served. The tune half was read while designing the checks (edge_runtime/read/
inserted_statements.py); the check half is figures only.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from builder.eval import rewritten_probe
from edge_runtime.read.question_words import final_sentence

#: The added sentences, by what they change; {n} is a plural the story counts by a number.
ADDED = {
    "none": "None of the {n} are counted.",
    "the rest": "The rest of the {n} are sold.",
    "both": "Both of her neighbours bring the same number of {n}.",
    "all but": "All but the first of the {n} are given away.",
    "again": "Then the whole thing happens again.",
    "for a week": "She does the same every day for a week.",
    "fortnight": "This goes on for a fortnight.",
    "hundred": "A hundred more {n} arrive.",
    "a pair": "A pair of the {n} is lost.",
    "triple": "Later the number of {n} triples.",
    "every other": "Only every other one of the {n} is kept.",
}

#: The same changes as clauses joined to the sentence before the final question, by what they change.
JOINED = {
    "clause: none": ", but none of the {n} are counted",
    "clause: the rest": ", and the rest of the {n} are sold",
    "clause: both": ", and both of her neighbours bring the same number of {n}",
    "clause: all but": ", but all except the first of the {n} are given away",
    "clause: again": ", and then she does it all again",
    "clause: for a week": ", and she does the same every day for a week",
}
#: Words swapped for their opposite in the story, before the final question (this list is the generator's own,
#: written before the guard's table of opposites; the first three that apply to a question are used).
SWAPPED = [("more", "fewer"), ("fewer", "more"), ("less", "more"), ("older", "younger"), ("younger", "older"),
           ("buys", "sells"), ("bought", "sold"), ("sells", "buys"), ("sold", "bought"), ("gives", "receives"),
           ("gave", "received"), ("loses", "gains"), ("lost", "found"), ("adds", "removes"), ("increase", "decrease"),
           ("increased", "decreased"), ("faster", "slower"), ("longer", "shorter"), ("taller", "shorter"),
           ("eats", "buys"), ("ate", "bought"), ("spends", "earns"), ("spent", "earned"), ("earns", "spends"),
           ("off", "extra"), ("discount", "surcharge"), ("left", "used"), ("remaining", "used")]
_SENTENCES = rewritten_probe.sentences_added(ADDED)
_CLAUSES = rewritten_probe.sentences_added(JOINED, joined=True)


def opposite_swapped(question: str, limit: int = 3) -> list[tuple[str, str]]:
    """(kind "opposite: a->b", question) for the first ``limit`` words of ``SWAPPED`` the story before the final
    question writes, each swapped once (its first occurrence)."""
    start, _ = final_sentence(question)
    out = []
    for a, b in SWAPPED:
        if len(out) < limit and (m := re.search(rf"\b{a}\b", question[:start])):
            out.append((f"opposite: {a}->{b}", question[:m.start()] + b + question[m.end():]))
    return out


def added_without_numbers(question: str) -> list[tuple[str, str]]:
    """(kind, question) for each sentence of ``ADDED`` before the final question, each clause of ``JOINED``, and each
    opposite of ``opposite_swapped``."""
    return [*_SENTENCES(question), *_CLAUSES(question), *opposite_swapped(question)]


def write(out: Path, *, per_template: int = 2) -> Counter[tuple[str, str]]:
    """The query set: each sentence added to ``per_template`` re-parameterisations of every probe template."""
    return rewritten_probe.write(out, added_without_numbers, label="number-free", per_template=per_template)


def main(argv: list[str] | None = None) -> int:
    return rewritten_probe.main(argv, module="builder.eval.number_free_probe", doc=__doc__ or "",
                                rewrite=added_without_numbers, label="number-free", per_template=2)


if __name__ == "__main__":
    raise SystemExit(main())

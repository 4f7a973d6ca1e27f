"""Changed final questions generated from the probe templates, by rewriting patterns of our own.

The template probes' changed final questions were written by hand, a few per template. These are made by rule from
every template's re-parameterisations, so each pattern meets every template: the final question asks about another
thing the story counts, about the containers of what it asked, with its purpose or its "left" dropped, narrowed to a
day or to "after the first week", or about another person of the story. The patterns are ours, not the guard's
(docs/benchmarks.md, *The model path's final sentence*): the guard was designed on the tune half's rows and the check
half's are figures only. No row has a known answer ("None"): each asks for another quantity than the entry answers,
so any answer served is a changed question served (a pattern that happens to keep the quantity is possible, which
makes the served count an upper bound).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from builder.eval import rewritten_probe
from edge_runtime.read.measures import unit_of
from edge_runtime.read.question_words import final_sentence, people

#: Plurals that do not add "s".
_IRREGULAR = {"person": "people", "child": "children", "foot": "feet", "man": "men", "woman": "women"}
#: Rewrites of words of the final question: (pattern, replacement, kind).
_REWRITES = (
    (r"\bneed to (?:buy|pay|make|save|sell)\b", "need", "purpose dropped"),
    (r"\b(have|has) left\b", r"\1", "'left' dropped"),
    (r"\bin total\b|\baltogether\b|\ball together\b|\bin all\b", "on the first day", "narrowed to a day"),
)


def _split_final(question: str) -> tuple[str, str, str]:
    """(story, final question, rest) of a question."""
    s, e = final_sentence(question)
    return question[:s], question[s:e], question[e:]


def _plural(noun: str) -> str:
    return _IRREGULAR.get(noun, noun + ("es" if noun.endswith(("s", "x", "ch", "sh")) else "s"))


def changed_final_questions(question: str) -> Iterator[tuple[str, str]]:
    """(kind, question) for each pattern that applies to ``question``'s final question."""
    story, final, rest = _split_final(question)
    asked = re.search(r"\b[Hh]ow many ([a-z]+)", final)
    if asked:
        noun = asked.group(1)
        counted = [n for n in dict.fromkeys(re.findall(r"\b\d[\d,.]*\s+([a-z]+s)\b", story))
                   if n != noun and n not in final and n != "times" and unit_of(n) is None]
        if counted:
            yield "another counted thing", story + final[:asked.start(1)] + counted[0] + final[asked.end(1):] + rest
        containers = [n for n in dict.fromkeys(re.findall(r"\b(?:each|every|per|a|one)\s+([a-z]{4,})\b", story, re.IGNORECASE))
                      if n not in final and unit_of(n) is None and unit_of(noun) is None]
        if containers:
            containers_of = f"{_plural(containers[0])} of "
            yield "containers of it", story + final[:asked.start(1)] + containers_of + final[asked.start(1):] + rest
    for pattern, replacement, kind in _REWRITES:
        if re.search(pattern, final):
            yield kind, story + re.sub(pattern, replacement, final, count=1) + rest
    if re.match(r"(?:How|What)\b", final):
        yield "after the first week", story + "After the first week, " + final[0].lower() + final[1:] + rest
    named = [p for p in people(story) if p not in final]
    asked_about = [p for p in people(final) if p in people(story)]
    if named and asked_about:
        yield "another person", story + final.replace(asked_about[0], named[0]) + rest


def write(out: Path, *, per_template: int = 3) -> Counter[tuple[str, str]]:
    """The query set: each pattern applied to ``per_template`` re-parameterisations of every probe template."""
    return rewritten_probe.write(out, changed_final_questions, label="final question", per_template=per_template)


def main(argv: list[str] | None = None) -> int:
    return rewritten_probe.main(argv, module="builder.eval.final_question_probe", doc=__doc__ or "",
                                rewrite=changed_final_questions, label="final question", per_template=3)


if __name__ == "__main__":
    raise SystemExit(main())

"""Changed questions that give for all of something what the template gives for each: "sold the pears at $3
*each*" → "at $3 *in total*", "uses 4 pads of paper *a week*" → "4 pads of paper *altogether*", generated from the
probe templates' re-parameterisations.

Written to check the guard's rule on amounts for each and for all (edge_runtime/read/inserted_statements.py,
``DISTRIBUTIVE`` and ``TOTALLING``). Each row's reasoning changed, so any answer served is a changed question served.
"""

from __future__ import annotations

import re

from builder.eval import rewritten_probe
from edge_runtime.read.question_words import final_sentence
from edge_runtime.read.values import TIME_UNITS

#: What is put in place of the word for each one, a question each.
FOR_ALL = ("in total", "altogether", "for all of them")
_UNITS = "|".join(TIME_UNITS)
_EACH = re.compile(rf"(?<=\d)(?:\s+[a-z]+){{0,3}}?\s+(each|per\s+(?:{_UNITS})|a\s+(?:{_UNITS}))\b")


#: Where a final sentence's own condition ends and what it asks begins ("If opals are worth $3 each, *how* much ...").
_ASKING = re.compile(r",\s+(?:how|what|which|who|when)\b", re.IGNORECASE)


def for_all(question: str) -> list[tuple[str, str]]:
    """(kind "each->in total", question) for each of ``FOR_ALL`` put in place of the first word for each one that
    follows a number of the story before the final question ("$3 each", "4 pads a week"), or else of the final
    sentence's own condition ("If opals are worth $300 each, how much ..."); none without one."""
    start, _ = final_sentence(question)
    m = _EACH.search(question[:start])
    if m is None and (asking := _ASKING.search(question, start)):
        m = _EACH.search(question[:asking.start()], start)
    if m is None:
        return []
    return [(f"{m.group(1)}->{phrase}", question[:m.start(1)] + phrase + question[m.end(1):]) for phrase in FOR_ALL]


def main(argv: list[str] | None = None) -> int:
    return rewritten_probe.main(argv, module="builder.eval.distributive_probe", doc=__doc__ or "",
                                rewrite=for_all, label="for all", per_template=4)


if __name__ == "__main__":
    raise SystemExit(main())

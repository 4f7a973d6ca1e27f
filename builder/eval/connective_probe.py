"""Changed questions whose small words join or change amounts otherwise: "48 grey shirts *or* 110 floral shirts"
for "and", "the cost was increased *to* $4" for "increased by $4", generated from the probe templates'
re-parameterisations.

Written to check the guard's rules on these words (edge_runtime/read/english_words.py ``OPPOSITE_PAIRS``' and/or,
edge_runtime/read/inserted_statements.py ``CHANGED_BY`` / ``CHANGED_TO``). Each row's reasoning changed, so any answer
served is a changed question served.
"""

from __future__ import annotations

import re

from builder.eval import rewritten_probe
from edge_runtime.read.question_words import final_sentence

_CHANGE_BY = re.compile(r"\b(?:increased|decreased|raised|reduced|rose|grew|dropped|cut|lowered|went up|went down)"
                        r"\s+(by)\b")
_TO = re.compile(r"\b(?:increased|decreased|raised|reduced|rose|grew|dropped|cut|lowered|went up|went down)\s+(to)\b")
_TWO_AMOUNTS = re.compile(r"\$?\d[\d,.]*(?:\s+[a-z]+){0,3}\s+(and)\s+\$?\d")


def connective_swapped(question: str) -> list[tuple[str, str]]:
    """(kind, question) for the story before the final question: its first "and" between two stated amounts read as
    "or", and its first change "by" an amount read as "to" it (or "to" as "by"); none where it has neither."""
    start, _ = final_sentence(question)
    story, out = question[:start], []
    for kind, pattern, word in (("and->or", _TWO_AMOUNTS, "or"), ("by->to", _CHANGE_BY, "to"), ("to->by", _TO, "by")):
        if m := pattern.search(story):
            out.append((kind, question[:m.start(1)] + word + question[m.end(1):]))
    return out


def main(argv: list[str] | None = None) -> int:
    return rewritten_probe.main(argv, module="builder.eval.connective_probe", doc=__doc__ or "",
                                rewrite=connective_swapped, label="connective", per_template=4)


if __name__ == "__main__":
    raise SystemExit(main())

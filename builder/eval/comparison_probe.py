"""Changed questions whose comparison is dropped: "4 *fewer* perch *than* the previous night" read as "4 *times as many*
perch *as* the previous night", "20 *more* pages *than*" as "20 times as many pages as", generated from the probe
templates' re-parameterisations.

Written to check the guard's rule on comparatives the question no longer writes (edge_runtime/read/inserted_statements.py
``changed_in_words``): a difference read as a multiple is another operation. Each row's reasoning changed, so any answer
served is a changed question served.
"""

from __future__ import annotations

import re

from builder.eval import rewritten_probe
from edge_runtime.read.question_words import final_sentence

_COMPARED = re.compile(r"\b(\d[\d,.]*|twice|half) (more|fewer|less) ((?:[a-z]+ ){0,2})than\b")


def comparison_dropped(question: str) -> list[tuple[str, str]]:
    """(kind, question) for the story before the final question: its first "N more/fewer/less X than" read as "N times
    as many X as"; none where the story compares no amount that way."""
    start, _ = final_sentence(question)
    m = _COMPARED.search(question[:start])
    if m is None:
        return []
    return [(f"{m.group(2)}->times as many", question[:m.start()] + f"{m.group(1)} times as many {m.group(3)}as"
             + question[m.end():])]


def main(argv: list[str] | None = None) -> int:
    return rewritten_probe.main(argv, module="builder.eval.comparison_probe", doc=__doc__ or "",
                                rewrite=comparison_dropped, label="comparison", per_template=4)


if __name__ == "__main__":
    raise SystemExit(main())

"""Changed questions that give a number as a bound or an estimate: "uses 4 pads of paper a week" → "uses *at least* 4
pads", "*over* 4 pads", "*about* 4 pads", generated from the probe templates' re-parameterisations.

Written to check the guard's rule on bounds (edge_runtime/read/inserted_statements.py ``BOUNDED``): such a question has
no one answer, and the entry's, read for the number itself, is no answer to it. Each row's reasoning changed, so any
answer served is a changed question served.
"""

from __future__ import annotations

import re

from builder.eval import rewritten_probe
from edge_runtime.read.question_words import final_sentence

#: What is put before the number, a question each.
BOUNDS = ("at least", "over", "about")
_COUNT = re.compile(r"(?<![\w$.,/])\d[\d,]*(?:\.\d+)?(?=\s+[a-z])")


def bounded(question: str) -> list[tuple[str, str]]:
    """(kind, question) for each of ``BOUNDS`` put before the first number of the story before the final question that
    counts something named after it ("4 pads"); none without one."""
    start, _ = final_sentence(question)
    m = _COUNT.search(question[:start])
    if m is None:
        return []
    return [(bound, question[:m.start()] + f"{bound} " + question[m.start():]) for bound in BOUNDS]


def main(argv: list[str] | None = None) -> int:
    return rewritten_probe.main(argv, module="builder.eval.bound_probe", doc=__doc__ or "",
                                rewrite=bounded, label="bound", per_template=4)


if __name__ == "__main__":
    raise SystemExit(main())

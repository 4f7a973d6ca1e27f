"""Changed questions that no longer take what remains: a word that points at the rest of a quantity ("3/4 of the
*remaining* pieces", "the *rest* of the plants") replaced by a word that names another part ("3/4 of the *broken*
pieces", "the *first* of the plants"), generated from the probe templates' re-parameterisations.

Written to check the guard's rule on what remains (edge_runtime/read/inserted_statements.py, ``REMAINDER_WORDS``) on
words it was not designed on: the opposites of ``number_free_probe`` swap these words for "used" only. Each row's
reasoning changed, so any answer served is a changed question served.
"""

from __future__ import annotations

import re

from builder.eval import rewritten_probe

#: Each word that takes what remains -> the words put in its place, one changed question each.
REPLACED = {"remaining": ("broken", "first", "cheaper"), "rest": ("first", "best"), "remainder": ("first", "best")}
_REMAINDER = re.compile(rf"\b({'|'.join(REPLACED)})\b")


def remainder_replaced(question: str) -> list[tuple[str, str]]:
    """(kind "a->b", question) for each replacement of the question's first word of ``REPLACED``; none without one."""
    m = _REMAINDER.search(question)
    if m is None:
        return []
    return [(f"{m.group(1)}->{b}", question[:m.start()] + b + question[m.end():]) for b in REPLACED[m.group(1)]]


def main(argv: list[str] | None = None) -> int:
    return rewritten_probe.main(argv, module="builder.eval.remainder_probe", doc=__doc__ or "",
                                rewrite=remainder_replaced, label="remainder", per_template=4)


if __name__ == "__main__":
    raise SystemExit(main())

"""Added operations stated with weak number words, generated from the probe templates.

The hand-written probes add clauses with digits ("her cousin ate 9 more"); the guard refuses any unexplained digit.
These add one sentence before the final question that changes a counted thing with a word the guard treats as weak
or shares a value with ("*One of the* pads is given away", "*a couple of* pads", "the number of pads *doubles*",
"half", "a dozen", "a third", "twice as many", "a quarter"), to every probe template's re-parameterisations that
count a thing by a number. Each row's reasoning changed, so any answer served is a changed question served. The
tune half was read while designing the guard's rules for them; the check half is figures only.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from builder.eval import rewritten_probe

#: The added sentences, by the word that states the change; {n} is a plural the story counts by a number.
ADDED = {
    "half": "Then half of the {n} are lost.",
    "a dozen": "Later, a dozen more {n} arrive.",
    "doubles": "Then the number of {n} doubles.",
    "one of the": "One of the {n} is given away.",
    "a third": "A third of the {n} break.",
    "twice": "Twice as many {n} are added later.",
    "a quarter": "A quarter of the {n} are set aside.",
    "a couple": "Then a couple of {n} are returned.",
}
#: Each sentence of ``ADDED`` before the final question: (word, question) pairs.
added_operations = rewritten_probe.sentences_added(ADDED)


def write(out: Path, *, per_template: int = 2) -> Counter[tuple[str, str]]:
    """The query set: each pattern applied to ``per_template`` re-parameterisations of every probe template."""
    return rewritten_probe.write(out, added_operations, label="added quantity", per_template=per_template)


def main(argv: list[str] | None = None) -> int:
    return rewritten_probe.main(argv, module="builder.eval.added_quantity_probe", doc=__doc__ or "",
                                rewrite=added_operations, label="added quantity", per_template=2)


if __name__ == "__main__":
    raise SystemExit(main())

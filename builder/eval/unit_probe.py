"""Changed questions that state one number in another unit of the same kind while the rest of the question keeps
the template's ("travels 2500 *kilometers* in 5 hours ... an additional 4000 miles"), generated from the probe
templates' re-parameterisations: the reasoning would need a conversion it does not make.

Written to check the aligner's rule that a unit is no paraphrase of another (edge_runtime/read/template_align.py,
``_renames_one_to_one``). Only rows whose question still names the unit it replaces are written (a unit renamed
throughout is the same reasoning), and no currency (a template may keep dollars where the probe states cents). Each
row's reasoning changed, so any answer served is a changed question served.
"""

from __future__ import annotations

import re

from builder.eval import rewritten_probe
from edge_runtime.read.question_words import final_sentence

#: A unit -> another unit of the same kind put in its place.
OTHER_UNIT = {"minutes": "hours", "hours": "minutes", "days": "weeks", "weeks": "days", "months": "years",
              "years": "months", "feet": "inches", "inches": "feet", "miles": "kilometers", "kilometers": "miles",
              "pounds": "ounces", "ounces": "pounds", "meters": "centimeters", "centimeters": "meters",
              "liters": "milliliters", "gallons": "quarts", "grams": "kilograms", "kilograms": "grams"}
_UNIT = re.compile(rf"(?<=\d )({'|'.join(OTHER_UNIT)})\b")


def unit_converted(question: str) -> list[tuple[str, str]]:
    """(kind "a->b", question) for the first unit after a number of the story before the final question, put in
    another unit of its kind, where the question names that unit again elsewhere; none otherwise."""
    start, _ = final_sentence(question)
    m = _UNIT.search(question[:start])
    if m is None or not re.search(rf"\b{m.group(1)}\b", question[m.end():]):
        return []
    other = OTHER_UNIT[m.group(1)]
    return [(f"{m.group(1)}->{other}", question[:m.start()] + other + question[m.end():])]


def main(argv: list[str] | None = None) -> int:
    return rewritten_probe.main(argv, module="builder.eval.unit_probe", doc=__doc__ or "", rewrite=unit_converted,
                                label="unit", per_template=4)


if __name__ == "__main__":
    raise SystemExit(main())

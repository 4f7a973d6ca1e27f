"""Changed questions that give a rate per another period than the template while the question still relates it to
another unit of time ("plants 6 tulips *a week* ... after 12 days" for "a day"; "4 pads *a month* ... every month"
for "a week"), generated from the probe templates' re-parameterisations.

Written to check the guard's rule on rate periods (edge_runtime/read/inserted_statements.py, ``changed_in_words``).
A rate renamed in a question that names no other unit of time is the same reasoning renamed, so no such row is
written. Each row's reasoning changed, so any answer served is a changed question served.
"""

from __future__ import annotations

import re

from builder.eval import rewritten_probe
from edge_runtime.read.question_words import final_sentence

#: A period -> the period put in its place.
NEXT_PERIOD = {"hour": "day", "day": "week", "week": "month", "month": "year", "year": "month"}
_ADVERBS = {"hourly": "daily", "daily": "weekly", "weekly": "monthly", "monthly": "yearly", "yearly": "monthly"}
_RATE = re.compile(rf"\b(?:per|a|an|each|every)\s+({'|'.join(NEXT_PERIOD)})\b|\b({'|'.join(_ADVERBS)})\b")
_TIME = re.compile(r"\b(?:hour|day|week|month|year)s?\b|\b(?:hourly|daily|weekly|monthly|yearly)\b")


def period_changed(question: str) -> list[tuple[str, str]]:
    """(kind "a->b", question) for the first rate period of the story before the final question put as the next
    period, where the question names a unit of time besides it; none otherwise."""
    start, _ = final_sentence(question)
    m = _RATE.search(question[:start])
    if m is None:
        return []
    group = 1 if m.group(1) else 2
    word = m.group(group)
    other = NEXT_PERIOD[word] if group == 1 else _ADVERBS[word]
    changed = question[:m.start(group)] + other + question[m.end(group):]
    if len(_TIME.findall(changed)) < 2:
        return []
    return [(f"{word}->{other}", changed)]


def main(argv: list[str] | None = None) -> int:
    return rewritten_probe.main(argv, module="builder.eval.period_probe", doc=__doc__ or "", rewrite=period_changed,
                                label="period", per_template=4)


if __name__ == "__main__":
    raise SystemExit(main())

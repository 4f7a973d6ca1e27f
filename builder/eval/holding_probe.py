"""Changed questions where what a story lets go is held instead: "he *spends* $5 on cheddar" → "he *saves* $5 on
cheddar", "*sold* them at a bazaar" → "*kept* them", "*gave* Olu $50" → "*kept* $50", generated from the probe
templates' re-parameterisations.

Written to check the guard's verbs by the way a thing moves (edge_runtime/read/english_words.py ``TO_THEM``, ``AWAY``).
Each row's reasoning changed, so any answer served is a changed question served.
"""

from __future__ import annotations

import re

from builder.eval import rewritten_probe
from edge_runtime.read.question_words import final_sentence

#: A verb that lets a thing go -> the verb that holds it, in the same form.
HELD = {"spends": "saves", "spent": "saved", "spend": "save", "sells": "keeps", "sold": "kept", "sell": "keep",
        "gives": "keeps", "gave": "kept", "give": "keep"}
_LET_GO = re.compile(rf"\b({'|'.join(HELD)})\b")


def held(question: str) -> list[tuple[str, str]]:
    """(kind "<verb>-><verb>", question) for the first verb of the story before the final question that lets a thing
    go, read as the verb that holds it; none without one."""
    start, _ = final_sentence(question)
    m = _LET_GO.search(question[:start])
    if m is None:
        return []
    verb = m.group(1)
    return [(f"{verb}->{HELD[verb]}", question[:m.start()] + HELD[verb] + question[m.end():])]


def main(argv: list[str] | None = None) -> int:
    return rewritten_probe.main(argv, module="builder.eval.holding_probe", doc=__doc__ or "",
                                rewrite=held, label="held", per_template=4)


if __name__ == "__main__":
    raise SystemExit(main())

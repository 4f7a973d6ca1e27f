"""Changed questions whose story moves a thing the other way: a verb by which something comes to whoever acts
("finds", "collects") put in place of one by which it leaves them ("eats", "sells"), or the other way round,
generated from the probe templates' re-parameterisations.

Written to check the guard's two ways of a verb (edge_runtime/read/english_words.py, ``TO_THEM`` and ``AWAY``) on
pairs it was not designed on: the guard's table was written from "eats" → "buys" and "ate" → "bought" of
``number_free_probe``'s opposites, and none of those pairs is here. Each row's reasoning changed, so any answer served
is a changed question served.
"""

from __future__ import annotations

import re

from builder.eval import rewritten_probe
from edge_runtime.read.question_words import final_sentence

#: A verb of the story -> the verb of the other way put in its place (tenses kept).
REVERSED = {"eats": "finds", "ate": "found", "eaten": "found", "sells": "collects", "sold": "collected",
            "gives": "gets", "gave": "got", "given": "gotten", "spends": "wins", "spent": "won", "loses": "picks",
            "lost": "picked", "finds": "drops", "found": "dropped", "collects": "donates", "collected": "donated",
            "earns": "wastes", "earned": "wasted", "receives": "lends", "received": "lent", "gets": "throws",
            "got": "threw"}
_VERB = re.compile(rf"\b({'|'.join(REVERSED)})\b")


def direction_reversed(question: str) -> list[tuple[str, str]]:
    """(kind "a->b", question) for the first verb of ``REVERSED`` the story before the final question writes."""
    start, _ = final_sentence(question)
    m = _VERB.search(question[:start])
    if m is None:
        return []
    return [(f"{m.group(1)}->{REVERSED[m.group(1)]}", question[:m.start()] + REVERSED[m.group(1)] + question[m.end():])]


def main(argv: list[str] | None = None) -> int:
    return rewritten_probe.main(argv, module="builder.eval.direction_probe", doc=__doc__ or "",
                                rewrite=direction_reversed, label="direction", per_template=4)


if __name__ == "__main__":
    raise SystemExit(main())

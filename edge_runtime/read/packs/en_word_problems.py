"""``en-word-problems/1``: the rules every bundle was read with before packs (the default) — English
number words, the guard tuned on GSM8K-style word problems, the set-aside phrases, the aligner's draft.

It owns no table of its own: it names the modules that hold today's rules (edge_runtime/read/values.py
reads numbers and number words from the one English table, english_words.py; mentions.py scans them;
guard.py judges; disclaimers.py sets statements aside; draft.py drafts the model's answer), so a bundle
without a ``reading`` field is read exactly as before. Its settings are the guard's thresholds and switches
(``GuardConfig``), defaults as tuned.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from edge_runtime.entries.metadata import Param
from edge_runtime.read import disclaimers, draft, guard, measures, mentions, question_words, values
from edge_runtime.read.english_words import CARDINALS, ONES, TENS, plural_stem
from edge_runtime.read.packs.base import Guard, ReadingPack, Setting
from edge_runtime.read.template_align import AlignWords

#: The aligner's English (edge_runtime/read/template_align.py): which words state a quantity, add an operation,
#: name a unit of time or are too common to mark a swap of roles; "thirty-four" is one token, not "thirty",
#: "-", "four" (whose hyphen would align with "{n}-pound").
ALIGN_WORDS = AlignWords(
    quantity=frozenset({*CARDINALS, "billion", *(
        "half halves third thirds quarter quarters fourth fourths fifth fifths sixth sixths seventh eighth "
        "ninth tenth dozen dozens twice thrice double triple quadruple once pair couple percent".split())}),
    adding=frozenset({"another", "again", "extra", "additional"}),
    operation=frozenset({"another", "again", "extra", "additional",
        "also", "additionally", "add", "adds", "added", "plus", "subtract", "subtracts", "minus", "multiply",
        "multiplies", "divide", "divides", "twist", "times", "twice", "double", "triple", "half", "more", "fewer",
        "less", "than"}),
    comparison=frozenset("""more less fewer than times twice double triple half extra additional another again plus
minus""".split()),
    distributive=frozenset({"each", "every", "per"}),
    time_units=frozenset(values.TIME_UNITS),
    common=frozenset("""a an the of for to and or but in on at by with from into as is are was were be been has have had
do does did it its he she his her him they them their we our you your i my me this that these those there each
every all any some many much more most less few how what which who when where if then than so not no also just
can could will would should may might must per one please""".split()),
    percent=frozenset({"%", "percent", "pct"}),
    month_days=values.MONTH_DAYS,
    compound_number=rf"(?:{'|'.join(TENS)})-(?:{'|'.join(w for w, v in ONES.items() if 0 < v < 10)})\b",
    question_frame=frozenset("""how many much what which is are was were the a an of number amount quantity total that do
does did will would can could calculate find determine compute""".split()),
    stem=plural_stem,
    pronouns=frozenset("he she him her they them".split()),
    referring=frozenset("it its his hers their theirs".split()),
    determiners=frozenset("a an the his her their its my your our this that these those".split()),
    people=question_words.people,
    number_spans=draft.number_spans,
    renames=True,
)


def _share(value: float) -> str | None:
    return None if 0.0 <= value <= 1.0 else "must be between 0 and 1"


def _cosine(value: float) -> str | None:
    return None if -1.0 <= value <= 1.0 else "must be between -1 and 1"


def _at_least_one(value: int) -> str | None:
    return None if value >= 1 else "must be at least 1"


_SETTINGS: dict[str, Setting] = {
    "target_overlap": Setting((float,), _share, "share of the template's target words the final question keeps"),
    "target_similarity": Setting((float, None), _cosine, "embedding similarity that lets a final question pass"),
    "model_path_reversal_words": Setting((int, None), _at_least_one, "given-words that make a model-path reversal"),
}
_SETTINGS.update({f.name: Setting((bool,), None, "a GuardConfig switch") for f in fields(guard.GuardConfig)
                  if f.name not in _SETTINGS})


class EnWordProblems(ReadingPack):
    """English word problems (GSM8K-style): today's rules, behaviour identical."""

    name = "en-word-problems/1"
    SETTINGS = _SETTINGS
    align_words = ALIGN_WORDS

    def __init__(self, settings: Any = None) -> None:
        super().__init__(settings)
        self.guard_config = guard.GuardConfig(**self.settings)

    def read_quantity(self, text: str) -> values.Quantity:
        return values.parse_quantity(text)

    def scan(self, text: str) -> list[mentions.Mention]:
        return mentions.scan(text)

    def in_template_units(self, template: str, question: str, values: Mapping[str, Any]) -> dict[str, Any]:
        """An amount in cents for a slot the template writes in dollars ("30 cents" for "${price}"), in dollars."""
        return dict(measures.in_currency(template, question, values, mentions.scan(question)))

    def make_guard(self, embedder: Any = None) -> Guard:
        return guard.ReasoningGuard(self.guard_config, embedder)

    def set_aside(self, question: str) -> disclaimers.SetAside | None:
        return disclaimers.set_aside_disclaimed(question)

    def set_aside_counts(self, aside: disclaimers.SetAside, template: str) -> str | None:
        return disclaimers.counts_what_template_counts(aside, template)

    def draft(self, template: str, params: tuple[Param, ...], question: str) -> dict[str, str | None] | None:
        return draft.draft_values(template, params, question)

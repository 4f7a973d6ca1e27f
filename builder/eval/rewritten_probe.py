"""Changed questions made by rule from the probe templates' re-parameterisations: the writer and CLI the generators
share (``final_question_probe``, ``added_quantity_probe``, ``number_free_probe``, ``remainder_probe``,
``direction_probe``, ``distributive_probe``, ``unit_probe``, ``period_probe``,
``connective_probe``, ``comparison_probe``, ``holding_probe``, ``bound_probe``).

A generator is a function from a re-parameterised question to (kind, changed question) pairs. Its rows have no
known answer ("None"): each changes the reasoning, so any answer served is a changed question served.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from builder.eval.template_probe import KIND, load_templates, renderings
from edge_runtime.read.measures import unit_of
from edge_runtime.read.question_words import STOP_WORDS, final_sentence

Rewrite = Callable[[str], Iterable[tuple[str, str]]]
_COUNTED = re.compile(r"\b\d[\d,.]*\s+([a-z]+s)\b")


def sentences_added(table: Mapping[str, str], *, joined: bool = False) -> Rewrite:
    """A rewrite that puts each of ``table``'s sentences (kind -> sentence; ``{n}``: the first plural the story counts
    by a number, not a unit nor a function word: "$30 less", "$240 this week") before the final question, or with
    ``joined`` each clause (", but none of the {n} are counted") at the end of the sentence before it; none where the
    story counts no thing (or, joined, where that sentence does not end in a full stop)."""
    def rewrite(question: str) -> list[tuple[str, str]]:
        start, _ = final_sentence(question)
        head = question[:start].rstrip()
        counted = [n for n in _COUNTED.findall(head) if n not in STOP_WORDS and n != "times" and unit_of(n) is None]
        if not counted or (joined and not head.endswith(".")):
            return []
        if joined:
            return [(kind, head[:-1] + clause.format(n=counted[0]) + ". " + question[start:]) for kind, clause in table.items()]
        return [(kind, question[:start] + sentence.format(n=counted[0]) + " " + question[start:])
                for kind, sentence in table.items()]

    return rewrite


def write(out: Path, rewrite: Rewrite, *, label: str, per_template: int) -> Counter[tuple[str, str]]:
    """The query set: ``rewrite`` applied to ``per_template`` re-parameterisations of every probe template, each row's
    kind "<label>, <kind>"; counts per (half, kind)."""
    rows, counts = [], Counter()
    for template in load_templates():
        base = template.variants[0]
        rng = random.Random(f"{label.replace(' ', '-')}-{template.gsm8k_row}")
        for question, _ in renderings(base, base, per_template, rng):
            for kind, changed in rewrite(question):
                rows.append({"query": changed, "answer": "None", "gsm8k_row": template.gsm8k_row,
                             "kind": f"{KIND}: {label}, {kind}", "half": template.half, "reasoning_changed": True})
                counts[(template.half, kind)] += 1
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return counts


def main(argv: list[str] | None, *, module: str, doc: str, rewrite: Rewrite, label: str, per_template: int) -> int:
    """``python -m <module> write OUT [--per-template N]``: write the set, print its counts per half and kind."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=doc.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write", help=f"write the generated rows ({label}) as a query set")
    w.add_argument("out", type=Path)
    w.add_argument("--per-template", type=int, default=per_template)
    args = parser.parse_args(argv)
    counts = write(args.out, rewrite, label=label, per_template=args.per_template)
    print(json.dumps({f"{half} / {kind}": n for (half, kind), n in sorted(counts.items())}, indent=1))
    return 0

"""Changed questions made by rule from the probe templates' re-parameterisations: the writer and CLI the generators
share (``final_question_probe``, ``added_quantity_probe``).

A generator is a function from a re-parameterised question to (kind, changed question) pairs. Its rows have no
known answer ("None"): each changes the reasoning, so any answer served is a changed question served.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from builder.eval.template_probe import KIND, load_templates, renderings

Rewrite = Callable[[str], Iterable[tuple[str, str]]]


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

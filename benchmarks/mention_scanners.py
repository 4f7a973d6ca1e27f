"""Where the importer's and the device's number scanners disagree, by kind, on the dev and GSM8K test questions.

The importer (builder.gsm8k.scan_numbers) decides which numbers of a question become slots; the device
(edge_runtime.read.mentions.scan) reads a new question's numbers back into them and guards the rest. This
tabulates every mention one of them finds that the other does not find the same way, so a change to either
scanner can be judged by what it changes. Run it on two commits to compare (docs/benchmarks.md, issue 20).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/mention_scanners.py [--examples 3] [FILE.jsonl ...]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

from builder.eval.gsm_data import DEV_SETS, GSM8K_TEST
from builder.gsm8k import scan_numbers
from edge_runtime.read.english_words import DEVICE_UNREAD_WORDS
from edge_runtime.read.mentions import same_value, scan


def _questions(files: list[Path]) -> list[tuple[str, str]]:
    out = []
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                out.append((path.stem, row.get("query") or row["question"]))
    return out


def _kinds(question: str) -> list[tuple[str, str]]:
    """(kind, example) for every mention the two scanners do not read alike."""
    device = scan(question)
    importer = scan_numbers(question)
    at = {(m.start, m.end): m for m in device}
    out = []
    for m in importer:
        span = (m.start, m.end)
        around = [d for d in device if d.start < m.end and m.start < d.end]
        if span in at:
            d = at[span]
            if not same_value(float(m.value), d.values[0]):
                out.append(("same span, another value", f"{m.text!r}: {m.value} / {d.values[0]}"))
            if m.money != d.money:
                out.append(("money cue differs (\"pounds\")", m.text + question[m.end:m.end + 8]))
        elif not around:
            unread = m.text.lower() in DEVICE_UNREAD_WORDS
            out.append(("importer only: a word the device does not read" if unread else "importer only: a number",
                        m.text))
        elif any(d.start <= m.start and m.end <= d.end for d in around):
            whole = next(d for d in around if d.start <= m.start and m.end <= d.end)
            out.append(("piece of one number the device reads whole", f"{m.text!r} of {whole.text!r}"))
        else:
            out.append(("cut differently", f"{m.text!r} / {[d.text for d in around]}"))
    for d in device:
        if not any(m.start < d.end and d.start < m.end for m in importer):
            out.append(("device only", question[max(0, d.start - 12):d.end + 12]))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, default=[*DEV_SETS, GSM8K_TEST])
    parser.add_argument("--examples", type=int, default=3)
    args = parser.parse_args(argv)
    questions = _questions(args.files)
    counts: Counter[str] = Counter()
    examples: dict[str, Counter[str]] = defaultdict(Counter)
    differing: Counter[str] = Counter()
    for _, question in questions:
        found = _kinds(question)
        for kind, example in found:
            counts[kind] += 1
            examples[kind][example] += 1
        for kind in {k for k, _ in found}:
            differing[kind] += 1
    print(f"{len(questions)} questions")
    for kind, n in counts.most_common():
        print(f"{n:6d} mentions in {differing[kind]:5d} questions  {kind}")
        for example, k in examples[kind].most_common(args.examples):
            print(f"{'':14}{k:4d}  {example}")


if __name__ == "__main__":
    main()

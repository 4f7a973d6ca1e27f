"""Changed-reasoning probes of our own: the final question asks for something else.

The added-clause probes (:mod:`builder.eval.added_clause`) change what a question *states*; these change what it
*asks*, keeping every statement: the asked noun swapped for another thing the question counts ("How many apples"
→ "How many pears"), a comparison asked ("How many more apples"), the question negated ("did not buy"), or asked
about another person the question names ("does Sam buy" → "does Kim buy"). Each
needs other reasoning than the entry's, so none may be served. The seeds are questions the device reads, in their
original wording and, with ``--reworded``, in the rewording probes' words (``builder/eval/reword_probe.py``, e.g.
"What is the number of apples that Sam did buy?"), so a reader that accepts more ways to pose a question is checked
against the questions it must still refuse. Rows carry ``half`` (tune / check by GSM8K row, as the other probes).

    python -m builder.eval.changed_question write OUT.jsonl --seeds build/base/sets/gsm_symbolic_dev.jsonl \\
        [--seeds build/probes/reword.jsonl --kinds "question form"]
    arc-build eval --bundle B.arcb --queries OUT.jsonl --systems arc --no-probes --json EV/eval.json
    python -m builder.eval.added_clause report EV/eval.records.jsonl      # per kind and half
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from builder.eval.added_clause import half_of
from edge_runtime.read.question_words import STOP_WORDS

OTHER_NOUN, MORE, NEGATED = "asks another noun", "asks how many more", "asks the negation"
OTHER_PERSON = "asks about another person"
KINDS = (OTHER_NOUN, MORE, NEGATED, OTHER_PERSON)

_ASKED = re.compile(r"\b(?:[Hh]ow (?:many|much)|number of|amount of)\s+(?:the\s+)?"
                    r"(?!(?:does|was|has|is)\b)(?P<noun>[a-z]{3,}s)\b")
_AUX = re.compile(r"(?<![Ww]hat )\b(?:did|does|do|will|would|can|could|is|are|was|were)\b(?! not)"
                  r"(?P<subject> (?:he|she|it|they|we|you|I|[A-Z][a-z]+)\b)?")
#: A thing the question counts: a plural right after a number ("15 stickers", "3 dozen eggs" is skipped).
_COUNTED = re.compile(r"\b(?:\d+(?:\.\d+)?|two|three|four|five|six|seven|eight|nine|ten|twelve|twenty)\s+([a-z]{3,}s)\b")
_QUESTION_WORD = re.compile(r"\b(?:[Hh]ow|[Ww]hat)\b")
_CAPITALISED = re.compile(r"\b[A-Z][a-z]{2,}\b")
_NOT_PEOPLE = frozenset("""january february march april may june july august september october november december monday tuesday
wednesday thursday friday saturday sunday christmas halloween easter thanksgiving""".split())


def final_question(text: str) -> tuple[str, str] | None:
    """(everything before, the final question) when the question ends in one '?' sentence."""
    text = text.strip()
    if not text.endswith("?"):
        return None
    cut = max(text.rfind(". ", 0, len(text) - 1), text.rfind("! ", 0, len(text) - 1))
    return (text[:cut + 2], text[cut + 2:]) if cut >= 0 else None


def changes(text: str, rng: random.Random) -> Iterator[tuple[str, str]]:
    """(kind, changed question) for each change that applies to ``text``."""
    parts = final_question(text)
    if parts is None:
        return
    head, final = parts
    wh = _QUESTION_WORD.search(final)
    asked = _ASKED.search(final, wh.start() if wh else 0)  # what it asks, not a condition before ("If the number of")
    if asked is not None:
        noun = asked.group("noun")
        others = sorted({w for w in _COUNTED.findall(head) if w != noun and w not in final.lower()})
        if others:
            yield OTHER_NOUN, head + final[:asked.start("noun")] + rng.choice(others) + final[asked.end("noun"):]
        if noun != "more":
            yield MORE, head + final[:asked.start("noun")] + "more " + final[asked.start("noun"):]
    aux = _AUX.search(final)
    if aux is not None:
        yield NEGATED, head + final[:aux.end()] + " not" + final[aux.end():]  # "does she not make", "did not buy"
    people = _people(head)
    asked_about = [p for p in _people(final) if p in people]
    others = [p for p in people if p not in asked_about]
    if asked_about and others:  # "How many apples does Sam buy?" -> "... does Kim buy?", Kim named before
        yield OTHER_PERSON, head + re.sub(rf"\b{asked_about[0]}\b", rng.choice(others), final)


def _people(text: str) -> list[str]:
    """Capitalised words that are names, in order: not a word the text also writes in lower case, a question or
    stop word, a month or a holiday."""
    lower = set(re.findall(r"\b[a-z]+\b", text))
    names = [w for w in _CAPITALISED.findall(text) if w.lower() not in lower and w.lower() not in _NOT_PEOPLE
             and w.lower() not in STOP_WORDS]
    return list(dict.fromkeys(names))


def generate(seeds: Iterable[dict[str, Any]], seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for seed_row in seeds:
        query = seed_row.get("query")
        row = seed_row.get("gsm8k_row")
        if not isinstance(query, str) or not isinstance(row, int):
            continue
        for kind, changed in changes(query, rng):
            rows.append({"query": changed, "answer": None, "kind": kind, "reasoning_changed": True, "gsm8k_row": row,
                         "half": half_of(row), "seed_query": query, "seed_kind": seed_row.get("kind", "")})
    return rows


def read_seeds(path: Path, kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if not kinds or r.get("kind") in kinds]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    write = sub.add_parser("write", help="write the changed-question probes")
    write.add_argument("out", type=Path)
    write.add_argument("--seeds", type=Path, action="append", required=True, help="JSONL rows with query and gsm8k_row")
    write.add_argument("--kinds", action="append", default=[], help="only seed rows of these kinds (all seed files)")
    write.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    seeds = [r for path in args.seeds for r in read_seeds(path, tuple(args.kinds))]
    rows = generate(seeds, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    counts: dict[str, int] = {}
    for r in rows:
        counts[f"{r['kind']} / {r['half']}"] = counts.get(f"{r['kind']} / {r['half']}", 0) + 1
    print(json.dumps({"out": str(args.out), "rows": len(rows), **counts}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Changed-reasoning variants of our own: one clause with a number added to a GSM-Symbolic question.

The guard's rules were fitted on dev-set disagreements; an independent evaluation found that one
added clause with a number ("her cousin ate 9 more than her brother", "two spare tires, each 30 kg")
was served far more often on unseen wordings than on ours. To judge a rule on data it was not
designed on, this module writes such variants programmatically, from phrase patterns of its own
(written without the guard's or the aligner's word lists), and splits them by GSM8K seed row:

- **added clause** (``reasoning_changed: true``): a clause that states a new number about what the
  question asks for (a count given away, found, broken; a fee, a tax, a coupon; a break, a delay; a
  spilled weight; an age measured years ago), inserted as a sentence in the middle, right before the
  final question, joined to a sentence (", and then ..."), or leading the final question ("After ...,
  how many ..."). Its number is none the question states, so it cannot be a restatement;
- **control: marked irrelevant** (should serve): a sentence with a number about something the question
  does not mention, marked irrelevant in an explicit phrase ("..., which does not matter here");
- **control: restatement** (should serve): a clause of the question repeated word for word behind a
  discourse phrase ("Note that ...").

:func:`half_of` puts every GSM8K seed row in the *tune* or the *check* half (a salted hash, salt chosen
once so that GSM-Symbolic's 30 seeds and GSM-Plus's 100 split about evenly); rules are designed on the
tune half and reported on both. :func:`half_report` gives the figures per set and half from the
records of an ``arc-build eval`` run.

    python -m builder.eval.added_clause write OUT.jsonl [--source gsm_symbolic_dev.jsonl] [--per-row 2]
    python -m builder.eval.added_clause report RECORDS.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from builder.eval.gsm_data import DATA

#: The split's salt: "guard-split-5" halves GSM-Symbolic's 30 seeds 15 / 15 and GSM-Plus's 100 51 / 49.
SPLIT_SALT = "guard-split-5"
ADDED = "added clause"
MARKED = "control: marked irrelevant"
RESTATED = "control: restatement"


def half_of(gsm8k_row: int) -> str:
    """``"tune"`` or ``"check"``: a fixed hash of the seed row, so every variant of a seed is in one half."""
    return "tune" if hashlib.sha256(f"{SPLIT_SALT}:{int(gsm8k_row)}".encode()).digest()[0] % 2 == 0 else "check"


# ---- reading a question (this module's own, deliberately independent of edge_runtime) --------------

_ABBREVIATIONS = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|St|vs)\.$")
_SPLIT = re.compile(r"(?<=[.?!])\s+(?=[A-Z0-9\"'$€£])")
_DIGITS = re.compile(r"\d+(?:[.,/]\d+)*")
_WORD_NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
                 "ten": 10, "eleven": 11, "twelve": 12}
_NUMBER_WORD = re.compile(r"\b(?:" + "|".join(_WORD_NUMBERS) + r")\b", re.IGNORECASE)


def split_sentences(text: str) -> list[str]:
    """Sentences of a question, not split after "Ms." or inside "€0.5"."""
    out: list[str] = []
    for piece in _SPLIT.split(text.strip()):
        if out and _ABBREVIATIONS.search(out[-1]):
            out[-1] += " " + piece
        else:
            out.append(piece)
    return [s for s in out if s.strip()]


def stated_numbers(text: str) -> set[float]:
    """Every value a text writes, in digits or as a small number word."""
    values: set[float] = set()
    for match in _DIGITS.finditer(text):
        raw = match.group(0).replace(",", "")
        try:
            if "/" in raw:
                top, bottom = raw.split("/", 1)
                values.add(float(top) / float(bottom))
            else:
                values.add(float(raw))
        except (ValueError, ZeroDivisionError):
            continue
    values |= {float(_WORD_NUMBERS[m.group(0).lower()]) for m in _NUMBER_WORD.finditer(text)}
    return values


def has_number(text: str) -> bool:
    return bool(_DIGITS.search(text) or _NUMBER_WORD.search(text))


@dataclass(frozen=True)
class Frame:
    """What the final question asks for, as the clauses need it: a count of ``noun``, money, time, weight, age."""

    kind: str  # "count", "money", "time", "weight", "age"
    noun: str = ""  # the counted thing ("melons", "potted plants")
    unit: str = ""  # minutes, pounds, a currency sign


_STOP_AFTER_NOUN = frozenset("""does do did will would can could should are were is was have has had came come
like need needs left there in on at of for to that which who if she he they it you we""".split())
_CURRENCY = re.compile(r"[$€£]")


def asked_frame(question: str, sentences: list[str]) -> Frame:
    """The frame of the final question (the last sentence with a "?", else the last one)."""
    final = next((s for s in reversed(sentences) if "?" in s), sentences[-1]).lower()
    sign = _CURRENCY.search(question)
    currency = sign.group(0) if sign else "$"
    if re.search(r"\bhow much\b.*\b(?:cost|spend|spent|earn|pay|paid|charge|make)", final) or "how much money" in final:
        return Frame("money", unit=currency)
    weight = re.search(r"\bhow many (pounds|grams|kilograms|ounces)\b", final)
    if weight:
        return Frame("weight", unit=weight.group(1))
    if re.search(r"\bhow (?:long|much longer)\b|\bhow many (?:minutes|hours)\b", final):
        return Frame("time", unit="hours" if "hour" in final and "minute" not in question.lower() else "minutes")
    if "how old" in final:
        return Frame("age", unit="years")
    match = re.search(r"\bhow many ((?:[\w-]+ ){1,4})", final + " ") or re.search(
        r"\bnumber of ((?:[\w-]+ ){1,4})", final + " ")
    words: list[str] = []
    for word in (match.group(1).split() if match else []):
        if word in _STOP_AFTER_NOUN and word != "of" or (word == "of" and not words):
            break
        if not has_number(word):
            words.append(word)
    while words and words[-1] == "of":
        words.pop()
    noun = " ".join(words)
    if not noun or not (noun.endswith("s") or " of " in noun):
        # "how many like to read", "what percentage of all the puppies": the thing counted most often
        counted = re.findall(r"\b\d+\s+([a-z]+s)\b", question.lower())
        of_the = re.search(r"\bof (?:all )?the ([a-z]+s)\b", final)
        noun = of_the.group(1) if of_the else (max(set(counted), key=counted.count) if counted else "items")
    return Frame("count", noun=noun)


def actor_of(row: dict[str, Any], question: str) -> str:
    """A person the question is about (its bindings' first name that the question writes), else "The organiser"."""
    for value in (row.get("bindings") or {}).values():
        if isinstance(value, str) and re.fullmatch(r"[A-Z][a-z]+", value) and re.search(rf"\b{value}\b", question):
            return value
    return "The organiser"


# ---- the clause patterns ------------------------------------------------------------------------

@dataclass(frozen=True)
class Pattern:
    """An added operation: a sentence form, and optionally a form joined to a sentence and one that leads the
    final question. ``{n}`` is the new number, ``{noun}``, ``{unit}``, ``{cur}``, ``{actor}`` the frame's."""

    name: str
    frames: tuple[str, ...]
    sentence: str
    joined: str = ""  # ", and then ..." appended to a sentence of the question
    lead: str = ""  # "After ..., " before the final question
    number: tuple[int, int] = (2, 15)  # the range of the new number
    words: bool = False  # the number may be written as a word


PATTERNS: tuple[Pattern, ...] = (
    Pattern("gives away", ("count",), "{actor} gives {n} of the {noun} to a neighbour.",
            "and {actor} later gives {n} of the {noun} to a neighbour", "After {actor} gives {n} of the {noun} away",
            words=True),
    Pattern("cousin more", ("count",), "{actor}'s cousin ate {n} more {noun} than {actor}'s brother, and both took "
            "theirs from the same supply.", "while a cousin brings {n} more {noun}", words=True),
    Pattern("broken", ("count",), "Sadly, {n} of the {noun} are lost.",
            "but {n} of the {noun} turn out to be damaged", "Once {n} of the {noun} are found damaged"),
    Pattern("found", ("count",), "Then {actor} finds {n} {noun} left over from last year and puts them with the rest.",
            "and then {n} {noun} left over from last year are found", "Counting {n} {noun} found later",
            words=True),
    Pattern("fewer than", ("count",), "A friend has {n} fewer {noun} than that and hands them all over.",
            "and a friend has {n} fewer {noun} than that"),
    Pattern("second batch", ("count",), "A second batch of {n} {noun} arrives the next morning.",
            "and a second batch of {n} {noun} arrives the next morning", "When a batch of {n} {noun} is delivered too"),
    Pattern("service fee", ("money",), "On top of that, a service fee of {cur}{n} is charged.",
            "plus a {cur}{n} service fee", "Including a {cur}{n} service fee", number=(3, 30)),
    Pattern("sales tax", ("money",), "A sales tax of {n}% is added to the bill.", "and a {n}% tax is added",
            "With a {n}% tax added", number=(5, 15)),
    Pattern("second item", ("money",), "{actor} picks up a second item costing {cur}{n} at the counter.",
            "and {actor} buys a small gift for {cur}{n}", number=(4, 25)),
    Pattern("coupon", ("money",), "A coupon takes {cur}{n} off the total.", "but a coupon takes {cur}{n} off",
            "After a coupon for {cur}{n} off", number=(2, 12)),
    Pattern("break", ("time",), "A {n}-{unit1} pause comes on top of that.",
            "with a {n}-{unit1} break in the middle", "Counting a {n}-{unit1} break", number=(5, 25)),
    Pattern("delay", ("time",), "Traffic adds {n} {unit} to the trip.", "but a delay costs them {n} {unit}",
            "With a delay of {n} {unit}", number=(3, 20), words=True),
    Pattern("spare load", ("weight",), "Two more bags, each {n} {unit}, are added to it.",
            "and two more bags of {n} {unit} each are added", number=(2, 20)),
    Pattern("spill", ("weight",), "{actor} spills {n} {unit} on the way.", "but {n} {unit} are spilled",
            "After {n} {unit} are spilled", number=(2, 12), words=True),
    Pattern("years ago", ("age",), "That age was measured {n} years ago.", "as measured {n} years ago",
            number=(2, 6), words=True),
    Pattern("older sibling", ("age",), "Everyone's ages are given as of {n} years ago.", number=(2, 6)),
)

_THINGS = ("goldfish", "bicycles", "paintings", "houseplants", "postcards", "umbrellas", "seashells", "candles",
           "novels", "kites", "stamps", "teacups")
#: Control sentences: an unrelated number, marked irrelevant in an explicit phrase.
MARKERS: tuple[str, ...] = (
    "{actor}'s neighbour keeps {n} {thing}, which does not matter here.",
    "The house next door has {n} {thing}, but this is irrelevant to the question.",
    "{actor} once owned {n} {thing}; this is not relevant to the question.",
    "A shop nearby sells {n} {thing} a week, which has nothing to do with the question.",
    "Unrelated to the question, {actor}'s aunt collected {n} {thing} last year.",
    "There are {n} {thing} in the hallway, although this does not affect the answer.",
)
#: Control lead-ins: a clause of the question said again.
RESTATEMENTS: tuple[str, ...] = ("Note that {clause}.", "To be clear, {clause}.", "Remember that {clause}.",
                                 "As said before, {clause}.")


@dataclass(frozen=True)
class Variant:
    query: str
    answer: Any
    kind: str
    reasoning_changed: bool
    gsm8k_row: int
    template_id: int
    instance: int
    half: str
    pattern: str
    position: str
    clause: str  # the text inserted
    seed_query: str
    seed_answer: Any
    added_value: float | None = None  # the number the clause states (added clauses and irrelevant controls)

    def row(self) -> dict[str, Any]:
        """The query-set row (builder/eval/querysets.py): ``reasoning_changed`` marks the rows a cache must not serve."""
        return asdict(self)


def _fresh_number(rng: random.Random, low: int, high: int, taken: set[float]) -> int:
    choices = [n for n in range(low, high + 1) if float(n) not in taken]
    return rng.choice(choices or [high + 7])


def _lower_first(text: str, keep: set[str]) -> str:
    first = re.sub(r"['’]s$", "", text.split(" ", 1)[0].strip(",."))
    return text if first in keep else text[:1].lower() + text[1:]


def _mid_sentence(text: str) -> str:
    """"Unrelated to the question, The organiser's aunt" -> "... the organiser's aunt"."""
    return re.sub(r"(?<=[a-z,] )The organiser", "the organiser", text)


def _join(sentence: str, clause: str) -> str:
    body = sentence.rstrip()
    end = body[-1] if body[-1] in ".!" else "."
    return body.rstrip(".!") + ", " + clause + end


def _render(pattern_text: str, frame: Frame, actor: str, number: str) -> str:
    unit1 = frame.unit[:-1] if frame.unit.endswith("s") else frame.unit
    return _mid_sentence(pattern_text.format(n=number, noun=frame.noun, unit=frame.unit, unit1=unit1, cur=frame.unit,
                                             actor=actor))


_WORDS_FOR = {v: k for k, v in _WORD_NUMBERS.items()}


def added_variants(row: dict[str, Any], rng: random.Random, count: int) -> list[Variant]:
    """``count`` added-clause variants of one GSM-Symbolic row: patterns and positions drawn by ``rng``."""
    question = row["query"]
    sentences = split_sentences(question)
    frame = asked_frame(question, sentences)
    actor = actor_of(row, question)
    names = {v for v in (row.get("bindings") or {}).values() if isinstance(v, str)}
    taken = stated_numbers(question)
    final = max(i for i, s in enumerate(sentences) if "?" in s) if any("?" in s for s in sentences) else len(sentences) - 1
    options: list[tuple[Pattern, str]] = []
    for pattern in PATTERNS:
        if frame.kind not in pattern.frames:
            continue
        options += [(pattern, "before the question")]
        if final >= 2:
            options += [(pattern, "middle sentence")]
        if pattern.joined and final >= 1:
            options += [(pattern, "joined to a sentence")]
        if pattern.lead:
            options += [(pattern, "leading the question")]
    rng.shuffle(options)
    out: list[Variant] = []
    for pattern, position in options[:count]:
        value = _fresh_number(rng, *pattern.number, taken)
        number = _WORDS_FOR[value] if pattern.words and value in _WORDS_FOR and rng.random() < 0.4 else str(value)
        parts = list(sentences)
        if position == "joined to a sentence":
            at = rng.randrange(final)
            clause = _render(pattern.joined, frame, actor, number)
            parts[at] = _join(parts[at], clause)
        elif position == "leading the question":
            clause = _render(pattern.lead, frame, actor, number)
            parts[final] = clause + ", " + _lower_first(parts[final], names)
        else:
            clause = _render(pattern.sentence, frame, actor, number)
            at = final if position == "before the question" else rng.randrange(1, final)
            parts.insert(at, clause)
        out.append(Variant(" ".join(parts), None, ADDED, True, int(row["gsm8k_row"]), int(row.get("template_id", -1)),
                           int(row.get("instance", -1)), half_of(row["gsm8k_row"]), pattern.name, position, clause,
                           question, row["answer"], float(value)))
    return out


def control_variant(row: dict[str, Any], rng: random.Random, which: str) -> Variant | None:
    """One control variant of a row (``MARKED`` or ``RESTATED``); None when the row has no clause to restate."""
    question = row["query"]
    sentences = split_sentences(question)
    final = max(i for i, s in enumerate(sentences) if "?" in s) if any("?" in s for s in sentences) else len(sentences) - 1
    actor = actor_of(row, question)
    names = {v for v in (row.get("bindings") or {}).values() if isinstance(v, str)}
    parts = list(sentences)
    if which == MARKED:
        low = question.lower()
        things = [t for t in _THINGS if t.rstrip("s") not in low]
        value = _fresh_number(rng, 3, 40, stated_numbers(question))
        marker = rng.randrange(len(MARKERS))
        template = MARKERS[marker]
        clause = _mid_sentence(template.format(actor=actor, n=value, thing=rng.choice(things)))
        at = rng.randrange(1, final + 1)
        parts.insert(at, clause)
        return Variant(" ".join(parts), row["answer"], MARKED, False, int(row["gsm8k_row"]),
                       int(row.get("template_id", -1)), int(row.get("instance", -1)), half_of(row["gsm8k_row"]),
                       f"marker {marker}", "inserted sentence", clause, question, row["answer"], float(value))
    stated = [i for i in range(final) if has_number(sentences[i])]
    if not stated:
        return None
    at = rng.choice(stated)
    clause_text = _restatable_clause(sentences[at])
    lead = rng.choice(RESTATEMENTS)
    clause = lead.format(clause=_lower_first(clause_text, names))
    where = rng.choice(("after its sentence", "before the question"))
    parts.insert(at + 1 if where == "after its sentence" else final, clause)
    return Variant(" ".join(parts), row["answer"], RESTATED, False, int(row["gsm8k_row"]), int(row.get("template_id", -1)),
                   int(row.get("instance", -1)), half_of(row["gsm8k_row"]), lead.split(" ")[0], where, clause, question,
                   row["answer"], None)


def _restatable_clause(sentence: str) -> str:
    """The sentence without its full stop, or, when it is long, its first comma-clause of five words or more that
    holds a number."""
    body = sentence.rstrip(" .!")
    if len(body.split()) <= 20:
        return body
    for piece in body.split(", "):
        if has_number(piece) and len(piece.split()) >= 5:
            return piece
    return body


def generate(rows: Iterable[dict[str, Any]], per_row: int = 2) -> list[Variant]:
    """Every row's ``per_row`` added-clause variants and one control (marked irrelevant and restatement in turn),
    drawn with a generator seeded by the row itself: the same rows give the same variants."""
    out: list[Variant] = []
    for row in rows:
        rng = random.Random(f"added-clause:{row['gsm8k_row']}:{row.get('instance', 0)}:{row['query']}")
        out += added_variants(row, rng, per_row)
        which = MARKED if int(row.get("instance", 0)) % 2 == 0 else RESTATED
        control = control_variant(row, rng, which) or control_variant(row, rng, MARKED)
        if control is not None:
            out.append(control)
    return out


def write(path: Path, variants: Iterable[Variant]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for variant in variants:
            handle.write(json.dumps(variant.row(), ensure_ascii=False) + "\n")
    return path


# ---- figures per half ---------------------------------------------------------------------------

def _seed_row(record: dict[str, Any]) -> int | None:
    if record.get("x_gsm8k_row") is not None:
        return int(record["x_gsm8k_row"])
    entry = record.get("expected_entry") or ""
    return int(entry.rsplit("-", 1)[1]) if entry.startswith("gsm8k-") else None


def half_report(records: Iterable[dict[str, Any]], system: str = "arc",
                keep: Callable[[dict[str, Any]], bool] = lambda r: True) -> str:
    """Markdown: per set, kind group and half, served right / wrong of should-serve rows and served of
    changed-reasoning rows, with the hits' paths."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in records:
        if r["system"] != system or not keep(r):
            continue
        row = _seed_row(r)
        if row is None:
            continue
        kind = r["kind"] or "all"
        if r["set"].startswith("gsm_plus"):
            kind = "changed reasoning" if r["changed"] else "keep reasoning"
        groups.setdefault((r["set"], kind, half_of(row)), []).append(r)
    lines = ["| set | kind | half | rows | served right | served wrong | changed served | hits by path |",
             "|---|---|---|---:|---:|---:|---:|---|"]
    for (name, kind, half), mine in sorted(groups.items()):
        should = [r for r in mine if r["should_serve"]]
        changed = [r for r in mine if r["changed"]]
        right = sum(r["served"] and r["correct"] for r in should)
        wrong = sum(r["served"] and not r["correct"] for r in should)
        served = sum(r["served"] for r in changed)
        paths: dict[str, int] = {}
        for r in mine:
            if r["served"]:
                paths[r["path"]] = paths.get(r["path"], 0) + 1
        cell = lambda k, n: f"{k}/{n} ({100 * k / n:.1f}%)" if n else "—"  # noqa: E731
        lines.append(f"| {name} | {kind} | {half} | {len(mine)} | {cell(right, len(should))} | "
                     f"{cell(wrong, len(should))} | {cell(served, len(changed))} | "
                     + ", ".join(f"{p} {k}" for p, k in sorted(paths.items())) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write", help="write the variants of a GSM-Symbolic set as a query set")
    w.add_argument("out", type=Path)
    w.add_argument("--source", type=Path, default=DATA / "gsm_symbolic_dev.jsonl")
    w.add_argument("--per-row", type=int, default=2, help="added-clause variants per row")
    r = sub.add_parser("report", help="figures per set and half from an arc-build eval run's records")
    r.add_argument("records", type=Path)
    r.add_argument("--system", default="arc")
    args = parser.parse_args(argv)
    if args.command == "write":
        with open(args.source, encoding="utf-8") as handle:
            rows = [json.loads(line) for line in handle if line.strip()]
        variants = generate(rows, args.per_row)
        write(args.out, variants)
        counts: dict[tuple[str, str], int] = {}
        for v in variants:
            counts[(v.kind, v.half)] = counts.get((v.kind, v.half), 0) + 1
        print(json.dumps({f"{k} / {h}": n for (k, h), n in sorted(counts.items())}, indent=1))
    else:
        with open(args.records, encoding="utf-8") as handle:
            records = [json.loads(line) for line in handle if line.strip()]
        print(half_report(records, args.system), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The source model's value-preserving rephrasings of an entry's question (PT1), as tuning examples.

The deterministic rewordings (``builder/finetune_rewording.py``) only vary what a table knows; the source
model writes the question the way people do. Such text is only worth training on if it states the same
values, so every rephrasing passes mechanical checks first (each labelled span occurs and reads back to
the parameter's original value, no number the original does not state, not the original, not an
evaluation query, a target the device's constraint allows), and only then the judge committee: both
judges must say it asks the same question with the same given values. What is kept is cached in a JSONL
file (keyed by entry id, a hash of its question and originals, and :data:`PROMPT_VERSION`), so a second
run asks nothing and a run without an API key still trains on what an earlier run paid for.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from builder.finetune_data import Example, _same, check, normalise
from builder.llm.client import JUDGES, FatalLLMError, LLMClient, LLMError, Meter, Tool
from edge_runtime.entries.metadata import EntryPoint
from edge_runtime.errors import ExtractionError
from edge_runtime.read.extractor import validate_spans
from edge_runtime.read.mentions import scan
from edge_runtime.read.template_facts import SLOT

#: Bumped whenever the prompts or the checks change what is kept: cached rephrasings of another version are not used.
PROMPT_VERSION = 1
KIND = "source_rephrasing"
NO_VERDICT = "a judge gave no valid verdict"
DEFAULT_PER_ENTRY = 4

SOURCE_SYSTEM = (
    "You rephrase word problems. The rephrasings train a small model that copies the given values out of "
    "a question, so each must ask exactly the same question with exactly the same given values. Answer by "
    "calling record_rephrasings once."
)

JUDGE_SYSTEM = (
    "You are judge {index} of a committee of 2. You compare a rephrased word problem with its original. "
    "Say same_meaning true only if the rephrasing asks for the same thing with the same given values: every "
    "quantity has the same value and the same meaning, nothing is added, left out or changed. Wording, "
    "sentence order and how numbers are written (digits or words) may differ. Answer by calling record_judgement."
)

JUDGE_TOOL = Tool(
    "record_judgement", "Whether the rephrasing asks the same question with the same given values.",
    {"type": "object", "required": ["reason", "same_meaning"], "additionalProperties": False,
     "properties": {"reason": {"type": "string", "minLength": 1}, "same_meaning": {"type": "boolean"}}},
)


def source_tool(entry: EntryPoint, n: int) -> Tool:
    """``record_rephrasings``: up to ``n`` rephrasings, each the full text and the span stating each parameter."""
    names = [p.name for p in entry.params]
    spans = {"type": "object", "required": names, "additionalProperties": False,
             "properties": {name: {"type": "string", "minLength": 1} for name in names}}
    item = {"type": "object", "required": ["question", "spans"], "additionalProperties": False,
            "properties": {"question": {"type": "string", "minLength": 1}, "spans": spans}}
    return Tool("record_rephrasings", "Rephrasings of the question, each with the span of its text stating each value.",
                {"type": "object", "required": ["rephrasings"], "additionalProperties": False,
                 "properties": {"rephrasings": {"type": "array", "minItems": 1, "maxItems": n, "items": item}}})


def source_prompt(entry: EntryPoint, n: int) -> str:
    """What the source model is asked (a plain function of the entry, so requests replay from a cassette)."""
    params = "\n".join(f'- {p.name}: {p.description}; the question states it as "{p.text(p.original)}"'
                       for p in entry.params)
    return (
        f"Rephrase the question below {n} times, each time differently.\n"
        "- Change the wording, the sentence order and how numbers are written (digits or words, \"$350\" or "
        "\"350 dollars\") freely.\n"
        "- Do not change any value or what it means, do not change what is asked, and add no numbers "
        "(no new quantities, no worked steps, no answer).\n"
        "- Keep the names of people, places and things.\n"
        "For each rephrasing give its full text and, for every parameter below, the span of your text that "
        "states its value, copied character for character from your text.\n\n"
        f"Question: {entry.question}\n\nParameters:\n{params}\n\n"
        f"Answer by calling record_rephrasings with {n} rephrasings."
    )


def judge_prompt(entry: EntryPoint, rephrasing: str) -> str:
    return (f"Original question:\n{entry.question}\n\nRephrasing:\n{rephrasing}\n\n"
            "Does the rephrasing ask the same question with the same given values? Call record_judgement.")


# ---- numbers a text states ---------------------------------------------------------------------
def numbers(text: str) -> list[float]:
    """The numbers ``text`` states, read as the device reads them (``edge_runtime.read.mentions.scan``: digits,
    "1,250", "3/4", number words, "half", "twice", "a dozen"). A lone "one" or "zero" is not counted: it is as
    often a pronoun ("each one") as a quantity."""
    return [m.values[0] for m in scan(text) if m.values and not m.weak]


def _without(text: str, span: str) -> str:
    """``text`` with the first whole occurrence of ``span`` blanked (not the "5" inside "15"): a span accounts for
    one statement of its number, a second "5" is another number."""
    before = r"(?<!\w)" if span[:1].isalnum() else ""
    after = r"(?!\w)" if span[-1:].isalnum() else ""
    return re.sub(before + re.escape(span) + after, " ", text, count=1)


def added_numbers(allowed_text: str, rephrasing: str, spans: Iterable[str]) -> list[float]:
    """Numbers the rephrasing states outside its labelled spans (one statement per span) that ``allowed_text`` does
    not state (the original question, or for a question with values of its own the template's constants)."""
    rest = rephrasing
    for span in sorted(spans, key=len, reverse=True):
        rest = _without(rest, span)
    allowed = numbers(allowed_text)
    return [n for n in numbers(rest) if not any(math.isclose(n, a, rel_tol=1e-9) for a in allowed)]


# ---- one entry --------------------------------------------------------------------------------
@dataclass
class Decision:
    """One rephrasing and what became of it (``reason`` None: kept)."""

    question: str
    spans: dict[str, str]
    reason: str | None = None
    detail: str = ""


@dataclass
class EntryRephrasings:
    """What one entry's request produced; ``complete`` is False when a call failed (then nothing is cached)."""

    entry_id: str
    order: tuple[str, ...]  # the entry's parameter names, the order of an example's spans
    asked: int
    decisions: list[Decision] = field(default_factory=list)
    complete: bool = True

    @property
    def examples(self) -> list[Example]:
        return [example(self.entry_id, d.question, d.spans, self.order) for d in self.decisions if d.reason is None]

    @property
    def dropped(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for d in self.decisions:
            if d.reason is not None:
                counts[d.reason] = counts.get(d.reason, 0) + 1
        return counts


def example(entry_id: str, question: str, spans: Mapping[str, str], order: Sequence[str], kind: str = KIND) -> Example:
    """A training example (of kind ``source_rephrasing`` unless told), its spans in the entry's parameter order."""
    return Example(entry_id, question, tuple((name, spans[name]) for name in order), kind)


def mechanical_problem(entry: EntryPoint, question: str, spans: Mapping[str, str], tokens: Any,
                       forbidden: set[str] | frozenset[str] = frozenset(), *,
                       original_values: bool = True) -> tuple[str, str] | None:
    """(reason, detail) why the rephrasing cannot be kept, decided without any model; None when it may go to the judges.

    ``original_values`` False: the question states values of its own (a missed question, ``finetune_misslog.py``),
    so a span need only read as a valid value, not as the parameter's original one."""
    if normalise(question) == normalise(entry.question):
        return "identical to the original", ""
    if normalise(question) in forbidden:
        return "an evaluation query", ""
    missing = [name for name, span in spans.items() if span not in question]
    if missing:
        return "a span the rephrasing does not state", ", ".join(missing)
    try:
        values = validate_spans(entry, dict(spans))
    except ExtractionError as exc:
        return "a span does not read as a valid value", str(exc)
    changed = [p.name for p in entry.params if original_values and not _same(p, p.original, values[p.name])]
    if changed:
        return "a span reads as another value", ", ".join(f"{n}={values[n]!r}" for n in changed)
    # a question with values of its own may state the template's constants again, not its original values
    allowed_text = entry.question if original_values else SLOT.sub(" ", entry.template)
    added = added_numbers(allowed_text, question, spans.values())
    if added:
        return "states a number the original does not", ", ".join(f"{n:g}" for n in added)
    reason = check(entry, example(entry.id, question, spans, [p.name for p in entry.params]), tokens)
    return (reason, "") if reason is not None else None


def rephrase_entry(client: LLMClient, entry: EntryPoint, n: int, tokens: Any,
                   forbidden: set[str] | frozenset[str] = frozenset()) -> EntryRephrasings:
    """Ask the source model for ``n`` rephrasings, check each mechanically, then have both judges review the rest."""
    result = EntryRephrasings(entry.id, tuple(p.name for p in entry.params), n)
    try:
        answer = client.ask("source", system=SOURCE_SYSTEM, prompt=source_prompt(entry, n), tool=source_tool(entry, n))
    except FatalLLMError:
        raise
    except LLMError as exc:
        result.complete = False
        result.decisions.append(Decision("", {}, "the source model gave no valid answer", str(exc)))
        return result
    seen: set[str] = set()
    pending: list[Decision] = []
    for item in answer["rephrasings"]:
        decision = Decision(item["question"].strip(), dict(item["spans"]))
        problem = (("a duplicate", "") if normalise(decision.question) in seen
                   else mechanical_problem(entry, decision.question, decision.spans, tokens, forbidden))
        seen.add(normalise(decision.question))
        if problem is not None:
            decision.reason, decision.detail = problem
        else:
            pending.append(decision)
        result.decisions.append(decision)
    outcomes = judge_committee(client, JUDGE_SYSTEM, [judge_prompt(entry, d.question) for d in pending])
    for decision, outcome in zip(pending, outcomes):
        if outcome is not None:
            decision.reason, decision.detail = outcome
            result.complete = result.complete and outcome[0] != NO_VERDICT
    return result


def judge_committee(client: LLMClient, system: str, prompts: Sequence[str],
                    meter: Meter | None = None) -> list[tuple[str, str] | None]:
    """Both judges on every prompt, all calls in parallel, each a ``record_judgement``; per prompt None when both said
    ``same_meaning``, else (reason, detail) of the first judge that did not: ``rejected by judge-N`` or
    :data:`NO_VERDICT`. ``system`` is formatted with the judge's ``index`` (1 or 2)."""
    verdicts = client.parallel([_judge_call(client, judge, system, prompt, meter) for prompt in prompts for judge in JUDGES])
    outcomes: list[tuple[str, str] | None] = []
    for k in range(len(prompts)):
        outcome = None
        for judge, verdict in zip(JUDGES, verdicts[2 * k: 2 * k + 2]):
            if isinstance(verdict, LLMError):
                outcome = (NO_VERDICT, f"{judge}: {verdict}")
                break
            if not verdict["same_meaning"]:
                outcome = (f"rejected by {judge}", verdict["reason"])
                break
        outcomes.append(outcome)
    return outcomes


def _judge_call(client: LLMClient, judge: str, system: str, prompt: str, meter: Meter | None) -> Callable[[], Any]:
    def call() -> Any:
        try:
            return client.ask(judge, system=system.format(index=JUDGES.index(judge) + 1), prompt=prompt,
                              tool=JUDGE_TOOL, meter=meter)
        except FatalLLMError:
            raise
        except LLMError as exc:
            return exc

    return call


# ---- the cache ----------------------------------------------------------------------------------
def entry_fingerprint(entry: EntryPoint) -> str:
    """Entry id and a hash of what a model is shown of it (question, parameter originals): a cached answer about
    the entry is stale once either changes."""
    basis = json.dumps({"question": entry.question,
                        "originals": [[p.name, p.type.__name__, p.text(p.original)] for p in entry.params]})
    return f"{entry.id}:{hashlib.sha256(basis.encode('utf-8')).hexdigest()}"


def cache_key(entry: EntryPoint) -> str:
    """The entry's fingerprint and the prompt version."""
    return f"{entry_fingerprint(entry)}:v{PROMPT_VERSION}"


class JsonlCache:
    """What the source model and the judges answered, one JSON line per request under ``key`` (the last line of a key
    wins; a line cut by a crash is skipped, and its request asked again)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.rows: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(line) if line.strip() else None
                except ValueError:
                    continue
                if isinstance(row, dict) and isinstance(row.get("key"), str):
                    self.rows[row["key"]] = row

    def append(self, row: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a+b") as handle:  # writes go to the end whatever was read
            size = handle.seek(0, 2)
            cut = size > 0 and handle.seek(size - 1) >= 0 and handle.read(1) != b"\n"  # a line cut by a crash
            handle.write((("\n" if cut else "") + json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8"))
        self.rows[row["key"]] = row


class RephraseCache(JsonlCache):
    """``<work>/rephrasings.jsonl``: one line per entry request."""

    def get(self, entry: EntryPoint, n: int) -> dict[str, Any] | None:
        """The cached request for ``entry`` if it asked for at least ``n`` rephrasings."""
        row = self.rows.get(cache_key(entry))
        return row if row is not None and row["asked"] >= n else None

    def put(self, entry: EntryPoint, result: EntryRephrasings) -> None:
        row = {"key": cache_key(entry), "entry_id": entry.id, "prompt_version": PROMPT_VERSION, "asked": result.asked,
               "kept": [{"question": d.question, "spans": d.spans} for d in result.decisions if d.reason is None],
               "dropped": result.dropped}
        self.append(row)


# ---- every entry ---------------------------------------------------------------------------------
@dataclass
class RephraseReport:
    examples: dict[str, list[Example]] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    asked: int = 0  # entries sent to the source model this run
    cached: int = 0  # entries served from the cache
    without_client: int = 0  # entries neither cached nor askable (no API key)


@dataclass
class Rephraser:
    """``per_entry`` rephrasings for each of the first ``limit`` entries (sorted by id), cached under ``cache``.

    ``client`` None (no API key): only cached rephrasings are used."""

    client: LLMClient | None
    cache: Path
    per_entry: int = DEFAULT_PER_ENTRY
    limit: int | None = None

    def run(self, entries: Mapping[str, EntryPoint], tokens: Any, forbidden: set[str] | frozenset[str] = frozenset(),
            progress: Callable[[str], None] = print) -> RephraseReport:
        """Rephrasings of every entry whose own question is not an evaluation query (those are not trained on at all)."""
        report = RephraseReport()
        if self.per_entry <= 0:
            return report
        cache = RephraseCache(self.cache)
        eligible = [e for e in sorted(entries) if entries[e].question and normalise(entries[e].question) not in forbidden]
        for entry_id in eligible[: self.limit]:
            entry = entries[entry_id]
            row = cache.get(entry, self.per_entry)
            if row is not None:
                report.cached += 1
                order = [p.name for p in entry.params]
                kept = [example(entry.id, k["question"], k["spans"], order) for k in row["kept"]][: self.per_entry]
                dropped = row["dropped"]
            elif self.client is None:
                report.without_client += 1
                continue
            else:
                report.asked += 1
                result = rephrase_entry(self.client, entry, self.per_entry, tokens, forbidden)
                if result.complete:
                    cache.put(entry, result)
                kept, dropped = result.examples, result.dropped
            report.examples[entry_id] = kept
            for reason, count in dropped.items():
                report.dropped[reason] = report.dropped.get(reason, 0) + count
        spent = ({role: round(t["usd"], 4) for role, t in self.client.meter.as_dict().items()}
                 if self.client is not None else {})
        progress(f"source rephrasings: {sum(map(len, report.examples.values()))} kept, of "
                 f"{sum(1 for kept in report.examples.values() if kept)}/{len(report.examples)} entries "
                 f"({report.asked} asked, {report.cached} from {self.cache}, {report.without_client} not cached and no "
                 f"API key); dropped {report.dropped}; USD {spent}")
        return report

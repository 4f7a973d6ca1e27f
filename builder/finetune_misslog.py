"""The builder's answer to a question the device missed, as a labelled reading example (issue 22).

A miss is the best evidence of how people actually ask: the device met the question and could not serve it.
Once the builder knows which entry asks that question (with its own numbers, names and wording) and which span
of it states each parameter, the question is a reading example like any other: its target is the exact output
the device's constraint decodes for those spans.

For each distinct missed question that has text (a redacted upload carries only a hash and cannot be labelled)
and is not an evaluation query, the candidates are the entry the device came closest to (if the registry holds
it) plus the entries whose templates share most words with the question (at most :data:`MAX_CANDIDATES`). The
**source** role answers once per question (one ``record_label`` call): which candidate asks exactly this
question, with the span stating each of its parameters, or ``none`` with a reason. The answer passes the
rephrasings' mechanical checks (``finetune_rephrase.mechanical_problem``: every span occurs and reads as a valid
value, no number outside the spans that the entry's own question does not state, the constraint allows the
target), then both judges must say the entry, run on those values, answers the question. Every complete answer
(kept, ``none`` or dropped) is cached in a JSONL file keyed by the question, the candidates and
:data:`PROMPT_VERSION`, so a question is asked once and a run without an API key uses what was paid for.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from builder.finetune_data import Example, normalise
from builder.finetune_rephrase import (
    NO_VERDICT,
    JsonlCache,
    entry_fingerprint,
    example,
    judge_committee,
    mechanical_problem,
)
from builder.llm.client import FatalLLMError, LLMClient, LLMError, Meter, Tool
from edge_runtime.entries.metadata import EntryPoint
from edge_runtime.read.template_facts import SLOT

#: Bumped whenever the prompts or the checks change what is kept: cached labels of another version are not used.
PROMPT_VERSION = 1
KIND = "miss_log"
MAX_CANDIDATES = 3
NONE = "none"

#: Why a record is not labelled at all (counted per record, never sent to a model).
NO_TEXT = "no question text (uploaded redacted)"
NOT_A_RECORD = "not a miss-log record"
NOT_JSON = "a line that is not JSON"
TOO_LONG = "a question longer than MAX_QUESTION_CHARS"
#: Longer texts are no word problem a device asked; they are never sent to a model.
MAX_QUESTION_CHARS = 2000
EVALUATION = "an evaluation query"
#: Why a labelled question is not kept (besides the mechanical reasons and the judges' rejections).
NOT_ASKED = "the source model found no candidate that asks it"
NO_CANDIDATE = "no candidate entry"
NO_ANSWER = "the source model gave no valid answer"

SOURCE_SYSTEM = (
    "You label questions that a small on-device model could not answer from a cache of solved word problems. "
    "Each cache entry answers one class of question: the same question with other numbers, names or wording. "
    "The labels train the small model to copy the given values out of a question, so name an entry only if it "
    "answers exactly this question. Answer by calling record_label once."
)

JUDGE_SYSTEM = (
    "You are judge {index} of a committee of 2. A cache entry answers one class of word problem by running fixed "
    "reasoning on values read out of the question. You decide whether the entry, run on the values labelled in a "
    "new question, answers that question. Say same_meaning true only if the new question asks for what the entry "
    "computes, computed the same way from those values: every quantity the question gives is one of the labelled "
    "values with the same meaning, and nothing is added, left out or changed. Names, wording, sentence order and "
    "how numbers are written (digits or words) may differ. Answer by calling record_judgement."
)


# ---- the missed questions --------------------------------------------------------------------------
@dataclass(frozen=True)
class MissedQuestion:
    """One distinct missed question (as first asked), how often it was missed, and the entry the device came closest to."""

    question: str
    count: int
    nearest: str


def device_records(paths: Iterable[Path]) -> tuple[list[Any], int]:
    """(every JSON line of the miss-log files, lines that are not JSON or not UTF-8): a device's upload is
    untrusted input, so a bad line is counted and skipped, never a crash after the rephrasings were paid for."""
    records, unreadable = [], 0
    for path in paths:
        for line in Path(path).read_bytes().splitlines():
            if not line.strip():
                continue
            try:
                records.append(json.loads(line.decode("utf-8")))
            except (UnicodeDecodeError, ValueError):
                unreadable += 1
    return records, unreadable


def missed_questions(records: Iterable[Mapping[str, Any]],
                     forbidden: set[str] | frozenset[str] = frozenset()) -> tuple[list[MissedQuestion], dict[str, int]]:
    """(distinct questions, most missed first; records skipped by reason). Questions are the same when they
    normalise alike; records without text and evaluation queries are skipped (and counted), never labelled."""
    skipped: Counter[str] = Counter()
    first: dict[str, str] = {}
    counts: Counter[str] = Counter()
    nearest: dict[str, Counter[str]] = {}
    for record in records:
        if not isinstance(record, Mapping):
            skipped[NOT_A_RECORD] += 1
            continue
        text = record.get("query")
        if not isinstance(text, str) or not text.strip():
            skipped[NO_TEXT] += 1
            continue
        if len(text) > MAX_QUESTION_CHARS:
            skipped[TOO_LONG] += 1
            continue
        key = normalise(text)
        if key in forbidden:
            skipped[EVALUATION] += 1
            continue
        first.setdefault(key, text.strip())
        counts[key] += 1
        if record.get("entry_id"):
            nearest.setdefault(key, Counter())[str(record["entry_id"])] += 1
    questions = [MissedQuestion(first[key], n, nearest[key].most_common(1)[0][0] if key in nearest else "")
                 for key, n in counts.most_common()]
    return questions, dict(skipped)


_WORD = re.compile(r"[a-z]{3,}")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def candidates(missed: MissedQuestion, entries: Mapping[str, EntryPoint],
               forbidden: set[str] | frozenset[str] = frozenset(), n: int = MAX_CANDIDATES) -> list[EntryPoint]:
    """The entries the source model chooses among: the nearest entry the device named (if the registry holds it),
    then those whose template shares the largest fraction of words with the question (Jaccard, words of 3+
    letters; ties by id). Cheap on purpose: the source model decides, the candidates only bound what it reads.
    An entry whose own question is an evaluation query is never trained on, so never a candidate."""
    usable = {k: e for k, e in entries.items() if normalise(e.question or "") not in forbidden}
    chosen = [usable[missed.nearest]] if missed.nearest in usable else []
    words = _words(missed.question)

    def overlap(entry: EntryPoint) -> float:
        template = _words(SLOT.sub(" ", entry.template))
        return len(words & template) / (len(words | template) or 1)

    scored = sorted((-overlap(e), k) for k, e in usable.items() if e not in chosen)
    chosen += [usable[k] for score, k in scored if score < 0][: max(0, n - len(chosen))]
    return chosen[:n]


# ---- what the source model and the judges are asked ---------------------------------------------------
def source_tool(options: Sequence[EntryPoint]) -> Tool:
    """``record_label``: a candidate's id (or ``none``), a reason, and for a candidate the span stating each parameter."""
    by_id = {e.id: e for e in options}

    def problems(answer: dict[str, Any]) -> list[str]:
        entry_id = answer["entry_id"]
        if entry_id == NONE:
            return []
        wanted, got = {p.name for p in by_id[entry_id].params}, set(answer.get("spans") or {})
        out = []
        if wanted - got:
            out.append(f"$.spans: no span for {sorted(wanted - got)} (every parameter of {entry_id} needs one)")
        if got - wanted:
            out.append(f"$.spans: {sorted(got - wanted)} are not parameters of {entry_id}")
        return out

    schema = {"type": "object", "required": ["entry_id", "reason"], "additionalProperties": False,
              "properties": {"entry_id": {"type": "string", "enum": [*by_id, NONE]},
                             "reason": {"type": "string", "minLength": 1},
                             "spans": {"type": "object", "additionalProperties": {"type": "string", "minLength": 1}}}}
    return Tool("record_label", "The candidate entry that asks this question, with the span of the question stating "
                "each of its parameters; or none.", schema, problems)


def source_prompt(question: str, options: Sequence[EntryPoint]) -> str:
    """What the source model is asked (a plain function of the question and candidates, so requests replay)."""
    blocks = []
    for entry in options:
        params = "\n".join(f'  - {p.name}: {p.description} (its question states "{p.text(p.original)}")'
                           for p in entry.params)
        blocks.append(f"id: {entry.id}\n  solves: {entry.description}\n  its question: {entry.question or entry.template}\n"
                      f"  parameters:\n{params}")
    return (
        f"Question:\n{question}\n\nCandidate entries:\n" + "\n\n".join(blocks) + "\n\n"
        "Does one candidate ask exactly this question, up to its numbers, names and wording: the same quantities "
        "asked for, computed the same way from the same kinds of given values, nothing added, left out or changed? "
        "If one does, give its id as entry_id and, for every one of its parameters, the span of the question above "
        "that states its value, copied character for character. If none does, give entry_id \"none\" and say why. "
        "Call record_label."
    )


def judge_prompt(entry: EntryPoint, question: str, spans: Mapping[str, str]) -> str:
    """The entry (its reasoning, its question, its question rendered on the labelled values) and the new question."""
    try:
        rendered = entry.template.format(**spans)
    except (KeyError, IndexError, ValueError):
        rendered = entry.template
    values = "\n".join(f'- {p.name} ({p.description}): "{spans[p.name]}"' for p in entry.params)
    return (f"The entry solves: {entry.description}\nIts own question:\n{entry.question or entry.template}\n\n"
            f"Its question on the labelled values:\n{rendered}\n\nLabelled values:\n{values}\n\nNew question:\n{question}\n\n"
            "Does the entry, run on these values, answer the new question (same reasoning, nothing added or changed)? "
            "Call record_judgement.")


# ---- one question ------------------------------------------------------------------------------------
@dataclass
class Label:
    """What became of one missed question (``reason`` None: kept); ``complete`` False when a call failed (not cached)."""

    question: str
    entry_id: str | None = None
    spans: dict[str, str] = field(default_factory=dict)
    reason: str | None = None
    detail: str = ""
    complete: bool = True

    def example(self, entries: Mapping[str, EntryPoint]) -> Example | None:
        """The reading example of a kept label whose entry the registry still holds."""
        if self.reason is not None or self.entry_id not in entries:
            return None
        return example(self.entry_id, self.question, self.spans, [p.name for p in entries[self.entry_id].params], KIND)


def label_question(client: LLMClient, question: str, options: Sequence[EntryPoint], tokens: Any,
                   forbidden: set[str] | frozenset[str] = frozenset(), meter: Meter | None = None) -> Label:
    """Ask the source model which candidate asks ``question``; check its spans mechanically; then both judges."""
    try:
        answer = client.ask("source", system=SOURCE_SYSTEM, prompt=source_prompt(question, options),
                            tool=source_tool(options), meter=meter)
    except FatalLLMError:
        raise
    except LLMError as exc:
        return Label(question, reason=NO_ANSWER, detail=str(exc), complete=False)
    if answer["entry_id"] == NONE:
        return Label(question, reason=NOT_ASKED, detail=answer["reason"])
    entry = next(e for e in options if e.id == answer["entry_id"])
    label = Label(question, entry.id, dict(answer["spans"]))
    problem = mechanical_problem(entry, question, label.spans, tokens, forbidden, original_values=False)
    if problem is None:
        problem = judge_committee(client, JUDGE_SYSTEM, [judge_prompt(entry, question, label.spans)], meter)[0]
    if problem is not None:
        label.reason, label.detail = problem
        label.complete = problem[0] != NO_VERDICT
    return label


# ---- the cache --------------------------------------------------------------------------------------
def cache_key(question: str, options: Sequence[EntryPoint]) -> str:
    """sha256 of the normalised question, the candidates' fingerprints (in the order shown) and the prompt version."""
    basis = json.dumps({"question": normalise(question), "candidates": [entry_fingerprint(e) for e in options],
                        "version": PROMPT_VERSION})
    return hashlib.sha256(basis.encode("utf-8")).hexdigest()


class LabelCache(JsonlCache):
    """``<work>/misslog_labels.jsonl``: one line per answered question. It holds the question text, as the uploaded
    miss log it came from does."""

    def get(self, question: str, options: Sequence[EntryPoint]) -> Label | None:
        row = self.rows.get(cache_key(question, options))
        if row is None:
            return None
        return Label(question, row["entry_id"], dict(row["spans"]), row["reason"], row["detail"])

    def put(self, options: Sequence[EntryPoint], label: Label) -> None:
        row = {"key": cache_key(label.question, options), "prompt_version": PROMPT_VERSION, "question": label.question,
               "candidates": [e.id for e in options], "entry_id": label.entry_id, "spans": label.spans,
               "reason": label.reason, "detail": label.detail}
        self.append(row)


# ---- every missed question -------------------------------------------------------------------------------
@dataclass
class MissLogReport:
    examples: dict[str, list[Example]] = field(default_factory=dict)  # kept rows by entry id
    dropped: dict[str, int] = field(default_factory=dict)  # questions, by reason
    skipped: dict[str, int] = field(default_factory=dict)  # records, by reason (never labelled)
    questions: int = 0  # distinct questions considered (after --miss-log-limit)
    asked: int = 0  # sent to the source model this run
    cached: int = 0  # answered from the cache
    without_client: int = 0  # neither cached nor askable (no API key)
    usd: dict[str, float] = field(default_factory=dict)  # this run's spend per role

    @property
    def kept(self) -> int:
        return sum(map(len, self.examples.values()))


@dataclass
class MissLogLabeller:
    """Label the missed questions of the miss-log files ``paths`` (the first ``limit``, most missed first), cached
    under ``cache``. ``client`` None (no API key): only cached labels are used, nothing is asked."""

    client: LLMClient | None
    cache: Path
    paths: Sequence[Path]
    limit: int | None = None
    meter: Meter = field(default_factory=Meter)
    #: The files' records, read when the labeller is made: a missing file fails before anything is paid for.
    records: list[Any] = field(init=False, default_factory=list)
    unreadable: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.records, self.unreadable = device_records(self.paths)

    def run(self, entries: Mapping[str, EntryPoint], tokens: Any, forbidden: set[str] | frozenset[str] = frozenset(),
            progress: Callable[[str], None] = print) -> MissLogReport:
        """The kept rows by entry; what was dropped or skipped, counted by reason."""
        questions, skipped = missed_questions(self.records, forbidden)
        if self.unreadable:
            skipped[NOT_JSON] = self.unreadable
        report = MissLogReport(skipped=skipped)
        cache = LabelCache(self.cache)
        for missed in questions[: self.limit]:
            report.questions += 1
            options = candidates(missed, entries, forbidden)
            cached = cache.get(missed.question, options) if options else None
            if not options:
                label = Label(missed.question, reason=NO_CANDIDATE)
            elif cached is not None:
                report.cached += 1
                label = cached
            elif self.client is None:
                report.without_client += 1
                continue
            else:
                report.asked += 1
                label = label_question(self.client, missed.question, options, tokens, forbidden, self.meter)
                if label.complete:
                    cache.put(options, label)
            kept = label.example(entries)
            if kept is not None:
                report.examples.setdefault(kept.entry_id, []).append(kept)
            elif label.reason is not None:
                report.dropped[label.reason] = report.dropped.get(label.reason, 0) + 1
        report.usd = {role: round(t["usd"], 4) for role, t in self.meter.as_dict().items()}
        progress(f"miss log: {report.kept} labelled rows kept of {report.questions} questions ({report.asked} asked, "
                 f"{report.cached} from {self.cache}, {report.without_client} not cached and no API key); dropped "
                 f"{report.dropped}; records skipped {report.skipped}; USD {report.usd}")
        return report

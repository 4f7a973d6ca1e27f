"""The tuned reader's training set, built from the cache itself.

For every entry of the training split: its original question with its own values; renderings of its
template with values drawn from each parameter's domain; and value-preserving rewordings
(``builder/finetune_rewording.py``) of the template with such values. Each example is labelled with
the spans the question states, and its target is the exact token sequence the device's constraint
produces for those spans (``JsonSlotsConstraint.draft_tokens``): an example is kept only if every
decided token of that target is one the constraint allows and the spans read back (the device's own
``validate_spans``) to the labelled values. The prompt is the one the tuned artefact names
(``edge_runtime/read/prompt_variants.py``).

Never trained on: the evaluation query sets (every query of ``build/*/sets``, ``build/added``,
``build/probe`` and the generated sets of ``benchmarks/extraction.py``; an entry whose original
question is one of them, such as the held-out "unrelated" entries, is left out whole), and the
held-out split of the entries (``held_out``: the device meets entries built after its model was tuned).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from builder.bundle_build import sample_values
from builder.finetune_rewording import number_words, reword
from edge_runtime.entries.metadata import EntryPoint, Param
from edge_runtime.errors import ExtractionError
from edge_runtime.read.extractor import _slot_spec, validate_spans
from edge_runtime.read.json_constraint import JsonSlotsConstraint
from edge_runtime.read.prompt_variants import PROMPTS

DATA_VERSION = 1


class TokenizerTokens:
    """A ``tokenizers.Tokenizer`` with the two calls the constraint makes (the device's engine does the same)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self._text: dict[int, str] = {}

    @classmethod
    def from_file(cls, path: str | Path) -> TokenizerTokens:
        from tokenizers import Tokenizer

        return cls(Tokenizer.from_file(str(path)))

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def token_text(self, token_id: int) -> str:
        if token_id not in self._text:
            self._text[token_id] = self.tokenizer.decode([token_id], skip_special_tokens=False)
        return self._text[token_id]


@dataclass(frozen=True)
class Example:
    entry_id: str
    question: str
    spans: tuple[tuple[str, str], ...]  # (parameter, span as the question states it), in parameter order
    kind: str  # "original", "rendering", "reworded:<...>", "source_rephrasing" (finetune_rephrase), "miss_log" (finetune_misslog)


@dataclass
class Dataset:
    train: list[Example]
    held_out: list[Example]
    train_entries: list[str]
    held_out_entries: list[str]
    rows: list[tuple[list[int], list[int]]] = field(default_factory=list)  # (prompt ids, target ids) of train
    held_out_rows: list[tuple[list[int], list[int]]] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    digest: str = ""

    @property
    def tokens(self) -> int:
        return sum(len(p) + len(t) for p, t in self.rows)


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


def evaluation_queries(paths: Iterable[Path]) -> set[str]:
    """Every query text of the evaluation sets under ``paths`` (files or directories of .jsonl)."""
    found: set[str] = set()
    for path in paths:
        files = sorted(Path(path).rglob("*.jsonl")) if Path(path).is_dir() else [Path(path)]
        for file in files:
            if not file.exists():
                continue
            for line in file.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(row, dict) and isinstance(row.get("query"), str):
                    found.add(normalise(row["query"]))
    return found


def default_evaluation_paths(build: Path) -> list[Path]:
    """The query sets benchmarks and ``arc-build eval`` measure on: never training data."""
    return [*sorted(build.glob("*/sets")), build / "added", build / "probe", *sorted(build.glob("*/ev*"))]


def split_entries(entry_ids: Sequence[str], held_out_fraction: float, seed: int) -> tuple[list[str], list[str]]:
    """(train, held out): each entry's side fixed by a hash of its id and the seed, at least one held out."""
    def score(entry_id: str) -> float:
        return int(hashlib.sha256(f"{seed}:{entry_id}".encode()).hexdigest()[:12], 16) / 16**12

    ranked = sorted(entry_ids, key=score)
    held = max(1, round(len(ranked) * held_out_fraction)) if len(ranked) > 1 and held_out_fraction > 0 else 0
    held_ids = set(ranked[:held])
    return [e for e in entry_ids if e not in held_ids], [e for e in entry_ids if e in held_ids]


def _span(param: Param, value: Any, rng: random.Random, words: float) -> str:
    """How a question may state ``value``: as the entry's template does, or in words."""
    if (words and param.reading is None and param.choices is None and param.type in (int, float, Fraction)
            and float(value).is_integer() and 0 <= value < 1000 and rng.random() < words):
        return number_words(int(value))
    return param.text(value)


def _same(param: Param, expected: Any, got: Any) -> bool:
    if isinstance(expected, (int, float, Fraction)) and not isinstance(expected, bool):
        return isinstance(got, (int, float, Fraction)) and math.isclose(float(expected), float(got), rel_tol=1e-9)
    if isinstance(expected, str) and isinstance(got, str):
        return expected.strip().lower() == got.strip().lower()
    return expected == got


def target_ids(tokens: Any, entry: EntryPoint, question: str, spans: Mapping[str, str]) -> list[int] | None:
    """The constraint's token sequence for ``spans``, or None when the constraint would not let a model write it."""
    slots = [_slot_spec(p, question) for p in entry.params]
    machine = JsonSlotsConstraint(tokens, slots, question.strip())
    ids = machine.draft_tokens([spans[p.name] for p in entry.params])
    position = 0
    while not machine.done:
        for token in machine.forced():
            if position >= len(ids) or ids[position] != token:
                return None
            position += 1
        if machine.done:
            break
        if position >= len(ids) or ids[position] not in machine.allowed():
            return None
        machine.advance(ids[position])
        position += 1
    if position != len(ids) or machine.result() != {p.name: spans[p.name] for p in entry.params}:
        return None
    return ids


def entry_examples(entry: EntryPoint, rng: random.Random, renderings: int, rewordings: int) -> list[Example]:
    """The candidate examples of one entry (not yet checked)."""
    out = []
    original = {p.name: p.text(p.original) for p in entry.params}
    if entry.question:
        out.append((entry.question, original, "original"))
    for i in range(renderings + rewordings):
        try:
            values = sample_values(entry, rng)
        except Exception:  # noqa: BLE001 - a domain sample_values cannot fill: no example
            continue
        spans = {p.name: _span(p, values[p.name], rng, 0.25 if i >= renderings else 0.0) for p in entry.params}
        template, kind = entry.template, "rendering"
        if i >= renderings:
            template, applied = reword(entry.template, rng)
            kind = "reworded:" + "+".join(applied or ["number_words"])
        try:
            question = template.format(**spans)
        except (KeyError, IndexError, ValueError):
            continue
        out.append((question, spans, kind))
    return [Example(entry.id, q, tuple((p.name, s[p.name]) for p in entry.params), k) for q, s, k in out]


def check(entry: EntryPoint, example: Example, tokens: Any) -> str | None:
    """Why ``example`` cannot be trained on (None: it can)."""
    spans = dict(example.spans)
    try:
        values = validate_spans(entry, spans)
        expected = {p.name: read_value for p, read_value in ((p, _read_expected(p, spans[p.name])) for p in entry.params)}
    except ExtractionError:
        return "spans do not read as valid values"
    if not all(_same(p, expected[p.name], values[p.name]) for p in entry.params):
        return "spans read as other values"
    if target_ids(tokens, entry, example.question, spans) is None:
        return "the constraint refuses the target"
    return None


def _read_expected(param: Param, span: str) -> Any:
    from edge_runtime.read.param_values import read_param

    return read_param(param, span)


def build_dataset(
    entries: Mapping[str, EntryPoint], tokens: Any, *, prompt: str = "short", seed: int = 0,
    renderings: int = 8, rewordings: int = 16, held_out_fraction: float = 0.2, forbidden: set[str] = frozenset(),
    per_entry: Mapping[str, tuple[int, int]] | None = None, max_tokens: int = 320,
    extra_examples: Mapping[str, Sequence[Example]] | None = None,
) -> Dataset:
    """Examples, their token rows and a digest of both. ``per_entry`` overrides (renderings, rewordings) by id.

    ``extra_examples`` (by entry id: the source model's rephrasings, labelled miss-log rows) go through the same checks and target
    construction as the generated ones, and to the same side of the split as their entry."""
    parts = PROMPTS[prompt]
    eligible = [e for e in sorted(entries) if normalise(entries[e].question or "") not in forbidden]
    dropped: dict[str, int] = {"entries whose question is an evaluation query": len(entries) - len(eligible)}
    train_ids, held_ids = split_entries(eligible, held_out_fraction, seed)
    data = Dataset([], [], train_ids, held_ids, dropped=dropped)
    for entry_id in eligible:
        entry = entries[entry_id]
        rng = random.Random(f"{seed}:{entry_id}")
        n_render, n_reword = (per_entry or {}).get(entry_id, (renderings, rewordings))
        seen: set[str] = set()
        for example in [*entry_examples(entry, rng, n_render, n_reword), *(extra_examples or {}).get(entry_id, ())]:
            key = normalise(example.question)
            reason = ("an evaluation query" if key in forbidden else "a duplicate" if key in seen
                      else check(entry, example, tokens))
            if reason is not None:
                dropped[reason] = dropped.get(reason, 0) + 1
                continue
            prefix, suffix = parts(entry, example.question)
            row = (tokens.encode(prefix) + tokens.encode(suffix),
                   target_ids(tokens, entry, example.question, dict(example.spans)))
            if len(row[0]) + len(row[1]) > max_tokens:
                dropped["longer than max_tokens"] = dropped.get("longer than max_tokens", 0) + 1
                continue
            seen.add(key)
            held = entry_id in held_ids
            (data.held_out if held else data.train).append(example)
            (data.held_out_rows if held else data.rows).append(row)  # type: ignore[arg-type]
    digest = hashlib.sha256(json.dumps({"version": DATA_VERSION, "prompt": prompt, "seed": seed,
                                        "train": [[e.entry_id, e.question, e.spans, e.kind] for e in data.train],
                                        "rows": data.rows, "held_out_entries": held_ids}).encode())
    data.digest = digest.hexdigest()[:16]
    return data

"""IS2: pull an entry's parameters out of a question, then validate them.

Paths, cheapest first, each recorded in the result:
- ``template``: the question is the entry's template with new slot values; no model call.
- ``aligned``: the template reworded around its slots (names, objects changed) with every slot
  pinned between unchanged neighbours and no quantity added, removed or changed outside the
  slots (``template_align.py``), a sentence's fronted phrase read where the template has it
  (``moved_phrase.py``); no model call.
- ``lm-draft``: an aligner drafts every value, the model verifies the draft in one forward
  pass on the entry's cached prompt prefix; decoding resumes only where it disagrees.
- ``lm``: constrained greedy decoding of the whole answer.
- ``lm-reread``: the model disagreed with the draft only by a reading no question can have (one stated
  number in two slots) while ranking every draft token among its two best: the draft is served.
Both model paths give the constrained greedy answer (a draft's spelling of the closing
structure, '"' or '",', is kept when the model prefers the other). Only a draft the model
reproduces value for value counts as agreement. Every value then passes the
parameter's type and domain check; failure is an ExtractionError with the MISS reason.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from edge_runtime.entries.metadata import EntryPoint, Param
from edge_runtime.errors import ExtractionError, LMDeadlineError, ParameterValidationError, TargetModelError
from edge_runtime.model.lm_engine import KVState, LMEngine
from edge_runtime.outcome import MissReason, ServingPath
from edge_runtime.read.draft import free_text_conflict, named_choice
from edge_runtime.read.json_constraint import JsonSlotsConstraint, SlotSpec
from edge_runtime.read.mentions import same_value
from edge_runtime.read.moved_phrase import restore_moved_phrase
from edge_runtime.read.packs import load_pack
from edge_runtime.read.packs.base import ReadingPack
from edge_runtime.read.param_values import read_param
from edge_runtime.read.prompt_variants import PROMPTS, prompt_for
from edge_runtime.read.template_align import aligned_values
from edge_runtime.read.template_match import match_template
from edge_runtime.read.values import Quantity, parse_quantity

#: The extraction prompt's system text of the default pack (a bundle's pack gives its own: ReadingPack.system_prompt).
SYSTEM = ReadingPack.system_prompt
#: How long a reread may take, waiting for an idle model included, before its question misses (alone: ~0.25 s p50).
REREAD_SECONDS = 1.0


@dataclass
class Extraction:
    """Validated parameter values plus how they were obtained."""

    values: dict[str, Any]
    spans: dict[str, str]
    path: ServingPath
    forward_passes: int = 0
    draft_tokens_accepted: int = 0
    draft_tokens: int = 0
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    #: the ``draft_check`` (the runtime's guard, on the model path) passed these very values before the pass, so
    #: IS2's guard need not judge them again
    guarded: bool = False


def _guarded(extraction: Extraction, checked: dict[str, str] | None) -> Extraction:
    """``extraction`` marked guarded when it reads the draft spans whose values ``draft_check`` passed (the guard
    judges LM_DRAFT and LM_REREAD alike)."""
    return replace(extraction, guarded=True) if checked is not None and extraction.spans == checked else extraction


def _param_line(param: Param) -> str:
    if param.choices is not None:
        hint = "one of: " + ", ".join(str(c) for c in param.choices)
    elif param.type is str:
        hint = "text"
    else:
        hint = "a number, copied as written"
    return f"- {param.name}: {param.description} ({hint})"


def example_spans(entry: EntryPoint) -> list[dict[str, str]]:
    """The prompt's worked example: a re-parameterised variant of the entry's question where the
    entry registers one, else the original. One example, not two: with SmolLM2-135M the second
    added no right answers (39 vs 38 of 96 paraphrases) but 170 prompt tokens, which cost ~30% of
    every verifying pass and 60% more prefix-cache memory (benchmarks/extraction.py)."""
    original = {p.name: p.text(p.original) for p in entry.params}
    variant = {p.name: p.text(p.examples[0]) if p.examples else original[p.name] for p in entry.params}
    return [variant]


def prompt_parts(entry: EntryPoint, question: str, system: str = SYSTEM) -> tuple[str, str]:
    """(prefix, suffix): the prefix depends on the entry only, so its KV state is reused."""
    lines = "\n".join(_param_line(p) for p in entry.params)
    turns = [f"<|im_start|>system\n{system}<|im_end|>\n"]
    for spans in example_spans(entry):
        example_q = entry.template.format(**spans)
        example_a = json.dumps(spans, ensure_ascii=False)
        turns.append(f"<|im_start|>user\nParameters:\n{lines}\nQuestion: {example_q}<|im_end|>\n")
        turns.append(f"<|im_start|>assistant\n{example_a}<|im_end|>\n")
    prefix = "".join(turns) + f"<|im_start|>user\nParameters:\n{lines}\nQuestion:"
    suffix = f" {question.strip()}<|im_end|>\n<|im_start|>assistant\n"
    return prefix, suffix


def _slot_spec(param: Param, question: str) -> SlotSpec:
    """A choice the question names word for word is the only option left: nothing there for the model to
    decide, and a small model tends to copy the worked example's option instead (measured: most rejections
    of right drafts were 'celsius' for 'kelvin'; SmolLM2 int8 decodes 'millilitres' for "10 litres")."""
    if param.choices is None:
        return SlotSpec(param.name, None)
    named = named_choice(param, question)
    return SlotSpec(param.name, (named,) if named is not None else tuple(str(c) for c in param.choices))


def validate_spans(entry: EntryPoint, spans: dict[str, str],
                   read_quantity: Callable[[str], Quantity] = parse_quantity) -> dict[str, Any]:
    """Typed values for every parameter (numbers read by the reading pack's ``read_quantity``), or
    ExtractionError('validation_failed')."""
    values = {}
    for param in entry.params:
        try:
            values[param.name] = read_param(param, spans.get(param.name, ""), read_quantity)
        except ParameterValidationError as exc:
            raise ExtractionError(MissReason.VALIDATION_FAILED, str(exc)) from exc
    return values


class Extractor:
    """Runs IS2 for any entry on one shared engine (or the fast path alone when there is none)."""

    def __init__(
        self,
        engine: LMEngine | None,
        *,
        use_fast_path: bool = True,
        use_draft: bool = True,
        on_disagreement: str = "miss",
        use_alignment: bool = True,
        impossible_rereads: int | None = None,
        draft_check: Callable[[EntryPoint, str, dict[str, Any]], str | None] | None = None,
        reading: ReadingPack | None = None,
    ) -> None:
        """``on_disagreement`` decides what a model-path extraction may serve:
        ``"miss"`` (the default on devices) serves only a draft the model accepts whole — two
        independent readers agree — and otherwise misses with ``extraction_failed``;
        ``"decode"`` continues constrained greedy decoding from the first disagreement (or from
        the start when the aligner has no draft), so the model's own answer is served.
        benchmarks/extraction.py measures both: with SmolLM2-135M int8 the model's own answer
        is wrong too often to serve.
        ``impossible_rereads`` (with ``"miss"``): where the model disagrees, its own reading is decoded
        when every draft token is among its ``impossible_rereads`` best; if that reading is impossible
        (it fills two slots with a number the question states once: "120" for the price and for the
        years of "three years ... $120") and differs from the draft only in those slots, the draft is
        served: the model's reading of everything else agrees, and its only disagreement is one no
        reading of the question can have. None: off (the device turns it on: options.PipelineOptions). The
        model's own reading costs a pass per token and a KV state, so it runs on spare capacity (below).
        ``draft_check`` (the runtime passes its guard) says why the draft's values could not be served (None: they
        could). With ``"miss"`` it is asked before the model: what the model's agreement would serve is the draft, so
        a draft the guard refuses, or whose values are invalid, misses at once with the guard's or the validator's
        reason, and no pass is spent on it (on the AVX2 host a miss then takes milliseconds, not a prefill and a
        pass); the re-read is spent only where the draft would pass.
        ``reading``: the bundle's reading pack (number reading, draft, prompt; default en-word-problems/1); a pack
        that does not read reworded questions (``reads_reworded``) leaves only the template and aligned paths."""
        if on_disagreement not in ("decode", "miss"):
            raise ValueError("on_disagreement must be 'decode' or 'miss'")
        self.engine = engine
        self.use_fast_path = use_fast_path
        self.use_draft = use_draft
        self.on_disagreement = on_disagreement
        self.use_alignment = use_alignment
        self.impossible_rereads = impossible_rereads
        self.draft_check = draft_check
        self.pack = reading if reading is not None else load_pack(None)
        self._rereading = threading.BoundedSemaphore(1)
        if engine is not None:
            template = (engine.root / "chat_template.jinja").read_text(encoding="utf-8") if (
                engine.root / "chat_template.jinja"
            ).exists() else ""
            if "<|im_start|>" not in template:
                raise TargetModelError("the extractor's prompt needs a ChatML chat template (<|im_start|>)")

    def _validate(self, entry: EntryPoint, spans: dict[str, str], question: str) -> dict[str, Any]:
        """Typed, validated values in the template's units (the reading pack converts "30 cents" for "${price}")."""
        values = validate_spans(entry, spans, self.pack.read_quantity)
        converted = self.pack.in_template_units(entry.template, question, values)
        params = {p.name: p for p in entry.params}
        for name, value in converted.items():
            param = params[name]
            try:
                values[name] = param.validate(float(value) if param.type is float else value)
            except ParameterValidationError as exc:
                raise ExtractionError(MissReason.VALIDATION_FAILED, f"{exc} (read as {spans.get(name, '')!r} "
                                      "in the question's unit)") from exc
        return values

    @property
    def prompt_parts(self) -> Callable[[EntryPoint, str], tuple[str, str]]:
        """The prompt the model was trained with (its manifest's; a tuned reader's is short). The full prompt
        carries the instructions of the bundle's reading pack."""
        chosen = prompt_for(getattr(self.engine, "manifest", None)) if self.engine is not None else None
        if chosen is None or chosen is PROMPTS["full"]:
            return lambda entry, question: prompt_parts(entry, question, self.pack.system_prompt)
        return chosen

    def fast_path(self, entry: EntryPoint, question: str) -> Extraction | None:
        """The model-free read: the template with new slot values, else (with ``use_alignment``) the
        template reworded around its slots. None when neither matches; ExtractionError when one matched
        but a value is invalid (the aligned path is not tried after a template match)."""
        started = time.perf_counter()
        choices = {p.name: tuple(str(c) for c in p.choices) for p in entry.params if p.choices}
        slots, path = match_template(entry.template, question, choices), ServingPath.TEMPLATE
        if slots is None and self.use_alignment:
            words = self.pack.align_words
            slots, path = aligned_values(entry.template, entry.params, question, words=words), ServingPath.ALIGNED
            restored = restore_moved_phrase(entry.template, question, words=words) if slots is None else None
            if restored is not None:  # a fronted phrase moved to its sentence's end, or back: read where it was
                slots = aligned_values(entry.template, entry.params, restored, words=words)
        if slots is None:
            return None
        return Extraction(self._validate(entry, slots, question), slots, path, seconds=time.perf_counter() - started)

    def extract(self, entry: EntryPoint, question: str, *, fast_paths: bool = True) -> Extraction:
        """IS2 for one entry; ``fast_paths=False`` when the caller has tried ``fast_path`` already."""
        started = time.perf_counter()
        template_failure: ExtractionError | None = None
        if self.use_fast_path and fast_paths:
            try:
                fast = self.fast_path(entry, question)
            except ExtractionError as exc:
                template_failure = exc  # the text matched but a slot is not a valid value: let the model read it
            else:
                if fast is not None:
                    return fast
        if self.engine is None or not self.pack.reads_reworded:
            if template_failure is not None:
                raise template_failure
            why = ("no target model is loaded" if self.engine is None
                   else f"the bundle's reading pack {self.pack.name} reads no reworded question")
            raise ExtractionError(MissReason.EXTRACTION_FAILED, f"the question does not match the template and {why}")
        try:
            extraction = self._with_model(entry, question)
        except TargetModelError as exc:  # e.g. a model that failed to load in the background
            raise ExtractionError(MissReason.EXTRACTION_FAILED, f"the target model is unavailable: {exc}") from exc
        except ExtractionError:
            # The template matched but a value was invalid: that is the more useful reason to report.
            if template_failure is not None:
                raise template_failure from None
            raise
        extraction.values = self._validate(entry, extraction.spans, question)
        extraction.seconds = time.perf_counter() - started
        return extraction

    # ---- the model paths ---------------------------------------------------------
    def _with_model(self, entry: EntryPoint, question: str) -> Extraction:
        engine = self.engine
        assert engine is not None
        draft = self.pack.draft(entry.template, entry.params, question) if self.use_draft else None
        holes = draft is not None and None in draft.values()  # free text the model reads alone
        checked: dict[str, str] | None = None  # the draft spans whose values draft_check passed
        if self.on_disagreement == "miss":  # decided before any pass: only the draft can be served
            if draft is None:
                raise ExtractionError(MissReason.EXTRACTION_FAILED, "the values could not be read from the question's "
                    "wording (a value may lie outside what this entry handles)")
            if self.draft_check is not None and not holes:  # with free text the guard judges after the model's read
                values = self._validate(entry, {p.name: draft[p.name] for p in entry.params}, question)
                try:
                    refusal = self.draft_check(entry, question, values)
                except Exception as exc:  # noqa: BLE001 - a guard that cannot judge refuses, as after IS2
                    refusal = f"the guard could not judge this question ({type(exc).__name__}: {exc})"
                if refusal:
                    raise ExtractionError(MissReason.REASONING_CHANGED, refusal)
                checked = {p.name: draft[p.name] for p in entry.params}
        prefix, suffix = self.prompt_parts(entry, question)
        t0 = time.perf_counter()
        state = engine.prefix_state(engine.encode(prefix))
        t1 = time.perf_counter()
        suffix_ids = engine.encode(suffix)
        slots = [_slot_spec(p, question) for p in entry.params]
        machine = JsonSlotsConstraint(engine, slots, question.strip())
        if holes:
            assert draft is not None
            return self._read_free_text(entry, machine, state, suffix_ids, draft, t0, t1)
        passes = 0
        accepted = 0
        draft_ids: list[int] = []
        if draft is not None:
            draft_ids = machine.draft_tokens([draft[p.name] for p in entry.params])
            # Only a decoding continuation needs the new KV state; agree-or-miss reads hidden states alone.
            result = engine.forward(suffix_ids + draft_ids, state, keep_state=self.on_disagreement == "decode")
            passes += 1
            hidden_rows = result.hidden[len(suffix_ids) - 1 :]  # row j predicts draft token j
            accepted, diverged = self._verify(machine, draft_ids, hidden_rows)
            # The machine can finish while disagreeing: the model may close the last value early
            # ("2" where the draft says "21"). Only an answer equal to the draft is agreement.
            agreed = machine.done and machine.result() == {p.name: draft[p.name] for p in entry.params}
            if agreed or (machine.done and self.on_disagreement == "decode"):
                return _guarded(self._finish(machine, ServingPath.LM_DRAFT, passes, accepted, len(draft_ids), t0, t1),
                                checked)
            if self.on_disagreement == "miss" and _differs_only_unread(entry, machine, draft):
                return _guarded(self._finish_spans({p.name: draft[p.name] for p in entry.params}, ServingPath.LM_DRAFT,
                                                   passes, accepted, len(draft_ids), t0, t1), checked)
            if self.on_disagreement == "miss":
                # A reread spends spare capacity (a pass per token and a KV state of ~20 MB): one at a time, never
                # waited for, its passes in the model's background lane (only while no other pass runs or waits).
                # Under load it gives up after REREAD_SECONDS and the question misses, as without rereads.
                if (self.impossible_rereads and self._draft_near_top(slots, question, draft_ids, hidden_rows)
                        and self._draft_may_serve(entry, draft, question) and self._rereading.acquire(blocking=False)):
                    try:
                        with engine.budget(time.monotonic() + REREAD_SECONDS, background=True):
                            reread = self._reread(entry, question, slots, machine, state, suffix_ids, draft,
                                                  draft_ids, hidden_rows, accepted, diverged)
                    except LMDeadlineError:
                        reread = None
                    finally:
                        self._rereading.release()
                    if reread is not None:
                        return _guarded(self._finish_spans({p.name: draft[p.name] for p in entry.params},
                                                           ServingPath.LM_REREAD, passes + reread, accepted,
                                                           len(draft_ids), t0, t1), checked)
                raise ExtractionError(
                    MissReason.EXTRACTION_FAILED,
                    f"the model and the aligner disagree after {accepted} of {len(draft_ids)} tokens"
                )
            # Keep the state of every verified token, then continue from the model's own choice.
            state = result.state.truncate(state.length + len(suffix_ids) + accepted)
            assert diverged is not None
            token, forced = diverged
            feed = [token] + forced
        else:
            feed = suffix_ids + machine.forced()
        passes += self._decode(machine, state, feed)[0]
        path = ServingPath.LM_DRAFT if draft is not None else ServingPath.LM
        return self._finish(machine, path, passes, accepted, len(draft_ids), t0, t1)

    def _read_free_text(self, entry: EntryPoint, machine: JsonSlotsConstraint, state: KVState, feed: list[int],
                        draft: dict[str, str | None], t0: float, t1: float) -> Extraction:
        """A draft with free text: one pass verifies the drafted values up to a free-text value, the model reads
        that value itself (a pass per token, copied from the question), one pass verifies the rest, and so on.
        Numbers and choices are served only where the model agrees with the aligner (under ``"miss"``); free text,
        which no aligner can place, has the model as its one reader, and the guard judges the whole reading after."""
        engine = self.engine
        assert engine is not None
        values = [draft[p.name] for p in entry.params]
        passes = accepted = drafted = 0
        while not machine.done:
            segment = machine.draft_tokens(values)
            result = engine.forward(feed + segment, state)
            passes += 1
            took, diverged = self._verify(machine, segment, result.hidden[len(feed) - 1 :])
            accepted, drafted = accepted + took, drafted + len(segment)
            if diverged is None:
                break
            token, forced = diverged
            if took == len(segment) and machine.in_value and values[machine.slot] is None:
                slot = machine.slot
                used, state, feed = self._decode(machine, result.state, [token] + forced, values_until=slot + 1)
                passes += used
                conflict = free_text_conflict(machine.values[slot], draft, machine.question)
                if conflict and self.on_disagreement == "miss":
                    raise ExtractionError(MissReason.EXTRACTION_FAILED, conflict)
                continue
            if self.on_disagreement == "miss":
                raise ExtractionError(MissReason.EXTRACTION_FAILED,
                                      f"the model and the aligner disagree on {entry.params[_diverged_slot(machine)].name}")
            passes += self._decode(machine, result.state.truncate(state.length + len(feed) + took), [token] + forced)[0]
        return self._finish(machine, ServingPath.LM_DRAFT, passes, accepted, drafted, t0, t1)

    def _verify(
        self, machine: JsonSlotsConstraint, draft_ids: list[int], hidden_rows: np.ndarray
    ) -> tuple[int, tuple[int, list[int]] | None]:
        """Replay the machine over the draft; returns (tokens accepted, (model's token, forced after it)) at a divergence."""
        engine = self.engine
        assert engine is not None
        position = 0
        while not machine.done:
            for token in machine.forced():
                if position >= len(draft_ids) or draft_ids[position] != token:
                    raise RuntimeError("draft structure disagrees with the constraint")  # programming error
                position += 1
            if machine.done:
                break
            allowed = machine.allowed()
            choice = allowed[0] if len(allowed) == 1 else self._choose(hidden_rows[position], allowed)
            if position < len(draft_ids) and machine.ends_value(choice) and machine.ends_value(draft_ids[position]):
                choice = draft_ids[position]  # both end the value here: spelling '"' or '",' is not a disagreement
            if position >= len(draft_ids) or draft_ids[position] != choice:
                machine.advance(choice)
                return position, (choice, machine.forced())
            machine.advance(choice)
            position += 1
        return position, None

    def _reread(self, entry: EntryPoint, question: str, slots: list[SlotSpec], machine: JsonSlotsConstraint,
                prefix: KVState, suffix_ids: list[int], draft: dict[str, str], draft_ids: list[int],
                hidden_rows: np.ndarray, accepted: int, diverged: tuple[int, list[int]] | None) -> int | None:
        """Forward passes spent when the draft may be served for an impossible reading of the model, else None.

        The model's reading must differ from the draft only in slots that repeat a number it put where the
        draft does too ("120" of the price, again for the years), the question must state that number too
        rarely for that, and the draft must read better to the model than the other repair of the reading:
        the number kept where the model put it and the draft's value moved to the slot it repeated into
        ("bus $161 and ticket $161" repaired as the draft's "bus $18, ticket $161" or as "bus $161, ticket
        $18": the second is the swap a drafting error makes)."""
        engine = self.engine
        assert engine is not None
        passes = 0
        if diverged is not None:  # else the model closed the last value early: its reading is done
            passes += 1 + self._read_on(entry, machine, engine.forward(suffix_ids + draft_ids[:accepted], prefix).state,
                                        diverged, draft)
        reading = machine.result()
        names = [p.name for p in entry.params]
        differ = {n for n in names if reading.get(n) != draft[n]}
        agreed = {reading.get(n) for n in names if n not in differ}
        if not (differ and differ <= _over_used(entry, reading, question, self.pack)
                and all(reading.get(n) in agreed for n in differ) and not _over_used(entry, draft, question, self.pack)):
            return None
        draft_score = self._reading_score(slots, question, draft_ids, hidden_rows)
        for name in differ:
            for partner in (n for n in names if n not in differ and reading.get(n) == reading.get(name)):
                repair = dict(draft)
                repair[name], repair[partner] = reading[name], draft[name]
                try:
                    self._validate(entry, repair, question)
                except ExtractionError:
                    continue
                repair_ids = JsonSlotsConstraint(engine, slots, question.strip()).draft_tokens([repair[n] for n in names])
                rows = engine.forward(suffix_ids + repair_ids, prefix, keep_state=False).hidden[len(suffix_ids) - 1:]
                passes += 1
                if self._reading_score(slots, question, repair_ids, rows) >= draft_score:
                    return None
        return passes

    def _reading_score(self, slots: list[SlotSpec], question: str, ids: list[int], hidden_rows: np.ndarray) -> float:
        """The model's log-probability of a whole answer under the constraint (its decisions only)."""
        total = 0.0
        for machine, position, allowed, token in self._decisions(slots, question, ids):
            if len(allowed) > 1 and token in allowed:
                scores = np.asarray(self._scores(machine, hidden_rows[position], allowed), dtype=np.float64)
                top = scores.max()
                total += scores[allowed.index(token)] - top - np.log(np.exp(scores - top).sum())
        return total

    def _draft_may_serve(self, entry: EntryPoint, draft: dict[str, str], question: str) -> bool:
        """The draft's values are valid and pass ``draft_check`` (true when there is none). Only asked under the miss
        policy, where a ``draft_check`` has already passed the draft before the pass: then nothing is left to ask."""
        if self.draft_check is not None:
            return True
        try:
            self._validate(entry, {p.name: draft[p.name] for p in entry.params}, question)
        except ExtractionError:
            return False
        return True

    def _decisions(self, slots: list[SlotSpec], question: str,
                   ids: list[int]) -> Iterator[tuple[JsonSlotsConstraint, int, list[int], int | None]]:
        """Replay an answer's tokens through a fresh machine: (machine, position, allowed, token) at each
        decision, the machine advanced by the token after the caller has looked; token None past the end."""
        machine = JsonSlotsConstraint(self.engine, slots, question.strip())
        position = 0
        while not machine.done:
            position += len(machine.forced())
            if machine.done:
                break
            token = ids[position] if position < len(ids) else None
            yield machine, position, machine.allowed(), token
            if token is None:
                return
            machine.advance(token)
            position += 1

    def _draft_near_top(self, slots: list[SlotSpec], question: str, draft_ids: list[int], hidden_rows: np.ndarray) -> bool:
        """Every token of the draft is among the model's ``impossible_rereads`` best allowed tokens at its position."""
        assert self.impossible_rereads
        for machine, position, allowed, token in self._decisions(slots, question, draft_ids):
            if token not in allowed:
                return False
            if len(allowed) > 1:
                scores = self._scores(machine, hidden_rows[position], allowed)
                best = allowed[int(np.argmax(scores))]
                if best != token and not (machine.ends_value(best) and machine.ends_value(token)):
                    if int(np.sum(scores > scores[allowed.index(token)])) >= self.impossible_rereads:
                        return False
        return True

    def _scores(self, machine: JsonSlotsConstraint, hidden: np.ndarray, allowed: list[int]) -> np.ndarray:
        """The model's scores of the allowed tokens at one position (``machine`` says where in the answer)."""
        assert self.engine is not None
        return self.engine.scores(hidden, allowed)

    def _read_on(self, entry: EntryPoint, machine: JsonSlotsConstraint, state: KVState,
                 diverged: tuple[int, list[int]], draft: dict[str, str]) -> int:
        """The model's own reading from its first disagreement on (forward passes used), value by value. It stops
        at a value that differs from the draft's and is no other slot's draft value either: such a reading is not
        the impossible one ``impossible_rereads`` serves the draft for, so the rest need not be read."""
        names = [p.name for p in entry.params]
        slot = _diverged_slot(machine)
        passes, feed = 0, [diverged[0]] + diverged[1]
        while True:
            used, state, feed = self._decode(machine, state, feed, values_until=slot + 1)
            passes += used
            if len(machine.values) <= slot:
                return passes
            value = machine.values[slot]
            if value != draft[names[slot]] and value not in {draft[n] for n in names if n != names[slot]}:
                return passes
            if machine.done:
                return passes
            slot += 1

    def _decode(self, machine: JsonSlotsConstraint, state: KVState, feed: list[int],
                values_until: int | None = None) -> tuple[int, KVState, list[int]]:
        """Constrained greedy decoding; each forward pass feeds a decision plus the structure after it.
        Stops when done or once ``values_until`` values are read; returns (passes, state, feed) to go on from."""
        engine = self.engine
        assert engine is not None
        passes = 0
        while not machine.done and (values_until is None or len(machine.values) < values_until):
            result = engine.forward(feed, state)
            passes += 1
            state = result.state
            allowed = machine.allowed()
            choice = allowed[0] if len(allowed) == 1 else self._choose(result.hidden[-1], allowed)
            machine.advance(choice)
            feed = [choice] + machine.forced()
        return passes, state, feed

    def _choose(self, hidden: np.ndarray, allowed: list[int]) -> int:
        if not allowed:
            raise ExtractionError(MissReason.EXTRACTION_FAILED, "no token can continue the answer")
        if len(allowed) == 1:
            return allowed[0]
        assert self.engine is not None
        return allowed[int(np.argmax(self.engine.scores(hidden, allowed)))]

    def _finish(
        self, machine: JsonSlotsConstraint, path: ServingPath, passes: int, accepted: int, drafted: int, t0: float, t1: float
    ) -> Extraction:
        return self._finish_spans(machine.result(), path, passes, accepted, drafted, t0, t1)

    def _finish_spans(
        self, spans: dict[str, str], path: ServingPath, passes: int, accepted: int, drafted: int, t0: float, t1: float
    ) -> Extraction:
        return Extraction(
            values={},
            spans=spans,
            path=path,
            forward_passes=passes,
            draft_tokens_accepted=accepted,
            draft_tokens=drafted,
            timings={"prefix_s": t1 - t0, "decode_s": time.perf_counter() - t1},
        )


def _differs_only_unread(entry: EntryPoint, machine: JsonSlotsConstraint, draft: dict[str, str]) -> bool:
    """The model, checking the draft, first disagrees in a slot the reasoning never reads, and every slot after it
    (which it has not checked) is unread too: it agrees on every value the answer depends on. Its other reading of
    a number the answer ignores ("the first *two* have 200 apartments each" read as "1") changes nothing served;
    the draft's value stays, which the guard has judged."""
    if not entry.unread:
        return False
    names = [p.name for p in entry.params]
    if machine.done:
        reading = machine.result()
        differ = {n for n in names if reading.get(n) != draft[n]}
        return bool(differ) and differ <= entry.unread
    return set(names[_diverged_slot(machine):]) <= entry.unread


def _diverged_slot(machine: JsonSlotsConstraint) -> int:
    """The slot of the model's first disagreement, once the machine has taken its token: the value it began or went
    on with, or the one its token closed (a divergence always starts or closes a value, so one exists)."""
    return len(machine.values) if machine.in_value else len(machine.values) - 1


def _over_used(entry: EntryPoint, spans: dict[str, str], question: str, pack: ReadingPack | None = None) -> set[str]:
    """The slots of a reading that fill more slots with a number than the question states it: "120" for the
    price and for the years of "three years ... $120". One stated number fills one slot: such a reading is impossible."""
    pack = pack if pack is not None else load_pack(None)
    mentions = pack.scan(question)
    slots: dict[float, list[str]] = {}
    for param in entry.params:
        if param.choices is not None or param.type is str or param.type is bool:
            continue
        try:
            value = float(read_param(param, spans.get(param.name, ""), pack.read_quantity))
        except (ParameterValidationError, TypeError, ValueError):
            continue
        slots.setdefault(value, []).append(param.name)
    over: set[str] = set()
    for value, names in slots.items():
        stated = sum(any(same_value(v, value) for v in m.values) for m in mentions)
        if len(names) > 1 and len(names) > stated:
            over.update(names)
    return over

"""Validation with the device's code: an entry is accepted only as the device would run it.

Registers and compiles the rendered entry, matches the original question through the template
fast path, runs the compiled entry against gold, then round trips (other values rendered into the
template, read back, run compiled, compared with the original program) and the independent check.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import math
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from builder.gsm8k import Mention, is_close, replaced_numbers, words_after
from builder.independent import IndependentProgram
from builder.independent_check import Disagreement, bind, check, read_free_slots
from builder.pot_groups import GenerationFailed, GroupPolicy, PotGroup, Validation
from builder.pot_import.matching import MEASURES, sanitise, unit_word
from builder.pot_import.plan import Plan, draw_values, oracle_values
from builder.pot_import.planner import plan_parameters
from builder.pot_import.program import PalProgram, RunTimeout, deadline
from builder.pot_import.render import normalised, render_source
from builder.pot_import.transcripts import Rejected, Transcript
from builder.worked_solution import WORKED_SOLUTION
from edge_runtime.answer.verification import VerificationStatus
from edge_runtime.entries.metadata import format_value
from edge_runtime.errors import ArcError, CompileError, DefinitionError, ExtractionError, UnsafeCodeError
from edge_runtime.route.embedder import Embedder


class ExactEmbedder(Embedder):
    """An embedder under which only identical (normalised) texts are similar.

    Generated entries reference their root and parameters by their exact descriptions, so the
    builder's registry never needs semantic similarity; with this embedder a reference that is not
    exact cannot be resolved by accident (random 256-d unit vectors are nearly orthogonal)."""

    dim = 256

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(normalised(text).encode("utf-8")).digest()[:8], "little")
            vector = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            out[i] = vector / np.linalg.norm(vector)
        return out


@dataclass
class Candidate:
    """A generated entry and what it was generated from."""

    transcript: Transcript
    program: PalProgram
    plan: Plan
    source: str
    entry: Any = None
    compiled: Any = None
    verification: Any = None  # builder.verification.Verification, once validated


@dataclass
class ImportOptions:
    round_trips: int = 5
    #: Rendered variants an entry must agree on with an independent program to be verified.
    independent_variants: int = 8
    alpha: float = 0.8
    max_retries: int = 2
    timeout: float = 1.0
    seed: int = 0
    number_words: str = "parameter"  # or "constant": keep "three" etc. as constants of the entry
    #: Where the row's own program is not trusted with every stated number, try the other authors' programs in its
    #: place (``Importer.import_one``); off: the row's own program only.
    alternatives: bool = True


def _answer_ok(answer: Any, gold: Any) -> bool:
    return gold is not None and is_close(answer, gold)


def describe_exc(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 300 else text[:297] + "..."


def _run_original(program: PalProgram) -> Any:
    try:
        return program.run()
    except RunTimeout as exc:
        raise Rejected("runtime_error", f"the program on the original numbers: {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - third-party code may raise anything
        raise Rejected("runtime_error", f"the program on the original numbers: {describe_exc(exc)}") from exc

#: Operations that make a program's arithmetic depend on a value being whole.
_WHOLE_NUMBER_OPS = (ast.FloorDiv, ast.Mod)
_WHOLE_NUMBER_CALLS = frozenset({"int", "round", "range", "floor", "ceil", "divmod", "trunc"})


def is_measure(question: str, mention: Mention) -> bool:
    after = words_after(question, mention, 1)
    if not after:
        return False
    word = unit_word(after[0])
    return word in MEASURES or (word.endswith("s") and word[:-1] in MEASURES)


def _whole_number_arithmetic(program: PalProgram) -> bool:
    """The program floors, rounds, counts or takes remainders: a decimal value may change its path."""
    for node in ast.walk(program.func):
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, _WHOLE_NUMBER_OPS):
            return True
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in _WHOLE_NUMBER_CALLS:
                return True
    return False


def choose_domains(program: PalProgram, plan: Plan, expected: Any, question: str = "") -> None:
    """Type and minimum of each parameter, checked by running the program (differential oracle)."""
    base = oracle_values(plan.params, {p.name: p.original for p in plan.params})
    loops = any(isinstance(n, (ast.For, ast.While)) for n in ast.walk(program.func))
    whole_arithmetic = _whole_number_arithmetic(program)
    for p in plan.params:
        integral = float(p.original).is_integer() and "." not in p.mention.text and not p.structural
        literal_is_float = any(isinstance(program.literal(lid).value, float) and form == "value" for lid, form in p.literals)
        p.type = int if integral and not literal_is_float else float
        p.original = p.type(p.original)
        if p.type is int and (p.mention.money or p.mention.percent):
            # a price or a percentage may well be a decimal: accept floats if the program agrees
            if _agrees(program, {**base, **p.literal_values(float(p.original))}, expected):
                p.type = float
                p.original = float(p.original)
        if (p.type is int and not p.free and not whole_arithmetic and is_measure(question, p.mention)
                and _runs(program, {**base, **p.literal_values(float(p.original) + 0.5)})):
            # a duration, a length, a weight, a multiplier: "2.5 hours" is the same reasoning
            p.type = float
            p.original = float(p.original)
        base.update(p.literal_values(p.original))
    for p in plan.params:
        # minimum 0, exclusive when the program cannot run at 0 (a divisor, a count that must be positive)
        if float(p.original) < 0:
            p.minimum = None
            continue
        p.minimum = 0
        if not _runs(program, {**base, **p.literal_values(p.type(0))}):
            p.exclusive_minimum = True
            if float(p.original) > 1 and not _runs(program, {**base, **p.literal_values(p.type(1))}):
                p.minimum = 1
        if loops:  # bound the work a loop may do on a device
            p.maximum = p.type(max(1000, 100 * abs(float(p.original))))


def _runs(program: PalProgram, values: dict[int, Any]) -> bool:
    try:
        answer = program.run(values, timeout=min(program.timeout, 0.25))
    except RunTimeout:
        return False
    except Exception:  # noqa: BLE001
        return False
    return _numeric(answer)


def _agrees(program: PalProgram, values: dict[int, Any], expected: Any) -> bool:
    try:
        return is_close(program.run(values, timeout=min(program.timeout, 0.25)), expected)
    except RunTimeout:
        return False
    except Exception:  # noqa: BLE001
        return False


def _numeric(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError, OverflowError):
        return False


class Importer:
    """Turns one transcript into an accepted entry source or a rejection (one MiniCache group)."""

    def __init__(self, options: ImportOptions | None = None) -> None:
        self.options = options or ImportOptions()
        from edge_runtime.read.extractor import Extractor  # imported lazily: it pulls in onnxruntime

        self.extractor = Extractor(None)
        self.embedder = ExactEmbedder()

    # -- group callbacks ------------------------------------------------------------------
    def generate(self, transcripts: Sequence[Transcript], reflections: Sequence[str]) -> Candidate:
        t = transcripts[0]
        frozen = sorted({m.group(1) for r in reflections for m in re.finditer(r"param (\w+)", r)})
        fixed = sorted({m.group(1) for r in reflections for m in re.finditer(r"free slot (\w+)", r)})
        traded = sorted({(int(m.group(1)), int(m.group(2))) for r in reflections
                         for m in re.finditer(r"trade (\d+) (\d+)", r)})
        try:
            program = self._program(t)
            plan = plan_parameters(t.question, program, t.variant, t.docstring, frozen, fixed=fixed, traded=traded,
                                   freeze_derived=not t.check_derived)
            if plan.restored:
                program.set_defaults(plan.restored)
            expected = _run_original(program)
            if not _answer_ok(expected, t.gold):
                raise Rejected("wrong_on_original", f"the program returns {expected!r}, the gold answer is {t.gold!r}")
            if self.options.number_words == "constant":
                words = [p for p in plan.params if p.mention.kind == "word"]
                plan.params = [p for p in plan.params if p.mention.kind != "word"]
                plan.constants += [f"{format_value(p.original)} (the question's word {p.mention.text!r})" for p in words]
            if not any(not p.free for p in plan.params):  # slots the reasoning ignores are not parameters of it
                raise Rejected("no_parameters", "no literal of the program is a number stated in the question"
                               + (f" (kept constant: {'; '.join(plan.constants[:4])})" if plan.constants else ""))
            choose_domains(program, plan, expected, t.question)
            rng = random.Random(f"{self.options.seed}:{t.entry_id}:examples")
            examples = [draw_values(plan, rng) for _ in range(2)]
            for p in plan.params:
                p.examples = tuple(dict.fromkeys(e[p.name] for e in examples if e[p.name] != p.original))
            source = render_source(t, program, plan)
        except Rejected as exc:
            raise GenerationFailed(exc.reason, exc.detail, fatal=True) from exc
        return Candidate(t, program, plan, source)

    def validate(self, candidate: Candidate, generation: Sequence[Transcript], held_out: Sequence[Transcript]) -> Validation:
        try:
            return self._validate(candidate)
        except Rejected as exc:
            return Validation(0, 1, (exc.detail,), fatal=exc.reason)

    def _validate(self, c: Candidate) -> Validation:
        from edge_runtime.entries.compiler import LoadedCompiledEntry, compile_entry
        from edge_runtime.entries.registry import Registry

        t = c.transcript
        registry = Registry(self.embedder)
        try:
            registry.add_source(c.source, f"{t.entry_id}.py", sanitise(t.entry_id))
        except UnsafeCodeError as exc:
            raise Rejected("unsafe_program", f"generated source: {exc}") from exc
        except DefinitionError as exc:
            raise Rejected("runtime_error", f"generated source does not register: {exc}") from exc
        except ArcError as exc:
            raise Rejected("runtime_error", f"generated source does not register: {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - module-level code of the entry raised
            raise Rejected("runtime_error", f"generated source does not load: {describe_exc(exc)}") from exc
        entry = registry.entries[t.entry_id]
        try:
            registry.check_entry(t.entry_id)
        except DefinitionError as exc:
            raise Rejected("template_mismatch", str(exc)) from exc
        try:
            compiled = compile_entry(registry, t.entry_id)
            loaded = LoadedCompiledEntry(compiled.source, sanitise(t.entry_id))
        except (CompileError, ArcError) as exc:
            raise Rejected("runtime_error", f"does not compile: {exc}") from exc
        c.entry, c.compiled = entry, compiled
        # (2) the original question through the template fast path
        try:
            extraction = self.extractor.extract(entry, t.question)
        except ExtractionError as exc:
            raise Rejected("template_mismatch", f"the original question does not match the template: {exc}") from exc
        originals = {p.name: p.original for p in c.plan.params}
        if any(not is_close(extraction.values[k], v, 1e-12) for k, v in originals.items()):
            raise Rejected("template_mismatch", f"extracted {extraction.values} from the original, expected {originals}")
        # (3) the compiled entry on the original values gives the gold answer
        answer = self._run_compiled(loaded, extraction.values)
        if isinstance(answer, BaseException):
            raise Rejected("runtime_error", f"compiled entry on the original: {describe_exc(answer)}")
        if not _answer_ok(answer, t.gold):
            raise Rejected("wrong_on_original", f"compiled entry answers {answer!r}, gold {t.gold!r}")
        # (4) round trips against the original program (differential oracle)
        validation = self._round_trips(c, entry, loaded)
        if validation.fatal is not None or not validation.total or validation.pass_rate < self.options.alpha:
            return validation
        # (5) agreement with an independent program on rendered variants
        return self._independent(c, loaded) or validation

    def _independent(self, c: Candidate, loaded: Any) -> Validation | None:
        """None when the entry agrees with an independent program (or none can check it): c.verification says which."""
        t = c.transcript
        bound = bind(t.question, t.gold, t.independent, self.options.timeout)
        rng = random.Random(f"{self.options.seed}:{t.entry_id}:independent")
        found = check(c.plan, bound, lambda values: self._run_compiled(loaded, values),
                      variants=self.options.independent_variants, rng=rng, question=t.question, program=c.program)
        if isinstance(found, Disagreement):
            if found.traded:  # the retry plans the pair the other way round, and is checked as any plan is
                return Validation(0, 1, found.failures, reason="independent_disagreement")
            if not found.blamed:
                return Validation(0, 1, (found.example,), fatal="independent_disagreement")
            return Validation(0, 1, found.failures, reason="independent_disagreement")
        if read := read_free_slots(c.plan, bound, rng):  # a number the entry ignores that another program needs
            return Validation(0, 1, tuple(f"free slot {name}: {source} reads its number and answers otherwise with it"
                                          for name, source in read.items()), reason="independent_disagreement")
        c.verification = found
        return None

    def _run_compiled(self, loaded: Any, values: dict[str, Any]) -> Any:
        try:
            with deadline(self.options.timeout):
                return loaded.run(values).result.get("answer")
        except RunTimeout as exc:
            return exc
        except Exception as exc:  # noqa: BLE001
            return exc

    def _round_trips(self, c: Candidate, entry: Any, loaded: Any) -> Validation:
        rng = random.Random(f"{self.options.seed}:{c.transcript.entry_id}:round-trip")
        passed, total, failures = 0, 0, []
        attempts = 0
        while total < self.options.round_trips and attempts < 6 * self.options.round_trips:
            attempts += 1
            values = draw_values(c.plan, rng)
            try:
                expected = c.program.run(oracle_values(c.plan.params, values))
            except (Exception, RunTimeout):  # noqa: BLE001 - outside the program's own domain: draw again
                continue
            if not _numeric(expected):
                continue
            total += 1
            ok, why = self._one_round_trip(entry, loaded, values, expected)
            if ok:
                passed += 1
            else:
                failures.append(why)
        if total == 0:
            return Validation(0, 0, ("the original program fails on every drawn value",))
        if passed / total < self.options.alpha:
            failures = self._blame(c, entry, loaded, rng) or failures
        return Validation(passed, total, tuple(failures))

    def _one_round_trip(self, entry: Any, loaded: Any, values: dict[str, Any], expected: Any) -> tuple[bool, str]:
        question = entry.render(values)
        try:
            extraction = self.extractor.extract(entry, question)
        except ExtractionError as exc:
            return False, f"extraction failed for {values}: {exc.detail}"
        if any(not is_close(extraction.values.get(k), v, 1e-12) for k, v in values.items()):
            wrong = [k for k, v in values.items() if not is_close(extraction.values.get(k), v, 1e-12)]
            return False, "; ".join(f"param {k} extracted as {extraction.values.get(k)!r}, rendered {values[k]!r}" for k in wrong)
        answer = self._run_compiled(loaded, extraction.values)
        if isinstance(answer, BaseException):
            return False, f"compiled entry failed for {values}: {describe_exc(answer)}"
        if not is_close(answer, expected):
            return False, f"compiled entry answered {answer!r}, the original program {expected!r} for {values}"
        return True, ""

    def _blame(self, c: Candidate, entry: Any, loaded: Any, rng: random.Random) -> list[str]:
        """Vary one parameter at a time to name the ones that break the round trip."""
        blamed = []
        for p in c.plan.params:
            values = {q.name: q.original for q in c.plan.params}
            values[p.name] = draw_values(c.plan, rng)[p.name]
            try:
                expected = c.program.run(oracle_values(c.plan.params, values))
            except (Exception, RunTimeout):  # noqa: BLE001
                continue
            ok, why = self._one_round_trip(entry, loaded, values, expected)
            if not ok:
                blamed.append(f"param {p.name}: {why}")
        return blamed

    # -- one transcript --------------------------------------------------------------------
    def import_one(self, t: Transcript) -> ImportResult:
        """The transcript's own program as an entry; where that program cannot be trusted with every number the
        question states (a parameter kept constant or held fixed, unverified, or rejected), each independent
        program for the same question is tried in its place, checked against the others and the row's own
        program, and the verified entry that verification trusts with the most numbers is kept (an unverified
        alternative never replaces the row's own program, nor stands in for its rejection).

        Why: a PAL program that writes a stated number as a literal twice, or computes one from another, loses
        those parameters to its own round trips, while another author's program for the question may read them
        all; agreement with the remaining programs on rendered variants is what trusts it, as for the row's own.

        Last, where the kept import holds a parameter constant only because a constant of its program may have been
        computed from it (the planner's suspicion, by arithmetic on the values alone: "4" of "every 15 minutes" for
        an hour, but also of "60 snowballs" / 15), the same program is imported once more with those parameters
        varying, and kept only if verified and trusted with more numbers: a constant that was computed from one of
        them makes the entry disagree with every program that reads it, which freezes it on the retry, and one that
        merely shares a value varies only where an agreeing program computes it from the question's numbers alone
        (:mod:`builder.independent_vouch`)."""
        result, chosen = self._import_group(t), t
        if not t.independent:
            return result
        for alternative in self._alternatives(t) if self.options.alternatives else ():
            if _reads_every_number(result):
                break  # nothing left to gain
            try:
                tried = self._import_group(alternative)
            except Exception:  # noqa: BLE001 - another author's program failing in a new way costs only itself
                continue
            if _trust(tried)[0] == 1 and _trust(tried) > _trust(result):  # only verified, never a guess
                result, chosen = tried, alternative
        if self._suspects_frozen(chosen):
            tried = self._import_group(dataclasses.replace(chosen, check_derived=True))
            if _trust(tried)[0] == 1 and _trust(tried) > _trust(result):
                result = tried
        return result

    def _suspects_frozen(self, t: Transcript) -> bool:
        """Whether the planner keeps a parameter of ``t``'s program constant for the suspicion alone that a constant
        was computed from it."""
        try:
            program = self._program(t)
            return bool(plan_parameters(t.question, program, t.variant, t.docstring).derived)
        except Exception:  # noqa: BLE001 - a program that cannot be planned was imported (or rejected) as it is
            return False

    def _alternatives(self, t: Transcript) -> Iterator[Transcript]:
        """Every other author's program in place of the row's own (not the worked solution: a checker only, as an
        entry it gained nothing measurable and names worse), each checked by all the others and by the row's own
        program with its GSM-Hard numbers mapped back to the original question's."""
        try:
            program = self._program(t)
            program.set_defaults(plan_parameters(t.question, program, t.variant, t.docstring).restored)
            own = IndependentProgram(PAL_PROGRAM, program.code)
        except Exception:  # noqa: BLE001 - a row's own program that cannot be read checks nothing
            own = None
        authors = [a for a in (own, *t.independent) if a is not None]
        for i, other in enumerate(authors):
            if other.source not in (PAL_PROGRAM, WORKED_SOLUTION):
                yield dataclasses.replace(t, code=other.code, variant="", docstring="", program_source=other.source,
                                          independent=tuple(authors[:i] + authors[i + 1:]))

    def _program(self, t: Transcript) -> PalProgram:
        """The transcript's program, a GSM-Hard variant's constant expressions folded to the literal it replaced."""
        program = PalProgram(t.code, timeout=self.options.timeout)
        if t.variant and t.variant.strip() != (t.docstring or t.question).strip():
            program.fold_constants([r.variant_value for r in replaced_numbers(t.variant, t.question)])
        return program

    def _import_group(self, t: Transcript) -> ImportResult:
        policy = GroupPolicy(alpha=self.options.alpha, nu=1, max_retries=self.options.max_retries, max_build_failures=1)
        group: PotGroup[Transcript, Candidate] = PotGroup(t.entry_id, policy, self.generate, self.validate)
        outcome = group.add(t)
        assert outcome is not None
        if outcome.accepted is not None:
            c = outcome.accepted
            last = outcome.attempts[-1].validation
            return ImportResult(
                row=t.row, id=t.entry_id, accepted=True, source=c.source,
                info={
                    "row": t.row, "reference_row": t.ref_index, "join": t.join, "question": t.question,
                    "gold": t.gold, "params": [p.name for p in c.plan.params],
                    "frozen": c.plan.frozen, "attempts": len(outcome.attempts),
                    **({"suspects": sorted(c.plan.suspects)} if c.plan.suspects else {}),
                    "program": t.program_source or "own",
                    "read_params": [p.name for p in c.plan.params if not p.free],
                    "unexplained_constants": c.plan.unexplained, "unused_question_numbers": c.plan.unused_mentions,
                    "round_trip": f"{last.passed}/{last.total}" if last else "",
                    "compiled_sha256": c.compiled.sha256 if c.compiled is not None else "",
                    "verification": c.verification.to_dict() if c.verification is not None else None,
                    **({"traded": [list(pair) for pair in c.plan.traded]} if c.plan.traded else {}),
                },
            )
        return ImportResult(
            row=t.row, id=t.entry_id, accepted=False, reason=outcome.reason or "runtime_error",
            detail=outcome.detail, info={"attempts": len(outcome.attempts)},
        )


#: The independent source name the row's own program takes when another program is tried in its place.
PAL_PROGRAM = "pal_program"


def _trust(result: ImportResult) -> tuple[int, int, int]:
    """How far verification trusts an import: verified or not, then the numbers its reasoning reads that were checked
    (not a free slot, which no program reads, nor one held fixed), then all of them."""
    if not result.accepted:
        return (-1, 0, 0)
    verification = result.info.get("verification") or {}
    read = result.info.get("read_params") or []
    verified = VerificationStatus.from_record(verification) is VerificationStatus.VERIFIED
    checked = len(set(read) - set(verification.get("fixed") or ())) if verified else 0
    return (int(verified), checked, len(read))


def _reads_every_number(result: ImportResult) -> bool:
    """An accepted, verified entry that keeps no parameter constant and holds none fixed: nothing to gain."""
    if not result.accepted:
        return False
    verification = result.info.get("verification") or {}
    return (VerificationStatus.from_record(verification) is VerificationStatus.VERIFIED
            and not result.info.get("frozen") and not verification.get("fixed"))


@dataclass
class ImportResult:
    row: int
    id: str | None
    accepted: bool
    source: str = ""
    reason: str | None = None
    detail: str = ""
    info: dict[str, Any] = field(default_factory=dict)

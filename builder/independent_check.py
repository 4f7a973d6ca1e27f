"""Independent agreement before an entry is trusted (the paper's round trip against another solver).

An entry is *verified* when, on K rendered variants (every parameter varied, values from each
parameter's domain), its compiled program's answers equal an independent solution of the same
variant. For an imported Program-of-Thought entry the independent solution is a second program
written by someone else for the same question (:mod:`builder.independent`), bound to the question's
numbers the way the entry's own program is: both programs' literals are mapped to the question's
mentions by :func:`builder.pot_import.planner.plan_parameters`, so a variant's value for a mention goes
to whichever literal each program reads it from.

When no independent program reads every number the entry varies, the programs that read the most of
them check it *within a scope*: the numbers a program does not read keep their original values on every
variant, and an agreement verifies the entry for questions that keep them (``Verification.fixed``; the
device answers outside it as unverified, or misses in a verified-only bundle).

A disagreement names the parameters involved (varying one at a time): the importer keeps them
constant and tries again (MiniCache's reflection), and rejects the entry when no parameter can be
blamed. An entry with no usable independent program is accepted as ``unverified``; whether a bundle
carries it is the bundle's policy.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from builder.gsm8k import is_close
from builder.independent import IndependentProgram
from builder.independent_vouch import unvouched_guesses
from builder.pot_import.matching import similarity
from builder.pot_import.plan import ParamPlan, Plan, draw_values, oracle_values
from builder.pot_import.planner import plan_parameters
from builder.pot_import.program import PalProgram, RunTimeout, close_to
from builder.pot_import.transcripts import Rejected
from builder.prose_units import doubtful_binding, nouns_after_numbers
from builder.verification import Verification
from builder.worked_solution import WORKED_SOLUTION
from edge_runtime.answer.verification import VerificationStatus

#: Variants a verified entry must agree on (the issue's K >= 8).
DEFAULT_VARIANTS = 8
#: Relative tolerance of an agreement: two programs that round differently at the 6th digit agree.
AGREEMENT_TOLERANCE = 1e-6


@dataclass
class Disagreement:
    """The entry and every applicable independent program answer a variant differently."""

    failures: tuple[str, ...]  # "param NAME: ..." for each blamed parameter (reflections for a retry)
    blamed: tuple[str, ...]
    example: str  # one disagreeing variant, for the rejection detail
    #: Pairs of mentions of one value (their starts) that the entry's plan should trade: with them traded the
    #: entry agrees with every program that checks it (``_traded_agreement``); the retry plans them so.
    traded: tuple[tuple[int, int], ...] = ()


@dataclass
class BoundProgram:
    """An independent program with its literals mapped to the question's mentions."""

    source: str
    program: PalProgram
    plan: Plan
    by_span: dict[tuple[int, int], ParamPlan] = field(default_factory=dict)
    #: mention span -> why this program's binding there is doubtful (its prose counts something else
    #: with that number, builder.prose_units): it may disagree there, but not be the source that agrees.
    doubtful: dict[tuple[int, int], str] = field(default_factory=dict)

    def reads(self, p: ParamPlan) -> bool:
        """Whether this program reads the number(s) of the question the entry's ``p`` stands for."""
        return bool(self.params_for(p))

    def doubts(self, params: Sequence[ParamPlan]) -> list[str]:
        """Why this program cannot be the agreeing source on variants that vary ``params`` (none: it can)."""
        return [self.doubtful[(m.start, m.end)] for p in params for m in (p.mention, *p.mentions)
                if (m.start, m.end) in self.doubtful]

    def params_for(self, p: ParamPlan) -> list[ParamPlan]:
        """This program's parameters that read the same mention(s) of the question as ``p``."""
        spans = {(m.start, m.end) for m in (p.mention, *p.mentions)}
        seen: list[ParamPlan] = []
        for span in spans:
            q = self.by_span.get(span)
            if q is not None and q not in seen:
                seen.append(q)
        return seen

    def answer(self, params: Sequence[ParamPlan], values: Mapping[str, Any]) -> Any:
        """This program's answer to the variant where each of ``params`` takes ``values[name]``."""
        return self.program.run(self._literals(params, values))

    def poses(self, params: Sequence[ParamPlan], values: Mapping[str, Any]) -> bool:
        """Whether the variant leaves whole every quotient this program computes whole on the original question
        (:meth:`PalProgram.fractional_quotients`)."""
        return _poses(self.program, self._literals(params, values), self._fractional_originally)

    @cached_property
    def _fractional_originally(self) -> frozenset[int] | None:
        return _fractional_originally(self.program)

    def _literals(self, params: Sequence[ParamPlan], values: Mapping[str, Any]) -> dict[int, Any]:
        literals: dict[int, Any] = {}
        for p in params:
            natural = _natural(p, values[p.name])
            for q in self.params_for(p):
                literals.update(q.literal_values(_from_natural(q, natural)))
        return literals


def _fractional_originally(program: PalProgram) -> frozenset[int] | None:
    """The quotients ``program`` leaves fractional on the original question (None: it fails there), read once."""
    try:
        return program.fractional_quotients()
    except (Exception, RunTimeout):  # noqa: BLE001
        return None


def _poses(program: PalProgram, literals: dict[int, Any], originally: frozenset[int] | None) -> bool:
    """``program`` on ``literals`` makes no quotient fractional that is whole on the original question
    (``originally``: :func:`_fractional_originally`)."""
    if originally is None:
        return False
    try:
        return not (program.fractional_quotients(literals) - originally)
    except (Exception, RunTimeout):  # noqa: BLE001 - a program that fails poses nothing
        return False


def _natural(p: ParamPlan, value: Any) -> Any:
    """The number the question states for a parameter value (a reciprocal reading stores 1/x)."""
    return 1 / value if p.reading == "reciprocal" and value else value


def _from_natural(q: ParamPlan, natural: Any) -> Any:
    value = 1 / natural if q.reading == "reciprocal" and natural else natural
    return q.type(value) if q.type is int and float(value).is_integer() else value


def bind(question: str, gold: Any, programs: Sequence[IndependentProgram], timeout: float) -> list[BoundProgram]:
    """The independent programs that parse, validate, are right on the original and read at least one number."""
    bound = []
    for ip in programs:
        try:
            program = PalProgram(ip.code, timeout=timeout)
            if not is_close(program.run(), gold):
                continue
            plan = plan_parameters(question, program, freeze_derived=False)
        except (Rejected, RunTimeout, Exception):  # noqa: BLE001 - an unusable second program is simply not used
            continue
        by_span = {}
        for q in plan.params:
            for m in (q.mention, *q.mentions):
                by_span.setdefault((m.start, m.end), q)
        if by_span:
            bound.append(BoundProgram(ip.source, program, plan, by_span, _doubtful(question, plan, ip.prose)))
    return bound


def _doubtful(question: str, plan: Plan, prose: str) -> dict[tuple[int, int], str]:
    """The mentions a program with prose is bound to by a number its prose says counts something else."""
    if not prose:
        return {}
    nouns = nouns_after_numbers(prose)
    out = {}
    for q in plan.params:
        for m in (q.mention, *q.mentions):
            why = doubtful_binding(question, m, float(q.original), nouns)
            if why:
                out[(m.start, m.end)] = why
    return out


RunEntry = Callable[[dict[str, Any]], Any]  # the compiled entry on parameter values: its answer or the exception


def check(plan: Plan, bound: Sequence[BoundProgram], run_entry: RunEntry, *, variants: int = DEFAULT_VARIANTS,
          rng: random.Random, question: str = "", program: PalProgram | None = None) -> Verification | Disagreement:
    """Compare the entry with the independent programs that can check it on ``variants`` rendered variants.

    A program is applicable when it reads every number the entry's reasoning reads (each non-free
    parameter's mention); numbers it reads that the entry keeps constant stay at their original.
    When none is, the programs that read the most of those numbers (at least one) check the entry
    *within a scope*: on variants where the parameters a program does not read keep their original
    values, and an agreement is recorded with them as ``fixed`` (the device serves the entry as
    verified only for questions that keep them). Variants where either side cannot run (outside a
    program's domain) are drawn again. Verified means one checking program agrees and the
    reference's own worked solution, where it can check, does not disagree: a second model-written
    program that disagrees is more often wrong itself (on the GSM8K import, requiring every program
    to agree narrowed 359 entries and lost 49), but the human solution that reached the gold answer
    is the better judge when two programs share a mistake. A program whose prose counts something
    else with a number it is bound to (builder.prose_units) may disagree but never be the one that agrees; nor may one
    that binds two numbers of one value by the same guess as the entry, when a program that writes them apart
    disagrees (``_guessed_pairs``). With the entry's ``program`` and ``question``, a program whose disagreement is
    its own guess of which of two literals of one value reads which mention does not disagree
    (``_rebinding_agrees``)."""
    params = list(plan.params)
    varied = [p for p in params if not p.free]
    poses = _entry_poses(program, plan) if program is not None else None
    if not bound:
        return Verification(VerificationStatus.UNVERIFIED, "no independent program right on the original question")
    read = {id(b): [p for p in varied if b.reads(p)] for b in bound}
    most = max(len(r) for r in read.values())
    if most == 0:
        return Verification(VerificationStatus.UNVERIFIED, "no independent program reads a number the entry varies")
    checking = [b for b in bound if len(read[id(b)]) == most]
    fixed_of = {id(b): tuple(p.name for p in varied if p not in read[id(b)]) for b in checking}
    disagreeing: list[tuple[BoundProgram, str]] = []
    agreeing: list[tuple[BoundProgram, int]] = []
    short: list[str] = []
    doubted: list[str] = []
    for b in checking:
        compared, wrong = _compare(b, params, run_entry, _holding(plan, fixed_of[id(b)], rng), variants, poses)
        if wrong:
            disagreeing.append((b, wrong))
        elif compared < variants:
            short.append(f"{b.source} ran on {compared} variants only")
        elif b.doubts(read[id(b)]):
            doubted.append(f"{b.source} agrees but {b.doubts(read[id(b)])[0]}")
        else:
            agreeing.append((b, compared))
    if program is not None and agreeing:  # with nothing agreeing, the disagreement freezes as before
        for b, why in list(disagreeing):
            if rebound := _rebinding_agrees(question, program, b, params, run_entry,
                                            _holding(plan, fixed_of[id(b)], rng), variants):
                disagreeing.remove((b, why))
                doubted.append(f"{b.source} disagrees only by its guess: it agrees with {rebound} traded")
        for b, why in list(disagreeing):
            if guessed := _disagrees_only_where_it_guesses(question, plan, b, params, run_entry,
                                                           fixed_of[id(b)], rng, variants, poses):
                disagreeing.remove((b, why))
                doubted.append(f"{b.source} disagrees only where it reads {guessed} by a guess")
    for b, why in list(disagreeing):  # a pair the import traded on other programs' evidence: a guess judges nothing
        if pair := next(((a, c) for a, c in _traded_spans(plan) if _guesses_pair(question, b, a, c)), None):
            disagreeing.remove((b, why))
            doubted.append(f"{b.source} binds the traded pair at {pair[0][0]} and {pair[1][0]} by a guess")
    if guessed := _guessed_pairs(plan, run_entry, disagreeing):
        # a program that writes two equal-valued numbers apart ("0.5" for half, "2" for the two extra) and disagrees
        # outweighs those that bind them by the planner's guess, as the entry does: their agreement confirms nothing
        for b, compared in list(agreeing):
            if shared := _shares_a_guess(b, guessed):
                agreeing.remove((b, compared))
                doubted.append(f"{b.source} agrees but binds {shared} tells them apart and disagrees")
    if disagreeing and not agreeing and most == len(varied) and program is not None:
        if trade := _traded_agreement(question, plan, checking, run_entry, variants, poses):
            (p, q), why = trade
            return Disagreement((f"trade {p.mention.start} {q.mention.start}: {why}",), (), disagreeing[0][1],
                                ((p.mention.start, q.mention.start),))
    vetoes = [b for b, _ in disagreeing if b.source == WORKED_SOLUTION]
    if agreeing and not vetoes and (unvouched := unvouched_guesses(plan, [b for b, _ in agreeing], question, program)):
        return Disagreement(tuple(f"param {p.name}: {why}" for p, why in unvouched), tuple(p.name for p, _ in unvouched),
                            unvouched[0][1])
    if agreeing and not vetoes:
        fixed = fixed_of[id(agreeing[0][0])]
        names = tuple(b.source for b, _ in agreeing if fixed_of[id(b)] == fixed)
        count = agreeing[0][1]
        scope = f" with {', '.join(fixed)} at the original (no program reads them)" if fixed else ""
        return Verification(VerificationStatus.VERIFIED, f"agrees with {', '.join(names)} on {count} of {count} "
                            f"variants{scope}", names, count, fixed)
    if disagreeing and most < len(varied):
        # A program that reads only some of the entry's numbers is weaker evidence against it than for it: its
        # disagreement leaves the entry unverified, as before partial checks, and freezes nothing (on the 12-05
        # import, freezing on it cost gsm8k-1133 three right parameters through a worked solution that reads
        # "twice" as the beach's 2 miles, and 20 GSM-Symbolic rows with them).
        return Verification(VerificationStatus.UNVERIFIED, f"a program that reads only some of its numbers "
                            f"disagrees: {disagreeing[0][1]}")
    if not disagreeing:
        if not short and not doubted and most < len(varied):
            return Verification(VerificationStatus.UNVERIFIED,
                                "no independent program reads every number the entry varies")
        return Verification(VerificationStatus.UNVERIFIED, "; ".join(short + doubted))
    blamed, failures, guessed_only = [], [], set()
    for p in params:
        def one_changed(p: ParamPlan = p) -> dict[str, Any]:
            values = {q.name: q.original for q in params}
            values[p.name] = draw_values(plan, rng)[p.name]
            return values

        # a program is asked only about a parameter it reads (or one the entry leaves free): varying one it
        # holds constant would set the two apart by construction
        setting_apart = [(b, why) for b, why in ((b, _compare(b, params, run_entry, one_changed, 3, poses)[1])
                                                 for b, _ in disagreeing if p.name not in fixed_of[id(b)]) if why]
        if setting_apart:  # any disagreeing program that this parameter alone sets apart
            blamed.append(p.name)
            failures.append(f"param {p.name}: {setting_apart[0][1]}")
            if question and all(_guesses_mention(question, plan, b, p) for b, _ in setting_apart):
                guessed_only.add(p.name)
    if guessed_only and len(guessed_only) < len(blamed):
        # Blamed only by programs that read its number by a guess between two mentions of one value: the retry keeps
        # the others constant and checks this one again, where more programs may read every number that still
        # varies (one that wrote the other's number as its own constant could not check before) and a program whose
        # names tell the pair apart judges it. Frozen with the rest only when nothing else is blamed.
        kept = [(name, why) for name, why in zip(blamed, failures) if name not in guessed_only]
        blamed, failures = [name for name, _ in kept], [why for _, why in kept]
    return Disagreement(tuple(failures), tuple(blamed), disagreeing[0][1])


def _disagrees_only_where_it_guesses(question: str, plan: Plan, b: BoundProgram, params: Sequence[ParamPlan],
                                     run_entry: RunEntry, fixed: Sequence[str], rng: random.Random, variants: int,
                                     poses: Callable[[dict[str, Any]], bool] | None) -> str:
    """The mentions (described) ``b`` reads by a guess, when ``b`` agrees with the entry on every variant that keeps
    them at their original values; else "".

    "40 employees ... a 40-hour workweek", and a worked solution's "15 * 40 = 600 ... 40 * 2400": nothing tells
    which of its 40s is the workweek, so the planner's binding may cross them, and a crossed binding that groups
    its literals differently from the entry's cannot be traded back (:func:`_rebinding_agrees`). Its disagreement
    on those numbers says nothing, and where it agrees on every other number it neither vetoes nor freezes; it is
    not counted as agreeing either, so the guessed numbers vary only where another program agrees, and a guessed
    tie of the entry's own still needs an agreeing program whose names prefer it
    (:func:`builder.independent_vouch.guessed_twins`)."""
    guessed = [p for p in params if not p.free and b.reads(p) and _guesses_mention(question, plan, b, p)]
    if not guessed:
        return ""
    held = tuple(dict.fromkeys([*fixed, *(p.name for p in guessed)]))
    if all(p.free or p.name in held for p in params):
        return ""  # nothing else left to agree on
    compared, wrong = _compare(b, params, run_entry, _holding(plan, held, rng), variants, poses)
    if compared < variants or wrong:
        return ""
    return " and ".join(repr(p.mention.text) for p in guessed)


def _guesses_mention(question: str, plan: Plan, b: BoundProgram, p: ParamPlan) -> bool:
    """``b`` reads ``p``'s mention by a guess: another varied parameter's mention states the same value (or is read as
    it: "2 hot dogs ... half" as 2) and ``b`` reads the two from literals of one value with no name that prefers its
    binding (:func:`_guesses_pair`), or from one literal ("2 + 1" of "1 king bed ... 1 king set at a time", joined as
    repeats of one number): where the entry sets the two apart, which of them that literal follows is the planner's
    guess."""
    a = (p.mention.start, p.mention.end)
    return any(q is not p and not q.free and (close_to(float(p.mention.value), float(q.mention.value))
                                              or close_to(float(p.original), float(q.original)))  # "2 ... half"
               and (_guesses_pair(question, b, a, c := (q.mention.start, q.mention.end)) or _joins(b, a, c))
               for q in plan.params)


def _joins(b: BoundProgram, a: tuple[int, int], c: tuple[int, int]) -> bool:
    """``b`` reads the two mentions (spans) through one parameter of its own."""
    x = b.by_span.get(a)
    return x is not None and x is b.by_span.get(c)


def read_free_slots(plan: Plan, bound: Sequence[BoundProgram], rng: random.Random, tries: int = 3) -> dict[str, str]:
    """The entry's free slots (numbers its reasoning does not read) whose number another author's program reads
    and answers differently with: slot name -> that program's source.

    A number no literal of the entry reads is a free slot: the device reads it only so that the guard knows the
    number belongs to the question, and serves whatever value the question gives. That is right for a detail the
    answer does not depend on ("80 pop in the first 30 seconds", "2 days later") and wrong for a count the program
    wrote into its structure ("the first two have 200 apartments each": ``apartments_1 + apartments_2``): there a
    question with "the first three" would be served the answer for two. An independent program that reads the
    number and changes its answer with it says which kind it is; its slot must then keep its original value (the
    importer drops it, and the number stays part of the template's text)."""
    out: dict[str, str] = {}
    for p in (p for p in plan.params if p.free):
        reader = next((b for b in bound if b.reads(p) and not b.doubts([p]) and _moves_with(b, plan, p, rng, tries)),
                      None)
        if reader is not None:
            out[p.name] = reader.source
    return out


def _moves_with(b: BoundProgram, plan: Plan, p: ParamPlan, rng: random.Random, tries: int) -> bool:
    """``b``'s answer changes when ``p`` alone takes another value (on one of ``tries`` draws)."""
    originals = {q.name: q.original for q in plan.params}
    try:
        base = b.answer(plan.params, originals)
    except (Exception, RunTimeout):  # noqa: BLE001 - outside this program's domain: it says nothing
        return False
    if not _plain_number(base):
        return False
    for _ in range(tries):
        values = {**originals, p.name: draw_values(plan, rng)[p.name]}
        try:
            got = b.answer(plan.params, values)
        except (Exception, RunTimeout):  # noqa: BLE001
            continue
        if _plain_number(got) and not is_close(base, got, AGREEMENT_TOLERANCE):
            return True
    return False


def _plain_number(x: Any) -> bool:
    """A number an answer can be compared as (not a bool, which is an int to Python)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _equal_literals(p: ParamPlan, q: ParamPlan) -> bool:
    """Two parameters whose program literals hold one value: which reads which mention is the planner's guess."""
    return bool({float(v) for v in p.literal_values(p.original).values()}
                & {float(v) for v in q.literal_values(q.original).values()})


def _guessed_pairs(plan: Plan, run_entry: RunEntry, disagreeing: Sequence[tuple[BoundProgram, str]],
                   tries: int = 6) -> list[tuple[ParamPlan, ParamPlan, str]]:
    """The entry's pairs of varied parameters that the planner told apart by a guess (their literals hold one value on
    the original question: "half" as the 2 of ``* 2``, "two extra" as the 2 of ``- 2``), that matter (the answer
    changes when the two trade values) and that a disagreeing program binds to literals of different values, so it
    read them apart: (p, q, that program's source). (Literals in the value's own form only: a percent
    or a converted unit cannot trade with a plain number.)"""
    apart = [b for b, _ in disagreeing]
    plain = [p for p in plan.params if not p.free and all(form == "value" for _, form in p.literals)]
    rng = random.Random(0)  # its own draws: the check's variants stay those it would draw without this
    out: list[tuple[ParamPlan, ParamPlan, str]] = []
    for i, p in enumerate(plain):
        for q in plain[i + 1:]:
            if not _equal_literals(p, q):
                continue
            tells = next((b for b in apart if _binds_apart(b, p, q)), None)
            if tells is None:
                continue
            for _ in range(tries):
                values = draw_values(plan, rng)
                traded = {**values, p.name: _as(p, values[q.name]), q.name: _as(q, values[p.name])}
                a, b = run_entry(values), run_entry(traded)
                if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
                        and not is_close(a, b, AGREEMENT_TOLERANCE):
                    out.append((p, q, tells.source))
                    break
    return out


def _binds_apart(b: BoundProgram, p: ParamPlan, q: ParamPlan) -> bool:
    """This program reads both parameters' numbers, from literals of different values."""
    ours, theirs = b.params_for(p), b.params_for(q)
    return bool(ours and theirs) and not any(x is y or _equal_literals(x, y) for x in ours for y in theirs)


def _as(p: ParamPlan, value: Any) -> Any:
    return int(value) if p.type is int and float(value).is_integer() else value


def _shares_a_guess(b: BoundProgram, guessed: Sequence[tuple[ParamPlan, ParamPlan, str]]) -> str:
    """The first guessed pair (``_guessed_pairs``) this program binds to two literals of one value as well, so the
    planner chose for it on the same evidence as for the entry, named with the program that told them apart ("")."""
    for p, q, source in guessed:
        ours, theirs = b.params_for(p), b.params_for(q)
        if ours and theirs and any(x is not y and _equal_literals(x, y) for x in ours for y in theirs):
            return f"{p.mention.text!r} and {q.mention.text!r} as the entry does, by the same guess, and {source}"
    return ""


def _rebinding_agrees(question: str, program: PalProgram, b: BoundProgram, params: Sequence[ParamPlan],
                      run_entry: RunEntry, draw: Callable[[], dict[str, Any]], variants: int) -> str:
    """The pair of mentions (described) whose trade explains ``b``'s disagreement, or "".

    Two mentions of one value ("2 houses ... 2 windows each") read by two literals of one value: which literal reads
    which is the planner's guess unless a variable name the program's author wrote tells them apart. A GSM8K worked
    solution has no such names ("3 * 2 = 6", "10 * 2 = 20"), so the planner binds its pair by order, and a crossed
    guess disagrees with a right entry on every variant that sets the two apart. Its disagreement is explained, and
    vetoes or freezes nothing, when the entry's own variable names prefer the entry's binding
    (:func:`builder.pot_import.matching.similarity`), ``b``'s names do not prefer its own, and ``b`` with the pair
    traded agrees with the entry on ``variants`` variants. The traded program is not counted as agreeing: only where
    another program agrees is a disagreement explained (the entry is then verified with the pair varying); otherwise
    it freezes the pair as any disagreement does, so no entry loses its verification to this."""
    varied = [p for p in params if not p.free and not p.mentions]
    for i, p in enumerate(varied):
        for q in varied[i + 1:]:
            a, c = (p.mention.start, p.mention.end), (q.mention.start, q.mention.end)
            if a == c or not close_to(float(p.mention.value), float(q.mention.value)):
                continue
            x, y = b.by_span.get(a), b.by_span.get(c)
            if x is None or y is None or x is y or not _equal_literals(x, y):
                continue
            if (_name_preference(question, program, p, q) or 0) <= 0 or (_name_preference(question, b.program, x, y) or 0) > 0:
                continue
            trade = BoundProgram(b.source, b.program, b.plan, {**b.by_span, a: y, c: x}, b.doubtful)
            compared, wrong = _compare(trade, params, run_entry, draw, variants)
            if compared >= variants and not wrong:
                return f"{p.mention.text!r} and {q.mention.text!r}"
    return ""


def _traded_agreement(question: str, plan: Plan, checking: Sequence[BoundProgram], run_entry: RunEntry,
                      variants: int, poses: Callable[[dict[str, Any]], bool] | None
                      ) -> tuple[tuple[ParamPlan, ParamPlan], str] | None:
    """A pair of the entry's parameters whose mentions state one value that every checking program agrees with once
    the two trade mentions: ((p, q), why), or None.

    "which took her 4 hours ... 4 hours longer than the time Amalia took": the program's ``amalia_time = 4`` and its
    inline ``+ 4`` read two mentions of 4, and the planner's word overlap chose the second for ``amalia_time`` (it is
    nearer "Amalia" and "time"); every author's program then disagreed, and the check froze both numbers. The trade
    is taken when two authors' programs other than the worked solution agree with the traded entry on ``variants``
    variants and no checking program disagrees with it, except one whose own binding of the pair is a guess (literals
    of one value, no name that prefers it: a worked solution's "4+2 ... 6+4 ... 4+4"), which says nothing either
    way. One program is not enough: its binding is the same planner's guess as the entry's, and where the two disagree
    only a third says which is crossed (on the GSM8K import, trading on one program's word crossed two right entries:
    `gsm8k-0367`'s "3 customers ... Three times", `gsm8k-1068`'s "3 less than ten ... another three")."""
    plain = [p for p in plan.params if not p.free and not p.mentions and not p.structural
             and all(f == "value" for _, f in p.literals)]
    rng = random.Random(1)  # its own draws: the check's variants stay those it would draw without this
    for i, p in enumerate(plain):
        for q in plain[i + 1:]:
            if close_to(float(p.mention.value), float(q.mention.value)) and _equal_literals(p, q):
                if len(agreeing := _agreeing_traded(question, plan, checking, run_entry, variants, poses, p, q, rng)) >= 2:
                    return (p, q), (f"with {p.mention.text!r} and {q.mention.text!r} traded the entry agrees with "
                                    f"{', '.join(agreeing)}, and no program that checks it disagrees")
    return None


def _agreeing_traded(question: str, plan: Plan, checking: Sequence[BoundProgram], run_entry: RunEntry, variants: int,
                     poses: Callable[[dict[str, Any]], bool] | None, p: ParamPlan, q: ParamPlan,
                     rng: random.Random) -> list[str]:
    """The programs (named) that agree with the entry with ``p`` and ``q`` traded; none when any disagrees."""

    def traded(values: dict[str, Any]) -> dict[str, Any]:
        return {**values, p.name: _as(p, values[q.name]), q.name: _as(q, values[p.name])}

    def agrees(b: BoundProgram) -> bool:
        compared, wrong = _compare(b, plan.params, lambda values: run_entry(traded(values)), _holding(plan, (), rng),
                                   variants, (lambda values: poses(traded(values))) if poses is not None else None)
        return compared >= variants and not wrong

    a, c = (p.mention.start, p.mention.end), (q.mention.start, q.mention.end)
    agreeing: list[str] = []
    for b in checking:
        if agrees(b):
            if b.source != WORKED_SOLUTION and not b.doubts([p, q]):
                agreeing.append(b.source)
            continue
        if not _guesses_pair(question, b, a, c):
            return []
    return agreeing


def _traded_spans(plan: Plan) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The mention spans of each pair the plan traded (:func:`builder.pot_import.planner.plan_parameters`)."""
    by_start = {p.mention.start: (p.mention.start, p.mention.end) for p in plan.params}
    return [(by_start[a], by_start[c]) for a, c in plan.traded if a in by_start and c in by_start]


def _guesses_pair(question: str, b: BoundProgram, a: tuple[int, int], c: tuple[int, int]) -> bool:
    """``b`` reads the two mentions (spans) of one value from literals of one value with no variable name that
    prefers its binding: which reads which is the planner's guess, so its answers say nothing about the pair."""
    x, y = b.by_span.get(a), b.by_span.get(c)
    return x is not None and y is not None and x is not y and _equal_literals(x, y) \
        and (_name_preference(question, b.program, x, y, 1) or 0) <= 0


def _name_preference(question: str, program: PalProgram, p: ParamPlan, q: ParamPlan, names: int = 2) -> float | None:
    """How much better the names of ``p``'s and ``q``'s literals fit their own mentions than each other's, or None
    when fewer than ``names`` of the two literals have a variable of their own (a worked solution's inline number:
    nothing tells the two apart). With one name, that literal's fit to its own mention against the other's."""
    lp, lq = program.literal(p.literal), program.literal(q.literal)
    named = [(lit, own, other) for lit, own, other in ((lp, p.mention, q.mention), (lq, q.mention, p.mention))
             if lit.direct]
    if len(named) < names:
        return None
    return sum(similarity(lit, question, own) - similarity(lit, question, other) for lit, own, other in named)


def _holding(plan: Plan, fixed: Sequence[str], rng: random.Random) -> Callable[[], dict[str, Any]]:
    """Variants of every parameter but ``fixed``, which keep their original values."""
    originals = {p.name: p.original for p in plan.params if p.name in fixed}
    return lambda: {**draw_values(plan, rng), **originals}


def _entry_poses(program: PalProgram, plan: Plan) -> Callable[[dict[str, Any]], bool]:
    """Whether the entry's own program finds a variant well posed (:meth:`BoundProgram.poses`)."""
    originally = _fractional_originally(program)
    return lambda values: _poses(program, oracle_values(plan.params, values), originally)


def _compare(b: BoundProgram, params: Sequence[ParamPlan], run_entry: RunEntry, draw: Callable[[], dict[str, Any]],
             wanted: int, poses: Callable[[dict[str, Any]], bool] | None = None) -> tuple[int, str]:
    """(variants compared, the first disagreement or "").

    With ``poses`` (the entry's side of :meth:`BoundProgram.poses`), a disagreement on a variant that leaves a whole
    quotient fractional in either program is put aside: such a question has no agreed answer ("7.5 pairs of
    glasses"), and two right programs may round it apart. It counts again when the well-posed variants run out
    before ``wanted`` agree, so a program that disagrees on the drawn values is never an agreement by default."""
    compared = 0
    aside = ""
    for _ in range(4 * wanted):
        if compared >= wanted:
            break
        values = draw()
        expected = run_entry(values)
        if isinstance(expected, BaseException) or expected is None:
            continue
        try:
            got = b.answer(params, values)
        except (Exception, RunTimeout):  # noqa: BLE001 - outside the independent program's domain
            continue
        if not _plain_number(got):
            continue
        if _no_whole_answer(expected, got):
            continue
        if not is_close(expected, got, AGREEMENT_TOLERANCE):
            why = f"the entry answers {expected!r}, {b.source} {got!r} for {values}"
            if poses is not None and not (poses(values) and b.poses(params, values)):
                aside = aside or why
                continue
            return compared + 1, why
        compared += 1
    if aside and compared < wanted:
        return compared + 1, aside
    return compared, ""


def _no_whole_answer(a: Any, b: Any) -> bool:
    """One side counts whole things (it rounds), the other gives the fraction the drawn values leave
    ("82 apples in packs of 8": 10 packs, or 10.25): the variant has no whole answer, so it says
    nothing about the reasoning. Both whole and different is a disagreement."""
    try:
        fa, fb = float(a), float(b)
    except (TypeError, ValueError, OverflowError):
        return False
    whole_a, whole_b = fa.is_integer(), fb.is_integer()
    if whole_a == whole_b:
        return False
    whole, fraction = (fa, fb) if whole_a else (fb, fa)
    return whole in (math.floor(fraction), math.ceil(fraction), round(fraction))

"""Which agreeing programs vouch for a parameter the entry's import had to guess about.

The independent check (:mod:`builder.independent_check`) verifies an entry when another author's program agrees
with it on rendered variants. Two guesses of the import are shared by any program bound to the question the same
way, and an agreement then says nothing about them:

- *a suspect* (``Plan.suspects``): a parameter that a constant of the entry's program may have been computed from
  ("total / 4" of "the house costs three times as much as the lot"). A program that writes the same constant, or
  any number of its own, may have computed it beforehand just as the entry did;
- *a twin* (:func:`guessed_twins`): a parameter whose number a mention the entry keeps as text states too ("Two cars
  ... after 2 hours"), where nothing in the program's names prefers the mention it reads. A program bound by the
  same guess reads the same mention in the same role, and is wrong with the entry on every variant.

A parameter no agreeing program vouches for is named in a disagreement, so the import keeps it constant.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from builder.gsm8k import Mention, scan_numbers
from builder.pot_import.matching import plain_values, similarity
from builder.pot_import.plan import ParamPlan, Plan
from builder.pot_import.program import Literal, PalProgram, close_to
from builder.pot_import.suspects import unread_twins


class BoundProgram(Protocol):
    """What vouching reads of an independent program bound to the question (``independent_check.BoundProgram``)."""

    program: PalProgram
    plan: Plan

    def reads(self, p: ParamPlan) -> bool: ...

    def params_for(self, p: ParamPlan) -> list[ParamPlan]: ...


def unvouched_guesses(plan: Plan, agreeing: Sequence[BoundProgram], question: str = "",
                      program: PalProgram | None = None) -> list[tuple[ParamPlan, str]]:
    """The entry's suspects and guessed twins that no agreeing program vouches for, with why."""
    out = _unvouched_suspects(plan, agreeing)
    if question and program is not None:
        named = {p.name for p, _ in out}
        mentions = scan_numbers(question)
        plain = plain_values(mentions)
        guessed = guessed_twins(question, program, plan, mentions)
        for p in plan.params:
            twins = guessed.get(p.name)
            if twins and p.name not in named and not any(_prefers(question, b, p, twins, plain) for b in agreeing):
                out.append((p, f"it reads {p.mention.text!r} where {twins[0].text!r} states the same number, and no "
                               "program that agrees binds it by a name that tells the two apart"))
    return out


def guessed_twins(question: str, program: PalProgram, plan: Plan,
                  mentions: Sequence[Mention] | None = None) -> dict[str, list[Mention]]:
    """Parameters (by name) whose number a mention no parameter reads states too, and whose literal's names fit that other
    mention at least as well as their own (-> those other mentions): which one the literal means is a guess.

    Measured on the GSM8K import (2026-12-07): of 25 such parameters of verified entries, two were crossed and
    answered wrong on every variant of them (gsm8k-0804 "Two cars ... after 2 hours" read the cars for the hours,
    gsm8k-1265 "yield 1 cup of juice" for the extra gallon), each agreeing with a program crossed the same way."""
    mentions = scan_numbers(question) if mentions is None else mentions
    plain = plain_values(mentions)
    out: dict[str, list[Mention]] = {}
    for p in plan.params:
        if p.free or not p.literals:
            continue
        literal = program.literal(p.literal)
        own = _fit(literal, question, p.mention, plain)
        guessed = [m for m in unread_twins(p, plan.params, mentions) if _fit(literal, question, m, plain) >= own]
        if guessed:
            out[p.name] = guessed
    return out


def _prefers(question: str, b: BoundProgram, p: ParamPlan, twins: Sequence[Mention], plain: set[float]) -> bool:
    """``b`` reads ``p``'s mention through a named literal whose names fit it better than each of ``twins``."""
    for q in b.params_for(p):
        literal = b.program.literal(q.literal)
        if literal.direct and all(_fit(literal, question, p.mention, plain) > _fit(literal, question, m, plain)
                                  for m in twins):
            return True
    return False


def _fit(literal: Literal, question: str, mention: Mention, plain: set[float]) -> float:
    """How well a literal's names fit a mention, as the planner scores it (a price beside a plain number of its value
    is the "$3" of "3 different package sizes ... for $3", gsm8k-1027)."""
    return similarity(literal, question, mention, mention.value in plain)


def _unvouched_suspects(plan: Plan, agreeing: Sequence[BoundProgram]) -> list[tuple[ParamPlan, str]]:
    """The suspects no agreeing program vouches for: to vouch for one, a program reads its number and writes no
    number of its own, neither one of the constants the entry may have computed from it nor any other that is not
    the question's or a unit's.

    Why: "a house and a lot cost $120,000, the house three times as much" is solved by the entry as ``total / 4``, and
    by the worked solution as "3x + x = 4x": both write the 4, so both answer for a 4 on a variant with "twice", and
    their agreement says nothing about the number the 4 came from. Nor does a solution's "x = 80/4 = 20" vouch for
    the 10 of "Paul is 10 years older" that its 80 came from (gsm8k-0931). A program whose every number is the
    question's computes each of its values from them, as a variant needs. None vouches for a suspect whose number a
    mention the entry does not read states too ("turn 12 in 3 years ... be in 3 years"): which of the two the entry's
    constant came from, and which one its parameter reads, is a guess the checking programs make the same way
    (measured: gsm8k-0532, 0803, 0943 and 1314 agreed with programs crossed as they were)."""
    out = []
    for p in plan.params:
        if p.name not in plan.suspects:
            continue
        why, constants, twinned = plan.suspects[p.name]
        if twinned or not any(b.reads(p) and not b.plan.unexplained and not _writes_any(b, constants) for b in agreeing):
            out.append((p, f"{why}, and no program that agrees computes it from the question's numbers alone"))
    return out


def _writes_any(b: BoundProgram, values: Sequence[float]) -> bool:
    """Whether ``b`` writes one of ``values`` as a literal that no number of the question binds, or only a number word
    by its value: "half the amount" of "$1.00" written 0.5 is bound to "half", and a program that writes it so has
    computed it beforehand just as the entry did (gsm8k-0567). One bound to a number stated in digits or as a
    cardinal reads the question."""
    stated = {lid for q in b.plan.params if not q.structural for lid, _ in q.literals}
    return any(lit.id not in stated and isinstance(lit.value, (int, float)) and not isinstance(lit.value, bool)
               and any(close_to(float(lit.value), v) for v in values) for lit in b.program.literals)

"""Parameters a constant of the program may have been computed from: the planner's suspicion, by arithmetic on values.

A program that writes a number the question does not state (``num_adults = 9`` of "with 8 other adults") may have
computed it from a stated one, and then answers wrong when that one varies. Which parameters can explain a constant is
arithmetic on the values alone (:func:`derived_from`), so most suspects are coincidences; the planner freezes them,
unless the importer leaves them to the independent check (``Plan.suspects``, :mod:`builder.independent_vouch`).
"""

from __future__ import annotations

import ast
import itertools
import math
from collections.abc import Sequence
from typing import Any

from builder.gsm8k import Mention
from builder.pot_import.matching import UNIT_CONSTANTS
from builder.pot_import.plan import ParamPlan
from builder.pot_import.program import PalProgram, close_to
from edge_runtime.entries.metadata import format_value


def derived_from(
    program: PalProgram, params: Sequence[ParamPlan], restored: dict[int, Any], mentions: Sequence[Mention],
    explained: set[int], added: set[int],
) -> tuple[dict[str, str], dict[str, set[float]]]:
    """Parameters the program may have precomputed into a constant, which stay constant unless the independent check
    clears them (name -> why, and name -> the constants suspected to come from them):

    - a constant not stated in the question that equals a combination of a parameter with another
      value in one or two steps (``lodgepole_pine = 40`` from "twenty ... twice as many";
      ``average = total * 0.3`` from "40% ... the rest equally divided": (1 - 40/100) / 2);
    - a unit-constant literal equal to a parameter's value (``sunday = 10 + more`` where the
      question's "10 boxes" is a parameter): it may be that parameter, read twice, once as a constant;
    - a literal 2 (or 1, 0.5) equal to a number word's parameter ("doubled" read by one of three ``* 2``: the
      others answered for doubling on "tripled", gsm8k-0284), or added to or subtracted from something where a
      parameter holds its value ("Two years ago" and ``vince_then + 2``, gsm8k-1128), or a number word's value where a
      parameter is 1 ("half the amount" of "$1.00" written 0.5, gsm8k-0567, whether or not that 0.5 is read as the
      word). Such a value is too common for the arithmetic above; these uses are where it was the parameter read again,
      or computed from it.

    ``added``: the nodes of the program a sum or a difference adds (:func:`added_operands`).
    """
    assigned_ids = {lid for p in params for lid, _ in p.literals} | explained
    constants: dict[str, set[float]] = {}
    values = [(p.name, float(p.original)) for p in params if not p.free]
    values += [(p.name, float(p.original) / 100) for p in params if p.mention.percent and not p.free]
    extra = [(None, float(v)) for m in mentions if m.kind == "structural" for v in (m.value, *m.alternatives)]
    ratios = list(extra)  # the number words' values: "half" of a 1 is 0.5, which the program may have written
    extra += [(None, float(m.value)) for m in mentions if m.kind in ("digits", "word")]
    # Two steps only through the constants of percentages and halving ((1 - 40/100) / 2): with more
    # constants, coincidences freeze parameters that are fine (measured on the GSM8K import).
    first_constants = [(None, 1.0), (None, 100.0)]
    second_constants = (2.0, 100.0)

    def combos(a: float, b: float) -> tuple[float, ...]:
        return (a + b, a - b, b - a, a * b, a / b if b else math.nan, b / a if a else math.nan)

    out: dict[str, str] = {}

    def suspect(name: str, c: float, why: str) -> None:
        out.setdefault(name, why)
        constants.setdefault(name, set()).add(c)

    for lit in program.literals:
        if lit.id in assigned_ids or lit.excluded:
            continue
        c = float(restored.get(lit.id, lit.value))
        if c in UNIT_CONSTANTS:
            for name, value in values:
                if close_to(value, c) and not lit.direct:
                    suspect(name, c, f"the program's {format_value(c)} may be this value")
            continue
        if abs(c) in (0.0, 1.0, 2.0, 0.5):
            for p in params:  # too common to suspect by arithmetic, but not as a ratio read once of several, or an age
                if not p.free and close_to(float(p.original), c) and (p.structural or id(lit.node) in added):
                    suspect(p.name, c, f"the program's {format_value(c)} may be this value")
                elif not p.free and float(p.original) == 1 and any(close_to(c, v) for _, v in ratios):
                    suspect(p.name, c, f"the program's {format_value(c)} may be computed from it")  # "half of $1.00"
            continue
        for (na, a), (nb, b) in itertools.product(values, values + extra + first_constants):
            if na == nb:
                continue
            first = combos(a, b)
            other_param = nb is not None and (nb, b) in values
            if any(close_to(r, c) for r in first if nb is not None or b not in (1.0, 100.0)) or (
                    (other_param or nb is None and b in (1.0, 100.0)) and any(
                        close_to(r2, c) for r in first if math.isfinite(r) for k in second_constants
                        for r2 in (r * k, r / k, r + k, r - k))):
                for n in (na, nb):  # every parameter that can explain it: which one did is unknowable
                    if n is not None:
                        suspect(n, c, f"the program's {format_value(c)} may be computed from it")
    for p in params:  # "half the amount ... as $1.00" written 0.5 and read as "half": it is 0.5 of the 1 as well
        if p.structural and p.reading is None:
            for q in params:
                if q is not p and not q.free and not q.structural and float(q.original) == 1:
                    suspect(q.name, float(p.original), f"the program's {format_value(p.original)} may be computed from it")
    return out, constants


def stated_twice(params: Sequence[ParamPlan], mentions: Sequence[Mention]) -> set[str]:
    """Parameters whose number a mention that no parameter reads states as well ("turn 12 in 3 years ... be in 3
    years")."""
    return {p.name for p in params if unread_twins(p, params, mentions)}


def unread_twins(p: ParamPlan, params: Sequence[ParamPlan], mentions: Sequence[Mention]) -> list[Mention]:
    """The mentions that state ``p``'s number and that none of ``params`` reads."""
    read = {m.index for q in params for m in (q.mention, *q.mentions)}
    return [m for m in mentions
            if m.parameterisable and m.index not in read and close_to(float(m.value), float(p.mention.value))]


def added_operands(func: ast.FunctionDef) -> set[int]:
    """The nodes a sum or a difference adds or subtracts (``x - 2``, ``x += 2``)."""
    out: set[int] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            out |= {id(node.left), id(node.right)}
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Add, ast.Sub)):
            out.add(id(node.value))
    return out

"""Constants a program precomputed from two stated numbers, written out again as the arithmetic they came from.

A PoT program often does one step of arithmetic in its head: "$1000 in 20 dollar bills" becomes
``bills_initial = 50``, "from 2:15 to 2:38" becomes ``sleepwalking_minutes = 23``. The literal 50 is not a
number the question states, so the planner must keep it constant and freeze every parameter it may have been
computed from; the entry then refuses every question that states other values for them. Written out again
(``bills_initial = 1000 / 20``), each literal is a stated number and the entry varies with both.

A step is written out only where the question's own worked solution (GSM8K's reference answer) writes the same
step (``<<1000/20=50>>``): a pair of stated numbers can explain a literal by coincidence ("100 pennies" / "20
dimes" for the 5 cents of a nickel), and every program of a question that keeps the same constant would be
written out by the same coincidence, so their agreement could not catch it; a person's solution can.

Only a literal that exactly one pair of the question's numbers explains, by one operation, is written out: a
pair of numbers no literal reads first, else any pair (the program may also read one of them as a literal:
``* 4`` for "20 dollar bills" changed into "5 dollar bills" next to ``1000 / 20``). The result is only a
*proposal*: the importer keeps it only if the independent check verifies it on rendered variants
(``Importer.import_one``).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from builder.gsm8k import Mention, scan_numbers
from builder.pot_import.matching import UNIT_CONSTANTS, unit_name, value_matches
from builder.pot_import.program import PalProgram, close_to

_OPERATIONS: tuple[tuple[type[ast.operator], Callable[[float, float], float], str, bool], ...] = (
    (ast.Mult, operator.mul, "*", True),
    (ast.Add, operator.add, "+", True),
    (ast.Div, operator.truediv, "/", False),
    (ast.Sub, operator.sub, "-", False),
)
#: Values a program writes for reasons of its own (halving, a whole, a percent) far more often than from a pair.
_PLAIN = frozenset({0.0, 1.0, 2.0, 0.5, 100.0})


@dataclass(frozen=True)
class Unfolded:
    """The program with its precomputed literals written out, and what was written (``"50 = 1000 / 20"``)."""

    code: str
    steps: tuple[str, ...]


def unfold(program: PalProgram, question: str, written: Collection[tuple[float, str, float, float]],
           restored: Mapping[int, Any] | None = None) -> Unfolded | None:
    """The program's code with every literal that one pair of stated numbers explains, by a step the worked
    solution also writes (``written``: ``worked_solution.written_steps``), written as that pair's arithmetic, and
    every literal in ``restored`` (a GSM-Hard number mapped back, by literal id) as its original value; None when
    no literal is explained. The program's tree is changed: pass one made for this call."""
    restored = restored or {}
    mentions = [m for m in scan_numbers(question) if m.parameterisable and float(m.value) != 0]
    values = [float(restored.get(lit.id, lit.value)) for lit in program.literals]
    unread = [m for m in mentions if not any(value_matches(v, m, question) for v in values)]
    replacements: dict[int, tuple[ast.expr, str]] = {}
    for lit in program.literals:
        c = float(restored.get(lit.id, lit.value))
        if c in _PLAIN or c in UNIT_CONSTANTS or unit_name(lit) or any(value_matches(c, m, question) for m in mentions):
            continue
        found = {(a, op, b) for a, op, b in _explanations(c, unread) or _explanations(c, mentions)
                 if _written(written, float(a.value), op, float(b.value), c)}
        if len({(float(a.value), op[2], float(b.value)) for a, op, b in found}) != 1:
            continue  # none, or several pairs: which one the program used is unknowable (one number stated twice is one)
        a, op, b = min(found, key=lambda f: (f[0].start, f[2].start))
        node = ast.BinOp(ast.Constant(_number(a)), op[0](), ast.Constant(_number(b)))
        replacements[id(lit.node)] = (node, f"{_show(c)} = {a.text} {op[2]} {b.text}")
    if not replacements:
        return None
    return Unfolded(_rewritten(program, restored, replacements), tuple(step for _, step in replacements.values()))


def original_code(program: PalProgram, restored: Mapping[int, Any]) -> str:
    """The program's code for the original question: every literal in ``restored`` (a GSM-Hard number mapped back,
    by literal id) written as its original value. The program's tree is changed."""
    return _rewritten(program, restored, {})


def _rewritten(program: PalProgram, restored: Mapping[int, Any], replacements: dict[int, tuple[ast.expr, str]]) -> str:
    nodes = {id(lit.node): (ast.Constant(restored[lit.id]), "") for lit in program.literals if lit.id in restored}
    nodes.update(replacements)

    class Replace(ast.NodeTransformer):
        def visit_Constant(self, node: ast.Constant) -> ast.AST:
            found = nodes.get(id(node))
            return ast.copy_location(found[0], node) if found is not None else node

    tree = Replace().visit(program.tree)  # the program's own tree: its literal nodes are the keys
    return ast.unparse(ast.fix_missing_locations(tree))


def _explanations(value: float, mentions: list[Mention]) -> set[tuple[Mention, tuple, Mention]]:
    """Every (a, operation, b) of two distinct mentions whose result is ``value`` (commutative pairs once)."""
    found: set[tuple[Mention, tuple, Mention]] = set()
    for i, a in enumerate(mentions):
        for j, b in enumerate(mentions):
            if i == j:
                continue
            for op in _OPERATIONS:
                if op[3] and j < i:
                    continue  # a * b and b * a are one explanation
                try:
                    result = op[1](float(a.value), float(b.value))
                except ZeroDivisionError:
                    continue
                if close_to(result, value):
                    found.add((a, op, b))
    return found


def _written(steps: Collection[tuple[float, str, float, float]], a: float, op: tuple, b: float, result: float) -> bool:
    """Whether a person's worked solution writes this step (either order, where the order does not matter)."""
    orders = [(a, b), (b, a)] if op[3] else [(a, b)]
    return any(close_to(x, first) and op[2] == symbol and close_to(y, second) and close_to(r, result)
               for x, symbol, y, r in steps for first, second in orders)


def _number(mention: Mention) -> int | float:
    value = float(mention.value)
    return int(value) if value.is_integer() else value


def _show(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)

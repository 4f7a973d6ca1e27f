"""Independent solutions: a second program for a question, written by someone else.

An entry's own round trips compare its compiled program with the program it came from, on new
values: they cannot tell a program that is right by coincidence on the original numbers
("3 yards" turned into feet as ``length * length``: 3 × 3 = 9 = 3 × 3 ft/yd) from one that is right.
A second program written independently for the same question — here the Codex Program-of-Thought
programs for GSM8K (few-shot and zero-shot prompting) — makes the same mistake only rarely, so
agreement on rendered variants is evidence the reasoning, not just the answer, is right.

This module reads those files, joins each program to its reference question and rewrites it into
the importer's shape (one ``def solution():`` that returns the answer), so that the importer can
bind its literals to the question's numbers exactly as it binds the entry's own program
(:mod:`builder.verification` does the comparison). The reference's own worked solution is the third
source (:mod:`builder.worked_solution`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from builder.gsm8k import ReferenceIndex, gold_answer, is_close, read_jsonl

#: Imports an independent program may keep: the rest (numpy, sympy...) makes it unusable here.
_KEPT_IMPORTS = frozenset({"math", "fractions", "decimal"})


@dataclass(frozen=True)
class IndependentProgram:
    """One independent program for a reference question, already in ``def solution():`` shape."""

    source: str  # where it came from (the file's stem, e.g. ``pot_codex_fewshot``)
    code: str
    #: The solution's own words, when it has any (a GSM8K worked solution): what they say each number
    #: counts tells a binding by value that only coincides (builder.prose_units).
    prose: str = ""


def as_solution(program: str) -> str | None:
    """The program as ``def solution(): ... return <answer>``; None when it has no such shape.

    Two shapes are read: statements ending in ``ans = ...`` (few-shot PoT) and a ``solver()``
    function called as ``ans = solver()`` (zero-shot PoT). Comments go with the parse; imports other
    than the standard numeric modules make the program unusable (it would not validate)."""
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError, RecursionError):
        return None
    imports: list[ast.stmt] = []
    body: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if all(n.split(".")[0] in _KEPT_IMPORTS for n in names):
                imports.append(node)
            continue
        body.append(node)
    functions = [n for n in body if isinstance(n, ast.FunctionDef)]
    if functions:
        solver = [f for f in functions if f.name == "solver"]
        if len(functions) != 1 or not solver or _takes_arguments(solver[0]):
            return None
        rest = [n for n in body if n is not solver[0]]
        if not all(_is_ans_call(n, "solver") or _is_constant_expr(n) for n in rest):
            return None
        func = solver[0]
        func.name = "solution"
        func.decorator_list = []
        module = ast.Module(body=[*imports, func], type_ignores=[])
    else:
        if not body or not any(_assigns(n, "ans") for n in body):
            return None
        ret = ast.Return(value=ast.Name(id="ans", ctx=ast.Load()))
        func = ast.FunctionDef(name="solution", args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                                                                    defaults=[]),
                               body=[*body, ret], decorator_list=[], returns=None)
        module = ast.Module(body=[*imports, func], type_ignores=[])
    _first_of_pair(func)
    ast.fix_missing_locations(module)
    try:
        return ast.unparse(module)
    except (ValueError, RecursionError):
        return None


def _first_of_pair(func: ast.FunctionDef) -> None:
    """A program that answers with a pair ("return packs, extra") answers with its first element: the rows that reach
    here are those whose recorded answer is that one number (``load_independent`` keeps only programs whose recorded
    answer is a number equal to the gold; most pairs were recorded whole and are dropped there). Only the answer is
    rewritten: the function's returns, or the last ``ans =`` of a few-shot program (an earlier pair may be unpacked)."""
    def first(value: ast.expr) -> ast.expr:
        if isinstance(value, ast.Tuple) and value.elts and not isinstance(value.elts[0], ast.Starred):
            return value.elts[0]
        return value

    returns = [n for n in ast.walk(func) if isinstance(n, ast.Return)]
    answers = [n for n in func.body if isinstance(n, ast.Assign) and _assigns(n, "ans")]
    if len(returns) == 1 and answers and isinstance(returns[0].value, ast.Name) and returns[0].value.id == "ans":
        answers[-1].value = first(answers[-1].value)  # few-shot: "... ans = a, b; return ans"
    else:
        for node in returns:
            if node.value is not None:
                node.value = first(node.value)


def _takes_arguments(func: ast.FunctionDef) -> bool:
    a = func.args
    return bool(a.args or a.posonlyargs or a.kwonlyargs or a.vararg or a.kwarg)


def _assigns(node: ast.stmt, name: str) -> bool:
    return isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)


def _is_ans_call(node: ast.stmt, function: str) -> bool:
    return (_assigns(node, "ans") and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
            and node.value.func.id == function and not node.value.args)


def _is_constant_expr(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)


def load_independent(paths: Iterable[str | Path], reference: ReferenceIndex) -> dict[int, tuple[IndependentProgram, ...]]:
    """Reference row -> its independent programs that are right on the original question.

    A row joins on its ``question`` (normalised, exact); its recorded result must equal the
    reference's gold answer (the importer re-runs it anyway). Programs that are wrong on the
    original say nothing about variants, so they are dropped here."""
    out: dict[int, list[IndependentProgram]] = {}
    for path in paths:
        source = Path(path).stem
        for record in read_jsonl(path):
            ref = reference.exact(str(record.get("question", "")))
            if ref is None or ref.gold is None:
                continue
            executed = record.get("executed")
            if not isinstance(executed, (int, float)) or not is_close(executed, ref.gold):
                continue
            gold = gold_answer(record.get("gold"))
            if gold is not None and not is_close(gold, ref.gold):
                continue  # the file's own gold disagrees with the reference: a different question
            code = as_solution(str(record.get("program", "")))
            if code is not None:
                out.setdefault(ref.index, []).append(IndependentProgram(source, code))
    return {row: tuple(programs) for row, programs in out.items()}

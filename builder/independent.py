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
(:mod:`builder.verification` does the comparison).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder.gsm8k import ReferenceIndex, gold_answer, is_close, read_jsonl, scan_numbers

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
    ast.fix_missing_locations(module)
    try:
        return ast.unparse(module)
    except (ValueError, RecursionError):
        return None


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


# ---- the reference's own worked solution ------------------------------------------------------

_ANNOTATION = re.compile(r"<<([^<>=]+)=([^<>]+)>>")
_ARITHMETIC = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Add, ast.Sub, ast.Mult, ast.Div,
               ast.FloorDiv, ast.Mod, ast.Pow, ast.USub, ast.UAdd)


def worked_solution_program(answer: str, gold: Any, question: str = "") -> str | None:
    """The calculator annotations of a GSM8K worked answer (``16-3-4=<<16-3-4=9>>9``) as a program.

    Each annotation becomes one assignment; a number that equals an earlier step's result is read
    from that step (the chain of the solution), every other number stays a literal that the
    importer binds to the question's mentions. A number that is both an earlier result and a value
    the question states, or the result of two earlier steps, could be either: such a solution is not used (a wrong
    guess could agree with an entry that made the same mistake). The program returns the last step whose result is
    the gold answer; a solution without one (worked by hand in its last line) gives None."""
    if gold is None:
        return None
    stated = {float(v) for m in scan_numbers(question) for v, _ in m.literal_values()} if question else set()
    steps: list[tuple[str, ast.expr, float]] = []
    for line in str(answer).split("\n"):
        for match in _ANNOTATION.finditer(line):
            try:
                tree = ast.parse(match.group(1).replace("^", "**").strip(), mode="eval")
                result = float(match.group(2).replace(",", "").strip())
            except (SyntaxError, ValueError, RecursionError):
                return None
            if not all(isinstance(n, _ARITHMETIC) for n in ast.walk(tree)):
                return None
            steps.append((_step_name(line[:match.start()], len(steps)), tree.body, result))
    finals = [i for i, (_, _, result) in enumerate(steps) if is_close(result, gold)]
    if not finals:
        hand = _hand_worked_step(str(answer), gold)
        if hand is None:
            return None
        text, expr = hand
        steps.append((_step_name(text, len(steps)), expr, float(gold)))
        finals = [len(steps) - 1]
    body: list[ast.stmt] = []
    for i, (name, expr, _) in enumerate(steps[: finals[-1] + 1]):
        earlier = steps[:i]

        class Chain(ast.NodeTransformer):
            def visit_Constant(self, node: ast.Constant) -> ast.AST:
                if isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
                    found = [(prior_name, prior_expr) for prior_name, prior_expr, prior in earlier
                             if is_close(prior, node.value, 1e-9)]
                    results = [prior_name for prior_name, _ in found]
                    if results:
                        if len(results) > 1 or any(is_close(v, node.value, 1e-9) for v in stated):
                            raise _Ambiguous  # "6 + 6" after two steps that both gave 6: which is which
                        if isinstance(found[0][1], ast.Constant):  # "12 inches / 12 = <<1=1>>1 foot" hides its inputs
                            raise _Ambiguous
                        return ast.copy_location(ast.Name(id=results[0], ctx=ast.Load()), node)
                return node

        try:
            value = Chain().visit(expr)
        except _Ambiguous:
            return None
        body.append(ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=value))
    body.append(ast.Return(value=ast.Name(id=steps[finals[-1]][0], ctx=ast.Load())))
    body = _hoist_givens(body, question)
    func = ast.FunctionDef(name="solution", args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                                                                defaults=[]), body=body, decorator_list=[], returns=None)
    module = ast.Module(body=[func], type_ignores=[])
    ast.fix_missing_locations(module)
    return ast.unparse(module)


_CLAUSE = re.compile(r"[,;:!?]|\.(?!\d)")
_TIMES = re.compile(r"(?<=[\d%)])\s*[x×]\s*(?=[\d($])")


def _hand_worked_step(answer: str, gold: Any) -> tuple[str, ast.expr] | None:
    """The last line of a worked answer computed by hand (``so the boots cost 99 + 5 = $104``) as one step.

    Only a line that ends in ``= gold`` and whose first expression that reaches it is plain arithmetic
    once its unit words, currency and percent signs are dropped (``1 foot / 10 feet * 100%``): an
    equation to solve (``2/3 * x = 12``) or two numbers with no operator between them is not used."""
    lines = [line for line in answer.split("\n") if line.strip() and not line.lstrip().startswith("####")]
    if not lines or "<<" in lines[-1] or "=" not in lines[-1]:
        return None
    segments = lines[-1].split("=")
    final = re.match(r"\s*[$€£]?\s*(-?[\d,]*\.?\d+)", segments[-1])
    if final is None or not is_close(float(final.group(1).replace(",", "")), gold):
        return None
    for index, segment in enumerate(segments[:-1]):
        clause = _CLAUSE.split(segment)[-1] if index == 0 else segment
        text = _TIMES.sub("*", clause.replace("−", "-").replace("–", "-").replace("÷", "/"))
        text = re.sub(r"(?<=\d),(?=\d{3})", "", text)
        text = re.sub(r"[$€£%]|[A-Za-z]+(?:'[a-z]+)?", " ", text).strip()
        if not text or not re.fullmatch(r"[\d.\s+\-*/()]+", text) or re.search(r"\d\s+[\d(]|\)\s*[\d(]", text):
            continue
        try:
            tree = ast.parse(text, mode="eval")
        except SyntaxError:
            continue
        if not any(isinstance(n, ast.BinOp) for n in ast.walk(tree)):
            continue
        if not all(isinstance(n, _ARITHMETIC) for n in ast.walk(tree)):
            continue
        try:
            value = eval(compile(tree, "<hand step>", "eval"), {"__builtins__": {}}, {})  # noqa: S307 - arithmetic only
        except (ZeroDivisionError, OverflowError, ValueError):
            continue
        if is_close(float(value), gold):
            return clause, tree.body
    return None


def _hoist_givens(body: list[ast.stmt], question: str) -> list[ast.stmt]:
    """Name a number the solution writes more than once when exactly one mention of the question states it.

    A worked solution repeats a given in every step that uses it ("3 * 20", "4 * 20", "20 + 60 + ..."),
    where a program would name it once. Bound literal by literal, only one of the repeats would follow
    the question's number on a variant and the solution would disagree with a right entry; named once
    at the top, every step reads the same given. A value two mentions state stays literal (which one a
    step means is not known)."""
    mentions = scan_numbers(question) if question else []
    written: dict[float, list[Any]] = {}  # value -> the literals that write it
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            written.setdefault(float(node.value), []).append(node.value)
    names: dict[float, str] = {}
    for value, literals in written.items():
        stating = [m for m in mentions if any(is_close(v, value, 1e-9) for v, _ in m.literal_values())]
        if len(literals) > 1 and len(stating) == 1:
            names[value] = f"given_{len(names) + 1}"
    if not names:
        return body

    class Name(ast.NodeTransformer):
        def visit_Constant(self, node: ast.Constant) -> ast.AST:
            if isinstance(node.value, (int, float)) and not isinstance(node.value, bool) and float(node.value) in names:
                return ast.copy_location(ast.Name(id=names[float(node.value)], ctx=ast.Load()), node)
            return node

    givens: list[ast.stmt] = [ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())],
                                         value=ast.Constant(written[value][0])) for value, name in names.items()]
    return givens + [Name().visit(stmt) for stmt in body]


class _Ambiguous(Exception):
    """A number of a worked solution is both an earlier step's result and a value the question states."""


def _step_name(text: str, index: int) -> str:
    """A variable name from the words just before the annotation ("the cost of the house" -> cost_house_3)."""
    words = [w for w in re.findall(r"[a-z]+", text.lower()) if w not in _STOP][-3:]
    return "_".join([*words, f"step{index + 1}"])


_STOP = frozenset("a an the of to in on at for is are was were and so he she they it his her their that this "
                  "with by from be has have had there then which who".split())


def load_worked_solutions(reference_file: str | Path, reference: ReferenceIndex) -> dict[int, tuple[IndependentProgram, ...]]:
    """Reference row -> the program of its own worked solution (rows without usable annotations are absent)."""
    out: dict[int, tuple[IndependentProgram, ...]] = {}
    for i, record in enumerate(read_jsonl(reference_file)):
        row = reference.rows[i] if i < len(reference.rows) else None
        if row is None:
            continue
        answer = str(record.get("answer", ""))
        code = worked_solution_program(answer, row.gold, row.question)
        if code is not None:
            out[i] = (IndependentProgram(WORKED_SOLUTION, code, answer),)
    return out


#: The source name of a reference's own worked solution.
WORKED_SOLUTION = "reference_worked_solution"

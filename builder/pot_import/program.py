"""A PoT ``solution()`` program, parsed, safety-checked and re-runnable with other literal values.

Its numeric literals are collected with the context a parameter is later chosen by (the variable a
literal is assigned to, the names of its statement); re-runs go through the sandbox's reduced
builtins under a time budget, because the program is untrusted code.
"""

from __future__ import annotations

import ast
import copy
import keyword
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from builder.pot_import.transcripts import Rejected
from builder.time_limit import time_limit
from edge_runtime.entries.sandbox import SAFE_BUILTINS
from edge_runtime.entries.validator import FORBIDDEN_MODULE_NAMES, FORBIDDEN_NAMES, validate_source
from edge_runtime.errors import UnsafeCodeError

#: Iterations a generated ``while`` loop may run before the entry gives up (an ExecutionError, i.e. a MISS).
MAX_LOOP_STEPS = 100_000
#: Local names a generated entry needs for itself; a program variable with one of these names is renamed.
RESERVED_NAMES = frozenset({
    "ctx", "payload", "params", "load", "narrate", "do", "convert", "lm", "extract", "smart_convert",
    "invoke_tool", "semantic_function", "entry_point", "Param", "int", "float", "print",
}) | FORBIDDEN_NAMES | FORBIDDEN_MODULE_NAMES
class RunTimeout(BaseException):
    """A program ran past its time budget (a BaseException, so entry code cannot swallow it as Exception)."""


def deadline(seconds: float):  # noqa: ANN201 - a context manager
    """Interrupt the block after ``seconds`` with RunTimeout (see builder.time_limit)."""
    return time_limit(seconds, RunTimeout)


@dataclass
class Literal:
    """A numeric literal of the program."""

    id: int
    node: ast.Constant
    value: int | float
    order: int  # source order
    direct: str | None  # the variable when the statement is ``var = <literal>`` (or a tuple element of one)
    target: str | None  # the variable the enclosing statement assigns
    names: tuple[str, ...]  # identifiers of the enclosing statement (for name similarity)
    top_level: bool  # the enclosing statement is directly in the function body
    in_loop: bool
    excluded: str | None = None  # why it can never be a parameter (round ndigits, an index...)
    #: Written next to a scale to a share (``20 * .01``, ``x * 20 / 100``): it reads a percent.
    in_share: bool = False


class PalProgram:
    """A parsed, safety-checked ``solution()`` program that can be re-run with other literal values.

    The tree is validated once (:func:`edge_runtime.entries.validator.validate_source`); literal values do
    not change what the validator checks, so re-runs compile the same tree with other constants and
    execute it with the sandbox's reduced builtins under a time budget.
    """

    def __init__(self, code: str, *, timeout: float = 2.0) -> None:
        self.timeout = timeout
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError, RecursionError) as exc:
            raise Rejected("unparsable_program", f"{type(exc).__name__}: {exc}") from exc
        functions = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "solution"]
        if not functions:
            raise Rejected("unparsable_program", "no top-level def solution()")
        func = functions[0]
        if func.args.args or func.args.posonlyargs or func.args.kwonlyargs or func.args.vararg or func.args.kwarg:
            raise Rejected("unparsable_program", "solution() takes arguments")
        others = [n for n in tree.body if n is not func]
        for node in others:
            if isinstance(node, ast.FunctionDef):
                raise Rejected("unsafe_program", f"helper function {node.name!r} outside solution() is not supported")
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                    continue
                raise Rejected("unsafe_program", f"module-level {type(node).__name__} statement")
        if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for n in ast.walk(func) if n is not func):
            raise Rejected("unsafe_program", "nested function or class definitions are not supported in an entry body")
        _strip_prints(func)
        self.renamed = _rename_reserved(func)
        if func.body and is_docstring(func.body[0]):
            self.docstring_node: ast.stmt | None = func.body[0]
        else:
            self.docstring_node = None
        self.imports = [n for n in others if isinstance(n, (ast.Import, ast.ImportFrom))]
        self.tree = ast.Module(body=[*self.imports, func], type_ignores=[])
        ast.fix_missing_locations(self.tree)
        try:
            validate_source(ast.unparse(self.tree), "<pal program>")
        except UnsafeCodeError as exc:
            raise Rejected("unsafe_program", str(exc)) from exc
        except (ValueError, RecursionError) as exc:
            raise Rejected("unparsable_program", str(exc)) from exc
        self.func = func
        self.literals = _collect_literals(func)
        self._defaults = {lit.id: lit.node.value for lit in self.literals}

    @property
    def code(self) -> str:
        """The program as it runs now: after ``set_defaults`` of the GSM-Hard numbers mapped back, the program for
        the original question (so that it can check another author's entry)."""
        return ast.unparse(self.tree)

    def fold_constants(self, targets: Sequence[float]) -> int:
        """Replace a constant expression whose value is one of ``targets`` by that single literal.

        GSM-Hard sometimes wrote its replacement number as an expression (``milk_discount = 3/9``
        for "$0.3333333333333333"); folding it lets the literal be mapped back to the original."""
        wanted = [t for t in targets if not any(close_to(float(lit.value), t) for lit in self.literals)]
        if not wanted:
            return 0
        folded = 0

        class Fold(ast.NodeTransformer):
            def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
                leaves = list(ast.walk(node))
                if all(isinstance(n, _FOLDABLE) for n in leaves) and all(
                    numeric_node(n) is not None and abs(n.value) < 1e12 for n in leaves if isinstance(n, ast.Constant)
                ):
                    try:
                        value = eval(compile(ast.Expression(node), "<fold>", "eval"), {"__builtins__": {}})  # noqa: S307
                    except Exception:  # noqa: BLE001 - 1/0 and the like stay as they are
                        return self.generic_visit(node)
                    match = next((t for t in wanted if isinstance(value, (int, float)) and close_to(float(value), t)), None)
                    if match is not None:
                        nonlocal folded
                        folded += 1
                        return ast.copy_location(ast.Constant(value), node)
                return self.generic_visit(node)

        Fold().visit(self.func)
        if folded:
            ast.fix_missing_locations(self.tree)
            self.literals = _collect_literals(self.func)
            self._defaults = {lit.id: lit.node.value for lit in self.literals}
        return folded

    def set_defaults(self, values: dict[int, Any]) -> None:
        """Make ``values`` the literal values of every later run (GSM-Hard → original numbers)."""
        for lid, value in values.items():
            self._defaults[lid] = value
            self.literal(lid).node.value = value
            self.literal(lid).value = value

    def literal(self, lid: int) -> Literal:
        return self.literals[lid]

    def run(self, values: dict[int, Any] | None = None, timeout: float | None = None) -> Any:
        """Run ``solution()`` with some literals replaced; raises what the program raises."""
        values = values or {}
        try:
            for lid, value in values.items():
                self.literals[lid].node.value = value
            code = compile(self.tree, "<pal program>", "exec")
        finally:
            for lid in values:
                self.literals[lid].node.value = self._defaults[lid]
        namespace: dict[str, Any] = {"__builtins__": dict(SAFE_BUILTINS), "__name__": "pal_program"}
        with deadline(self.timeout if timeout is None else timeout):
            exec(code, namespace)  # noqa: S102 - validated AST, reduced builtins, time budget
            return namespace["solution"]()

    def fractional_quotients(self, values: dict[int, Any] | None = None) -> frozenset[int]:
        """The divisions (``/`` and ``//``, numbered in source order) whose quotient is not a whole number on a run
        with ``values``; raises what the program raises.

        Why: a question's numbers are chosen so that what it counts comes out whole ("16 glasses, every second
        one"); values that leave a quotient fractional where the original question's is whole ask a question
        with no agreed answer (7.5 pairs of glasses), on which two right programs may round apart."""
        found: set[int] = set()

        def quotient(index: int, floor: bool, a: Any, b: Any) -> Any:
            exact = a / b
            if isinstance(exact, (int, float)) and not float(exact).is_integer():
                found.add(index)
            return a // b if floor else exact

        traced = self._traced
        values = values or {}
        try:
            for lid, value in values.items():
                self.literals[lid].node.value = value
            code = compile(traced, "<pal program>", "exec")
        finally:
            for lid in values:
                self.literals[lid].node.value = self._defaults[lid]
        namespace: dict[str, Any] = {"__builtins__": dict(SAFE_BUILTINS), "__name__": "pal_program",
                                     _QUOTIENT: quotient}
        with deadline(self.timeout):
            exec(code, namespace)  # noqa: S102 - the validated tree with its divisions wrapped
            namespace["solution"]()
        return frozenset(found)

    @cached_property
    def _traced(self) -> ast.Module:
        """The program with every ``a / b`` and ``a // b`` calling the tracer, built once; its literal nodes are the
        program's own, so that the literal replacement of each run reaches it."""
        memo: dict[int, Any] = {id(lit.node): lit.node for lit in self.literals}
        tree = copy.deepcopy(self.tree, memo)
        count = 0

        class Wrap(ast.NodeTransformer):
            def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
                nonlocal count
                self.generic_visit(node)
                if not isinstance(node.op, (ast.Div, ast.FloorDiv)):
                    return node
                count += 1
                call = ast.Call(ast.Name(_QUOTIENT, ast.Load()), [ast.Constant(count), ast.Constant(
                    isinstance(node.op, ast.FloorDiv)), node.left, node.right], [])
                return ast.copy_location(call, node)

            def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
                self.generic_visit(node)
                if not isinstance(node.op, (ast.Div, ast.FloorDiv)) or not isinstance(node.target, ast.Name):
                    return node
                load = ast.Name(node.target.id, ast.Load())
                value = self.visit_BinOp(ast.BinOp(load, node.op, node.value))
                return ast.copy_location(ast.Assign([node.target], value), node)

        Wrap().visit(tree)
        return ast.fix_missing_locations(tree)


#: The name a traced program calls for each division (not a name a validated program can write: dunder-like).
_QUOTIENT = "__arc_quotient__"

_FOLDABLE = (ast.BinOp, ast.UnaryOp, ast.Constant, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod,
             ast.USub, ast.UAdd)


def close_to(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _strip_prints(func: ast.FunctionDef) -> None:
    """Remove ``print(...)`` statements (no output channel in an entry); empty blocks get ``pass``."""
    for node in ast.walk(func):
        for attr in ("body", "orelse", "finalbody"):
            block = getattr(node, attr, None)
            if not isinstance(block, list) or not block or not isinstance(block[0], ast.stmt):
                continue
            kept = [
                s for s in block
                if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)
                        and isinstance(s.value.func, ast.Name) and s.value.func.id == "print")
            ]
            if len(kept) != len(block):
                setattr(node, attr, kept or [ast.Pass()])


def _rename_reserved(func: ast.FunctionDef) -> dict[str, str]:
    """Rename local variables whose names an entry reserves or the validator forbids (``input = 5``)."""
    stored = {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    stored |= {a.arg for n in ast.walk(func) if isinstance(n, ast.arguments) for a in n.args}
    taken = {n.id for n in ast.walk(func) if isinstance(n, ast.Name)}
    renames: dict[str, str] = {}
    for name in sorted(stored):
        if name in RESERVED_NAMES or keyword.iskeyword(name) or (name.startswith("__") and name.endswith("__")):
            new = name.strip("_") + "_value"
            while new in taken:
                new += "_"
            renames[name] = new
            taken.add(new)
    if renames:
        for node in ast.walk(func):
            if isinstance(node, ast.Name) and node.id in renames:
                node.id = renames[node.id]
            elif isinstance(node, ast.arg) and node.arg in renames:
                node.arg = renames[node.arg]
    return renames


def _position(node: ast.AST) -> tuple[int, int]:
    """Where a node is written (nodes without a position, operators and contexts, first)."""
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


def _collect_literals(func: ast.FunctionDef) -> list[Literal]:
    literals: list[Literal] = []
    body = [s for s in func.body if not is_docstring(s)]

    def visit_stmt(stmt: ast.stmt, top: bool, in_loop: bool) -> None:
        target = _assigned_name(stmt)
        names = tuple(sorted({n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}))
        direct: dict[int, str] = {}
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if len(targets) == 1:
                t, v = targets[0], stmt.value
                if isinstance(t, ast.Name) and numeric_node(v) is not None:
                    direct[id(numeric_node(v))] = t.id
                elif isinstance(t, ast.Tuple) and isinstance(v, ast.Tuple) and len(t.elts) == len(v.elts):
                    for te, ve in zip(t.elts, v.elts):
                        if isinstance(te, ast.Name) and numeric_node(ve) is not None:
                            direct[id(numeric_node(ve))] = te.id
        excluded = _excluded_constants(stmt)
        own_exprs = _own_expressions(stmt)
        for expr in own_exprs:
            shares = _share_factors(expr)
            for node in sorted(ast.walk(expr), key=_position):  # as written: "3 * 7 + 2 * 4 + 3" reads its 3s left first
                if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
                    literals.append(Literal(
                        id=len(literals), node=node, value=node.value, order=len(literals),
                        direct=direct.get(id(node)), target=target, names=names, top_level=top, in_loop=in_loop,
                        excluded=excluded.get(id(node)), in_share=id(node) in shares,
                    ))
        for attr in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(stmt, attr, None)
            if isinstance(block, list):
                loop = in_loop or isinstance(stmt, (ast.For, ast.While))
                for child in block:
                    if isinstance(child, ast.ExceptHandler):
                        for s in child.body:
                            visit_stmt(s, False, loop)
                    elif isinstance(child, ast.stmt):
                        visit_stmt(child, False, loop)

    for stmt in body:
        visit_stmt(stmt, True, False)
    return literals


def _share_factors(expr: ast.AST) -> set[int]:
    """Ids of the constants written next to a scale to a share: the 20 of ``20 / 100``, ``20 * .01``, ``.01 * 20``,
    ``100000 * 20 * .01`` and ``x * 20 / 100``; not the base of a product (the 40 students of ``40 * (100 - 40) /
    100``, the 20 pencils of ``20 * 25 / 100``), whose value a percent mention may share by chance."""
    found: set[int] = set()

    def next_to_scale(node: ast.AST, right_side: bool) -> None:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            node = node.right if right_side else node.left
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            found.add(id(node))

    for node in ast.walk(expr):
        if not isinstance(node, ast.BinOp):
            continue
        if isinstance(node.op, ast.Div) and isinstance(node.right, ast.Constant) and node.right.value == 100:
            next_to_scale(node.left, right_side=True)
        elif isinstance(node.op, ast.Mult) and isinstance(node.right, ast.Constant) and node.right.value == 0.01:
            next_to_scale(node.left, right_side=True)
        elif isinstance(node.op, ast.Mult) and isinstance(node.left, ast.Constant) and node.left.value == 0.01:
            next_to_scale(node.right, right_side=False)
    return found


def _own_expressions(stmt: ast.stmt) -> list[ast.AST]:
    """The expressions of a statement itself (not of the statements nested in its blocks)."""
    out: list[ast.AST] = []
    for name, value in ast.iter_fields(stmt):
        if name in ("body", "orelse", "finalbody", "handlers"):
            continue
        if isinstance(value, ast.AST):
            out.append(value)
        elif isinstance(value, list):
            out += [v for v in value if isinstance(v, ast.AST)]
    return out


def numeric_node(node: ast.expr) -> ast.Constant | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node
    return None


def _assigned_name(stmt: ast.stmt) -> str | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) and isinstance(stmt.target, ast.Name):
        return stmt.target.id
    if isinstance(stmt, ast.Return):
        return "answer"
    return None


def _excluded_constants(stmt: ast.stmt) -> dict[int, str]:
    """Literals that are never question quantities: round() digits, indices, negative-zero signs..."""
    out: dict[int, str] = {}
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "round" and len(node.args) > 1:
            for sub in ast.walk(node.args[1]):
                out[id(sub)] = "round() precision"
        elif isinstance(node, ast.Subscript):
            for sub in ast.walk(node.slice):
                out[id(sub)] = "an index"
        elif (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) and isinstance(node.left, ast.Constant)
              and node.left.value == 1 and not isinstance(node.left.value, bool) and not isinstance(node.right, ast.Constant)):
            out[id(node.left)] = "the whole of a complement or growth factor (1 - x, 1 + x)"
    return out

"""Program-of-Thought transcripts → verified cache entries, offline (MiniCache's construction, no LLM).

A transcript is a question plus a Python program that answers it (``def solution():`` whose
docstring is the question, whose literals are the question's numbers, and which returns the
answer). For each transcript this module

1. joins it to a reference question with a gold answer (``no_match_in_gsm8k``);
2. parses and safety-checks the program (``unparsable_program``, ``unsafe_program``); a GSM-Hard
   program's replaced literal is mapped back to the original question's number by diffing the
   GSM-Hard question against the original;
3. runs the program on the original numbers and compares with the gold answer
   (``wrong_on_original``, ``runtime_error``);
4. decides which literals are parameters: a literal whose value (or a number-word / percent form of
   it) is stated in the question is a parameter, mapped to exactly one mention of the question; unit
   constants (60 minutes, 100 percent, 7 days...) that the question does not state stay constants
   (``no_parameters`` when nothing is left). A number word the literal came from ("half" for the 2
   of ``x / 2``, "twice") becomes a parameter read as its number or its reciprocal, so "one third"
   can take its place; so does a unit fraction ("1/5 occupied": ``0.2``, or the 5 of ``/ 5``). A
   constant the program converted from a stated duration or measure ("after 2 weeks" as
   ``days = 14``, "every 3 months" as ``harvests = 4`` in a year) becomes that number with the
   conversion written out (``weeks * 7``, ``12 / months``), when the other unit is in the question
   or the variable's name. A number written into a measure ("12-pound bags") is stated even
   where its value looks like a unit constant. A parameter the program may have precomputed a
   constant from (one or two steps, ``0.3`` from "40% ... the rest equally divided") or that a
   unit-constant literal may repeat stays constant, unless the repeat is unambiguous (the question
   states the value once and the literal's variable shares a word with it). A number of the
   question no literal reads becomes a free slot (the reasoning ignores it, so a variant may
   change it) when every literal is accounted for, never half of a fraction nor a one (a program
   multiplies by 1 without writing it);
5. writes one entry source in the project's format: a root ``@semantic_function`` whose body is the
   program with ``load()`` bindings for the parameters, a ``narrate()`` after every step and
   ``return {"answer": ...}``, plus an ``entry_point`` whose template is the original question with
   each parameter's mention replaced by its slot;
6. validates the entry with exactly the device's code: registers and compiles it, matches the
   original question through the template fast path (``template_mismatch``), runs the compiled entry
   and compares with gold (``wrong_on_original``), then N round trips — other values rendered into
   the template, extracted by the fast path, run compiled, compared with the original program run
   on the same values (``round_trip_failed`` below pass rate alpha).

Each transcript is a MiniCache group of one (:mod:`builder.pot_groups`); a failed round trip is
retried with the offending parameters kept constant.

Entries' ``question``: ``Registry.check_entry`` requires ``template.format(originals)`` to equal the
question (whitespace- and case-normalised), and values render as digits. So where a parameter is
written differently in the original question ("three", "80,000", "2.50"), the entry's ``question``
is the original with those mentions written as digits; the verbatim original is kept in the module
docstring and in ``index.json``, and the template fast path still matches the verbatim original.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import hashlib
import itertools
import json
import keyword
import math
import operator
import os
import random
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from builder.confined_pool import MalformedReply, WorkerLost, confined_map, rebuild_dataclass
from builder.time_limit import time_limit
from builder.gsm8k import (
    Mention,
    ReferenceIndex,
    context_words,
    is_close,
    read_jsonl,
    replaced_numbers,
    scan_numbers,
    words_after,
)
from builder.independent import IndependentProgram, load_independent, load_worked_solutions
from builder.pot_groups import GenerationFailed, GroupPolicy, PotGroup, Validation
from edge_runtime.route.embedder import Embedder
from edge_runtime.errors import ArcError, CompileError, DefinitionError, ExtractionError, UnsafeCodeError
from edge_runtime.entries.metadata import Param, format_value
from edge_runtime.read.values import parse_quantity
from edge_runtime.entries.sandbox import SAFE_BUILTINS
from edge_runtime.entries.validator import FORBIDDEN_MODULE_NAMES, FORBIDDEN_NAMES, validate_source
from edge_runtime.execute.worker_pool import _dumps_for_parent

REASONS: tuple[str, ...] = (
    "no_match_in_gsm8k",
    "unparsable_program",
    "unsafe_program",
    "no_parameters",
    "template_mismatch",
    "wrong_on_original",
    "round_trip_failed",
    "independent_disagreement",
    "runtime_error",
)
"""The fixed vocabulary of rejection reasons."""

#: Numbers that are usually unit conversions, not quantities of the question (60 minutes, 7 days...).
UNIT_CONSTANTS = frozenset({7, 10, 12, 24, 30, 31, 52, 60, 100, 365, 1000, 3600, 0.01})
#: Iterations a generated ``while`` loop may run before the entry gives up (an ExecutionError, i.e. a MISS).
MAX_LOOP_STEPS = 100_000
#: Local names a generated entry needs for itself; a program variable with one of these names is renamed.
_RESERVED = frozenset({
    "ctx", "payload", "params", "load", "narrate", "do", "convert", "lm", "extract", "smart_convert",
    "invoke_tool", "semantic_function", "entry_point", "Param", "int", "float", "print",
}) | FORBIDDEN_NAMES | FORBIDDEN_MODULE_NAMES
_STOP = frozenset("a an the of for to and or than that more less each per in on at by with from is are was were "
                  "his her their its it he she they we you this these those as".split())
_SYNONYMS = {
    "daily": "day", "days": "day", "weekly": "week", "weeks": "week", "monthly": "month", "months": "month",
    "yearly": "year", "years": "year", "annual": "year", "hourly": "hour", "hours": "hour", "hr": "hour",
    "minutes": "minute", "mins": "minute", "min": "minute", "percentage": "percent", "pct": "percent",
    "cents": "cent", "dollars": "dollar", "price": "cost", "costs": "cost", "dozens": "dozen",
}


class Rejected(Exception):
    """A transcript that does not become an entry, with a reason from :data:`REASONS`."""

    def __init__(self, reason: str, detail: str = "") -> None:
        assert reason in REASONS, reason
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


# ---------------------------------------------------------------------------------------------
# Transcripts
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Transcript:
    """One PoT transcript joined to its reference question."""

    row: int  # line of the transcript file
    code: str
    question: str  # the reference (original) question: the template is built from it
    gold: Any
    ref_index: int  # row of the reference file: the entry id is derived from it
    docstring: str = ""
    variant: str = ""  # GSM-Hard question (one number replaced), when the file has one
    join: str = "exact"
    id_prefix: str = "gsm8k"
    #: Programs written by someone else for the same question (builder.independent): the entry is
    #: verified only where it agrees with one of them on rendered variants.
    independent: tuple[IndependentProgram, ...] = ()

    @property
    def entry_id(self) -> str:
        return f"{self.id_prefix}-{self.ref_index:04d}"


def program_docstring(code: str) -> str:
    """The docstring of ``solution()`` (empty if the code does not parse or has none)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return ""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "solution":
            return ast.get_docstring(node, clean=False) or ""
    return ""


def join_transcripts(
    rows: Sequence[dict[str, Any]], reference: ReferenceIndex, id_prefix: str = "gsm8k"
) -> list[Transcript | Rejected]:
    """Join every row to a reference question: exact on the normalised docstring (or the row's
    ``question``), then a conservative fuzzy fallback for rows still unmatched. One reference row is
    used by at most one transcript (later duplicates are ``no_match_in_gsm8k``)."""
    out: list[Transcript | Rejected | None] = [None] * len(rows)
    used: set[int] = set()
    pending: list[int] = []
    docs = []
    for i, row in enumerate(rows):
        code = str(row.get("code", ""))
        doc = program_docstring(code)
        docs.append(doc)
        text = doc or str(row.get("question", ""))
        ref = reference.exact(text)
        if ref is not None and ref.index not in used:
            used.add(ref.index)
            out[i] = _transcript(i, row, code, doc, ref, "exact", id_prefix)
        else:
            pending.append(i)
    for i in pending:
        row = rows[i]
        text = docs[i] or str(row.get("question", "")) or str(row.get("input", ""))
        ref = reference.fuzzy(text, used) or (reference.fuzzy(str(row.get("input", "")), used) if row.get("input") else None)
        if ref is not None and ref.index not in used:
            used.add(ref.index)
            out[i] = _transcript(i, row, str(row.get("code", "")), docs[i], ref, "fuzzy", id_prefix)
        else:
            out[i] = Rejected("no_match_in_gsm8k", f"row {i}: no reference question matches {text[:60]!r}")
    return [o for o in out if o is not None]


def _transcript(i: int, row: dict, code: str, doc: str, ref: Any, join: str, id_prefix: str) -> Transcript:
    return Transcript(
        row=i, code=code, question=ref.question, gold=ref.gold, ref_index=ref.index, docstring=doc,
        variant=str(row.get("input", "") or ""), join=join, id_prefix=id_prefix,
    )


# ---------------------------------------------------------------------------------------------
# Running untrusted programs
# ---------------------------------------------------------------------------------------------
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
        if func.body and _is_docstring(func.body[0]):
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

    def fold_constants(self, targets: Sequence[float]) -> int:
        """Replace a constant expression whose value is one of ``targets`` by that single literal.

        GSM-Hard sometimes wrote its replacement number as an expression (``milk_discount = 3/9``
        for "$0.3333333333333333"); folding it lets the literal be mapped back to the original."""
        wanted = [t for t in targets if not any(_close(float(lit.value), t) for lit in self.literals)]
        if not wanted:
            return 0
        folded = 0

        class Fold(ast.NodeTransformer):
            def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
                leaves = list(ast.walk(node))
                if all(isinstance(n, _FOLDABLE) for n in leaves) and all(
                    _numeric_node(n) is not None and abs(n.value) < 1e12 for n in leaves if isinstance(n, ast.Constant)
                ):
                    try:
                        value = eval(compile(ast.Expression(node), "<fold>", "eval"), {"__builtins__": {}})  # noqa: S307
                    except Exception:  # noqa: BLE001 - 1/0 and the like stay as they are
                        return self.generic_visit(node)
                    match = next((t for t in wanted if isinstance(value, (int, float)) and _close(float(value), t)), None)
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


_FOLDABLE = (ast.BinOp, ast.UnaryOp, ast.Constant, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod,
             ast.USub, ast.UAdd)


def _close(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def _is_docstring(stmt: ast.stmt) -> bool:
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
        if name in _RESERVED or keyword.iskeyword(name) or (name.startswith("__") and name.endswith("__")):
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


def _collect_literals(func: ast.FunctionDef) -> list[Literal]:
    literals: list[Literal] = []
    body = [s for s in func.body if not _is_docstring(s)]

    def visit_stmt(stmt: ast.stmt, top: bool, in_loop: bool) -> None:
        target = _assigned_name(stmt)
        names = tuple(sorted({n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}))
        direct: dict[int, str] = {}
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if len(targets) == 1:
                t, v = targets[0], stmt.value
                if isinstance(t, ast.Name) and _numeric_node(v) is not None:
                    direct[id(_numeric_node(v))] = t.id
                elif isinstance(t, ast.Tuple) and isinstance(v, ast.Tuple) and len(t.elts) == len(v.elts):
                    for te, ve in zip(t.elts, v.elts):
                        if isinstance(te, ast.Name) and _numeric_node(ve) is not None:
                            direct[id(_numeric_node(ve))] = te.id
        excluded = _excluded_constants(stmt)
        own_exprs = _own_expressions(stmt)
        for expr in own_exprs:
            for node in ast.walk(expr):
                if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
                    literals.append(Literal(
                        id=len(literals), node=node, value=node.value, order=len(literals),
                        direct=direct.get(id(node)), target=target, names=names, top_level=top, in_loop=in_loop,
                        excluded=excluded.get(id(node)),
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


def _numeric_node(node: ast.expr) -> ast.Constant | None:
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


# ---------------------------------------------------------------------------------------------
# Which literals are parameters
# ---------------------------------------------------------------------------------------------
@dataclass
class ParamPlan:
    """A parameter: one mention of the question, and the program literal(s) that state it."""

    name: str
    literals: list[tuple[int, str]]  # (literal id, form); form: "value", "percent" (25% as 0.25), "complement" (30% off as 0.7)
    mention: Mention
    original: int | float  # the value as the question states it
    type: type = int
    description: str = ""
    minimum: float | None = 0
    exclusive_minimum: bool = False
    maximum: float | None = None
    examples: tuple[Any, ...] = ()
    #: A number of the question the program never reads (no literal has its value, and every literal
    #: is accounted for): a slot whose value the reasoning ignores, so a variant may change it.
    free: bool = False
    mentions: tuple[Mention, ...] = ()  # every mention the slot stands for (several for a repeated free number)
    #: A number word the question states for a structural literal: None, the number it names ("twice" for 2,
    #: "half" for 0.5); "reciprocal", one over it ("half" for the 2 of ``x / 2``). See Param.reading.
    reading: str | None = None
    structural: bool = False

    def text(self, value: Any) -> str:
        """The value as the question would state it (the entry's Param.text)."""
        return Param(name=self.name or "p", description="", type=float if self.structural else self.type,
                     reading=self.reading).text(value)

    @property
    def literal(self) -> int:
        """The first literal (it names the parameter)."""
        return self.literals[0][0]

    def literal_values(self, value: Any) -> dict[int, Any]:
        """The program literals for a parameter value."""
        return {lid: literal_form(value, form) for lid, form in self.literals}


def oracle_values(params: Sequence[ParamPlan], values: dict[str, Any]) -> dict[int, Any]:
    """Literal id -> value for running the original program on parameter values."""
    out: dict[int, Any] = {}
    for p in params:
        out.update(p.literal_values(values[p.name]))
    return out


@dataclass
class Plan:
    """How one program becomes an entry: its parameters and what stays constant, and why."""

    params: list[ParamPlan]
    restored: dict[int, Any]  # literal id -> original value (GSM-Hard numbers mapped back)
    constants: list[str]  # human-readable notes: "60 (unit constant, not in the question)"
    unused_mentions: list[str]  # question numbers no literal maps to
    frozen: list[str] = field(default_factory=list)  # parameters kept constant, by name
    unexplained: list[str] = field(default_factory=list)  # literals neither stated nor unit constants


def _tokens(text: str) -> set[str]:
    words = re.findall(r"[a-z]+", text.lower().replace("_", " "))
    out = set()
    for w in words:
        if w in _STOP or len(w) < 2:
            continue
        w = _SYNONYMS.get(w, w)
        if len(w) > 3 and w.endswith("s"):
            w = w[:-1]
        out.add(w[:5])
    return out


_MONEY_WORDS = (
    "price cost dollar cent pay paid earn spend spent money fee wage salary charge budget income profit bill tip "
    "tax rent fare sell sold buy bought saving discount allowance cash fund worth revenue debt loan change "
    "expense amount value rate"
)
_TIMES = re.compile(r"\s*(times|x)\b", re.IGNORECASE)
_DIMENSION_BEFORE = re.compile(r"\d\s*[x×]\s*$", re.IGNORECASE)


_MONEY_TOKENS = _tokens(_MONEY_WORDS)


def _similarity(literal: Literal, question: str, mention: Mention, plain_twin: bool = False) -> float:
    """Word overlap of the mention's neighbourhood with the literal's variable names, plus cues. ``plain_twin``:
    the question also states the mention's value as a plain number (the "4" of "2 x 4" beside "$4")."""
    ctx = _tokens(context_words(question, mention, 5, 5))
    own_text = " ".join([literal.direct or "", literal.target or ""])
    own = _tokens(own_text)
    others = _tokens(" ".join(literal.names))
    score = len(ctx & own) + 0.25 * len(ctx & others)
    name_money = bool(_tokens(literal.direct or " ".join(literal.names)) & _MONEY_TOKENS)
    if mention.money and literal.direct and not name_money:
        score -= 0.5
    elif mention.money and name_money and plain_twin:
        score += 0.5  # "A 2 x 4 costs $4": a price is the "$4", not the "4" of "2 x 4"
    if _DIMENSION_BEFORE.search(question[max(0, mention.start - 4):mention.start]):
        score -= 0.5  # the 10 of "2 x 4 x 10 boards" is a size, not the count or price of the boards
    if _TIMES.match(question[mention.end:mention.end + 8]):
        if literal.direct and not re.search(r"times|factor|multipl|ratio|rate", literal.direct):
            score -= 0.5
        elif not literal.direct:
            score += 0.25
    return score


def literal_form(value: Any, form: str) -> Any:
    """The program literal for a parameter value: the same arithmetic as the generated entry."""
    if ":" in form:  # a unit conversion the program precomputed (see _UNIT_LIFTS)
        operation, _, factor, factor_first = _conversion(form)
        try:
            return operation(factor, value) if factor_first else operation(value, factor)
        except ZeroDivisionError:
            return math.inf
    if form == "percent":
        return value / 100
    if form == "complement":
        return 1 - value / 100
    if form == "increase":
        return 1 + value / 100
    return value


_DECREASE = re.compile(r"\b(decrease[sd]?|off|discount(ed)?|less|reduc(e|ed|es|tion)|lower|drop(s|ped)?|los[te]s?|fall|fell|cheaper|sale)\b", re.IGNORECASE)


def _value_matches(value: float, mention: Mention, question: str = "") -> str | None:
    """The form under which ``value`` is this mention's number, else None (a percent whose value
    and complement coincide, "50% off", is read by the words around it)."""
    forms = [form for candidate, form in mention.literal_values() if _close(candidate, value)]
    if mention.percent and _close(1 + float(mention.value) / 100, value):
        forms.append("increase")  # "50% more" written as 1.5
    if not forms:
        return None
    if "percent" in forms and "complement" in forms:
        around = question[max(0, mention.start - 40):mention.end + 40]
        return "complement" if _DECREASE.search(around) else "percent"
    return forms[0]


#: Variables named after a unit conversion hold that conversion, whatever the question says nearby.
_UNIT_NAMES: dict[frozenset[str], float] = {
    frozenset(k.split()): v for k, v in {
        "month year": 12, "week year": 52, "day year": 365, "day week": 7, "hour day": 24, "minute hour": 60,
        "second minute": 60, "second hour": 3600, "cent dollar": 100, "inch foot": 12, "inch feet": 12,
        "foot yard": 3, "feet yard": 3, "ounce pound": 16, "day month": 30, "minute day": 1440, "week month": 4,
        "centimeter meter": 100, "cm meter": 100, "gram kilogram": 1000, "gram kg": 1000, "meter kilometer": 1000,
        "meter km": 1000, "milliliter liter": 1000, "ml liter": 1000, "quart gallon": 4, "egg dozen": 12,
        "item dozen": 12, "percent whole": 100,
    }.items()
}


def _unit_name(literal: Literal) -> str | None:
    """``months_in_year = 12``: a unit conversion by its variable's name (never a parameter)."""
    if not literal.direct:
        return None
    words = {_SYNONYMS.get(w, w) for w in literal.direct.lower().split("_")}
    words = {w[:-1] if len(w) > 3 and w.endswith("s") and w != "inches" else ("inch" if w == "inches" else w) for w in words}
    for pair, value in _UNIT_NAMES.items():
        if pair <= words and _close(float(literal.value), value):
            return f"unit constant ({' per '.join(sorted(pair))})"
    return None


#: Conversions a program precomputes from a stated duration or measure: (smaller unit, larger unit, factor).
#: "after 2 weeks" became ``days = 14`` (2 x 7), "every 3 months ... in a year" ``harvests = 4`` (12 / 3),
#: "a 30-minute show" ``0.5`` hours (30 / 60).
_UNIT_LIFTS: tuple[tuple[str, str, int], ...] = (
    ("day", "week", 7), ("month", "year", 12), ("week", "year", 52), ("day", "year", 365), ("hour", "day", 24),
    ("minute", "hour", 60), ("second", "minute", 60), ("inch", "foot", 12), ("ounce", "pound", 16),
    ("cent", "dollar", 100),
)
_LIFT_UNITS = {unit for small, big, _ in _UNIT_LIFTS for unit in (small, big)}
#: Plurals _SYNONYMS does not already fold.
_UNIT_WORDS = {"seconds": "second", "inches": "inch", "feet": "foot", "ounces": "ounce", "pounds": "pound", "hrs": "hour"}
#: A conversion form "kind:factor": kind -> (operation, its AST operator, whether the factor comes first).
_CONVERSIONS = {"times": (operator.mul, ast.Mult, False), "per": (operator.truediv, ast.Div, True),
                "div": (operator.truediv, ast.Div, False)}


def _conversion(form: str) -> tuple[Callable[[Any, Any], Any], type[ast.operator], int | float, bool]:
    """(operation, AST operator, factor, factor first) of a conversion form: "per:12" is 12 / value."""
    kind, text = form.split(":")
    number = float(text)
    operation, ast_operator, factor_first = _CONVERSIONS[kind]
    return operation, ast_operator, int(number) if number.is_integer() else number, factor_first


def _unit_word(word: str) -> str:
    word = word.lower()
    return _UNIT_WORDS.get(word, _SYNONYMS.get(word, word))


def _lifted_form(value: float, mention: Mention, question: str, question_units: set[str], literal: Literal) -> str | None:
    """How a constant the program precomputed is this mention converted between units, else None.

    The mention must name its unit ("2 weeks", "every 3 months", "a 30-minute show", "$24" for 2400 cents) and the other unit of
    the conversion must appear in the question (``question_units``: its words as units) or in the program's
    variable names, so that ``14`` is read as 2 weeks in days only where days are what the question counts."""
    after = words_after(question, mention, 1)
    unit = _unit_word(after[0]) if after else None
    if mention.money and unit not in _LIFT_UNITS:
        unit = "dollar"  # "$24.00" names dollars; "50 cents" and "$2 weekly" keep their own unit
    if unit is None or not mention.parameterisable or float(mention.value) == 0:
        return None
    around = question_units | {_unit_word(w) for name in literal.names for w in name.lower().split("_")}
    m = float(mention.value)
    for small, big, factor in _UNIT_LIFTS:
        if unit == big and small in around and _close(value, m * factor):
            return f"times:{factor}"  # 2 weeks -> 14 days
        if unit == small and big in around and _close(value, factor / m):
            return f"per:{factor}"  # every 3 months -> 4 times a year
        if unit == small and big in around and _close(value, m / factor):
            return f"div:{factor}"  # 30 minutes -> 0.5 hours
    return None


def _hyphenated_measure(question: str, mention: Mention) -> bool:
    """"12-pound bags", "a 1-pound box": a number written into a measure is stated, not a unit constant."""
    return mention.kind == "digits" and re.match(r"-[A-Za-z]", question[mention.end:mention.end + 2]) is not None


def plan_parameters(
    question: str, program: PalProgram, variant: str = "", docstring: str = "", frozen: Sequence[str] = (),
    free_numbers: bool = True, structural_words: bool = True, freeze_derived: bool = True,
) -> Plan:
    """Map the program's literals to the question's mentions.

    1. GSM-Hard: a literal equal to a number the variant question put in place of an original
       mention gets that mention's value back (values only: the variant and its program do not
       always agree on *which* quantity was replaced, so the mention is chosen in step 2).
    2. Every literal, assignments ``var = <number>`` first, then in source order, takes a free
       mention with the same value (or percent forms of it), best variable/context word overlap
       first; unit constants inside expressions need some word overlap. A literal whose value is a
       mention another literal already took shares that parameter ("70 corn chips each").
    3. Mentions written as words that cannot be rendered as digits ("half", "twice") stay constants;
       a parameter that a constant not stated in the question was computed from is frozen too (the
       program precomputed something from it, so it cannot vary) — unless ``freeze_derived`` is
       False: an independent program that checks an entry reads every number it can (a stale
       constant there makes it disagree, which only costs the entry a parameter).
    """
    mentions = scan_numbers(question)
    restored: dict[int, Any] = {}
    if variant and variant.strip() and variant.strip() != (docstring or question).strip():
        replacements = replaced_numbers(variant, question, mentions)
        for form in ("value", "percent"):  # exact values first: a scaled match is only a fallback
            for rep in replacements:
                if form == "percent" and not rep.mention.percent:
                    continue
                target = literal_form(rep.variant_value, form)
                for lit in program.literals:
                    if lit.id not in restored and not lit.excluded and _close(float(lit.value), target):
                        value: Any = literal_form(rep.mention.value, form)
                        restored[lit.id] = float(value) if isinstance(lit.value, float) else value
    for lit in program.literals:
        if lit.excluded is None:
            value = restored.get(lit.id, lit.value)
            probe = Literal(**{**lit.__dict__, "value": value})
            lit.excluded = _unit_name(probe)
    assigned: dict[int, tuple[Mention, str]] = {}  # literal id -> (mention, form)
    pool = [lit for lit in program.literals if not lit.excluded]
    plain_values = {m.value for m in mentions if not m.money}
    candidates = []
    for lit in pool:
        value = float(restored.get(lit.id, lit.value))
        if value == 0.0 and not lit.direct:
            continue  # 0 inside an expression is arithmetic, not a quantity
        for mention in mentions:
            form = _value_matches(value, mention, question)
            if form is None:
                continue
            sim = _similarity(lit, question, mention, mention.value in plain_values)
            if (not lit.direct and sim <= 0 and (value in UNIT_CONSTANTS or value == 1.0) and mention.kind != "structural"
                    and not _hyphenated_measure(question, mention)):
                continue  # "/ 60" next to "60%", "+ 1" next to "1 dog": arithmetic, not that mention
            score = sim - (0.3 if mention.kind == "structural" else 0) - (0.2 if form != "value" else 0)
            candidates.append([score, lit, mention, form, value])
    # ties: keep the order of same-valued literals and mentions ("3 sprints 3 times a week")
    rank_l: dict[int, int] = {}
    rank_m: dict[tuple[float, int], int] = {}
    for value in {c[4] for c in candidates}:
        lits = sorted({c[1].id: c[1] for c in candidates if c[4] == value}.values(), key=lambda lit: lit.order)
        ments = sorted({c[2].index for c in candidates if c[4] == value})
        for i, lit in enumerate(lits):
            rank_l[lit.id] = i
        for i, index in enumerate(ments):
            rank_m[(value, index)] = i
    candidates.sort(key=lambda c: (
        -c[0], 0 if c[1].direct else 1, abs(rank_l[c[1].id] - rank_m[(c[4], c[2].index)]), c[1].order, c[2].index,
    ))
    taken: set[int] = set()
    for score, lit, mention, form, value in candidates:
        if lit.id in assigned or mention.index in taken:
            continue
        assigned[lit.id] = (mention, form)
        taken.add(mention.index)
    # a literal whose value is a mention another literal took shares that parameter ("70 chips each")
    # (an inline literal too, when the question states its value once and the literal's variable names the same
    # thing as the variable that took it: ``sunday_gingerbread = 10 + more`` after ``saturday_gingerbread = 10``)
    for score, lit, mention, form, value in candidates:
        if lit.id in assigned or score <= 0 or form != "value" or not mention.parameterisable:
            continue
        owner = [lid for lid, (m, _) in assigned.items() if m.index == mention.index]
        if not owner or assigned[owner[0]][1] != "value":
            continue
        if not lit.direct:
            owner_name = program.literal(owner[0]).direct
            if (not owner_name or not _tokens(lit.target or "") & _tokens(owner_name)
                    or sum(any(_close(v, value) for v, _ in m.literal_values()) for m in mentions) != 1):
                continue
        assigned[lit.id] = (mention, form)
    # a constant the program precomputed from a stated duration or measure becomes that number, converted
    question_units = {_unit_word(w) for w in re.findall(r"[a-z]+", question.lower())}
    for lit in pool:
        constant = float(restored.get(lit.id, lit.value))
        if lit.id in assigned or constant == 0:
            continue
        for mention in mentions:
            if mention.index in taken:
                continue
            lifted = _lifted_form(constant, mention, question, question_units, lit)
            if lifted is not None:
                assigned[lit.id] = (mention, lifted)
                taken.add(mention.index)
                break
    constants: list[str] = []
    unexplained: list[str] = []
    by_mention: dict[int, ParamPlan] = {}
    conflicting: set[int] = set()
    params: list[ParamPlan] = []
    for lit in program.literals:
        value = restored.get(lit.id, lit.value)
        shown = format_value(value)
        if lit.excluded:
            constants.append(f"{shown} ({lit.excluded})")
            continue
        if lit.id not in assigned:
            if float(value) in UNIT_CONSTANTS:
                constants.append(f"{shown} (unit constant, not stated in the question)")
            else:
                constants.append(f"{shown} (not stated in the question)")
                unexplained.append(shown)
            continue
        mention, form = assigned[lit.id]
        reading: str | None = None
        if not mention.parameterisable:
            structural = _structural_slot(question, mention, float(value)) if structural_words else None
            if structural is None:
                constants.append(f"{shown} (the question's word {mention.text!r}: cannot be re-rendered as digits)")
                continue
            mention, reading = structural
        if mention.index in by_mention:
            if by_mention[mention.index].reading != reading:
                conflicting.add(mention.index)  # "half" as 0.5 here and as the 2 of "/ 2" there: no one reading
            by_mention[mention.index].literals.append((lit.id, form))
            continue
        plan = ParamPlan(name="", literals=[(lit.id, form)], mention=mention, original=mention.value)
        if mention.kind == "structural":
            plan.original, plan.reading, plan.structural = float(value), reading, True
        by_mention[mention.index] = plan
        params.append(plan)
    for index in conflicting:
        plan = by_mention.pop(index)
        params.remove(plan)
        constants.append(f"{plan.mention.text!r} (read both as a number and as its reciprocal: kept constant)")
    _name_params(params, program, question, _all_names(program.func))
    derived = _derived_from(program, params, restored, mentions, set(assigned)) if freeze_derived else {}
    frozen_all = set(frozen) | set(derived)
    kept = [p for p in params if p.name not in frozen_all]
    for p in params:
        if p.name in frozen_all:
            why = derived.get(p.name) or "a failed round trip"
            constants.append(f"{format_value(p.original)} ({p.name}, kept constant: {why})")
    settled = free_numbers and not unexplained and not frozen_all  # no constant may come from a stated number
    read = {mm.index for mm, _ in assigned.values()}  # mentions a literal reads
    if settled:
        _join_repeats(question, kept, mentions, read)
    used = {m.index for p in kept for m in (p.mentions or (p.mention,))}
    spans = [(m.start, m.end) for p in kept for m in (p.mentions or (p.mention,))]
    unused_mentions = [m for m in mentions if m.kind in ("digits", "word") and m.index not in used
                       and m.index not in read
                       and not any(a < m.end and m.start < b for a, b in spans)]  # "One" of "One third"
    unused = [repr(m.text) for m in unused_mentions]
    if settled:
        kept += _free_params(question, unused_mentions, program, restored, {p.name for p in kept} | _all_names(program.func))
    return Plan(kept, restored, constants, unused, sorted(frozen_all & {p.name for p in params}), unexplained)


#: Number words a variant may restate with another number ("twice" → "three times", "half" → "one third").
_MULTIPLIERS = {"twice", "thrice", "double", "triple", "quadruple"}
_FRACTIONS = {"half", "third", "quarter", "fourth", "fifth", "sixth", "eighth", "tenth"}


def _structural_slot(question: str, mention: Mention, literal: float) -> tuple[Mention, str | None] | None:
    """The mention as a slot for a structural literal, and how it reads, or None if it stays a constant.

    "twice" → 2 and "half" → 0.5 read as the number they name; "half" → the 2 of ``x / 2`` reads as
    its reciprocal. A fraction's article joins the slot ("a third"), so "two thirds" can take its place."""
    low = mention.text.lower()
    word = low.split("-")[-1]
    if re.fullmatch(r"1/\d+", low):  # "1/5": the 0.2 it states, or the 5 a program divides by
        natural = float(mention.value)
        reading = None if _close(literal, natural) else "reciprocal" if _close(literal, 1 / natural) else ""
        return (mention, reading) if reading != "" else None
    if low not in _MULTIPLIERS and word not in _FRACTIONS and not (word.endswith("s") and word[:-1] in _FRACTIONS and "-" in low):
        return None
    start, text = mention.start, mention.text
    article = re.search(r"\b(an?|one)\s+$", question[max(0, start - 5):start], re.IGNORECASE)
    if article and word in _FRACTIONS and "-" not in low:
        start -= len(article.group(0))
        text = question[start:mention.end]
    try:
        natural = float(parse_quantity(text).value)
    except (ArcError, ValueError, ZeroDivisionError):
        return None
    if natural and _close(literal, natural):
        reading = None
    elif natural and _close(literal, 1 / natural):
        reading = "reciprocal"
    else:
        return None
    return Mention(mention.index, start, mention.end, text, natural, mention.kind, mention.percent, mention.money,
                   mention.alternatives), reading


def _join_repeats(question: str, params: Sequence[ParamPlan], mentions: Sequence[Mention], taken: set[int]) -> None:
    """A parameter's number stated again for the same thing ("Katherine has 5 hanging baskets ... filling
    all 5 hanging baskets") becomes another mention of that parameter, so a variant restates both.

    Same spelling and the same word after it; no literal reads the repeat. Left a constant, the repeat
    would refuse every variant that changes both (the guard finds the entry's 5 missing). Joined, the
    slot binds only when the two agree, and the program, right on the original, reads the value once.
    Only called when every literal is explained: no constant may have been computed from the repeat."""
    joined = {m.index for p in params for m in (p.mentions or (p.mention,))}
    for p in params:
        if p.free or p.structural or p.reading or p.mention.kind not in ("digits", "word"):
            continue
        head = words_after(question, p.mention, 1)
        if not head or head[0] in _STOP:
            continue
        repeats = tuple(
            m for m in mentions
            if m.index not in joined and m.index not in taken and m.kind == p.mention.kind
            and m.text.lower() == p.mention.text.lower() and words_after(question, m, 1) == head
        )
        if repeats:
            p.mentions = tuple(sorted((p.mention, *repeats), key=lambda m: m.start))
            joined.update(m.index for m in repeats)


def _free_params(question: str, unused: Sequence[Mention], program: PalProgram, restored: dict[int, Any],
                 taken: set[str]) -> list[ParamPlan]:
    """Slots for the question's numbers that no literal reads. Only when every literal is explained
    (stated in the question or a unit constant): an unexplained literal may have been computed from
    one of them ("harvests_per_year = 4" from "every 3 months"), which would then have to stay fixed.
    A number equal to any literal's value (in any form) is not free either: the program may use it
    under a name the matching missed ("carrots * 12" for "12-pound bags"). Repeats of one number
    counting the same thing ("30 seconds ... 30 seconds") share a slot."""
    values = [float(restored.get(lit.id, lit.value)) for lit in program.literals]
    groups: dict[tuple[str, str], list[Mention]] = {}
    for mention in unused:
        if any(_value_matches(v, mention, question) for v in values):
            continue
        if re.match(r"\s*/\s*\d", question[mention.end:mention.end + 3]) or re.search(r"\d\s*/\s*$", question[:mention.start]):
            continue  # half of a fraction ("2/5 occupied"): the other half may be read, and then this one is too
        if float(mention.value) == 1:
            continue  # "for one of the implants": a program multiplies by 1 without writing it
        head = next(iter(words_after(question, mention, 1)), "")
        groups.setdefault((mention.text.lower(), head), []).append(mention)  # one spelling: one slot
    out: list[ParamPlan] = []
    for group in groups.values():
        first = group[0]
        words = [w for w in words_after(question, first, 3) if w.isalpha() and w not in _STOP][:2]
        stem = _sanitise("unused_" + "_".join(words)) if words else "unused_number"
        name, k = stem, 2
        while name in taken:
            name, k = f"{stem}_{k}", k + 1
        taken.add(name)
        context = context_words(question, first, 4, 4)
        out.append(ParamPlan(
            name=name, literals=[], mention=first, original=first.value,
            description=f"{name.replace('_', ' ')}, not read by the reasoning ({context})",
            free=True, mentions=tuple(group),
        ))
    return out


def _derived_from(
    program: PalProgram, params: Sequence[ParamPlan], restored: dict[int, Any], mentions: Sequence[Mention],
    explained: set[int],
) -> dict[str, str]:
    """Parameters the program may have precomputed into a constant, which must then stay constant:

    - a constant not stated in the question that equals a combination of a parameter with another
      value in one or two steps (``lodgepole_pine = 40`` from "twenty ... twice as many";
      ``average = total * 0.3`` from "40% ... the rest equally divided": (1 - 40/100) / 2);
    - a unit-constant literal equal to a parameter's value (``sunday = 10 + more`` where the
      question's "10 boxes" is a parameter): it may be that parameter, read twice, once as a constant.
    """
    assigned_ids = {lid for p in params for lid, _ in p.literals} | explained
    values = [(p.name, float(p.original)) for p in params if not p.free]
    values += [(p.name, float(p.original) / 100) for p in params if p.mention.percent and not p.free]
    extra = [(None, float(v)) for m in mentions if m.kind == "structural" for v in (m.value, *m.alternatives)]
    extra += [(None, float(m.value)) for m in mentions if m.kind in ("digits", "word")]
    # Two steps only through the constants of percentages and halving ((1 - 40/100) / 2): with more
    # constants, coincidences freeze parameters that are fine (measured on the GSM8K import).
    first_constants = [(None, 1.0), (None, 100.0)]
    second_constants = (2.0, 100.0)

    def combos(a: float, b: float) -> tuple[float, ...]:
        return (a + b, a - b, b - a, a * b, a / b if b else math.nan, b / a if a else math.nan)

    out: dict[str, str] = {}
    for lit in program.literals:
        if lit.id in assigned_ids or lit.excluded:
            continue
        c = float(restored.get(lit.id, lit.value))
        if c in UNIT_CONSTANTS:
            for name, value in values:
                if _close(value, c) and not lit.direct:
                    out.setdefault(name, f"the program's {format_value(c)} may be this value")
            continue
        if abs(c) in (0.0, 1.0, 2.0, 0.5):
            continue
        for (na, a), (nb, b) in itertools.product(values, values + extra + first_constants):
            if na == nb:
                continue
            first = combos(a, b)
            other_param = nb is not None and (nb, b) in values
            if any(_close(r, c) for r in first if nb is not None or b not in (1.0, 100.0)) or (
                    (other_param or nb is None and b in (1.0, 100.0)) and any(
                        _close(r2, c) for r in first if math.isfinite(r) for k in second_constants
                        for r2 in (r * k, r / k, r + k, r - k))):
                for n in (na, nb):  # every parameter that can explain it: which one did is unknowable
                    if n is not None:
                        out.setdefault(n, f"the program's {format_value(c)} may be computed from it")
    return out


def _all_names(func: ast.FunctionDef) -> set[str]:
    return {n.id for n in ast.walk(func) if isinstance(n, ast.Name)} | {
        a.arg for n in ast.walk(func) if isinstance(n, ast.arguments) for a in n.args
    }


def _sanitise(name: str) -> str:
    name = re.sub(r"[^0-9a-zA-Z_]", "_", name).strip("_").lower()
    name = re.sub(r"_+", "_", name)
    if not name or name[0].isdigit():
        name = "n_" + name
    return name


def _name_params(params: list[ParamPlan], program: PalProgram, question: str, used: set[str]) -> None:
    """Names (the program's variable where the literal is assigned directly) and descriptions."""
    bound_before = _first_bindings(program.func)
    names: set[str] = set()
    for p in params:
        lit = program.literal(p.literal)
        candidate = None
        plain = all(form == "value" for _, form in p.literals)
        converted = any(":" in form for _, form in p.literals)
        if lit.direct and lit.top_level and not lit.in_loop and bound_before.get(lit.direct) == id(lit.node):
            # `eggs_per_day = 16`: the variable itself becomes the parameter; `discount = 0.2` for
            # "20%": the parameter is the percentage and the statement computes the variable from it
            candidate = lit.direct if plain else None if converted else f"{lit.direct}_percent"
        if candidate is None or candidate in names or (candidate != lit.direct and candidate in used):
            words = [w for w in words_after(question, p.mention, 4) if w.isalpha()]
            while words and words[0] in _STOP:
                words = words[1:]
            base = "_".join(words[:3])
            if p.mention.money:
                base = "price_" + base if base else "price"
            if p.mention.percent:
                base = "percent_" + base if base else "percent"
            if lit.direct and not converted:
                base = f"{lit.direct}_given"
            elif not base:
                base = f"{lit.target or 'value'}_given"
            candidate = _sanitise(base)
            if candidate in _RESERVED or keyword.iskeyword(candidate):
                candidate += "_value"
            stem, k = candidate, 2
            while candidate in names or candidate in used:
                candidate = f"{stem}_{k}"
                k += 1
        names.add(candidate)
        p.name = candidate
    descriptions: set[str] = set()
    for p in params:
        words = p.name.replace("_", " ")
        context = context_words(question, p.mention, 4, 4)
        description = f"{words} ({context})"
        if p.mention.percent:
            description = f"{words}, in percent ({context})"
        k = 2
        while " ".join(description.lower().split()) in descriptions:
            description = f"{words} ({context}) [{k}]"
            k += 1
        descriptions.add(" ".join(description.lower().split()))
        p.description = description


def _first_bindings(func: ast.FunctionDef) -> dict[str, int]:
    """For each variable: id() of the literal node of its first binding when that binding is
    ``var = <literal>`` and ``var`` is not read before it; other variables are absent."""
    out: dict[str, int] = {}
    seen: set[str] = set()
    for stmt in func.body:
        if _is_docstring(stmt):
            continue
        reads = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        stores = [n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            node = _numeric_node(stmt.value)
            if node is not None and name not in seen:
                out[name] = id(node)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Tuple) \
                and isinstance(stmt.value, ast.Tuple) and len(stmt.targets[0].elts) == len(stmt.value.elts):
            for te, ve in zip(stmt.targets[0].elts, stmt.value.elts):
                node = _numeric_node(ve)
                if isinstance(te, ast.Name) and node is not None and te.id not in seen and te.id not in reads:
                    out[te.id] = id(node)
        seen |= reads | set(stores)
    return out


# ---------------------------------------------------------------------------------------------
# Entry source generation
# ---------------------------------------------------------------------------------------------
def _marker(name: str) -> str:
    return f"\x01{name}\x02"


def _fstring(parts: list[str | tuple[str]]) -> ast.JoinedStr:
    """An f-string AST from literal text pieces and ("name",) placeholders."""
    values: list[ast.expr] = []
    for part in parts:
        if isinstance(part, tuple):
            values.append(ast.FormattedValue(ast.Name(part[0], ast.Load()), -1, None))
        elif part:
            if values and isinstance(values[-1], ast.Constant):
                values[-1] = ast.Constant(values[-1].value + part)
            else:
                values.append(ast.Constant(part))
    return ast.JoinedStr(values)


def _clean_text(text: str) -> str:
    # Narration text is for people; quotes and backslashes would only complicate the f-string.
    return text.replace("\\", "/").replace("\n", " ").replace('"', "'")


def _substituted(expr: ast.expr, local_names: set[str]) -> list[str | tuple[str]] | None:
    """``expr`` as text with every local variable replaced by a placeholder, or None when unsafe
    (names bound inside the expression, or branches that may not be evaluated)."""
    if any(isinstance(n, (ast.Lambda, ast.comprehension, ast.IfExp, ast.BoolOp, ast.NamedExpr)) for n in ast.walk(expr)):
        return None
    marked = copy.deepcopy(expr)
    count = 0
    for node in ast.walk(marked):
        if isinstance(node, ast.Name) and node.id in local_names and isinstance(node.ctx, ast.Load):
            node.id = _marker(node.id)
            count += 1
    if count == 0:
        return None
    text = _clean_text(ast.unparse(marked))
    parts: list[str | tuple[str]] = []
    for i, piece in enumerate(re.split("\x01(\\w+)\x02", text)):
        parts.append((piece,) if i % 2 else piece)
    return parts


def _narration(parts: list[str | tuple[str]]) -> ast.Expr:
    call = ast.Call(ast.Name("narrate", ast.Load()), [ast.Name("ctx", ast.Load()), _fstring(parts)], [])
    return ast.Expr(call)


class _BodyWriter:
    """Turns the program's statements into the entry body: parameters loaded, steps narrated."""

    def __init__(self, program: PalProgram, plan: Plan) -> None:
        self.program = program
        self.plan = plan
        func_names = _all_names(program.func)
        self.locals = {n.id for n in ast.walk(program.func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        self.locals |= {p.name for p in plan.params}
        self.taken = func_names | {p.name for p in plan.params}
        self.bound: set[str] = {p.name for p in plan.params}

    def fresh(self, stem: str) -> str:
        name, k = stem, 2
        while name in self.taken:
            name = f"{stem}_{k}"
            k += 1
        self.taken.add(name)
        self.locals.add(name)
        return name

    def replace_literals(self, func: ast.FunctionDef) -> None:
        ids = {id(self.program.literal(lid).node): (p, form) for p in self.plan.params for lid, form in p.literals}
        restored = {id(self.program.literal(lid).node): v for lid, v in self.plan.restored.items()}

        class Replace(ast.NodeTransformer):
            def visit_Constant(self, node: ast.Constant) -> ast.AST:
                found = ids.get(id(node))
                if found is None:
                    if id(node) in restored:
                        return ast.copy_location(ast.Constant(restored[id(node)]), node)
                    return node
                p, form = found
                name = ast.Name(p.name, ast.Load())
                if form == "value":
                    return ast.copy_location(name, node)
                if ":" in form:
                    _, ast_operator, factor, factor_first = _conversion(form)
                    constant = ast.Constant(factor)
                    converted = (ast.BinOp(constant, ast_operator(), name) if factor_first
                                 else ast.BinOp(name, ast_operator(), constant))
                    return ast.copy_location(converted, node)
                share = ast.BinOp(name, ast.Div(), ast.Constant(100))
                if form == "complement":
                    share = ast.BinOp(ast.Constant(1), ast.Sub(), share)
                elif form == "increase":
                    share = ast.BinOp(ast.Constant(1), ast.Add(), share)
                return ast.copy_location(share, node)

        Replace().visit(func)

    def statements(self, body: list[ast.stmt], top: bool, in_loop: bool) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in body:
            if top and _is_docstring(stmt):
                continue
            if (top and isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                    and isinstance(stmt.value, ast.Name) and stmt.value.id == stmt.targets[0].id):
                continue  # `eggs_per_day = eggs_per_day`: the load() binding already did it
            out += self.statement(stmt, top, in_loop)
        return out or [ast.Pass()]

    def statement(self, stmt: ast.stmt, top: bool, in_loop: bool) -> list[ast.stmt]:
        if isinstance(stmt, ast.Return):
            return self.returning(stmt)
        if isinstance(stmt, (ast.For, ast.While)):
            stmt.body = self.statements(stmt.body, False, True)
            stmt.orelse = self.statements(stmt.orelse, False, True) if stmt.orelse else []
            assigned = sorted({n.id for s in [*stmt.body, *stmt.orelse] for n in ast.walk(s)
                               if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} & self.bound)
            head = "for loop" if isinstance(stmt, ast.For) else "while loop"
            guard: list[ast.stmt] = []
            if isinstance(stmt, ast.While):
                # a device must not hang on values the program never finishes for: cap the loop
                counter = self.fresh("loop_steps")
                guard = [ast.Assign([ast.Name(counter, ast.Store())], ast.Constant(0))]
                check = ast.parse(
                    f"{counter} += 1\n"
                    f"if {counter} > {MAX_LOOP_STEPS}:\n"
                    f"    raise ValueError('the loop did not finish within {MAX_LOOP_STEPS} steps')\n"
                ).body
                stmt.body = [*check, *stmt.body]
            parts: list[str | tuple[str]] = [f"After the {head}: "]
            if assigned and not in_loop:
                for i, name in enumerate(assigned):
                    parts += [", " if i else "", f"{name} = ", (name,)]
            else:
                parts.append("done")
            return [*guard, stmt] if in_loop else [*guard, stmt, _narration(parts)]
        if isinstance(stmt, ast.If):
            stmt.body = self.statements(stmt.body, False, in_loop)
            stmt.orelse = self.statements(stmt.orelse, False, in_loop) if stmt.orelse else []
            return [stmt]
        if isinstance(stmt, ast.Try):
            stmt.body = self.statements(stmt.body, False, in_loop)
            for handler in stmt.handlers:
                handler.body = self.statements(handler.body, False, in_loop)
            stmt.orelse = self.statements(stmt.orelse, False, in_loop) if stmt.orelse else []
            stmt.finalbody = self.statements(stmt.finalbody, False, in_loop) if stmt.finalbody else []
            return [stmt]
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            narration = None if in_loop else self.narrate_assignment(stmt)
            if top:
                self.bound |= {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            return [stmt] if narration is None else [stmt, narration]
        return [stmt]

    def narrate_assignment(self, stmt: ast.Assign | ast.AugAssign | ast.AnnAssign) -> ast.Expr | None:
        if isinstance(stmt, ast.Assign):
            targets, value, op = stmt.targets, stmt.value, " = "
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is None:
                return None
            targets, value, op = [stmt.target], stmt.value, " = "
        else:
            targets, value = [stmt.target], stmt.value
            op = f" {_OPS.get(type(stmt.op), '?')}= "
        target_text = " = ".join(_clean_text(ast.unparse(t)) for t in targets)
        parts: list[str | tuple[str]] = [target_text + op + _clean_text(ast.unparse(value))]
        plain = isinstance(value, (ast.Name, ast.Constant)) or (
            isinstance(value, ast.UnaryOp) and isinstance(value.operand, ast.Constant))
        stored = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        reads_target = any(isinstance(n, ast.Name) and n.id in stored for n in ast.walk(value))
        # the narration runs after the assignment: a value that reads its own target would show the new value
        middle = None if plain or reads_target else _substituted(value, self.locals)
        if middle is not None:
            parts += [" = ", *middle]
        names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
        simple = all(isinstance(t, ast.Name) for t in targets)
        if simple and len(names) == 1 and not isinstance(stmt, ast.AugAssign):
            if not (plain and not isinstance(value, ast.Name)):  # "years = 0" says it all
                parts += [" = ", (names[0],)]
        elif names:
            parts.append(", so ")
            for i, name in enumerate(dict.fromkeys(names)):
                parts += [", " if i else "", f"{name} = ", (name,)]
        return _narration(parts)

    def returning(self, stmt: ast.Return) -> list[ast.stmt]:
        value = stmt.value if stmt.value is not None else ast.Constant(None)
        out: list[ast.stmt] = []
        if isinstance(value, ast.Name):
            name = value.id
        else:
            name = self.fresh("answer")
            out.append(ast.Assign([ast.Name(name, ast.Store())], value))
        out.append(_narration([f"The answer is {name} = ", (name,)]))
        out.append(ast.Return(ast.Dict([ast.Constant("answer")], [ast.Name(name, ast.Load())])))
        return out


_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**"}


def entry_function_name(entry_id: str) -> str:
    return "solve_" + _sanitise(entry_id)


def root_description(t: Transcript) -> str:
    first = re.split(r"(?<=[.?!])\s", t.question.strip())[0]
    if len(first) > 90:
        first = first[:87].rstrip() + "..."
    return f"Answer question {t.entry_id} of the cache: {first}"


def build_template(question: str, params: Sequence[ParamPlan]) -> str:
    """The original question with each parameter's mention(s) replaced by its ``{slot}``."""
    pieces: list[str] = []
    pos = 0
    slots = sorted(((m, p.name) for p in params for m in (p.mentions or (p.mention,))), key=lambda item: item[0].start)
    for mention, name in slots:
        pieces.append(question[pos:mention.start].replace("{", "{{").replace("}", "}}"))
        pieces.append("{" + name + "}")
        pos = mention.end
    pieces.append(question[pos:].replace("{", "{{").replace("}", "}}"))
    return "".join(pieces)


def render_source(t: Transcript, program: PalProgram, plan: Plan) -> str:
    """The entry module: one root semantic function plus the entry point."""
    func = copy.deepcopy(program.func)
    # deep copy keeps node identities apart: map literal ids onto the copy
    mapping = {id(a): b for a, b in zip(ast.walk(program.func), ast.walk(func))}
    shadow = PalProgram.__new__(PalProgram)
    shadow.func = func
    shadow.literals = [
        Literal(**{**lit.__dict__, "node": mapping[id(lit.node)]}) for lit in program.literals
    ]
    writer = _BodyWriter(shadow, plan)
    writer.replace_literals(func)
    body = writer.statements(func.body, True, False)
    loads: list[ast.stmt] = []
    read = [p for p in plan.params if not p.free]
    for p in read:
        call = ast.Call(ast.Name("load", ast.Load()), [
            ast.Name("ctx", ast.Load()), ast.Constant(p.description), ast.Name(p.type.__name__, ast.Load()),
        ], [])
        loads.append(ast.Assign([ast.Name(p.name, ast.Store())], call))
    given: list[str | tuple[str]] = ["Given: "]
    for i, p in enumerate(read):
        given += [", " if i else "", f"{p.name} = ", (p.name,)]
    loads.append(_narration(given))
    fname = entry_function_name(t.entry_id)
    function = ast.FunctionDef(
        name=fname,
        args=ast.arguments(posonlyargs=[], args=[ast.arg("ctx")], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[*loads, *body], decorator_list=[], returns=None,
    )
    ast.fix_missing_locations(function)
    function_text = ast.unparse(function)
    description = root_description(t)
    inputs = ",\n".join(f"        {p.description!r}: {p.original!r}" for p in read)
    decorator = (
        "@semantic_function(\n"
        f"    {description!r},\n"
        f"    inputs={{\n{inputs},\n    }},\n"
        f"    outputs={{'answer': {t.gold!r}}},\n"
        ")\n"
    )
    template = build_template(t.question, plan.params)
    canonical = template.format(**{p.name: p.text(p.original) for p in plan.params})
    entry_question = t.question if _norm(canonical) == _norm(t.question) else canonical
    param_lines = []
    for p in plan.params:
        fields = [
            f"name={p.name!r}", f"description={p.description!r}", f"type={p.type.__name__}",
            f"original={p.original!r}", f"examples={tuple(p.examples)!r}",
        ]
        if p.minimum is not None:
            fields.append(f"minimum={p.minimum!r}")
        if p.exclusive_minimum:
            fields.append("exclusive_minimum=True")
        if p.maximum is not None:
            fields.append(f"maximum={p.maximum!r}")
        if p.reading is not None:
            fields.append(f"reading={p.reading!r}")
        param_lines.append("        Param(" + ", ".join(fields) + "),")
    source_name = "GSM8K test" if t.id_prefix == "gsm8k" else t.id_prefix
    entry_description = f"{source_name} question {t.ref_index}: {_shorten(t.question, 160)}"
    const = _const_name(t.entry_id)
    imports = "".join(ast.unparse(node) + "\n" for node in program.imports)
    notes = [
        f"Entry {t.entry_id}: compiled offline from a Program-of-Thought transcript (row {t.row}"
        f"{', joined ' + t.join if t.join != 'exact' else ''}).",
        "",
        "Original question:",
        *_wrap(t.question),
        "",
        f"Gold answer: {t.gold!r}.",
        "Parameters: " + (", ".join(f"{p.name} = {format_value(p.original)} ({p.mention.text!r}"
                                    + (", read as its reciprocal" if p.reading else "") + (", not read by the reasoning" if p.free else "")
                                    + ")" for p in plan.params)),
    ]
    if plan.constants:
        notes.append("Kept constant: " + "; ".join(plan.constants) + ".")
    if plan.unused_mentions:
        notes.append("Question numbers the program does not read as literals: " + ", ".join(plan.unused_mentions) + ".")
    if program.renamed:
        notes.append("Renamed variables: " + ", ".join(f"{a} -> {b}" for a, b in program.renamed.items()) + ".")
    doc = "\n".join(notes).replace("\\", "/").replace('"""', "'''")
    source = (
        f'"""{doc}\n"""\n\n'
        f"{imports}"
        "from edge_runtime.semantic import Param, entry_point, load, narrate, semantic_function\n\n\n"
        f"{decorator}{function_text}\n\n\n"
        f"{const} = entry_point(\n"
        f"    id={t.entry_id!r},\n"
        f"    description={entry_description!r},\n"
        f"    template={template!r},\n"
        f"    question={entry_question!r},\n"
        "    params=[\n" + "\n".join(param_lines) + "\n    ],\n"
        f"    root={description.lower()!r},\n"
        "    answer_key='answer',\n"
        + ("    whole_answer=True,\n" if _counts_things(t) else "")
        + ("    answer_minimum=0,\n" if _never_negative(t.gold) else "")
        + ")\n"
    )
    return source


def _counts_things(t: Transcript) -> bool:
    """The question asks "how many" and its gold answer is whole: the answer is a count. Days count too
    ("how many days will the food last": 2.5 means the program lacks a rounding step); a measure does not
    ("how many hours does he walk", "how many kilometers will she still need to drive", "how many square feet")."""
    asked = re.split(r"(?<=[.!])\s+", t.question.strip())[-1]
    if not isinstance(t.gold, int):
        return False
    match = re.search(r"\bhow many\s+(?:more\s+|fewer\s+|additional\s+|extra\s+)?([a-z]+)(?:\s+([a-z]+))?", asked,
                      re.IGNORECASE)
    if match is None:
        return False
    words = [_unit_word(w) for w in match.groups() if w]
    first = words[0][:-1] if words[0].endswith("s") and words[0][:-1] in _MEASURES else words[0]
    if first in ("square", "cubic") and len(words) > 1:
        return False  # "how many square feet"
    return first in ("day", "times", "cup") or first not in _MEASURES | {"dollar", "cent"}


def _never_negative(gold: Any) -> bool:
    """A GSM8K answer not below zero is a quantity (eggs, dollars, hours): the entry's answer then never
    is either, and a variant that drives it negative ("change" from $20 for $24 of cookies) is a MISS."""
    return isinstance(gold, (int, float)) and not isinstance(gold, bool) and gold >= 0


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _shorten(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3].rstrip() + "..."


def _wrap(text: str, width: int = 100) -> list[str]:
    import textwrap

    return textwrap.wrap(" ".join(text.split()), width) or [""]


def _const_name(entry_id: str) -> str:
    return _sanitise(entry_id).upper()


# ---------------------------------------------------------------------------------------------
# Validation with the device's code
# ---------------------------------------------------------------------------------------------
class ExactEmbedder(Embedder):
    """An embedder under which only identical (normalised) texts are similar.

    Generated entries reference their root and parameters by their exact descriptions, so the
    builder's registry never needs semantic similarity; with this embedder a reference that is not
    exact cannot be resolved by accident (random 256-d unit vectors are nearly orthogonal)."""

    dim = 256

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(_norm(text).encode("utf-8")).digest()[:8], "little")
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


def _answer_ok(answer: Any, gold: Any) -> bool:
    return gold is not None and is_close(answer, gold)


def _describe_exc(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 300 else text[:297] + "..."


def _run_original(program: PalProgram) -> Any:
    try:
        return program.run()
    except RunTimeout as exc:
        raise Rejected("runtime_error", f"the program on the original numbers: {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - third-party code may raise anything
        raise Rejected("runtime_error", f"the program on the original numbers: {_describe_exc(exc)}") from exc


#: Words after a number that make it a measure, which a question may state with decimals ("2.5 hours", "6.5 foot",
#: "3.5 times as many"); a count ("12 cars") stays whole.
_MEASURES = frozenset(
    "second minute hour day week month year foot inch mile yard meter metre kilometer km centimeter cm millimeter "
    "pound lb ounce oz gram kilogram kg ton liter litre milliliter millilitre ml deciliter decilitre centiliter "
    "centilitre gallon quart pint cup degree mph kph times percent acre hectare kilometre centimetre millimetre "
    "decimeter decimetre".split())
#: Operations that make a program's arithmetic depend on a value being whole.
_WHOLE_NUMBER_OPS = (ast.FloorDiv, ast.Mod)
_WHOLE_NUMBER_CALLS = frozenset({"int", "round", "range", "floor", "ceil", "divmod", "trunc"})


def _measure(question: str, mention: Mention) -> bool:
    after = words_after(question, mention, 1)
    if not after:
        return False
    word = _unit_word(after[0])
    return word in _MEASURES or (word.endswith("s") and word[:-1] in _MEASURES)


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
        if (p.type is int and not p.free and not whole_arithmetic and _measure(question, p.mention)
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


def draw_values(plan: Plan, rng: random.Random) -> dict[str, Any]:
    """Other valid values: integers near the original (integral stays integral, positive stays positive)."""
    values: dict[str, Any] = {}
    for p in plan.params:
        original = float(p.original)
        if p.structural:  # another number of the same kind: "three times" for "twice", "a third" for "half"
            natural = float(p.mention.value)
            pool = [2.0, 3.0, 4.0, 5.0] if natural >= 1 else [1 / 2, 1 / 3, 2 / 3, 1 / 4, 3 / 4, 1 / 5]
            other = rng.choice([v for v in pool if not _close(v, natural)])
            values[p.name] = float(1 / other if p.reading == "reciprocal" else other)
            continue
        low = p.minimum if p.minimum is not None else -math.inf
        for _ in range(50):
            if float(original).is_integer():
                spread = max(3, int(abs(original) * 0.5))
                value: Any = int(original) + rng.choice([d for d in range(-spread, spread + 1) if d])
            else:
                decimals = max(1, min(3, len(p.mention.text.split(".")[-1]) if "." in p.mention.text else 1))
                value = round(original * rng.uniform(0.5, 1.5), decimals)
                if value == original:
                    continue
            if value < low or (p.exclusive_minimum and value <= low):
                continue
            if p.maximum is not None and value > p.maximum:
                continue
            break
        else:
            value = original
        values[p.name] = p.type(value)
    return values


class Importer:
    """Turns one transcript into an accepted entry source or a rejection (one MiniCache group)."""

    def __init__(self, options: ImportOptions | None = None) -> None:
        self.options = options or ImportOptions()
        from edge_runtime.read.extractor import Extractor  # imported lazily: it pulls in onnxruntime

        self.extractor = Extractor(None)
        self.embedder = ExactEmbedder()
        import builder.independent_check  # noqa: F401 - loaded now: a confined worker cannot open files later

    # -- group callbacks ------------------------------------------------------------------
    def generate(self, transcripts: Sequence[Transcript], reflections: Sequence[str]) -> Candidate:
        t = transcripts[0]
        frozen = sorted({m.group(1) for r in reflections for m in re.finditer(r"param (\w+)", r)})
        try:
            program = PalProgram(t.code, timeout=self.options.timeout)
            if t.variant and t.variant.strip() != (t.docstring or t.question).strip():
                program.fold_constants([r.variant_value for r in replaced_numbers(t.variant, t.question)])
            plan = plan_parameters(t.question, program, t.variant, t.docstring, frozen)
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
            registry.add_source(c.source, f"{t.entry_id}.py", _sanitise(t.entry_id))
        except UnsafeCodeError as exc:
            raise Rejected("unsafe_program", f"generated source: {exc}") from exc
        except DefinitionError as exc:
            raise Rejected("runtime_error", f"generated source does not register: {exc}") from exc
        except ArcError as exc:
            raise Rejected("runtime_error", f"generated source does not register: {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - module-level code of the entry raised
            raise Rejected("runtime_error", f"generated source does not load: {_describe_exc(exc)}") from exc
        entry = registry.entries[t.entry_id]
        try:
            registry.check_entry(t.entry_id)
        except DefinitionError as exc:
            raise Rejected("template_mismatch", str(exc)) from exc
        try:
            compiled = compile_entry(registry, t.entry_id)
            loaded = LoadedCompiledEntry(compiled.source, _sanitise(t.entry_id))
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
            raise Rejected("runtime_error", f"compiled entry on the original: {_describe_exc(answer)}")
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
        from builder.independent_check import Disagreement, bind, check

        t = c.transcript
        bound = bind(t.question, t.gold, t.independent, self.options.timeout)
        rng = random.Random(f"{self.options.seed}:{t.entry_id}:independent")
        found = check(c.plan, bound, lambda values: self._run_compiled(loaded, values),
                      variants=self.options.independent_variants, rng=rng)
        if isinstance(found, Disagreement):
            if not found.blamed:
                return Validation(0, 1, (found.example,), fatal="independent_disagreement")
            return Validation(0, 1, found.failures, reason="independent_disagreement")
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
            return False, f"compiled entry failed for {values}: {_describe_exc(answer)}"
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
    def import_one(self, t: Transcript) -> "ImportResult":
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
                    "unexplained_constants": c.plan.unexplained, "unused_question_numbers": c.plan.unused_mentions,
                    "round_trip": f"{last.passed}/{last.total}" if last else "",
                    "compiled_sha256": c.compiled.sha256 if c.compiled is not None else "",
                    "verification": c.verification.to_dict() if c.verification is not None else None,
                },
            )
        return ImportResult(
            row=t.row, id=t.entry_id, accepted=False, reason=outcome.reason or "runtime_error",
            detail=outcome.detail, info={"attempts": len(outcome.attempts)},
        )


@dataclass
class ImportResult:
    row: int
    id: str | None
    accepted: bool
    source: str = ""
    reason: str | None = None
    detail: str = ""
    info: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# Batch import: resumable, parallel, with a report
# ---------------------------------------------------------------------------------------------
_WORKER: Importer | None = None


def _worker_init(options: ImportOptions, memory_limit: int | None) -> None:
    """A pool worker runs third-party programs and registers candidate entries: it first gives up what
    the device's workers give up (edge_runtime/execute/confinement.py: no network, no new files, ``nobody``,
    an empty directory, an address-space cap), after importing everything the import will need."""
    global _WORKER
    import tempfile

    import edge_runtime.entries.compiler  # noqa: F401 - imported before the file limit
    import edge_runtime.read.extractor  # noqa: F401
    import edge_runtime.entries.registry  # noqa: F401
    import numpy.random  # noqa: F401 - the registry's embedder draws from it lazily
    import codecs

    for codec in ("utf_8_sig", "unicode_escape", "raw_unicode_escape", "latin_1", "ascii", "idna", "cp1252",
                  "utf_16", "utf_32", "charmap"):
        codecs.lookup(codec)  # codecs load on first use, which the file limit would refuse
    from edge_runtime.execute.confinement import enter_sandbox

    _WORKER = Importer(options)
    workdir = tempfile.mkdtemp(prefix="arc-import-worker-")
    os.chmod(workdir, 0o777)
    enter_sandbox(memory_limit or (3 << 30), workdir, 2000, forkserver=False, cut_network=True)


def _worker_run(t: Transcript) -> bytes:
    """Import one transcript in the confined worker; the result leaves it as plain data that the
    parent reads with the restricted unpickler (builder/confined_pool.py), never as an object."""
    assert _WORKER is not None
    result = _safe_import(_WORKER, t)
    try:
        return _dumps_for_parent(("result", asdict(result)))
    except TypeError as exc:  # a value of a class the parent does not accept
        failed = ImportResult(t.row, t.entry_id, False, reason="runtime_error",
                              detail=f"importer: the result cannot leave the worker: {exc}")
        return _dumps_for_parent(("result", asdict(failed)))


def _safe_import(importer: Importer, t: Transcript) -> ImportResult:
    try:
        return importer.import_one(t)
    except MemoryError:
        return ImportResult(t.row, t.entry_id, False, reason="runtime_error", detail="out of memory")
    except RunTimeout as exc:
        return ImportResult(t.row, t.entry_id, False, reason="runtime_error", detail=str(exc))
    except RecursionError:
        return ImportResult(t.row, t.entry_id, False, reason="runtime_error", detail="recursion too deep")
    except Exception as exc:  # noqa: BLE001 - one bad transcript must not stop the import
        return ImportResult(t.row, t.entry_id, False, reason="runtime_error", detail=f"importer: {_describe_exc(exc)}")


class RegistryDir:
    """The output directory: entries/*.py (accepted, reviewable), rejections.jsonl, index.json."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.entries = self.root / "entries"
        self.rejections = self.root / "rejections.jsonl"
        self.index = self.root / "index.json"
        self.entries.mkdir(parents=True, exist_ok=True)

    def accepted_ids(self) -> set[str]:
        return {p.stem for p in self.entries.glob("*.py") if not p.name.startswith("_")}

    def rejected(self) -> dict[int, dict[str, Any]]:
        out: dict[int, dict[str, Any]] = {}
        if self.rejections.exists():
            for line in self.rejections.read_text(encoding="utf-8").splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by a crash: that row is decided again
                out[int(record["row"])] = record
        return out

    def write_entry(self, result: ImportResult) -> None:
        assert result.id is not None
        meta = self.entries / "_meta"  # written first: the entry file is the commit marker
        meta.mkdir(exist_ok=True)
        (meta / f"{result.id}.json").write_text(json.dumps(result.info, ensure_ascii=False, indent=1), encoding="utf-8")
        path = self.entries / f"{result.id}.py"
        tmp = path.with_suffix(".py.tmp")
        tmp.write_text(result.source, encoding="utf-8")
        os.replace(tmp, path)

    def write_rejection(self, handle: Any, result: ImportResult) -> None:
        handle.write(json.dumps({
            "row": result.row, "id": result.id, "reason": result.reason, "detail": result.detail,
            **{k: v for k, v in result.info.items() if k == "attempts"},
        }, ensure_ascii=False) + "\n")
        handle.flush()

    def verified_count(self, ids: set[str]) -> int:
        """How many of ``ids`` an independent program verified (their _meta records say so)."""
        count = 0
        for entry_id in ids:
            path = self.entries / "_meta" / f"{entry_id}.json"
            try:
                record = json.loads(path.read_text(encoding="utf-8")).get("verification") or {}
            except (OSError, json.JSONDecodeError):
                continue
            count += record.get("status") == "verified"
        return count

    def write_index(self, meta: dict[str, Any]) -> None:
        accepted = sorted(self.accepted_ids())
        entries = {}
        meta_dir = self.entries / "_meta"
        for entry_id in accepted:
            path = meta_dir / f"{entry_id}.json"
            entries[entry_id] = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        data = {**meta, "accepted": accepted, "entries": entries}
        tmp = self.index.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
        os.replace(tmp, self.index)


def id_prefix_for(reference: str | Path) -> str:
    """Entry ids are ``<prefix>-<reference row>``; the prefix is the reference file's first name part
    (``gsm8k_test.jsonl`` -> ``gsm8k``)."""
    head = re.split(r"[_.\-\s]", Path(reference).name.lower())[0]
    return _sanitise(head) or "entry"


def run_import(
    file: str | Path,
    reference: str | Path,
    registry_dir: str | Path,
    *,
    limit: int | None = None,
    workers: int | None = None,
    options: ImportOptions | None = None,
    progress: bool = False,
    audit: bool = True,
    independent: Sequence[str | Path] = (),
    reference_solutions: bool = True,
) -> dict[str, Any]:
    """Import every transcript of ``file`` into ``registry_dir``; resumable; returns the summary.

    An entry is verified only where an independent solution agrees with it on rendered variants:
    ``independent`` files of programs written by someone else for the same reference questions
    (:func:`builder.independent.load_independent`) and, with ``reference_solutions``, the
    reference's own worked solution where its calculator annotations reach the gold answer."""
    started = time.perf_counter()
    options = options or ImportOptions()
    rows = read_jsonl(file)
    if limit is not None:
        rows = rows[:limit]
    ref = ReferenceIndex.load(reference)
    out = RegistryDir(registry_dir)
    accepted_before = out.accepted_ids()
    rejected_before = out.rejected()
    prefix = id_prefix_for(reference)
    joined = join_transcripts(rows, ref, prefix)
    by_row: dict[int, tuple[IndependentProgram, ...]] = {}
    for found in ((load_worked_solutions(reference, ref),) if reference_solutions else ()) + (
            (load_independent(independent, ref),) if independent else ()):
        for row, programs in found.items():
            by_row[row] = by_row.get(row, ()) + programs
    joined = [dataclasses.replace(t, independent=by_row.get(t.ref_index, ())) if isinstance(t, Transcript) else t
              for t in joined]
    todo: list[Transcript] = []
    decided_now: list[ImportResult] = []
    with open(out.rejections, "a", encoding="utf-8") as handle:
        for i, item in enumerate(joined):
            if isinstance(item, Rejected):
                if i not in rejected_before:
                    result = ImportResult(i, None, False, reason=item.reason, detail=item.detail)
                    out.write_rejection(handle, result)
                    rejected_before[i] = {"row": i, "reason": item.reason}
                continue
            if item.entry_id in accepted_before or item.row in rejected_before:
                continue
            todo.append(item)
        workers = workers if workers is not None else min(2, os.cpu_count() or 1)
        results = _results(todo, options, workers)
        bar = None
        if progress:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
            from rich.console import Console

            bar = Progress(TextColumn("import-pot"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                           TextColumn("{task.fields[accepted]} accepted"), console=Console(stderr=True))
            bar.start()
            task = bar.add_task("import", total=len(todo), accepted=0)
        accepted_now = 0
        try:
            for result in results:
                if result.accepted:
                    out.write_entry(result)
                    accepted_now += 1
                else:
                    out.write_rejection(handle, result)
                decided_now.append(result)
                if bar is not None:
                    bar.update(task, advance=1, accepted=accepted_now)
        finally:
            if bar is not None:
                bar.stop()
    meta = {"source": str(file), "reference": str(reference), "options": options.__dict__,
            "independent": [str(p) for p in independent], "reference_solutions": reference_solutions}
    out.write_index(meta)
    considered_ids = {t.entry_id for t in joined if isinstance(t, Transcript)}
    accepted_ids = out.accepted_ids() & considered_ids
    rejected = out.rejected()
    considered_rows = set(range(len(rows)))
    by_reason = {reason: 0 for reason in REASONS}
    for row, record in rejected.items():
        if row in considered_rows:
            by_reason[record.get("reason", "runtime_error")] = by_reason.get(record.get("reason", "runtime_error"), 0) + 1
    wrong = audit_entries(out, ref, workers, prefix) if audit else None
    summary = {
        "total": len(rows),
        "accepted": len(accepted_ids),
        "verified": out.verified_count(accepted_ids),
        "rejected_by_reason": by_reason,
        "wrong_on_original": wrong if wrong is not None else 0,
        "seconds": round(time.perf_counter() - started, 2),
        "decided_this_run": len(decided_now),
    }
    return summary


def _results(todo: list[Transcript], options: ImportOptions, workers: int) -> Iterator[ImportResult]:
    """Every transcript is imported behind ``_worker_init``'s walls, never in this process: one worker
    (in order) for a few transcripts or ``--workers 1``, else ``workers``. Each reply is plain data,
    read restrictedly and checked field by field before it becomes an :class:`ImportResult`."""

    def accept(reply: tuple) -> ImportResult:
        if len(reply) != 2 or reply[0] != "result":
            raise MalformedReply("an import reply is ('result', fields)")
        return rebuild_dataclass(ImportResult, reply[1], {
            "row": int, "id": (str, type(None)), "accepted": bool, "source": str,
            "reason": (str, type(None)), "detail": str, "info": dict,
        })

    n = 1 if workers <= 1 or len(todo) < 8 else workers
    for t, result in confined_map(todo, _worker_run, accept, workers=n, initializer=_worker_init,
                                  initargs=(options, 3 * 1024**3)):
        if not isinstance(result, WorkerLost) and (result.row, result.id) != (t.row, t.entry_id):
            # the id names the file the entry is written to: only the parent's own id is used
            result = WorkerLost("the worker answered for another transcript")
        if not isinstance(result, WorkerLost) and result.accepted:
            try:
                validate_source(result.source, f"<imported {t.entry_id}>")
            except UnsafeCodeError as exc:
                result = WorkerLost(f"the worker accepted an unsafe entry: {exc}")
        if isinstance(result, WorkerLost):
            yield ImportResult(t.row, t.entry_id, False, reason="runtime_error", detail=f"importer: {result}")
        else:
            yield result


def audit_entries(out: RegistryDir, reference: ReferenceIndex, workers: int = 1, prefix: str = "gsm8k") -> int:
    """Independent re-check of every accepted entry file: register, compile, answer the original
    question through the fast path; returns how many give a wrong answer (must be 0).

    Registering an entry imports it, so the check runs behind ``_worker_init``'s walls like the
    import itself: this process only reads the files and counts the plain booleans that come back."""
    rows = {f"{prefix}-{row.index:04d}": row for row in reference.rows}
    jobs = []
    for path in sorted(out.entries.glob("*.py")):
        row = rows.get(path.stem)
        jobs.append((str(path), path.read_text(encoding="utf-8"), row.question if row else "", row.gold if row else None))

    def accept(reply: tuple) -> bool:
        if len(reply) != 2 or reply[0] != "audit" or not isinstance(reply[1], bool):
            raise MalformedReply("an audit reply is ('audit', bool)")
        return reply[1]

    n = 1 if workers <= 1 or len(jobs) < 16 else workers
    results = confined_map(jobs, _audit_run, accept, workers=n, initializer=_worker_init,
                           initargs=(ImportOptions(), 3 * 1024**3))
    return sum(1 for _, ok in results if ok is not True)


def _audit_run(job: tuple[str, str, str, Any]) -> bytes:
    return _dumps_for_parent(("audit", _audit_one(job)))


def _audit_one(job: tuple[str, str, str, Any]) -> bool:
    from edge_runtime.entries.compiler import LoadedCompiledEntry, compile_entry
    from edge_runtime.read.extractor import Extractor
    from edge_runtime.entries.registry import Registry

    path, source, question, gold = job
    entry_id = Path(path).stem
    try:
        registry = Registry(_AUDIT_EMBEDDER)
        registry.add_source(source, path, entry_id)
        registry.check_entry(entry_id)
        compiled = LoadedCompiledEntry(compile_entry(registry, entry_id).source, _sanitise(entry_id))
        values = Extractor(None).extract(registry.entries[entry_id], question).values
        with deadline(5.0):
            answer = compiled.run(values).result["answer"]
        return bool(gold is not None and is_close(answer, gold))
    except (Exception, RunTimeout):  # noqa: BLE001 - any failure of an accepted entry counts as wrong
        return False


_AUDIT_EMBEDDER = ExactEmbedder()


def summary_table(summary: dict[str, Any]) -> Any:
    from rich.table import Table

    table = Table(title=f"import-pot: {summary['accepted']} of {summary['total']} accepted")
    table.add_column("outcome")
    table.add_column("rows", justify="right")
    table.add_column("share", justify="right")
    total = max(1, summary["total"])
    table.add_row("accepted", str(summary["accepted"]), f"{100 * summary['accepted'] / total:.1f}%")
    table.add_row("  of them verified by an independent program", str(summary.get("verified", 0)),
                  f"{100 * summary.get('verified', 0) / total:.1f}%")
    for reason, count in summary["rejected_by_reason"].items():
        table.add_row(reason, str(count), f"{100 * count / total:.1f}%")
    table.add_row("accepted but wrong on original (audit)", str(summary["wrong_on_original"]), "")
    table.add_row("seconds", str(summary["seconds"]), "")
    return table


def cli_import_pot(args: Any) -> int:
    """``arc-build import-pot``: see builder/cli.py."""
    import sys

    from rich.console import Console

    if not Path(args.file).exists() or not Path(args.reference).exists():
        print(f"arc-build: {args.file if not Path(args.file).exists() else args.reference} does not exist", file=sys.stderr)
        return 2
    options = ImportOptions(number_words=getattr(args, "number_words", "parameter") or "parameter")
    summary = run_import(
        args.file, args.reference, args.registry, limit=args.limit, workers=getattr(args, "workers", None),
        options=options, progress=True, independent=getattr(args, "independent", ()) or (),
        reference_solutions=getattr(args, "reference_solutions", True),
    )
    console = Console(stderr=bool(args.json))
    console.print(summary_table(summary))
    if args.json:
        print(json.dumps({k: summary[k] for k in ("total", "accepted", "verified", "rejected_by_reason", "wrong_on_original",
                                                  "seconds")}))
    return 0

"""The reference's own worked solution as an independent program (a GSM8K answer's calculator steps).

A GSM8K answer writes each step with a calculator annotation (``16-3-4=<<16-3-4=9>>9``). Read as a
chain of assignments, the steps are a program written by a person who reached the gold answer, so it
checks an entry as :mod:`builder.independent`'s model-written programs do. What a number of a step
*is* has to be decided: a given of the question (a literal the importer binds to the question's
mention), or an earlier step's result (a name). Two earlier results of one value are told apart by the
order a person writes in (:class:`_Chain`); a result and a given of one value only by the units of measure
the step's prose writes, and otherwise the solution is unused: a wrong guess could agree with an entry that
made the same mistake. Choosing by any word of the step's line was measured and dropped (2026-12-06): on the
GSM8K import it verified 24 more entries but vetoed 7 right ones that Codex programs verify ("150 + 100" read
the question's 100 stickers for the 100 a step had just computed), and a reading wrong in that way is the
very coincidence an entry that is right only on its original numbers makes. Any noun in place of a unit
was dropped too (2026-12-07): it unchained 16 solutions that were read right ("20 paired socks" after "= 20
socks", "30 bugs" after "= 30 millipedes").
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import operator
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder.gsm8k import ReferenceIndex, is_close, read_jsonl, scan_numbers
from builder.independent import IndependentProgram
from edge_runtime.read.measures import currency_before, unit_of

#: The source name of a reference's own worked solution.
WORKED_SOLUTION = "reference_worked_solution"

_ANNOTATION = re.compile(r"<<([^<>=]+)=([^<>]+)>>")
_ARITHMETIC = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Add, ast.Sub, ast.Mult, ast.Div,
               ast.FloorDiv, ast.Mod, ast.Pow, ast.USub, ast.UAdd)


@dataclass(frozen=True)
class _Step:
    name: str
    expr: ast.expr
    result: float
    unit: str | None = None  # the unit of measure written after its result ("= <<0.5*14=7>>7 hours": hour)
    #: the units written after the numbers of the arithmetic it writes ("2 hours * 7 days =": 2 -> hour, 7 -> day)
    units: tuple[tuple[float, str], ...] = ()


def worked_solution_program(answer: str, gold: Any, question: str = "") -> str | None:
    """The calculations of a GSM8K worked answer as a program (None: not usable).

    Each calculator annotation, and each calculation the prose writes without one (:func:`_line_steps`),
    becomes one assignment; a number that equals an earlier step's result is read from that step (the chain
    of the solution, :class:`_Chain` says which step), every other number stays a literal that the importer
    binds to the question's mentions. A number that could be an earlier result or a value the question states,
    with no unit to tell them apart, makes the solution unusable, and so does a step that divides an earlier
    result by itself (:func:`_cancels`). The program returns the last step whose result is the gold answer,
    with only the steps it reads (:func:`_needed`)."""
    if gold is None or len(str(answer)) > _MAX_ANSWER_CHARS:
        return None
    mentions = scan_numbers(question) if question else []
    steps: list[_Step] = []
    for line in str(answer).split("\n"):
        if line.lstrip().startswith("####"):
            continue
        try:
            steps += _line_steps(line, len(steps))
        except (SyntaxError, ValueError, RecursionError):
            return None
    if len(steps) > _MAX_STEPS:
        return None  # no person's worked solution; reading one costs steps x steps
    finals = [i for i, step in enumerate(steps) if is_close(step.result, gold)]
    if not finals or isinstance(steps[finals[-1]].expr, ast.Constant):
        return None  # no step reaches the gold, or the last writes it bare ("m=<<8=8>>8"): it reads nothing
    final, upto = steps[finals[-1]].name, steps[: finals[-1] + 1]
    body = _chained(upto, question, mentions, literal_factors=False)
    if body is not None and not _every_number_counts(body, final):
        # "300 / 60" of minutes to hours, read as the step that made 60 minutes, leaves numbers idle: the 60 is the
        # hour's. Where no factor was read so, the question's own arithmetic cancels ("180 - 85 - 36" of a total
        # that added the same 85) and the reading stands.
        factors = _chained(upto, question, mentions, literal_factors=True)
        if factors is not None and [ast.dump(s) for s in factors] != [ast.dump(s) for s in body]:
            body = factors if _every_number_counts(factors, final) else None
    if body is None:
        return None
    body.append(ast.Return(value=ast.Name(id=final, ctx=ast.Load())))
    body = _hoist_givens(body, mentions, question, {step.name: step.units for step in upto})
    func = ast.FunctionDef(name="solution", args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                                                                defaults=[]), body=body, decorator_list=[], returns=None)
    module = ast.Module(body=[func], type_ignores=[])
    ast.fix_missing_locations(module)
    return ast.unparse(module)


def _chained(steps: Sequence[_Step], question: str, mentions: Sequence[Any], *,
             literal_factors: bool) -> list[ast.stmt] | None:
    """The steps as assignments that read earlier results (:class:`_Chain`), only those the last one needs; None
    where a number is ambiguous or a step cancels. ``literal_factors``: a divisor that is a unit conversion factor
    the question does not state ("/ 60") stays a literal even where an earlier step reached its value."""
    steps = [dataclasses.replace(step, expr=copy.deepcopy(step.expr)) for step in steps]  # a visit rewrites them
    body: list[ast.stmt] = []
    read: set[str] = set()  # the steps an earlier step reads
    for i, step in enumerate(steps):
        try:
            value = _Chain(steps[:i], step, read, question, mentions, steps[i + 1:],
                           literal_factors=literal_factors).visit(step.expr)
        except _Ambiguous:
            return None
        read |= {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
        if _cancels(value):
            return None
        body.append(ast.Assign(targets=[ast.Name(id=step.name, ctx=ast.Store())], value=value))
    return _needed(body, steps[-1].name)


#: Bounds on what is read as a worked solution: GSM8K's longest answer has 1 070 characters and 8 steps; a reference
#: file is input, and the chain's checks cost steps x steps.
_MAX_ANSWER_CHARS = 8000
_MAX_STEPS = 64

_WRITTEN_RESULT = re.compile(r"=\s*[$€£]?\s*(-?(?:\d[\d,]*)?\.?\d+)(?![\d/])")


def _line_steps(line: str, first: int) -> list[_Step]:
    """A line's steps in the order it writes them: each calculator annotation, and each calculation written in
    the prose alone (``Amy is 11 - 2 = 9 years old``: plain arithmetic that reaches the number after its
    ``=``). An annotation that writes its result bare (``because 3 + 2 = <<5=5>>5``) takes the prose's."""
    annotations = list(_ANNOTATION.finditer(line))
    masked = _ANNOTATION.sub(lambda m: " " * len(m.group()), line)
    found: list[tuple[int, ast.expr, float, int]] = []  # where, arithmetic, result, where its result ends
    for match in annotations:
        tree = ast.parse(match.group(1).replace("^", "**").strip(), mode="eval")
        result = float(match.group(2).replace(",", "").strip())
        if not all(isinstance(n, _ARITHMETIC) for n in ast.walk(tree)):
            raise ValueError("not arithmetic")
        expr = tree.body
        if isinstance(expr, ast.Constant):
            expr = _written_before(masked[:match.start()], result) or expr
        found.append((match.start(), expr, result, match.end()))
    for match in _WRITTEN_RESULT.finditer(masked):
        if any(a.start() < match.end(1) and match.start() < a.end() for a in annotations):
            continue  # "16-3-4=<<16-3-4=9>>9": the annotation is the step
        result = float(match.group(1).replace(",", ""))
        expr = _written_before(masked[:match.start() + 1], result)
        if expr is not None:
            found.append((match.start(), expr, result, match.end()))
    found.sort(key=lambda f: f[0])
    return [_Step(_step_name(line[:at], first + i), expr, result,
                  _unit_after(masked, end) or _currency_before(masked, len(masked[:end].rstrip("0123456789.,"))),
                  _units_written(_CLAUSE.split(masked[:at])[-1]))
            for i, (at, expr, result, end) in enumerate(found)]


def _currency_before(text: str, start: int) -> str | None:
    """The unit of the currency written before the number that starts at ``start`` ("= $<<20*2=40>>40": dollar,
    past the masked annotation's blanks), or None."""
    symbol = currency_before(text, start)
    return unit_of(symbol) if symbol else None


_NUMBER_THEN_WORD = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?|\.\d+)\s*([A-Za-z]+)")


def _unit_after(text: str, at: int) -> str | None:
    """The unit of measure written right after the number that ends at ``at`` ("= <<0.5*14=7>>7 hours": hour)."""
    found = re.match(r"\s*[$€£]?\s*-?[\d,]*\.?\d*\s*([A-Za-z]+)", text[at:])
    return unit_of(found[1]) if found else None


def _units_written(clause: str) -> tuple[tuple[float, str], ...]:
    """Each number of a clause written with a unit of measure: "2 hours * 7 days" -> (2, hour), (7, day); "$40 + $40"
    -> (40, dollar) twice."""
    return tuple((float(m[1].replace(",", "")), unit) for m in _NUMBER_THEN_WORD.finditer(clause)
                 if (unit := unit_of(m[2])) is not None) + tuple(
        (float(m[2].replace(",", "")), unit_of(m[1]) or "") for m in _CURRENCY_NUMBER.finditer(clause))


_CURRENCY_NUMBER = re.compile(r"([$€£])\s*(\d[\d,]*(?:\.\d+)?|\.\d+)")


def _needed(body: list[ast.stmt], final: str) -> list[ast.stmt]:
    """The steps the final one reads, directly or through others: a step the answer never reads would make the
    program seem to read numbers it does not use, and disagree with an entry that varies them."""
    needed = {final}
    kept: list[ast.stmt] = []
    for stmt in reversed(body):
        assert isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)
        if stmt.targets[0].id in needed:
            kept.append(stmt)
            needed |= {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
    return kept[::-1]


class _Chain(ast.NodeTransformer):
    """A step's numbers as the earlier results they repeat, or as givens.

    A number that two earlier steps both reached is one that no step has read yet, the latest of those: a worked
    solution uses each result it computes, mostly right after computing it ("16 x 25/100 = 4 in jazz, so 16 - 4 =
    12" after "20 x 20/100 = 4", which "20 - 4" read; "9 + 6" of the 9 litres of water the first step gave, not of
    the 9 litres of drink the step before the 6 read). A step that writes such a number twice reads as many
    distinct steps, and only in a plain sum or product ("80 + 80" of the chickens' legs and the cows'), where
    their order does not matter. A number the step's prose writes in another unit of measure than the earlier
    result ("2 hours * 7 days" after "= 7 hours") is not that result but a constant the question never states (the
    days of a week); other words are no guide ("20 paired socks" after "= 20 socks"). A number that an earlier step
    reached and the question also states is the one whose unit the step's prose writes after it, when that tells
    them apart ("3 miles" after "= 3 hours", of a question that states 3 miles), or the result when no other number
    of the solution could read it (:meth:`_read_nowhere_else`); a plain sum or product that writes such a number twice
    reads one of each ("3 * 3" of 3 hours a night, 3 nights a week). Otherwise the solution is unused: which one a
    person meant is the coincidence an entry right only on its original numbers makes."""

    def __init__(self, earlier: Sequence[_Step], step: _Step, read: set[str], question: str,
                 mentions: Sequence[Any], later: Sequence[_Step] = (), *, literal_factors: bool = False) -> None:
        """``earlier``: the steps before ``step``; ``read``: the ones an earlier step reads; ``mentions``: the
        question's numbers; ``later``: the steps after ``step`` up to the answer; ``literal_factors``: see
        :func:`_chained`."""
        self.earlier, self.read, self.question, self.mentions = earlier, read, question, mentions
        self.later = later
        self.factors = {id(n.right) for n in ast.walk(step.expr) if isinstance(n, ast.BinOp)
                        and isinstance(n.op, (ast.Div, ast.FloorDiv)) and _is_number(n.right)
                        and float(n.right.value) in _CONVERSION_FACTORS} if literal_factors else set()
        self.units = step.units
        self.numbers = [n.value for n in ast.walk(step.expr) if _is_number(n)]  # before the visit names any
        self.commutative = _one_operator(step.expr)
        self.taken: set[str] = set()  # the steps this one has read already

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if not _is_number(node):
            return node
        results = [s for s in self.earlier if is_close(s.result, node.value, 1e-9)]
        if not results or (id(node) in self.factors and not _stating(self.mentions, node.value)):
            return node
        chosen = self._pick(results)
        if not self._is_result(chosen, node.value):
            return node
        if isinstance(chosen.expr, ast.Constant):  # "<<1=1>>1" with no arithmetic written: it hides its inputs
            raise _Ambiguous
        self.taken.add(chosen.name)
        return ast.copy_location(ast.Name(id=chosen.name, ctx=ast.Load()), node)

    def _pick(self, results: Sequence[_Step]) -> _Step:
        """Which of the earlier steps that reached a number this one is (the latest no step has read yet)."""
        if len(results) == 1:
            return results[0]  # "5 * 5" of the side a step gave: the same result, squared
        left = [s for s in results if s.name not in self.taken]
        if not left or (self.taken & {s.name for s in results} and not self.commutative):
            raise _Ambiguous  # "6 - 6", or more sixes than steps that gave 6
        unread = [s for s in left if s.name not in self.read]
        return (unread or left)[-1]

    def _is_result(self, chosen: _Step, value: float) -> bool:
        """Whether a number is the earlier result it equals (False: a given or a constant), by the units written."""
        written = {unit for number, unit in self.units if is_close(number, value, 1e-9)}
        stating = _stating(self.mentions, value)
        if not stating:  # "2 hours * 7 days" after a step gave 7 hours: the 7 is the days of a week
            return not (chosen.unit and written and chosen.unit not in written)
        if chosen.name in self.taken:  # "6 cups ... so 6 * 6" of a question that states 6 lemons
            if self.commutative and len(stating) == 1 and self._writes(value) == 2 \
                    and not self._computed_from(chosen, value):
                return False  # one 6 is the cups, the other the lemons, and a sum or a product does not mind which
            # "3 x 1 = 3" hours of three classes, then "3 x 3": the stated three twice, or a 3 the question never states
            raise _Ambiguous
        # "3 * 3" where a step gave 3 hours and the question states 3 miles: only units can tell them apart
        stated = {_unit_after(self.question, m.end) or _currency_before(self.question, m.start) for m in stating} - {None}
        if chosen.unit and chosen.unit in written and not stated & written:
            return True  # "3 hours * $20" after "= 3 hours", of a question that states 3 miles
        if stated & written and chosen.unit and chosen.unit not in written:
            return False  # "3 miles / 2" after "= 3 hours"
        if self._read_nowhere_else(chosen):
            return True  # "$2 x 3" after "$100 x 2/100 = $2", of a question that states 2%: else the $2 is for nothing
        raise _Ambiguous

    def _computed_from(self, step: _Step, value: float) -> bool:
        """Whether ``step`` reads a number of ``value`` itself or through the earlier steps it reads."""
        by_name = {s.name: s for s in self.earlier}
        seen, todo = set(), [step]
        while todo:
            current = todo.pop()
            for n in ast.walk(current.expr):
                if _is_number(n) and is_close(n.value, value, 1e-9):
                    return True
                if isinstance(n, ast.Name) and n.id in by_name and n.id not in seen:
                    seen.add(n.id)
                    todo.append(by_name[n.id])
        return False

    def _writes(self, value: float) -> int:
        """How many times this step writes ``value``."""
        return sum(1 for number in self.numbers if is_close(number, value, 1e-9))

    def _read_nowhere_else(self, chosen: _Step) -> bool:
        """Whether no other number of the solution could read ``chosen``: no earlier step read it, this one has not,
        and no later step up to the answer writes its value. A person writes a step to use its result; read as
        the question's number instead, the step would be for nothing. Read this way, an entry that took the
        question's number where the reasoning computes one of equal value (right only on its own numbers)
        disagrees on the variants."""
        if chosen.name in self.read or chosen.name in self.taken:
            return False
        return not any(_is_number(n) and is_close(n.value, chosen.result, 1e-9)
                       for step in self.later for n in ast.walk(step.expr))


def _every_number_counts(body: list[ast.stmt], final: str) -> bool:
    """Whether the answer moves with each number the steps write (each changed alone). A person writes no number
    that the answer does not depend on; a chain that makes one idle has read a number as the wrong step ("300 / 60"
    of minutes to hours, read as the step that made 60 minutes, so that the step divides by its own input), and as
    a checker it would hold the answer still where the entry's moves."""
    numbers = [n for stmt in body for n in ast.walk(stmt) if _is_number(n)]
    base = _answer(body, final, {})
    if base is None:
        return True
    for node in numbers:
        moved = _answer(body, final, {id(node): float(node.value) * 1.5 + 1})
        if moved is not None and is_close(moved, base, 1e-9):
            return False
    return True


#: What a person divides by to change units (minutes per hour, days per week, cents per dollar, ...).
_CONVERSION_FACTORS = frozenset({7.0, 12.0, 16.0, 24.0, 52.0, 60.0, 100.0, 365.0, 1000.0, 3600.0})

_OPERATORS: dict[type, Any] = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
                               ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}


def _answer(body: list[ast.stmt], final: str, swapped: dict[int, float]) -> float | None:
    """The steps' answer with some numbers (by node id) replaced; None where the arithmetic fails."""
    env: dict[str, float] = {}
    try:
        for stmt in body:
            assert isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)
            env[stmt.targets[0].id] = _value(stmt.value, env, swapped)
        return float(env[final])
    except (ArithmeticError, ValueError, TypeError, KeyError, RecursionError):
        return None


def _value(node: ast.expr, env: dict[str, float], swapped: dict[int, float]) -> float:
    """Plain arithmetic (:data:`_ARITHMETIC`) in floats, so that "9 ** 9 ** 9" overflows at once instead of growing
    an integer for minutes; names from ``env``, numbers (by node id) from ``swapped`` where given."""
    if isinstance(node, ast.Constant):
        return float(swapped.get(id(node), node.value))
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.UnaryOp):
        return -_value(node.operand, env, swapped) if isinstance(node.op, ast.USub) else _value(node.operand, env, swapped)
    if not isinstance(node, ast.BinOp):
        raise TypeError(f"not arithmetic: {type(node).__name__}")
    return _OPERATORS[type(node.op)](_value(node.left, env, swapped), _value(node.right, env, swapped))


def _one_operator(expr: ast.expr) -> bool:
    """A plain sum or a plain product: every operator of ``expr`` is ``+``, or every one is ``*``."""
    ops = {type(n.op) for n in ast.walk(expr) if isinstance(n, ast.BinOp)}
    return ops in ({ast.Add}, {ast.Mult}) and not any(isinstance(n, ast.UnaryOp) for n in ast.walk(expr))


def _cancels(expr: ast.expr) -> bool:
    """A step that divides or subtracts one earlier result by itself (``12 inches / 12 inches/foot`` after a
    step gave 12): one of the two is a constant of the units, and chained the step is a constant that
    hides its inputs. Adding or multiplying a result by itself ("15 + 15" for two riders) is a step."""
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Div, ast.FloorDiv, ast.Sub, ast.Mod))
               and isinstance(n.left, ast.Name) and isinstance(n.right, ast.Name) and n.left.id == n.right.id
               for n in ast.walk(expr))


_CLAUSE = re.compile(r"[,;:!?]|\.(?!\d)")
_TIMES = re.compile(r"(?<=[\d%)])\s*[x×]\s*(?=[\d($])")


def _arithmetic(clause: str, value: float) -> ast.expr | None:
    """The plain arithmetic a clause writes (``12 inches / 12 inches/foot``), when it evaluates to ``value``:
    unit words, currency and percent signs dropped; an equation to solve or two numbers with no operator
    between them is not arithmetic."""
    text = _TIMES.sub("*", clause.replace("−", "-").replace("–", "-").replace("÷", "/"))
    text = re.sub(r"(?<=\d),(?=\d{3})", "", text)
    text = re.sub(r"[$€£%]|[A-Za-z]+(?:'[a-z]+)?", " ", text).strip()
    if not text or not re.fullmatch(r"[\d.\s+\-*/()]+", text) or re.search(r"\d\s+[\d(]|\)\s*[\d(]", text):
        return None
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return None
    if not any(isinstance(n, ast.BinOp) for n in ast.walk(tree)) or not all(isinstance(n, _ARITHMETIC) for n in ast.walk(tree)):
        return None
    try:
        got = float(_value(tree.body, {}, {}))
    except (ArithmeticError, ValueError, TypeError, KeyError, RecursionError):
        return None
    return tree.body if is_close(got, value) else None


def _written_before(text: str, value: float) -> ast.expr | None:
    """The arithmetic a line writes just before a bare annotation (``costs $5 because 3 + 2 = <<5=5>>5``): the
    longest run of the clause's last words that is plain arithmetic reaching the annotated result."""
    head = text.rstrip().rstrip("$€£").rstrip()
    if not head.endswith("="):
        return None
    clause = _CLAUSE.split(head[:-1].split("=")[-1])[-1]
    for word in re.finditer(r"\S+", clause):
        expr = _arithmetic(clause[word.start():], value)
        if expr is not None:
            return expr
    return None


def _stating(mentions: Sequence[Any], value: float) -> list[Any]:
    """The question's mentions that state ``value``."""
    return [m for m in mentions if any(is_close(v, value, 1e-9) for v, _ in m.literal_values())]


def _hoist_givens(body: list[ast.stmt], mentions: Sequence[Any], question: str = "",
                  units: dict[str, tuple[tuple[float, str], ...]] | None = None) -> list[ast.stmt]:
    """Name a number the solution writes more than once when exactly one mention of the question states it.

    A worked solution repeats a given in every step that uses it ("3 * 20", "4 * 20", "20 + 60 + ..."),
    where a program would name it once. Bound literal by literal, only one of the repeats would follow
    the question's number on a variant and the solution would disagree with a right entry; named once
    at the top, every step reads the same given. A value two mentions state stays literal (which one a
    step means is not known). A 100 that divides, in a question that states a percent and a 100, is the percent's
    whole ("$100 x 2/100" of "$100 at 2%"): named ``percent_whole``, a unit constant the planner never binds, where
    as a literal or a given it would take the $100's value on a variant. Repeats whose steps write units that tell
    them from the mention (:func:`_counts_apart`: "4 weeks * $600" beside "1/4 of the employees") stay literals
    (``units``: step name -> the units its prose writes)."""
    tree = ast.Module(body=body, type_ignores=[])
    collides = any(m.percent for m in mentions) and _stating(mentions, 100)  # "$100 at 2%"
    wholes = {id(n.right) for n in ast.walk(tree) if collides
              and isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div) and _is_number(n.right) and n.right.value == 100}
    written_units: dict[float, set[str]] = {}  # value -> the units the steps that write it write after it
    for stmt in body:
        step_units = dict((units or {}).get(stmt.targets[0].id, ())) if isinstance(stmt, ast.Assign) else {}
        for node in ast.walk(stmt):
            if _is_number(node) and id(node) not in wholes and float(node.value) in step_units:
                written_units.setdefault(float(node.value), set()).add(step_units[float(node.value)])
    written: dict[float, list[Any]] = {}  # value -> the literals that write it
    for node in ast.walk(tree):
        if _is_number(node) and id(node) not in wholes:
            written.setdefault(float(node.value), []).append(node.value)
    names: dict[float, str] = {}
    for value, literals in written.items():
        stating = _stating(mentions, value)
        if len(literals) > 1 and len(stating) == 1 and not _counts_apart(written_units.get(value, set()), stating[0],
                                                                         question):
            names[value] = f"given_{len(names) + 1}"
    if not names and not wholes:
        return body

    class Name(ast.NodeTransformer):
        def visit_Constant(self, node: ast.Constant) -> ast.AST:
            if id(node) in wholes:
                return ast.copy_location(ast.Name(id=_PERCENT_WHOLE, ctx=ast.Load()), node)
            if _is_number(node) and float(node.value) in names:
                return ast.copy_location(ast.Name(id=names[float(node.value)], ctx=ast.Load()), node)
            return node

    givens: list[ast.stmt] = [ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())],
                                         value=ast.Constant(written[value][0])) for value, name in names.items()]
    if wholes:
        givens.append(ast.Assign(targets=[ast.Name(id=_PERCENT_WHOLE, ctx=ast.Store())], value=ast.Constant(100)))
    return givens + [Name().visit(stmt) for stmt in body]


def _counts_apart(units: set[str], mention: Any, question: str) -> bool:
    """Whether the repeats of a number, written with ``units`` by their steps, count something other than what the
    question's ``mention`` states: two units ("2 * 30 days" and "30 lbs"), another unit than the one the question
    writes after the mention, or any unit for a number the question states as a fraction or a multiple ("4 weeks"
    and "1/4"). A unit where the question writes none ("20 years / 4" of "the total age is 20") counts the same."""
    stated = _unit_after(question, mention.end)
    return len(units) > 1 or bool(units) and (not mention.parameterisable or stated is not None and units != {stated})


#: The name of a percent's whole: a unit constant to the planner (``builder.pot_import.matching.unit_name``).
_PERCENT_WHOLE = "percent_whole"


def _is_number(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)


class _Ambiguous(Exception):
    """A number of a worked solution could be more than one thing (two earlier results, or an earlier result and a
    value the question states), or reads a step that hides its inputs."""


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

"""The entry source of a parameter plan: the program rewritten as one root semantic function.

``load()`` bindings for the parameters, a ``narrate()`` after every step, loops bounded, the
literals replaced by their parameters; plus the ``entry_point`` whose template is the original
question with each parameter's mention replaced by its slot.
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Sequence
from typing import Any

from builder.param_source import param_source
from builder.pot_import.matching import MEASURES, all_names, conversion, sanitise, unit_word
from builder.pot_import.plan import ParamPlan, Plan
from builder.pot_import.program import MAX_LOOP_STEPS, Literal, PalProgram, is_docstring
from builder.pot_import.transcripts import Transcript
from edge_runtime.entries.metadata import format_value


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
        func_names = all_names(program.func)
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
                if form == "one":  # a fraction's denominator: its numerator's parameter holds the whole fraction
                    return ast.copy_location(ast.Constant(1), node)
                if form in ("one_plus", "one_minus"):  # "1/5 times more" as 1 + the fraction
                    op = ast.Add() if form == "one_plus" else ast.Sub()
                    return ast.copy_location(ast.BinOp(ast.Constant(1), op, name), node)
                if ":" in form:
                    _, ast_operator, factor, factor_first = conversion(form)
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
            if top and is_docstring(stmt):
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
    return "solve_" + sanitise(entry_id)


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
    read = [p for p in plan.params if not p.free]
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
    entry_question = t.question if normalised(canonical) == normalised(t.question) else canonical
    param_lines = [f"        {param_source(p.as_param())}," for p in plan.params]
    source_name = "GSM8K test" if t.id_prefix == "gsm8k" else t.id_prefix
    entry_description = f"{source_name} question {t.ref_index}: {_shorten(t.question, 160)}"
    imports = "".join(ast.unparse(node) + "\n" for node in program.imports)
    return (
        f'"""{_module_docstring(t, program, plan)}\n"""\n\n'
        f"{imports}"
        "from edge_runtime.semantic import Param, entry_point, load, narrate, semantic_function\n\n\n"
        f"{decorator}{_function_text(t, program, plan)}\n\n\n"
        f"{_const_name(t.entry_id)} = entry_point(\n"
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


def _function_text(t: Transcript, program: PalProgram, plan: Plan) -> str:
    """The root function: ``load()`` of every read parameter, a "Given:" narration, then the rewritten body."""
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
    function = ast.FunctionDef(
        name=entry_function_name(t.entry_id),
        args=ast.arguments(posonlyargs=[], args=[ast.arg("ctx")], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[*loads, *body], decorator_list=[], returns=None,
    )
    ast.fix_missing_locations(function)
    return ast.unparse(function)


_READ_AS = {"reciprocal": ", read as its reciprocal", "multiple": ", read as a multiple", "fraction": ", read as a fraction"}


def _module_docstring(t: Transcript, program: PalProgram, plan: Plan) -> str:
    """Where the entry came from, the verbatim question and gold answer, and what the plan decided."""
    notes = [
        f"Entry {t.entry_id}: compiled offline from a Program-of-Thought transcript (row {t.row}"
        f"{', joined ' + t.join if t.join != 'exact' else ''})"
        + (f", the {t.program_source} program for its question in place of the row's own" if t.program_source else "")
        + ".",
        "",
        "Original question:",
        *_wrap(t.question),
        "",
        f"Gold answer: {t.gold!r}.",
        "Parameters: " + (", ".join(f"{p.name} = {format_value(p.original)} ({p.mention.text!r}"
                                    + _READ_AS.get(p.reading, "")
                                    + (", not read by the reasoning" if p.free else "")
                                    + ")" for p in plan.params)),
    ]
    if plan.constants:
        notes.append("Kept constant: " + "; ".join(plan.constants) + ".")
    if plan.suspects:
        notes.append("Varying on the independent check's evidence, though a constant of the program may come from "
                     "them: " + "; ".join(f"{name} ({why})" for name, (why, _, _) in sorted(plan.suspects.items())) + ".")
    if plan.unused_mentions:
        notes.append("Question numbers the program does not read as literals: " + ", ".join(plan.unused_mentions) + ".")
    if plan.traded:
        traded = {p.mention.start: p.name for p in plan.params}
        notes.append("Bound the other way round than the words near them suggest, on the independent check's "
                     "evidence: " + ", ".join(f"{traded.get(a, a)} and {traded.get(b, b)}" for a, b in plan.traded) + ".")
    if program.renamed:
        notes.append("Renamed variables: " + ", ".join(f"{a} -> {b}" for a, b in program.renamed.items()) + ".")
    return "\n".join(notes).replace("\\", "/").replace('"""', "'''")


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
    words = [unit_word(w) for w in match.groups() if w]
    first = words[0][:-1] if words[0].endswith("s") and words[0][:-1] in MEASURES else words[0]
    if first in ("square", "cubic") and len(words) > 1:
        return False  # "how many square feet"
    return first in ("day", "times", "cup") or first not in MEASURES | {"dollar", "cent"}


def _never_negative(gold: Any) -> bool:
    """A GSM8K answer not below zero is a quantity (eggs, dollars, hours): the entry's answer then never
    is either, and a variant that drives it negative ("change" from $20 for $24 of cookies) is a MISS."""
    return isinstance(gold, (int, float)) and not isinstance(gold, bool) and gold >= 0


def normalised(text: str) -> str:
    return " ".join(text.lower().split())


def _shorten(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3].rstrip() + "..."


def _wrap(text: str, width: int = 100) -> list[str]:
    import textwrap

    return textwrap.wrap(" ".join(text.split()), width) or [""]


def _const_name(entry_id: str) -> str:
    return sanitise(entry_id).upper()

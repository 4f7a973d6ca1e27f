"""Static facts about semantic-function source that both registration and compilation rely on."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from edge_runtime.errors import DefinitionError

PRIMITIVES = ("load", "do", "narrate", "lm", "extract", "convert", "smart_convert", "invoke_tool")


@dataclass
class FunctionFacts:
    """What one semantic function's body does with the primitives."""

    node: ast.FunctionDef
    load_queries: list[str] = field(default_factory=list)
    intents: list[str] = field(default_factory=list)
    narrates: int = 0
    return_keys: list[list[str] | None] = field(default_factory=list)


def primitive_name(node: ast.AST) -> str | None:
    """The primitive a Call node invokes, if any."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in PRIMITIVES:
        return node.func.id
    return None


def call_arg(call: ast.Call, index: int, keyword: str) -> ast.expr | None:
    if len(call.args) > index:
        return call.args[index]
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    return None


def constant_str(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def analyse_function(node: ast.FunctionDef, filename: str) -> FunctionFacts:
    """Collect load queries, do() intents, narration and return shapes; literal references are required."""
    facts = FunctionFacts(node)
    for sub in ast.walk(node):
        name = primitive_name(sub)
        if name == "load":
            query = constant_str(call_arg(sub, 1, "query"))
            if query is None:
                raise DefinitionError(f"{filename}:{sub.lineno}: load() needs a literal description string")
            facts.load_queries.append(query)
        elif name == "do":
            intent = constant_str(call_arg(sub, 1, "intent"))
            if intent is None:
                raise DefinitionError(f"{filename}:{sub.lineno}: do() needs a literal intent string")
            facts.intents.append(intent)
            payload = call_arg(sub, 2, "payloads")
            if payload is not None and not (
                isinstance(payload, ast.Dict) and all(constant_str(k) is not None for k in payload.keys)
            ):
                raise DefinitionError(
                    f"{filename}:{sub.lineno}: do() payloads must be a dict literal with description strings as keys"
                )
        elif name == "narrate":
            facts.narrates += 1
        elif isinstance(sub, ast.Return):
            value = sub.value
            if isinstance(value, ast.Dict) and all(constant_str(k) is not None for k in value.keys):
                facts.return_keys.append([constant_str(k) for k in value.keys])  # type: ignore[misc]
            else:
                facts.return_keys.append(None)
    return facts


def decorated_functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """Top-level functions carrying the semantic_function decorator, by name."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any(
            isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "semantic_function"
            for d in node.decorator_list
        ):
            found[node.name] = node
    return found


def params_run_reads(tree: ast.Module) -> frozenset[str] | None:
    """The parameter names a compiled module's ``run(ctx, params)`` reads, or None when that cannot be told.

    The compiler writes ``run`` as one call of the root function with ``params['name']`` for each parameter the
    root loads; a parameter it never reads is a number the question states that the reasoning ignores. Told from
    the code itself, never from a manifest's claim: any use of ``params`` other than a subscript by a constant name
    (or no such ``run``) answers None, and the caller treats every parameter as read."""
    binds_run = [n for n in tree.body if "run" in _bound_names(n)]
    run = binds_run[0] if len(binds_run) == 1 else None  # a second binding of ``run`` replaces the first one read
    if not isinstance(run, ast.FunctionDef) or [a.arg for a in run.args.args] != ["ctx", "params"] \
            or run.args.vararg or run.args.kwarg or run.args.kwonlyargs or run.args.posonlyargs or run.decorator_list:
        return None
    reads: set[str] = set()
    subscripted: set[int] = set()
    for node in ast.walk(run):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "params":
            key = constant_str(node.slice)
            if key is None or not isinstance(node.ctx, ast.Load):
                return None
            reads.add(key)
            subscripted.add(id(node.value))
    names = [n for n in ast.walk(run) if isinstance(n, ast.Name) and n.id == "params"]
    if any(id(n) not in subscripted for n in names):
        return None  # params passed on, rebound or read whole: any parameter may be read
    return frozenset(reads)


def _bound_names(node: ast.stmt) -> set[str]:
    """The names a module-level statement binds (a definition, an assignment's targets, an import's names)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def numbers_written(tree: ast.Module) -> frozenset[float]:
    """The numbers a compiled module's functions write as constants (``days_in_june = 30``), not its ``ENTRY``'s.

    Why: a question may rename what the reasoning never computes with ("in *September*" for "in May" where the
    reasoning adds two months' spending), and only the code tells that it never wrote the month's 31 days."""
    found: set[float] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for statement in node.body:
                found |= {float(n.value) for n in ast.walk(statement) if isinstance(n, ast.Constant)
                          and isinstance(n.value, (int, float)) and not isinstance(n.value, bool)}
    return frozenset(found)

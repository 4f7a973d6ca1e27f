"""Static safety check for semantic-function source, which is untrusted (written by an LLM or a person).

The source is parsed and its AST is checked against a fixed set of rules before anything imports or
compiles it. A violation raises :class:`UnsafeCodeError` naming the file, the line and the rule.
This is a deny-by-default filter for a tiny language subset; it is not a proof of safety on its own,
so the executor should still run entries with restricted builtins.
"""

from __future__ import annotations

import ast
import re

from edge_runtime.entries.module_allowlist import MODULE_ATTRIBUTES, attribute_allowed
from edge_runtime.errors import UnsafeCodeError

ALLOWED_IMPORTS: frozenset[str] = frozenset(MODULE_ATTRIBUTES) | {"edge_runtime", "edge_runtime.semantic"}
"""Modules entries may import: pure computation (each with its attribute allowlist,
:mod:`edge_runtime.entries.module_allowlist`), plus the runtime's primitives module."""

SEMANTIC_NAMES: frozenset[str] = frozenset(
    {
        "semantic_function", "entry_point", "Param", "load", "do", "narrate",
        "lm", "extract", "convert", "smart_convert", "invoke_tool",
    }
)
"""The only names importable from edge_runtime: its other attributes (modules, Context...) are not for entries."""

_EDGE_MODULES = frozenset({"edge_runtime", "edge_runtime.semantic"})

FORBIDDEN_NAMES: frozenset[str] = frozenset(
    {
        "exec", "eval", "compile", "open", "__import__", "globals", "locals", "vars",
        "getattr", "setattr", "delattr", "hasattr", "input", "breakpoint", "help",
        "memoryview", "exit", "quit", "super", "type", "object",
        # operator helpers that reach attributes by string, bypassing the dunder rule:
        "attrgetter", "methodcaller",
        # functools/collections helpers that copy or expose attributes named by a string:
        "update_wrapper", "wraps", "namedtuple", "WRAPPER_ASSIGNMENTS", "WRAPPER_UPDATES",
    }
)
"""Builtins (and helpers) that execute code, reach attributes by string or escape to the interpreter."""

# Attribute spellings of the above that no ordinary value has (``re.compile``, ``x.type`` stay legal).
_FORBIDDEN_ATTRS = FORBIDDEN_NAMES - {"namedtuple"} - {
    "compile", "open", "input", "help", "memoryview", "exit", "quit", "super", "type", "object",
}

FORBIDDEN_MODULE_NAMES: frozenset[str] = frozenset(
    {
        "os", "sys", "subprocess", "socket", "shutil", "pathlib", "importlib", "builtins",
        "ctypes", "pickle", "marshal", "threading", "multiprocessing", "signal", "io", "gc",
        "inspect", "code", "codeop", "pty", "resource", "urllib", "http",
        "posix", "nt", "copyreg", "enum",
    }
)
"""Dangerous modules, rejected as names and as attributes (``fractions.sys``, ``re.enum`` leak them)."""

_FORMAT_ATTRS = frozenset({"format", "format_map", "vformat"})
_FRAME_ATTRS = frozenset(
    {
        "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await", "ag_frame",
        "ag_code", "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "tb_frame", "tb_next",
    }
)
_NAMEDTUPLE_API = frozenset({"_asdict", "_replace", "_fields", "_make", "_field_defaults"})
_DECORATORS = frozenset({"semantic_function", "entry_point"})
# Statements that carry their own rule, so the top-level rule would only repeat it.
_OWN_RULE_STMTS = (ast.ClassDef, ast.AsyncFunctionDef, ast.AsyncFor, ast.AsyncWith, ast.With, ast.Global, ast.Nonlocal)
_TOP_LEVEL_OK = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.Assign, ast.AnnAssign, ast.Pass)


#: A string that spells a dunder (``'__globals__'``) or is a private identifier (``'_sys'``).
_PRIVATE_SPELLING = re.compile(r"__\w+__|\A_+[A-Za-z]\w*\Z")


def _defined_names(tree: ast.AST) -> frozenset[str]:
    """Every name the source itself binds (assignment targets, functions, arguments, imports as-names)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias) and node.asname:
            names.add(node.asname)
    return frozenset(names)


def _module_aliases(tree: ast.AST) -> dict[str, str]:
    """Names that ``import M`` / ``import M as N`` bind to a module, anywhere in the source -> the module."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]  # ``import a.b`` binds ``a``
                aliases.setdefault(alias.asname or top, alias.name if alias.asname else top)
    return aliases


def _is_constant_expression(node: ast.AST | None) -> bool:
    """Evaluating ``node`` runs no entry-chosen code: literals, containers of literals, arithmetic on them,
    plain names (a type such as ``float``, or a constant the entry defined) and the declaration calls."""
    if node is None or isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, ast.UnaryOp):
        return _is_constant_expression(node.operand)
    if isinstance(node, ast.BinOp):
        return _is_constant_expression(node.left) and _is_constant_expression(node.right)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_is_constant_expression(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(_is_constant_expression(k) for k in node.keys) and all(_is_constant_expression(v) for v in node.values)
    if isinstance(node, ast.Call):
        return (
            isinstance(node.func, ast.Name) and node.func.id in _TOP_LEVEL_CALLS
            and all(_is_constant_expression(a) for a in node.args)
            and all(_is_constant_expression(k.value) for k in node.keywords)
        )
    return False


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


class _Checker(ast.NodeVisitor):
    """Collects every violation in one walk; the caller sorts them into source order."""

    def __init__(
        self, filename: str, allowed: frozenset[str], defined: frozenset[str] = frozenset(),
        modules: dict[str, str] | None = None,
    ) -> None:
        self.filename = filename
        self.allowed = allowed
        self.defined = defined
        #: name -> module, for names the source binds with ``import``: usable only as ``name.ATTRIBUTE``.
        self.modules = modules or {}
        self.qualified: set[int] = set()  # ids of module-name nodes that are the base of an attribute
        self.found: list[tuple[int, int, UnsafeCodeError]] = []

    def flag(self, node: ast.AST, rule: str, detail: str) -> None:
        line, col = getattr(node, "lineno", 1), getattr(node, "col_offset", 0)
        self.found.append((line, col, UnsafeCodeError(self.filename, line, rule, detail)))

    # --- names and attributes -------------------------------------------------
    def check_name(self, node: ast.AST, name: str) -> None:
        """Rules shared by Name nodes and names bound by ``from X import name``."""
        if _is_dunder(name):
            self.flag(node, "dunder", f"dunder name {name!r}")
        elif name in FORBIDDEN_NAMES:
            self.flag(node, "forbidden-call", f"{name!r} is not allowed")
        elif name in FORBIDDEN_MODULE_NAMES:
            self.flag(node, "forbidden-module-name", f"reference to module {name!r}")
        elif name == "Formatter":
            self.flag(node, "format-string", "string.Formatter can reach attributes")

    def visit_Name(self, node: ast.Name) -> None:
        self.check_name(node, node.id)
        if node.id in self.modules and id(node) not in self.qualified:
            # ``m = math`` or ``f(math)`` would pass the module on, and its attributes unchecked with it.
            what = "rebound" if not isinstance(node.ctx, ast.Load) else "used as a value"
            self.flag(node, "module-value", f"module name {node.id!r} {what}; only {node.id}.NAME is allowed")
        if node.id.startswith("_") and not _is_dunder(node.id) and node.id not in self.defined:
            # e.g. ``_sys`` copied into the module's globals by a helper: only names the entry binds.
            self.flag(node, "private", f"private name {node.id!r} that the entry does not define")

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and _PRIVATE_SPELLING.search(node.value):
            self.flag(node, "private-string", "a string spelling a dunder or private name could reach an attribute")

    def check_binding(self, node: ast.AST, name: str | None) -> None:
        """A name bound other than by assignment (argument, function, ``except ... as``, ``case``) may
        not be an imported module's: ``math.x`` would then be checked against the wrong allowlist."""
        if name is not None and name in self.modules:
            self.flag(node, "module-value", f"{name!r} rebinds an imported module's name")

    def visit_arg(self, node: ast.arg) -> None:
        self.check_binding(node, node.arg)
        self.generic_visit(node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self.check_binding(node, node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        self.check_binding(node, node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        self.check_binding(node, node.name)
        self.generic_visit(node)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        self.check_binding(node, node.rest)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        before = len(self.found)
        if _is_dunder(attr):
            self.flag(node, "dunder", f"dunder attribute {attr!r}")
        elif attr.startswith("_") and attr not in _NAMEDTUPLE_API:
            self.flag(node, "private", f"private attribute {attr!r}")
        elif attr in _FORMAT_ATTRS or attr == "Formatter":
            self.flag(node, "format-string", f"{attr!r} can reach attributes through a format string")
        elif attr in _FORBIDDEN_ATTRS:
            self.flag(node, "forbidden-call", f"attribute {attr!r} is not allowed")
        elif attr in FORBIDDEN_MODULE_NAMES:
            self.flag(node, "forbidden-module-name", f"attribute reference to module {attr!r}")
        elif attr in _FRAME_ATTRS:
            self.flag(node, "frame", f"frame/code introspection via {attr!r}")
        if isinstance(node.value, ast.Name) and node.value.id in self.modules:
            self.qualified.add(id(node.value))
            module = self.modules[node.value.id]
            if len(self.found) == before and attribute_allowed(module, attr) is False:
                self.flag(node, "module-attribute", f"{module}.{attr} is not on {module}'s allowlist")
        self.generic_visit(node)

    # --- imports --------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name in _EDGE_MODULES:
                self.flag(node, "import", f"use 'from {alias.name} import ...' for the primitives")
            elif alias.name not in self.allowed:
                self.flag(node, "import", f"module {alias.name!r} is not allowed")
            elif self.modules.get(alias.asname or alias.name) != alias.name:
                self.flag(node, "module-value", f"{alias.asname or alias.name!r} names two different modules")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            self.flag(node, "import", "relative imports are not allowed")
            return
        if module in _EDGE_MODULES:
            bad = [a.name for a in node.names if a.name not in SEMANTIC_NAMES]
            if bad:
                self.flag(node, "import", f"{', '.join(bad)} not importable from {module}")
            return
        if module != "__future__" and module not in self.allowed:
            self.flag(node, "import", f"module {module!r} is not allowed")
            return
        for alias in node.names:
            before = len(self.found)
            if alias.name == "*":
                self.flag(node, "import", f"'from {module} import *' is not allowed: name what is imported")
            elif alias.name.startswith("_") and not _is_dunder(alias.name):
                self.flag(node, "private", f"private name {alias.name!r}")
            else:
                self.check_name(node, alias.name)
            if len(self.found) == before and attribute_allowed(module, alias.name) is False:
                self.flag(node, "module-attribute", f"{module}.{alias.name} is not on {module}'s allowlist")
            self.check_binding(node, alias.asname or alias.name)

    # --- statements and expressions -------------------------------------------
    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.check_binding(node, node.name)
        for deco in node.decorator_list:
            target = deco.func if isinstance(deco, ast.Call) else deco
            if not (isinstance(target, ast.Name) and target.id in _DECORATORS):
                self.flag(deco, "decorator", "only @semantic_function(...) and @entry_point(...) are allowed")
            elif isinstance(deco, ast.Call) and not all(
                _is_constant_expression(a) for a in [*deco.args, *(k.value for k in deco.keywords)]
            ):
                self.flag(deco, "decorator", "decorator arguments must be constants (they run at import)")
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if not _is_constant_expression(default):
                self.flag(default, "default", "default arguments must be constants (they run at import)")
        self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.flag(node, "class", "entries define functions only")
        self.generic_visit(node)

    def _async(self, node: ast.AST) -> None:
        self.flag(node, "async", "async code is not allowed")
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_Await = visit_AsyncFor = visit_AsyncWith = _async

    def visit_comprehension(self, node: ast.comprehension) -> None:
        if node.is_async:
            self.flag(node.target, "async", "async comprehensions are not allowed")
        self.generic_visit(node)

    def _scope(self, node: ast.Global | ast.Nonlocal) -> None:
        self.flag(node, "global", f"{type(node).__name__.lower()} statements are not allowed")

    visit_Global = visit_Nonlocal = _scope

    def visit_With(self, node: ast.With) -> None:
        self.flag(node, "with", "with statements are not allowed")
        self.generic_visit(node)

    def _generator(self, node: ast.Yield | ast.YieldFrom) -> None:
        self.flag(node, "generator", "generators are not allowed")
        self.generic_visit(node)

    visit_Yield = visit_YieldFrom = _generator

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if not _is_constant_expression(default):
                self.flag(default, "default", "default arguments must be constants")
        self.generic_visit(node)

    def check_top_level(self, module: ast.Module) -> None:
        """Importing the module must run no code beyond defining functions and constants."""
        for i, stmt in enumerate(module.body):
            docstring = (
                i == 0 and isinstance(stmt, ast.Expr)
                and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)
            )
            if not (docstring or isinstance(stmt, _TOP_LEVEL_OK + _OWN_RULE_STMTS)):
                self.flag(stmt, "top-level", f"{type(stmt).__name__} statement at module level")
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                inside = any(stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno) for line, _, _ in self.found)
                if not _is_constant_expression(stmt.value) and not inside:
                    self.flag(stmt.value, "top-level", "module-level values must be constants or "
                                                       "entry_point()/Param() of constants")
                if not _is_constant_expression(stmt.value):
                    continue
                for call in (n for n in ast.walk(stmt.value) if isinstance(n, ast.Call)):
                    if not (isinstance(call.func, ast.Name) and call.func.id in _TOP_LEVEL_CALLS):
                        self.flag(call, "top-level", "module-level values may only call entry_point() or Param()")


#: Declarations that may be evaluated at import time; any other call would run code on import.
_TOP_LEVEL_CALLS = frozenset({"entry_point", "Param", "Fraction", "Decimal"})


def _check(
    source: str, filename: str, extra_allowed_imports: frozenset[str]
) -> tuple[ast.Module | None, list[UnsafeCodeError]]:
    """Parse once and return the tree (None if unparsable) with all violations in source order."""
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        return None, [UnsafeCodeError(filename, exc.lineno or 1, "syntax", exc.msg)]
    except (ValueError, RecursionError, MemoryError) as exc:  # null bytes, absurd nesting
        return None, [UnsafeCodeError(filename, 1, "syntax", str(exc) or type(exc).__name__)]
    checker = _Checker(filename, ALLOWED_IMPORTS | extra_allowed_imports, _defined_names(tree), _module_aliases(tree))
    try:
        checker.visit(tree)
    except RecursionError:
        return None, [UnsafeCodeError(filename, 1, "syntax", "source nests too deeply to check")]
    # Top-level findings go last so that, at an equal position, the more specific rule is reported
    # (sorted() is stable).
    checker.check_top_level(tree)
    return tree, [err for _, _, err in sorted(checker.found, key=lambda item: item[:2])]


def find_violations(
    source: str, filename: str = "<entry>", *, extra_allowed_imports: frozenset[str] = frozenset()
) -> list[UnsafeCodeError]:
    """Every rule violation in ``source``, in source order (empty when the source is clean)."""
    return _check(source, filename, extra_allowed_imports)[1]


def validate_source(
    source: str, filename: str = "<entry>", *, extra_allowed_imports: frozenset[str] = frozenset()
) -> ast.Module:
    """Parse and check ``source``; raise the first violation in source order, else return the tree."""
    tree, violations = _check(source, filename, extra_allowed_imports)
    if violations:
        raise violations[0]
    assert tree is not None  # an unparsable source always yields a "syntax" violation
    return tree

"""Executes validated semantic-function source with a reduced set of builtins.

The AST validator is the real gate; this is the second wall: even a bypass finds no
open(), no eval() and an import hook that only admits the allowlist.
"""

from __future__ import annotations

import builtins
from types import MappingProxyType
from typing import Any

from edge_runtime.entries.validator import ALLOWED_IMPORTS, validate_source
from edge_runtime.errors import UnsafeCodeError

_SAFE_NAMES = (
    "abs all any bool dict divmod enumerate filter float frozenset int isinstance len list map max min "
    "pow range repr reversed round set slice sorted str sum tuple zip True False None "
    "ArithmeticError Exception KeyError IndexError LookupError OverflowError TypeError ValueError "
    "ZeroDivisionError"
).split()


def _guarded_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
    top = name.split(".")[0]
    allowed = name in ALLOWED_IMPORTS if top == "edge_runtime" else top in ALLOWED_IMPORTS
    if level != 0 or not allowed:
        raise ImportError(f"import of {name!r} is not allowed in semantic functions")
    return builtins.__import__(name, globals, locals, fromlist, level)


SAFE_BUILTINS = MappingProxyType(
    {**{name: getattr(builtins, name) for name in _SAFE_NAMES}, "__import__": _guarded_import}
)


def exec_source(source: str, filename: str, module_name: str) -> dict[str, Any]:
    """Validate ``source`` and run it as a fresh module namespace; returns the namespace."""
    tree = validate_source(source, filename)
    namespace: dict[str, Any] = {"__builtins__": dict(SAFE_BUILTINS), "__name__": module_name}
    try:
        code = compile(tree, filename, "exec")
    except SyntaxError as exc:  # pragma: no cover - validate_source parsed it already
        raise UnsafeCodeError(filename, exc.lineno or 0, "syntax", str(exc)) from exc
    exec(code, namespace)  # noqa: S102 - validated source, reduced builtins
    return namespace

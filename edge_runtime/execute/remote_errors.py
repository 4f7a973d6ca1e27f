"""Exceptions across the pipe: an error described on one side of a worker's pipe, raised again on the other.

Why not pickle the exception: a worker is untrusted, so its replies carry only plain data (see
:mod:`edge_runtime.execute.wire`). An error travels as (kind, class name, message, args, plain
attributes) and the other side raises a twin of it: ARC errors keep their class, builtin exceptions
are rebuilt from their args, any other class becomes a stand-in class of the same name.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any

from edge_runtime import errors
from edge_runtime.errors import ArcError, ExecutionError

_PLAIN_SCALARS = (type(None), bool, int, float, complex, str, bytes, Fraction, Decimal)


def _is_plain(value: Any, depth: int = 4) -> bool:
    """True for small plain data (what an exception's attributes may carry across the pipe)."""
    if isinstance(value, _PLAIN_SCALARS):
        return True
    if depth and isinstance(value, (list, tuple)):
        return len(value) <= 64 and all(_is_plain(v, depth - 1) for v in value)
    return False


def _describe_error(exc: BaseException) -> tuple[str, str, str, tuple | None, dict[str, Any]]:
    """(kind, class name, message, args, attributes) of ``exc``: enough to raise an equal one elsewhere."""
    kind = "arc" if isinstance(exc, ArcError) else "other"
    attrs = {k: v for k, v in vars(exc).items() if not k.startswith("_") and _is_plain(v)}
    args = exc.args if _is_plain(exc.args) else None
    return kind, type(exc).__name__, str(exc), args, attrs


def _arc_error_class(name: str) -> type[ArcError] | None:
    """The ARC error class called ``name`` (looked up at call time, so classes added later count)."""
    cls = getattr(errors, name, None)
    return cls if isinstance(cls, type) and issubclass(cls, ArcError) else None


_FOREIGN: dict[str, type[Exception]] = {}


def _rebuild_error(
    kind: str, name: str, message: str, args: tuple | None, attrs: Mapping[str, Any]
) -> Exception:
    """Raiseable twin of an exception described by :func:`_describe_error`.

    ARC errors keep their class, message and plain attributes (some have multi-argument
    constructors, so they are rebuilt without calling ``__init__``); an unknown ARC class becomes
    an ExecutionError with the same message. Builtin exceptions are rebuilt from their args; any
    other class becomes a stand-in class of the same name, so ``wrap_failures`` words the
    failure exactly as it would in-process.
    """
    if kind == "arc":
        cls: type[Exception] = _arc_error_class(name) or ExecutionError
        exc = cls.__new__(cls)
        Exception.__init__(exc, message)
        exc.__dict__.update({k: v for k, v in attrs.items() if isinstance(k, str) and not k.startswith("_")})
        return exc
    builtin = getattr(builtins, name, None)
    if args is not None and isinstance(builtin, type) and issubclass(builtin, Exception):
        try:
            return builtin(*args)
        except Exception:  # noqa: BLE001 - an exotic constructor; fall through to the stand-in
            pass
    safe = name if name.isidentifier() else "Exception"
    if safe not in _FOREIGN:
        _FOREIGN[safe] = type(safe, (Exception,), {"__module__": "edge_runtime.execute.remote_errors.remote"})
    return _FOREIGN[safe](message)

"""The wire protocol between the worker pool and its workers: what a worker's reply may contain, and how it is read.

Wire format: small tuples over a :func:`multiprocessing.Pipe`. Parent to worker uses plain
pickle: the worker is our own code and trusts its parent. Worker to parent is treated as
untrusted, because a worker that an entry managed to subvert can send anything: every reply is
read with a size bound (:data:`MAX_REPLY_BYTES`), unpickled by an unpickler that only knows a
fixed list of plain value classes (no callables, so no code runs on load), and its shape and
types are checked before use. A malformed reply kills that worker (:class:`WorkerCrashedError`).

The builder's confined children (``builder/confined_*.py``) speak the same protocol to the build server.
"""

from __future__ import annotations

import collections
import datetime
import io
import pickle
from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from edge_runtime.errors import LMLimitError, TargetModelError

MAX_REPLY_BYTES = 4 * 1024 * 1024
"""Largest pickled message a worker may send (a result, a narration, an LM prompt or tool arguments)."""

#: Bounds on the shape of a worker's model request (a subverted worker can send anything); the per-call
#: caps that matter (prompt tokens, new tokens, seconds) are the pool's LMLimits.
_MAX_PROMPT_CHARS = 32_768
_MAX_NEW_TOKENS = 512
_MAX_OPTIONS = 1_024


_REPLY_GLOBALS: Mapping[tuple[str, str], Any] = MappingProxyType(
    {
        ("fractions", "Fraction"): Fraction,
        ("decimal", "Decimal"): Decimal,
        ("builtins", "complex"): complex,
        ("builtins", "range"): range,
        **{("builtins", t.__name__): t for t in (int, float, str, bool, bytes, bytearray, list, tuple, dict, set,
                                                   frozenset)},
        **{("collections", t.__name__): t for t in (collections.OrderedDict, collections.Counter,
                                                      collections.defaultdict, collections.deque)},
        **{("datetime", t.__name__): t for t in (datetime.date, datetime.datetime, datetime.time,
                                                   datetime.timedelta, datetime.timezone)},
    }
)
"""Every class a worker reply may name. All are plain value types whose constructors run no user code."""


class _ReplyUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        try:
            return _REPLY_GLOBALS[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"a worker reply may not refer to {module}.{name}") from None


class _ProtocolError(Exception):
    """A worker reply that our worker code would never send: the worker is not trusted any more."""


def _load_reply(data: bytes) -> tuple:
    try:
        msg = _ReplyUnpickler(io.BytesIO(data)).load()
    except Exception as exc:  # noqa: BLE001 - anything a hostile byte string can provoke
        raise _ProtocolError(f"undecodable reply ({type(exc).__name__}: {exc})") from None
    if not (isinstance(msg, tuple) and msg and isinstance(msg[0], str)):
        raise _ProtocolError(f"reply is a {type(msg).__name__}, not a tagged tuple")
    return msg


def _dumps_for_parent(msg: tuple) -> bytes:
    """Pickle ``msg`` and check the parent's unpickler will accept it (a refused reply would cost the worker)."""
    data = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        _load_reply(data)
    except _ProtocolError as exc:
        raise TypeError(f"a value cannot leave the worker: {exc}") from None
    return data


def _check_value(value: Any) -> None:
    """Walk a reply value: only the unpickler's classes can occur, but Fractions could be hollow."""
    stack, seen = [value], 0
    while stack:
        item = stack.pop()
        seen += 1
        if seen > 1_000_000:
            raise _ProtocolError("result has too many parts")
        if isinstance(item, Fraction):
            if type(item.numerator) is not int or type(item.denominator) is not int:
                raise _ProtocolError("malformed Fraction in result")
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset, collections.deque)):
            stack.extend(item)


def _check_lm_request(msg: tuple) -> tuple[str, tuple, dict[str, Any]]:
    """(method, args, kwargs) of a worker's ``("lm", job, method, args, kwargs)`` request, or
    :class:`_ProtocolError` for a shape :class:`_ParentTargetLM` never sends."""
    if len(msg) != 5:
        raise _ProtocolError("malformed lm request")
    _, _, method, args, kwargs = msg
    if not (isinstance(args, tuple) and isinstance(kwargs, dict) and args and isinstance(args[0], str)):
        raise _ProtocolError("malformed lm request")
    if method == "generate":
        stop = kwargs.get("stop", ())
        if not (
            len(args) == 1
            and set(kwargs) <= {"max_new_tokens", "stop", "charset"}
            and type(kwargs.get("max_new_tokens", 64)) is int
            and isinstance(stop, (tuple, list)) and all(isinstance(s, str) for s in stop)
            and (kwargs.get("charset") is None or isinstance(kwargs["charset"], str))
        ):
            raise _ProtocolError("malformed generate request")
    elif method == "choose":
        if not (len(args) == 2 and not kwargs and isinstance(args[1], list) and args[1]
                and all(isinstance(o, str) for o in args[1])):
            raise _ProtocolError("malformed choose request")
    else:
        raise _ProtocolError(f"unknown lm method {method!r}")
    return method, args, kwargs


def _check_lm_bounds(target_lm: Any, method: str, args: tuple, kwargs: dict[str, Any]) -> None:
    """The size bounds every model request must keep, whatever the caps: raises the entry's error."""
    if target_lm is None:
        raise TargetModelError("this step needs the target model, and none is configured")
    if len(args[0]) > _MAX_PROMPT_CHARS:
        raise LMLimitError(f"a prompt of {len(args[0])} characters exceeds the {_MAX_PROMPT_CHARS} limit")
    if not 0 < kwargs.get("max_new_tokens", 1) <= _MAX_NEW_TOKENS:
        raise TargetModelError(f"max_new_tokens must be between 1 and {_MAX_NEW_TOKENS}")
    if method == "choose" and len(args[1]) > _MAX_OPTIONS:
        raise TargetModelError(f"{len(args[1])} options exceed the limit of {_MAX_OPTIONS}")

"""Runs compiled cache entries in a pool of sandboxed worker processes, outside the server's address space.

Why a process and not a thread: compiled entries come from a build server and pass the AST
validator and the reduced-builtins sandbox, but those are filters for a language subset, not a
proof. A worker process adds walls the interpreter cannot: its own memory (the server's keys,
model weights and open files are simply not there), an address-space limit, a recursion limit,
no inherited file descriptors beyond its pipe, no environment secrets, an empty working
directory, and a parent that can SIGKILL it at the per-call deadline. A runaway entry (infinite
loop, memory bomb, deep recursion) therefore ends only its own call; its worker is replaced in
the background and the pool keeps serving.

The one target model stays in the server. Inside a worker, ``lm``/``extract``/``smart_convert``
reach a :class:`TargetLM` proxy that sends the request back over the worker's pipe; the parent
answers it with its own model (and host tools the same way), so the worker never loads a model
and the entry sees exactly the behaviour it would see in-process.

Wire format: small tuples over a :func:`multiprocessing.Pipe`. Parent to worker uses plain
pickle: the worker is our own code and trusts its parent. Worker to parent is treated as
untrusted, because a worker that an entry managed to subvert can send anything: every reply is
read with a size bound (:data:`MAX_REPLY_BYTES`), unpickled by an unpickler that only knows a
fixed list of plain value classes (no callables, so no code runs on load), and its shape and
types are checked before use. A malformed reply kills that worker (:class:`WorkerCrashedError`).

Deployment notes. Like every forkserver/spawn child, a worker imports the server's main module
(as ``__mp_main__``) before it runs our code: start the server through a light main such as the
``arc-edge`` script or ``python -m edge_runtime.cli``, never a script that imports onnxruntime
or gRPC at the top level (``debug_worker_info()["heavy_modules"]`` shows what leaked in). What
the walls do not cover: a worker that escapes the Python sandbox still runs with the server's
uid unless the server runs as root (workers then switch to ``nobody``), and nothing here is a
seccomp filter or a namespace; the limits make such an escape hard to use, not impossible.
"""

from __future__ import annotations

import builtins
import collections
import datetime
import hashlib
import io
import itertools
import logging
import multiprocessing
import os
import pickle
import queue
import resource
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from multiprocessing.connection import Connection
from types import MappingProxyType
from typing import Any

from edge_runtime import errors
from edge_runtime.entries.compiler import LoadedCompiledEntry
from edge_runtime.entries.context import NarrationStep
from edge_runtime.entries.registry import Execution
from edge_runtime.entries.validator import ALLOWED_IMPORTS
from edge_runtime.errors import (
    ArcError,
    DeadlineExceededError,
    ExecutionError,
    LMDeadlineError,
    LMLimitError,
    ResourceExhaustedError,
    TargetModelError,
    ToolNotAllowedError,
    WorkerCrashedError,
    WorkerPoolClosedError,
)
from edge_runtime.execute.confinement import enter_sandbox
from edge_runtime.model.lm_limits import LMLimits
from edge_runtime.model.target_lm import TargetLM

__all__ = ["WorkerPool", "MAX_REPLY_BYTES"]

log = logging.getLogger(__name__)

MAX_REPLY_BYTES = 4 * 1024 * 1024
"""Largest pickled message a worker may send (a result, a narration, an LM prompt or tool arguments)."""

_WORKER_CACHE_SIZE = 128
#: Bounds on the shape of a worker's model request (a subverted worker can send anything); the per-call
#: caps that matter (prompt tokens, new tokens, seconds) are the pool's LMLimits.
_MAX_PROMPT_CHARS = 32_768
_MAX_NEW_TOKENS = 512
_MAX_OPTIONS = 1_024
_EXIT_OUT_OF_MEMORY = 75  # the worker could not even report a MemoryError
#: Signals a memory-limited worker dies of when an allocation fails outside Python's MemoryError path
#: (SIGKILL from the kernel OOM killer, SIGSEGV/SIGBUS from a failed stack or mmap growth, SIGABRT from a C abort).
_MEMORY_SIGNALS = frozenset({signal.SIGKILL, signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT})
_HEAVY_MODULES = ("onnxruntime", "grpc", "tokenizers", "hnswlib", "cryptography", "torch")
_PRELOAD = ["edge_runtime.execute.worker_pool", "ctypes", *sorted(ALLOWED_IMPORTS)]

# ------------------------------------------------------------------------------------------------
# Shared by both sides: exceptions across the pipe, and the restricted reply unpickler
# ------------------------------------------------------------------------------------------------

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
        _FOREIGN[safe] = type(safe, (Exception,), {"__module__": "edge_runtime.execute.worker_pool.remote"})
    return _FOREIGN[safe](message)


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


# ------------------------------------------------------------------------------------------------
# Worker side (runs in the child process)
# ------------------------------------------------------------------------------------------------


def _worker_send(conn: Connection, msg: tuple) -> None:
    conn.send_bytes(pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL))


def _dumps_for_parent(msg: tuple) -> bytes:
    """Pickle ``msg`` and check the parent's unpickler will accept it (a refused reply would cost the worker)."""
    data = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        _load_reply(data)
    except _ProtocolError as exc:
        raise TypeError(f"a value cannot leave the worker: {exc}") from None
    return data


class _ParentChannel:
    """Forwards one job's lm/tool requests to the parent and waits for the answer."""

    def __init__(self, conn: Connection, job_id: int) -> None:
        self._conn = conn
        self._job_id = job_id

    def call(self, request: tuple, too_large: Callable[[int], Exception]) -> Any:
        data = _dumps_for_parent((request[0], self._job_id, *request[1:]))
        if len(data) > MAX_REPLY_BYTES:
            raise too_large(len(data))
        self._conn.send_bytes(data)
        reply = self._conn.recv()
        if reply[0] == "ok":
            return reply[1]
        raise _rebuild_error(*reply[1:])


class _ParentTargetLM(TargetLM):
    """The worker's target model: every call is answered by the one model the server process holds."""

    def __init__(self, channel: _ParentChannel) -> None:
        self._channel = channel

    @staticmethod
    def _too_large(size: int) -> Exception:
        return TargetModelError(f"a prompt of {size} bytes is too large to send to the target model")

    def generate(
        self, prompt: str, *, max_new_tokens: int = 64, stop: Sequence[str] = (), charset: str | None = None
    ) -> str:
        kwargs = {"max_new_tokens": max_new_tokens, "stop": tuple(stop), "charset": charset}
        return self._channel.call(("lm", "generate", (prompt,), kwargs), self._too_large)

    def choose(self, prompt: str, options: Sequence[str]) -> str:
        return self._channel.call(("lm", "choose", (prompt, list(options)), {}), self._too_large)


class _ParentTool:
    """A host tool as seen from the worker: the call runs in the parent."""

    def __init__(self, channel: _ParentChannel, name: str) -> None:
        self._channel = channel
        self._name = name

    def _too_large(self, size: int) -> Exception:
        return ExecutionError(f"arguments of {size} bytes are too large to send to tool {self._name!r}")

    def __call__(self, **kwargs: Any) -> Any:
        return self._channel.call(("tool", self._name, kwargs), self._too_large)


def _error_kind(exc: BaseException) -> str:
    """memory / recursion (the worker is then replaced), else arc."""
    seen: list[BaseException] = []
    item: BaseException | None = exc
    while item is not None and len(seen) < 8 and item not in seen:
        seen.append(item)
        item = item.__cause__ or item.__context__
    if any(isinstance(e, MemoryError) for e in seen):
        return "memory"
    if any(isinstance(e, RecursionError) for e in seen):
        return "recursion"
    return "arc"


class _WorkerLoop:
    """Receives jobs, runs them, sends one reply per job (plus lm/tool requests while it runs)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.cache: collections.OrderedDict[tuple[str, str, str], LoadedCompiledEntry] = collections.OrderedDict()

    def serve(self) -> None:
        while True:
            try:
                msg = self.conn.recv()
            except (EOFError, OSError):
                return
            if msg[0] == "run":
                self.run_job(*msg[1:])
            elif msg[0] == "info":
                _worker_send(self.conn, ("info", self.info()))
            elif msg[0] == "exit":
                return

    def info(self) -> dict[str, Any]:
        limits = {
            name: resource.getrlimit(getattr(resource, f"RLIMIT_{name.upper()}"))[0]
            for name in ("as", "nofile", "nproc", "core")
        }
        return {
            "pid": os.getpid(),
            "cwd": os.getcwd(),
            "uid": os.getuid(),
            "rlimits": limits,
            "recursion_limit": sys.getrecursionlimit(),
            "environ": sorted(os.environ),
            "heavy_modules": [m for m in _HEAVY_MODULES if m in sys.modules],
            "cached_entries": len(self.cache),
        }

    def entry(self, job_id: int, cache_key: tuple[str, str, str], entry_id: str, source: str | None) -> LoadedCompiledEntry:
        loaded = self.cache.get(cache_key)
        if loaded is not None:
            self.cache.move_to_end(cache_key)
            return loaded
        if source is None:  # evicted since the parent last sent it
            _worker_send(self.conn, ("need_source", job_id))
            source = self.conn.recv()[1]
        loaded = LoadedCompiledEntry(source, entry_id)  # validates the source again, in here
        self.cache[cache_key] = loaded
        while len(self.cache) > _WORKER_CACHE_SIZE:
            self.cache.popitem(last=False)
        return loaded

    def run_job(
        self,
        job_id: int,
        cache_key: tuple[str, str, str],
        entry_id: str,
        source: str | None,
        values: dict[str, Any],
        has_lm: bool,
        tool_names: tuple[str, ...],
    ) -> None:
        try:
            try:
                channel = _ParentChannel(self.conn, job_id)
                target_lm = _ParentTargetLM(channel) if has_lm else None
                tools = {name: _ParentTool(channel, name) for name in tool_names}
                execution = self.entry(job_id, cache_key, entry_id, source).run(
                    values, target_lm=target_lm, tools=tools
                )
            except Exception as exc:  # noqa: BLE001 - reported to the parent, which picks the error class
                kind = _error_kind(exc)
                if not isinstance(exc, ArcError):
                    exc = ExecutionError(f"{entry_id}: {type(exc).__name__}: {exc}")
                _, name, message, _, attrs = _describe_error(exc)
                # Leaving the except block drops the traceback, and with it whatever the entry allocated.
            else:
                self.send_result(job_id, entry_id, execution)
                return
            _worker_send(self.conn, ("error", job_id, kind, name, message, attrs))
        except MemoryError:
            os._exit(_EXIT_OUT_OF_MEMORY)

    def send_result(self, job_id: int, entry_id: str, execution: Execution) -> None:
        try:
            narration = [(step.function, step.text) for step in execution.narration]
            data = _dumps_for_parent(("ok", job_id, execution.result, narration))
        except MemoryError:
            raise
        except Exception as exc:  # noqa: BLE001 - e.g. a value of a class defined by the entry
            message = f"{entry_id}: the result cannot leave the worker: {type(exc).__name__}: {exc}"
            _worker_send(self.conn, ("error", job_id, "arc", "ExecutionError", message, {}))
            return
        if len(data) > MAX_REPLY_BYTES:
            message = f"{entry_id}: the result takes {len(data)} bytes, over the {MAX_REPLY_BYTES}-byte limit"
            _worker_send(self.conn, ("error", job_id, "too_large", "ResourceExhaustedError", message, {}))
            return
        self.conn.send_bytes(data)


def _worker_main(conn: Connection, memory_limit_bytes: int, workdir: str, recursion_limit: int, forkserver: bool) -> None:
    """Entry point of a worker process."""
    try:
        state = enter_sandbox(memory_limit_bytes, workdir, recursion_limit, forkserver)
    except Exception as exc:  # noqa: BLE001 - reported, then the worker ends
        _worker_send(conn, ("startup_error", f"{type(exc).__name__}: {exc}"))
        return
    _worker_send(conn, ("ready", os.getpid(), os.getcwd(), state["vm_kb"], state["dropped_root"]))
    _WorkerLoop(conn).serve()


# ------------------------------------------------------------------------------------------------
# Parent side
# ------------------------------------------------------------------------------------------------


@dataclass(eq=False)
class _Worker:
    process: Any
    conn: Connection
    workdir: str
    pid: int = 0
    started_s: float = 0.0
    known: set[tuple[str, str, str]] = field(default_factory=set)
    healthy: bool = True


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class WorkerPool:
    """A fixed-size pool of worker processes that run compiled entries, one call per worker at a time.

    ``run`` is thread-safe: the gRPC server calls it from many threads; a call waits (within its
    own deadline) for an idle worker. Workers start in ``__init__``; a worker that is killed or
    dies is replaced in the background. Always ``close()`` the pool (or use it as a context
    manager); workers are daemonic, so they also end when the server exits.
    """

    def __init__(
        self,
        size: int = 2,
        *,
        memory_limit_mb: int = 512,
        default_timeout_s: float = 5.0,
        target_lm: TargetLM | None = None,
        tools: Mapping[str, Callable[..., Any]] | None = None,
        start_method: str = "forkserver",
        recursion_limit: int = 2000,
        startup_timeout_s: float = 30.0,
        lm_limits: LMLimits | None = None,
    ) -> None:
        """Start ``size`` workers and wait until each is sandboxed and ready.

        ``start_method`` is "forkserver" (default: workers fork from a clean server process that
        never ran the server's onnxruntime/gRPC threads and preloads only the compiler, so a
        start costs milliseconds) or "spawn" (a fresh interpreter per worker: slower, no shared
        state at all). Plain "fork" is refused: forking a process that has onnxruntime or gRPC
        threads can deadlock the child and would copy the server's memory, keys included.
        ``memory_limit_mb`` caps each worker's address space (an idle worker maps ~150 MiB,
        mostly numpy). ``tools`` run in this process, called through the worker's pipe.
        ``lm_limits``: caps on each model call a worker asks for; a call over them, or still running at
        its budget or the job's deadline, ends the job at once (LMLimitError / DeadlineExceededError)
        and its worker is replaced, so a hostile entry holds neither the model nor a worker.
        """
        if size < 1:
            raise ValueError("size must be at least 1")
        if default_timeout_s <= 0:
            raise ValueError("default_timeout_s must be positive")
        if start_method not in ("forkserver", "spawn"):
            raise ValueError(f"start_method must be 'forkserver' or 'spawn', not {start_method!r} (fork is unsafe)")
        self.size = size
        self.memory_limit_mb = int(memory_limit_mb)
        self.default_timeout_s = float(default_timeout_s)
        self.start_method = start_method
        self.recursion_limit = int(recursion_limit)
        self.startup_timeout_s = float(startup_timeout_s)
        self._ctx = multiprocessing.get_context(start_method)
        if start_method == "forkserver":
            # Only takes effect if this process's forkserver is not running yet (it is shared).
            self._ctx.set_forkserver_preload(_PRELOAD)
        self._target_lm = target_lm
        self.lm_limits = lm_limits or LMLimits()
        self._tools: Mapping[str, Callable[..., Any]] = MappingProxyType(dict(tools or {}))
        self._lock = threading.Lock()
        self._start_lock = threading.Lock()
        self._idle: queue.Queue[_Worker | None] = queue.Queue()
        self._workers: set[_Worker] = set()
        self._replacers: set[threading.Thread] = set()
        self._closed = False
        self._job_ids = itertools.count(1)
        self._busy = 0
        self._stats = dict.fromkeys(
            ("calls", "ok", "errors", "deadline_exceeded", "resource_exhausted", "crashed", "workers_replaced",
             "workers_started", "lm_calls", "lm_refused", "tool_calls"),
            0,
        )
        self.start_times_s: list[float] = []
        launched: list[_Worker] = []
        try:
            for _ in range(size):
                launched.append(self._launch())
            for worker in launched:
                self._await_ready(worker)
        except BaseException:
            for worker in launched:
                self._reap(worker, kill=True)
            raise
        for worker in launched:
            self._workers.add(worker)
            self._idle.put(worker)

    # ---- public API -----------------------------------------------------------------------------
    def run(
        self, key: str, entry_id: str, source: str, values: Mapping[str, Any], *, timeout_s: float | None = None,
        lm_limits: LMLimits | None = None,
    ) -> Execution:
        """Run compiled entry ``entry_id`` (module ``source`` from bundle ``key``) on ``values`` in a worker.

        Same result and narration as ``LoadedCompiledEntry(source).run(values)`` with this pool's
        target model and tools, or the same ARC error. The worker keeps the loaded module keyed by
        (key, entry_id, sha256(source)), so the source crosses the pipe once per worker. Raises
        DeadlineExceededError when the call (waiting for a worker included, answering its target
        model calls included) takes longer than ``timeout_s``; ResourceExhaustedError when the
        entry exhausts its memory limit; WorkerCrashedError when the worker dies otherwise.
        """
        timeout = self.default_timeout_s if timeout_s is None else float(timeout_s)
        if timeout <= 0:
            raise ValueError("timeout_s must be positive")
        deadline = time.monotonic() + timeout
        limits = self.lm_limits if lm_limits is None else LMLimits(
            min(lm_limits.max_prompt_tokens, self.lm_limits.max_prompt_tokens),
            min(lm_limits.max_new_tokens, self.lm_limits.max_new_tokens),
            min(lm_limits.call_seconds, self.lm_limits.call_seconds))  # a bundle may ask for less, never more
        with self._lock:
            if self._closed:
                raise WorkerPoolClosedError(f"{entry_id}: the worker pool is closed")
            self._stats["calls"] += 1
            target_lm, tools = self._target_lm, self._tools
        cache_key = (str(key), str(entry_id), hashlib.sha256(source.encode("utf-8")).hexdigest())
        job_id = next(self._job_ids)
        values = dict(values)
        while True:
            worker = self._acquire(deadline, entry_id, timeout)
            try:
                sent = self._send_job(worker, job_id, cache_key, entry_id, source, values, target_lm, tools)
            except BaseException:
                self._release(worker)
                raise
            if sent:
                break
            self._release(worker)  # it died while idle; the job never started, so take another worker
        try:
            execution = self._converse(worker, job_id, cache_key, entry_id, source, target_lm, tools, deadline, timeout,
                                       limits)
        except ArcError:
            with self._lock:
                self._stats["errors"] += 1
            raise
        except BaseException:  # a bug or an interrupt here: the worker may still be mid-job, never reuse it
            worker.healthy = False
            raise
        finally:
            self._release(worker)
        with self._lock:
            self._stats["ok"] += 1
        return execution

    def set_target_lm(self, lm: TargetLM | None) -> None:
        """Swap the model that answers workers' lm/extract/smart_convert calls (calls in flight keep theirs)."""
        with self._lock:
            self._target_lm = lm

    @property
    def stats(self) -> dict[str, int]:
        """Counters since start, plus busy/idle/alive workers and the configured size."""
        with self._lock:
            out = dict(self._stats)
            out.update(busy=self._busy, size=self.size, alive=len(self._workers))
        out["idle"] = max(0, out["alive"] - out["busy"])
        return out

    def debug_worker_info(self, timeout_s: float = 5.0) -> dict[str, Any]:
        """pid, cwd, uid, rlimits, recursion limit, environment names and heavy modules of an idle worker.

        For tests and diagnostics: shows what an entry running in that worker could see.
        """
        deadline = time.monotonic() + timeout_s
        worker = self._acquire(deadline, "<debug>", timeout_s)
        try:
            try:
                worker.conn.send(("info",))
                if not worker.conn.poll(max(0.0, deadline - time.monotonic())):
                    raise _ProtocolError("no answer to an info request")
                msg = _load_reply(worker.conn.recv_bytes(MAX_REPLY_BYTES))
                if msg[0] != "info" or len(msg) != 2 or not isinstance(msg[1], dict):
                    raise _ProtocolError("malformed info reply")
            except (OSError, EOFError, _ProtocolError) as exc:
                worker.healthy = False
                raise WorkerCrashedError(f"worker {worker.pid} did not answer: {exc}") from None
            return msg[1]
        finally:
            self._release(worker)

    def debug_worker_pids(self) -> list[int]:
        """Process ids of the live workers, as this process recorded them (for tests and diagnostics)."""
        with self._lock:
            return sorted(worker.pid for worker in self._workers)

    def close(self) -> None:
        """Stop every worker (idle ones exit cleanly, busy ones are killed) and wait until all have ended.

        A call in flight fails with WorkerPoolClosedError; its own thread reaps its worker.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
        idle: list[_Worker] = []
        while True:
            try:
                item = self._idle.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                idle.append(item)
        self._idle.put(None)  # wakes every waiting run(); each puts it back for the next
        with self._lock:
            self._workers.difference_update(idle)
            busy = list(self._workers)
        for worker in busy:
            self._kill(worker)
        for worker in idle:
            try:
                worker.conn.send(("exit",))
            except OSError:
                pass
        for worker in idle:
            worker.process.join(1.0)
            self._reap(worker, kill=True)
        give_up = time.monotonic() + 15.0
        while time.monotonic() < give_up:
            with self._lock:
                replacers = list(self._replacers)
                busy_count = self._busy
            if not replacers and busy_count == 0:
                break
            for thread in replacers:
                thread.join(max(0.0, give_up - time.monotonic()))
            if not replacers:
                time.sleep(0.005)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # ---- workers --------------------------------------------------------------------------------
    def _launch(self) -> _Worker:
        workdir = tempfile.mkdtemp(prefix="arc-worker-")
        parent_conn, child_conn = self._ctx.Pipe(duplex=True)
        process = self._ctx.Process(
            target=_worker_main,
            args=(child_conn, self.memory_limit_mb << 20, workdir, self.recursion_limit,
                  self.start_method == "forkserver"),
            name="arc-entry-worker",
            daemon=True,
        )
        started = time.perf_counter()
        try:
            with self._start_lock:  # Process.start() shares module-level state between threads
                process.start()
        except BaseException:
            parent_conn.close()
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        finally:
            child_conn.close()
        return _Worker(process, parent_conn, workdir, started_s=started)

    def _await_ready(self, worker: _Worker) -> None:
        try:
            if not worker.conn.poll(self.startup_timeout_s):
                raise WorkerCrashedError(f"a worker did not start within {self.startup_timeout_s:g} s")
            msg = _load_reply(worker.conn.recv_bytes(MAX_REPLY_BYTES))
        except (EOFError, OSError, _ProtocolError) as exc:
            raise WorkerCrashedError(f"a worker failed while starting (exit code {worker.process.exitcode}): {exc}") from None
        if msg[0] == "startup_error" and len(msg) == 2 and isinstance(msg[1], str):
            raise ValueError(f"worker could not enter its sandbox: {msg[1]}")
        if not (msg[0] == "ready" and len(msg) == 5 and isinstance(msg[1], int) and isinstance(msg[4], bool)):
            raise WorkerCrashedError(f"a worker sent {msg[0]!r} instead of 'ready'")
        worker.pid = msg[1]
        elapsed = time.perf_counter() - worker.started_s
        with self._lock:
            self._stats["workers_started"] += 1
            self.start_times_s.append(elapsed)
            del self.start_times_s[:-64]
        if os.geteuid() == 0 and not msg[4]:
            log.warning("worker %d runs entries as root (could not switch to nobody)", worker.pid)

    def _start_worker(self) -> _Worker:
        worker = self._launch()
        try:
            self._await_ready(worker)
        except BaseException:
            self._reap(worker, kill=True)
            raise
        return worker

    def _reap(self, worker: _Worker, *, kill: bool) -> None:
        if kill and worker.process.exitcode is None:
            try:
                worker.process.kill()
            except (OSError, ValueError):
                pass
        worker.process.join(5.0)
        worker.conn.close()
        shutil.rmtree(worker.workdir, ignore_errors=True)
        try:
            worker.process.close()
        except ValueError:  # still running after SIGKILL and 5 s: leave it to the daemon cleanup
            log.error("worker %d did not exit after SIGKILL", worker.pid)

    def _acquire(self, deadline: float, entry_id: str, timeout: float) -> _Worker:
        remaining = deadline - time.monotonic()
        try:
            worker = self._idle.get(timeout=max(0.0, remaining))
        except queue.Empty:
            with self._lock:
                self._stats["deadline_exceeded"] += 1
            raise DeadlineExceededError(
                f"{entry_id}: no worker became free within the deadline of {timeout:g} s (pool of {self.size})"
            ) from None
        if worker is None:
            self._idle.put(None)
            raise WorkerPoolClosedError(f"{entry_id}: the worker pool is closed")
        with self._lock:
            self._busy += 1
        return worker

    def _release(self, worker: _Worker) -> None:
        """Back to the idle queue, or (unhealthy, or the pool closed) killed, reaped and replaced."""
        with self._lock:
            if worker.healthy and not self._closed:
                self._busy -= 1
                self._idle.put(worker)
                return
            replace = not self._closed and worker in self._workers
            self._workers.discard(worker)
            if replace:
                self._stats["workers_replaced"] += 1
            thread = threading.Thread(
                target=self._replace, args=(worker, replace), name="arc-worker-replacer", daemon=True
            )
            self._kill(worker)  # now, so a runaway stops burning CPU before the reap
            # Registered and started before busy drops, so close() waiting for both never misses it.
            self._replacers.add(thread)
            thread.start()
            self._busy -= 1

    def _replace(self, dead: _Worker, replace: bool) -> None:
        try:
            self._reap(dead, kill=True)
            for attempt in range(5):
                if not replace or self._closed:
                    return
                try:
                    worker = self._start_worker()
                except Exception:  # noqa: BLE001 - logged; retried with backoff
                    log.exception("could not start a replacement worker (attempt %d)", attempt + 1)
                    time.sleep(0.2 * 2**attempt)
                    continue
                with self._lock:
                    if not self._closed:
                        self._workers.add(worker)
                        self._idle.put(worker)
                        return
                self._reap(worker, kill=True)
                return
            log.error("giving up on replacing a worker; the pool runs with one worker less")
        finally:
            with self._lock:
                self._replacers.discard(threading.current_thread())

    # ---- one call -------------------------------------------------------------------------------
    def _send_job(
        self,
        worker: _Worker,
        job_id: int,
        cache_key: tuple[str, str, str],
        entry_id: str,
        source: str,
        values: dict[str, Any],
        target_lm: Any,
        tools: Mapping[str, Callable[..., Any]],
    ) -> bool:
        """False if the worker turned out dead (the caller retries with another); True once sent."""
        job = ("run", job_id, cache_key, entry_id, None if cache_key in worker.known else source, values,
               target_lm is not None, tuple(tools))
        try:
            data = pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - nothing was sent; the worker stays as it is
            raise ExecutionError(f"{entry_id}: parameter values cannot be sent to a worker: {exc}") from exc
        try:
            worker.conn.send_bytes(data)
        except OSError:
            worker.healthy = False
            return False
        return True

    def _converse(
        self,
        worker: _Worker,
        job_id: int,
        cache_key: tuple[str, str, str],
        entry_id: str,
        source: str,
        target_lm: Any,
        tools: Mapping[str, Callable[..., Any]],
        deadline: float,
        timeout: float,
        limits: LMLimits,
    ) -> Execution:
        conn = worker.conn
        while True:
            remaining = deadline - time.monotonic()
            try:
                ready = remaining > 0 and conn.poll(remaining)
            except OSError:  # the handle is unusable: treat it as a dead worker below
                ready = True
            if not ready:
                worker.healthy = False
                self._kill(worker)
                with self._lock:
                    self._stats["deadline_exceeded"] += 1
                raise DeadlineExceededError(
                    f"{entry_id}: exceeded its deadline of {timeout:g} s; its worker was stopped and replaced"
                )
            try:
                data = conn.recv_bytes(MAX_REPLY_BYTES)
            except (EOFError, OSError):
                raise self._death_error(worker, entry_id) from None
            try:
                msg = _load_reply(data)
                if len(msg) < 2 or msg[1] != job_id:
                    raise _ProtocolError(f"reply {msg[0]!r} is not for job {job_id}")
                tag = msg[0]
                if tag == "ok":
                    execution = self._result(msg)
                    worker.known.add(cache_key)
                    return execution
                if tag == "error":
                    raise self._entry_error(worker, cache_key, entry_id, msg)
                if tag == "lm":
                    try:
                        self._answer_lm(worker, target_lm, msg, deadline, limits)
                    except (LMLimitError, DeadlineExceededError) as exc:
                        # The worker waits for this answer; it cannot be told to stop, so it is replaced.
                        worker.healthy = False
                        self._kill(worker)
                        with self._lock:
                            self._stats["lm_refused"] += 1
                            if isinstance(exc, DeadlineExceededError):
                                self._stats["deadline_exceeded"] += 1
                        raise type(exc)(f"{entry_id}: {exc}") from None
                elif tag == "tool":
                    self._answer_tool(worker, tools, msg)
                elif tag == "need_source" and len(msg) == 2:
                    self._to_worker(worker, ("source", source))
                else:
                    raise _ProtocolError(f"unexpected reply {tag!r}")
            except _ProtocolError as exc:
                worker.healthy = False
                self._kill(worker)
                with self._lock:
                    self._stats["crashed"] += 1
                raise WorkerCrashedError(f"{entry_id}: the worker broke the protocol ({exc}); it was replaced") from None

    def _kill(self, worker: _Worker) -> None:
        try:
            worker.process.kill()
        except (OSError, ValueError):
            pass

    def _to_worker(self, worker: _Worker, msg: tuple | bytes) -> None:
        data = msg if isinstance(msg, bytes) else pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            worker.conn.send_bytes(data)
        except OSError:
            pass  # a dead worker shows up as EOF on the next read

    def _death_error(self, worker: _Worker, entry_id: str) -> ArcError:
        worker.healthy = False
        if self._closed:
            return WorkerPoolClosedError(f"{entry_id}: the worker pool was closed during the call")
        worker.process.join(2.0)
        code = worker.process.exitcode
        if code is None:
            self._kill(worker)
            how = "closed its pipe"
        elif code < 0:
            how = f"was killed by {_signal_name(-code)}"
        else:
            how = f"exited with code {code}"
        if code == _EXIT_OUT_OF_MEMORY or (code is not None and code < 0 and -code in _MEMORY_SIGNALS):
            with self._lock:
                self._stats["resource_exhausted"] += 1
            return ResourceExhaustedError(
                f"{entry_id}: the worker {how} while limited to {self.memory_limit_mb} MiB "
                "(memory or stack exhausted); it was replaced"
            )
        with self._lock:
            self._stats["crashed"] += 1
        return WorkerCrashedError(f"{entry_id}: the worker process {how}; it was replaced")

    def _result(self, msg: tuple) -> Execution:
        if len(msg) != 4:
            raise _ProtocolError("malformed result")
        _, _, result, narration = msg
        if not isinstance(result, dict) or not all(isinstance(k, str) for k in result):
            raise _ProtocolError("result is not a dict with str keys")
        if not isinstance(narration, list) or not all(
            type(step) is tuple and len(step) == 2 and type(step[0]) is str and type(step[1]) is str
            for step in narration
        ):
            raise _ProtocolError("narration is not a list of (function, text) pairs")
        _check_value(result)
        return Execution(result, [NarrationStep(function, text) for function, text in narration])

    def _entry_error(self, worker: _Worker, cache_key: tuple[str, str, str], entry_id: str, msg: tuple) -> ArcError:
        if len(msg) != 6:
            raise _ProtocolError("malformed error")
        _, _, kind, name, message, attrs = msg
        if not (isinstance(kind, str) and isinstance(name, str) and isinstance(message, str) and isinstance(attrs, dict)):
            raise _ProtocolError("malformed error")
        message = message[:16384]
        if kind == "memory":
            worker.healthy = False
            with self._lock:
                self._stats["resource_exhausted"] += 1
            return ResourceExhaustedError(
                f"{entry_id}: exceeded the worker memory limit of {self.memory_limit_mb} MiB ({message}); "
                "its worker was replaced"
            )
        if kind == "recursion":
            worker.healthy = False  # a blown stack is not worth trusting; start clean
            return ExecutionError(message)
        if kind == "too_large":
            return ResourceExhaustedError(message)
        if kind != "arc":
            raise _ProtocolError(f"unknown error kind {kind!r}")
        worker.known.add(cache_key)  # the module loaded, or failed the same way it would again
        exc = _rebuild_error("arc", name, message, None, attrs)
        assert isinstance(exc, ArcError)
        return exc

    def _answer_lm(self, worker: _Worker, target_lm: Any, msg: tuple, job_deadline: float, limits: LMLimits) -> None:
        """Answer one model request of a worker within the caps; raises LMLimitError (over a cap or its
        time budget) or DeadlineExceededError (the job's deadline passed) for the caller to end the job."""
        method, args, kwargs = _check_lm_request(msg)
        with self._lock:
            self._stats["lm_calls"] += 1
        try:
            _check_lm_bounds(target_lm, method, args, kwargs)
            new_tokens = kwargs.get("max_new_tokens", 64)
            if new_tokens > limits.max_new_tokens:
                raise LMLimitError(f"a model call asked for {new_tokens} new tokens; the cap is {limits.max_new_tokens}")
            prompt_tokens = target_lm.count_tokens(args[0])
            if prompt_tokens > limits.max_prompt_tokens:
                raise LMLimitError(f"a prompt of {prompt_tokens} tokens exceeds the cap of {limits.max_prompt_tokens}")
            call_deadline = time.monotonic() + limits.call_seconds
            try:
                with target_lm.budget(min(call_deadline, job_deadline), background=True):
                    answer = target_lm.generate(args[0], **kwargs) if method == "generate" else target_lm.choose(*args)
            except LMDeadlineError:
                if time.monotonic() >= job_deadline:
                    raise DeadlineExceededError("the request's deadline passed during a model call; it was stopped") from None
                raise LMLimitError(f"a model call ran over its budget of {limits.call_seconds:g} s; it was stopped") from None
            if not isinstance(answer, str):
                raise TargetModelError(f"target model returned a {type(answer).__name__}, not a str")
            reply: tuple = ("ok", answer)
        except (LMLimitError, DeadlineExceededError):
            raise
        except ArcError as exc:
            reply = ("err", *_describe_error(exc))
        except Exception as exc:  # noqa: BLE001 - the model's failure becomes the entry's TargetModelError
            reply = ("err", *_describe_error(TargetModelError(f"target model failed: {type(exc).__name__}: {exc}")))
        self._to_worker(worker, reply)

    def _answer_tool(self, worker: _Worker, tools: Mapping[str, Callable[..., Any]], msg: tuple) -> None:
        if len(msg) != 4:
            raise _ProtocolError("malformed tool request")
        _, _, name, kwargs = msg
        if not (isinstance(name, str) and isinstance(kwargs, dict) and all(isinstance(k, str) for k in kwargs)):
            raise _ProtocolError("malformed tool request")
        _check_value(kwargs)
        with self._lock:
            self._stats["tool_calls"] += 1
        tool = tools.get(name)
        try:
            if tool is None:
                raise ToolNotAllowedError(f"tool {name!r} is not registered by the host (allowed: {sorted(tools)})")
            reply: tuple | bytes = pickle.dumps(("ok", tool(**kwargs)), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - raised again inside the entry, as in-process
            reply = ("err", *_describe_error(exc))
        self._to_worker(worker, reply)

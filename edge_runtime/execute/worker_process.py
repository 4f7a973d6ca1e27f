"""The worker process: what runs in the child, from entering the sandbox to serving jobs until the pipe closes.

The one target model stays in the server. Inside a worker, ``lm``/``extract``/``smart_convert``
reach a :class:`TargetLM` proxy that sends the request back over the worker's pipe; the parent
answers it with its own model (and host tools the same way), so the worker never loads a model
and the entry sees exactly the behaviour it would see in-process.

This module is what the forkserver preloads (``worker_pool._PRELOAD``) and what a spawned child
imports to find :func:`_worker_main`: it imports no more than a worker needs.
"""

from __future__ import annotations

import collections
import os
import pickle
import resource
import sys
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

from edge_runtime.entries.compiler import LoadedCompiledEntry
from edge_runtime.entries.registry import Execution
from edge_runtime.errors import ArcError, ExecutionError, TargetModelError
from edge_runtime.execute.confinement import enter_sandbox
from edge_runtime.execute.remote_errors import _describe_error, _rebuild_error
from edge_runtime.execute.wire import MAX_REPLY_BYTES, _dumps_for_parent
from edge_runtime.model.target_lm import TargetLM

_WORKER_CACHE_SIZE = 128
_EXIT_OUT_OF_MEMORY = 75  # the worker could not even report a MemoryError
_HEAVY_MODULES = ("onnxruntime", "grpc", "tokenizers", "hnswlib", "cryptography", "torch")


def _worker_send(conn: Connection, msg: tuple) -> None:
    conn.send_bytes(pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL))


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

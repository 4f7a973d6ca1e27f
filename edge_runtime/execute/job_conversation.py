"""The parent's half of one job: send it to a worker, then read the worker's replies until its result or error.

While a job runs the worker may ask for the target model or a host tool; each request is checked
(:mod:`edge_runtime.execute.wire`), answered within the pool's caps, and any reply our worker code
would never send ends the worker. Why a base class of :class:`WorkerPool` and not its own object:
these methods count into the pool's statistics under the pool's lock and read its memory limit and
closed flag, exactly as they did as methods of the pool; the split is by concept, the state stays one.
"""

from __future__ import annotations

import pickle
import signal
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from edge_runtime.entries.context import NarrationStep
from edge_runtime.entries.registry import Execution
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
from edge_runtime.execute.remote_errors import _describe_error, _rebuild_error
from edge_runtime.execute.wire import (
    MAX_REPLY_BYTES,
    _check_lm_bounds,
    _check_lm_request,
    _check_value,
    _load_reply,
    _ProtocolError,
)
from edge_runtime.execute.worker_process import _EXIT_OUT_OF_MEMORY
from edge_runtime.model.lm_limits import LMLimits

#: Signals a memory-limited worker dies of when an allocation fails outside Python's MemoryError path
#: (SIGKILL from the kernel OOM killer, SIGSEGV/SIGBUS from a failed stack or mmap growth, SIGABRT from a C abort).
_MEMORY_SIGNALS = frozenset({signal.SIGKILL, signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT})


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


class _JobConversation:
    """One job's exchange with its worker, and the worker handling (kill, send) the pool shares with it."""

    _lock: threading.Lock
    _stats: dict[str, int]
    _closed: bool
    memory_limit_mb: int

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

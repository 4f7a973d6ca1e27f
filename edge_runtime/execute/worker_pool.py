"""Runs compiled cache entries in a pool of sandboxed worker processes, outside the server's address space.

Why a process and not a thread: compiled entries come from a build server and pass the AST
validator and the reduced-builtins sandbox, but those are filters for a language subset, not a
proof. A worker process adds walls the interpreter cannot: its own memory (the server's keys,
model weights and open files are simply not there), an address-space limit, a recursion limit,
no inherited file descriptors beyond its pipe, no environment secrets, an empty working
directory, and a parent that can SIGKILL it at the per-call deadline. A runaway entry (infinite
loop, memory bomb, deep recursion) therefore ends only its own call; its worker is replaced in
the background and the pool keeps serving.

Where the rest lives: the wire protocol and its restricted reply unpickler (``wire.py``), errors
carried across the pipe (``remote_errors.py``), what runs in the child (``worker_process.py``), and
the parent's half of one job, its model and tool requests included (``job_conversation.py``). This
module is the pool itself: starting, handing out, replacing and closing workers.

Deployment notes. Like every forkserver/spawn child, a worker imports the server's main module
(as ``__mp_main__``) before it runs our code: start the server through a light main such as the
``arc-edge`` script or ``python -m edge_runtime.cli``, never a script that imports onnxruntime
or gRPC at the top level (``debug_worker_info()["heavy_modules"]`` shows what leaked in). What
the walls do not cover: a worker that escapes the Python sandbox still runs with the server's
uid unless the server runs as root (workers then switch to ``nobody``), and nothing here is a
seccomp filter or a namespace; the limits make such an escape hard to use, not impossible.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import multiprocessing
import os
import queue
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from edge_runtime.entries.registry import Execution
from edge_runtime.entries.validator import ALLOWED_IMPORTS
from edge_runtime.errors import (
    ArcError,
    DeadlineExceededError,
    WorkerCrashedError,
    WorkerPoolClosedError,
)
from edge_runtime.execute.job_conversation import _JobConversation, _Worker
from edge_runtime.execute.wire import MAX_REPLY_BYTES, _load_reply, _ProtocolError
from edge_runtime.execute.worker_process import _worker_main
from edge_runtime.model.lm_limits import LMLimits
from edge_runtime.model.target_lm import TargetLM

__all__ = ["WorkerPool"]

log = logging.getLogger(__name__)

#: What the forkserver imports once, so a forked worker starts with them loaded: the worker's own module
#: (where ``_worker_main`` lives) and every module an entry may import.
_PRELOAD = ["edge_runtime.execute.worker_process", "ctypes", *sorted(ALLOWED_IMPORTS)]


class WorkerPool(_JobConversation):
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

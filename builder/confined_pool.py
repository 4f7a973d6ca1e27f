"""A process pool for untrusted work whose replies the parent reads as plain data only.

Why not ``multiprocessing.Pool``: its workers share one result pipe that the parent's result thread
unpickles with the full unpickler, so a worker subverted by the code it runs could make the parent
construct any object (``os.system`` included) just by writing to that pipe, and could forge or read
other workers' results. Here every worker has a pipe of its own; the parent reads each reply with a
size bound and the worker pool's restricted unpickler (:func:`edge_runtime.execute.wire._load_reply`:
plain value classes only, no callables), then hands it to the caller's ``accept``, which checks its
shape. A reply that fails either check, or a worker that dies, costs only that worker: its item is
reported as lost and a fresh worker takes its place (``multiprocessing.Pool`` would wait forever for
a task whose worker died).

Parent to worker is plain pickle: the worker trusts its parent. Workers are fresh interpreters
started the way :mod:`builder.confined_launch` starts the builder's other confined children, never
forks: a fork carries the parent's memory (its initial environment block with any
``ANTHROPIC_API_KEY`` among it) and its threads' state (a fork taken after onnxruntime's or gRPC's
threads started aborted the worker). So ``run`` and ``initializer`` are module-level functions the
worker imports by name, and the initializer imports what the work needs before it gives anything up.
"""

from __future__ import annotations

import dataclasses
import socket
import subprocess
import sys
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, Generic, TypeVar

from builder.confined_launch import launch_environment
from edge_runtime.execute.wire import _check_value, _load_reply

T = TypeVar("T")
R = TypeVar("R")

MAX_REPLY_BYTES = 64 << 20
_EXIT_TIMEOUT_S = 5.0


class WorkerLost(Exception):
    """A worker died, or sent a reply the parent refused, while it held this item."""


class MalformedReply(Exception):
    """``accept`` found a reply of the wrong shape: the worker is not trusted any more."""


@dataclass
class _Worker(Generic[T]):
    process: subprocess.Popen
    conn: Connection
    item: T | None = None
    busy: bool = False

    def alive(self) -> bool:
        return self.process.poll() is None

    def join(self, timeout: float) -> None:
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            pass


def _launch(run: Callable[[Any], bytes], initializer: Callable[..., None] | None, initargs: tuple) -> _Worker[Any]:
    """A fresh interpreter with only :func:`launch_environment`, its end of a socket pair as its one
    inherited descriptor and no standard input; its first message names what it runs."""
    parent_end, child_end = socket.socketpair()
    try:
        fd = child_end.fileno()
        process = subprocess.Popen([sys.executable, "-P", "-m", "builder.confined_pool", str(fd)],
                                   env=launch_environment(), stdin=subprocess.DEVNULL, pass_fds=(fd,), close_fds=True)
    except BaseException:
        parent_end.close()
        raise
    finally:
        child_end.close()
    worker: _Worker[Any] = _Worker(process, Connection(parent_end.detach()))
    worker.conn.send((run, initializer, initargs))
    return worker


def _serve(conn: Connection) -> None:
    """Worker side: give up what the initializer gives up, then answer one item at a time."""
    run, initializer, initargs = conn.recv()
    if initializer is not None:
        initializer(*initargs)
    while True:
        try:
            item = conn.recv()
        except (EOFError, OSError):
            return
        if item is None:
            return
        conn.send_bytes(run(item))


def confined_map(
    items: Sequence[T],
    run: Callable[[T], bytes],
    accept: Callable[[tuple], R],
    *,
    workers: int,
    initializer: Callable[..., None] | None = None,
    initargs: tuple = (),
    max_reply_bytes: int = MAX_REPLY_BYTES,
) -> Iterator[tuple[T, R | WorkerLost]]:
    """``(item, accept(reply))`` for every item, in completion order (in order with one worker).

    ``run`` executes in a worker and returns bytes the restricted unpickler accepts (build them with
    :func:`edge_runtime.execute.wire._dumps_for_parent`); ``accept`` runs in the parent on the loaded
    tuple and raises :class:`MalformedReply` for a shape the worker code would never send."""
    pending = deque(items)
    if not pending:
        return
    pool: list[_Worker[T]] = []

    def start() -> None:
        pool.append(_launch(run, initializer, initargs))

    def feed(worker: _Worker[T]) -> None:
        if pending:
            worker.item, worker.busy = pending.popleft(), True
            worker.conn.send(worker.item)

    def retire(worker: _Worker[T]) -> None:
        pool.remove(worker)
        if worker.alive():
            worker.process.kill()
        worker.join(_EXIT_TIMEOUT_S)
        worker.conn.close()

    try:
        for _ in range(min(workers, len(pending)) or 1):
            start()
        for worker in list(pool):
            feed(worker)
        while any(w.busy for w in pool):
            ready = wait([w.conn for w in pool if w.busy])
            for worker in [w for w in pool if w.busy and w.conn in ready]:
                item = worker.item
                worker.item, worker.busy = None, False
                try:
                    reply = accept(_load_reply(worker.conn.recv_bytes(max_reply_bytes)))
                except (EOFError, OSError) as exc:
                    lost: WorkerLost | None = WorkerLost(_death(worker, exc))
                except Exception as exc:  # noqa: BLE001 - an undecodable or malformed reply
                    lost = WorkerLost(f"the worker's reply was refused ({exc})")
                else:
                    lost = None
                if lost is not None:
                    retire(worker)
                    yield item, lost  # type: ignore[misc]
                    if pending and len(pool) < workers:
                        start()
                        feed(pool[-1])
                    continue
                yield item, reply  # type: ignore[misc]
                feed(worker)
    finally:
        for worker in list(pool):
            try:
                worker.conn.send(None)
            except (OSError, ValueError):
                pass
        for worker in list(pool):
            worker.join(_EXIT_TIMEOUT_S)
            retire(worker)


def _death(worker: _Worker[Any], exc: BaseException) -> str:
    if isinstance(exc, OSError) and "length" in str(exc):
        return f"the worker's reply was over the size limit ({exc})"
    worker.join(_EXIT_TIMEOUT_S)
    return f"the worker died (exit code {worker.process.returncode})"


def rebuild_dataclass(cls: type[R], data: Any, types: Mapping[str, type | tuple[type, ...]]) -> R:
    """``cls(**data)`` when ``data`` is a dict with exactly ``cls``'s fields, each of its type in ``types``;
    else :class:`MalformedReply`. For replies already read by the restricted unpickler."""
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    if not isinstance(data, dict) or set(data) != names:
        raise MalformedReply(f"a {cls.__name__} needs exactly the fields {sorted(names)}")
    for name, expected in types.items():
        if not isinstance(data[name], expected):
            raise MalformedReply(f"{cls.__name__}.{name} is a {type(data[name]).__name__}")
    try:
        _check_value(data)
    except Exception as exc:  # noqa: BLE001 - e.g. a hollow Fraction
        raise MalformedReply(str(exc)) from None
    return cls(**data)


if __name__ == "__main__":
    _serve(Connection(int(sys.argv[1])))

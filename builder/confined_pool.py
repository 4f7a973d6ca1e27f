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

Parent to worker is plain pickle: the worker trusts its parent. Workers are forked where the
platform can (the importer's initializer relies on inheriting loaded modules), else spawned.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, Generic, TypeVar

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
    process: Any
    conn: Connection
    item: T | None = None
    busy: bool = False


def _close_inherited(keep: int) -> None:
    """A forked worker holds copies of every descriptor the parent had open: its output files (a
    subverted worker could write forged results into them) and the other workers' pipes. Keep only
    the standard streams and this worker's own pipe."""
    import os
    import resource

    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    limit = 65536 if limit == resource.RLIM_INFINITY else min(limit, 1 << 20)
    os.closerange(3, keep)
    os.closerange(keep + 1, limit)


def _serve(conn: Connection, run: Callable[[Any], bytes], initializer: Callable[..., None] | None,
           initargs: tuple, forked: bool) -> None:
    """Worker side: give up what the initializer gives up, then answer one item at a time."""
    if forked:
        _close_inherited(conn.fileno())
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
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork") if "fork" in methods else multiprocessing.get_context()
    pool: list[_Worker[T]] = []

    def start() -> None:
        parent_end, child_end = ctx.Pipe()
        forked = ctx.get_start_method() == "fork"
        process = ctx.Process(target=_serve, args=(child_end, run, initializer, initargs, forked), daemon=True,
                              name="arc-confined-pool")
        process.start()
        child_end.close()
        pool.append(_Worker(process, parent_end))

    def feed(worker: _Worker[T]) -> None:
        if pending:
            worker.item, worker.busy = pending.popleft(), True
            worker.conn.send(worker.item)

    def retire(worker: _Worker[T]) -> None:
        pool.remove(worker)
        if worker.process.is_alive():
            worker.process.kill()
        worker.process.join(_EXIT_TIMEOUT_S)
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
            worker.process.join(_EXIT_TIMEOUT_S)
            retire(worker)


def _death(worker: _Worker[Any], exc: BaseException) -> str:
    if isinstance(exc, OSError) and "length" in str(exc):
        return f"the worker's reply was over the size limit ({exc})"
    worker.process.join(_EXIT_TIMEOUT_S)
    return f"the worker died (exit code {worker.process.exitcode})"


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

"""A wall-clock limit for candidate code the builder runs in-process (SIGALRM, main thread only)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def time_limit(seconds: float, error: type[BaseException] = TimeoutError) -> Iterator[None]:
    """Raise ``error`` in the block after ``seconds``; a no-op off the main thread or where SIGALRM is missing."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise error(f"ran longer than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)

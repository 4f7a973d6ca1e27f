"""How many bytes pushes may add to the blob store: a per-blob limit and a total, reserved up front.

A push declares its size in its first chunk; the bytes are reserved before any is written and
released when the push ends (kept or not), so two concurrent pushes cannot both squeeze under
the total. Over either limit the push is refused before a byte reaches the disk.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from edge_runtime.errors import BlobQuotaError


class BlobQuota:
    """``reserve(size)`` as a context manager; ``used`` reports the bytes already stored."""

    def __init__(self, per_blob: int, total: int, used: Callable[[], int]) -> None:
        self.per_blob = per_blob
        self.total = total
        self._used = used
        self._reserved = 0
        self._lock = threading.Lock()

    @contextmanager
    def reserve(self, size: int) -> Iterator[None]:
        if size > self.per_blob:
            raise BlobQuotaError(f"a blob of {size} bytes is over this device's per-blob limit of {self.per_blob} bytes")
        with self._lock:
            stored = self._used()
            if stored + self._reserved + size > self.total:
                raise BlobQuotaError(
                    f"a blob of {size} bytes would take the blob store past its quota of {self.total} bytes "
                    f"({stored} stored, {self._reserved} being pushed)"
                )
            self._reserved += size
        try:
            yield
        finally:
            with self._lock:
                self._reserved -= size

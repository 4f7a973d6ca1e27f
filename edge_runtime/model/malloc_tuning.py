"""Keep the server's resident memory close to what it uses (glibc only; a no-op elsewhere).

Every verifying pass allocates ~25 MB of KV arrays (60 arrays of ~0.4 MB) on whichever gRPC
thread runs it. glibc raises its mmap threshold as large blocks are freed, so later ones come
from per-thread arenas that keep freed pages: measured here, ~480 MB of idle 64 MB arenas after
a burst at concurrency 16. A fixed 256 KB threshold maps such arrays and returns them to the
kernel when freed: peak RSS after that burst 1040 → 760 MB, cold start unchanged (1 and 4 MB
thresholds kept less and slowed the model load).

Loading a model leaves free holes in the heap (onnxruntime parses the graph, copies its
weights out and frees the parse): ``release_free_memory()`` after a load hands them back
(measured: the SmolLM2 int8 session 169 → 119 MB resident for 109 MB of weights).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8


@functools.cache
def _libc() -> ctypes.CDLL | None:
    """The C library, looked up once (find_library runs ldconfig: ~2 ms a call, on every model load)."""
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


def release_free_memory() -> bool:
    """Return the heap's free pages to the kernel (glibc's malloc_trim); False where there is none."""
    libc = _libc()
    trim = getattr(libc, "malloc_trim", None) if libc is not None else None
    if trim is None:
        return False
    trim.argtypes = (ctypes.c_size_t,)
    trim.restype = ctypes.c_int
    trim(0)
    return True


def tune_malloc(mmap_threshold: int = 256 << 10, arena_max: int = 2) -> bool:
    """Apply the settings; returns False where the C library is not glibc."""
    libc = _libc()
    mallopt = getattr(libc, "mallopt", None) if libc is not None else None
    if mallopt is None:
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    ok = mallopt(M_MMAP_THRESHOLD, mmap_threshold) == 1
    ok = mallopt(M_TRIM_THRESHOLD, 2 * mmap_threshold) == 1 and ok
    ok = mallopt(M_ARENA_MAX, arena_max) == 1 and ok
    return ok

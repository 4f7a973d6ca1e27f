"""Keep the server's resident memory close to what it uses (glibc only; a no-op elsewhere).

Every verifying pass allocates ~25 MB of KV arrays (60 arrays of ~0.4 MB) on whichever gRPC
thread runs it. glibc raises its mmap threshold as large blocks are freed, so later ones come
from per-thread arenas that keep freed pages: measured here, ~480 MB of idle 64 MB arenas after
a burst at concurrency 16. A fixed 256 KB threshold maps such arrays and returns them to the
kernel when freed: peak RSS after that burst 1040 → 760 MB, cold start unchanged (1 and 4 MB
thresholds kept less and slowed the model load).
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8


def tune_malloc(mmap_threshold: int = 256 << 10, arena_max: int = 2) -> bool:
    """Apply the settings; returns False where the C library is not glibc."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    ok = mallopt(M_MMAP_THRESHOLD, mmap_threshold) == 1
    ok = mallopt(M_TRIM_THRESHOLD, 2 * mmap_threshold) == 1 and ok
    ok = mallopt(M_ARENA_MAX, arena_max) == 1 and ok
    return ok

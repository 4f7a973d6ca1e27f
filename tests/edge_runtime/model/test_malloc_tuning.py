"""The server's malloc settings: applied on glibc, harmless elsewhere."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

from edge_runtime.model.malloc_tuning import tune_malloc

REPO = Path(__file__).resolve().parents[3]

PROBE = """
import resource, sys
import numpy as np
from edge_runtime.model.malloc_tuning import tune_malloc
if sys.argv[1] == "tuned":
    assert tune_malloc()
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize()
x = np.ones(100_000)
del x  # one freed large block raises glibc's dynamic mmap threshold
blocks = [np.ones(50_000) for _ in range(600)]  # 600 x 0.4 MB, like one verifying pass's KV arrays
before = rss()
del blocks[::2]  # free half, interleaved with live ones, as overlapping requests do
print((rss() - before + 300 * 400_000) >> 20)  # MB freed by Python but still resident
"""


def freed_but_resident_mb(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True, cwd=REPO)
    return int(out.stdout)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_freed_arrays_go_back_to_the_kernel_only_with_the_tuning():
    assert freed_but_resident_mb("tuned") < 20
    assert freed_but_resident_mb("default") > 100  # the waste the tuning exists for


def test_tuning_is_safe_to_call_twice():
    first = tune_malloc()
    assert tune_malloc() == first


RELEASE_PROBE = """
import resource, sys
import numpy as np
from edge_runtime.model.malloc_tuning import release_free_memory
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize()
blocks = [np.ones(12_000) for _ in range(1000)]  # 1000 x 96 KB: below glibc's mmap threshold, on the heap
keep = blocks[-1]  # a live block at the top of the heap: freeing the rest leaves holes, not a shorter heap
del blocks
before = rss()
released = release_free_memory()
print(int(released), (before - rss()) >> 20)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_release_free_memory_returns_heap_holes_to_the_kernel():
    out = subprocess.run([sys.executable, "-c", RELEASE_PROBE], capture_output=True, text=True, check=True, cwd=REPO)
    released, returned_mb = map(int, out.stdout.split())
    assert released == 1 and returned_mb > 50  # ~94 MB of freed holes were still resident before

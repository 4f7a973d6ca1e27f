"""What a process gives up before it runs untrusted entry code: the walls the interpreter cannot build.

Shared by the device's worker processes (edge_runtime/execute/worker_process.py) and the build server's confined
compile (builder/confined_build.py), so both run entry code behind the same walls: a cleared
environment, an empty working directory, no new files (RLIMIT_NOFILE 0), no new processes, an
address-space cap, no core dumps, ``nobody`` instead of root, no new privileges, death with the
parent, and optionally no network.
"""

from __future__ import annotations

import importlib
import logging
import multiprocessing
import os
import resource
import signal
import sys
import threading
import time
from typing import Any

from edge_runtime.entries.validator import ALLOWED_IMPORTS

log = logging.getLogger(__name__)

EXIT_ORPHANED = 76  # the parent went away while the process was busy
_ENV_KEEP = frozenset({"PATH", "LANG", "LANGUAGE", "TZ"})
_CLONE_NEWNET = 0x40000000


def _unshare_network() -> bool:
    """A network namespace of this process's own: no route to any host, loopback included."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_CLONE_NEWNET) != 0:
        log.warning("no network namespace for entry code: unshare failed (errno %d)", ctypes.get_errno())
        return False
    return True


def _vm_size_kb() -> int:
    with open("/proc/self/status", "rb") as status:
        for line in status:
            if line.startswith(b"VmSize:"):
                return int(line.split()[1])
    return 0


def _lower_limit(which: int, value: int) -> None:
    soft, hard = resource.getrlimit(which)
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(which, (value, value))


def _prctl(option: int, arg: int) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, arg, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}, {arg}) failed")


def _watch_parent(ppid: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != ppid:
            os._exit(EXIT_ORPHANED)


def enter_sandbox(
    memory_limit_bytes: int, workdir: str, recursion_limit: int, forkserver: bool, *, cut_network: bool = False
) -> dict[str, Any]:
    """Everything a process gives up before it touches entry code. Order matters: see the comments.

    ``cut_network``: first move into a network namespace of its own with no interface but a down
    loopback (needs root or CAP_SYS_ADMIN; where the kernel refuses, the process goes on and the
    returned ``network_cut`` says so)."""
    network_cut = _unshare_network() if cut_network else False
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the server, which then closes the pool
    keep = {k: v for k, v in os.environ.items() if k in _ENV_KEEP or k.startswith("LC_")}
    os.environ.clear()  # the server's environment may hold credentials
    os.environ.update(keep)
    multiprocessing.current_process().authkey = os.urandom(32)  # do not keep the server's authkey
    # Modules entries may import are imported now: once RLIMIT_NOFILE is 0 no file can be opened.
    for name in sorted(ALLOWED_IMPORTS):
        importlib.import_module(name)
    import ctypes  # noqa: F401 - loaded before the file limit, used by _prctl

    os.chdir(workdir)
    os.umask(0o077)
    sys.setrecursionlimit(recursion_limit)
    vm_kb = _vm_size_kb()
    if vm_kb * 1024 >= memory_limit_bytes:
        raise ValueError(
            f"memory_limit_mb={memory_limit_bytes >> 20} is below what an idle worker already maps ({vm_kb >> 10} MiB)"
        )
    # From here on no file is read: the identity switch below may make the interpreter's own files unreadable.
    dropped = False
    if os.geteuid() == 0:  # never run entry code as root: a nobody cannot read the server's keys
        try:
            import pwd

            nobody = pwd.getpwnam("nobody")
            uid, gid = nobody.pw_uid, nobody.pw_gid
        except (ImportError, KeyError):
            uid = gid = 65534
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            dropped = True
        except OSError as exc:
            log.warning("worker keeps running as root: cannot switch to uid %d: %s", uid, exc)
    ppid = os.getppid()
    if sys.platform.startswith("linux"):
        _prctl(38, 1)  # PR_SET_NO_NEW_PRIVS
    if forkserver and sys.platform.startswith("linux"):
        # Our parent is the forkserver, which exits with the server: die with it (set after setuid,
        # which clears the death signal). A GIL-holding C loop cannot ignore SIGKILL.
        _prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != ppid:
            os._exit(EXIT_ORPHANED)
    else:
        # Our parent is the server itself, and PDEATHSIG would follow the thread that started us.
        threading.Thread(target=_watch_parent, args=(ppid,), name="arc-worker-watchdog", daemon=True).start()
    _lower_limit(resource.RLIMIT_CORE, 0)
    _lower_limit(resource.RLIMIT_NPROC, 0)  # no processes, no threads (ignored for root)
    _lower_limit(resource.RLIMIT_NOFILE, 0)  # the pipe stays open; nothing new can be opened
    _lower_limit(resource.RLIMIT_AS, memory_limit_bytes)
    return {"vm_kb": vm_kb, "dropped_root": dropped, "network_cut": network_cut}

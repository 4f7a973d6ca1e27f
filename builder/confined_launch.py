"""Starting a confined child on the build server: a fresh interpreter that never saw the builder's secrets.

Both confined children of the builder start here: the one-shot compile of ``arc-build bundle`` /
``compile-entries`` (:mod:`builder.confined_build`) and the long-lived session in which the LLM
builder registers, compiles and test-runs candidate entries (:mod:`builder.confined_session`).

Why not ``multiprocessing``'s ``spawn``: it starts the child with the parent's whole environment,
so ``ANTHROPIC_API_KEY`` would sit in the child's initial environment block (readable in its
memory and in ``/proc/PID/environ``) for its whole life, even after the walls clear ``os.environ``.
Here the child is started by :func:`subprocess.Popen` with an environment that holds only what an
interpreter needs to start (:func:`launch_environment`), ``-P`` (no working directory on
``sys.path``), its pipe as the one inherited descriptor, and no standard input. What the child does
before it touches entry code is :func:`prepare`: load the embedder, then enter the device's own
walls (:func:`edge_runtime.execute.confinement.enter_sandbox`, network cut).
"""

from __future__ import annotations

import importlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

#: Role name -> "module:function" run in the child as ``function(conn, workdir, memory_limit_bytes)``.
ROLES = {
    "compile": "builder.confined_build:serve_compile",
    "session": "builder.confined_session_child:serve",
}
#: Environment variables a confined child starts with: enough to find the interpreter's packages.
_LAUNCH_KEEP = frozenset({"PATH", "LANG", "LANGUAGE", "TZ", "PYTHONPATH", "PYTHONHASHSEED", "ORT_DISABLE_TELEMETRY"})


def launch_environment() -> dict[str, str]:
    """The child's whole environment: locale, PATH, and a PYTHONPATH that finds this very builder."""
    env = {k: v for k, v in os.environ.items() if k in _LAUNCH_KEEP or k.startswith("LC_")}
    root = str(Path(__file__).resolve().parents[1])  # the builder the parent runs, not another install
    env["PYTHONPATH"] = os.pathsep.join([root, *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    return env


@dataclass
class ConfinedChild:
    """The parent's handle on a started child: its process, its end of the pipe, its working directory."""

    process: subprocess.Popen
    conn: Connection
    workdir: str

    @property
    def pid(self) -> int:
        return self.process.pid

    def exit_code(self, wait_s: float = 5.0) -> int | None:
        try:
            return self.process.wait(wait_s)
        except subprocess.TimeoutExpired:
            return None

    def close(self) -> None:
        """Kill the child if it still runs, and remove its working directory."""
        self.conn.close()
        if self.process.poll() is None:
            self.process.kill()
        self.exit_code()
        shutil.rmtree(self.workdir, ignore_errors=True)


def launch(role: str, memory_limit_bytes: int) -> ConfinedChild:
    """Start the child for ``role`` (see :data:`ROLES`); it confines itself before it reads entry code."""
    if role not in ROLES:
        raise ValueError(f"unknown confined role {role!r}")
    workdir = tempfile.mkdtemp(prefix=f"arc-build-{role}-")
    os.chmod(workdir, 0o777)  # the child works here as nobody; nothing else is in it
    parent_end, child_end = socket.socketpair()
    try:
        fd = child_end.fileno()
        process = subprocess.Popen(
            [sys.executable, "-P", "-m", "builder.confined_launch", role, str(fd), workdir, str(memory_limit_bytes)],
            env=launch_environment(), stdin=subprocess.DEVNULL, pass_fds=(fd,), close_fds=True,
        )
    except BaseException:
        parent_end.close()
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    finally:
        child_end.close()
    return ConfinedChild(process, Connection(parent_end.detach()), workdir)


def prepare(workdir: str, memory_limit_bytes: int) -> tuple[Any, dict]:
    """Child side, before any entry code: load the embedder (model files are read now, before the file
    limit, and onnxruntime's threads start before the process limit), then give up everything else."""
    from edge_runtime.execute.confinement import enter_sandbox
    from edge_runtime.route.embedder import OnnxSentenceEmbedder

    embedder = OnnxSentenceEmbedder()
    embedder.embed(["a first sentence", "and a second"])
    walls = enter_sandbox(memory_limit_bytes, workdir, 2000, forkserver=False, cut_network=True)
    return embedder, walls


def child_main(argv: list[str]) -> None:
    """``python -m builder.confined_launch ROLE FD WORKDIR MEMORY``: run the role's function on the pipe."""
    role, fd, workdir, memory = argv
    module, function = ROLES[role].split(":")
    conn = Connection(int(fd))
    getattr(importlib.import_module(module), function)(conn, workdir, int(memory))


if __name__ == "__main__":
    child_main(sys.argv[1:])

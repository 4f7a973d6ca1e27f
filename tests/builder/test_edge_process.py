"""The evaluation's edge server does not outlive the evaluation that started it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

REPO = Path(__file__).resolve().parents[2]

PARENT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-m", "builder.eval.edge_process", "--data-dir", sys.argv[1], "--trust",
                          sys.argv[2], "--port-file", sys.argv[3], "--workers", "1", "--threads", "1"])
print(child.pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is gone but not yet reaped by its new parent
        return stat.read().split(") ")[-1].split()[0] != "Z"


def test_the_edge_server_stops_when_the_evaluation_that_started_it_is_killed(tmp_path):
    """An evaluation killed mid-run never calls stop(); its server, reparented, notices and stops within seconds
    (before: it kept its port and the model's memory until the machine restarted)."""
    key = Ed25519PrivateKey.generate().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()
    port_file = tmp_path / "port"
    env = {**os.environ, "ORT_DISABLE_TELEMETRY": "1"}
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path / "data"), key, str(port_file)],
                              cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        deadline = time.monotonic() + 120
        while not port_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert port_file.exists() and _alive(child)
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        deadline = time.monotonic() + 30
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(child)
    finally:
        parent.kill()
        try:
            os.kill(child, signal.SIGKILL)
        except (ProcessLookupError, UnboundLocalError):
            pass

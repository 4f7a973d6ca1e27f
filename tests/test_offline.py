"""Serving makes no network connection: the whole server runs under strace and every connect() is local.

onnxruntime contacts a telemetry host about a second after a session is created unless
ORT_DISABLE_TELEMETRY=1 is set before it is imported; the runtime sets it. This test
creates real sessions (the target model and the worker pool's processes) and watches.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from edge_server_fixtures import EXAMPLES, make_keys, random_static_embedder
from tiny_llama import tiny_artefact

from builder.bundle_build import build_bundle
from edge_runtime.serving.client import EdgeClient, decode

REPO = Path(__file__).resolve().parents[1]
LOCAL = re.compile(r'connect\(\d+, \{sa_family=(AF_UNIX|AF_INET, sin_port=htons\(\d+\), '
                   r'sin_addr=inet_addr\("127\.0\.0\.1"\)|AF_INET6, sin6_port=htons\(\d+\), [^}]*inet_pton\(AF_INET6, '
                   r'"::1"\))')


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_serving_connects_to_nothing_but_loopback(tmp_path, tmp_path_factory):
    key, public = make_keys(tmp_path / "keys")
    model = tiny_artefact(tmp_path_factory.mktemp("tiny"), "int8-smooth")
    bundle = build_bundle(
        EXAMPLES, tmp_path / "out", name="examples", version="1", private_key=key, target_model_dir=model,
        embedder_dir=random_static_embedder(tmp_path / "embedder"), progress=lambda _: None,
    ).path
    port = free_port()
    log = tmp_path / "strace.log"
    # `arc-edge serve` of this checkout (the installed script may belong to another one, e.g. a git worktree's).
    command = [
        "strace", "-f", "-qq", "-e", "trace=connect", "-o", str(log),
        sys.executable, "-m", "edge_runtime.cli", "serve", "--data-dir", str(tmp_path / "device"),
        "--trust", str(key.with_suffix(".pub")), "--port", str(port), "--bundle", str(bundle), "--model", str(model),
    ]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
                              env=env, cwd=tmp_path)
    try:
        answered = []
        with EdgeClient(f"127.0.0.1:{port}", timeout_s=30) as client:
            deadline = time.time() + 120
            while time.time() < deadline and not answered:
                try:
                    answered.append(decode(client.invoke(
                        "What is the pressure, in kPa, of 3 mol of an ideal gas at 100 degrees celsius held in a 20 litres "
                        "container?"
                    )))
                except Exception:  # noqa: BLE001 - the server is still starting
                    time.sleep(0.2)
            why = server.stderr.read1().decode() if server.poll() is not None else answered
            assert answered and answered[0]["outcome"] == "HIT", why
            # A question off the template exercises the target model (an onnxruntime session) too.
            client.invoke("A 4 litres flask holds 1.5 mol of ideal gas at 30 degrees celsius. What is the pressure in kPa?")
            time.sleep(3)  # onnxruntime's telemetry would fire about a second after a session is created
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # the server itself, not only strace (which would detach)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)
    calls = [line for line in log.read_text().splitlines() if "connect(" in line]
    assert calls, "strace saw no connect() at all: the test is not watching the server"
    foreign = [line for line in calls if not LOCAL.search(line)]
    assert foreign == [], f"non-local connections: {foreign[:5]}"

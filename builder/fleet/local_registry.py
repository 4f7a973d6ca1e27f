"""A CNCF distribution registry (Debian's ``docker-registry`` 2.8) run as a child process, for tests,
the fleet benchmark and a one-host trial: bound to 127.0.0.1 on a free port, storage in a directory.

``make setup`` extracts the binary into ``.venv/registry/`` (``apt-get download docker-registry`` and
``dpkg -x``: no root). ``registry_binary()`` looks there, then at ``$ARC_REGISTRY_BIN`` and ``PATH``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

CONFIG = """version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: {storage}
  delete:
    enabled: true
http:
  addr: 127.0.0.1:{port}
"""


def registry_binary() -> Path | None:
    candidates = [os.environ.get("ARC_REGISTRY_BIN"),
                  str(Path(sys.prefix) / "registry" / "usr" / "bin" / "docker-registry"),
                  str(Path(__file__).resolve().parents[2] / ".venv" / "registry" / "usr" / "bin" / "docker-registry"),
                  shutil.which("docker-registry")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return Path(candidate)
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LocalRegistry:
    """``start()``/``stop()`` may be repeated: the storage (and so every artefact) survives a restart."""

    def __init__(self, storage: Path, *, port: int | None = None, binary: Path | None = None) -> None:
        self.binary = binary or registry_binary()
        if self.binary is None:
            raise FileNotFoundError("docker-registry not found: run `make setup` (it extracts Debian's docker-registry "
                                    "into .venv/registry) or set ARC_REGISTRY_BIN")
        self.storage = Path(storage)
        self.port = port or free_port()
        self.process: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 20.0) -> LocalRegistry:
        self.storage.mkdir(parents=True, exist_ok=True)
        config = self.storage.parent / f"registry-{self.port}.yml"
        config.write_text(CONFIG.format(storage=self.storage, port=self.port))
        # its log goes to a file: a pipe nobody reads fills up (every 404 of a poll is logged) and blocks the registry
        self.log_path = self.storage.parent / f"registry-{self.port}.log"
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen([str(self.binary), "serve", str(config)], stdout=log, stderr=log)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"docker-registry exited: {self.log_path.read_text(errors='replace')[-500:]}")
            try:
                urllib.request.urlopen(f"http://{self.address}/v2/", timeout=1).close()
                return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"docker-registry did not answer on {self.address} within {timeout_s} s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def __enter__(self) -> LocalRegistry:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

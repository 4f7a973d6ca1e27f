"""The edge server an evaluation starts and stops: a separate process on 127.0.0.1.

The child runs exactly the device's server (``edge_runtime.serving.server.create_server``) with the
options a compared system needs (guard on/off, ``on_disagreement``) and writes its port to a
file; the parent pushes the target model and the bundle over gRPC like any client, activates
it, and terminates the child at the end. A separate process keeps the client's threads from
competing with the server for the GIL, as on a device.

    python -m builder.eval.edge_process --data-dir D --trust HEX --port-file F [--no-guard] [--on-disagreement decode]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--trust", action="append", default=[], help="hex public key of a trusted signer")
    parser.add_argument("--port-file", type=Path, required=True)
    parser.add_argument("--no-guard", action="store_true")
    parser.add_argument("--on-disagreement", default="miss", choices=("miss", "decode"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--max-workers", type=int, default=32, help="gRPC handler threads")
    args = parser.parse_args(argv)

    from edge_runtime.options import ModelOptions, PipelineOptions, PoolOptions
    from edge_runtime.serving.runtime import RuntimeOptions
    from edge_runtime.serving.server import create_server

    options = RuntimeOptions(
        data_dir=args.data_dir, trusted_keys=[bytes.fromhex(k) for k in args.trust],
        model=ModelOptions(threads=args.threads), pool=PoolOptions(workers=args.workers),
        pipeline=PipelineOptions(on_disagreement=args.on_disagreement, guard=not args.no_guard),
    )
    server = create_server(options, address="127.0.0.1:0", max_workers=args.max_workers)
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    threading.Thread(target=_stop_with_parent, args=(os.getppid(), done), daemon=True).start()
    tmp = args.port_file.with_suffix(".tmp")
    tmp.write_text(str(server.port))
    os.replace(tmp, args.port_file)
    done.wait()
    server.stop(grace=1.0)
    return 0


def _stop_with_parent(parent: int, done: threading.Event, every_s: float = 1.0) -> None:
    """Stop when the evaluation that started this server is gone (killed, so it never called ``stop()``): the child
    is then another process's, and a server left behind would hold its port and a model's memory for good."""
    while not done.wait(every_s):
        if os.getppid() != parent:
            done.set()


class EdgeServerProcess:
    """Start the child, push the model and the bundle, activate; ``stop()`` (or ``with``) ends it."""

    def __init__(
        self,
        bundle: Path,
        trusted_key: bytes,
        *,
        model_dir: Path | None,
        guard: bool = True,
        on_disagreement: str = "miss",
        threads: int = 2,
        workers: int = 2,
        start_timeout_s: float = 120.0,
        log: Any = None,
    ) -> None:
        self.bundle = Path(bundle)
        self._tmp = tempfile.TemporaryDirectory(prefix="arc-eval-edge-")
        root = Path(self._tmp.name)
        port_file = root / "port"
        cmd = [
            sys.executable, "-m", "builder.eval.edge_process", "--data-dir", str(root / "data"),
            "--trust", trusted_key.hex(), "--port-file", str(port_file), "--on-disagreement", on_disagreement,
            "--threads", str(threads), "--workers", str(workers),
        ]
        if not guard:
            cmd.append("--no-guard")
        env = dict(os.environ)  # the child imports edge_runtime, which turns onnxruntime's telemetry off
        repo = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = repo + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self._stderr = open(root / "server.log", "wb")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self._stderr, env=env, cwd=repo)
        deadline = time.monotonic() + start_timeout_s
        while not port_file.exists():
            if self.proc.poll() is not None:
                raise RuntimeError(f"the edge server exited with {self.proc.returncode}: {self.log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the edge server did not start in time")
            time.sleep(0.05)
        self.port = int(port_file.read_text())
        self.address = f"127.0.0.1:{self.port}"
        self.admin_socket = root / "data" / "admin.sock"  # the server's default: <data-dir>/admin.sock
        try:
            self._install(model_dir, log)
        except BaseException:
            self.stop()
            raise

    def _install(self, model_dir: Path | None, log: Any) -> None:
        from edge_runtime.proto import edge_pb2 as pb
        from edge_runtime.serving.client import EdgeClient

        with EdgeClient(self.address, admin_socket=self.admin_socket, timeout_s=60) as client:
            pushed = client.push(self.bundle, model_dir=model_dir)
            sent, staged = pushed.model_blobs_sent, pushed.staged
            if pushed.still_missing:
                raise RuntimeError(f"bundle {staged.bundle_id} still lacks {len(pushed.still_missing)} blob(s), "
                                   f"first {pushed.still_missing[0]}: push them (arc-edge push --model/--blobs)")
            started = time.perf_counter()
            # Activation loads the router and the model: longer than EdgeClient.activate's 60 s on a big bundle.
            status = client.admin_stub.ActivateBundle(pb.ActivateBundleRequest(bundle_id=staged.bundle_id), timeout=600)
            self.bundle_id = status.active
            self.activation_s = time.perf_counter() - started
            if log:
                log(f"edge server on {self.address}: pushed {len(sent)} model blob(s), activated {self.bundle_id} "
                    f"in {self.activation_s:.1f} s")

    def log_tail(self, n: int = 2000) -> str:
        try:
            self._stderr.flush()
            return (Path(self._tmp.name) / "server.log").read_bytes()[-n:].decode("utf-8", "replace")
        except OSError:
            return ""

    def rss_mb(self) -> float:
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return float("nan")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._stderr.close()
        self._tmp.cleanup()

    def __enter__(self) -> EdgeServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


if __name__ == "__main__":
    raise SystemExit(main())

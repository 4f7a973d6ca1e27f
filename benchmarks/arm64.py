"""The edge runtime on linux/aarch64, checked under emulation against the x86 run, answer for answer.

On this x86 machine: an arm64 Debian userland (debootstrap, run through qemu-user-static and binfmt),
the edge runtime installed into a venv inside it from PyPI's aarch64 wheels *without* the builder
extras (hnswlib built from source there), the x86-built bundles and target model copied in, and
``arc-edge serve`` started inside on 127.0.0.1. The same bundles are served natively; every question
goes to both over gRPC and the answers and serving paths are compared.

    .venv/bin/python benchmarks/arm64.py [--gsm 50] [--json]

The emulated server gets per-call budgets that fit emulation (``--lm-call-seconds``, ``--entry-timeout``
and a client deadline ``--request-seconds``, all far above the device defaults: qemu-user runs a model
pass tens of times slower); the x86 server keeps ``arc-edge serve``'s defaults, so the reference is what
a device ships with. Only the budgets differ between the two, never what the answer is made of.

Needs root, Debian's debootstrap, qemu-user-static and binfmt-support (``apt-get install``), and the
package registries. The userland and its venv are cached under build/arm64/. Emulated timings are
not device timings: qemu translates every instruction, so they are many times slower than an ARM
CPU's and say nothing about NEON or dot-product kernels (docs/arm64.md).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import grpc  # noqa: E402

from builder.pipeline import default_key, make_bundle, target_model_dir  # noqa: E402
from edge_runtime.bundles.bundle import read_bundle  # noqa: E402
from edge_runtime.entries.metadata import format_value  # noqa: E402
from edge_runtime.proto import edge_pb2 as pb  # noqa: E402
from edge_runtime.serving.client import EdgeClient  # noqa: E402

WORK = REPO / "build" / "arm64"
ROOT = WORK / "root"  # set from --work in main()
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
DEBIAN_PACKAGES = "python3,python3-venv,python3-pip,python3-dev,g++,ca-certificates"
#: What a device must never get: the builder's heavy dependencies.
HOST_CA = os.environ.get("SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt")
BUILDER_ONLY = ("torch", "transformers", "optimum", "optimum-onnx", "accelerate", "anthropic")


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    return subprocess.run(cmd, check=True, **kw)


def in_root(*cmd: str, env: dict[str, str] | None = None, capture: bool = False) -> str:
    """Run ``cmd`` inside the arm64 userland (its binaries run through binfmt's qemu-aarch64)."""
    full = ["chroot", str(ROOT), "/usr/bin/env", "-i", "PATH=/opt/venv/bin:/usr/bin:/bin", "HOME=/root",
            "ORT_DISABLE_TELEMETRY=1", *(f"{k}={v}" for k, v in (env or {}).items()), *cmd]
    # what is not captured goes to stderr: stdout carries only the table or the --json line
    out = run(full, capture_output=True, text=True) if capture else run(full, stdout=sys.stderr, text=True)
    return out.stdout if capture else ""


def ensure_binfmt() -> None:
    binfmt = Path("/proc/sys/fs/binfmt_misc")
    if not (binfmt / "status").exists():
        run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(binfmt)])
    if not (binfmt / "qemu-aarch64").exists() or "enabled" not in (binfmt / "qemu-aarch64").read_text():
        run(["update-binfmts", "--enable", "qemu-aarch64"])


def ensure_proc() -> None:
    """The runtime reads /proc/self (its workers check their own memory map): mount it in the userland."""
    if not (ROOT / "proc" / "self").exists():
        run(["mount", "-t", "proc", "proc", str(ROOT / "proc")])
        # unmounted again on the way out: a proc mount left under build/ makes removing the folder fail
        atexit.register(subprocess.run, ["umount", "--lazy", str(ROOT / "proc")], check=False)


def ensure_userland() -> None:
    if (ROOT / "usr" / "bin" / "python3").exists():
        return
    WORK.mkdir(parents=True, exist_ok=True)
    run(["debootstrap", "--arch=arm64", "--variant=minbase", f"--include={DEBIAN_PACKAGES}", SUITE, str(ROOT), MIRROR])


def install_runtime() -> list[str]:
    """The repository's files (as git tracks them) into /opt/arc, then ``pip install /opt/arc`` with no extras."""
    target = ROOT / "opt" / "arc"
    if target.exists():
        shutil.rmtree(target)
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    # pip reaches the package registry from inside, through the host's resolver and the host's CA bundle
    # (which holds whatever CA the build machine's network needs).
    shutil.copy("/etc/resolv.conf", ROOT / "etc" / "resolv.conf")
    shutil.copy(HOST_CA, ROOT / "etc" / "ssl" / "certs" / "host-ca.crt")
    if not (ROOT / "opt" / "venv" / "bin" / "python").exists():
        in_root("python3", "-m", "venv", "/opt/venv")
    pip_env = {"HNSWLIB_NO_NATIVE": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
               "PIP_CERT": "/etc/ssl/certs/host-ca.crt", "PIP_DEFAULT_TIMEOUT": "180"}
    in_root("/opt/venv/bin/pip", "install", "--progress-bar", "off", "/opt/arc", env=pip_env)
    frozen = in_root("/opt/venv/bin/pip", "list", "--format=freeze", capture=True)
    return sorted(line for line in frozen.splitlines() if "==" in line)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_ready(address: str, question: str, deadline_s: float, request_s: float) -> None:
    """Until the server answers ``question`` (it stages the bundle and imports the model first); each try
    waits as long as a question may take there, so a slow first answer is not asked again and again."""
    start = time.monotonic()
    with EdgeClient(address, timeout_s=max(request_s, 120)) as client:
        while time.monotonic() - start < deadline_s:
            try:
                client.invoke(question)
                return
            except grpc.RpcError:
                time.sleep(0.5)
    raise SystemExit(f"the server at {address} did not answer within {deadline_s:g} s")


@dataclass(frozen=True)
class Budgets:
    """Time budgets of one server: per entry run, per entry model call, and the client's deadline per question.

    The entry and model-call defaults are ``arc-edge serve``'s own (what the x86 reference runs with); the
    server cuts each question to the shorter of the client's deadline and its entry budget, so a client
    deadline above the entry budget changes no answer. The emulated server gets ``EMULATED`` unless the
    command line says otherwise."""

    entry_seconds: float = 5.0
    lm_call_seconds: float = 2.0
    request_seconds: float = 60.0

    def serve_flags(self) -> list[str]:
        return ["--entry-timeout", f"{self.entry_seconds:g}", "--lm-call-seconds", f"{self.lm_call_seconds:g}"]


#: qemu-user runs a model pass ~30-50x slower than x86 (46 s for one on a shared 2-core host): an entry that
#: asks the model a few times needs minutes, and the client must wait longer than the entry may run.
EMULATED = Budgets(entry_seconds=900.0, lm_call_seconds=300.0, request_seconds=1200.0)


def serve_args(data: str, trust: str, bundle: str, model: str, port: int, budgets: Budgets) -> list[str]:
    return ["serve", "--data-dir", data, "--trust", trust, "--bundle", bundle, "--model", model,
            "--port", str(port), *budgets.serve_flags()]


def start_native(tmp: Path, pub: Path, bundle: Path, model: Path, budgets: Budgets) -> tuple[subprocess.Popen, str]:
    port = free_port()
    # this checkout's edge_runtime (the one copied into the userland), not whatever the venv has installed
    cmd = [sys.executable, "-m", "edge_runtime.cli",
           *serve_args(str(tmp / "x86"), str(pub), str(bundle), str(model), port, budgets)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return (subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
            f"127.0.0.1:{port}")


def start_emulated(pub: Path, bundle: Path, model: Path, budgets: Budgets) -> tuple[subprocess.Popen, str]:
    """Copy the x86-built artefacts in and start the server inside the arm64 userland."""
    data = ROOT / "opt" / "check"
    if data.exists():
        shutil.rmtree(data)
    (data / "in").mkdir(parents=True)
    shutil.copy(pub, data / "in" / "key.pub")
    shutil.copy(bundle, data / "in" / bundle.name)
    if (bundle.parent / "blobs").is_dir():  # bundle format 2: the routing table and tokenizer are blobs beside it
        shutil.copytree(bundle.parent / "blobs", data / "in" / "blobs", symlinks=False)
    shutil.copytree(model, data / "in" / "model", symlinks=False)
    port = free_port()
    cmd = ["chroot", str(ROOT), "/usr/bin/env", "-i", "PATH=/opt/venv/bin:/usr/bin:/bin", "HOME=/root",
           "ORT_DISABLE_TELEMETRY=1", "/opt/venv/bin/arc-edge",
           *serve_args("/opt/check/state", "/opt/check/in/key.pub", f"/opt/check/in/{bundle.name}",
                       "/opt/check/in/model", port, budgets)]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), f"127.0.0.1:{port}"


def example_questions(bundle: Path, public: bytes, n: int) -> list[str]:
    """A template question and a paraphrase for each of ``n`` entries, with values the entry's own code
    accepts (independently drawn values can be impossible together, -40 kelvin: such a question only
    compares two EXECUTION_FAILED misses)."""
    from extraction import PARAPHRASES
    from serve import accepted_values

    from edge_runtime.entries.compiler import LoadedCompiledEntry

    read = read_bundle(bundle, trusted_keys=[public])
    entries = sorted(read.entries.values(), key=lambda e: e.id)
    rng = random.Random(11)
    out = []
    for i in range(n):
        entry = entries[i % len(entries)]
        module = LoadedCompiledEntry(read.modules[entry.id], entry.id)
        values = {k: format_value(v) for k, v in accepted_values(entry, module, rng).items()}
        out.append(entry.template.format(**values))
        out.append(rng.choice(PARAPHRASES[entry.id]).format(**values))
    return out


def gsm_questions(path: Path | None, n: int) -> list[str]:
    """``n`` questions spread evenly over the set (its rows come grouped by template: the first ``n``
    would be a handful of templates)."""
    if path is None or n <= 0:
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    step = max(1, len(rows) // n)
    return [row["query"] for row in rows[::step][:n]]


def latest(pattern: str) -> Path | None:
    found = sorted((REPO / "build").glob(pattern))
    return found[-1] if found else None


def answers(address: str, questions: list[str], budgets: Budgets, label: str) -> list[dict]:
    out = []
    with EdgeClient(address, timeout_s=budgets.request_seconds) as client:
        for number, question in enumerate(questions, 1):
            start = time.perf_counter()
            reply = client.invoke(question)
            out.append({
                "question": question,
                "outcome": pb.Outcome.Name(reply.outcome),
                "miss_reason": pb.MissReason.Name(reply.miss_reason) if reply.outcome != pb.HIT else "",
                "entry_id": reply.entry_id,
                "answer_json": reply.answer_json,
                "parameters_json": reply.parameters_json,
                "path": reply.serving_path,
                "ms": (time.perf_counter() - start) * 1000,
            })
            row = out[-1]
            print(f"[{label} {number}/{len(questions)}] {row['outcome']} {row['miss_reason']} {row['entry_id']} "
                  f"{row['path']} {row['answer_json']} {row['ms']:.0f} ms", file=sys.stderr, flush=True)
    return out


def rss_mb(pid: int) -> float:
    """Resident memory of the emulated server: the chroot's child process that runs arc-edge."""
    best = 0.0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            status = (proc / "status").read_text()
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if b"/opt/check/state" in cmdline and b"chroot" not in cmdline.split(b"\0")[0]:
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    best = max(best, int(line.split()[1]) / 1024)
    return round(best, 1)


def compare(native: list[dict], emulated: list[dict]) -> tuple[int, int, list[dict]]:
    keys = ("outcome", "miss_reason", "entry_id", "answer_json", "parameters_json")
    equal = sum(all(a[k] == b[k] for k in keys) for a, b in zip(native, emulated))
    paths = sum(a["path"] == b["path"] for a, b in zip(native, emulated))
    differ = [{"question": a["question"], "x86": {k: a[k] for k in keys + ("path",)},
               "arm64": {k: b[k] for k in keys + ("path",)}}
              for a, b in zip(native, emulated) if any(a[k] != b[k] for k in keys + ("path",))]
    return equal, paths, differ


def check(bundle: Path, model: Path, pub: Path, questions: list[str], tmp: Path, emulated_budgets: Budgets,
          name: str) -> dict:
    native_budgets = Budgets()
    native, native_address = start_native(tmp, pub, bundle, model, native_budgets)
    emulated, emulated_address = start_emulated(pub, bundle, model, emulated_budgets)
    try:
        wait_ready(native_address, questions[0], 300, native_budgets.request_seconds)
        wait_ready(emulated_address, questions[0], 1800, emulated_budgets.request_seconds)
        x86 = answers(native_address, questions, native_budgets, f"{name} x86")
        arm = answers(emulated_address, questions, emulated_budgets, f"{name} arm64")
        memory = rss_mb(emulated.pid)
    finally:
        for proc in (native, emulated):
            proc.terminate()
        for proc in (native, emulated):
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
    equal, paths, differ = compare(x86, arm)
    model_ms = [a["ms"] for a in arm if a["path"].startswith("lm")]
    return {"answers_equal": equal, "answers_total": len(questions), "paths_equal": paths, "differences": differ,
            "pass_ms_emulated": round(statistics.median(model_ms), 1) if model_ms else None,
            "template_ms_emulated": round(statistics.median([a["ms"] for a in arm if a["path"] == "template"] or [0]), 1),
            "rss_mb": memory}


def main() -> None:
    global WORK, ROOT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=14, help="example entries' questions (half templates, half paraphrases)")
    parser.add_argument("--gsm", type=int, default=50, help="GSM-Symbolic questions against the GSM8K bundle")
    parser.add_argument("--gsm-bundle", type=Path, default=None,
                        help="the GSM8K evaluation bundle (default: the newest build/*/bundles/gsm8k-eval-*.arcb)")
    parser.add_argument("--gsm-trust", type=Path, default=None,
                        help="public key that signed --gsm-bundle (default: keys/arc-signing.pub beside its bundles/ "
                             "folder, else the default signing key's)")
    parser.add_argument("--gsm-set", type=Path, default=None,
                        help="a gsm_symbolic_dev.jsonl to draw questions from (default: the newest build/*/sets/ one)")
    parser.add_argument("--model", type=Path, default=None,
                        help="target-model artefact dir (default: build it or reuse build/target-models/)")
    parser.add_argument("--work", type=Path, default=WORK, help="where the arm64 userland is kept between runs")
    parser.add_argument("--lm-call-seconds", type=float, default=EMULATED.lm_call_seconds,
                        help="the emulated server's budget for one entry model call")
    parser.add_argument("--entry-timeout", type=float, default=EMULATED.entry_seconds,
                        help="the emulated server's budget for one entry run")
    parser.add_argument("--request-seconds", type=float, default=EMULATED.request_seconds,
                        help="the client's deadline for one question to the emulated server")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    WORK = args.work.resolve()
    ROOT = WORK / "root"
    emulated_budgets = Budgets(args.entry_timeout, args.lm_call_seconds, args.request_seconds)
    if os.geteuid() != 0:
        raise SystemExit("arm64.py needs root (chroot, binfmt); run it as root on a build machine")
    for tool in ("debootstrap", "update-binfmts", "chroot"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is missing: apt-get install debootstrap qemu-user-static binfmt-support")
    ensure_binfmt()
    ensure_userland()
    ensure_proc()
    arch = in_root("uname", "-m", capture=True).strip()
    installed = install_runtime()
    leaked = [p for p in installed if p.split("==")[0].lower() in BUILDER_ONLY]
    key = default_key()
    pub = key.with_suffix(".pub")
    public = bytes.fromhex(pub.read_text().strip())
    model = (args.model or Path(target_model_dir("default"))).resolve()
    examples = make_bundle(REPO / "bundles" / "examples", REPO / "build" / "bundles", name="examples", version="1",
                           key=key, target_model=model)
    figures: dict = {"arch": arch, "installed_packages": installed, "builder_packages_installed": leaked}
    with tempfile.TemporaryDirectory(prefix="arc-arm64-") as tmp:
        results = {"examples": check(examples, model, pub, example_questions(examples, public, args.examples // 2),
                                     Path(tmp) / "examples", emulated_budgets, "examples")}
        gsm = args.gsm_bundle or latest("*/bundles/gsm8k-eval-*.arcb")
        questions = gsm_questions(args.gsm_set or latest("*/sets/gsm_symbolic_dev.jsonl"), args.gsm)
        if gsm is not None and questions:
            gsm_pub = args.gsm_trust or gsm.resolve().parent.parent / "keys" / "arc-signing.pub"
            print(json.dumps({"examples": results["examples"]}), file=sys.stderr, flush=True)  # in case the rest is cut short
            results["gsm8k"] = check(gsm.resolve(), model, (gsm_pub if gsm_pub.exists() else pub).resolve(), questions,
                                     Path(tmp) / "gsm", emulated_budgets, "gsm8k")
    figures["sets"] = results
    for name in ("answers_equal", "answers_total", "paths_equal"):
        figures[name] = sum(r[name] for r in results.values())
    figures["pass_ms_emulated"] = results["examples"]["pass_ms_emulated"]
    figures["rss_mb"] = max(r["rss_mb"] for r in results.values())
    figures["note"] = "emulated timings (qemu-user) are not device timings"
    if args.json:
        print(json.dumps(figures))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"arc-edge on {arch} under qemu-user vs x86, same bundles and model")
    for column in ("set", "answers equal", "paths equal", "model-path ms (emulated)", "template ms (emulated)", "RSS MB"):
        table.add_column(column, justify="right")
    for name, r in results.items():
        table.add_row(name, f"{r['answers_equal']}/{r['answers_total']}", f"{r['paths_equal']}/{r['answers_total']}",
                      str(r["pass_ms_emulated"]), str(r["template_ms_emulated"]), str(r["rss_mb"]))
    Console().print(table)
    Console().print(f"{len(installed)} packages in the device venv; builder packages: {leaked or 'none'}")
    for name, r in results.items():
        for item in r["differences"]:
            Console().print(f"[{name}] differs: {item}")


if __name__ == "__main__":
    main()

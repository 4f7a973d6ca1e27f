"""The edge server measured over gRPC: hit latency per path, throughput by concurrency, cold start, memory.

Builds (or reuses) the example bundle with the SmolLM2-135M int8 target model, starts
`arc-edge serve` as a separate process on 127.0.0.1, and drives it with real gRPC clients.
Last, the bytes a first push and a code-only update move (benchmarks/bundle_update.py).

    .venv/bin/python benchmarks/serve.py [--requests N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import grpc  # noqa: E402
from extraction import PARAPHRASES  # noqa: E402

from builder.bundle_build import sample_values  # noqa: E402
from builder.pipeline import default_key, make_bundle, target_model_dir  # noqa: E402
from edge_runtime.bundles.bundle import read_bundle  # noqa: E402
from edge_runtime.entries.compiler import LoadedCompiledEntry  # noqa: E402
from edge_runtime.entries.metadata import format_value  # noqa: E402
from edge_runtime.errors import ExecutionError, TargetModelError  # noqa: E402
from edge_runtime.options import ModelOptions  # noqa: E402
from edge_runtime.proto import edge_pb2 as pb  # noqa: E402
from edge_runtime.serving.client import EdgeClient  # noqa: E402


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(data_dir: Path, key_pub: Path, bundle: Path | None, model: Path | None, port: int,
                 spin: bool = False, model_runs: int | None = None, rereads: bool = True) -> subprocess.Popen:
    cmd = [str(REPO / ".venv" / "bin" / "arc-edge"), "serve", "--data-dir", str(data_dir), "--trust", str(key_pub),
           "--port", str(port)]
    if spin:
        cmd += ["--spin"]
    if not rereads:
        cmd += ["--no-rereads"]
    if model_runs is not None:
        cmd += ["--model-runs", str(model_runs)]
    if bundle:
        cmd += ["--bundle", str(bundle)]
    if model:
        cmd += ["--model", str(model)]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_for_hit(address: str, question: str, deadline_s: float = 120) -> float:
    start = time.perf_counter()
    with EdgeClient(address, timeout_s=10) as client:
        while time.perf_counter() - start < deadline_s:
            try:
                if client.invoke(question).outcome == pb.HIT:
                    return time.perf_counter() - start
            except grpc.RpcError:
                time.sleep(0.02)
    raise SystemExit("the server did not answer in time")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else float("nan")


def accepted_values(entry, module: LoadedCompiledEntry, rng: random.Random, tries: int = 50) -> dict:
    """Sampled values the entry's own code accepts.

    sample_values draws each parameter within its declared domain independently, so a pair can
    still be impossible together (-40 with "kelvin": below absolute zero, although -40 is a valid
    Celsius reading); the entry rightly refuses it, and such a question used to be counted as an
    EXECUTION_FAILED fast-path question (2 of 60). Entries whose later steps need the target model
    are accepted once the model-free steps pass.
    """
    for _ in range(tries):
        values = sample_values(entry, rng)
        try:
            module.run(values)
        except TargetModelError:
            return values
        except ExecutionError:
            continue
        return values
    raise SystemExit(f"{entry.id}: no sampled values the entry accepts in {tries} tries")


def questions(bundle_path: Path, public: bytes, n: int, seed: int = 3) -> tuple[list[str], list[str]]:
    """Template questions (fast path) and paraphrases (model path) with fresh values."""
    bundle = read_bundle(bundle_path, trusted_keys=[public])
    rng = random.Random(seed)
    fast, para = [], []
    entries = sorted((e for e in bundle.entries.values() if e.id in PARAPHRASES), key=lambda e: e.id)  # not the hog
    modules = {e.id: LoadedCompiledEntry(bundle.modules[e.id], e.id) for e in entries}
    for i in range(n):
        entry = entries[i % len(entries)]
        values = {k: format_value(v) for k, v in accepted_values(entry, modules[entry.id], rng).items()}
        fast.append(entry.template.format(**values))
        para.append(rng.choice(PARAPHRASES[entry.id]).format(**values))
    return fast, para


def latencies(address: str, items: list[str]) -> tuple[dict[str, list[float]], dict[str, int]]:
    """Hit latencies by serving path, and the count of every outcome."""
    out: dict[str, list[float]] = {}
    paths: dict[str, int] = {}
    with EdgeClient(address, timeout_s=60) as client:
        for question in items:
            start = time.perf_counter()
            reply = client.invoke(question)
            ms = (time.perf_counter() - start) * 1000
            key = reply.serving_path if reply.outcome == pb.HIT else "miss:" + pb.MissReason.Name(reply.miss_reason)
            paths[key] = paths.get(key, 0) + 1
            if reply.outcome == pb.HIT:
                out.setdefault(reply.serving_path, []).append(ms)
    return out, paths


def throughput(address: str, mixed: list[str], concurrency: int, seconds: float) -> tuple[float, int, int]:
    done = [0]
    failed = [0]
    lock = threading.Lock()
    stop = time.perf_counter() + seconds

    def worker(offset: int) -> None:
        with EdgeClient(address, timeout_s=60) as client:
            i = 2 * offset  # each client alternates fast-path and model-path questions: the mix stays half/half
            while time.perf_counter() < stop:
                try:
                    client.invoke(mixed[i % len(mixed)])
                    with lock:
                        done[0] += 1
                except grpc.RpcError:
                    with lock:
                        failed[0] += 1
                i += 1

    start = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return done[0] / (time.perf_counter() - start), done[0], failed[0]


REFERENCE_PASS = """
import statistics, sys, time
from edge_runtime.model.lm_engine import LMEngine
engine = LMEngine(sys.argv[1], threads=2)
state = engine.prefix_state(list(range(1000, 1300)))
times = []
for _ in range(12):
    start = time.perf_counter()
    engine.forward(list(range(2000, 2080)), state, keep_state=False)
    times.append((time.perf_counter() - start) * 1000)
print(statistics.median(times[2:]))
"""


HOG_ENTRY = '''from edge_runtime.semantic import Param, entry_point, lm, load, narrate, semantic_function


@semantic_function(
    "Pick one of many options with the model",
    inputs={"the number of options": 2},
    outputs={"the pick": "0 apples"},
)
def pick_among_many(ctx):
    count = load(ctx, "the number of options", int)
    narrate(ctx, "Asking the model to choose among " + str(count) + " options.")
    options = [str(i) + " apples" for i in range(count)]
    return {"the pick": lm(ctx, "Pick the option the text means", "a basket of apples", choices=options)}


ENTRY = entry_point(
    id="pick-among-many",
    description="Pick one of many options with the model",
    template="Pick among {count} options",
    params=[Param(name="count", description="the number of options", type=int, original=2)],
    root="Pick one of many options with the model",
    answer_key="the pick",
)
'''
#: The hostile request: one lm(choices=...) call of 90 options is 90 model passes (seconds
#: without a budget; its 465-token prompt fits the 512-token cap): only the call budget and the scheduler hold it.
HOG_QUESTION = "Pick among 90 options"


def hog_bundle(key: Path, model: Path, out_dir: Path) -> Path:
    """The example bundle plus the hostile entry, so ordinary model-path questions and the hog share one server."""
    import shutil

    sources = out_dir / "hog-sources"
    shutil.copytree(REPO / "bundles" / "examples", sources)
    (sources / "pick_among_many.py").write_text(HOG_ENTRY)
    return make_bundle(sources, out_dir, name="examples-hog", version="1", key=key, target_model=model)


def lm_hog_phase(address: str, para_q: list[str]) -> dict:
    """Model-path hit latencies while one hostile request is always in flight (sent again as soon as it ends)."""
    stop = threading.Event()
    hog_runs: list[tuple[float, str]] = []

    def hog() -> None:
        with EdgeClient(address, timeout_s=60) as client:
            while not stop.is_set():
                start = time.perf_counter()
                reply = client.invoke(HOG_QUESTION, entry_id="pick-among-many")
                outcome = "HIT" if reply.outcome == pb.HIT else "miss:" + pb.MissReason.Name(reply.miss_reason)
                hog_runs.append((time.perf_counter() - start, outcome))

    thread = threading.Thread(target=hog, daemon=True)
    thread.start()
    time.sleep(0.5)
    try:
        by_path, paths = latencies(address, para_q)
    finally:
        stop.set()
        thread.join(60)
    lm_ms = by_path.get("lm-draft", []) + by_path.get("lm", [])
    outcomes: dict[str, int] = {}
    for _, outcome in hog_runs:
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    return {"lm_hit_p50_ms_with_hog": round(statistics.median(lm_ms), 2) if lm_ms else None,
            "hog_requests": len(hog_runs), "hog_outcomes": outcomes,
            "hog_max_s": round(max(t for t, _ in hog_runs), 2) if hog_runs else None,
            "outcomes_paraphrased_with_hog": paths}


def reference_pass_ms(model: Path) -> float:
    """One 80-token pass on a 300-token prefix, in a process of its own: how fast this machine is right now.
    The machine is shared, so latency figures are read against this (docs/benchmarks.md)."""
    out = subprocess.run([sys.executable, "-c", REFERENCE_PASS, str(model)], capture_output=True, text=True,
                         check=True, cwd=REPO, env={**os.environ, "ORT_DISABLE_TELEMETRY": "1"})
    return round(float(out.stdout.strip()), 1)


def update_bytes(model: Path) -> dict:
    """What pushing the example bundle moves over gRPC: first push, and a code-only update (bundle_update.py)."""
    from bundle_update import measure

    from builder.distill import distill_static_embedder
    from builder.pipeline import EMBEDDER_DIR

    with tempfile.TemporaryDirectory(prefix="arc-update-bench-") as tmp:
        measured = measure(model, distill_static_embedder(EMBEDDER_DIR), Path(tmp))
    return {name: measured[name] for name in ("first_push_bytes", "code_only_update_bytes", "full_bundle_bytes")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=60, help="questions per path for the latency figures")
    parser.add_argument("--seconds", type=float, default=8.0, help="duration of each throughput run")
    parser.add_argument("--recipe", default=None, help="target-model recipe (default: the builder's default)")
    parser.add_argument("--spin", action="store_true", help="serve with the model's threads busy-waiting (arc-edge serve --spin)")
    parser.add_argument("--model-runs", type=int, default=None,
                        help="forward passes of the model at once (arc-edge serve --model-runs; default: the server's)")
    parser.add_argument("--rereads", action=argparse.BooleanOptionalAction, default=True,
                        help="serve with the device's rereads (default) or arc-edge serve --no-rereads")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    key = default_key()
    public_path = key.with_suffix(".pub")
    public = bytes.fromhex(public_path.read_text().strip())
    if args.recipe:
        from builder.target_model import build_target_model

        model = build_target_model(recipe=args.recipe, progress=lambda m: print(m, file=sys.stderr))
    else:
        model = target_model_dir("default")
    recipe = json.loads((Path(model) / "manifest.json").read_text())["recipe"]
    figures: dict = {"reference_pass_ms": reference_pass_ms(Path(model))}
    with tempfile.TemporaryDirectory(prefix="arc-serve-bench-") as tmp:
        bundle = hog_bundle(key, Path(model), Path(tmp) / "bundle")
        fast_q, para_q = questions(bundle, public, args.requests)
        data_dir = Path(tmp) / "device"
        port = free_port()
        setup = start_server(data_dir, public_path, bundle, model, port)  # stages, imports the model, activates
        wait_for_hit(f"127.0.0.1:{port}", fast_q[0], deadline_s=300)
        setup.terminate()
        setup.wait(30)
        # Cold start: a fresh process on a device that already holds the bundle and the model.
        port = free_port()
        started = time.perf_counter()
        proc = start_server(data_dir, public_path, None, None, port, spin=args.spin,
                            model_runs=args.model_runs, rereads=args.rereads)
        try:
            wait_for_hit(f"127.0.0.1:{port}", fast_q[0])
            figures["cold_start_s"] = round(time.perf_counter() - started, 3)
            address = f"127.0.0.1:{port}"
            latencies(address, para_q[:12])  # warm every entry's prompt prefix once
            fast_by_path, fast_paths = latencies(address, fast_q)
            para_by_path, lm_paths = latencies(address, para_q)
            fast_ms = fast_by_path.get("template", [])
            lm_only = para_by_path.get("lm-draft", []) + para_by_path.get("lm", [])  # the model read the values
            aligned_ms = para_by_path.get("aligned", [])
            figures.update({
                "fast_hit_p50_ms": round(statistics.median(fast_ms), 2) if fast_ms else None,
                "fast_hit_p99_ms": round(percentile(fast_ms, 0.99), 2) if fast_ms else None,
                "lm_hit_p50_ms": round(statistics.median(lm_only), 2) if lm_only else None,
                "lm_hit_p99_ms": round(percentile(lm_only, 0.99), 2) if lm_only else None,
                "aligned_hit_p50_ms": round(statistics.median(aligned_ms), 2) if aligned_ms else None,
                "outcomes_fast": fast_paths,
                "outcomes_paraphrased": lm_paths,
            })
            mixed = [q for pair in zip(fast_q, para_q) for q in pair]
            figures["throughput_rps"] = {}
            failed = 0
            for concurrency in (1, 4, 16, 32):
                rps, _, bad = throughput(address, mixed, concurrency, args.seconds)
                figures["throughput_rps"][str(concurrency)] = round(rps, 1)
                failed += bad
            figures["failed_requests"] = failed
            hog = lm_hog_phase(address, para_q)
            figures.update(hog)
            base = figures["lm_hit_p50_ms"]
            with_hog = hog["lm_hit_p50_ms_with_hog"]
            figures["lm_hog_p50_ratio"] = round(with_hog / base, 2) if base and with_hog else None
            figures["rss_mb"] = round(rss_mb(proc.pid), 1)
        finally:
            proc.terminate()
            proc.wait(30)
    figures.update(update_bytes(Path(model)))
    figures["machine"] = f"{os.cpu_count()} cores"
    figures["recipe"] = recipe
    figures["spin"] = args.spin
    figures["rereads"] = args.rereads
    figures["model_runs"] = args.model_runs if args.model_runs is not None else ModelOptions.model_runs
    if args.json:
        print(json.dumps(figures))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"arc-edge over gRPC (127.0.0.1), SmolLM2-135M {recipe}, example bundle")
    table.add_column("figure")
    table.add_column("value", justify="right")
    for key_name in ("fast_hit_p50_ms", "fast_hit_p99_ms", "aligned_hit_p50_ms", "lm_hit_p50_ms", "lm_hit_p99_ms",
                     "cold_start_s", "rss_mb", "failed_requests", "reference_pass_ms", "lm_hit_p50_ms_with_hog",
                     "lm_hog_p50_ratio", "hog_requests", "hog_max_s", "hog_outcomes", "first_push_bytes",
                     "code_only_update_bytes", "full_bundle_bytes"):
        table.add_row(key_name, str(figures[key_name]))
    for concurrency, rps in figures["throughput_rps"].items():
        table.add_row(f"throughput @ {concurrency} (mixed)", f"{rps} req/s")
    Console().print(table)
    Console().print(f"fast-path outcomes {figures['outcomes_fast']}; paraphrased {figures['outcomes_paraphrased']}")


if __name__ == "__main__":
    main()

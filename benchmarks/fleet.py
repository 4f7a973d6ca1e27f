"""A fleet on one host: publish through a real OCI registry with TUF, ≥ 20 devices follow it (issue 23).

Debian's docker-registry (CNCF distribution 2.8) on 127.0.0.1 with storage in a temp dir; the builder
publishes v1 (the example bundle without ``school_trip``, whose class the loop adds back), then a
code-only v2 (one entry's narration changed) while every device answers under load. Devices:

- ``--full`` real servers (``create_server`` with ``follow=``: gRPC query and admin listeners, worker
  pool, their own data dir and blob store, the model pulled from the registry like everything else);
- the rest lightweight followers: an ``EdgeRuntime`` (no gRPC listener, no worker pool) and the same
  ``Follower`` each, with their own data dir, TUF state and blob store, answered in process. They share one
  model *directory*: each blob store is seeded with hard links to the artefact's files (so they pull the
  bundle and routing blobs but not the 193 MB model) and they share one onnxruntime session
  (``RuntimeOptions.engine_cache``), which is what lets 20 devices fit on 2 cores.

Then: an old (v1) TUF timestamp is put back under its tag (every device must refuse it and stay on v2);
the registry is stopped (devices keep answering: ``offline_served``); the misses the full devices logged
(they upload rotated miss logs with ``--share-questions``) are ranked by ``arc-build heat``, the top
classes go to the LLM builder (the real anthropic SDK against the loopback Messages stub, answering with
the scripted replies of tests/builder/fixtures/llm_build.json: written for tests, not model output), v3 =
v2 plus the accepted entries is published and ``heat_covered`` counts the top classes v3 serves.

    .venv/bin/python benchmarks/fleet.py [--devices 20] [--interval 2] [--model DIR] [--embedder DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from builder.bundle_build import build_bundle  # noqa: E402
from builder.fleet.heat import embedder_from_bundle, heat_rows, rank, read_misslogs  # noqa: E402
from builder.fleet.local_registry import LocalRegistry  # noqa: E402
from builder.fleet.publish import publish, push_metadata  # noqa: E402
from builder.fleet.tuf_repo import TufRepository  # noqa: E402
from builder.keys import generate_keypair, load_public_key  # noqa: E402
from edge_runtime.bundles.blob_store import list_artefact_files  # noqa: E402
from edge_runtime.fleet import media  # noqa: E402
from edge_runtime.fleet.follower import Follower, FollowOptions  # noqa: E402
from edge_runtime.fleet.misslog_upload import download_misslogs  # noqa: E402
from edge_runtime.fleet.registry import RegistryClient  # noqa: E402
from edge_runtime.options import PoolOptions  # noqa: E402
from edge_runtime.serving.runtime import EdgeRuntime, RuntimeOptions  # noqa: E402

EXAMPLES = REPO / "bundles" / "examples"
FIXTURE = REPO / "tests" / "builder" / "fixtures" / "llm_build.json"
LEFT_OUT = "school_trip.py"  # v1 lacks it; the heat loop builds its class
CHANGED = "charles_law.py"
LOAD = [  # template-path questions (no model pass: the load must not be what limits the switch)
        "If you deposit $2500 at 4% a year compounded monthly, what is the balance after 6 years?",
        "What is the pressure, in kPa, of 3 mol of an ideal gas at 100 degrees celsius held in a 20 litres container?"]
MISSED = {  # asked of the full devices before the heat: question -> times (a hot class first)
    "A school takes 230 students and 12 teachers on a trip. Each bus has 50 seats and costs $350 to hire. How much does the "
    "bus hire cost in dollars?": 6,
    "A hiking club takes 95 members on an outing. Each bus has 40 seats. How many seats are left empty?": 4,
    "A rectangular garden is 12 metres long and 5 metres wide. Fencing costs $8 per metre. How much does it cost to fence "
    "the garden in dollars?": 3,
    "Who painted the ceiling of the Sistine Chapel?": 1,
}


class Device:
    """One follower with its runtime; ``answer`` goes over gRPC for a full device, in process otherwise."""

    def __init__(self, name: str, runtime: EdgeRuntime, follower: Follower, server: Any = None) -> None:
        self.name, self.runtime, self.follower, self.server = name, runtime, follower, server
        self.client = None
        if server is not None:
            from edge_runtime.serving.client import EdgeClient

            self.client = EdgeClient(f"127.0.0.1:{server.port}", timeout_s=30)

    def answer(self, question: str) -> tuple[bool, str]:
        if self.client is not None:
            from edge_runtime.serving.client import decode

            data = decode(self.client.invoke(question))
            return data["outcome"] == "HIT", data["bundle"]
        answerer, answer = self.runtime.answer(question)
        return answer.hit, answerer.bundle_id

    def stop(self) -> None:
        if self.client is not None:
            self.client.close()
        if self.server is not None:
            self.server.stop(0)
        else:
            self.follower.stop()
            self.runtime.close()


def sources(work: Path) -> dict[str, Path]:
    v1 = work / "src-v1"
    shutil.copytree(EXAMPLES, v1, ignore=shutil.ignore_patterns("__pycache__", LEFT_OUT))
    v2 = work / "src-v2"
    shutil.copytree(v1, v2)
    text = (v2 / CHANGED).read_text(encoding="utf-8")
    (v2 / CHANGED).write_text(text.replace('narrate(ctx, f"', 'narrate(ctx, f"Charles\'s law: ', 1), encoding="utf-8")
    return {"1": v1, "2": v2}


def wait_until(predicate: Any, timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def start_devices(args: argparse.Namespace, work: Path, ref: str, root_json: Path, public: bytes,
                  model: Path | None) -> list[Device]:
    devices = []
    shared_engines: dict[str, Any] = {}
    files = list_artefact_files(model) if model else []
    for i in range(args.devices):
        data = work / "devices" / f"d{i:02d}"
        full = i < args.full
        options = RuntimeOptions(data_dir=data, trusted_keys=[public], use_worker_pool=full,
                                 pool=PoolOptions(workers=1), engine_cache=None if full else shared_engines)
        follow = FollowOptions(ref, root_json, interval_s=args.interval, jitter=0.2, timeout_s=30,
                               upload_misses=full, share_questions=full, device_id=f"d{i:02d}")
        if full:
            from edge_runtime.serving.server import create_server

            server = create_server(options, address="127.0.0.1:0", follow=follow)
            devices.append(Device(f"d{i:02d}", server.runtime, server.follower, server))
            continue
        runtime = EdgeRuntime(options)
        for item in files:  # the shared model directory: hard links, not copies (see the module docstring)
            target = runtime.blobs.path(item["sha256"])
            target.parent.mkdir(exist_ok=True)
            if not target.exists():
                os.link(model / item["path"], target)
        devices.append(Device(f"d{i:02d}", runtime, Follower(runtime, follow).start()))
    return devices


def load(devices: list[Device], stop: threading.Event, counts: dict[str, int], lock: threading.Lock) -> list[threading.Thread]:
    def caller(group: list[Device], k: int) -> None:
        n = k
        while not stop.is_set():
            device = group[n % len(group)]
            n += 1
            try:
                hit, _ = device.answer(LOAD[n % len(LOAD)])
                with lock:
                    counts["ok" if hit else "failed"] += 1
            except Exception:  # noqa: BLE001 - what the benchmark counts
                with lock:
                    counts["failed"] += 1

    full = [d for d in devices if d.server is not None]
    light = [d for d in devices if d.server is None]
    groups = [[d] for d in full for _ in range(2)] + ([light] * 2 if light else [])
    threads = [threading.Thread(target=caller, args=(g, k), daemon=True) for k, g in enumerate(groups)]
    for t in threads:
        t.start()
    return threads


def measure(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    private, public_path = generate_keypair(work / "keys")
    public = load_public_key(public_path)
    src = sources(work)

    def build(version: str, source_dir: Path) -> Path:
        return build_bundle(source_dir, work / "bundles", name="examples", version=version, private_key=private,
                            target_model_dir=args.model, embedder_dir=args.embedder, progress=lambda _: None).path

    bundles = {v: build(v, s) for v, s in src.items()}
    registry = LocalRegistry(work / "registry").start()
    ref = f"{registry.address}/arc/examples"
    tuf = TufRepository.init(work / "tuf")
    figures: dict[str, Any] = {"devices": args.devices, "poll_interval_s": args.interval,
                               "model_bytes": sum(f["size"] for f in list_artefact_files(args.model)) if args.model else 0}
    devices: list[Device] = []
    try:
        first = publish(bundles["1"], ref, tuf, model_dir=args.model)
        figures["publish_s"] = round(first.seconds, 3)
        figures["bytes_uploaded_v1"] = first.bytes_uploaded
        old_timestamp, _ = RegistryClient(ref).get_manifest(media.tuf_tag("timestamp.json"))
        devices = start_devices(args, work, ref, tuf.root_path, public, args.model)
        if not wait_until(lambda: all(d.runtime.active_id == "examples-1" for d in devices), 600):
            raise RuntimeError(f"not every device reached v1: {[d.follower.health() for d in devices][:3]}")
        for d in devices:  # the first model pass of each engine is not part of the switch
            d.answer(LOAD[0])

        counts, lock, stop = {"ok": 0, "failed": 0}, threading.Lock(), threading.Event()
        threads = load(devices, stop, counts, lock)
        time.sleep(1.0)
        before = {d.name: d.follower.status["bytes_pulled"] for d in devices}
        switched: dict[str, float] = {}
        t0 = time.monotonic()
        second = publish(bundles["2"], ref, tuf, model_dir=args.model)
        published = time.monotonic()
        while len(switched) < len(devices) and time.monotonic() - published < 10 * args.interval:
            for d in devices:
                if d.name not in switched and d.runtime.active_id == "examples-2":
                    switched[d.name] = time.monotonic() - published
            time.sleep(0.005)
        time.sleep(0.5)
        stop.set()
        for t in threads:
            t.join(60)
        switch = sorted(switched.values())
        figures.update({
            "bytes_uploaded_v2": second.bytes_uploaded,
            "bytes_pulled_per_device_v2": max(d.follower.status["bytes_pulled"] - before[d.name] for d in devices),
            "switch_s_p50": round(statistics.median(switch), 3) if switch else None,
            "switch_s_max": round(max(switch), 3) if len(switch) == len(devices) else None,
            "failed_requests": counts["failed"],
        })
        extra = {"publish_v2_s": round(published - t0, 3), "requests_during_switch": counts["ok"] + counts["failed"],
                 "devices_switched": len(switched),
                 "bytes_pulled_per_device_v2_mean": round(statistics.mean(
                     d.follower.status["bytes_pulled"] - before[d.name] for d in devices))}

        # ---- replay the v1 timestamp: every device must refuse it and stay on v2 -------------------------
        client = RegistryClient(ref)
        client.put_manifest(old_timestamp, media.tuf_tag("timestamp.json"))
        refused = wait_until(lambda: all(d.follower.status["error_reason"] == "metadata_replayed" for d in devices),
                             4 * args.interval + 5)
        figures["rollback_refused"] = bool(refused and all(d.runtime.active_id == "examples-2" for d in devices))
        push_metadata(client, tuf)
        wait_until(lambda: all(d.follower.status["error_reason"] == "" for d in devices), 4 * args.interval + 5)

        # ---- misses for the heat (full devices log and upload them) --------------------------------------
        full = [d for d in devices if d.server is not None]
        asked = sum(MISSED.values())
        for d in full:
            d.runtime.miss_log.max_bytes, d.runtime.miss_log.keep = 1, asked + 2  # a file per miss, all kept
            for question, times in MISSED.items():
                for _ in range(times):
                    d.answer(question)
            d.answer("Which river flows through Vienna?")  # rotates the last one out, so it is uploaded too
        uploaded = wait_until(lambda: all(len(json.loads((d.follower.state_dir / "misslog-uploaded.json").read_text()))
                                          >= asked for d in full if (d.follower.state_dir / "misslog-uploaded.json").exists())
                              and sum(t.startswith("misslog.") for t in client.tags()) >= asked * len(full),
                              3 * args.interval + 20)
        extra["misslog_uploads"] = sum(t.startswith("misslog.") for t in client.tags())
        if not uploaded:
            print(f"warning: only {extra['misslog_uploads']} miss-log uploads", file=sys.stderr)

        # ---- the registry goes down: devices keep answering ---------------------------------------------
        registry.stop()
        wait_until(lambda: all(d.follower.status["error_reason"] == "registry_unreachable" for d in devices),
                   3 * args.interval + 10)
        served, end = 0, time.monotonic() + 2 * args.interval
        while time.monotonic() < end:
            for d in devices:
                hit, bundle = d.answer(LOAD[0])
                served += int(hit and bundle == "examples-2")
        figures["offline_served"] = served
        extra["offline_devices_reporting"] = sum(d.follower.status["error_reason"] == "registry_unreachable"
                                                 for d in devices)
        registry.start()

        # ---- heat -> LLM builder (loopback stub) -> v3 -> covered? ---------------------------------------
        logs = download_misslogs(client, work / "misslogs")
        heat = rank(read_misslogs(logs), embedder_from_bundle(bundles["1"]))
        figures["heat_classes"] = [{"count": c["count"], "example": (c["examples"] or [""])[0][:80]} for c in heat[:5]]
        top = heat_rows(heat, 3)
        figures["heat_covered"], extra["heat_built"] = heat_loop(top, work, src["2"], build, tuf, ref, args, devices, full)
        figures["extra"] = extra
    finally:
        for d in devices:
            d.stop()
        registry.stop()
    return figures


def heat_loop(top: list[dict], work: Path, base: Path, build: Any, tuf: TufRepository, ref: str,
              args: argparse.Namespace, devices: list[Device], full: list[Device]) -> tuple[int, dict]:
    from builder.llm.build import BuildOptions, build_entries
    from builder.llm.client import ClientConfig, LLMClient
    from builder.llm.stub_server import StubMessagesServer

    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    for item in data["script"]:
        answer = item.get("input")
        if isinstance(answer, dict) and "source_lines" in answer:
            answer["source"] = "\n".join(answer.pop("source_lines"))
    with StubMessagesServer(data["script"]) as stub:
        client = LLMClient(ClientConfig(api_key="sk-loopback", base_url=stub.base_url, base_delay=0.001,
                                        max_delay=0.01, timeout=60))
        summary = build_entries(top, work / "llm-registry", client, options=BuildOptions(round_trips=4, max_tries=3),
                                progress=False)
        client.close()
    v3_src = work / "src-v3"
    shutil.copytree(base, v3_src)
    for module in (work / "llm-registry").glob("*.py"):
        shutil.copy(module, v3_src / module.name)
    publish(build("3", v3_src), ref, tuf, model_dir=args.model)
    wait_until(lambda: all(d.runtime.active_id == "examples-3" for d in devices), 10 * args.interval)
    covered = sum(all(d.answer(row["question"])[0] for d in full) for row in top)
    return covered, {"classes_sent": len(top), "accepted": summary["accepted"],
                     "rejected_by_reason": summary["rejected_by_reason"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=20)
    parser.add_argument("--full", type=int, default=2, help="how many of them are real gRPC servers")
    parser.add_argument("--interval", type=float, default=2.0, help="poll interval (s), jittered by 20%%")
    parser.add_argument("--model", type=Path, default=None, help="target-model artefact (default: build/target-models/<default>)")
    parser.add_argument("--no-model", action="store_true")
    parser.add_argument("--embedder", type=Path, default=None, help="distilled static embedder (default: build/static_embedder)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.model is None and not args.no_model:
        os.chdir(REPO)
        from builder.pipeline import target_model_dir

        args.model = target_model_dir("default")
    if args.embedder is None:
        os.chdir(REPO)
        from builder.distill import distill_static_embedder
        from builder.pipeline import EMBEDDER_DIR

        args.embedder = distill_static_embedder(EMBEDDER_DIR)
    args.model = args.model.resolve() if args.model else None
    with tempfile.TemporaryDirectory(prefix="arc-fleet-") as tmp:
        figures = measure(args, Path(tmp))
    extra = figures.pop("extra", {})
    if args.json:  # exactly the keys; the rest (requests during the switch, mean bytes, ...) on stderr
        print(json.dumps(figures))
        print(json.dumps(extra), file=sys.stderr)
        return
    figures.update(extra)
    for key, value in figures.items():
        print(f"{key:<28} {value}")


if __name__ == "__main__":
    main()

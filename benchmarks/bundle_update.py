"""Bytes a bundle update moves over gRPC to a device that already holds the previous version.

Builds the example bundle as `make demo` does (the distilled routing table, the int8 target
model) as v1, then v2 = v1 with one entry removed and v3 = v2 with one entry's code changed;
serves an in-process edge server and pushes v1, v2, v3 through its admin socket as
`arc-edge push` does, counting every protobuf message byte the client sends and receives.
After each update the device must serve the new version. A code-only update moves only the
bundle file: the routing table, the tokenizer and the model are content-addressed blobs the
device already holds (docs/bundle-format.md).

    .venv/bin/python benchmarks/bundle_update.py [--no-model] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from builder.bundle_build import build_bundle  # noqa: E402
from builder.keys import generate_keypair, load_public_key  # noqa: E402
from edge_runtime.serving.client import ByteCounter, EdgeClient, PushResult  # noqa: E402
from edge_runtime.serving.runtime import RuntimeOptions  # noqa: E402
from edge_runtime.serving.server import create_server  # noqa: E402

EXAMPLES = REPO / "bundles" / "examples"
REMOVED = "school_trip.py"  # v2 drops this entry
CHANGED = "charles_law.py"  # v3 changes this entry's narration (its code)
QUESTION = "What will $2000 grow to in 5 years at 4% per year, compounded quarterly?"


def variant_sources(out: Path) -> dict[str, Path]:
    """v1: the examples; v2: one entry removed; v3: v2 with one entry's narration (its code) changed."""
    v1 = EXAMPLES
    v2 = out / "v2"
    shutil.copytree(EXAMPLES, v2, ignore=shutil.ignore_patterns("__pycache__"))
    (v2 / REMOVED).unlink()
    v3 = out / "v3"
    shutil.copytree(v2, v3)
    source = (v3 / CHANGED).read_text(encoding="utf-8")
    changed = source.replace('narrate(ctx, f"', 'narrate(ctx, f"Charles\'s law: ', 1)
    assert changed != source, f"{CHANGED}: no narration to change"
    (v3 / CHANGED).write_text(changed, encoding="utf-8")
    return {"1": v1, "2": v2, "3": v3}


def counted_push(client: EdgeClient, counter: ByteCounter, bundle: Path, model: Path | None) -> tuple[int, PushResult]:
    before = counter.total
    result = client.push(bundle, model_dir=model)
    assert not result.still_missing, f"{bundle.name}: the device still lacks {result.still_missing}"
    return counter.total - before, result


def measure(model: Path | None, embedder_dir: Path, work: Path) -> dict[str, Any]:
    """Build v1..v3, push them in turn to a fresh device and return the byte counts (and what was served)."""
    private, public = generate_keypair(work / "keys")
    bundles = {
        version: build_bundle(sources, work / "bundles", name="examples", version=version, private_key=private,
                              target_model_dir=model, embedder_dir=embedder_dir, progress=lambda _: None).path
        for version, sources in variant_sources(work).items()
    }
    options = RuntimeOptions(data_dir=work / "device", trusted_keys=[load_public_key(public)], use_worker_pool=False)
    server = create_server(options, address="127.0.0.1:0")
    figures: dict[str, Any] = {"model": str(model) if model else None}
    try:
        with EdgeClient(f"127.0.0.1:{server.port}", admin_socket=server.admin_socket, timeout_s=120) as client:
            counter = client.count_admin_traffic()
            moved = {}
            for version, path in bundles.items():
                moved[version], pushed = counted_push(client, counter, path, model)
                client.activate(pushed.staged.bundle_id)
                served = client.invoke(QUESTION).bundle_version
                assert served == version, f"the device serves {served} after pushing v{version}"
                entries = len(client.list_entries().entries)
                figures[f"v{version}"] = {"bundle_bytes": path.stat().st_size, "moved_bytes": moved[version],
                                          "blobs_sent": len(pushed.blobs_sent) + len(pushed.model_blobs_sent),
                                          "entries": entries}
            device = work / "device" / "bundles"
            figures["staged_bundle_bytes"] = sum(p.stat().st_size for p in device.glob("*.arcb"))
    finally:
        server.stop()
    blob_dir = work / "bundles" / "blobs"
    figures.update({
        "first_push_bytes": moved["1"],
        "code_only_update_bytes": max(moved["2"], moved["3"]),
        "entry_removed_update_bytes": moved["2"],
        "code_changed_update_bytes": moved["3"],
        "full_bundle_bytes": bundles["1"].stat().st_size + sum(p.stat().st_size for p in blob_dir.iterdir()),
        "bundle_file_bytes": bundles["1"].stat().st_size,
        "routing_blob_bytes": sum(p.stat().st_size for p in blob_dir.iterdir()),
    })
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-model", action="store_true", help="bundles without a target model (template path only)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = parser.parse_args()
    os.chdir(REPO)  # the builder caches the model and the routing table under build/
    from builder.distill import distill_static_embedder
    from builder.pipeline import EMBEDDER_DIR, target_model_dir

    model = None if args.no_model else target_model_dir("default")
    embedder_dir = distill_static_embedder(EMBEDDER_DIR)
    with tempfile.TemporaryDirectory(prefix="arc-bundle-update-") as tmp:
        figures = measure(model, embedder_dir, Path(tmp))
    if args.json:
        print(json.dumps(figures))
        return
    print(f"{'push to a device':<52} {'bytes over gRPC':>16}")
    rows = [
        ("v1, first push (model, routing blobs, bundle)", figures["first_push_bytes"]),
        (f"v2 = v1 without {REMOVED[:-3]} (device holds v1)", figures["entry_removed_update_bytes"]),
        (f"v3 = v2 with {CHANGED[:-3]}'s code changed", figures["code_changed_update_bytes"]),
    ]
    for label, value in rows:
        print(f"{label:<52} {value:>16,}")
    print(f"\nfull bundle v1 (file {figures['bundle_file_bytes']:,} + routing blobs {figures['routing_blob_bytes']:,}): "
          f"{figures['full_bundle_bytes']:,} bytes; three staged bundles on the device: {figures['staged_bundle_bytes']:,} bytes")
    print(f"code_only_update_bytes = {figures['code_only_update_bytes']:,}")


if __name__ == "__main__":
    main()

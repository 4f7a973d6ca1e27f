"""``arc-build tuf init|refresh``, ``arc-build publish`` and ``arc-build heat`` (argument parsing in builder/cli.py)."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from builder.fleet.tuf_repo import TufRepository, default_tuf_dir


def _days(value: float | None) -> dict[str, float] | None:
    return None if value is None else {"timestamp": value}


def run_fleet_command(args: argparse.Namespace) -> int:
    if args.command == "tuf":
        directory = args.dir or default_tuf_dir()
        if args.tuf_command == "init":
            repo = TufRepository.init(directory, expiry_days=_days(args.timestamp_expiry))
            print(f"TUF repository: {repo.root_dir} (keys/ 0600: keep root.pem offline)\n"
                  f"give devices: {repo.root_path} (arc-edge serve --follow REGISTRY/REPO --tuf-root root.json)")
            return 0
        from builder.fleet.publish import push_metadata
        from edge_runtime.fleet.registry import RegistryClient

        repo = TufRepository(directory)
        version = repo.refresh(args.timestamp_expiry)
        push_metadata(RegistryClient(args.to), repo)
        print(f"timestamp version {version} signed and pushed to {args.to}")
        return 0
    if args.command == "publish":
        from builder.fleet.publish import publish

        result = publish(args.bundle, args.to, TufRepository(args.tuf_dir or default_tuf_dir()), blob_dir=args.blobs,
                         model_dir=args.model, expiry_days=_days(args.timestamp_expiry))
        summary = {"bundle": result.bundle_id, "manifest_digest": result.manifest_digest,
                   "targets_version": result.targets_version, "bytes_uploaded": result.bytes_uploaded,
                   "layers_uploaded": result.layers_uploaded, "layers_present": len(result.layers_present),
                   "seconds": round(result.seconds, 3), **result.sizes}
        if args.json:
            print(json.dumps(summary))
        else:
            print(f"published {result.bundle_id} to {args.to}: manifest {result.manifest_digest[:19]}, "
                  f"{len(result.layers_uploaded)} layer(s) uploaded ({result.bytes_uploaded:,} bytes), "
                  f"{len(result.layers_present)} already there; TUF targets version {result.targets_version}")
        return 0
    return _heat(args)


def _heat(args: argparse.Namespace) -> int:
    from builder.fleet.heat import embedder_from_bundle, rank, read_misslogs

    paths = list(args.misslogs)
    with tempfile.TemporaryDirectory(prefix="arc-heat-") as tmp:
        if args.from_registry:
            from edge_runtime.fleet.misslog_upload import download_misslogs
            from edge_runtime.fleet.registry import RegistryClient

            paths += download_misslogs(RegistryClient(args.from_registry), Path(tmp))
        if not paths:
            print("arc-build: heat needs miss-log files or --from REGISTRY/REPO", file=sys.stderr)
            return 2
        records = read_misslogs(paths)
    classes = rank(records, embedder_from_bundle(args.bundle, args.blobs), similarity=args.similarity)[: args.top]
    if args.json:
        args.json.write_text(json.dumps({"misses": len(records), "classes": classes}, indent=1, ensure_ascii=False))
    print(f"{len(records)} misses in {len(paths)} file(s); top {len(classes)} classes:")
    for cls in classes:
        example = cls["examples"][0] if cls["examples"] else f"(no text shared; entry {cls['nearest_entry'] or '-'})"
        reasons = ", ".join(f"{k} {v}" for k, v in cls["reasons"].items())
        print(f"{cls['rank']:>3}. {cls['count']:>5} misses ({cls['distinct']} distinct; {reasons}): {example[:90]}")
    return 0

"""``arc-edge``: the device-side command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="arc-edge", description="Run compiled ARC cache entries on this device.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run-compiled", help="run one compiled entry module on parameter values")
    run.add_argument("module", type=Path, help="a compiled entry module (.py) written by arc-build")
    run.add_argument("--params", required=True, help='JSON object of parameter values, e.g. \'{"moles": 2}\'')
    args = parser.parse_args(argv)

    from edge_runtime.compiler import LoadedCompiledEntry
    from edge_runtime.errors import ArcError
    from edge_runtime.metadata import entry_from_dict

    try:
        module = LoadedCompiledEntry(args.module.read_text(encoding="utf-8"), args.module.stem)
        raw = json.loads(args.params)
        values = entry_from_dict(module.meta).validate(raw)
        execution = module.run(values)
    except (ArcError, ValueError, OSError) as exc:
        print(f"arc-edge: {exc}", file=sys.stderr)
        return 2
    for i, step in enumerate(execution.narration, 1):
        print(f"{i}. {step.text}")
    print(json.dumps(execution.result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

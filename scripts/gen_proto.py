"""Regenerate the Python gRPC stubs in edge_runtime/proto from proto/ (needs grpcio-tools).

The stubs are committed so that a device installs no code generator; a test checks they
are current.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROTO = REPO / "proto" / "arc" / "edge" / "v1" / "edge.proto"
OUT = REPO / "edge_runtime" / "proto"


def generate(out: Path) -> None:
    from grpc_tools import protoc

    out.mkdir(parents=True, exist_ok=True)
    code = protoc.main(
        ["grpc_tools.protoc", f"-I{REPO / 'proto'}", f"--python_out={out}", f"--grpc_python_out={out}", str(PROTO)]
    )
    if code != 0:
        raise SystemExit(f"protoc failed with {code}")
    # Flatten arc/edge/v1/*_pb2*.py into edge_runtime/proto and make the import package-relative.
    for path in (out / "arc" / "edge" / "v1").glob("*.py"):
        text = path.read_text()
        text = re.sub(r"^from arc\.edge\.v1 import edge_pb2", "from edge_runtime.proto import edge_pb2", text, flags=re.M)
        (out / path.name).write_text(text)
    import shutil

    shutil.rmtree(out / "arc")


def main() -> int:
    if "--check" in sys.argv:
        with tempfile.TemporaryDirectory() as tmp:
            generate(Path(tmp))
            stale = [p.name for p in Path(tmp).glob("*.py") if p.read_text() != (OUT / p.name).read_text()]
        if stale:
            print(f"stale generated stubs: {stale}; run python scripts/gen_proto.py", file=sys.stderr)
            return 1
        return 0
    generate(OUT)
    (OUT / "__init__.py").write_text('"""Generated gRPC stubs for proto/arc/edge/v1/edge.proto (scripts/gen_proto.py)."""\n')
    return 0


if __name__ == "__main__":
    sys.exit(main())

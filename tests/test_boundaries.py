"""The architectural boundary: the edge runtime never needs the builder, torch or transformers."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EDGE = REPO / "edge_runtime"
HEAVY = ("builder", "torch", "transformers")

CHILD = r'''
import importlib, json, pkgutil, sys
from pathlib import Path

import edge_runtime

imported = []
for info in pkgutil.walk_packages(edge_runtime.__path__, "edge_runtime."):
    importlib.import_module(info.name)
    imported.append(info.name)

from edge_runtime.entries.compiler import LoadedCompiledEntry, compile_entry
from edge_runtime.route.embedder import OnnxSentenceEmbedder
from edge_runtime.entries.registry import Registry

examples = Path("bundles") / "examples"
registry = Registry(OnnxSentenceEmbedder())
registry.add_file(examples / "temperature_units.py")
registry.add_file(examples / "ideal_gas.py")
values = {"moles": 2.0, "temperature": 25.0, "temperature_unit": "celsius", "volume": 10.0,
          "volume_unit": "litres"}
dynamic = registry.run("ideal-gas-pressure", values).result
compiled = LoadedCompiledEntry(compile_entry(registry, "ideal-gas-pressure").source).run(values).result
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("builder", "torch", "transformers"))
print(json.dumps({"imported": imported, "dynamic": dynamic, "compiled": compiled, "heavy": heavy}))
'''


def test_edge_runtime_runs_without_builder_torch_or_transformers():
    proc = subprocess.run(
        [sys.executable, "-c", CHILD], cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    expected_modules = {
        "edge_runtime." + ".".join(p.relative_to(EDGE).with_suffix("").parts)
        for p in EDGE.rglob("*.py") if p.stem != "__init__"
    }
    assert "edge_runtime.entries.compiler" in expected_modules  # the stage packages are walked too
    assert expected_modules <= set(report["imported"])
    assert report["dynamic"] == report["compiled"] == {"pressure in kilopascals": 495.791}
    assert report["heavy"] == []


def _heavy_imports(path: Path, root: Path = REPO) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] if node.level == 0 else []
        else:
            continue
        found += [f"{path.relative_to(root)}:{node.lineno} {name}" for name in names if name.split(".")[0] in HEAVY]
    return found


def test_no_edge_runtime_file_imports_builder_torch_or_transformers():
    files = sorted(EDGE.rglob("*.py"))
    assert EDGE / "entries" / "compiler.py" in files  # the walk really covers the package
    offenders = [hit for path in files for hit in _heavy_imports(path)]
    assert offenders == []


def test_heavy_import_detector_finds_them(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import torch.nn\nfrom transformers import AutoModel\nfrom builder.cli import main\nimport numpy\n"
    )
    assert _heavy_imports(sample, tmp_path) == [
        "sample.py:1 torch.nn", "sample.py:2 transformers", "sample.py:3 builder.cli",
    ]

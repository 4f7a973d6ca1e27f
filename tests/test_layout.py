"""The device runtime's layout by stage: few modules at the top, one package per stage, and the stages
that read a question (route, read, execute) never reach into the server that hosts them.

Why a real import graph: a grep for ``serving`` would miss ``from edge_runtime import serving`` or a
module that reaches the server through another one; the graph below follows every import the source
states, at any depth in a module (function-level imports included), transitively.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EDGE = REPO / "edge_runtime"
MAX_TOP_MODULES = 12
#: Issue 20: no module of the runtime (the generated gRPC stubs aside) grows past this many lines.
MAX_MODULE_LINES = 600
STAGES = ("route", "read", "execute", "answer", "entries", "bundles", "model", "serving")
#: The stages a question passes through before its answer: they must not depend on the server.
UNSERVED = ("route", "read", "execute")


def module_name(path: Path, root: Path) -> str:
    """``edge_runtime/read/guard.py`` → ``edge_runtime.read.guard`` (a package is named by its folder)."""
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(node: ast.AST, here: str, is_package: bool) -> list[str]:
    """The modules an import statement names, absolute; ``from a import b`` names ``a`` and ``a.b``
    (``b`` may be a submodule)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        base = here.split(".") if is_package else here.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        module = ".".join([*base, node.module] if node.module else base)
    else:
        module = node.module or ""
    return [module, *(f"{module}.{alias.name}" for alias in node.names)]


def import_graph(root: Path) -> dict[str, set[str]]:
    """Each module of the package at ``root`` → the modules of that package it imports directly."""
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        named = {m for node in ast.walk(tree) for m in _imported(node, name, path.stem == "__init__")}
        graph[name] = {m for m in named if m in files and m != name}
    return graph


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module ``start`` imports, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def serving_imports(root: Path, stages: tuple[str, ...] = UNSERVED) -> list[str]:
    """``module -> serving module`` for every module of ``stages`` that reaches ``<root>.serving``."""
    graph = import_graph(root)
    serving = f"{root.name}.serving"
    found = []
    for name in sorted(graph):
        if name.split(".")[1:2] and name.split(".")[1] in stages:
            found += [f"{name} -> {m}" for m in sorted(reachable(graph, name))
                      if m == serving or m.startswith(serving + ".")]
    return found


def test_at_most_twelve_modules_directly_in_edge_runtime():
    top = sorted(p.name for p in EDGE.glob("*.py"))
    assert "semantic.py" in top  # signed bundles import edge_runtime.semantic: it stays where it is
    assert len(top) <= MAX_TOP_MODULES, top


def test_no_runtime_module_is_over_six_hundred_lines():
    modules = [p for p in EDGE.rglob("*.py") if "proto" not in p.relative_to(EDGE).parts]
    assert len(modules) > 50  # the walk sees the packages, not an empty folder
    too_long = {str(p.relative_to(REPO)): n for p in modules
                if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert too_long == {}


def test_at_least_five_stage_packages():
    packages = [s for s in STAGES if (EDGE / s / "__init__.py").is_file()]
    assert packages == list(STAGES)
    assert len(packages) >= 5
    assert all(any((EDGE / s).glob("[!_]*.py")) for s in packages)  # each holds modules, not only a name


def test_route_read_execute_never_import_serving():
    graph = import_graph(EDGE)
    assert "edge_runtime.serving.runtime" in reachable(graph, "edge_runtime.serving.server")  # the graph is real
    assert serving_imports(EDGE) == []


def test_serving_import_detector_finds_them(tmp_path):
    pkg = tmp_path / "edge_runtime"
    for folder in ("route", "read", "serving"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "serving" / "server.py").write_text("X = 1\n")
    (pkg / "read" / "helper.py").write_text("def f():\n    from ..serving import server\n")
    (pkg / "route" / "router.py").write_text("from edge_runtime.read import helper\n")
    (pkg / "route" / "clean.py").write_text("import json\n")
    assert serving_imports(pkg) == [
        "edge_runtime.read.helper -> edge_runtime.serving",
        "edge_runtime.read.helper -> edge_runtime.serving.server",
        "edge_runtime.route.router -> edge_runtime.serving",
        "edge_runtime.route.router -> edge_runtime.serving.server",
    ]

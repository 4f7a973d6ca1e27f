"""No import circle in builder/: a module never needs, directly or through others, a module that needs it.

The graph is read from the source (ast), not from ``sys.modules``: every ``import`` statement counts,
also one inside a function — a lazy import hides a circle from start-up, not from a reader, and the
circle is back the day someone hoists it. ``from a.b import c`` is an edge to ``a.b.c`` when that is
a module, else to ``a.b``. A package's own ``__init__`` is not an implicit edge of its submodules
(every submodule would otherwise "import" its package's re-exports).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def module_names(package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``package`` (``__init__`` as the package)."""
    out = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``name`` (at ``path``) imports anywhere in its source."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # "builder.eval.sets.write_sets" -> "builder.eval.sets"
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def import_graph(package: str) -> dict[str, set[str]]:
    modules = module_names(package)
    known = set(modules)
    return {name: imports_of(name, path, known) for name, path in modules.items()}


def test_the_checker_finds_a_circle_through_a_lazy_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_reads_function_level_and_from_imports():
    assert "builder.eval.sets" in import_graph("builder")["builder.eval.gsm_bundle"]
    assert "builder.pot_import.program" in import_graph("builder")["builder.independent_check"]


def test_builder_has_no_import_circle():
    assert cycles(import_graph("builder")) == []

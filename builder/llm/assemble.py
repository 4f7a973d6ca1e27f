"""Turn builder-written function sources ("chunks") and an entry point into one entry module.

A chunk is what the builder submits for one function: imports, literal constants and one
decorated function. Its imports are hoisted and de-duplicated, its own imports of the runtime
primitives are replaced by one computed import line, and the entry point is generated from the
phase-3 parameters, so the module has the same shape as the hand-written ones in
``bundles/examples``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from builder.param_source import param_source
from edge_runtime.entries.metadata import EntryPoint
from edge_runtime.entries.validator import SEMANTIC_NAMES

_EDGE = ("edge_runtime",)


def statement_text(source: str, node: ast.stmt) -> str:
    """The exact source lines of a top-level statement, decorators included."""
    lines = source.splitlines()
    start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return "\n".join(lines[start - 1 : node.end_lineno])


def split_chunk(source: str) -> tuple[list[str], list[str]]:
    """(hoistable import lines, other top-level statements as text); the source must parse."""
    tree = ast.parse(source)
    imports: list[str] = []
    body: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
            if (module or "").split(".")[0] in _EDGE or module == "__future__":
                continue  # the primitives are imported once, computed below
            imports.append(ast.unparse(node))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # a chunk docstring: the module has its own
        else:
            body.append(statement_text(source, node))
    return imports, body


def entry_code(entry: EntryPoint) -> str:
    """``NAME = entry_point(...)`` for ``entry``, one field per line."""
    variable = re.sub(r"\W", "_", entry.id).upper()
    params = "".join(f"        {param_source(p)},\n" for p in entry.params)
    return (
        f"{variable} = entry_point(\n"
        f"    id={entry.id!r},\n"
        f"    description={entry.description!r},\n"
        f"    template={entry.template!r},\n"
        f"    question={entry.question!r},\n"
        f"    params=[\n{params}    ],\n"
        f"    root={entry.root!r},\n"
        f"    answer_key={entry.answer_key!r},\n"
        ")"
    )


def assemble_module(chunks: Sequence[str], *, docstring: str, entry: EntryPoint | None = None) -> str:
    """One module: docstring, imports, the chunks' constants and functions, then the entry point."""
    imports: list[str] = []
    body: list[str] = []
    for chunk in chunks:
        chunk_imports, chunk_body = split_chunk(chunk)
        imports += [i for i in chunk_imports if i not in imports]
        body += chunk_body
    tail = [entry_code(entry)] if entry is not None else []
    used = {
        node.id for text in [*body, *tail] for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Name)
    } & (SEMANTIC_NAMES | {"Param", "entry_point"})
    head = [*imports]
    if used:
        head.append(f"from edge_runtime.semantic import {', '.join(sorted(used))}")
    safe_doc = docstring.replace('"""', "'''").replace("\\", "\\\\")
    parts = [f'"""{safe_doc}"""', "\n".join(head), *body, *tail]
    return "\n\n\n".join(p for p in parts if p.strip()) + "\n"

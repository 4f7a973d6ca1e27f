"""One ``Param(...)`` as entry source text: the single renderer both builders write parameters with.

The PoT importer (:mod:`builder.pot_import.render`) and the LLM builder (:mod:`builder.llm.assemble`)
each had their own copy, and they drifted: one dropped ``reading``, the other ``choices`` and ``unit``,
so a field one builder set silently vanished from the other's entries. Every field of
:class:`edge_runtime.entries.metadata.Param` is written here when it differs from its default; the test is
that a Param with every field set reads back equal through the device's registry and compiler.
"""

from __future__ import annotations

from edge_runtime.entries.metadata import Param


def param_source(p: Param) -> str:
    """``Param(name=..., ...)``: the fields in declaration order; name, description, type, original and
    examples always written (``examples=()`` says there are none, as the importer's entries always have),
    the rest only when they differ from their default. The type is written by its Python name
    (``float``, ``Fraction``), which is what the entry module has in scope."""
    fields = [f"name={p.name!r}", f"description={p.description!r}", f"type={p.type.__name__}",
              f"original={p.original!r}", f"examples={tuple(p.examples)!r}"]
    if p.minimum is not None:
        fields.append(f"minimum={p.minimum!r}")
    if p.exclusive_minimum:
        fields.append("exclusive_minimum=True")
    if p.maximum is not None:
        fields.append(f"maximum={p.maximum!r}")
    if p.choices is not None:
        fields.append(f"choices={tuple(p.choices)!r}")
    if p.unit is not None:
        fields.append(f"unit={p.unit!r}")
    if p.reading is not None:
        fields.append(f"reading={p.reading!r}")
    return "Param(" + ", ".join(fields) + ")"

"""The one Param → source renderer (builder/param_source.py) both builders write parameters with.

A Param with every field set must read back equal through the device's own code: the registry that
registers the rendered module, and the compiler whose module carries the declarations a bundle ships.
"""

from __future__ import annotations

import dataclasses

from builder.llm.assemble import assemble_module
from builder.param_source import param_source
from builder.pot_import.plan import ParamPlan
from builder.pot_import.verify import ExactEmbedder
from edge_runtime.entries.compiler import LoadedCompiledEntry, compile_entry
from edge_runtime.entries.metadata import EntryPoint, Param, param_from_dict
from edge_runtime.entries.registry import Registry

EVERY_FIELD = Param(
    name="share", description="the share of the cake she eats", type=float, original=0.5,
    examples=(0.25, 0.5), minimum=0.0, maximum=1.0, exclusive_minimum=True, choices=(0.25, 0.5, 0.75),
    unit="cake", reading="reciprocal",
)

CHUNK = '''
from edge_runtime.semantic import load, narrate, semantic_function


@semantic_function(
    "Find how much cake is left after she eats her share",
    inputs={"the share of the cake she eats": 0.5},
    outputs={"answer": 0.5},
)
def cake_left(ctx):
    share = load(ctx, "the share of the cake she eats", float)
    left = 1 - share
    narrate(ctx, f"1 - {share} = {left}")
    return {"answer": left}
'''


def _entry(params: list[Param]) -> EntryPoint:
    return EntryPoint(
        id="cake-1", description="How much cake is left", template="She eats {share} of the cake. How much is left?",
        question="She eats 2 of the cake. How much is left?", params=params,
        root="find how much cake is left after she eats her share", answer_key="answer",
    )


def test_every_field_of_a_param_is_written():
    text = param_source(EVERY_FIELD)
    for f in dataclasses.fields(Param):
        assert f"{f.name}=" in text, f.name


def test_a_param_with_every_field_reads_back_equal_through_registry_and_compiler():
    source = assemble_module([CHUNK], docstring="round trip", entry=_entry([EVERY_FIELD]))
    assert param_source(EVERY_FIELD) in source
    registry = Registry(ExactEmbedder())
    registry.add_source(source, "cake.py", "cake")
    registry.check_entry("cake-1")
    assert tuple(registry.entries["cake-1"].params) == (EVERY_FIELD,)
    compiled = LoadedCompiledEntry(compile_entry(registry, "cake-1").source, "cake")
    assert [param_from_dict(p) for p in compiled.meta["params"]] == [EVERY_FIELD]


def test_defaults_are_left_out_and_read_back_as_defaults():
    plain = Param(name="n", description="the number of eggs", type=int, original=3)
    assert param_source(plain) == "Param(name='n', description='the number of eggs', type=int, original=3, examples=())"
    assert eval(param_source(plain), {"Param": Param, "int": int}) == plain  # noqa: S307 - our own text


def test_the_importer_declares_every_param_field_its_plan_has():
    """A field ParamPlan shares with Param reaches the source: ParamPlan.as_param drops none of them."""
    shared = {f.name for f in dataclasses.fields(ParamPlan)} & {f.name for f in dataclasses.fields(Param)}
    values = {"name": "half", "description": "the share", "type": float, "original": 2.0, "examples": (3.0,),
              "minimum": 1.0, "exclusive_minimum": True, "maximum": 9.0, "reading": "reciprocal"}
    assert shared == set(values)
    plan = ParamPlan(literals=[], mention=None, **values)  # type: ignore[arg-type]
    declared = plan.as_param()
    assert {name: getattr(declared, name) for name in shared} == values

"""Near-duplicate functions are reported at registration, never merged."""

from __future__ import annotations

from edge_runtime.entries.registry import Registry

MODULE = '''
from edge_runtime.semantic import load, narrate, semantic_function


@semantic_function("{description}", inputs={{"a number": 1.0}}, outputs={{"the result": 2.0}})
def {name}(ctx):
    x = load(ctx, "a number", float)
    narrate(ctx, f"{{x}} doubled is {{2 * x}}")
    return {{"the result": 2 * x}}
'''


def test_near_duplicates_are_reported_not_merged(embedder):
    registry = Registry(embedder)
    registry.add_source(MODULE.format(description="Double a number", name="double_a"), "a.py")
    registry.add_source(MODULE.format(description="Compute the square root of a number", name="root_b"), "b.py")
    assert registry.near_duplicates == []
    registry.add_source(MODULE.format(description="Double a number.", name="double_c"), "c.py")
    assert [(a, b) for a, b, _ in registry.near_duplicates] == [("double_c", "double_a")]
    assert registry.near_duplicates[0][2] >= registry.near_duplicate
    assert set(registry.functions) == {"double_a", "root_b", "double_c"}

"""Fuzzing the validator: whatever text or AST it is given, it answers with violations, never a crash."""

from __future__ import annotations

import ast

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edge_runtime.entries.validator import find_violations, validate_source
from edge_runtime.errors import UnsafeCodeError

_NAMES = st.sampled_from(["x", "_sys", "__globals__", "ctx", "load", "getattr", "math", "f", "_", "__class__"])
_LEAVES = st.one_of(
    st.builds(ast.Name, id=_NAMES, ctx=st.just(ast.Load())),
    st.builds(ast.Constant, value=st.one_of(st.integers(), st.text(max_size=12), st.floats(allow_nan=False), st.none())),
)


def _extend(children: st.SearchStrategy[ast.expr]) -> st.SearchStrategy[ast.expr]:
    return st.one_of(
        st.builds(ast.Attribute, value=children, attr=_NAMES, ctx=st.just(ast.Load())),
        st.builds(ast.Call, func=children, args=st.lists(children, max_size=3), keywords=st.just([])),
        st.builds(ast.BinOp, left=children, op=st.sampled_from([ast.Add(), ast.Mult(), ast.Pow()]), right=children),
        st.builds(ast.Subscript, value=children, slice=children, ctx=st.just(ast.Load())),
        st.builds(ast.Lambda, body=children,
                  args=st.just(ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]))),
        st.builds(ast.List, elts=st.lists(children, max_size=3), ctx=st.just(ast.Load())),
    )


_EXPRS = st.recursive(_LEAVES, _extend, max_leaves=12)


def _module(value: ast.expr, default: ast.expr, body: ast.expr) -> str:
    args = ast.arguments(posonlyargs=[], args=[ast.arg("ctx"), ast.arg("a")], kwonlyargs=[], kw_defaults=[], defaults=[default])
    func = ast.FunctionDef(name="f", args=args, body=[ast.Return(body)], decorator_list=[], returns=None, type_comment=None)
    tree = ast.Module(body=[ast.Assign(targets=[ast.Name("X", ast.Store())], value=value), func], type_ignores=[])
    return ast.unparse(ast.fix_missing_locations(tree))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_EXPRS, _EXPRS, _EXPRS)
def test_generated_asts_never_crash_the_validator(value: ast.expr, default: ast.expr, body: ast.expr) -> None:
    source = _module(value, default, body)
    violations = find_violations(source, "<fuzz>")
    assert all(isinstance(v, UnsafeCodeError) for v in violations)
    if violations:  # the first violation is what validate_source raises
        try:
            validate_source(source, "<fuzz>")
        except UnsafeCodeError as exc:
            assert exc.rule == violations[0].rule
        else:
            raise AssertionError("validate_source accepted a source with violations")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_never_crashes_the_validator(text: str) -> None:
    assert all(isinstance(v, UnsafeCodeError) for v in find_violations(text, "<fuzz>"))


@settings(max_examples=200, deadline=None)
@given(_EXPRS)
def test_a_call_in_a_default_argument_is_always_rejected(expr: ast.expr) -> None:
    call = ast.Call(func=ast.Name("print", ast.Load()), args=[expr], keywords=[])
    source = _module(ast.Constant(1), call, ast.Constant(1))
    assert "default" in {v.rule for v in find_violations(source)}

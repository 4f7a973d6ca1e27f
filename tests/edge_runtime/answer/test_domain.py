"""IS4's answer key and domain checks, on their own (the pipeline's misses are in read/test_guard.py)."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

from edge_runtime.answer.domain import answer_value, out_of_domain
from edge_runtime.entries.metadata import EntryPoint


def _entry(**extra) -> EntryPoint:
    return EntryPoint(id="e", description="d", template="t", params=(), root="r", **extra)


def test_answer_value_is_the_result_under_the_answer_key():
    assert answer_value(_entry(answer_key="eggs"), {"eggs": 4, "other": 1}) == 4
    assert answer_value(_entry(answer_key="eggs"), {"other": 1}) is None
    assert answer_value(_entry(), {"eggs": 4}) is None


def test_a_counting_entry_refuses_a_fraction_and_nan():
    counting = _entry(whole_answer=True)
    assert out_of_domain(counting, 4) is None and out_of_domain(counting, 4.0) is None
    assert out_of_domain(counting, Fraction(9, 2)) is not None
    assert out_of_domain(counting, float("nan")) is not None
    assert out_of_domain(counting, "four") is None  # no number: nothing to judge
    assert out_of_domain(_entry(), 4.5) is None


def test_an_answer_below_the_minimum_is_out_of_domain():
    quantity = _entry(answer_minimum=0)
    assert out_of_domain(quantity, 0) is None and out_of_domain(quantity, Decimal("2.5")) is None
    detail = out_of_domain(quantity, -4)
    assert detail is not None and "at least 0" in detail and "-4" in detail
    assert out_of_domain(quantity, True) is None  # a bool is no number

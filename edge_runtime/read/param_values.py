"""From a copied text span to a parameter's typed, validated value."""

from __future__ import annotations

import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from edge_runtime.entries.metadata import Param
from edge_runtime.errors import ConversionError, ParameterValidationError
from edge_runtime.read.values import Quantity, parse_quantity

_YES = {"yes", "true", "y"}
_NO = {"no", "false", "n"}


#: Words a number's unit may have in a slot that declares none ("4 sq ft", "3 fluid ounces").
_UNIT_WORDS = 2


def read_param(param: Param, text: str, read_quantity: Callable[[str], Quantity] = parse_quantity) -> Any:
    """Interpret ``text`` as ``param`` would (numbers as the reading pack's ``read_quantity`` reads them — by
    default number words and fractions too —, choices) and validate it."""
    span = text.strip().strip("\"'").strip()
    if not span:
        raise ParameterValidationError(param.name, "no value found")
    if param.choices is not None:
        value: Any = _choice(param, span)
    elif param.type in (int, float, Fraction):
        try:
            quantity = read_quantity(span)
        except ConversionError as exc:
            raise ParameterValidationError(param.name, str(exc)) from exc
        if param.unit is not None and quantity.unit is not None and quantity.unit.lower() != param.unit.lower():
            raise ParameterValidationError(param.name, f"unit {quantity.unit!r} differs from the entry's {param.unit!r}")
        if param.unit is None and quantity.unit is not None and len(re.findall(r"[A-Za-z]+", quantity.unit)) > _UNIT_WORDS:
            # "four eggs which she then throws away" in a slot the template closes with "." says more than a number
            raise ParameterValidationError(param.name, f"{span!r} holds words of its own beside its number")
        value = quantity.value
        if param.reading == "reciprocal":
            if value == 0:
                raise ParameterValidationError(param.name, f"{span!r} is zero; the reasoning divides by its reciprocal")
            value = 1 / Fraction(value)
        if param.type is float:
            try:
                value = float(value)
            except OverflowError:
                raise ParameterValidationError(param.name, f"{span[:40]!r}... is too large for a number") from None
    elif param.type is bool:
        low = span.lower()
        if low not in _YES | _NO:
            raise ParameterValidationError(param.name, f"{span!r} is not yes/no")
        value = low in _YES
    else:
        value = span
    return param.validate(value)


def _choice(param: Param, span: str) -> Any:
    low = span.lower()
    assert param.choices is not None
    for choice in param.choices:
        if str(choice).lower() == low:
            return choice
    raise ParameterValidationError(param.name, f"{span!r} is not one of {list(param.choices)!r}")

"""Programmatic type coercion: the deterministic first step of convert/smart_convert."""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from edge_runtime.errors import ConversionError

_NUMBER = re.compile(r"^[+-]?(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?$")
_TRUE = {"true", "yes", "y", "1", "on"}
_FALSE = {"false", "no", "n", "0", "off"}


def convert(value: Any, d_type: type | None) -> Any:
    """Coerce ``value`` to ``d_type`` without guessing; raise ConversionError when unsure."""
    try:
        return _convert(value, d_type)
    except (OverflowError, ValueError, ArithmeticError) as exc:
        if isinstance(exc, ConversionError):
            raise
        raise ConversionError(f"cannot convert {value!r}: {exc}") from exc


def _convert(value: Any, d_type: type | None) -> Any:
    if d_type is None or (isinstance(value, d_type) and not isinstance(value, bool)) or (
        d_type is bool and isinstance(value, bool)
    ):
        return value
    if d_type is float:
        return float(_to_number(value))
    if d_type is int:
        number = _to_number(value)
        if number != int(number):
            raise ConversionError(f"{value!r} is not a whole number")
        return int(number)
    if d_type is Fraction:
        return Fraction(_to_number(value))
    if d_type is Decimal:
        number = _to_number(value)
        return Decimal(number.numerator) / Decimal(number.denominator)
    if d_type is str:
        return format_plain(value)
    if d_type is bool:
        text = str(value).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise ConversionError(f"{value!r} is not a yes/no value")
    if d_type in (list, tuple) and isinstance(value, (list, tuple)):
        return d_type(value)
    raise ConversionError(f"cannot convert {value!r} to {getattr(d_type, '__name__', d_type)}")


def _to_number(value: Any) -> Fraction:
    if isinstance(value, bool):
        raise ConversionError(f"{value!r} is a truth value, not a number")
    if isinstance(value, (int, Fraction)):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ConversionError(f"{value!r} is not a finite number")
        return Fraction(str(value))
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ConversionError(f"{value!r} is not a finite number")
        return Fraction(value)
    if not isinstance(value, str):
        raise ConversionError(f"cannot read a number from {type(value).__name__}")
    text = value.strip().replace("\u2212", "-")
    if re.fullmatch(r"[+-]?\d+\s*/\s*\d+", text):
        num, den = (part.strip() for part in text.split("/"))
        if int(den) == 0:
            raise ConversionError(f"{value!r} divides by zero")
        return Fraction(int(num), int(den))
    if text and _NUMBER.match(text) and any(ch.isdigit() for ch in text):
        try:
            return Fraction(Decimal(text.replace(",", "")))
        except InvalidOperation as exc:
            raise ConversionError(f"{value!r} is not a number") from exc
    try:
        number = Decimal(text)
        if not number.is_finite():
            raise ConversionError(f"{value!r} is not a finite number")
        return Fraction(number)
    except (InvalidOperation, ValueError) as exc:
        raise ConversionError(f"{value!r} is not a plain number") from exc


def format_plain(value: Any) -> str:
    """Text of a value without float noise (2.0 -> '2')."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)

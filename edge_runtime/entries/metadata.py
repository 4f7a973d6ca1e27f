"""Declarative metadata of semantic functions and entry points.

A reviewer should understand an entry in a minute, so metadata is plain data:
natural-language descriptions with examples, never variable or function names.
"""

from __future__ import annotations

import math
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from edge_runtime.errors import DefinitionError, ParameterValidationError

#: Types a parameter may declare, by the name stored in manifests.
PARAM_TYPES: dict[str, type] = {"int": int, "float": float, "str": str, "bool": bool, "fraction": Fraction}
#: How a question may state a parameter's value (``Param.reading``).
READINGS = (None, "reciprocal", "multiple", "fraction")


@dataclass(frozen=True)
class SemanticFunction:
    """A callable ``f(ctx) -> dict`` plus the descriptions other functions find it by."""

    name: str
    description: str
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    calls: tuple[str, ...]
    fn: Callable[..., dict[str, Any]] = field(compare=False, repr=False)
    module: str = "<unknown>"

    def __call__(self, ctx: Any) -> dict[str, Any]:
        return self.fn(ctx)


@dataclass(frozen=True)
class Param:
    """One slot of an entry's input template, with the domain in which the cached reasoning holds."""

    name: str
    description: str
    type: type = float
    original: Any = None
    examples: tuple[Any, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    choices: tuple[Any, ...] | None = None
    unit: str | None = None
    #: How the question states the value: None, the number as written; "reciprocal", one over it (the
    #: question says "half" where the reasoning divides by 2, "one third" where it divides by 3); "multiple", as a
    #: multiple ("tripled", "twice", "4 times"), never as a count of something ("3 years" does not state it);
    #: "fraction", as a fraction ("3/5" for 0.6).
    reading: str | None = None

    def __post_init__(self) -> None:
        if self.type not in PARAM_TYPES.values():
            raise DefinitionError(f"parameter {self.name!r}: unsupported type {self.type!r}")
        if self.reading not in READINGS:
            raise DefinitionError(f"parameter {self.name!r}: reading {self.reading!r} is not one of {READINGS}")
        if self.reading is not None and self.type not in (float, Fraction):
            raise DefinitionError(f"parameter {self.name!r}: a {self.reading} reading needs a float or fraction type")
        if not self.name.isidentifier():
            raise DefinitionError(f"parameter name {self.name!r} must be an identifier")
        object.__setattr__(self, "examples", tuple(self.examples))
        if self.choices is not None:
            object.__setattr__(self, "choices", tuple(self.choices))

    @property
    def type_name(self) -> str:
        return next(k for k, v in PARAM_TYPES.items() if v is self.type)

    def validate(self, value: Any) -> Any:
        """Return ``value`` coerced to the declared type, or raise if it lies outside the domain."""
        if value is None:
            raise ParameterValidationError(self.name, "missing")
        coerced = _coerce_param(value, self.type)
        if coerced is None:
            raise ParameterValidationError(self.name, f"{_as_stated(value)}: expected {_KIND_WORDS[self.type]}")
        if self.choices is not None and coerced not in self.choices:
            raise ParameterValidationError(self.name, f"{coerced!r} is not one of {list(self.choices)!r}")
        if self.minimum is not None:
            too_low = coerced <= self.minimum if self.exclusive_minimum else coerced < self.minimum
            if too_low:
                op = ">" if self.exclusive_minimum else ">="
                raise ParameterValidationError(self.name, f"{coerced!r} violates {op} {self.minimum}")
        if self.maximum is not None and coerced > self.maximum:
            raise ParameterValidationError(self.name, f"{coerced!r} violates <= {self.maximum}")
        return coerced

    def text(self, value: Any) -> str:
        """The value as a question states it (``"1/3"`` for a reciprocal 3.0)."""
        if self.reading == "reciprocal":
            number = Fraction(value).limit_denominator(1000) if value else Fraction(0)
            return format_value(1 / number if number else 0)
        if self.reading == "fraction":
            near = Fraction(value).limit_denominator(100)
            return f"{near.numerator}/{near.denominator}" if near.denominator > 1 else str(near.numerator)
        if isinstance(value, float) and not value.is_integer():
            near = Fraction(value).limit_denominator(12)
            if near.denominator > 1 and abs(float(near) - value) < 1e-12 and len(repr(value)) > 8:
                return f"{near.numerator}/{near.denominator}"  # 0.3333333333333333 reads as 1/3
        return format_value(value)

    def domain_text(self) -> str:
        """The valid domain in words, for prompts and reviews."""
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        parts = []
        if self.minimum is not None:
            parts.append(f"{'>' if self.exclusive_minimum else '>='} {self.minimum}")
        if self.maximum is not None:
            parts.append(f"<= {self.maximum}")
        return f"{self.type_name} " + " and ".join(parts) if parts else self.type_name


def _coerce_param(value: Any, kind: type) -> Any:
    if isinstance(value, bool) and kind is not bool:
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if kind is int:
        if isinstance(value, int):
            return value
        if isinstance(value, (float, Fraction)) and value == int(value):
            return int(value)
        return None
    if kind is float:
        return float(value) if isinstance(value, (int, float, Fraction)) else None
    if kind is Fraction:
        return Fraction(value) if isinstance(value, (int, Fraction)) or isinstance(value, float) else None
    if kind is str:
        return value if isinstance(value, str) and value.strip() else None
    if kind is bool:
        return value if isinstance(value, bool) else None
    return None


@dataclass(frozen=True)
class EntryPoint:
    """How a class of questions enters the cache: its template, its parameters, its root function."""

    id: str
    description: str
    template: str
    params: tuple[Param, ...]
    root: str
    question: str = ""
    answer_key: str | None = None
    module: str = "<unknown>"
    #: The answer counts things ("how many ...", a whole number for the original question): a fraction
    #: for new values means the cached reasoning lacks a rounding step it never needed; served as a MISS.
    whole_answer: bool = False
    #: The least answer the reasoning gives for values it was cached for (0 for a quantity: change,
    #: eggs sold, a price). Below it, the values left that domain ("change" from $20 for $24 of
    #: cookies): served as a MISS. None: any answer.
    answer_minimum: float | None = None
    #: Parameters the compiled reasoning never reads: numbers the question states that the answer does not depend
    #: on ("80 pop in the first 30 seconds"). The device tells them from the compiled code
    #: (``source_analysis.params_run_reads``), never from a manifest; the model path need not agree on them.
    unread: frozenset[str] = frozenset()
    #: The numbers the compiled reasoning writes as constants (``source_analysis.numbers_written``, told by the device
    #: from the code as ``unread`` is), or None where not told: a month the template names counts its days only when
    #: the reasoning writes them.
    numbers: frozenset[float] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", tuple(self.params))
        object.__setattr__(self, "unread", frozenset(self.unread))
        if self.numbers is not None:
            object.__setattr__(self, "numbers", frozenset(float(n) for n in self.numbers))
        minimum = _optional_number(self.answer_minimum, f"entry {self.id!r}: answer_minimum")
        object.__setattr__(self, "answer_minimum", minimum)
        names = [p.name for p in self.params]
        if len(set(names)) != len(names):
            raise DefinitionError(f"entry {self.id!r}: duplicate parameter names {names}")
        if not self.unread <= set(names):
            raise DefinitionError(f"entry {self.id!r}: unread parameters {sorted(self.unread - set(names))} are not "
                                  "parameters of it")
        slots = [f for _, f, _, _ in string.Formatter().parse(self.template) if f is not None]
        if sorted(set(slots)) != sorted(names):
            raise DefinitionError(
                f"entry {self.id!r}: template slots {sorted(set(slots))} do not match parameters {sorted(names)}"
            )

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def original_values(self) -> dict[str, Any]:
        return {p.name: p.original for p in self.params}

    def validate(self, values: dict[str, Any]) -> dict[str, Any]:
        """Validate every declared parameter (extra keys are refused: they mean a different question)."""
        extra = set(values) - {p.name for p in self.params}
        if extra:
            raise ParameterValidationError(sorted(extra)[0], "not a parameter of this entry")
        return {p.name: p.validate(values.get(p.name)) for p in self.params}

    def render(self, values: dict[str, Any]) -> str:
        """The question this entry answers for ``values`` (used by round-trip tests)."""
        by_name = {p.name: p for p in self.params}
        return self.template.format(**{k: by_name[k].text(v) if k in by_name else format_value(v) for k, v in values.items()})

    def payload(self, values: dict[str, Any]) -> dict[str, Any]:
        """The root function's payload: parameter values keyed by their descriptions."""
        return {p.description: values[p.name] for p in self.params}


#: What each parameter type is called in a MISS reason a user reads ("30.5: expected a whole number").
_KIND_WORDS: dict[type, str] = {int: "a whole number", float: "a number", str: "a word or phrase", bool: "yes or no",
                                Fraction: "a number or fraction"}


def _as_stated(value: Any) -> str:
    """A refused value as a question would state it: Fraction(61, 2) is 30.5, not its repr."""
    if isinstance(value, Fraction):
        decimal = format_value(float(value))
        return decimal if len(decimal) <= 8 else f"{value.numerator}/{value.denominator}"
    if isinstance(value, str):
        return repr(value)
    return format_value(value)


def format_value(value: Any) -> str:
    """Render a parameter value as a person would write it in a question."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def declared_params(params: Sequence[Param]) -> list[dict[str, Any]]:
    """Parameters as plain data, for manifests, compiled modules and prompts (round-trips via ``param_from_dict``)."""
    def plain(value: Any) -> Any:
        return str(value) if isinstance(value, Fraction) else value

    return [
        {
            "name": p.name,
            "description": p.description,
            "type": p.type_name,
            "original": plain(p.original),
            "examples": [plain(e) for e in p.examples],
            "minimum": p.minimum,
            "maximum": p.maximum,
            "exclusive_minimum": p.exclusive_minimum,
            "choices": list(p.choices) if p.choices is not None else None,
            "unit": p.unit,
            "reading": p.reading,
            "domain": p.domain_text(),
        }
        for p in params
    ]


def param_from_dict(data: Mapping[str, Any]) -> Param:
    """Inverse of ``declared_params`` for one parameter."""
    kind = PARAM_TYPES[data["type"]]

    def typed(value: Any) -> Any:
        return Fraction(value) if kind is Fraction and value is not None else value

    return Param(
        name=data["name"],
        description=data["description"],
        type=kind,
        original=typed(data.get("original")),
        examples=tuple(typed(e) for e in data.get("examples") or ()),
        minimum=data.get("minimum"),
        maximum=data.get("maximum"),
        exclusive_minimum=bool(data.get("exclusive_minimum", False)),
        choices=tuple(data["choices"]) if data.get("choices") is not None else None,
        unit=data.get("unit"),
        reading=data.get("reading"),
    )


def entry_to_dict(entry: EntryPoint) -> dict[str, Any]:
    """An entry point as plain data (manifests, compiled modules)."""
    return {
        "id": entry.id,
        "description": entry.description,
        "template": entry.template,
        "question": entry.question,
        "root": entry.root,
        "answer_key": entry.answer_key,
        "whole_answer": entry.whole_answer,
        "answer_minimum": entry.answer_minimum,
        "params": declared_params(entry.params),
    }


def entry_from_dict(data: Mapping[str, Any]) -> EntryPoint:
    """Inverse of ``entry_to_dict``: what a device rebuilds from a bundle without any source."""
    return EntryPoint(
        id=data["id"],
        description=data["description"],
        template=data["template"],
        params=tuple(param_from_dict(p) for p in data["params"]),
        root=data.get("root", ""),
        question=data.get("question", ""),
        answer_key=data.get("answer_key"),
        whole_answer=bool(data.get("whole_answer", False)),
        answer_minimum=data.get("answer_minimum"),
    )


def _optional_number(value: Any, what: str) -> float | None:
    """None or a finite number (bundle data is not trusted)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise DefinitionError(f"{what} must be a finite number or null, not {value!r}")
    return float(value)

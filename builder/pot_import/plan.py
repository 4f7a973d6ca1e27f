"""The parameter plan of one transcript, as data: which literals each parameter stands for.

Made by :func:`builder.pot_import.planner.plan_parameters`; read by the renderer, the verifier and
the independent check, which draw other values for it (:func:`draw_values`) and turn them into
program literals (:func:`oracle_values`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from builder.gsm8k import Mention
from builder.pot_import.matching import literal_form
from builder.pot_import.program import close_to
from edge_runtime.entries.metadata import Param


@dataclass
class ParamPlan:
    """A parameter: one mention of the question, and the program literal(s) that state it."""

    name: str
    literals: list[tuple[int, str]]  # (literal id, form); form: "value", "percent" (25% as 0.25), "complement" (30% off as 0.7)
    mention: Mention
    original: int | float  # the value as the question states it
    type: type = int
    description: str = ""
    minimum: float | None = 0
    exclusive_minimum: bool = False
    maximum: float | None = None
    examples: tuple[Any, ...] = ()
    #: A number of the question the program never reads (no literal has its value, and every literal
    #: is accounted for): a slot whose value the reasoning ignores, so a variant may change it.
    free: bool = False
    mentions: tuple[Mention, ...] = ()  # every mention the slot stands for (several for a repeated free number)
    #: A number word the question states for a structural literal: None, the number it names ("twice" for 2,
    #: "half" for 0.5); "reciprocal", one over it ("half" for the 2 of ``x / 2``); "multiple", a multiplying word
    #: ("tripled" for 3), which only a multiple may restate. See Param.reading.
    reading: str | None = None
    structural: bool = False

    def text(self, value: Any) -> str:
        """The value as the question would state it (the entry's Param.text)."""
        return Param(name=self.name or "p", description="", type=float if self.structural else self.type,
                     reading=self.reading).text(value)

    def as_param(self) -> Param:
        """The entry's declaration of this parameter (what the rendered source writes)."""
        return Param(name=self.name, description=self.description, type=self.type, original=self.original,
                     examples=self.examples, minimum=self.minimum, exclusive_minimum=self.exclusive_minimum,
                     maximum=self.maximum, reading=self.reading)

    @property
    def literal(self) -> int:
        """The first literal (it names the parameter)."""
        return self.literals[0][0]

    def literal_values(self, value: Any) -> dict[int, Any]:
        """The program literals for a parameter value."""
        return {lid: literal_form(value, form) for lid, form in self.literals}


def oracle_values(params: Sequence[ParamPlan], values: dict[str, Any]) -> dict[int, Any]:
    """Literal id -> value for running the original program on parameter values."""
    out: dict[int, Any] = {}
    for p in params:
        out.update(p.literal_values(values[p.name]))
    return out


@dataclass
class Plan:
    """How one program becomes an entry: its parameters and what stays constant, and why."""

    params: list[ParamPlan]
    restored: dict[int, Any]  # literal id -> original value (GSM-Hard numbers mapped back)
    constants: list[str]  # human-readable notes: "60 (unit constant, not in the question)"
    unused_mentions: list[str]  # question numbers no literal maps to
    frozen: list[str] = field(default_factory=list)  # parameters kept constant, by name
    unexplained: list[str] = field(default_factory=list)  # literals neither stated nor unit constants
    #: pairs of mentions of one value (their starts) whose parameters were traded on the independent check's evidence
    traded: list[tuple[int, int]] = field(default_factory=list)
    #: parameters left varying that a constant of the program may have been computed from (name -> why, those
    #: constants, and whether a mention no parameter reads states the same number): the planner freezes them unless
    #: told that the independent check decides (``plan_parameters(freeze_derived=False)``,
    #: :func:`builder.independent_check.check`)
    suspects: dict[str, tuple[str, tuple[float, ...], bool]] = field(default_factory=dict)
    #: parameters kept constant for that suspicion alone (a subset of ``frozen``)
    derived: list[str] = field(default_factory=list)


def draw_values(plan: Plan, rng: random.Random) -> dict[str, Any]:
    """Other valid values: integers near the original (integral stays integral, positive stays positive)."""
    values: dict[str, Any] = {}
    for p in plan.params:
        original = float(p.original)
        if p.structural:  # another number of the same kind: "three times" for "twice", "a third" for "half"
            natural = float(p.mention.value)
            pool = [2.0, 3.0, 4.0, 5.0] if natural >= 1 else [1 / 2, 1 / 3, 2 / 3, 1 / 4, 3 / 4, 1 / 5]
            other = rng.choice([v for v in pool if not close_to(v, natural)])
            values[p.name] = float(1 / other if p.reading == "reciprocal" else other)
            continue
        low = p.minimum if p.minimum is not None else -math.inf
        for _ in range(50):
            if float(original).is_integer():
                spread = max(3, int(abs(original) * 0.5))
                value: Any = int(original) + rng.choice([d for d in range(-spread, spread + 1) if d])
            else:
                decimals = max(1, min(3, len(p.mention.text.split(".")[-1]) if "." in p.mention.text else 1))
                value = round(original * rng.uniform(0.5, 1.5), decimals)
                if value == original:
                    continue
            if value < low or (p.exclusive_minimum and value <= low):
                continue
            if p.maximum is not None and value > p.maximum:
                continue
            break
        else:
            value = original
        values[p.name] = p.type(value)
    return values

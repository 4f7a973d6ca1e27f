"""The entry-level tests: answer comparison, the root correctness test and round-trip robustness tests.

A round trip takes other valid parameter values (the builder's examples first, then seeded draws
from each parameter's domain), renders the template with them, extracts them back (the template
fast path by default, or the target model when the build has one), runs the compiled entry, and
checks that the run does not crash, that extraction gave back what was rendered, and, when a
reference answer is available (the source model answers the rendered question), that the answers
agree. Parameters are varied round-robin across the N trips, so with N ≥ the number of parameters
each parameter is varied on its own and a failure names it.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any, Protocol

from edge_runtime.entries.metadata import EntryPoint, Param
from edge_runtime.entries.registry import Execution
from edge_runtime.errors import ArcError
from edge_runtime.read.extractor import Extractor


class CompiledRunner(Protocol):
    """A compiled entry that can be run: the builder's is loaded in its confined session
    (:class:`builder.confined_session.ConfinedCompiled`), so the run happens there."""

    def run(self, values: Mapping[str, Any], *, target_lm: Any = None) -> Execution: ...

_NUMBER = re.compile(r"-?(?:\d[\d,]*(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?")


def jsonable(value: Any) -> Any:
    """A JSON-safe copy (Fractions and other odd values become strings)."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def as_number(value: Any) -> float | None:
    """The single number ``value`` is or states ("$4,510" → 4510.0); None when it has none or several."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float, Fraction)):
        return float(value)
    if isinstance(value, str):
        found = _NUMBER.findall(value)
        if len(found) == 1:
            try:
                return float(found[0].replace(",", ""))
            except ValueError:
                return None
    return None


def _decimals(value: Any) -> int:
    found = _NUMBER.findall(str(value))
    if len(found) != 1 or "e" in found[0].lower() or "." not in found[0]:
        return 0
    return len(found[0].split(".")[1])


def answers_match(got: Any, expected: Any) -> bool:
    """Numbers agree to 1e-6 relative, or to the decimals ``expected`` shows ("495.8" accepts 495.805);
    anything else compares as case- and whitespace-normalised text."""
    g, e = as_number(got), as_number(expected)
    if g is not None and e is not None:
        if math.isclose(g, e, rel_tol=1e-6, abs_tol=1e-9):
            return True
        places = _decimals(expected)
        return places > 0 and math.isclose(round(g, places), e, rel_tol=1e-9, abs_tol=10 ** -(places + 3))
    return " ".join(str(got).lower().split()).rstrip(".") == " ".join(str(expected).lower().split()).rstrip(".")


# ---- choosing other values ----------------------------------------------------------------
def _draw(p: Param, rng: random.Random) -> Any:
    """A random valid value of ``p`` other than its original, or None when it has no other."""
    if p.type is bool:
        return not p.original
    if p.choices is not None:
        others = [c for c in p.choices if c != p.original]
        return rng.choice(others) if others else None
    if p.type not in (int, float):
        return None
    original = float(p.original)
    span = max(abs(original), 10.0)
    low = original - span if p.minimum is None else max(float(p.minimum), original - span)
    high = original + span if p.maximum is None else min(float(p.maximum), original + span)
    for _ in range(50):
        value: Any = rng.randint(math.ceil(low), math.floor(high)) if p.type is int else round(rng.uniform(low, high), 2)
        try:
            value = p.validate(value)
        except ArcError:
            continue
        if value != p.original:
            return value
    return None


def alternative(p: Param, k: int, rng: random.Random) -> Any:
    """The k-th other value of ``p``: its examples first, then random draws from its domain."""
    pool = [e for e in p.examples if e != p.original]
    return pool[k] if k < len(pool) else _draw(p, rng)


def round_trip_values(entry: EntryPoint, n: int, seed: int) -> list[tuple[list[str], dict[str, Any]]]:
    """(varied parameter names, values) for up to ``n`` trips."""
    rng = random.Random(seed)
    params = list(entry.params)
    trips: list[tuple[list[str], dict[str, Any]]] = []
    for i in range(n):
        if i < len(params):
            varied, k = [p for j, p in enumerate(params) if j % n == i], 0
        else:
            varied, k = params, i - len(params) + 1
        values = dict(entry.original_values)
        changed = []
        for p in varied:
            other = alternative(p, k, rng)
            if other is not None:
                values[p.name] = other
                changed.append(p.name)
        if changed:
            trips.append((changed, values))
    return trips


# ---- running the tests ------------------------------------------------------------------------
@dataclass
class RoundTrip:
    varied: list[str]
    values: dict[str, Any]
    question: str
    extracted: dict[str, Any] | None = None
    extraction_path: str | None = None
    result: Any = None
    reference: Any = None
    ok: bool = False
    problem: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return jsonable(asdict(self))


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def run_round_trip(
    entry: EntryPoint, compiled: CompiledRunner, extractor: Extractor, trip: RoundTrip, target_lm: Any = None
) -> RoundTrip:
    """Extract, run and compare one rendered question; fills ``trip`` in and returns it."""
    try:
        extraction = extractor.extract(entry, trip.question)
    except ArcError as exc:
        trip.problem = f"extraction failed: {exc}"
        return trip
    trip.extracted, trip.extraction_path = dict(extraction.values), extraction.path
    wrong = [name for name, value in trip.values.items() if not _same_value(extraction.values.get(name), value)]
    if wrong:
        got = [(n, extraction.values.get(n)) for n in wrong]
        trip.problem = f"extraction gave {got}, rendered {[(n, trip.values[n]) for n in wrong]}"
        return trip
    try:
        result = compiled.run(extraction.values, target_lm=target_lm).result
    except ArcError as exc:
        trip.problem = f"the entry crashed: {exc}"
        return trip
    trip.result = result.get(entry.answer_key) if entry.answer_key else result
    if trip.reference is not None and not answers_match(trip.result, trip.reference):
        trip.problem = f"varied {trip.varied}: the entry answers {trip.result!r}, the reference is {trip.reference!r}"
        return trip
    trip.ok = True
    return trip


def plan_round_trips(entry: EntryPoint, n: int, seed: int) -> list[RoundTrip]:
    return [RoundTrip(varied, values, entry.render(values)) for varied, values in round_trip_values(entry, n, seed)]


def pass_rate(trips: Sequence[RoundTrip]) -> float:
    return sum(t.ok for t in trips) / len(trips) if trips else 1.0

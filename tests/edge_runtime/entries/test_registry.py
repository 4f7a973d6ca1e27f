"""Dynamic registry: semantic resolution (no silent wrong picks), registration checks, parameter domains."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from edge_runtime.entries.metadata import EntryPoint, Param
from edge_runtime.entries.registry import Registry
from edge_runtime.errors import (
    AmbiguousReferenceError,
    DefinitionError,
    NoMatchError,
    ParameterValidationError,
    UnsafeCodeError,
)

HEADER = "from edge_runtime.semantic import Param, do, entry_point, load, narrate, semantic_function\n"

ADDERS = HEADER + '''

@semantic_function(
    "Add two numbers together",
    inputs={"the first number": 2, "the second number": 3},
    outputs={"the sum": 5},
)
def add_numbers(ctx):
    a = load(ctx, "the first number", float)
    b = load(ctx, "the second number", float)
    narrate(ctx, f"{a:g} + {b:g} = {a + b:g}")
    return {"the sum": a + b}


@semantic_function(
    "Add together two numbers",
    inputs={"the first number": 2, "the second number": 3},
    outputs={"the sum": 5},
)
def add_together(ctx):
    a = load(ctx, "the first number", float)
    b = load(ctx, "the second number", float)
    narrate(ctx, f"{b:g} + {a:g} = {a + b:g}")
    return {"the sum": a + b}
'''


def snapshot(registry: Registry):
    return (
        list(registry.functions),
        list(registry.entries),
        list(registry.sources),
        list(registry._descriptions),
        registry._vectors.copy(),
    )


def assert_unchanged(registry: Registry, before) -> None:
    after = snapshot(registry)
    assert after[:4] == before[:4]
    assert np.array_equal(after[4], before[4])


@pytest.fixture()
def adders(embedder):
    registry = Registry(embedder)
    assert registry.add_source(ADDERS, "adders.py") == ["add_numbers", "add_together"]
    return registry


# --------------------------------------------------------------------------------------------------
# Resolution
# --------------------------------------------------------------------------------------------------


def test_intent_with_nothing_above_threshold_is_a_no_match_error(adders):
    with pytest.raises(NoMatchError) as info:
        adders.resolve_function("fly a kite on the moon")
    err = info.value
    assert err.kind == "do"
    assert err.reference == "fly a kite on the moon"
    message = str(err)
    assert message.startswith("do reference 'fly a kite on the moon': no function description reaches threshold 0.55")
    assert "'Add two numbers together' (" in message
    assert "'Add together two numbers' (" in message
    assert {text for text, _ in err.candidates} == {"Add two numbers together", "Add together two numbers"}
    assert all(score < 0.55 for _, score in err.candidates)


def test_unresolvable_do_intent_fails_at_run_time_with_no_match(embedder):
    source = HEADER + '''

@semantic_function(
    "Schedule a dentist appointment",
    inputs={"the launch date": "2030-01-01"},
    outputs={"the plan": "..."},
    calls=["fly a kite on the moon"],
)
def schedule_dentist(ctx):
    date = load(ctx, "the launch date", str)
    narrate(ctx, f"Launching on {date}.")
    kite = do(ctx, "fly a kite on the moon", {"the launch date": date})
    return {"the plan": kite}


TRIP = entry_point(
    id="trip", description="Plan a moon trip", template="Plan a moon trip on {date}",
    params=[Param(name="date", description="the launch date", type=str, original="2030-01-01")],
    root="schedule a dentist appointment",
)
'''
    registry = Registry(embedder)
    registry.add_source(source, "trip.py")  # registration does not resolve intents
    with pytest.raises(NoMatchError) as info:
        registry.run("trip", {"date": "2031-05-05"})
    assert info.value.reference == "fly a kite on the moon"
    assert "no function description reaches threshold" in str(info.value)
    assert "'Schedule a dentist appointment'" in str(info.value)


def test_near_identical_descriptions_are_ambiguous(adders):
    with pytest.raises(AmbiguousReferenceError) as info:
        adders.resolve_function("add two numbers")
    err = info.value
    assert err.kind == "do"
    assert "do reference 'add two numbers': two candidates within margin 0.03" in str(err)
    assert "'Add two numbers together'" in str(err)
    assert "'Add together two numbers'" in str(err)
    assert [text for text, _ in err.candidates[:2]] == ["Add two numbers together", "Add together two numbers"]


def test_exact_description_resolves_despite_a_near_twin(adders):
    assert adders.resolve_function("add together two numbers").name == "add_together"
    assert adders.resolve_function("  ADD two numbers   TOGETHER ").name == "add_numbers"


AMBIGUOUS_LOAD = HEADER + '''

@semantic_function(
    "Estimate the travel time of a journey",
    inputs={"the distance in miles": 60.0, "the distance in kilometres": 96.6},
    outputs={"the travel time in hours": 1.0},
)
def travel_time(ctx):
    distance = load(ctx, "the distance", float)
    narrate(ctx, f"At 60 per hour, {distance:g} takes {distance / 60:g} hours.")
    return {"the travel time in hours": distance / 60}


TRAVEL = entry_point(
    id="travel", description="Travel time of a journey",
    template="How long does {miles} miles ({km} km) take?",
    params=[
        Param(name="miles", description="the distance in miles", original=60.0),
        Param(name="km", description="the distance in kilometres", original=96.6),
    ],
    root="estimate the travel time of a journey",
)
'''


def test_ambiguous_load_query_between_two_payload_keys(embedder):
    registry = Registry(embedder)
    registry.add_source(AMBIGUOUS_LOAD, "travel.py")
    with pytest.raises(AmbiguousReferenceError) as info:
        registry.run("travel", {"miles": 60.0, "km": 96.6})
    err = info.value
    assert err.kind == "load"
    assert err.reference == "the distance"
    assert "load reference 'the distance': two candidates within margin 0.03" in str(err)
    assert {text for text, _ in err.candidates} == {"the distance in miles", "the distance in kilometres"}


# --------------------------------------------------------------------------------------------------
# Registration errors
# --------------------------------------------------------------------------------------------------

GOOD_FUNCTION = '''

@semantic_function(
    "Double a number",
    inputs={"the number": 2},
    outputs={"the double": 4},
)
def double(ctx):
    n = load(ctx, "the number", float)
    narrate(ctx, f"{n:g} x 2 = {2 * n:g}")
    return {"the double": 2 * n}
'''

BAD_SOURCES = {
    "calls-mismatch": (
        '''
@semantic_function(
    "Quadruple a number",
    inputs={"the number": 2},
    outputs={"the quadruple": 8},
    calls=["halve a number"],
)
def quadruple(ctx):
    n = load(ctx, "the number", float)
    narrate(ctx, "doubling twice")
    twice = do(ctx, "double a number", {"the number": n})["the double"]
    return {"the quadruple": 2 * twice}
''',
        "quadruple: declares calls ['halve a number'] but its do() intents are ['double a number']",
    ),
    "never-narrates": (
        '''
@semantic_function("Triple a number", inputs={"the number": 2}, outputs={"the triple": 6})
def triple(ctx):
    n = load(ctx, "the number", float)
    return {"the triple": 3 * n}
''',
        "triple: never narrates; every step of a cached solution must be explained",
    ),
    "return-keys-differ": (
        '''
@semantic_function("Triple a number", inputs={"the number": 2}, outputs={"the triple": 6})
def triple(ctx):
    n = load(ctx, "the number", float)
    narrate(ctx, "times three")
    return {"the tripled number": 3 * n}
''',
        "every return must be a dict literal with exactly the declared outputs ['the triple']",
    ),
    "return-not-a-dict-literal": (
        '''
@semantic_function("Triple a number", inputs={"the number": 2}, outputs={"the triple": 6})
def triple(ctx):
    n = load(ctx, "the number", float)
    narrate(ctx, "times three")
    result = {"the triple": 3 * n}
    return result
''',
        "every return must be a dict literal with exactly the declared outputs ['the triple']",
    ),
    "non-literal-load-query": (
        '''
@semantic_function("Triple a number", inputs={"the number": 2}, outputs={"the triple": 6})
def triple(ctx):
    which = "number"
    n = load(ctx, f"the {which}", float)
    narrate(ctx, "times three")
    return {"the triple": 3 * n}
''',
        "bad.py:{line}: load() needs a literal description string",
    ),
    "payload-not-a-dict-literal": (
        '''
@semantic_function(
    "Quadruple a number",
    inputs={"the number": 2},
    outputs={"the quadruple": 8},
    calls=["double a number"],
)
def quadruple(ctx):
    n = load(ctx, "the number", float)
    narrate(ctx, "doubling twice")
    payload = {"the number": n}
    twice = do(ctx, "double a number", payload)["the double"]
    return {"the quadruple": 2 * twice}
''',
        "bad.py:{line}: do() payloads must be a dict literal with description strings as keys",
    ),
    "non-literal-intent": (
        '''
@semantic_function(
    "Quadruple a number",
    inputs={"the number": 2},
    outputs={"the quadruple": 8},
)
def quadruple(ctx):
    n = load(ctx, "the number", float)
    narrate(ctx, "doubling twice")
    twice = do(ctx, "double " + "a number", {"the number": n})["the double"]
    return {"the quadruple": 2 * twice}
''',
        "bad.py:{line}: do() needs a literal intent string",
    ),
    "empty-description": (
        '''
@semantic_function("   ", inputs={"the number": 2}, outputs={"the triple": 6})
def triple(ctx):
    narrate(ctx, "times three")
    return {"the triple": 3}
''',
        "triple: empty description",
    ),
}


@pytest.mark.parametrize("case", list(BAD_SOURCES))
def test_inconsistent_definitions_are_refused_and_registry_unchanged(embedder, case):
    body, message = BAD_SOURCES[case]
    registry = Registry(embedder)
    registry.add_source(HEADER + GOOD_FUNCTION, "good.py")
    before = snapshot(registry)
    # good function first, so a partial registration would be visible
    source = HEADER + GOOD_FUNCTION.replace('"Double a number"', '"Double a value"').replace(
        "def double", "def double_value"
    ) + body
    if "{line}" in message:  # the offending call is the only do()/load() spelled with a non-literal
        marker = next(m for m in ('f"the {which}"', "payload)", '"double " +') if m in body)
        message = message.format(line=next(i for i, t in enumerate(source.splitlines(), 1) if marker in t))
    with pytest.raises(DefinitionError) as info:
        registry.add_source(source, "bad.py")
    assert message in str(info.value)
    assert_unchanged(registry, before)


def test_duplicate_module_is_refused(embedder):
    registry = Registry(embedder)
    registry.add_source(HEADER + GOOD_FUNCTION, "numbers.py")
    before = snapshot(registry)
    other = HEADER + GOOD_FUNCTION.replace('"Double a number"', '"Double a value"').replace(
        "def double", "def double_value"
    )
    with pytest.raises(DefinitionError, match="module 'numbers' is already registered"):
        registry.add_source(other, "elsewhere/numbers.py")
    assert_unchanged(registry, before)
    # the same source under another module name collides on the function name instead
    with pytest.raises(DefinitionError, match="other.py: a function named 'double' is already registered"):
        registry.add_source(HEADER + GOOD_FUNCTION, "other.py")
    assert_unchanged(registry, before)


def _entry(entry_id: str, root: str = "double a number") -> str:
    return f'''

E = entry_point(
    id="{entry_id}", description="Double a number", template="Double {{n}}",
    params=[Param(name="n", description="the number", original=2.0)],
    root="{root}",
)
'''


def test_duplicate_entry_id_is_refused(embedder):
    registry = Registry(embedder)
    registry.add_source(HEADER + GOOD_FUNCTION + _entry("double"), "first.py")
    before = snapshot(registry)
    second = HEADER + GOOD_FUNCTION.replace('"Double a number"', '"Double a value"').replace(
        "def double", "def double_value"
    ) + _entry("double", "double a value")
    with pytest.raises(DefinitionError, match="second.py: entry 'double' is already registered"):
        registry.add_source(second, "second.py")
    assert_unchanged(registry, before)
    assert registry.entries["double"].module == "first"


def test_duplicate_entry_id_within_one_source_is_refused(embedder):
    registry = Registry(embedder)
    source = HEADER + GOOD_FUNCTION + _entry("double") + _entry("double").replace("E = ", "F = ")
    with pytest.raises(DefinitionError, match="entry ids must be unique"):
        registry.add_source(source, "twice.py")


def test_module_level_alias_does_not_duplicate_a_function(embedder):
    registry = Registry(embedder)
    registry.add_source(HEADER + GOOD_FUNCTION + "\ntwice = double\n", "alias.py")
    assert registry._descriptions == ["Double a number"]
    assert registry.resolve_function("double a number").name == "double"


def test_hostile_source_is_refused_and_registry_unchanged(embedder):
    registry = Registry(embedder)
    registry.add_source(HEADER + GOOD_FUNCTION, "good.py")
    before = snapshot(registry)
    hostile = (
        HEADER
        + GOOD_FUNCTION.replace('"Double a number"', '"Double a value"').replace("def double", "def double_value")
        + "\nimport os\n"
    )
    line = hostile.splitlines().index("import os") + 1
    with pytest.raises(UnsafeCodeError) as info:
        registry.add_source(hostile, "evil.py")
    err = info.value
    assert (err.filename, err.line, err.rule) == ("evil.py", line, "import")
    assert str(err) == f"evil.py:{line}: [import] module 'os' is not allowed"
    assert_unchanged(registry, before)


def test_hostile_call_inside_a_function_is_refused_before_it_can_run(embedder):
    registry = Registry(embedder)
    hostile = HEADER + GOOD_FUNCTION.replace(
        'n = load(ctx, "the number", float)', 'n = load(ctx, "the number", float)\n    open("/etc/passwd")'
    )
    with pytest.raises(UnsafeCodeError) as info:
        registry.add_source(hostile, "evil.py")
    assert info.value.rule == "forbidden-call"
    assert "'open' is not allowed" in str(info.value)
    assert registry.functions == {} and registry.sources == {} and registry._vectors.shape[0] == 0


# --------------------------------------------------------------------------------------------------
# Entry points and parameters
# --------------------------------------------------------------------------------------------------


def test_template_slots_must_match_params_at_registration(embedder):
    registry = Registry(embedder)
    source = HEADER + GOOD_FUNCTION + '''

E = entry_point(
    id="double", description="Double a number", template="Double {n} and {m}",
    params=[Param(name="n", description="the number", original=2.0)],
    root="double a number",
)
'''
    with pytest.raises(DefinitionError) as info:
        registry.add_source(source, "slots.py")
    assert "entry 'double': template slots ['m', 'n'] do not match parameters ['n']" in str(info.value)
    assert registry.entries == {} and registry.functions == {}


@pytest.mark.parametrize(
    ("template", "slots"),
    [("Double it", "[]"), ("Double {x}", "['x']"), ("Double {n} {n.real}", "['n', 'n.real']")],
)
def test_template_slots_must_match_params(template, slots):
    with pytest.raises(DefinitionError) as info:
        EntryPoint(id="e", description="d", template=template, params=(Param("n", "the number"),), root="r")
    assert f"template slots {slots} do not match parameters ['n']" in str(info.value)


def test_duplicate_param_names_are_refused():
    with pytest.raises(DefinitionError, match="duplicate parameter names"):
        EntryPoint(
            id="e", description="d", template="{n}", params=(Param("n", "a"), Param("n", "b")), root="r"
        )


def test_param_declaration_checks():
    with pytest.raises(DefinitionError, match="unsupported type"):
        Param("n", "the number", type=list)
    with pytest.raises(DefinitionError, match="must be an identifier"):
        Param("the number", "the number")


def _validation_error(param: Param, value) -> ParameterValidationError:
    with pytest.raises(ParameterValidationError) as info:
        param.validate(value)
    assert info.value.param == param.name
    return info.value


def test_param_minimum_inclusive_and_exclusive():
    inclusive = Param("temperature", "the temperature", minimum=-273.15)
    assert inclusive.validate(-273.15) == -273.15
    err = _validation_error(inclusive, -300)
    assert str(err) == "parameter 'temperature': -300.0 violates >= -273.15"

    exclusive = Param("volume", "the volume", minimum=0, exclusive_minimum=True)
    assert exclusive.validate(1e-9) == 1e-9
    err = _validation_error(exclusive, 0)
    assert str(err) == "parameter 'volume': 0.0 violates > 0"


def test_param_maximum():
    param = Param("moles", "amount of gas", maximum=10)
    assert param.validate(10) == 10.0
    err = _validation_error(param, 10.5)
    assert str(err) == "parameter 'moles': 10.5 violates <= 10"


def test_param_choices():
    param = Param("unit", "the unit", type=str, choices=["celsius", "kelvin"])
    assert param.choices == ("celsius", "kelvin")
    assert param.validate("kelvin") == "kelvin"
    err = _validation_error(param, "rankine")
    assert str(err) == "parameter 'unit': 'rankine' is not one of ['celsius', 'kelvin']"


@pytest.mark.parametrize(
    ("kind", "value", "expected"),
    [
        (int, 3, 3),
        (int, 3.0, 3),
        (int, Fraction(6, 2), 3),
        (float, 2, 2.0),
        (float, Fraction(1, 4), 0.25),
        (Fraction, 0.5, Fraction(1, 2)),
        (Fraction, 3, Fraction(3)),
        (str, "celsius", "celsius"),
        (bool, False, False),
    ],
)
def test_param_type_coercion(kind, value, expected):
    result = Param("x", "a value", type=kind).validate(value)
    assert result == expected and type(result) is type(expected)


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        (int, True),  # bool is not accepted as an int
        (float, False),  # nor as a float
        (int, 3.5),
        (int, "3"),
        (float, "2.5"),
        (str, "   "),
        (str, 5),
        (bool, 1),
        (bool, "yes"),
        (Fraction, "1/2"),
    ],
)
def test_param_type_mismatch(kind, value):
    param = Param("x", "a value", type=kind)
    err = _validation_error(param, value)
    words = {int: "a whole number", float: "a number", str: "a word or phrase", bool: "yes or no",
             Fraction: "a number or fraction"}[kind]
    assert str(err).startswith("parameter 'x': ") and str(err).endswith(f": expected {words}")
    assert "got" not in str(err) and "Fraction(" not in str(err)


def test_param_missing():
    err = _validation_error(Param("moles", "amount of gas"), None)
    assert str(err) == "parameter 'moles': missing"


def test_param_nan_is_outside_any_numeric_domain():
    with pytest.raises(ParameterValidationError):
        Param("x", "a value", minimum=0, maximum=10).validate(float("nan"))


@pytest.mark.parametrize("value", [float("inf"), float("nan")], ids=["inf", "nan"])
def test_param_int_refuses_non_finite_floats(value):
    with pytest.raises(ParameterValidationError):
        Param("n", "a count", type=int).validate(value)


def _two_param_entry() -> EntryPoint:
    return EntryPoint(
        id="gas",
        description="d",
        template="{moles} mol in {unit}",
        params=(
            Param("moles", "amount of gas in moles", minimum=0, exclusive_minimum=True),
            Param("unit", "unit of the volume", type=str, choices=("litres", "millilitres")),
        ),
        root="r",
    )


def test_entry_validate_accepts_declared_parameters():
    entry = _two_param_entry()
    assert entry.validate({"moles": 2, "unit": "litres"}) == {"moles": 2.0, "unit": "litres"}
    assert entry.payload({"moles": 2.0, "unit": "litres"}) == {
        "amount of gas in moles": 2.0,
        "unit of the volume": "litres",
    }


def test_entry_validate_refuses_unknown_extra_parameters():
    entry = _two_param_entry()
    with pytest.raises(ParameterValidationError) as info:
        entry.validate({"moles": 2, "unit": "litres", "pressure": 101.3})
    assert info.value.param == "pressure"
    assert str(info.value) == "parameter 'pressure': not a parameter of this entry"


def test_entry_validate_reports_missing_and_out_of_domain():
    entry = _two_param_entry()
    with pytest.raises(ParameterValidationError, match="parameter 'unit': missing"):
        entry.validate({"moles": 2})
    with pytest.raises(ParameterValidationError, match="parameter 'moles': -1.0 violates > 0"):
        entry.validate({"moles": -1, "unit": "litres"})


def test_registry_run_validates_parameters_before_running(embedder):
    registry = Registry(embedder)
    registry.add_source(HEADER + GOOD_FUNCTION + _entry("double"), "double.py")
    assert registry.run("double", {"n": 4}).result == {"the double": 8.0}
    with pytest.raises(ParameterValidationError, match="parameter 'm': not a parameter of this entry"):
        registry.run("double", {"n": 4, "m": 1})
    with pytest.raises(ParameterValidationError, match="parameter 'n': True: expected a number"):
        registry.run("double", {"n": True})

"""The primitives entry code is written in: load/do layering, conversion, the target-LM steps, tools, call depth."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction

import pytest
from fakes import ScriptedTargetLM

from edge_runtime.entries.compiler import compile_entry
from edge_runtime.entries.context import Context, NarrationStep
from edge_runtime.entries.conversion import convert
from edge_runtime.entries.metadata import SemanticFunction
from edge_runtime.entries.registry import Registry
from edge_runtime.errors import (
    CompileError,
    ConversionError,
    ExecutionError,
    NoMatchError,
    TargetModelError,
    ToolNotAllowedError,
)
from edge_runtime.model.target_lm import TargetLM
from edge_runtime.semantic import (
    call_function,
    extract,
    invoke_tool,
    lm,
    load,
    smart_convert,
)

# --------------------------------------------------------------------------------------------------
# Context layer isolation
# --------------------------------------------------------------------------------------------------

SIBLINGS = '''
"""A parent that calls two siblings; the second may try to read what only the first received."""
from edge_runtime.semantic import Param, do, entry_point, load, narrate, semantic_function


@semantic_function(
    "Remember a secret password",
    inputs={"the secret password": "swordfish"},
    outputs={"the password length": 9},
)
def remember_secret(ctx):
    secret = load(ctx, "the secret password")
    narrate(ctx, f"A received a secret of {len(secret)} characters.")
    return {"the password length": len(secret)}


@semantic_function(
    "Describe the colour of a car",
    inputs={"the colour of the car": "red"},
    outputs={"the description": "a red car next to 3 apples"},
)
def describe_car(ctx):
    colour = load(ctx, "the colour of the car")
    apples = load(ctx, "the number of apples in the basket")
    narrate(ctx, f"B sees a {colour} car and, from an outer layer, {apples} apples.")
    if colour == "blue":
        leaked = load(ctx, "the secret password")
        return {"the description": f"a {colour} car, secret {leaked}"}
    return {"the description": f"a {colour} car next to {apples} apples"}


@semantic_function(
    "Run two sibling steps one after the other",
    inputs={"the number of apples in the basket": 3, "the colour of the car": "red"},
    outputs={"the summary": "9 / a red car next to 3 apples"},
    calls=["remember a secret password", "describe the colour of a car"],
)
def run_siblings(ctx):
    apples = load(ctx, "the number of apples in the basket", int)
    narrate(ctx, f"The parent holds {apples} apples.")
    length = do(ctx, "remember a secret password", {"the secret password": "swordfish"})["the password length"]
    text = do(ctx, "describe the colour of a car", {
        "the colour of the car": load(ctx, "the colour of the car"),
    })["the description"]
    return {"the summary": f"{length} / {text}"}


SIBLINGS_ENTRY = entry_point(
    id="siblings",
    description="Two sibling steps under one parent",
    template="{apples} apples and a {colour} car",
    params=[
        Param(name="apples", description="the number of apples in the basket", type=int, original=3),
        Param(name="colour", description="the colour of the car", type=str, original="red",
              choices=("red", "blue")),
    ],
    root="run two sibling steps one after the other",
)
'''


@pytest.fixture(scope="module")
def sibling_registry(embedder):
    registry = Registry(embedder)
    registry.add_source(SIBLINGS, "siblings.py")
    return registry


def test_callee_sees_its_payload_and_ancestor_layers(sibling_registry):
    execution = sibling_registry.run("siblings", {"apples": 3, "colour": "red"})
    # B read the colour from its own payload and the apples from the root's layer below it.
    assert execution.result == {"the summary": "9 / a red car next to 3 apples"}
    assert execution.narration == [
        NarrationStep("Run two sibling steps one after the other", "The parent holds 3 apples."),
        NarrationStep("Remember a secret password", "A received a secret of 9 characters."),
        NarrationStep("Describe the colour of a car", "B sees a red car and, from an outer layer, 3 apples."),
    ]


def test_sibling_cannot_see_what_only_the_other_sibling_received(sibling_registry):
    with pytest.raises(NoMatchError) as info:
        sibling_registry.run("siblings", {"apples": 3, "colour": "blue"})
    err = info.value
    assert err.kind == "load"
    assert err.reference == "the secret password"
    assert "load reference 'the secret password'" in str(err)
    assert "no value in any memory layer matches" in str(err)
    # Only the root's layer (bottom) and B's own layer were searched; A's layer was popped on return.
    assert [key for key, _ in err.candidates] == [
        "the number of apples in the basket", "the colour of the car",  # root layer
        "the colour of the car",  # B's layer
    ]


def test_top_layer_shadows_lower_layers_and_pop_restores(embedder):
    ctx = Context(resolver=Registry(embedder))
    ctx.push({"the speed of the train": 80, "the name of the station": "York"}, "outer")
    ctx.push({"the speed of the train": 120}, "inner")
    assert ctx.current_function == "inner"
    assert load(ctx, "the speed of the train") == 120
    assert load(ctx, "the name of the station") == "York"
    ctx.pop()
    assert ctx.current_function == "outer"
    assert load(ctx, "the speed of the train") == 80
    ctx.pop()
    assert ctx.layers == [] and ctx.frames == []
    assert ctx.current_function == "<entry>"


def test_layer_is_popped_even_when_the_callee_raises(embedder):
    def explode(ctx):
        raise ValueError("boom")

    function = SemanticFunction("explode", "Explode on purpose", {}, {"nothing": None}, (), explode)
    ctx = Context(resolver=Registry(embedder))
    ctx.push({"the outer value": 1}, "outer")
    with pytest.raises(ValueError, match="boom"):
        call_function(ctx, function, {"the inner value": 2})
    assert ctx.layers == [{"the outer value": 1}]
    assert ctx.frames == ["outer"]


def test_load_without_resolver_is_refused():
    ctx = Context()
    ctx.push({"x": 1}, "f")
    with pytest.raises(ExecutionError, match="load\\(\\) needs a resolver"):
        load(ctx, "x")


# --------------------------------------------------------------------------------------------------
# load() with d_type coercion
# --------------------------------------------------------------------------------------------------


def test_load_coerces_to_the_requested_type(embedder):
    ctx = Context(resolver=Registry(embedder))
    ctx.push({"the count of items": "1,200", "the fraction of items sold": "1/2", "is it raining": "yes"}, "f")
    count = load(ctx, "the count of items", int)
    assert count == 1200 and type(count) is int
    assert load(ctx, "the fraction of items sold", float) == 0.5
    assert load(ctx, "the fraction of items sold", Fraction) == Fraction(1, 2)
    assert load(ctx, "the fraction of items sold") == "1/2"  # no d_type: the value as stored
    assert load(ctx, "is it raining", bool) is True
    with pytest.raises(ConversionError, match="'1/2' is not a whole number"):
        load(ctx, "the fraction of items sold", int)


# --------------------------------------------------------------------------------------------------
# convert()
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "d_type", "expected"),
    [
        ("1,200", int, 1200),
        ("1,200", float, 1200.0),
        ("-1,234,567.5", float, -1234567.5),
        ("3.5", float, 3.5),
        ("3.0", int, 3),
        ("1/2", float, 0.5),
        ("1/2", Fraction, Fraction(1, 2)),
        (" 3 / 4 ", Fraction, Fraction(3, 4)),
        ("-4", int, -4),
        ("\u22124", int, -4),  # a typographic minus sign
        (7, float, 7.0),
        (2.0, int, 2),
        (2.0, str, "2"),
        ("12", Decimal, Decimal(12)),
        ("yes", bool, True),
        ("Off", bool, False),
        ("1", bool, True),
        ("0", bool, False),
        (True, bool, True),
        (False, bool, False),
        ((1, 2), list, [1, 2]),
    ],
)
def test_convert_accepts_clean_values(value, d_type, expected):
    result = convert(value, d_type)
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("value", "d_type", "message"),
    [
        ("3.5", int, "not a whole number"),
        ("1,20", int, "not a plain number"),
        ("12abc", float, "not a plain number"),
        ("", float, "not a plain number"),
        ("three", int, "not a plain number"),
        ("1/0", float, "divides by zero"),
        ("nan", float, "not a finite number"),
        (None, float, "cannot read a number from NoneType"),
        (True, int, "is a truth value, not a number"),
        (False, float, "is a truth value, not a number"),
        ("maybe", bool, "is not a yes/no value"),
        (2, bool, "is not a yes/no value"),
        ("abc", list, "cannot convert 'abc' to list"),
    ],
)
def test_convert_refuses_bad_values(value, d_type, message):
    with pytest.raises(ConversionError) as info:
        convert(value, d_type)
    assert message in str(info.value)


@pytest.mark.parametrize("value", ["3.5", 3.5])
def test_convert_to_decimal_keeps_fractional_values(value):
    assert convert(value, Decimal) == Decimal("3.5")


@pytest.mark.parametrize(
    ("value", "d_type"),
    [("inf", float), ("1e400", float), (float("nan"), int), (float("inf"), int)],
    ids=["inf-str", "1e400", "nan-float-to-int", "inf-float-to-int"],
)
def test_convert_refuses_non_finite_values_with_conversion_error(value, d_type):
    with pytest.raises(ConversionError):
        convert(value, d_type)


# --------------------------------------------------------------------------------------------------
# smart_convert()
# --------------------------------------------------------------------------------------------------


def test_smart_convert_clean_value_never_asks_the_model():
    model = ScriptedTargetLM(default="999")
    ctx = Context(target_lm=model)
    assert smart_convert(ctx, "1,200", int) == 1200
    assert smart_convert(ctx, "1/2", float) == 0.5
    # numbers people write are read by the number reader, not the model
    assert smart_convert(ctx, "1 1/2", float) == 1.5
    assert smart_convert(ctx, "two and a half", float) == 2.5
    assert smart_convert(ctx, "forty-two", int) == 42 and smart_convert(ctx, "half a dozen", int) == 6
    assert model.prompts == []


def test_smart_convert_asks_the_model_when_a_unit_is_attached():
    """'1 1/2 cups' as a bare float would drop the unit silently; the model is asked instead."""
    model = ScriptedTargetLM(default="1.5")
    assert smart_convert(Context(target_lm=model), "1 1/2 cups", float) == 1.5
    assert len(model.prompts) == 1


def test_smart_convert_messy_value_asks_the_model():
    model = ScriptedTargetLM(default=" 3 ")
    ctx = Context(target_lm=model)
    result = smart_convert(ctx, "III", int)
    assert result == 3 and type(result) is int
    assert len(model.prompts) == 1
    assert "Python int literal" in model.prompts[0]
    assert "Value: III" in model.prompts[0]


def test_smart_convert_refuses_a_non_literal_answer():
    ctx = Context(target_lm=ScriptedTargetLM(default="about three"))
    with pytest.raises(ConversionError) as info:
        smart_convert(ctx, "roughly three", float)
    assert "'about three' is not a Python literal" in str(info.value)


def test_smart_convert_refuses_a_literal_of_the_wrong_type():
    ctx = Context(target_lm=ScriptedTargetLM(default="'abc'"))
    with pytest.raises(ConversionError) as info:
        smart_convert(ctx, "a few", float)
    assert "target model answer \"'abc'\" is not a float" in str(info.value)
    assert isinstance(info.value.__cause__, ConversionError)


def test_smart_convert_without_a_model_is_a_target_model_error():
    ctx = Context()
    assert smart_convert(ctx, "42", int) == 42  # clean values need no model
    with pytest.raises(TargetModelError, match="none is configured"):
        smart_convert(ctx, "several", int)


# --------------------------------------------------------------------------------------------------
# lm() and extract()
# --------------------------------------------------------------------------------------------------


class OffScriptLM(TargetLM):
    """Answers something no caller asked for."""

    def __init__(self, answer: str) -> None:
        self.answer = answer

    def generate(self, prompt: str, *, max_new_tokens: int = 64, stop: Sequence[str] = ()) -> str:
        return self.answer

    def choose(self, prompt: str, options: Sequence[str]) -> str:
        return self.answer


def test_lm_with_choices_returns_one_of_them():
    model = ScriptedTargetLM()
    ctx = Context(target_lm=model)
    choices = ["celsius", "fahrenheit", "kelvin"]
    assert lm(ctx, "Which unit is the temperature in?", "it was 300 Kelvin outside", choices) == "kelvin"
    assert lm(ctx, "Which unit is the temperature in?", "it was 80 Fahrenheit", choices) == "fahrenheit"
    assert "Task: Which unit is the temperature in?" in model.prompts[0]


def test_lm_refuses_an_answer_outside_the_choices():
    ctx = Context(target_lm=OffScriptLM("purple"))
    with pytest.raises(TargetModelError) as info:
        lm(ctx, "Which colour?", "a red car", choices=["red", "blue"])
    assert "'purple'" in str(info.value)
    assert "['red', 'blue']" in str(info.value)


def test_lm_free_text_is_stripped_and_needs_a_model():
    ctx = Context(target_lm=ScriptedTargetLM({"Summarise": "  a short summary  "}))
    assert lm(ctx, "Summarise the text", "long text") == "a short summary"
    with pytest.raises(TargetModelError, match="none is configured"):
        lm(Context(), "Summarise the text", "long text")


def test_extract_accepts_verbatim_text():
    model = ScriptedTargetLM({"the city": "Paris"})
    ctx = Context(target_lm=model)
    assert extract(ctx, "the city", "I moved to Paris in 2019.") == "Paris"
    assert "Text: I moved to Paris in 2019." in model.prompts[0]


@pytest.mark.parametrize("answer", ["London", "paris", ""])
def test_extract_refuses_non_verbatim_answers(answer):
    ctx = Context(target_lm=ScriptedTargetLM({"the city": answer}))
    with pytest.raises(TargetModelError) as info:
        extract(ctx, "the city", "I moved to Paris in 2019.")
    assert f"extracted {answer!r} for 'the city'" in str(info.value)
    assert "not verbatim in the text" in str(info.value)


# --------------------------------------------------------------------------------------------------
# invoke_tool()
# --------------------------------------------------------------------------------------------------

TOOL_SOURCE = '''
from edge_runtime.semantic import Param, entry_point, invoke_tool, load, narrate, semantic_function


@semantic_function(
    "Look up the current exchange rate with a host tool",
    inputs={"the currency code": "EUR"},
    outputs={"the exchange rate": 1.1},
)
def exchange_rate(ctx):
    currency = load(ctx, "the currency code", str)
    rate = invoke_tool(ctx, "exchange_rate", {"currency": currency})
    narrate(ctx, f"The host says 1 {currency} = {rate} USD.")
    return {"the exchange rate": rate}


RATE = entry_point(
    id="exchange-rate",
    description="Current exchange rate of a currency",
    template="What is the exchange rate of {code}?",
    params=[Param(name="code", description="the currency code", type=str, original="EUR")],
    root="look up the current exchange rate with a host tool",
)
'''


def test_invoke_tool_reaches_a_registered_tool_and_refuses_others(embedder):
    registry = Registry(embedder)
    registry.add_source(TOOL_SOURCE, "rates.py")
    calls = []

    def rate_tool(currency):
        calls.append(currency)
        return 1.25

    execution = registry.run("exchange-rate", {"code": "GBP"}, tools={"exchange_rate": rate_tool})
    assert execution.result == {"the exchange rate": 1.25}
    assert calls == ["GBP"]
    with pytest.raises(ToolNotAllowedError) as info:
        registry.run("exchange-rate", {"code": "GBP"}, tools={"weather": lambda: None})
    assert "tool 'exchange_rate' is not registered by the host" in str(info.value)
    assert "['weather']" in str(info.value)


def test_invoke_tool_directly():
    ctx = Context(tools={"add": lambda a, b: a + b})
    assert invoke_tool(ctx, "add", {"a": 2, "b": 3}) == 5
    with pytest.raises(ToolNotAllowedError, match="tool 'shell' is not registered"):
        invoke_tool(ctx, "shell", {"cmd": "ls"})


# --------------------------------------------------------------------------------------------------
# Maximum call depth
# --------------------------------------------------------------------------------------------------

COUNTDOWN = '''
from edge_runtime.semantic import Param, do, entry_point, load, narrate, semantic_function


@semantic_function(
    "Count down from a number recursively",
    inputs={"the number to count down from": 3},
    outputs={"the number of steps taken": 3},
    calls=["count down from a number recursively"],
)
def countdown(ctx):
    n = load(ctx, "the number to count down from", int)
    narrate(ctx, f"{n}...")
    if n <= 0:
        return {"the number of steps taken": 0}
    steps = do(ctx, "count down from a number recursively", {"the number to count down from": n - 1})
    return {"the number of steps taken": steps["the number of steps taken"] + 1}


COUNTDOWN_ENTRY = entry_point(
    id="countdown",
    description="Count down from a number",
    template="Count down from {n}",
    params=[Param(name="n", description="the number to count down from", type=int, original=3, minimum=0)],
    root="count down from a number recursively",
)
'''


@pytest.fixture(scope="module")
def countdown_registry(embedder):
    registry = Registry(embedder)
    registry.add_source(COUNTDOWN, "countdown.py")
    return registry


def test_recursion_within_max_depth_runs(countdown_registry):
    # n=31 needs 32 nested frames: exactly the default max_depth.
    execution = countdown_registry.run("countdown", {"n": 31})
    assert execution.result == {"the number of steps taken": 31}
    assert len(execution.narration) == 32


def test_recursion_beyond_max_depth_is_an_execution_error(countdown_registry):
    with pytest.raises(ExecutionError) as info:
        countdown_registry.run("countdown", {"n": 32})
    assert "call depth exceeds 32 at 'Count down from a number recursively'" in str(info.value)


def test_recursive_cycle_is_a_compile_error(countdown_registry):
    with pytest.raises(CompileError) as info:
        compile_entry(countdown_registry, "countdown")
    assert "recursive do() cycle through 'countdown'" in str(info.value)

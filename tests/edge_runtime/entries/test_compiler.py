"""Static compiler: what it refuses, what it emits, and that the output passes the same safety gates."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest
from fakes import ScriptedTargetLM

from edge_runtime.entries import sandbox
from edge_runtime.entries.compiler import LoadedCompiledEntry, compile_entry
from edge_runtime.entries.registry import Registry
from edge_runtime.entries.source_analysis import params_run_reads
from edge_runtime.entries.validator import validate_source
from edge_runtime.errors import CompileError, ExecutionError

EXAMPLES = Path(__file__).resolve().parents[3] / "bundles" / "examples"
HEADER = "from edge_runtime.semantic import Param, do, entry_point, lm, load, narrate, semantic_function\n"


@pytest.fixture(scope="module")
def gas_registry(embedder):
    """Only the two example files these tests rely on (the examples directory grows independently)."""
    registry = Registry(embedder)
    registry.add_file(EXAMPLES / "temperature_units.py")
    registry.add_file(EXAMPLES / "ideal_gas.py")
    return registry


GAS_VALUES = [
    {"moles": 2.0, "temperature": 25.0, "temperature_unit": "celsius", "volume": 10.0, "volume_unit": "litres"},
    {"moles": 0.5, "temperature": 212.0, "temperature_unit": "fahrenheit", "volume": 500.0,
     "volume_unit": "millilitres"},
    {"moles": 3.2, "temperature": 300.0, "temperature_unit": "kelvin", "volume": 0.02, "volume_unit": "cubic metres"},
]


def test_unknown_entry_is_a_compile_error(gas_registry):
    with pytest.raises(CompileError) as info:
        compile_entry(gas_registry, "no-such-entry")
    assert str(info.value) == "no entry 'no-such-entry' in the registry"


OUTER_LAYER = HEADER + '''

@semantic_function(
    "Add sales tax to a price",
    inputs={"the tax rate": 0.2, "the base price": 10.0},
    outputs={"the price with tax": 12.0},
)
def add_tax(ctx):
    rate = load(ctx, "the tax rate", float)
    base = load(ctx, "the base price", float)
    narrate(ctx, f"{base:g} + {rate:.0%} tax = {base * (1 + rate):g}")
    return {"the price with tax": base * (1 + rate)}


@semantic_function(
    "Work out the final price of an item",
    inputs={"the base price": 10.0},
    outputs={"the final price": 12.0},
    calls=["add sales tax to a price"],
)
def final_price(ctx):
    base = load(ctx, "the base price", float)
    narrate(ctx, f"The item costs {base:g} before tax.")
    with_tax = do(ctx, "add sales tax to a price", {"the tax rate": 0.2})["the price with tax"]
    return {"the final price": with_tax}


PRICE = entry_point(
    id="final-price", description="Final price of an item", template="What does a {price} item cost?",
    params=[Param(name="price", description="the base price", original=10.0, minimum=0)],
    root="work out the final price of an item",
)
'''


def test_callee_loading_from_an_outer_layer_runs_dynamically_but_does_not_compile(embedder):
    registry = Registry(embedder)
    registry.add_source(OUTER_LAYER, "prices.py")
    # Dynamic mode: the callee's load of "the base price" falls through to the root's layer.
    assert registry.run("final-price", {"price": 10.0}).result == {"the final price": pytest.approx(12.0)}
    with pytest.raises(CompileError) as info:
        compile_entry(registry, "final-price")
    message = str(info.value)
    assert message.startswith("prices.py:")
    assert (
        "final_price: add_tax loads 'the base price', which the call's payload ['the tax rate'] does not provide"
        in message
    )
    assert "values from outer layers are not compiled, pass them explicitly" in message


WRONG_OUTPUT = HEADER + '''

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
    "Describe the total of two numbers",
    inputs={"the first number": 2, "the second number": 3},
    outputs={"the description": "the total is 5"},
    calls=["add two numbers together"],
)
def describe_total(ctx):
    a = load(ctx, "the first number", float)
    b = load(ctx, "the second number", float)
    narrate(ctx, "Adding them up.")
    result = do(ctx, "add two numbers together", {"the first number": a, "the second number": b})
    colour = result["the colour of the sky"]
    return {"the description": f"the total is {colour}"}


TOTAL = entry_point(
    id="total", description="Describe a total", template="What is {a} plus {b}?",
    params=[
        Param(name="a", description="the first number", original=2.0),
        Param(name="b", description="the second number", original=3.0),
    ],
    root="describe the total of two numbers",
)
'''


def test_output_subscript_naming_no_output_is_a_compile_error(embedder):
    registry = Registry(embedder)
    registry.add_source(WRONG_OUTPUT, "total.py")
    with pytest.raises(CompileError) as info:
        compile_entry(registry, "total")
    line = WRONG_OUTPUT.splitlines().index('    colour = result["the colour of the sky"]') + 1
    assert str(info.value) == (
        f"total.py:{line} describe_total: 'the colour of the sky' names none of the outputs ['the sum']"
    )
    # Dynamic mode only finds out when the line runs.
    with pytest.raises(ExecutionError, match="KeyError.*the colour of the sky"):
        registry.run("total", {"a": 2.0, "b": 3.0})


def test_output_subscript_by_description_is_resolved_to_the_real_key(embedder):
    source = WRONG_OUTPUT.replace('result["the colour of the sky"]', 'result["the sum of the two numbers"]')
    registry = Registry(embedder)
    registry.add_source(source, "total.py")
    compiled = compile_entry(registry, "total")
    assert "result['the sum']" in compiled.source
    assert "the sum of the two numbers" not in compiled.source
    loaded = LoadedCompiledEntry(compiled.source, "total")
    assert loaded.run({"a": 2.0, "b": 3.0}).result == {"the description": "the total is 5.0"}
    assert registry.run("total", {"a": 2.0, "b": 3.0}).result == {"the description": "the total is 5.0"}


def test_ambiguous_intent_is_a_compile_error(embedder):
    source = WRONG_OUTPUT.replace('result["the colour of the sky"]', 'result["the sum"]') + '''

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
    source = source.replace('"add two numbers together"', '"add two numbers"')
    registry = Registry(embedder)
    registry.add_source(source, "total.py")
    with pytest.raises(CompileError) as info:
        compile_entry(registry, "total")
    message = str(info.value)
    assert message.startswith("describe_total: do reference 'add two numbers': two candidates within margin 0.03")
    assert "'Add two numbers together'" in message and "'Add together two numbers'" in message


def test_root_load_that_no_parameter_describes_is_a_compile_error(embedder):
    source = WRONG_OUTPUT.replace('result["the colour of the sky"]', 'result["the sum"]').replace(
        'b = load(ctx, "the second number", float)\n    narrate(ctx, "Adding them up.")',
        'b = load(ctx, "the wind speed in knots", float)\n    narrate(ctx, "Adding them up.")',
    )
    assert source.count("the wind speed in knots") == 1
    registry = Registry(embedder)
    registry.add_source(source, "total.py")
    with pytest.raises(CompileError) as info:
        compile_entry(registry, "total")
    assert str(info.value) == "entry total: root loads 'the wind speed in knots', which no parameter describes"


# --------------------------------------------------------------------------------------------------
# The compiled module
# --------------------------------------------------------------------------------------------------


def test_compiled_module_passes_the_validator_and_matches_dynamic_mode(gas_registry):
    compiled = compile_entry(gas_registry, "ideal-gas-pressure")
    assert isinstance(validate_source(compiled.source, "compiled.py"), ast.Module)
    assert compiled.functions == (
        "fahrenheit_to_celsius",
        "temperature_to_kelvin",
        "volume_to_cubic_metres",
        "ideal_gas_law_pressure",
        "gas_pressure_kilopascals",
    )
    loaded = LoadedCompiledEntry(compiled.source, "ideal_gas")
    assert loaded.meta["id"] == "ideal-gas-pressure"
    assert [p["name"] for p in loaded.meta["params"]] == ["moles", "temperature", "temperature_unit", "volume",
                                                         "volume_unit"]
    # It re-executes inside the sandbox: reduced builtins, no resolver needed.
    assert "open" not in loaded.namespace["__builtins__"]
    for values in GAS_VALUES:
        fast = loaded.run(values)
        slow = gas_registry.run("ideal-gas-pressure", values)
        assert fast.result == slow.result
        assert fast.narration == slow.narration
    assert loaded.run(GAS_VALUES[0]).result == {"pressure in kilopascals": 495.791}


def test_compiled_source_is_resolved_and_deterministic(gas_registry):
    first = compile_entry(gas_registry, "ideal-gas-pressure")
    second = compile_entry(gas_registry, "ideal-gas-pressure")
    assert first.source == second.source and first.sha256 == second.sha256
    tree = ast.parse(first.source)
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert "load" not in called and "do" not in called  # every reference was resolved at compile time
    imported = {alias.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for alias in n.names}
    assert imported == {"narrate", "convert"}
    assert _imports(first.source) == ["from edge_runtime.semantic import narrate, convert"]


PLAIN = HEADER + '''

@semantic_function(
    "Greet a person by name",
    inputs={"the name of the person": "Ada"},
    outputs={"the greeting": "Hello, Ada!"},
)
def greet(ctx):
    name = load(ctx, "the name of the person")
    narrate(ctx, f"Greeting {name}.")
    return {"the greeting": f"Hello, {name}!"}


GREET = entry_point(
    id="greet", description="Greet a person", template="Say hello to {name}",
    params=[Param(name="name", description="the name of the person", type=str, original="Ada")],
    root="greet a person by name",
)
'''

WITH_LM = HEADER + '''
import math


@semantic_function(
    "Classify the mood of a sentence and score its length",
    inputs={"the sentence": "I love this", "the weight of the score": 2.0},
    outputs={"the mood": "positive", "the score": 6.0},
)
def classify(ctx):
    sentence = load(ctx, "the sentence")
    weight = load(ctx, "the weight of the score", float)
    mood = lm(ctx, "Is the sentence positive or negative?", sentence, choices=["positive", "negative"])
    score = math.floor(weight * len(sentence.split()))
    narrate(ctx, f"The sentence reads as {mood}; score {score}.")
    return {"the mood": mood, "the score": score}


MOOD = entry_point(
    id="mood", description="Mood of a sentence", template="How does '{sentence}' feel (weight {weight})?",
    params=[
        Param(name="sentence", description="the sentence", type=str, original="I love this"),
        Param(name="weight", description="the weight of the score", original=2.0),
    ],
    root="classify the mood of a sentence and score its length",
)
'''


def _imports(source: str) -> list[str]:
    return [ast.unparse(n) for n in ast.parse(source).body if isinstance(n, (ast.Import, ast.ImportFrom))]


def test_compiled_source_imports_only_the_primitives_it_uses(embedder):
    registry = Registry(embedder)
    registry.add_source(PLAIN, "greet.py")
    registry.add_source(WITH_LM, "mood.py")

    plain = compile_entry(registry, "greet")
    assert _imports(plain.source) == ["from edge_runtime.semantic import narrate"]
    assert LoadedCompiledEntry(plain.source, "greet").run({"name": "Grace"}).result == {
        "the greeting": "Hello, Grace!"
    }

    with_lm = compile_entry(registry, "mood")
    assert _imports(with_lm.source) == ["from edge_runtime.semantic import narrate, convert, lm", "import math"]
    execution = LoadedCompiledEntry(with_lm.source, "mood").run(
        {"sentence": "what a negative day", "weight": 1.5}, target_lm=ScriptedTargetLM()
    )
    assert execution.result == {"the mood": "negative", "the score": 6}
    assert execution.narration_text() == ["The sentence reads as negative; score 6."]


# --------------------------------------------------------------------------------------------------
# Sandbox
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["open", "eval", "exec", "compile", "getattr", "setattr", "globals", "vars", "input", "breakpoint",
             "type", "object"]
)
def test_sandbox_builtins_lack_dangerous_names(name):
    assert name not in sandbox.SAFE_BUILTINS


def test_sandbox_builtins_are_read_only_and_import_is_guarded():
    with pytest.raises(TypeError):
        sandbox.SAFE_BUILTINS["open"] = builtins.open  # type: ignore[index]
    guarded = sandbox.SAFE_BUILTINS["__import__"]
    assert guarded is not builtins.__import__
    for forbidden in ("os", "os.path", "sys", "subprocess", "builtins", "importlib"):
        with pytest.raises(ImportError, match=f"import of '{forbidden}' is not allowed"):
            guarded(forbidden)
    with pytest.raises(ImportError, match="not allowed"):
        guarded("math", level=1)  # relative imports are refused too
    import math

    assert guarded("math") is math


@pytest.mark.parametrize("name", ["edge_runtime.route.embedder", "edge_runtime.entries.sandbox", "edge_runtime.entries.registry"])
def test_sandbox_import_hook_refuses_runtime_internals(name):
    guarded = sandbox.SAFE_BUILTINS["__import__"]
    with pytest.raises(ImportError, match="not allowed"):
        guarded(name, None, None, ("os",), 0)


def test_exec_source_uses_the_reduced_builtins():
    namespace = sandbox.exec_source("X = 1\n", "tiny.py", "tiny")
    assert namespace["X"] == 1
    assert namespace["__name__"] == "tiny"
    assert set(namespace["__builtins__"]) == set(sandbox.SAFE_BUILTINS)


# --------------------------------------------------------------------------------------------------
# Which parameters the compiled reasoning reads (told from the code, for the model path's agreement)

IGNORES_C = WRONG_OUTPUT.replace('result["the colour of the sky"]', 'result["the sum"]').replace(
    'Param(name="b", description="the second number", original=3.0),',
    'Param(name="b", description="the second number", original=3.0),\n'
    '        Param(name="c", description="the number of days, which the total ignores", original=4.0),',
).replace('template="What is {a} plus {b}?"', 'template="What is {a} plus {b}, {c} days from now?"')


def test_a_parameter_the_root_never_loads_is_unread(embedder):
    registry = Registry(embedder)
    registry.add_source(IGNORES_C, "total.py")
    compiled = compile_entry(registry, "total")
    assert params_run_reads(ast.parse(compiled.source)) == {"a", "b"}


def test_every_gas_parameter_is_read(gas_registry):
    compiled = compile_entry(gas_registry, "ideal-gas-pressure")
    assert params_run_reads(ast.parse(compiled.source)) == {p.name for p in compiled.entry.params}


@pytest.mark.parametrize("run", [
    "def run(ctx, params):\n    return describe_total(ctx, dict(params))\n",  # passed on whole
    "def run(ctx, params):\n    k = 'c'\n    return describe_total(ctx, {'the first number': params[k]})\n",
    "def run(ctx, params):\n    params = {}\n    return describe_total(ctx, params)\n",
    "def run(ctx, values):\n    return describe_total(ctx, {'the first number': values['a']})\n",
    "def run(ctx, params, *more):\n    return describe_total(ctx, {'the first number': params['a']})\n",
    "def go(ctx, params):\n    return describe_total(ctx, {'the first number': params['a']})\n",  # no run at all
    # run bound twice: Python keeps the second, which reads whatever it likes
    "def run(ctx, params):\n    return describe_total(ctx, {'the first number': params['a']})\n\n"
    "def run(ctx, params):\n    return describe_total(ctx, dict(params))\n",
    "def run(ctx, params):\n    return describe_total(ctx, {'the first number': params['a']})\n\nrun = other_run\n",
    "@trace\ndef run(ctx, params):\n    return describe_total(ctx, {'the first number': params['a']})\n",
])
def test_a_run_that_could_read_any_parameter_reads_them_all(run):
    """A module that uses ``params`` in any way but a subscript by a constant name may read any parameter: the
    analysis says it cannot tell, and the device treats every parameter as read (as before the analysis)."""
    assert params_run_reads(ast.parse(run)) is None

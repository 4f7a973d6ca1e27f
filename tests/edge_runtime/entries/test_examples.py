"""Every example entry in bundles/examples: right answers, dynamic == compiled, standalone compiled code.

Expected answers are computed here with plain arithmetic from the problem statement, never by
calling the entries' own code. Re-parameterised inputs are drawn deterministically inside each
parameter's domain (random.Random with a fixed seed) plus a few hand-picked edge cases.
"""

from __future__ import annotations

import ast
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from edge_runtime.entries.compiler import LoadedCompiledEntry, compile_entry
from edge_runtime.errors import ConversionError, ExecutionError, ParameterValidationError, TargetModelError
from tests.fakes import ScriptedTargetLM

# ---------------------------------------------------------------------------------------------
# Independent reference arithmetic (the "answer key" of each word problem)
# ---------------------------------------------------------------------------------------------

GAS_R = 8.314462618
LITRE_FACTORS = {"litres": 1e-3, "millilitres": 1e-6, "cubic metres": 1.0}


def kelvin_of(value: float, unit: str) -> float:
    if unit == "kelvin":
        return value
    if unit == "fahrenheit":
        value = (value - 32) * 5 / 9
    return value + 273.15


def expect_ideal_gas(v: dict[str, Any]) -> dict[str, Any]:
    pascals = v["moles"] * GAS_R * kelvin_of(v["temperature"], v["temperature_unit"]) / (
        v["volume"] * LITRE_FACTORS[v["volume_unit"]]
    )
    return {"pressure in kilopascals": round(pascals / 1000, 3)}


def expect_charles(v: dict[str, Any]) -> dict[str, Any]:
    t1 = kelvin_of(v["start_temperature"], v["temperature_unit"])
    t2 = kelvin_of(v["end_temperature"], v["temperature_unit"])
    return {"new volume of the gas in litres": v["volume"] * t2 / t1}


def expect_school_trip(v: dict[str, Any]) -> dict[str, Any]:
    people = v["students"] + v["teachers"]
    buses = math.ceil(people / v["seats"])
    total = buses * v["bus_price"] + v["students"] * v["ticket_price"]
    return {"number of buses needed for the trip": buses, "total cost of the trip in dollars": total}


def expect_recipe(v: dict[str, Any], amount: float) -> dict[str, Any]:
    return {"amount of the ingredient for the servings wanted": amount * v["wanted"] / v["servings"]}


# The published tariff, in cents: (base fee, per started kilogram) by zone; surcharge by handling class.
TARIFF = {"local": (495, 60), "national": (895, 140), "international": (2450, 520)}
SURCHARGE = {"fragile": 350, "perishable": 600, "standard": 0}


def expect_shipping(v: dict[str, Any], handling: str) -> dict[str, Any]:
    base, per_kg = TARIFF[v["zone"]]
    cents = base + per_kg * math.ceil(v["weight"]) + SURCHARGE[handling]
    return {"handling class of the parcel": handling, "total shipping cost in dollars": cents / 100}


PERIODS = {"annually": 1, "semiannually": 2, "quarterly": 4, "monthly": 12, "daily": 365}


def expect_compound(v: dict[str, Any]) -> dict[str, Any]:
    n = PERIODS[v["frequency"]]
    balance = v["principal"] * (1 + v["rate"] / 100 / n) ** (n * v["years"])
    return {"balance at the end in dollars": balance, "interest earned in dollars": balance - v["principal"]}


# ---------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------


@dataclass
class Case:
    values: dict[str, Any]
    expected: dict[str, Any]
    replies: dict[str, str] | None = None  # None: the entry needs no target model
    prompts: int = 0  # how many times the target model must be asked per run
    prompt_contains: str | None = None
    note: str = field(default="")

    def target_lm(self) -> ScriptedTargetLM | None:
        return None if self.replies is None else ScriptedTargetLM(self.replies)


def temperature_in(rng: random.Random, unit: str) -> float:
    """A physically sensible reading (about -50 °C to 400 °C) written in ``unit``."""
    low, high = {"celsius": (-50, 400), "fahrenheit": (-58, 752), "kelvin": (223.15, 673.15)}[unit]
    return round(rng.uniform(low, high), 1)


def ideal_gas_cases() -> list[Case]:
    rng = random.Random(20240501)
    volume_ranges = {"litres": (0.5, 1000), "millilitres": (50, 1e6), "cubic metres": (0.001, 20)}
    cases = []
    for _ in range(22):
        t_unit = rng.choice(["celsius", "fahrenheit", "kelvin"])
        v_unit = rng.choice(list(volume_ranges))
        values = {
            "moles": round(rng.uniform(0.05, 50), 3),
            "temperature": temperature_in(rng, t_unit),
            "temperature_unit": t_unit,
            "volume": round(rng.uniform(*volume_ranges[v_unit]), 3),
            "volume_unit": v_unit,
        }
        cases.append(Case(values, expect_ideal_gas(values)))
    return cases


def charles_cases() -> list[Case]:
    rng = random.Random(1787)  # the year Charles found his law
    cases = []
    for _ in range(22):
        unit = rng.choice(["celsius", "fahrenheit", "kelvin"])
        values = {
            "volume": round(rng.uniform(0.1, 500), 2),
            "start_temperature": temperature_in(rng, unit),
            "end_temperature": temperature_in(rng, unit),
            "temperature_unit": unit,
        }
        cases.append(Case(values, expect_charles(values)))
    hand = [
        {"volume": 3.0, "start_temperature": 300.0, "end_temperature": 600.0, "temperature_unit": "kelvin"},
        {"volume": 5.0, "start_temperature": 212.0, "end_temperature": 32.0, "temperature_unit": "fahrenheit"},
        {"volume": 1.5, "start_temperature": 21.0, "end_temperature": 21.0, "temperature_unit": "celsius"},
        {"volume": 1e6, "start_temperature": -40.0, "end_temperature": -40.0, "temperature_unit": "fahrenheit"},
    ]
    cases += [Case(v, expect_charles(v), note="hand") for v in hand]
    return cases


def school_trip_cases() -> list[Case]:
    rng = random.Random(7)
    cases = []
    for _ in range(24):
        values = {
            "students": rng.randint(1, 2000),
            "teachers": rng.randint(0, 200),
            "seats": rng.randint(8, 90),
            "bus_price": rng.randint(0, 5000),
            "ticket_price": rng.randint(0, 200),
        }
        cases.append(Case(values, expect_school_trip(values)))
    hand = [
        # exactly full buses: no rounding up
        {"students": 45, "teachers": 5, "seats": 50, "bus_price": 300, "ticket_price": 10},
        # one person over: a whole extra bus
        {"students": 46, "teachers": 5, "seats": 50, "bus_price": 300, "ticket_price": 10},
        # a single pupil, no teacher, a free museum
        {"students": 1, "teachers": 0, "seats": 8, "bus_price": 90, "ticket_price": 0},
    ]
    cases += [Case(v, expect_school_trip(v), note="hand") for v in hand]
    return cases


#: (as written in the recipe, what the target model answers or None if convert() or the number reader reads it,
#: the value)
RECIPE_AMOUNTS = [
    ("1 1/2", None, 1.5),
    ("two and a half", None, 2.5),
    ("3.5", None, 3.5),
    ("3/4", None, 0.75),
    ("1,200", None, 1200.0),
    ("a quarter", None, 0.25),
    ("a few", "3", 3.0),
    ("0.25", None, 0.25),
    ("about 2", "2", 2.0),
    ("1½", None, 1.5),
    ("a handful", "2", 2.0),
    ("III", "3", 3.0),
]
RECIPE_UNITS = ("cups", "tablespoons", "teaspoons", "grams", "millilitres", "pieces")
RECIPE_INGREDIENTS = ("flour", "sugar", "butter", "rolled oats", "olive oil", "eggs", "cocoa powder")


def recipe_case(values: dict[str, Any], answer: str | None, amount: float) -> Case:
    written = values["quantity"]
    replies = {} if answer is None else {f"Value: {written}\nLiteral:": answer}
    return Case(
        values,
        expect_recipe(values, amount),
        replies=replies,
        prompts=0 if answer is None else 1,
        prompt_contains=None if answer is None else f"Value: {written}\n",
    )


def recipe_cases() -> list[Case]:
    rng = random.Random(314)
    cases = []
    for written, answer, amount in RECIPE_AMOUNTS * 2:
        values = {
            "quantity": written,
            "unit": rng.choice(RECIPE_UNITS),
            "ingredient": rng.choice(RECIPE_INGREDIENTS),
            "servings": rng.randint(1, 100),
            "wanted": rng.randint(1, 1000),
        }
        cases.append(recipe_case(values, answer, amount))
    return cases


#: Item descriptions and the handling class a competent model gives them (scripted in the fake).
PARCEL_CONTENTS = {
    "a glass flower vase": "fragile",
    "frozen salmon fillets": "perishable",
    "three paperback novels": "standard",
    "a porcelain tea set": "fragile",
    "a punnet of fresh strawberries": "perishable",
    "a wool winter jumper": "standard",
    "six crystal wine glasses": "fragile",
    "a box of live oysters on ice": "perishable",
    "a pair of running shoes": "standard",
    "an antique mantel clock": "fragile",
    "homemade chocolate truffles": "perishable",
    "a cotton duvet cover": "standard",
}


def shipping_case(values: dict[str, Any]) -> Case:
    contents = values["contents"]
    return Case(
        values,
        expect_shipping(values, PARCEL_CONTENTS[contents]),
        replies={f"Text: {contents}\n": PARCEL_CONTENTS[contents]},
        prompts=1,
        prompt_contains=f"Text: {contents}\n",
    )


def shipping_cases() -> list[Case]:
    rng = random.Random(2024)
    items = list(PARCEL_CONTENTS)
    cases = []
    for i in range(24):
        values = {
            "weight": round(rng.uniform(0.05, 30), 2),
            "contents": items[i % len(items)],
            "zone": rng.choice(["local", "national", "international"]),
        }
        cases.append(shipping_case(values))
    hand = [
        {"weight": 1.0, "contents": "three paperback novels", "zone": "local"},  # a whole kilogram stays 1 kg
        {"weight": 1.01, "contents": "three paperback novels", "zone": "local"},  # just over: charged as 2 kg
        {"weight": 30.0, "contents": "frozen salmon fillets", "zone": "international"},  # heaviest allowed
    ]
    cases += [shipping_case(v) for v in hand]
    return cases


def compound_cases() -> list[Case]:
    rng = random.Random(1626)
    cases = []
    for _ in range(24):
        values = {
            "principal": round(rng.uniform(10, 250_000), 2),
            "rate": round(rng.uniform(0, 15), 2),
            "frequency": rng.choice(list(PERIODS)),
            "years": rng.randint(1, 50),
        }
        cases.append(Case(values, expect_compound(values)))
    hand = [
        {"principal": 500.0, "rate": 0.0, "frequency": "daily", "years": 5},  # no interest at all
        {"principal": 100.0, "rate": 10.0, "frequency": "annually", "years": 1},  # $110 exactly-ish
        {"principal": 1e7, "rate": 30.0, "frequency": "daily", "years": 50},  # top of every domain
    ]
    cases += [Case(v, expect_compound(v), note="hand") for v in hand]
    return cases


CASES: dict[str, list[Case]] = {
    "ideal-gas-pressure": ideal_gas_cases(),
    "charles-law-volume": charles_cases(),
    "school-trip-cost": school_trip_cases(),
    "recipe-ingredient-scaling": recipe_cases(),
    "parcel-shipping-cost": shipping_cases(),
    "compound-interest-balance": compound_cases(),
}

#: What each entry must answer on its original question, worked out by hand.
ORIGINAL_ANSWERS: dict[str, tuple[dict[str, Any], dict[str, str] | None]] = {
    # 2 mol × 8.314462618 × 298.15 K / 0.01 m³ = 495 791 Pa
    "ideal-gas-pressure": ({"pressure in kilopascals": 495.791}, None),
    # 2 L × 353.15 K / 293.15 K
    "charles-law-volume": ({"new volume of the gas in litres": 2 * 353.15 / 293.15}, None),
    # 242 people / 50 seats -> 5 buses; 5 × 350 + 230 × 12 = 1750 + 2760
    "school-trip-cost": ({"number of buses needed for the trip": 5, "total cost of the trip in dollars": 4510}, None),
    # 1.5 cups × 10 / 4
    "recipe-ingredient-scaling": ({"amount of the ingredient for the servings wanted": 3.75}, None),
    # national, 2.3 kg -> 3 kg: 8.95 + 3 × 1.40 + 3.50 fragile
    "parcel-shipping-cost": (
        {"handling class of the parcel": "fragile", "total shipping cost in dollars": 16.65},
        {"Text: a glass flower vase\n": "fragile"},
    ),
    # 1000 × (1 + 0.05/12)^120 = 1647.0094976902...
    "compound-interest-balance": (
        {"balance at the end in dollars": 1647.00949769028, "interest earned in dollars": 647.00949769028}, None
    ),
}

#: Values outside each entry's declared domain (each must be refused before anything runs).
OUT_OF_DOMAIN: dict[str, list[dict[str, Any]]] = {
    "ideal-gas-pressure": [{"moles": 0.0}, {"volume_unit": "gallons"}],
    "charles-law-volume": [{"temperature_unit": "rankine"}, {"volume": -1.0}, {"start_temperature": -500.0}],
    "school-trip-cost": [{"seats": 0}, {"students": 12.5}, {"teachers": -1}, {"students": True}],
    "recipe-ingredient-scaling": [{"servings": 0}, {"quantity": "   "}, {"unit": "pinch"}, {"wanted": 1001}],
    "parcel-shipping-cost": [{"weight": 0.0}, {"weight": 30.5}, {"zone": "moon"}, {"contents": ""}],
    "compound-interest-balance": [{"years": 0}, {"rate": 35.0}, {"frequency": "weekly"}, {"principal": -100.0}],
}


def assert_matches(result: dict[str, Any], expected: dict[str, Any]) -> None:
    assert set(result) == set(expected)
    for key, want in expected.items():
        got = result[key]
        if isinstance(want, float):
            assert isinstance(got, float) and math.isclose(got, want, rel_tol=1e-9), (key, got, want)
        else:
            assert got == want and type(got) is type(want), (key, got, want)


# ---------------------------------------------------------------------------------------------
# Fixtures
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compiled(example_registry) -> Callable[[str], tuple[str, LoadedCompiledEntry]]:
    """Compile each entry once for the whole module: (generated source, loaded module)."""
    cache: dict[str, tuple[str, LoadedCompiledEntry]] = {}

    def get(entry_id: str) -> tuple[str, LoadedCompiledEntry]:
        if entry_id not in cache:
            source = compile_entry(example_registry, entry_id).source
            cache[entry_id] = (source, LoadedCompiledEntry(source, entry_id))
        return cache[entry_id]

    return get


ENTRY_IDS = sorted(CASES)
CASE_PARAMS = [
    pytest.param(entry_id, i, id=f"{entry_id}-{i:02d}") for entry_id in ENTRY_IDS for i in range(len(CASES[entry_id]))
]


# ---------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------


def test_every_example_entry_is_covered(example_registry) -> None:
    assert set(example_registry.entries) == set(CASES) == set(ORIGINAL_ANSWERS) == set(OUT_OF_DOMAIN)
    for entry_id, cases in CASES.items():
        assert len(cases) >= 20, entry_id


@pytest.mark.parametrize("entry_id", ENTRY_IDS)
def test_entry_declaration_is_consistent(example_registry, entry_id: str) -> None:
    entry = example_registry.entries[entry_id]
    assert entry.render(entry.original_values) == entry.question
    assert entry.validate(entry.original_values) == entry.original_values
    root = example_registry.resolve_function(entry.root)
    assert entry.answer_key in root.outputs
    for param in entry.params:  # the sampled values respect the declared domain
        for example in param.examples:
            param.validate(example)


@pytest.mark.parametrize("entry_id", ENTRY_IDS)
def test_original_question_answer(example_registry, compiled, entry_id: str) -> None:
    entry = example_registry.entries[entry_id]
    expected, replies = ORIGINAL_ANSWERS[entry_id]
    lm = None if replies is None else ScriptedTargetLM(replies)
    dynamic = example_registry.run(entry_id, entry.original_values, target_lm=lm)
    assert_matches(dynamic.result, expected)
    lm = None if replies is None else ScriptedTargetLM(replies)
    static = compiled(entry_id)[1].run(entry.validate(entry.original_values), target_lm=lm)
    assert static.result == dynamic.result
    assert static.narration == dynamic.narration
    assert len(dynamic.narration) >= 2


@pytest.mark.parametrize(("entry_id", "index"), CASE_PARAMS)
def test_reparameterised_dynamic_equals_compiled(example_registry, compiled, entry_id: str, index: int) -> None:
    case = CASES[entry_id][index]
    entry = example_registry.entries[entry_id]
    checked = entry.validate(case.values)  # every generated input lies inside the declared domain

    dynamic_lm = case.target_lm()
    dynamic = example_registry.run(entry_id, case.values, target_lm=dynamic_lm)
    assert_matches(dynamic.result, case.expected)

    static_lm = case.target_lm()
    static = compiled(entry_id)[1].run(checked, target_lm=static_lm)
    assert static.result == dynamic.result
    assert [type(v) for v in static.result.values()] == [type(v) for v in dynamic.result.values()]
    assert static.narration == dynamic.narration
    assert all(step.text.strip() for step in dynamic.narration)

    for lm in (dynamic_lm, static_lm):
        if lm is None:
            continue
        assert len(lm.prompts) == case.prompts, lm.prompts
        if case.prompt_contains is not None:
            assert all(case.prompt_contains in prompt for prompt in lm.prompts)


@pytest.mark.parametrize("entry_id", ENTRY_IDS)
def test_compiled_module_is_standalone(compiled, entry_id: str) -> None:
    source = compiled(entry_id)[0]
    assert "do(" not in source and "load(" not in source
    tree = ast.parse(source)
    calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert not calls & {"do", "load"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert all(not a.name.startswith("edge_runtime") for a in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("edge_runtime"):
            assert node.module == "edge_runtime.semantic"
    # The generated header says which tool produced the module ("...from the registry"); the code
    # itself must not refer to the registry, the embedder or any index.
    docstring = tree.body[0]
    assert isinstance(docstring, ast.Expr) and isinstance(docstring.value, ast.Constant)
    code = "\n".join(source.splitlines()[docstring.end_lineno:]).lower()
    for word in ("registry", "embedder", "hnswlib", "resolver"):
        assert word not in code, word


def test_temperature_conversion_is_reused_by_two_entries(example_registry) -> None:
    charles = compile_entry(example_registry, "charles-law-volume")
    ideal = compile_entry(example_registry, "ideal-gas-pressure")
    assert "temperature_to_kelvin" in charles.functions
    assert "temperature_to_kelvin" in ideal.functions
    assert example_registry.registered(example_registry.resolve_function("convert a temperature reading to kelvin")
                                       ).source_module == "temperature_units"


def test_function_descriptions_are_not_near_duplicates(example_registry, embedder) -> None:
    descriptions = [reg.function.description for reg in example_registry.functions.values()]
    vectors = embedder.embed(descriptions)
    scores = vectors @ vectors.T
    np.fill_diagonal(scores, -1.0)
    worst = np.unravel_index(int(np.argmax(scores)), scores.shape)
    assert scores.max() < 0.85, (descriptions[worst[0]], descriptions[worst[1]], float(scores.max()))


@pytest.mark.parametrize(
    ("entry_id", "bad"), [(e, bad) for e in ENTRY_IDS for bad in OUT_OF_DOMAIN[e]] + [(e, {"colour": "red"}) for e in ENTRY_IDS]
)
def test_validate_rejects_values_outside_the_domain(example_registry, entry_id: str, bad: dict[str, Any]) -> None:
    entry = example_registry.entries[entry_id]
    values = {**entry.original_values, **bad}
    with pytest.raises(ParameterValidationError) as info:
        entry.validate(values)
    assert info.value.param == next(iter(bad))
    with pytest.raises(ParameterValidationError):
        example_registry.run(entry_id, values, target_lm=ScriptedTargetLM())


# ---- the target-model entries -----------------------------------------------------------------


def test_recipe_cases_cover_clean_and_messy_amounts() -> None:
    asked = [case.prompts for case in CASES["recipe-ingredient-scaling"]]
    assert asked.count(0) >= 8 and asked.count(1) >= 6


@pytest.mark.parametrize("written", ["3.5", "3/4", "1,200", "12", "1 1/2", "two and a half"])
def test_recipe_clean_amounts_need_no_target_model(example_registry, compiled, written: str) -> None:
    values = {**example_registry.entries["recipe-ingredient-scaling"].original_values, "quantity": written}
    dynamic = example_registry.run("recipe-ingredient-scaling", values, target_lm=None)
    static = compiled("recipe-ingredient-scaling")[1].run(values, target_lm=None)
    assert dynamic.result == static.result
    assert dynamic.narration == static.narration


@pytest.mark.parametrize("mode", ["dynamic", "compiled"])
def test_recipe_messy_amount_needs_the_target_model(example_registry, compiled, mode: str) -> None:
    entry = example_registry.entries["recipe-ingredient-scaling"]
    values = {**entry.original_values, "quantity": "a few"}
    run = (lambda v, lm: example_registry.run(entry.id, v, target_lm=lm)) if mode == "dynamic" else (
        lambda v, lm: compiled(entry.id)[1].run(entry.validate(v), target_lm=lm)
    )
    with pytest.raises(TargetModelError):
        run(values, None)
    # an answer that is not a Python number literal is refused, not guessed
    babbling = ScriptedTargetLM(default="about two and a half cups")
    with pytest.raises(ConversionError):
        run(values, babbling)
    assert len(babbling.prompts) == 1
    assert babbling.prompts[0].startswith("Rewrite the value as a Python float literal.")
    assert babbling.prompts[0].endswith("\nValue: a few\nLiteral:")
    # a non-positive amount read from text is an error, not a silent zero
    with pytest.raises(ExecutionError, match="recipe amount must be positive"):
        run({**values, "quantity": "none at all"}, ScriptedTargetLM(default="0"))


@pytest.mark.parametrize("mode", ["dynamic", "compiled"])
def test_shipping_classification_asks_the_target_model_once(example_registry, compiled, mode: str) -> None:
    entry = example_registry.entries["parcel-shipping-cost"]
    run = (lambda v, lm: example_registry.run(entry.id, v, target_lm=lm)) if mode == "dynamic" else (
        lambda v, lm: compiled(entry.id)[1].run(entry.validate(v), target_lm=lm)
    )
    with pytest.raises(TargetModelError):
        run(entry.original_values, None)
    results = {}
    for handling in ("fragile", "perishable", "standard"):  # same parcel, three verdicts
        lm = ScriptedTargetLM({"Text: a glass flower vase\n": handling})
        results[handling] = run(entry.original_values, lm).result
        assert len(lm.prompts) == 1 and lm.prompts[0].startswith("Task: Classify the goods for shipping")
    totals = {k: r["total shipping cost in dollars"] for k, r in results.items()}
    assert totals == {"fragile": 16.65, "perishable": 19.15, "standard": 13.15}


def test_case_generation_is_deterministic() -> None:
    again = {
        "charles-law-volume": charles_cases(),
        "school-trip-cost": school_trip_cases(),
        "recipe-ingredient-scaling": recipe_cases(),
        "parcel-shipping-cost": shipping_cases(),
        "compound-interest-balance": compound_cases(),
        "ideal-gas-pressure": ideal_gas_cases(),
    }
    for entry_id, cases in again.items():
        assert [c.values for c in cases] == [c.values for c in CASES[entry_id]]
    # and the draws are varied: every parameter takes several values
    for entry_id, cases in CASES.items():
        for name in cases[0].values:
            assert len({c.values[name] for c in cases}) >= 2, (entry_id, name)

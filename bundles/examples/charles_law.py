"""Charles's law: the new volume of a gas warmed or cooled at constant pressure (V2 = V1 × T2 / T1).

Both readings go through the shared "convert a temperature reading to kelvin" function of
temperature_units.py (also used by ideal_gas.py), so celsius, fahrenheit and kelvin all work.
"""

from edge_runtime.semantic import Param, do, entry_point, load, narrate, semantic_function


@semantic_function(
    "Scale a gas volume by the ratio of its final to its initial absolute temperature",
    inputs={
        "volume before the temperature change": 2.0,
        "initial absolute temperature": 293.15,
        "final absolute temperature": 353.15,
    },
    outputs={"volume after the temperature change": 2.4093},
)
def scale_volume_by_temperature_ratio(ctx):
    before = load(ctx, "volume before the temperature change", float)
    initial = load(ctx, "initial absolute temperature", float)
    final = load(ctx, "final absolute temperature", float)
    ratio = final / initial
    after = before * ratio
    narrate(ctx, f"At constant pressure the volume is proportional to the absolute temperature: "
                 f"V2 = V1 × T2/T1 = {before:g} × {final:.5g}/{initial:.5g} = {before:g} × {ratio:.4g} = {after:.4g}.")
    return {"volume after the temperature change": after}


@semantic_function(
    "Find the volume of a gas after heating or cooling it at constant pressure",
    inputs={
        "starting volume of the gas in litres": 2.0,
        "starting temperature of the gas": 20.0,
        "final temperature of the gas": 80.0,
        "unit of both temperatures": "celsius",
    },
    outputs={"new volume of the gas in litres": 2.4093},
    calls=[
        "convert a temperature reading to kelvin",
        "scale a gas volume by the ratio of its final to its initial absolute temperature",
    ],
)
def charles_law_new_volume(ctx):
    litres = load(ctx, "starting volume of the gas in litres", float)
    start = load(ctx, "starting temperature of the gas", float)
    end = load(ctx, "final temperature of the gas", float)
    unit = load(ctx, "unit of both temperatures", str)
    narrate(ctx, f"The gas fills {litres:g} L at {start:g} degrees {unit} and goes to {end:g} degrees {unit} "
                 f"at constant pressure; Charles's law needs both temperatures in kelvin.")
    initial = do(ctx, "convert a temperature reading to kelvin", {
        "the temperature reading": start,
        "the unit of the temperature reading": unit,
    })["the absolute temperature in kelvin"]
    final = do(ctx, "convert a temperature reading to kelvin", {
        "the temperature reading": end,
        "the unit of the temperature reading": unit,
    })["the absolute temperature in kelvin"]
    new_litres = do(ctx, "scale a gas volume by the ratio of its final to its initial absolute temperature", {
        "volume before the temperature change": litres,
        "initial absolute temperature": initial,
        "final absolute temperature": final,
    })["volume after the temperature change"]
    change = "expands" if new_litres > litres else "contracts" if new_litres < litres else "keeps its volume"
    narrate(ctx, f"So the gas {change}: its new volume is {new_litres:.4g} L.")
    return {"new volume of the gas in litres": new_litres}


CHARLES_LAW_VOLUME = entry_point(
    id="charles-law-volume",
    description="New volume of a gas warmed or cooled at constant pressure (Charles's law)",
    template=(
        "A balloon holds {volume} litres of air at {start_temperature} degrees {temperature_unit}. "
        "If the air goes to {end_temperature} degrees {temperature_unit} at constant pressure, "
        "what is its new volume in litres?"
    ),
    question=(
        "A balloon holds 2 litres of air at 20 degrees celsius. "
        "If the air goes to 80 degrees celsius at constant pressure, what is its new volume in litres?"
    ),
    params=[
        Param(name="volume", description="starting volume of the gas in litres", type=float, original=2.0,
              examples=(0.5, 150.0), minimum=0, exclusive_minimum=True, maximum=1e6, unit="litres"),
        Param(name="start_temperature", description="starting temperature of the gas", type=float, original=20.0,
              examples=(68.0, 300.0), minimum=-459.67, maximum=5000.0),
        Param(name="end_temperature", description="final temperature of the gas", type=float, original=80.0,
              examples=(-10.0, 212.0), minimum=-459.67, maximum=5000.0),
        Param(name="temperature_unit", description="unit of both temperatures", type=str, original="celsius",
              examples=("fahrenheit", "kelvin"), choices=("celsius", "fahrenheit", "kelvin")),
    ],
    root="find the volume of a gas after heating or cooling it at constant pressure",
    answer_key="new volume of the gas in litres",
)

"""Pressure of an ideal gas sample (PV = nRT), with unit conversions, three levels deep."""

from edge_runtime.semantic import Param, do, entry_point, load, narrate, semantic_function

GAS_CONSTANT = 8.314462618


@semantic_function(
    "Apply the ideal gas law to find pressure in pascals from SI quantities",
    inputs={"amount of gas in moles": 2.0, "absolute temperature in kelvin": 298.15, "volume in cubic metres": 0.01},
    outputs={"pressure in pascals": 495_800.0},
)
def ideal_gas_law_pressure(ctx):
    moles = load(ctx, "amount of gas in moles", float)
    kelvin = load(ctx, "absolute temperature in kelvin", float)
    cubic_metres = load(ctx, "volume in cubic metres", float)
    pascals = moles * GAS_CONSTANT * kelvin / cubic_metres
    narrate(ctx, f"P = nRT/V = {moles:g} × {GAS_CONSTANT} × {kelvin:.5g} / {cubic_metres:.4g} = {pascals:.6g} Pa.")
    return {"pressure in pascals": pascals}


@semantic_function(
    "Find the pressure of an ideal gas sample in kilopascals",
    inputs={
        "amount of gas in moles": 2.0,
        "temperature of the gas": 25.0,
        "unit of the temperature": "celsius",
        "volume of the container": 10.0,
        "unit of the volume": "litres",
    },
    outputs={"pressure in kilopascals": 495.8},
    calls=[
        "convert a temperature reading to kelvin",
        "convert a volume to cubic metres",
        "apply the ideal gas law to get the pressure in pascals",
    ],
)
def gas_pressure_kilopascals(ctx):
    moles = load(ctx, "amount of gas in moles", float)
    narrate(ctx, f"We have {moles:g} mol of an ideal gas and want its pressure.")
    kelvin = do(ctx, "convert a temperature reading to kelvin", {
        "the temperature reading": load(ctx, "temperature of the gas", float),
        "the unit of the temperature reading": load(ctx, "unit of the temperature"),
    })["the absolute temperature in kelvin"]
    cubic_metres = do(ctx, "convert a volume to cubic metres", {
        "the volume": load(ctx, "volume of the container", float),
        "the unit of the volume": load(ctx, "unit of the volume"),
    })["the volume in cubic metres"]
    pascals = do(ctx, "apply the ideal gas law to get the pressure in pascals", {
        "amount of gas in moles": moles,
        "absolute temperature in kelvin": kelvin,
        "volume in cubic metres": cubic_metres,
    })["pressure in pascals"]
    kilopascals = round(pascals / 1000, 3)
    narrate(ctx, f"So the pressure is {pascals:.6g} Pa ≈ {kilopascals:g} kPa.")
    return {"pressure in kilopascals": kilopascals}


IDEAL_GAS_PRESSURE = entry_point(
    id="ideal-gas-pressure",
    description="Pressure of an ideal gas sample from its amount, temperature and container volume",
    template=(
        "What is the pressure, in kPa, of {moles} mol of an ideal gas at {temperature} degrees "
        "{temperature_unit} held in a {volume} {volume_unit} container?"
    ),
    question="What is the pressure, in kPa, of 2 mol of an ideal gas at 25 degrees celsius held in a 10 litres container?",
    params=[
        Param(name="moles", description="amount of gas in moles", type=float, original=2.0,
              examples=(0.5, 3.2), minimum=0, exclusive_minimum=True, maximum=1e6),
        Param(name="temperature", description="temperature of the gas", type=float, original=25.0,
              examples=(100.0, -40.0), minimum=-459.67, maximum=1e5),
        Param(name="temperature_unit", description="unit of the temperature", type=str, original="celsius",
              examples=("fahrenheit", "kelvin"), choices=("celsius", "fahrenheit", "kelvin")),
        Param(name="volume", description="volume of the container", type=float, original=10.0,
              examples=(2.5, 500.0), minimum=0, exclusive_minimum=True, maximum=1e9),
        Param(name="volume_unit", description="unit of the volume", type=str, original="litres",
              examples=("millilitres", "cubic metres"), choices=("litres", "millilitres", "cubic metres")),
    ],
    root="find the pressure of an ideal gas sample in kilopascals",
    answer_key="pressure in kilopascals",
)

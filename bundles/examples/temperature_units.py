"""Shared temperature and volume conversions, reused by the gas-law entries through do()."""

from edge_runtime.semantic import do, load, narrate, semantic_function


@semantic_function(
    "Convert a Fahrenheit temperature to degrees Celsius",
    inputs={"temperature in degrees Fahrenheit": 77.0},
    outputs={"temperature in degrees Celsius": 25.0},
)
def fahrenheit_to_celsius(ctx):
    fahrenheit = load(ctx, "temperature in degrees Fahrenheit", float)
    celsius = (fahrenheit - 32) * 5 / 9
    narrate(ctx, f"{fahrenheit:g} °F is ({fahrenheit:g} − 32) × 5/9 = {celsius:.4g} °C.")
    return {"temperature in degrees Celsius": celsius}


@semantic_function(
    "Convert a temperature reading to kelvin",
    inputs={"the temperature reading": 25.0, "the unit of the temperature reading": "celsius"},
    outputs={"the absolute temperature in kelvin": 298.15},
    calls=["convert a Fahrenheit temperature to Celsius"],
)
def temperature_to_kelvin(ctx):
    value = load(ctx, "the temperature reading", float)
    unit = load(ctx, "the unit of the temperature reading", str)
    if unit == "kelvin":
        kelvin = value
        narrate(ctx, f"The temperature is already absolute: {kelvin:g} K.")
    else:
        if unit == "fahrenheit":
            value = do(ctx, "convert a Fahrenheit temperature to Celsius",
                       {"temperature in degrees Fahrenheit": value})["temperature in degrees Celsius"]
        kelvin = value + 273.15
        narrate(ctx, f"In kelvin: {value:.4g} °C + 273.15 = {kelvin:.5g} K.")
    if kelvin <= 0:
        raise ValueError(f"{kelvin} K is below absolute zero")
    return {"the absolute temperature in kelvin": kelvin}


@semantic_function(
    "Convert a volume to cubic metres",
    inputs={"the volume": 10.0, "the unit of the volume": "litres"},
    outputs={"the volume in cubic metres": 0.01},
)
def volume_to_cubic_metres(ctx):
    volume = load(ctx, "the volume", float)
    unit = load(ctx, "the unit of the volume", str)
    factor = {"litres": 1e-3, "millilitres": 1e-6, "cubic metres": 1.0}[unit]
    cubic_metres = volume * factor
    narrate(ctx, f"{volume:g} {unit} = {volume:g} × {factor:g} = {cubic_metres:.4g} m³.")
    return {"the volume in cubic metres": cubic_metres}

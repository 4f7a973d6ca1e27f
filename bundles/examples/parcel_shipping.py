"""Cost of shipping a parcel: postage by weight and zone, plus a surcharge for how the contents must be handled.

The target model classifies the free-text description of the contents (fragile, perishable or
standard); everything else is table lookups and integer cents, so the price is exact.
"""

import math

from edge_runtime.semantic import Param, do, entry_point, lm, load, narrate, semantic_function

ZONE_BASE_CENTS = {"local": 495, "national": 895, "international": 2450}
ZONE_CENTS_PER_KG = {"local": 60, "national": 140, "international": 520}
HANDLING_SURCHARGE_CENTS = {"fragile": 350, "perishable": 600, "standard": 0}


@semantic_function(
    "Classify the contents of a parcel as fragile, perishable or standard goods",
    inputs={"description of what is being shipped": "a glass flower vase"},
    outputs={"handling class of the goods": "fragile"},
)
def classify_parcel_contents(ctx):
    contents = load(ctx, "description of what is being shipped", str)
    handling = lm(
        ctx,
        "Classify the goods for shipping: fragile (breaks easily), perishable (spoils or must stay cold) "
        "or standard (anything else)",
        contents,
        choices=["fragile", "perishable", "standard"],
    )
    narrate(ctx, f"“{contents}” is handled as {handling} goods.")
    return {"handling class of the goods": handling}


@semantic_function(
    "Look up the handling surcharge for the goods inside a parcel",
    inputs={"what the parcel contains": "a glass flower vase"},
    outputs={"handling class": "fragile", "handling surcharge in cents": 350},
    calls=["classify the contents of a parcel as fragile, perishable or standard goods"],
)
def handling_surcharge(ctx):
    handling = do(ctx, "classify the contents of a parcel as fragile, perishable or standard goods", {
        "description of what is being shipped": load(ctx, "what the parcel contains", str),
    })["handling class of the goods"]
    cents = HANDLING_SURCHARGE_CENTS[handling]
    if cents:
        narrate(ctx, f"{handling.capitalize()} goods carry a handling surcharge of ${cents / 100:.2f}.")
    else:
        narrate(ctx, "Standard goods carry no handling surcharge.")
    return {"handling class": handling, "handling surcharge in cents": cents}


@semantic_function(
    "Work out the postage for a parcel from its weight and destination zone",
    inputs={"parcel weight in kilograms": 2.3, "destination zone for the postage": "national"},
    outputs={"postage in cents": 1315},
)
def postage_by_weight_and_zone(ctx):
    weight = load(ctx, "parcel weight in kilograms", float)
    zone = load(ctx, "destination zone for the postage", str)
    kilograms = math.ceil(weight)
    base = ZONE_BASE_CENTS[zone]
    per_kg = ZONE_CENTS_PER_KG[zone]
    cents = base + kilograms * per_kg
    narrate(ctx, f"Postage is charged per started kilogram, so {weight:g} kg counts as {kilograms} kg. "
                 f"{zone.capitalize()} rate: ${base / 100:.2f} + {kilograms} × ${per_kg / 100:.2f} = ${cents / 100:.2f}.")
    return {"postage in cents": cents}


@semantic_function(
    "Work out the total price of sending a parcel, including handling of its contents",
    inputs={
        "weight of the parcel in kilograms": 2.3,
        "destination zone of the parcel": "national",
        "description of the items in the parcel": "a glass flower vase",
    },
    outputs={"handling class of the parcel": "fragile", "total shipping cost in dollars": 16.65},
    calls=[
        "work out the postage for a parcel from its weight and destination zone",
        "look up the handling surcharge for the goods inside a parcel",
    ],
)
def parcel_shipping_cost(ctx):
    postage = do(ctx, "work out the postage for a parcel from its weight and destination zone", {
        "parcel weight in kilograms": load(ctx, "weight of the parcel in kilograms", float),
        "destination zone for the postage": load(ctx, "destination zone of the parcel", str),
    })["postage in cents"]
    handling = do(ctx, "look up the handling surcharge for the goods inside a parcel", {
        "what the parcel contains": load(ctx, "description of the items in the parcel", str),
    })
    total_cents = postage + handling["handling surcharge in cents"]
    dollars = total_cents / 100
    narrate(ctx, f"Total: ${postage / 100:.2f} postage + ${handling['handling surcharge in cents'] / 100:.2f} "
                 f"handling = ${dollars:.2f}.")
    return {"handling class of the parcel": handling["handling class"], "total shipping cost in dollars": dollars}


PARCEL_SHIPPING_COST = entry_point(
    id="parcel-shipping-cost",
    description="Price of shipping a parcel by weight and zone, with a surcharge for fragile or perishable contents",
    template="How much does it cost to send a {weight} kg parcel containing {contents} to a {zone} address?",
    question="How much does it cost to send a 2.3 kg parcel containing a glass flower vase to a national address?",
    params=[
        Param(name="weight", description="weight of the parcel in kilograms", type=float, original=2.3,
              examples=(0.4, 12.0), minimum=0, exclusive_minimum=True, maximum=30.0, unit="kg"),
        Param(name="contents", description="description of the items in the parcel", type=str,
              original="a glass flower vase", examples=("frozen salmon fillets", "three paperback novels")),
        Param(name="zone", description="destination zone of the parcel", type=str, original="national",
              examples=("local", "international"), choices=("local", "national", "international")),
    ],
    root="work out the total price of sending a parcel, including handling of its contents",
    answer_key="total shipping cost in dollars",
)

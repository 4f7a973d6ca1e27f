"""Scale one recipe ingredient to a different number of servings.

Recipes write amounts loosely ("1 1/2", "3/4", "two and a half"), so the amount parameter is
text: smart_convert reads plain numbers and fractions itself and asks the target model only
for the rest, accepting its answer only as a Python number literal.
"""

from edge_runtime.semantic import Param, do, entry_point, load, narrate, semantic_function, smart_convert


@semantic_function(
    "Read a recipe amount written in words, as a fraction or as a mixed number",
    inputs={"amount as written in the recipe": "1 1/2"},
    outputs={"amount as a decimal number": 1.5},
)
def read_recipe_amount(ctx):
    written = load(ctx, "amount as written in the recipe", str)
    amount = smart_convert(ctx, written, float)
    if amount <= 0:
        raise ValueError(f"a recipe amount must be positive, got {written!r}")
    narrate(ctx, f"The recipe says “{written}”, which is {amount:g} as a number.")
    return {"amount as a decimal number": amount}


@semantic_function(
    "Scale the amount of one recipe ingredient to a different number of servings",
    inputs={
        "amount of the ingredient in the recipe": "1 1/2",
        "unit of the ingredient amount": "cups",
        "name of the ingredient": "flour",
        "number of servings the recipe makes": 4,
        "number of servings wanted": 10,
    },
    outputs={"amount of the ingredient for the servings wanted": 3.75},
    calls=["read a recipe amount written in words, as a fraction or as a mixed number"],
)
def scale_recipe_ingredient(ctx):
    unit = load(ctx, "unit of the ingredient amount", str)
    ingredient = load(ctx, "name of the ingredient", str)
    makes = load(ctx, "number of servings the recipe makes", int)
    wanted = load(ctx, "number of servings wanted", int)
    amount = do(ctx, "read a recipe amount written in words, as a fraction or as a mixed number", {
        "amount as written in the recipe": load(ctx, "amount of the ingredient in the recipe", str),
    })["amount as a decimal number"]
    factor = wanted / makes
    narrate(ctx, f"The recipe serves {makes} and we want {wanted}, so every amount is multiplied by "
                 f"{wanted} ÷ {makes} = {factor:.4g}.")
    scaled = amount * factor
    narrate(ctx, f"{ingredient.capitalize()}: {amount:g} {unit} × {factor:.4g} = {scaled:.4g} {unit}.")
    return {"amount of the ingredient for the servings wanted": scaled}


RECIPE_SCALING = entry_point(
    id="recipe-ingredient-scaling",
    description="Amount of one recipe ingredient for a different number of servings, amount written loosely",
    template=(
        "A recipe that serves {servings} uses {quantity} {unit} of {ingredient}. "
        "How many {unit} of {ingredient} do you need to serve {wanted}?"
    ),
    question="A recipe that serves 4 uses 1 1/2 cups of flour. How many cups of flour do you need to serve 10?",
    params=[
        Param(name="quantity", description="amount of the ingredient in the recipe", type=str, original="1 1/2",
              examples=("two and a half", "3/4", "3.5", "1,200")),
        Param(name="unit", description="unit of the ingredient amount", type=str, original="cups",
              examples=("grams", "teaspoons"),
              choices=("cups", "tablespoons", "teaspoons", "grams", "millilitres", "pieces")),
        Param(name="ingredient", description="name of the ingredient", type=str, original="flour",
              examples=("sugar", "butter")),
        Param(name="servings", description="number of servings the recipe makes", type=int, original=4,
              examples=(2, 12), minimum=1, maximum=100),
        Param(name="wanted", description="number of servings wanted", type=int, original=10,
              examples=(1, 30), minimum=1, maximum=1000),
    ],
    root="scale the amount of one recipe ingredient to a different number of servings",
    answer_key="amount of the ingredient for the servings wanted",
)

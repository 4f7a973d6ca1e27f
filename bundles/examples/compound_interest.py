"""Balance of a savings deposit under compound interest, for a chosen compounding frequency.

Two levels of calls: the root asks for the rate per compounding period, which itself looks up
how many periods a year has; then the deposit is grown period by period: P × (1 + r/n)^(n·t).
"""

from edge_runtime.semantic import Param, do, entry_point, load, narrate, semantic_function

PERIODS_PER_YEAR = {"annually": 1, "semiannually": 2, "quarterly": 4, "monthly": 12, "daily": 365}


@semantic_function(
    "Count how many times a year interest is compounded",
    inputs={"how often the bank compounds interest": "monthly"},
    outputs={"compounding periods per year": 12},
)
def compounding_periods_per_year(ctx):
    frequency = load(ctx, "how often the bank compounds interest", str)
    periods = PERIODS_PER_YEAR[frequency]
    narrate(ctx, f"Compounding {frequency} means {periods} interest period{'s' if periods > 1 else ''} a year.")
    return {"compounding periods per year": periods}


@semantic_function(
    "Turn an annual percentage rate into the interest rate for one compounding period",
    inputs={"yearly interest rate as a percentage": 5.0, "compounding frequency": "monthly"},
    outputs={"interest rate per compounding period": 0.0041667, "number of periods in a year": 12},
    calls=["count how many times a year interest is compounded"],
)
def rate_per_compounding_period(ctx):
    percent = load(ctx, "yearly interest rate as a percentage", float)
    periods = do(ctx, "count how many times a year interest is compounded", {
        "how often the bank compounds interest": load(ctx, "compounding frequency", str),
    })["compounding periods per year"]
    rate = percent / 100 / periods
    narrate(ctx, f"The rate for one period is {percent:g}% ÷ 100 ÷ {periods} = {rate:.6g}.")
    return {"interest rate per compounding period": rate, "number of periods in a year": periods}


@semantic_function(
    "Grow a deposit at a fixed interest rate over a number of compounding periods",
    inputs={"deposit at the start": 1000.0, "interest rate for each period": 0.0041667,
            "number of compounding periods": 120},
    outputs={"balance after the last period": 1647.01},
)
def grow_deposit(ctx):
    deposit = load(ctx, "deposit at the start", float)
    rate = load(ctx, "interest rate for each period", float)
    count = load(ctx, "number of compounding periods", int)
    growth = (1 + rate) ** count
    balance = deposit * growth
    narrate(ctx, f"Each period multiplies the balance by 1 + {rate:.6g}; after {count} periods: "
                 f"${deposit:,.2f} × {1 + rate:.6g}^{count} = ${deposit:,.2f} × {growth:.6g} = ${balance:,.2f}.")
    return {"balance after the last period": balance}


@semantic_function(
    "Find the balance of a savings deposit after some years of compound interest",
    inputs={
        "amount deposited in dollars": 1000.0,
        "annual interest rate in percent": 5.0,
        "how often interest is compounded": "monthly",
        "number of years the money stays deposited": 10,
    },
    outputs={"balance at the end in dollars": 1647.01, "interest earned in dollars": 647.01},
    calls=[
        "turn an annual percentage rate into the interest rate for one compounding period",
        "grow a deposit at a fixed interest rate over a number of compounding periods",
    ],
)
def compound_interest_balance(ctx):
    deposit = load(ctx, "amount deposited in dollars", float)
    years = load(ctx, "number of years the money stays deposited", int)
    period = do(ctx, "turn an annual percentage rate into the interest rate for one compounding period", {
        "yearly interest rate as a percentage": load(ctx, "annual interest rate in percent", float),
        "compounding frequency": load(ctx, "how often interest is compounded", str),
    })
    count = period["number of periods in a year"] * years
    narrate(ctx, f"Over {years} years that is {period['number of periods in a year']} × {years} = {count} periods.")
    balance = do(ctx, "grow a deposit at a fixed interest rate over a number of compounding periods", {
        "deposit at the start": deposit,
        "interest rate for each period": period["interest rate per compounding period"],
        "number of compounding periods": count,
    })["balance after the last period"]
    interest = balance - deposit
    narrate(ctx, f"The balance is ${balance:,.2f}, of which ${interest:,.2f} is interest.")
    return {"balance at the end in dollars": balance, "interest earned in dollars": interest}


COMPOUND_INTEREST_BALANCE = entry_point(
    id="compound-interest-balance",
    description="Balance of a savings deposit after compound interest at a given compounding frequency",
    template="If you deposit ${principal} at {rate}% a year compounded {frequency}, what is the balance after {years} years?",
    question="If you deposit $1000 at 5% a year compounded monthly, what is the balance after 10 years?",
    params=[
        Param(name="principal", description="amount deposited in dollars", type=float, original=1000.0,
              examples=(250.0, 15000.0), minimum=0, exclusive_minimum=True, maximum=1e7, unit="dollars"),
        Param(name="rate", description="annual interest rate in percent", type=float, original=5.0,
              examples=(1.25, 7.0), minimum=0, maximum=30.0, unit="percent"),
        Param(name="frequency", description="how often interest is compounded", type=str, original="monthly",
              examples=("quarterly", "daily"),
              choices=("annually", "semiannually", "quarterly", "monthly", "daily")),
        Param(name="years", description="number of years the money stays deposited", type=int, original=10,
              examples=(1, 30), minimum=1, maximum=50),
    ],
    root="find the balance of a savings deposit after some years of compound interest",
    answer_key="balance at the end in dollars",
)

"""A school-trip word problem: how many buses to hire and what the whole trip costs.

Solved the way a pupil writes it out: count everyone who needs a seat, divide by the seats
on one bus and round up, then add the bus hire to the students' museum tickets.
"""

from edge_runtime.semantic import Param, do, entry_point, load, narrate, semantic_function


@semantic_function(
    "Work out how many buses are needed so that every person gets a seat",
    inputs={"number of people travelling": 242, "number of seats on one bus": 50},
    outputs={"number of buses to hire": 5},
)
def buses_to_hire(ctx):
    people = load(ctx, "number of people travelling", int)
    seats = load(ctx, "number of seats on one bus", int)
    full, left_over = divmod(people, seats)
    if left_over:
        buses = full + 1
        narrate(ctx, f"{people} ÷ {seats} = {full} remainder {left_over}: {full} full buses would leave "
                     f"{left_over} people behind, so we round up to {buses} buses.")
    else:
        buses = full
        narrate(ctx, f"{people} ÷ {seats} = {full} exactly, so {buses} buses seat everyone.")
    return {"number of buses to hire": buses}


@semantic_function(
    "Solve the school trip problem: buses to hire and total cost of the trip",
    inputs={
        "number of students going on the trip": 230,
        "number of teachers going on the trip": 12,
        "seats on each bus": 50,
        "price to hire one bus in dollars": 350,
        "price of one student museum ticket in dollars": 12,
    },
    outputs={"number of buses needed for the trip": 5, "total cost of the trip in dollars": 4510},
    calls=["work out how many buses are needed so that every person gets a seat"],
)
def school_trip_cost(ctx):
    students = load(ctx, "number of students going on the trip", int)
    teachers = load(ctx, "number of teachers going on the trip", int)
    seats = load(ctx, "seats on each bus", int)
    bus_price = load(ctx, "price to hire one bus in dollars", int)
    ticket_price = load(ctx, "price of one student museum ticket in dollars", int)
    people = students + teachers
    narrate(ctx, f"Step 1 – people who need a seat: {students} students + {teachers} teachers = {people}.")
    narrate(ctx, f"Step 2 – buses: share {people} people among buses of {seats} seats.")
    buses = do(ctx, "work out how many buses are needed so that every person gets a seat", {
        "number of people travelling": people,
        "number of seats on one bus": seats,
    })["number of buses to hire"]
    bus_cost = buses * bus_price
    narrate(ctx, f"Step 3 – bus hire: {buses} buses × ${bus_price} = ${bus_cost}.")
    ticket_cost = students * ticket_price
    narrate(ctx, f"Step 4 – tickets: {students} students × ${ticket_price} = ${ticket_cost} (teachers go free).")
    total = bus_cost + ticket_cost
    narrate(ctx, f"Step 5 – total: ${bus_cost} + ${ticket_cost} = ${total}.")
    return {"number of buses needed for the trip": buses, "total cost of the trip in dollars": total}


SCHOOL_TRIP_COST = entry_point(
    id="school-trip-cost",
    description="Buses to hire and total cost of a school museum trip (round-up division, then sums)",
    template=(
        "A school takes {students} students and {teachers} teachers to a museum. Each bus has {seats} seats "
        "and costs ${bus_price} to hire, and a museum ticket costs ${ticket_price} per student (teachers go "
        "free). How many buses are needed, and what is the total cost of the trip in dollars?"
    ),
    question=(
        "A school takes 230 students and 12 teachers to a museum. Each bus has 50 seats "
        "and costs $350 to hire, and a museum ticket costs $12 per student (teachers go "
        "free). How many buses are needed, and what is the total cost of the trip in dollars?"
    ),
    params=[
        Param(name="students", description="number of students going on the trip", type=int, original=230,
              examples=(28, 95), minimum=1, maximum=2000),
        Param(name="teachers", description="number of teachers going on the trip", type=int, original=12,
              examples=(2, 7), minimum=0, maximum=200),
        Param(name="seats", description="seats on each bus", type=int, original=50,
              examples=(40, 57), minimum=8, maximum=90),
        Param(name="bus_price", description="price to hire one bus in dollars", type=int, original=350,
              examples=(220, 480), minimum=0, maximum=5000, unit="dollars"),
        Param(name="ticket_price", description="price of one student museum ticket in dollars", type=int,
              original=12, examples=(0, 8), minimum=0, maximum=200, unit="dollars"),
    ],
    root="solve the school trip problem: buses to hire and total cost of the trip",
    answer_key="total cost of the trip in dollars",
)

"""Which mention of the question each literal of a program reads (builder/pot_import/planner.py), where two
mentions state one value.

The questions are written for these tests; a wrong binding here is an entry whose variants answer for the other
quantity, or a checker that agrees with such an entry.
"""

from __future__ import annotations

from builder.pot_import.planner import plan_parameters
from builder.pot_import.program import PalProgram

BIRDS = ("4 hedges each had 9 sparrows in them. 2 other hedges each had 5 sparrows. 1 last hedge had 4 sparrows. "
         "How many sparrows were in the hedges in total?")


def _reads(question: str, code: str) -> dict[tuple[float, int], int]:
    """(literal value, its position among the literals as written) -> the start of the mention it reads."""
    program = PalProgram(code)
    plan = plan_parameters(question, program)
    return {(program.literal(lid).value, program.literal(lid).order): p.mention.start
            for p in plan.params for lid, _ in p.literals}


def test_equal_numbers_in_one_expression_are_read_in_the_order_written() -> None:
    """"4 * 9 + 2 * 5 + 4": the first 4 is the hedges, the last the sparrows of the last hedge. Read in tree order the
    last 4 came first and took the hedges: every variant that sets the two apart answered for the other."""
    reads = _reads(BIRDS, "def solution():\n    ans = 4 * 9 + 2 * 5 + 4\n    return ans\n")
    assert reads[(4, 0)] == BIRDS.index("4 hedges")
    assert reads[(4, 4)] == BIRDS.index("4 sparrows.")


def test_a_number_a_variable_name_writes_tells_equal_mentions_apart() -> None:
    """``hedges_with_9_sparrows = 4`` is the 4 beside "9 sparrows", though ``sparrow_count = 4`` comes first and the
    other words of both names fit both mentions."""
    code = ("def solution():\n    sparrow_count = 4\n    hedges_with_9_sparrows = 4\n"
            "    return hedges_with_9_sparrows * 9 + 2 * 5 + sparrow_count\n")
    reads = _reads(BIRDS, code)
    assert reads[(4, 1)] == BIRDS.index("4 hedges")
    assert reads[(4, 0)] == BIRDS.index("4 sparrows.")

"""How a parameter's value is stated (``Param.reading``): read from an entry's source, so untrusted until checked."""

from __future__ import annotations

import pytest

from edge_runtime.entries.metadata import Param
from edge_runtime.errors import DefinitionError


@pytest.mark.parametrize("reading", ["eval", "__import__('os')", "", "Fraction", "MULTIPLE"])
def test_a_reading_the_runtime_does_not_know_is_refused(reading):
    with pytest.raises(DefinitionError, match="reading"):
        Param(name="p", description="p", type=float, original=1.0, reading=reading)


@pytest.mark.parametrize("reading", ["reciprocal", "multiple", "fraction"])
def test_a_reading_needs_a_number_that_can_be_read_so(reading):
    with pytest.raises(DefinitionError, match="needs a float"):
        Param(name="p", description="p", type=str, original="x", reading=reading)


def test_each_reading_states_its_value_as_a_question_would():
    assert Param(name="p", description="p", type=float, original=0.6, reading="fraction").text(0.6) == "3/5"
    assert Param(name="p", description="p", type=float, original=0.6, reading="fraction").text(2.0) == "2"
    assert Param(name="p", description="p", type=float, original=2.0, reading="reciprocal").text(3.0) == "1/3"
    assert Param(name="p", description="p", type=float, original=3.0, reading="multiple").text(4.0) == "4"

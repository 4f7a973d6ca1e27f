"""Number spans copied verbatim by the target LM must read to one exact value, or fail loudly."""

from __future__ import annotations

from fractions import Fraction

import pytest

from edge_runtime.errors import ConversionError, DefinitionError
from edge_runtime.read.values import Quantity, parse_number, parse_quantity

F = Fraction
ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen " \
       "seventeen eighteen nineteen".split()
TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()

# (text, exact value, unit)
CASES = [
    # digits, signs, separators, decimals
    ("42", 42, None), ("-7", -7, None), ("+3", 3, None), ("\u22124", -4, None), ("0", 0, None),
    ("1,200", 1200, None), ("12,345,678.5", F(24691357, 2), None), ("1 200", 1200, None),
    ("1\u202f200", 1200, None), ("1\u2009234\u2009567", 1234567, None), (".5", F(1, 2), None),
    ("0.75", F(3, 4), None), ("0.1", F(1, 10), None),
    # fractions
    ("1/2", F(1, 2), None), ("3/4", F(3, 4), None), ("3 1/2", F(7, 2), None), ("½", F(1, 2), None),
    ("¾", F(3, 4), None), ("1½", F(3, 2), None), ("2 ¼", F(9, 4), None), ("-3 1/2", F(-7, 2), None),
    # number words
    *[(word, value, None) for value, word in enumerate(ONES)],
    *[(word, 10 * value, None) for value, word in enumerate(TENS, start=2)],
    ("forty-two", 42, None), ("forty two", 42, None), ("Forty-Two", 42, None), ("NINETY-NINE", 99, None),
    ("one hundred and five", 105, None), ("one hundred five", 105, None), ("two thousand three hundred", 2300, None),
    ("two thousand and five", 2005, None), ("a hundred", 100, None), ("a thousand", 1000, None),
    ("twelve hundred", 1200, None), ("a hundred thousand", 100000, None),
    ("one million two hundred thousand", 1200000, None), ("1.2 million", 1200000, None),
    ("3 million", 3000000, None), ("two million", 2000000, None), ("a million", 1000000, None),
    ("2.5 billion", 2500000000, None), ("3 hundred", 300, None),
    # multipliers and fraction words
    ("a dozen", 12, None), ("two dozen", 24, None), ("half a dozen", 6, None), ("a pair", 2, None),
    ("a couple", 2, None), ("twice", 2, None), ("thrice", 3, None), ("once", 1, None), ("double", 2, None),
    ("triple", 3, None), ("tripled", 3, None), ("doubled", 2, None), ("quadrupled", 4, None),
    ("half", F(1, 2), None), ("a half", F(1, 2), None), ("one half", F(1, 2), None),
    ("one third", F(1, 3), None), ("two thirds", F(2, 3), None), ("a quarter", F(1, 4), None),
    ("three quarters", F(3, 4), None), ("three fourths", F(3, 4), None), ("two and a half", F(5, 2), None),
    ("one and a quarter", F(5, 4), None), ("two and three quarters", F(11, 4), None),
    ("2 and 1/2", F(5, 2), None), ("half a million", 500000, None), ("an eighth", F(1, 8), None),
    # currency
    ("$5", 5, "$"), ("$1,250.50", F(2501, 2), "$"), ("€20", 20, "€"), ("£3.99", F(399, 100), "£"),
    ("5 dollars", 5, "dollars"), ("USD 30", 30, "USD"), ("30 USD", 30, "USD"), ("¥100", 100, "¥"),
    ("-$5", -5, "$"), ("$ 12", 12, "$"), ("$1.2 million", 1200000, "$"),
    # percent: the number as written, not divided by 100
    ("35%", 35, "%"), ("12.5 %", F(25, 2), "%"), ("35 percent", 35, "%"), ("35 per cent", 35, "%"),
    ("fifty percent", 50, "%"),
    # units
    ("2.5 kg", F(5, 2), "kg"), ("10 litres", 10, "litres"), ("60 km/h", 60, "km/h"), ("3 hours", 3, "hours"),
    ("25 °C", 25, "°C"), ("25°C", 25, "°C"), ("5kg", 5, "kg"), ("two dozen eggs", 24, "eggs"),
    ("twice a day", 2, "a day"), ("3 pairs", 3, "pairs"),
    # negative words, surrounding noise
    ("minus five", -5, None), ("negative 3", -3, None), ("Minus forty-two", -42, None),
    ("  42  ", 42, None), ("42.", 42, None), ("42,", 42, None), ("2.5 kg.", F(5, 2), "kg"),
    # a share of a power of ten, as GSM-Plus writes integers
    ("3/4 of one hundred", 75, None), ("2.8 times of ten", 28, None), ("0.01 times of a million", 10000, None),
    ("1.62 times of one hundred", 162, None), ("1/3 of ten", F(10, 3), None),
]


@pytest.mark.parametrize(("text", "value", "unit"), CASES, ids=[case[0] for case in CASES])
def test_parse_quantity_reads_exact_value_and_unit(text, value, unit):
    quantity = parse_quantity(text)
    assert quantity == Quantity(value, unit, text)
    assert type(quantity.value) is (int if F(value).denominator == 1 else Fraction)


ERRORS = [
    "", "   ", "many", "some apples", "2 or 3", "between 4 and 5", "5 and 7", "1/0", "abc123def",
    "two or three", "5 or more", "2-3", "3 - 1/2", "5 to 7", "1,2", "1,2000", "1.2.3", "five seven",
    "forty forty", "third", "a", "half a", "kg", "$", "-", "one thousand thousand", "2 hours and a half",
    "$5 USD", "--5", "minus -5", "5:30", "1 3/2", "about 5", "hundreds", "two hundreds", "one pair",
    "twenty-fourth", "twenty first", "21st", "3 quarters", "two third", "2 and 0.5", "zero point five", "1e5",
    "5 kg or more", "2.5 thousand one dozen", "3 a", "5 and more", "1/0 of ten",
]


@pytest.mark.parametrize("text", ERRORS)
def test_parse_quantity_refuses_what_is_not_one_number(text):
    with pytest.raises(ConversionError) as caught:
        parse_quantity(text)
    assert repr(text) in str(caught.value)


NUMBERS = [
    ("42", int, 42), ("forty-two", float, 42.0), ("2.5", float, 2.5), ("0.1", Fraction, F(1, 10)),
    ("1/3", Fraction, F(1, 3)), ("one third", float, 1 / 3), ("1.2 million", int, 1200000),
    ("35%", int, 35), ("35%", float, 35.0), ("$1,250.50", Fraction, F(2501, 2)), ("3.0", int, 3),
    ("a dozen", int, 12), ("two and a half", float, 2.5), ("12.5 %", Fraction, F(25, 2)),
]


@pytest.mark.parametrize(("text", "kind", "expected"), NUMBERS)
def test_parse_number_coerces_to_kind(text, kind, expected):
    number = parse_number(text, kind)
    assert number == expected and type(number) is kind


def test_parse_number_defaults_to_float():
    assert parse_number("3") == 3.0 and type(parse_number("3")) is float


@pytest.mark.parametrize(("text", "kind"), [("2.5", int), ("half", int), ("1/3", int), ("42", str), ("42", bool)])
def test_parse_number_refuses_lossy_or_unknown_kinds(text, kind):
    with pytest.raises(ConversionError) as caught:
        parse_number(text, kind)
    assert repr(text) in str(caught.value)


def test_parse_quantity_rejects_non_text():
    with pytest.raises(ConversionError):
        parse_quantity(42)  # type: ignore[arg-type]


def test_quantity_is_immutable():
    with pytest.raises(AttributeError):
        parse_quantity("2 kg").value = 3  # type: ignore[misc]


def test_a_reciprocal_reading_and_its_rendering():
    from edge_runtime.entries.metadata import Param, declared_params, param_from_dict
    from edge_runtime.errors import ParameterValidationError
    from edge_runtime.read.param_values import read_param

    divisor = Param("share", "the share, as a divisor", float, 2.0, minimum=0, exclusive_minimum=True, reading="reciprocal")
    assert read_param(divisor, "half") == 2.0
    assert read_param(divisor, "two thirds") == 1.5
    assert read_param(divisor, "a quarter") == 4.0
    assert divisor.text(3.0) == "1/3" and divisor.text(1.5) == "2/3"
    with pytest.raises(ParameterValidationError):
        read_param(divisor, "zero")
    assert param_from_dict(declared_params([divisor])[0]) == divisor
    assert Param("x", "x", float, 0.5).text(1 / 3) == "1/3" and Param("x", "x", float, 0.5).text(0.25) == "0.25"
    with pytest.raises(DefinitionError):
        Param("n", "n", int, 2, reading="reciprocal")  # a reciprocal is not a whole number


def test_an_entrys_answer_minimum_travels_in_bundle_data_and_is_checked():
    from dataclasses import replace

    from edge_runtime.entries.metadata import EntryPoint, Param, entry_from_dict, entry_to_dict
    from edge_runtime.errors import DefinitionError

    entry = EntryPoint(id="e", description="d", template="{n} eggs", params=(Param("n", "eggs", int, 3),), root="r",
                       answer_key="answer", answer_minimum=0.0)
    assert entry_from_dict(entry_to_dict(entry)) == entry
    assert entry_from_dict(entry_to_dict(replace(entry, answer_minimum=None))).answer_minimum is None
    for bad in ("0", float("nan"), True, [0]):
        with pytest.raises(DefinitionError, match="answer_minimum"):
            entry_from_dict({**entry_to_dict(entry), "answer_minimum": bad})


@pytest.mark.parametrize("text, value", [
    ("half of 40", 20), ("3/5 of 20", 12), ("3/4 of 40", 30), ("half of ten", 5), ("half of a thousand", 500),
    ("a quarter of 80", 20), ("1.5 times of 8", 12),
])
def test_a_share_of_a_number_is_one_number(text, value):
    assert parse_quantity(text).value == value


@pytest.mark.parametrize("text", ["2 of 5", "half of 40 apples", "half of -4"])
def test_what_is_not_a_share_of_a_number_is_refused(text):
    with pytest.raises(ConversionError):
        parse_quantity(text)


def test_a_span_that_runs_into_another_sentence_is_no_quantity():
    with pytest.raises(ConversionError, match="runs past its sentence"):
        parse_quantity("four. None of the eggs are counted")
    assert parse_quantity("4 sq. ft.").unit == "sq. ft" and parse_quantity("3 p.m.").value == 3

"""plain/1 reads digits, decimals and fractions, no number words, and guards by structure alone."""

from __future__ import annotations

from fractions import Fraction

import pytest

from edge_runtime.entries.metadata import EntryPoint, Param
from edge_runtime.errors import ConversionError, ExtractionError
from edge_runtime.read.extractor import Extractor
from edge_runtime.read.packs import load_pack

PLAIN = load_pack({"pack": "plain/1"})
EN = load_pack(None)


@pytest.mark.parametrize("text, value, unit", [
    ("3 apples", 3, "apples"), ("2.5 kg", Fraction(5, 2), "kg"), ("1/2", Fraction(1, 2), None),
    ("3 1/2", Fraction(7, 2), None), ("$1,250.50", Fraction(2501, 2), "$"), ("-40", -40, None), ("15%", 15, "%"),
    (".5", Fraction(1, 2), None),
])
def test_plain_reads_digits_decimals_and_fractions(text, value, unit):
    quantity = PLAIN.read_quantity(text)
    assert quantity.value == value and quantity.unit == unit


@pytest.mark.parametrize("text", ["three", "a dozen", "half", "twice", "forty-two", "2 or 3", "1/0", "", "5 - 3",
                                  "3/4 of one hundred", "10 square metres"])
def test_plain_reads_no_number_words_and_nothing_but_one_number(text):
    with pytest.raises(ConversionError):
        PLAIN.read_quantity(text)
    if text == "three":
        assert EN.read_quantity(text).value == 3  # the default pack does


def test_plain_scans_only_numbers_in_digits():
    mentions = PLAIN.scan("Tom has three boxes of 12 eggs, a half of them cost $2.50 each, 15% off, on the 1st.")
    assert [m.text for m in mentions] == ["12", "2.50", "15"]
    assert mentions[1].money and mentions[2].percent and mentions[2].values == (15.0, 0.15)
    assert [m.text for m in EN.scan("three boxes of 12 eggs, a half")] == ["three", "12", "a half"]


RATE = EntryPoint(
    id="rate", description="cost of a number of items", root="cost",
    template="A box holds {n} items at ${price} each. How much do 2 boxes cost?",
    params=(Param("n", "items per box", type=int, original=12, minimum=0),
            Param("price", "price of one item in dollars", type=float, original=1.5, minimum=0)),
)


def test_plain_guard_keeps_the_structural_checks():
    guard = PLAIN.make_guard()
    values = {"n": 10, "price": 2.0}
    reworded = "A crate holds 10 items at $2 each. How much do 2 crates cost?"
    assert guard(RATE, reworded, values, "aligned") is None
    assert "not a number the question states" in guard(RATE, reworded.replace("10 items", "11 items"), values, "aligned")
    assert "does not state" in guard(RATE, reworded.replace("2 crates", "3 crates"), values, "aligned")  # a constant
    added = "A crate holds 10 items at $2 each and 4 spare items. How much do 2 crates cost?"
    assert "'4'" in guard(RATE, added, values, "aligned")
    # no phrase rules: "another" and a number word are words to plain/1; the default pack refuses both
    another = "A crate holds 10 items at $2 each, plus another crate. How much do 2 crates cost?"
    assert guard(RATE, another, values, "aligned") is None
    assert EN.make_guard()(RATE, another, values, "aligned") is not None


def test_plain_serves_the_template_path_and_never_reads_a_reworded_question_with_the_model():
    extractor = Extractor(None, reading=PLAIN)
    assert extractor.extract(RATE, "A box holds 7 items at $0.5 each. How much do 2 boxes cost?").values == {
        "n": 7, "price": 0.5}
    with pytest.raises(ExtractionError) as info:  # "seven" matches the template but is no number to plain/1
        extractor.extract(RATE, "A box holds seven items at $0.5 each. How much do 2 boxes cost?")
    assert info.value.reason == "validation_failed"
    assert Extractor(None).extract(RATE, "A box holds seven items at $0.5 each. How much do 2 boxes cost?").values["n"] == 7
    extractor.engine = _NoEngine()  # a loaded target model: plain/1 must miss before asking it
    with pytest.raises(ExtractionError, match="reads no reworded question"):
        extractor.extract(RATE, "What do two boxes of 7 items at $0.5 cost?")
    disclaimed = ("She sold a third of her 30 vacuums at the green house, then baked 12 cupcakes for a fair, which is "
                  "irrelevant to her sales.  She sold 2 more to the red house. How many are left?")
    assert PLAIN.set_aside(disclaimed) is None  # no set-aside phrases
    assert EN.set_aside(disclaimed).removed


class _NoEngine:
    """Stands for a loaded target model; any use of it fails the test."""

    def __getattr__(self, name):
        raise AssertionError(f"plain/1 used the target model ({name})")


def test_the_aligner_reads_with_the_pack_s_words():
    """The aligned path's English (number words, "another", time units, common words) is the default pack's;
    plain/1's aligner has none, so it cannot tell a rename from a changed quantity ("twice" → "thrice"): it takes
    a question only where the words are the template's and the values alone differ."""
    from edge_runtime.read.template_align import AlignWords, aligned_values

    assert PLAIN.align_words == AlignWords() and not PLAIN.align_words.quantity and not PLAIN.align_words.renames
    assert "twice" in EN.align_words.quantity and "another" in EN.align_words.adding and EN.align_words.renames
    template = "Tom buys {n} red pens at twice the price of a pencil.  How many pens does Tom have?"
    params = (Param(name="n", description="pens", type=int, original=4),)
    spaced = "Tom buys 6 red pens at twice the price of a pencil. How many pens does Tom have?"
    for pack in (PLAIN, EN):
        assert aligned_values(template, params, spaced, words=pack.align_words) == {"n": "6"}
    renamed = spaced.replace("Tom", "Ann")
    assert aligned_values(template, params, renamed, words=EN.align_words) == {"n": "6"}
    assert aligned_values(template, params, renamed) == {"n": "6"}  # no words named: the default pack's
    assert aligned_values(template, params, renamed, words=PLAIN.align_words) is None
    changed = renamed.replace("twice", "thrice")
    for pack in (PLAIN, EN):  # a constant changed: the default pack knows "thrice"; plain/1 takes no changed word
        assert aligned_values(template, params, changed, words=pack.align_words) is None
    worded = spaced.replace("6", "six")
    assert aligned_values(template, params, worded, words=EN.align_words) == {"n": "six"}
    assert aligned_values(template, params, worded, words=PLAIN.align_words) is None  # no digits in the slot

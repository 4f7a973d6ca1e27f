"""The re-parameterisation probes: other values inside each domain, other names of the same gender, number words,
and an expected answer only where the device read the exact rendering back."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("faker")

from builder.eval.reparam_probe import (  # noqa: E402
    CURRENCY,
    EXACT,
    KINDS,
    NAMES,
    OBJECTS,
    Names,
    draw_values,
    generate,
    number_word,
    render,
    swap_names,
)
from edge_runtime.entries.metadata import EntryPoint, Param  # noqa: E402


def _entry() -> EntryPoint:
    return EntryPoint(
        id="gsm8k-0099", description="plants", root="answer",
        template="Mary has {ledges} ledges with {per} plants each. She gives 1 plant per ledge to Tom. How many are left?",
        question="Mary has 40 ledges with 2 plants each. She gives 1 plant per ledge to Tom. How many are left?",
        params=(Param("ledges", "ledges", int, 40, minimum=0), Param("per", "plants per ledge", int, 2, minimum=0)),
    )


def test_names_are_swapped_consistently_within_gender_and_never_a_dev_name() -> None:
    names = Names.load({"Linda", "Walter"})
    genders = names.genders
    text = "Mary met Tom. Mary gave Tom's dog 3 bones on Monday in May."
    out = swap_names(text, names, random.Random(0))
    assert out is not None and "Mary" not in out and "Tom" not in out
    assert "Monday" in out and "May" in out  # dates are not people
    first = out.split()[0]
    assert out.count(first) == 2 and genders[first] == "female"
    assert "Linda" not in out and "Walter" not in out
    assert swap_names("A farm has 3 cows.", names, random.Random(0)) is None


def test_values_stay_in_the_domain_and_one_stays_one() -> None:
    entry = _entry()
    for seed in range(30):
        values = draw_values(entry, random.Random(seed))
        assert 14 <= values["ledges"] <= 120 and values["ledges"] != 40
        assert values["per"] >= 2
        entry.validate(values)
    one = EntryPoint(id="e", description="d", root="r", template="{k} cat", params=(Param("k", "k", int, 1),))
    assert draw_values(one, random.Random(0)) == {"k": 1}


def test_number_words_replace_whole_values_only() -> None:
    assert number_word(7) == "seven" and number_word(40) == "forty" and number_word(41) is None
    entry = _entry()
    text, worded = render(entry, {"ledges": 30, "per": 7}, True, random.Random(0))
    assert worded and ("thirty" in text or "seven" in text)
    assert "1 plant" in text  # the template's own numbers are never touched
    plain, worded = render(entry, {"ledges": 31, "per": 23}, True, random.Random(0))
    assert not worded and "31" in plain and "23" in plain


def test_every_probe_carries_the_answer_the_device_gave_for_the_exact_rendering() -> None:
    entry = _entry()
    asked: list[str] = []

    def ask(e, query, values):
        asked.append(query)
        return values["ledges"] * values["per"] - values["ledges"]

    probes = generate([entry], ask, Names.load(), {"gsm8k-0099": "verified"})
    kinds = [p.kind for p in probes]
    assert kinds[0] == EXACT and NAMES in kinds and OBJECTS in kinds and set(kinds) <= set(KINDS)
    assert CURRENCY not in kinds  # no price in this question
    assert asked == [probes[0].query]  # only the exact rendering reaches the device
    values = probes[0].values
    assert all(p.answer == values["ledges"] * values["per"] - values["ledges"] for p in probes)
    assert all(p.verification == "verified" and p.gsm8k_row == 99 and p.half in ("tune", "check") for p in probes)
    assert generate([entry], ask, Names.load(), {}) == [
        p.__class__(**{**p.row(), "verification": "unverified"}) for p in probes]  # deterministic
    calls: list[str] = []
    assert generate([entry], lambda e, q, v: calls.append(q), Names.load(), {}, draws=3) == []  # never read back
    assert len(calls) == 3  # drawn again, then given up


def test_a_slot_inside_a_fraction_or_a_price_keeps_its_digits() -> None:
    entry = EntryPoint(id="e", description="d", root="r", template="She ate 2/{d} of ${p} worth and {n} more.",
                       params=(Param("d", "d", int, 9), Param("p", "p", int, 5), Param("n", "n", int, 4)))
    for seed in range(10):
        text, worded = render(entry, {"d": 7, "p": 6, "n": 3}, True, random.Random(seed))
        assert worded and text == "She ate 2/7 of $6 worth and three more."


def test_a_counted_object_is_renamed_throughout_with_its_article_and_units_are_not() -> None:
    from builder.eval.reparam_probe import _THING_PHRASES, swap_currency, swap_objects

    template = "Janet's ducks lay {a} eggs a day. She eats an egg and walks {m} miles. Each egg sells for ${p}."
    out = swap_objects(template, random.Random(0))
    assert out is not None and "egg" not in out and "miles" in out and "{a}" in out and "${p}" in out
    new = out.split("{a} ")[1].split()[0]
    singular = new[:-3] + "y" if new.endswith("ies") else new[:-2] if new.endswith(("oes", "ches")) else new[:-1]
    article = "an" if singular[0] in "aeiou" else "a"
    assert f"eats {article} {singular}" in out and f"Each {singular} sells" in out
    assert swap_objects("She walks {m} miles in {h} hours.", random.Random(0)) is None
    two_words = swap_objects(template, random.Random(0), _THING_PHRASES)  # GSM-Symbolic's renames of another length
    assert two_words is not None and "egg" not in two_words
    named = two_words.split("{a} ")[1].split(" a day")[0]  # "paper cups" ... "a paper cup"
    singular = {plural: single for single, plural in _THING_PHRASES}[named]
    assert len(named.split()) == 2 and f"eats a {singular}" in two_words and f"Each {singular} sells" in two_words
    assert swap_currency("A pen is $3 and a pad $2.5.", random.Random(0)) in (
        "A pen is €3 and a pad €2.5.", "A pen is £3 and a pad £2.5.")
    assert swap_currency("A pen is $3, or 300 cents.", random.Random(0)) is None  # "cents" would then be wrong


def test_reordered_statements_exchange_two_neighbouring_givens_and_keep_the_question_last():
    import random

    from builder.eval.reparam_probe import reorder_statements

    template = "Ann has {a} pens. Bob has {b} pens. Cy has 3 caps. How many pens do they have?"
    out = reorder_statements(template, random.Random(0))
    assert out == "Bob has {b} pens. Ann has {a} pens. Cy has 3 caps. How many pens do they have?"
    assert reorder_statements("Ann has {a} pens. How many pens?", random.Random(0)) is None
    assert reorder_statements("Ann has {a} pens. Cy has caps. Bob has {b}. How many?", random.Random(0)) is None

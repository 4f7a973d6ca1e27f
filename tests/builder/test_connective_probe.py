"""Changed questions whose small words join or change amounts otherwise (builder/eval/connective_probe.py)."""

from __future__ import annotations

from builder.eval.connective_probe import connective_swapped


def test_and_between_amounts_and_a_change_by_an_amount_are_swapped_once_each():
    question = ("A store has 48 grey shirts and 110 floral shirts. Later the price was increased by $4. How many "
                "shirts and ties are there?")
    assert dict(connective_swapped(question)) == {
        "and->or": ("A store has 48 grey shirts or 110 floral shirts. Later the price was increased by $4. How many "
                    "shirts and ties are there?"),
        "by->to": ("A store has 48 grey shirts and 110 floral shirts. Later the price was increased to $4. How many "
                   "shirts and ties are there?"),
    }
    assert connective_swapped("Tom and Ann walk 3 miles. How far do they walk?") == []

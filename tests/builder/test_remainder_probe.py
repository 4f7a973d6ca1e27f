"""Changed questions that no longer take what remains (builder/eval/remainder_probe.py)."""

from __future__ import annotations

import json
from pathlib import Path

from builder.eval import rewritten_probe
from builder.eval.remainder_probe import REPLACED, remainder_replaced


def test_the_first_word_taking_what_remains_is_replaced_by_each_other_part():
    question = "Ann has 40 shells. She gives 10 to Bo and sells half of the remaining shells. How many are left?"
    changed = dict(remainder_replaced(question))
    assert set(changed) == {f"remaining->{b}" for b in REPLACED["remaining"]}
    assert changed["remaining->broken"] == ("Ann has 40 shells. She gives 10 to Bo and sells half of the broken "
                                            "shells. How many are left?")
    assert remainder_replaced("A train goes 60 miles in 2 hours. How far does it go in 5 hours?") == []


def test_the_written_set_holds_only_changed_questions(tmp_path: Path):
    out = tmp_path / "rem.jsonl"
    counts = rewritten_probe.write(out, remainder_replaced, label="remainder", per_template=1)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and len(rows) == sum(counts.values())
    assert all(r["reasoning_changed"] and r["answer"] == "None" and r["half"] in ("tune", "check") for r in rows)
    assert {r["kind"].split("remainder, ", 1)[1].split("->")[0] for r in rows} <= set(REPLACED)

"""The generated changed-question sets (builder/eval/rewritten_probe.py and its generators)."""

from __future__ import annotations

import pytest

from builder.eval import added_quantity_probe, final_question_probe
from builder.eval.querysets import load_query_set


@pytest.mark.parametrize("generator", [final_question_probe, added_quantity_probe])
def test_the_query_set_has_both_halves_and_every_row_must_miss(tmp_path, generator):
    out = tmp_path / "rows.jsonl"
    counts = generator.write(out, per_template=1)
    assert {half for half, _ in counts} == {"tune", "check"}
    rows = load_query_set(out).rows
    assert len(rows) == sum(counts.values()) and all(not r.should_serve for r in rows)
    assert generator.main(["write", str(tmp_path / "again.jsonl"), "--per-template", "1"]) == 0
    assert (tmp_path / "again.jsonl").read_text() == out.read_text()  # the same rows every time

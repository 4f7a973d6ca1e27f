"""The template probes: rows rendered from templates written apart from the code, answers from their own lambdas."""

from __future__ import annotations

import json
import re

import pytest

from builder.eval.gsm_data import GSM8K_TEST
from builder.eval.template_probe import (
    FRESH,
    TEMPLATES,
    compile_lambda,
    load_templates,
    numbers_blanked,
    probe_split,
    report,
    write,
)


@pytest.mark.parametrize("source", [
    "lambda v: v.__class__", "lambda v: __import__('os').system('true')", "lambda v: open('/etc/passwd').read()",
    "lambda v: [c for c in ().__class__.__bases__]", "v['a'] + 1",
])
def test_a_template_expression_is_arithmetic_only(source):
    with pytest.raises(ValueError):
        compile_lambda(source)


def test_a_template_expression_computes_from_the_slot_values():
    share = compile_lambda("lambda v: v['n'] * int(v['f'].split('/')[0]) // int(v['f'].split('/')[1])")
    assert share({"n": 12, "f": "2/3"}) == 8


@pytest.mark.skipif(not GSM8K_TEST.exists(), reason="../shared/data/gsm8k is not here")
def test_every_template_gives_the_gold_answer_on_the_original_values():
    gold = [float(json.loads(line)["answer"].split("####")[-1].replace(",", "")) for line in open(GSM8K_TEST, encoding="utf-8")]
    raw = json.loads(TEMPLATES.read_text(encoding="utf-8"))["templates"]
    for template, spec in zip(load_templates(), raw):
        base = template.variants[0]
        assert base.condition(spec["original"]), template.gsm8k_row
        assert base.answer(spec["original"]) == pytest.approx(gold[template.gsm8k_row]), template.gsm8k_row


@pytest.mark.skipif(not GSM8K_TEST.exists(), reason="../shared/data/gsm8k is not here")
def test_the_fresh_templates_give_the_gold_answer_and_are_seeded_from_other_rows(tmp_path):
    """The second tune half: other GSM8K rows than the first templates and the dev sets, each right on its original
    values, each with an added clause and a changed final question."""
    from builder.eval.gsm_bundle import dev_entry_ids

    gold = [float(json.loads(line)["answer"].split("####")[-1].replace(",", "")) for line in open(GSM8K_TEST, encoding="utf-8")]
    raw = json.loads(FRESH.read_text(encoding="utf-8"))["templates"]
    fresh = load_templates(FRESH, None)
    for template, spec in zip(fresh, raw):
        assert base_right(template, spec, gold), template.gsm8k_row
        assert [v.kind for v in template.variants] == ["reparam", "added_clause", "changed_question"], template.gsm8k_row
    rows = {t.gsm8k_row for t in fresh}
    assert len(rows) == 64 and not rows & {t.gsm8k_row for t in load_templates()}
    assert not {f"gsm8k-{r:04d}" for r in rows} & dev_entry_ids()
    counts = write(tmp_path / "fresh.jsonl", per_template=8, path=FRESH, more=None)
    assert {half for half, _ in counts} == {"fresh"} and counts[("fresh", "reparam")] == 64 * 8


def base_right(template, spec, gold) -> bool:
    base = template.variants[0]
    return bool(base.condition(spec["original"])) and base.answer(spec["original"]) == pytest.approx(gold[template.gsm8k_row])


def test_the_query_set_has_both_halves_and_changed_rows_never_answer_as_the_base(tmp_path):
    out = tmp_path / "probes.jsonl"
    counts = write(out, per_template=4)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {half for half, _ in counts} == {"tune", "check"}
    assert {kind for _, kind in counts} == {"reparam", "added_clause", "changed_question", "reversed", "more added_clause",
                                            "more changed_question"}
    assert {half for half, kind in counts if kind.startswith("more ")} == {"tune", "check"}
    assert len(rows) == sum(counts.values()) and all(not re.search(r"\{\w+\}", r["query"]) for r in rows)
    by_row = {t.gsm8k_row: t for t in load_templates()}
    for row in rows:
        if row.get("reasoning_changed"):  # the base reasoning on the same question would be served wrong
            assert row["kind"] != "template probe: reparam"
    assert len(by_row) == 179
    for template in by_row.values():  # a changed variant is not the base text with its numbers in each other's places
        base = template.variants[0]
        blank = numbers_blanked(base.template, base.slots)
        assert all(numbers_blanked(v.template, base.slots) != blank for v in template.variants[1:])
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps({"kind": rows[0]["kind"], "x_half": rows[0]["half"], "served": True, "should_serve": True,
                                   "correct": False, "miss_reason": ""}) + "\n")
    assert report(records) == {f"{rows[0]['half']} / reparam": {"rows": 1, "served wrong": 1}}


def test_the_probe_split_bundles_every_probed_entry_and_never_holds_one_out(tmp_path):
    rows = sorted({t.gsm8k_row for t in load_templates()})
    (tmp_path / "entries").mkdir()
    accepted = [f"gsm8k-{r:04d}" for r in range(1319) if r % 3]  # a registry that rejected every third row
    for entry_id in accepted:
        (tmp_path / "entries" / f"{entry_id}.py").write_text("")
    split = probe_split(tmp_path, dev_ids={"gsm8k-0001"})
    probed = {f"gsm8k-{r:04d}" for r in rows} & set(accepted)
    assert probed and probed <= set(split.bundle_ids)
    assert not probed & set(split.unrelated_ids)
    assert set(split.bundle_ids) | set(split.unrelated_ids) == set(accepted)
    assert "gsm8k-0001" in split.bundle_ids

"""The before/after comparer of eval records: timings aside, every other difference is found."""

from __future__ import annotations

import json

from builder.eval.compare_records import compare, main


def _row(index: int, **extra):
    return {"set": "s", "system": "arc", "index": index, "served": True, "answer": 4, "path": "template",
            "latency_ms": 3.0, "server_ms": {"is1": 0.1}, **extra}


def test_timings_alone_are_no_difference():
    result = compare([_row(0), _row(1)], [_row(1, latency_ms=9.0, server_ms={"is1": 5}), _row(0)])
    assert result.identical and result.compared == 2


def test_every_other_difference_is_listed():
    before = [_row(0), _row(1), _row(2, kept="x")]
    after = [_row(0, answer=5), _row(3), _row(2)]
    result = compare(before, after)
    assert not result.identical
    assert result.compared == 2
    assert [(k, f) for k, f, _, _ in result.differences] == [(("s", "arc", 0), "answer"), (("s", "arc", 2), "kept")]
    assert result.only_before == [("s", "arc", 1)] and result.only_after == [("s", "arc", 3)]
    assert "rows differing: 2" in result.summary()


def test_cli_exit_status(tmp_path, capsys):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(json.dumps(_row(0)) + "\n")
    b.write_text(json.dumps(_row(0, path="aligned")) + "\n")
    assert main([str(a), str(a)]) == 0
    assert main([str(a), str(b)]) == 1
    assert "path: 'template' -> 'aligned'" in capsys.readouterr().out
    assert main([str(a), str(b), "--ignore", "path"]) == 0

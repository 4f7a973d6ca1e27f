"""``arc-build bundle --reading``: a wrong pack or settings fail at once, before the slow set-up, in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.cli import main

EXAMPLES = str(Path(__file__).resolve().parents[2] / "bundles" / "examples")


@pytest.mark.parametrize("extra, fragment", [
    (["--reading", "invoices/1"], "unknown reading pack 'invoices/1'; this runtime knows en-word-problems/1, plain/1"),
    (["--reading", "plain/1", "--reading-settings", '{"target_overlap": 0.5}'], "it takes no settings"),
    (["--reading", "en-word-problems/1", "--reading-settings", '{"target_overlap": "x"}'], "must be float"),
    (["--reading", "en-word-problems/1", "--reading-settings", "{oops"], "--reading-settings is not JSON"),
    (["--reading-settings", "{}"], "--reading-settings needs --reading PACK"),
])
def test_a_wrong_reading_fails_before_any_set_up(extra, fragment, capsys, monkeypatch):
    import builder.pipeline

    def never(*args, **kwargs):
        raise AssertionError("make_bundle ran before the reading was checked")

    monkeypatch.setattr(builder.pipeline, "make_bundle", never)
    code = main(["bundle", EXAMPLES, "--name", "x", "--version", "1", *extra])
    err = capsys.readouterr().err
    assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1


def test_the_reading_reaches_make_bundle(monkeypatch, tmp_path):
    import builder.pipeline

    seen = {}

    def fake(*args, **kwargs):
        seen.update(kwargs)
        return tmp_path / "x-1.arcb"

    monkeypatch.setattr(builder.pipeline, "make_bundle", fake)
    assert main(["bundle", EXAMPLES, "--name", "x", "--version", "1", "--no-target-model", "--reading",
                 "en-word-problems/1", "--reading-settings", '{"target_overlap": 1}']) == 0
    assert seen["reading"] == {"pack": "en-word-problems/1", "settings": {"target_overlap": 1.0}}

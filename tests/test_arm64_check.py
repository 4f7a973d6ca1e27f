"""benchmarks/arm64.py's budgets and question draw (the emulated run itself needs root and tens of minutes)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def arm64():
    sys.path.insert(0, str(REPO / "benchmarks"))
    import arm64 as module

    return module


def _serve_defaults(monkeypatch) -> object:
    from edge_runtime import cli

    seen = {}
    monkeypatch.setitem(cli._COMMANDS, "serve", lambda args: seen.setdefault("args", args) and 0)
    cli._main(["serve"])
    return seen["args"]


def test_the_x86_reference_keeps_arc_edge_serve_defaults(arm64, monkeypatch):
    """The x86 side is what a device ships with: its budgets are arc-edge serve's own defaults."""
    defaults = _serve_defaults(monkeypatch)
    native = arm64.Budgets()
    assert native.entry_seconds == defaults.entry_timeout
    assert native.lm_call_seconds == defaults.lm_call_seconds
    assert native.serve_flags() == ["--entry-timeout", f"{defaults.entry_timeout:g}",
                                    "--lm-call-seconds", f"{defaults.lm_call_seconds:g}"]


def test_emulated_budgets_fit_emulation(arm64, monkeypatch):
    """Under qemu one model pass took ~60 s: a model call may take minutes, an entry several calls, and the
    client must wait longer than the entry may run (else the deadline, not the entry, ends the question)."""
    defaults = _serve_defaults(monkeypatch)
    emulated = arm64.EMULATED
    assert emulated.lm_call_seconds >= 120 > defaults.lm_call_seconds
    assert emulated.entry_seconds >= 2 * emulated.lm_call_seconds
    assert emulated.request_seconds > emulated.entry_seconds
    assert arm64.Budgets().request_seconds > arm64.Budgets().entry_seconds


def test_gsm_questions_are_spread_over_the_templates(arm64, tmp_path):
    """The set's rows come grouped by template; the first n would be a handful of templates."""
    rows = [{"query": f"q{t}-{i}", "template_id": t} for t in range(10) for i in range(6)]
    path = tmp_path / "gsm_symbolic_dev.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    questions = arm64.gsm_questions(path, 10)
    assert len(questions) == 10
    assert {q.split("-")[0] for q in questions} == {f"q{t}" for t in range(10)}
    assert arm64.gsm_questions(path, 100) == [r["query"] for r in rows]
    assert arm64.gsm_questions(None, 5) == [] and arm64.gsm_questions(path, 0) == []

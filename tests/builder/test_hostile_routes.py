"""Hostile entry code on every build route runs only behind the walls, never in the builder's process.

The validator is taken away for these tests (tests/builder/hostile_probe.py: every source passes,
entry code gets the full builtins), so the probe really runs, and each test checks where: it
reports, in the rejection it causes, that it could not read the 0600 signing key, saw no
``ANTHROPIC_API_KEY`` and ran under another pid; the marker file it writes wherever it can never
appears. Routes: ``arc-build compile-entries`` and ``bundle`` (the confined compile),
``arc-build import-pot --workers 1`` (the importer's confined worker) and ``arc-build entries``
(the LLM builder's confined session, against the loopback Messages stub).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from hostile_probe import API_KEY, assert_confined, bypass_targets, probe_statement, signing_key, write_sitecustomize

REPO = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).parent / "fixtures" / "llm_build.json"
# The stub answers as the default models, which the SDK calls deprecated.
pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

ENTRY = '''
from edge_runtime.semantic import load, narrate, semantic_function

PROBE


@semantic_function("Add one", inputs={"the number": 1}, outputs={"the result": 2})
def add_one(ctx):
    narrate(ctx, "adds one")
    return {"the result": load(ctx, "the number", int) + 1}
'''


@pytest.fixture
def bypassed(monkeypatch, tmp_path):
    """The validator gone in this process and in every child interpreter; the API key in the environment."""
    for module, name, value in bypass_targets(importer=True):
        monkeypatch.setattr(module, name, value)
    site = write_sitecustomize(tmp_path / "site")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), str(REPO)]))
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    return tmp_path / "marker", signing_key(tmp_path / "keys")


@pytest.mark.parametrize("command", ["compile-entries", "bundle"])
def test_compile_entries_and_bundle_run_hostile_code_only_confined(command, bypassed, tmp_path):
    marker, secret = bypassed
    sources = tmp_path / "entries"
    sources.mkdir()
    (sources / "hostile.py").write_text(ENTRY.replace("PROBE", probe_statement(marker, secret)), encoding="utf-8")
    args = [sys.executable, "-m", "builder.cli", command, str(sources), "--out", str(tmp_path / "out")]
    if command == "bundle":
        args += ["--name", "hostile", "--version", "1", "--no-target-model", "--key", str(secret)]
    env = {**os.environ, "ARC_KEY_DIR": str(tmp_path / "keys")}
    done = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert_confined(done.stdout + done.stderr, marker)


def test_import_pot_with_one_worker_runs_hostile_programs_only_confined(bypassed, tmp_path):
    from builder.cli import main

    marker, secret = bypassed
    question = "Tom has 5 apples and buys 7 more. How many apples does he have?"
    reference = tmp_path / "mini_test.jsonl"
    reference.write_text(json.dumps({"question": question, "answer": "5 + 7 = 12\n#### 12"}) + "\n")
    code = (f'def solution():\n    """{question}"""\n    {probe_statement(marker, secret)}\n'
            '    a = 5\n    b = 7\n    return a + b\n')
    source = tmp_path / "pot.jsonl"
    source.write_text(json.dumps({"code": code}) + "\n")
    out = tmp_path / "registry"
    with redirect_stdout(io.StringIO()):
        assert main(["import-pot", str(source), "--reference", str(reference), "--registry", str(out), "--json",
                     "--workers", "1"]) == 0
    assert_confined((out / "rejections.jsonl").read_text(encoding="utf-8"), marker, os.getpid())


def test_llm_builder_runs_hostile_candidates_only_confined(bypassed, tmp_path):
    """The builder model's first candidate for the bus question carries the probe; it is refused at
    registration (in the confined session) and the build goes on to accept the entry."""
    from builder.cli import main
    from builder.llm.stub_server import StubMessagesServer

    marker, secret = bypassed
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    script = data["script"]
    first = next(i for i, item in enumerate(script) if item.get("tool") == "submit_function")
    hostile = json.loads(json.dumps(script[first]))
    hostile["input"]["source_lines"] = [probe_statement(marker, secret), "", *hostile["input"]["source_lines"]]
    script.insert(first, hostile)
    for item in script:
        answer = item.get("input")
        if isinstance(answer, dict) and "source_lines" in answer:
            answer["source"] = "\n".join(answer.pop("source_lines"))
    transcripts = tmp_path / "transcripts.jsonl"
    transcripts.write_text(json.dumps(data["transcripts"][0]) + "\n")
    registry = tmp_path / "reg"
    with StubMessagesServer(script) as stub, redirect_stdout(io.StringIO()) as printed:
        code = main(["entries", str(transcripts), "--registry", str(registry), "--base-url", stub.base_url,
                     "--round-trips", "4", "--json"])
    assert code == 0 and json.loads(printed.getvalue())["accepted"] == 1
    assert_confined((registry / "build_index.jsonl").read_text(encoding="utf-8"), marker, os.getpid())


def test_the_importers_audit_registers_accepted_entries_only_confined(bypassed, tmp_path):
    """``import-pot`` re-registers every accepted entry file at the end (the audit): confined too.
    The audit reports only booleans, so here the proof is the marker (and the entry counted wrong)."""
    from builder.gsm8k import ReferenceIndex
    from builder.pot_import.batch import RegistryDir, audit_entries

    marker, secret = bypassed
    reference = tmp_path / "mini_test.jsonl"
    reference.write_text(json.dumps({"question": "What is 1 + 1?", "answer": "1 + 1 = 2\n#### 2"}) + "\n")
    out = RegistryDir(tmp_path / "registry")
    (out.entries / "gsm8k-0000.py").write_text(ENTRY.replace("PROBE", probe_statement(marker, secret)), encoding="utf-8")
    assert audit_entries(out, ReferenceIndex.load(reference), workers=1) == 1
    assert not marker.exists()

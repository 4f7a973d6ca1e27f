"""The LLM builder end to end, through the real anthropic SDK against a loopback stub of the Messages API.

The stub serves scripted answers from tests/builder/fixtures/llm_build.json (written for tests, not
model output) for three questions:
- Q1 (school bus hire): a missing tool_use answer retried; a judge fails the first root candidate,
  the rewrite prompt carries its reasons and the second candidate passes;
- Q2 (outing empty seats): a 429 and a malformed body retried; its plan names a function equivalent
  to Q1's ``buses_needed``, which is reused without an implementation call;
- Q3 (garden fence): a schema error fed back; the candidate hard-codes the width, so the round trip
  that varies the width disagrees with the source model's reference and the entry is rejected.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from builder.llm.build import BuildOptions, BuildStore, build_entries, question_key
from builder.llm.client import (
    AnswerError,
    ClientConfig,
    FatalLLMError,
    LLMClient,
    LLMError,
    Prices,
    ReplayMissError,
    Tool,
)
from builder.llm.implement import narration_problems
from builder.llm.schema import schema_errors
from builder.llm.stub_server import DEFAULT_USAGE, StubMessagesServer
from builder.llm.verify import answers_match
from edge_runtime.entries.compiler import LoadedCompiledEntry, compile_entry
from edge_runtime.entries.registry import Registry
from edge_runtime.entries.validator import validate_source

# The default models are the paper's (Opus 4.5, whose prices the table holds); the SDK warns they are deprecated.
pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

FIXTURE = Path(__file__).parent / "fixtures" / "llm_build.json"
API_KEY = "sk-test-key"
OPTIONS = BuildOptions(round_trips=4, max_tries=3)
Q1_MARK, Q2_MARK, Q3_MARK = "230 students and 12 teachers", "takes 95 members", "12 metres long and 5 metres wide"


def load_fixture() -> dict[str, Any]:
    """The fixture with each candidate's ``source_lines`` joined into ``source``."""
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert data["_fixture"] == "written for tests, not model output"
    for item in data["script"]:
        answer = item.get("input")
        if isinstance(answer, dict) and "source_lines" in answer:
            answer["source"] = "\n".join(answer.pop("source_lines"))
    return data


def config(base_url: str, **overrides: Any) -> ClientConfig:
    settings: dict[str, Any] = {"base_delay": 0.001, "max_delay": 0.01, "timeout": 30, **overrides}
    return ClientConfig(api_key=API_KEY, base_url=base_url, **settings)


def by_question(summary: dict[str, Any], mark: str) -> dict[str, Any]:
    return next(r for r in summary["reports"] if mark in r["question"])


def builder_requests(requests: list[Any], tool: str, mark: str) -> list[Any]:
    return [r for r in requests if r.role == "builder" and tool in r.tools and mark in r.raw]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One full recorded build of the three questions; the stub is stopped afterwards."""
    data = load_fixture()
    root = tmp_path_factory.mktemp("llm-build")
    cassette = root / "cassette.jsonl"
    with StubMessagesServer(data["script"]) as stub:
        client = LLMClient(config(stub.base_url, record=cassette))
        summary = build_entries(data["transcripts"], root / "registry", client, options=OPTIONS)
        client.close()
    return SimpleNamespace(summary=summary, stub=stub, requests=stub.requests, registry=root / "registry",
                           cassette=cassette, data=data, client=client)


# ---- the whole build ------------------------------------------------------------------------
def test_end_to_end_accepts_two_and_rejects_one_with_its_reason(built):
    s = built.summary
    assert (s["total"], s["accepted"], s["rejected"]) == (3, 2, 1)
    assert s["rejected_by_reason"] == {"round_trip_failed": 1}
    assert s["entries"] == ["outing-empty-seats", "school-bus-hire"]
    assert built.stub.unused() == []  # every scripted answer was asked for
    assert sorted(p.name for p in built.registry.glob("*.py")) == ["outing_empty_seats.py", "school_bus_hire.py"]
    index = [json.loads(line) for line in (built.registry / "build_index.jsonl").read_text().splitlines()]
    assert [(d["status"], d["reason"]) for d in index] == [
        ("accepted", None), ("accepted", None), ("rejected", "round_trip_failed")]


def test_judge_disagreement_forces_a_rewrite_that_carries_the_reasons(built):
    root = by_question(built.summary, Q1_MARK)["functions"][1]
    assert root["name"] == "school_bus_hire_cost" and root["status"] == "built" and root["tries"] == 2
    first, second = root["attempts"]
    assert [(v["judge"], v["verdict"]) for v in first["verdicts"]] == [("judge-1", "pass"), ("judge-2", "fail")]
    reason = first["verdicts"][1]["reasons"][0]
    assert first["problems"] == [{"stage": "judge", "judge": "judge-2", "reasons": [reason]}]
    assert [v["verdict"] for v in second["verdicts"]] == ["pass", "pass"]
    rewrites = [r for r in builder_requests(built.requests, "submit_function", Q1_MARK)
                if "previous candidate was rejected" in r.raw]
    assert len(rewrites) == 1
    prompt = rewrites[0].body["messages"][0]["content"]
    assert reason in prompt and "so we hire" in prompt  # the reasons and the rejected source


def test_a_missing_tool_use_answer_is_retried_with_feedback(built):
    first, second = builder_requests(built.requests, "record_isolation", Q1_MARK)
    assert len(first.body["messages"]) == 1
    user, assistant, feedback = second.body["messages"]
    assert [b["type"] for b in assistant["content"]] == ["thinking", "text"]
    assert assistant["content"][0]["signature"]  # thinking blocks go back intact
    assert "did not call the `record_isolation` tool" in feedback["content"]


def test_a_malformed_body_is_retried_and_a_429_backed_off(built):
    decompositions = builder_requests(built.requests, "record_decomposition", Q2_MARK)
    assert [("raw" in (r.served or {})) for r in decompositions] == [True, False]
    assert decompositions[0].body == decompositions[1].body  # nothing to answer to: the same request again
    isolations = builder_requests(built.requests, "record_isolation", Q2_MARK)
    assert [r.served.get("status") for r in isolations] == [429, None]
    assert by_question(built.summary, Q2_MARK)["status"] == "accepted"


def test_a_schema_error_goes_back_as_a_tool_result(built):
    first, second = builder_requests(built.requests, "record_plan", Q3_MARK)
    result = second.body["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result["is_error"] is True
    assert "missing required property 'answer_key'" in result["content"]
    assert result["tool_use_id"] == second.body["messages"][-2]["content"][-1]["id"]


def test_an_equivalent_registry_function_is_reused_without_an_implementation_call(built):
    report = by_question(built.summary, Q2_MARK)
    reused, root = report["functions"]
    assert reused["status"] == "reused" and reused["planned"] == "count_buses"
    assert reused["reused"]["function"] == "buses_needed" and reused["reused"]["module"] == "school_bus_hire"
    assert reused["reused"]["similarity"] > 0.55
    submits = builder_requests(built.requests, "submit_function", Q2_MARK)
    assert len(submits) == 1 and "def outing_empty_seats(ctx)" in submits[0].raw
    assert "Work out how many buses are needed so that every person gets a seat" in submits[0].raw  # the callee as registered
    assert built.summary["functions_reused"] == 1
    module = (built.registry / "outing_empty_seats.py").read_text()
    assert "def buses_needed" not in module and "Reuses registered functions through do(): buses_needed" in module


def test_a_hard_coded_parameter_fails_its_round_trip(built):
    report = by_question(built.summary, Q3_MARK)
    assert report["status"] == "rejected" and report["reason"] == "round_trip_failed"
    assert "width" in report["detail"]["parameters"]
    trips = {tuple(t["varied"]): t for t in report["round_trips"]}
    assert trips[("width",)]["ok"] is False and "reference is 336" in trips[("width",)]["problem"]
    assert trips[("length",)]["ok"] is True and trips[("price",)]["ok"] is True
    assert trips[("width",)]["extraction_path"] == "template"
    assert not (built.registry / "garden_fence_cost.py").exists()


def test_accepted_round_trips_and_economics(built):
    report = by_question(built.summary, Q1_MARK)
    assert [t["ok"] for t in report["round_trips"]] == [True] * 4
    assert sorted(tuple(t["varied"]) for t in report["round_trips"]) == [
        ("bus_price",), ("seats",), ("students",), ("teachers",)]
    econ = report["economics"]
    assert econ["source_call_basis"] == "estimated" and econ["cache_call_usd"] == 0.0
    assert econ["break_even_hits"] == math.ceil(report["cost_usd"] / econ["source_call_usd"] - 1e-9)
    assert econ["build_multiple"] == round(report["cost_usd"] / econ["source_call_usd"], 2)
    assert set(report["usage"]) == {"builder", "judge", "source"}
    assert report["usage"]["judge"]["calls"] == 6  # 3 candidates x 2 judges


def test_every_request_carries_the_bearer_key(built):
    assert built.requests
    for request in built.requests:
        assert request.headers["authorization"] == f"Bearer {API_KEY}"
        assert "x-api-key" not in request.headers


def test_roles_models_thinking_and_tool_choice(built):
    for request in built.requests:
        body = request.body
        if request.role == "builder":
            assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
            assert body["max_tokens"] > 4096 and body["tool_choice"] == {"type": "auto"}
            assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        elif request.role in ("judge-1", "judge-2"):
            assert "thinking" not in body and body["tool_choice"] == {"type": "tool", "name": "record_verdict"}
        else:
            assert request.role == "source" and "thinking" not in body


def test_cost_accounting_matches_the_usage_the_stub_returned(built):
    prices = Prices()
    expected = sum(
        prices.cost({**DEFAULT_USAGE, **r.served.get("usage", {})})
        for r in built.requests if r.served and "status" not in r.served and "raw" not in r.served
    )
    assert built.summary["cost_usd"] == pytest.approx(expected, abs=1e-6)
    assert built.client.meter.usd == pytest.approx(expected, rel=1e-12)
    assert sum(r["cost_usd"] for r in built.summary["reports"]) == pytest.approx(expected, abs=1e-5)


def test_exact_dollars_for_one_call():
    usage = {"input_tokens": 1234, "output_tokens": 567, "cache_creation_input_tokens": 890, "cache_read_input_tokens": 4321}
    tool = Tool("record_answer", "answer",
                {"type": "object", "properties": {"answer": {"type": "number"}}, "required": ["answer"]})
    with StubMessagesServer([{"role": "source", "input": {"answer": 42}, "usage": usage}]) as stub:
        client = LLMClient(config(stub.base_url))
        assert client.ask("source", system="s", prompt="q", tool=tool) == {"answer": 42}
    dollars = (1234 * 5 + 567 * 25 + 890 * 6.25 + 4321 * 0.5) / 1_000_000
    assert client.meter.usd == pytest.approx(dollars, rel=1e-12)
    tally = client.meter.tallies["source"]
    assert (tally.calls, tally.input_tokens, tally.output_tokens, tally.cache_write_tokens, tally.cache_read_tokens) == (
        1, 1234, 567, 890, 4321)


def test_no_llm_written_code_is_imported_or_run_in_the_builder_process(monkeypatch, tmp_path):
    """Every registration, compile check and test run happens in the confined session: here any
    import of entry code in this process (the only way to run it) fails the test."""
    import edge_runtime.entries.compiler
    import edge_runtime.entries.registry
    import edge_runtime.entries.sandbox

    def refuse(source: str, filename: str, module_name: str) -> dict:
        raise AssertionError(f"{filename} was imported in the builder's own process")

    for module in (edge_runtime.entries.sandbox, edge_runtime.entries.registry, edge_runtime.entries.compiler):
        monkeypatch.setattr(module, "exec_source", refuse)
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    data = load_fixture()
    with StubMessagesServer(data["script"]) as stub:
        client = LLMClient(config(stub.base_url))
        summary = build_entries(data["transcripts"], tmp_path / "registry", client, options=OPTIONS)
        client.close()
    assert (summary["accepted"], summary["rejected_by_reason"]) == (2, {"round_trip_failed": 1})
    assert by_question(summary, Q1_MARK)["functions"][1]["attempts"][1]["run"]["outputs"]  # the candidate ran


# ---- retries ---------------------------------------------------------------------------------
ANSWER = Tool("record_answer", "answer",
              {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]})


def test_retries_on_429_and_500_then_succeeds_with_growing_backoff():
    sleeps: list[float] = []
    script = [{"status": 429}, {"status": 500}, {"role": "judge-1", "input": {"answer": 7}}]
    with StubMessagesServer(script) as stub:
        client = LLMClient(config(stub.base_url, base_delay=0.01, max_delay=1.0), sleep=sleeps.append)
        assert client.ask("judge-1", system="s", prompt="q", tool=ANSWER) == {"answer": 7}
        assert len(stub.requests) == 3
    assert len(sleeps) == 2 and 0.005 <= sleeps[0] <= 0.01 and 0.01 <= sleeps[1] <= 0.02
    assert client.meter.tallies["judge"].calls == 1  # failed attempts are not billed


def test_gives_up_after_max_retries_and_stops_on_bad_credentials():
    with StubMessagesServer([{"status": 503, "repeat": True}]) as stub:
        client = LLMClient(config(stub.base_url, max_retries=2), sleep=lambda s: None)
        with pytest.raises(LLMError, match="gave up after 3 attempts"):
            client.ask("source", system="s", prompt="q", tool=ANSWER)
        assert len(stub.requests) == 3
    with StubMessagesServer([{"status": 401}]) as stub:
        client = LLMClient(config(stub.base_url), sleep=lambda s: None)
        with pytest.raises(FatalLLMError):
            client.ask("source", system="s", prompt="q", tool=ANSWER)


def test_no_credential_is_fatal_not_a_rejection(monkeypatch, tmp_path):
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE", "ANTHROPIC_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # and no profile on disk
    with StubMessagesServer([{"input": {"answer": 1}}]) as stub:
        client = LLMClient(ClientConfig(base_url=stub.base_url))
        with pytest.raises(FatalLLMError, match="ANTHROPIC_API_KEY"):
            client.ask("source", system="s", prompt="q", tool=ANSWER)


def test_malformed_answers_are_bounded_and_never_crash():
    script = [{"text": "no tool"}, {"raw": "[1, 2"}, {"input": {"answer": "seven"}}, {"input": {"answer": 8}}]
    with StubMessagesServer(script) as stub:
        client = LLMClient(config(stub.base_url, answer_retries=2), sleep=lambda s: None)
        with pytest.raises(AnswerError) as caught:
            client.ask("judge-2", system="s", prompt="q", tool=ANSWER)
        assert "$.answer: expected integer" in caught.value.errors[0]
        assert client.ask("judge-2", system="s", prompt="q", tool=ANSWER) == {"answer": 8}


# ---- record / replay and resuming ---------------------------------------------------------------
def test_record_then_replay_builds_the_same_entries_without_http(built, tmp_path):
    assert built.cassette.exists()
    client = LLMClient(ClientConfig(base_url="http://127.0.0.1:9", replay=built.cassette))  # nothing listens there
    summary = build_entries(built.data["transcripts"], tmp_path / "replayed", client, options=OPTIONS)
    assert client.http_calls == 0
    assert summary["entries"] == built.summary["entries"]
    assert summary["rejected_by_reason"] == built.summary["rejected_by_reason"]
    for name in ("school_bus_hire.py", "outing_empty_seats.py"):
        assert (tmp_path / "replayed" / name).read_text() == (built.registry / name).read_text()
    assert summary["cost_usd"] == pytest.approx(built.summary["cost_usd"], abs=1e-6)


def test_replay_refuses_a_request_it_never_recorded(built):
    client = LLMClient(ClientConfig(replay=built.cassette))
    with pytest.raises(ReplayMissError):
        client.ask("source", system="s", prompt="a question nobody recorded", tool=ANSWER)


def test_a_crash_after_the_first_accepted_entry_loses_nothing_and_is_not_rebuilt(tmp_path):
    data = load_fixture()
    registry = tmp_path / "registry"

    def crash(report: Any) -> None:
        raise RuntimeError(f"simulated crash after accepting {report.entry_id}")

    with StubMessagesServer(data["script"]) as stub:
        client = LLMClient(config(stub.base_url))
        with pytest.raises(RuntimeError, match="school-bus-hire"):
            build_entries(data["transcripts"], registry, client, options=OPTIONS, on_accepted=crash)
        first_module = (registry / "school_bus_hire.py").read_text()
        assert list(BuildStore(registry).decisions) == [question_key(data["transcripts"][0])]
        before = len(stub.requests)
        summary = build_entries(data["transcripts"], registry, LLMClient(config(stub.base_url)), options=OPTIONS)
        rerun = stub.requests[before:]
    assert summary["skipped_decided"] == 1 and summary["built_this_run"] == 2
    assert summary["accepted"] == 2 and summary["entries"] == ["outing-empty-seats", "school-bus-hire"]
    assert not any(Q1_MARK in r.raw for r in rerun if r.role == "builder")
    assert (registry / "school_bus_hire.py").read_text() == first_module
    assert by_question(summary, Q2_MARK)["functions"][0]["status"] == "reused"  # Q1's function, read back from disk


def test_service_failures_are_not_decisions(tmp_path):
    store = BuildStore(tmp_path)
    store.record({"key": "a", "status": "rejected", "reason": "llm_failed"})
    store.record({"key": "b", "status": "rejected", "reason": "wrong_on_original"})
    assert sorted(BuildStore(tmp_path).decisions) == ["b"]  # "a" is built again by the next run


def test_a_module_written_before_its_index_line_is_adopted(tmp_path):
    store = BuildStore(tmp_path)
    store.write_module("lost_entry", '"""Lost.\n\nbuild-key: abc123\n"""\n')
    assert BuildStore(tmp_path).adopt_orphans() == ["lost_entry"]
    assert BuildStore(tmp_path).decisions["abc123"]["status"] == "accepted"


# ---- the output is a valid registry ------------------------------------------------------------
def test_accepted_modules_validate_register_and_compile(built, embedder):
    for path in sorted(built.registry.glob("*.py")):
        validate_source(path.read_text(), str(path))
    registry = Registry(embedder)
    registry.add_directory(built.registry)
    assert sorted(registry.entries) == ["outing-empty-seats", "school-bus-hire"]
    expected = {"school-bus-hire": 1750, "outing-empty-seats": 25}
    for entry_id, answer in expected.items():
        entry = registry.entries[entry_id]
        compiled = compile_entry(registry, entry_id)
        result = LoadedCompiledEntry(compiled.source, entry_id).run(entry.original_values).result
        assert result[entry.answer_key] == answer
    assert "buses_needed" in compile_entry(registry, "outing-empty-seats").functions


def test_cli_entries_prints_one_json_summary(tmp_path, monkeypatch, capsys):
    from builder.cli import main

    data = load_fixture()
    transcripts = tmp_path / "transcripts.jsonl"
    transcripts.write_text("".join(json.dumps(row) + "\n" for row in data["transcripts"]))
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    with StubMessagesServer(data["script"]) as stub:
        code = main(["entries", str(transcripts), "--registry", str(tmp_path / "reg"), "--base-url", stub.base_url,
                     "--round-trips", "4", "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["total"] == 3 and summary["accepted"] == 2
    assert summary["rejected_by_reason"] == {"round_trip_failed": 1}
    assert summary["cost_usd"] > 0 and summary["break_even_hits_median"] > 0


# ---- small parts ---------------------------------------------------------------------------------
def test_schema_errors_name_the_path():
    schema = {"type": "object", "required": ["a"], "additionalProperties": False,
              "properties": {"a": {"type": "array", "minItems": 1, "items": {"enum": ["x", "y"]}}}}
    assert schema_errors({"a": ["x"]}, schema) == []
    assert schema_errors({"a": ["z"], "b": 1}, schema) == ["$.a[0]: 'z' is not one of ['x', 'y']", "$: unexpected property 'b'"]
    assert schema_errors({"a": []}, schema) == ["$.a: needs at least 1 items, got 0"]
    assert schema_errors(True, {"type": "integer"}) == ["$: expected integer, got bool True"]


def test_answers_match_numbers_as_written():
    assert answers_match(1750, "1750") and answers_match("$4,510", 4510) and answers_match(495.805, "495.8")
    assert not answers_match(4.6, "5") and not answers_match(272.0, "336")
    assert answers_match("Celsius ", "celsius") and not answers_match("kelvin", "celsius")


def test_narration_must_show_a_value_in_words():
    import ast

    def node(body: str) -> ast.FunctionDef:
        return ast.parse(f"def f(ctx):\n    {body}\n").body[0]  # type: ignore[return-value]

    assert narration_problems(node("narrate(ctx, f'{x} people need {y} buses')")) == []
    assert narration_problems(node("narrate(ctx, 'done')"))
    assert narration_problems(node("narrate(ctx, f'{x}')"))


def test_the_stub_records_requests_and_serves_in_order():
    script = [{"role": "source", "input": {"answer": 1}}, {"role": "source", "input": {"answer": 2}}]
    with StubMessagesServer(copy.deepcopy(script)) as stub:
        client = LLMClient(config(stub.base_url))
        answers = [client.ask("source", system="s", prompt=f"q{i}", tool=ANSWER)["answer"] for i in range(2)]
        assert answers == [1, 2]
        assert [r.body["messages"][0]["content"] for r in stub.requests] == ["q0", "q1"]
        client.config.max_retries = 0
        with pytest.raises(LLMError, match="no scripted response"):  # an unscripted request is a 500
            client.ask("source", system="s", prompt="q2", tool=ANSWER)

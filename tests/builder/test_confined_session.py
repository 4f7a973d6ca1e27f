"""The LLM builder's confined session: LLM-written code is registered, compiled and run only in a
child that started without the builder's environment, and whose replies are plain data only.

Real processes throughout: the child is a fresh interpreter behind edge_runtime.execute.confinement's walls.
"""

from __future__ import annotations

import os
import pickle
import socket
from multiprocessing.connection import Connection
from pathlib import Path
from types import SimpleNamespace

import pytest

from builder.confined_build import ConfinedBuildError, read_sources
from builder.confined_session import ConfinedSession
from edge_runtime.errors import NoMatchError, TargetModelError

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "bundles" / "examples"

HEADER = "from edge_runtime.semantic import Param, entry_point, lm, load, narrate, semantic_function\n"
ASKS_THE_MODEL = HEADER + '''

@semantic_function("Name the colour of a fruit", inputs={"the fruit": "banana"}, outputs={"the colour": "yellow"})
def fruit_colour(ctx):
    colour = lm(ctx, "Name the colour of this fruit", load(ctx, "the fruit", str))
    narrate(ctx, f"the model says a {load(ctx, 'the fruit', str)} is {colour}")
    return {"the colour": colour}


FRUIT = entry_point(
    id="fruit-colour", description="The colour of a fruit", template="What colour is a {fruit}?",
    question="What colour is a banana?", params=[Param(name="fruit", description="the fruit", type=str,
    original="banana")], root="Name the colour of a fruit", answer_key="the colour",
)
'''
#: Passes the validator; ``sum(range(...))`` loops in C, where no signal (the child's own time limit) interrupts it.
NEVER_RETURNS = HEADER + '''

@semantic_function("Count forever", inputs={"a number": 1}, outputs={"the count": 2})
def count_forever(ctx):
    size = sum(range(10 ** 15))
    narrate(ctx, f"the count of {load(ctx, 'a number', int)} is {size}")
    return {"the count": size}
'''


def _examples() -> list[tuple[str, str, str]]:
    return [(text, str(EXAMPLES / name), Path(name).stem) for name, text in read_sources(EXAMPLES).items()]


def test_the_child_starts_without_the_api_key_and_behind_the_walls(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-secret-in-parent")
    with ConfinedSession() as session:
        session.registry([])
        with open(f"/proc/{session.pid}/environ", "rb") as handle:  # the environment it was started with
            environ = handle.read()
        assert b"sk-test-secret" not in environ and b"ANTHROPIC" not in environ
        assert session.pid != os.getpid()
        assert session.walls["network_cut"] is True
        if os.geteuid() == 0:
            assert session.walls["dropped_root"] is True


def test_registration_resolution_and_runs_happen_in_the_child_as_in_process(example_registry):
    from edge_runtime.entries.compiler import LoadedCompiledEntry, compile_entry

    with ConfinedSession() as session:
        main = session.registry(_examples(), check=True)
        assert sorted(main.entries) == sorted(example_registry.entries)
        assert set(main.functions) == set(example_registry.functions)
        for entry_id, entry in example_registry.entries.items():
            assert main.entries[entry_id] == entry
            compiled = main.compile(entry_id)
            assert compiled.source == compile_entry(example_registry, entry_id).source
            try:
                in_process = LoadedCompiledEntry(compiled.source, entry_id).run(entry.original_values)
            except TargetModelError:  # an entry that asks the model: no model here, the same error there
                with pytest.raises(TargetModelError):
                    compiled.run(entry.original_values)
                continue
            assert compiled.run(entry.original_values) == in_process
            assert main.run(entry_id, entry.original_values).result == in_process.result
        root = main.resolve_function(example_registry.entries["parcel-shipping-cost"].root)
        assert root.facts.load_queries == example_registry.functions[root.name].facts.load_queries
        with pytest.raises(NoMatchError):
            main.resolve_function("translate a poem into French")


def test_a_clone_is_isolated_from_its_original():
    with ConfinedSession() as session:
        main = session.registry(_examples(), check=True)
        scratch = main.clone()
        scratch.add_source(ASKS_THE_MODEL, "<candidate>", "fruit")
        assert "fruit_colour" in scratch.functions and "fruit_colour" not in main.functions
        with pytest.raises(NoMatchError):
            main.resolve_function("Name the colour of a fruit")


def test_a_run_that_never_returns_is_stopped_and_the_session_recovers(monkeypatch):
    monkeypatch.setattr("builder.confined_session.GRACE_SECONDS", 1.0)
    with ConfinedSession() as session:
        registry = session.registry([(NEVER_RETURNS, "<candidate>", "forever")])
        with pytest.raises(ConfinedBuildError, match="longer than 2 s"):
            registry.run_function("count_forever", {"a number": 1}, seconds=1.0)
        # the next request starts a fresh child and rebuilds the registry from its journal
        assert registry.similarity("a cat", "a cat") == pytest.approx(1.0, abs=1e-5)
        assert session.starts == 2 and "count_forever" in registry.functions


def test_a_registration_that_never_ends_is_stopped():
    with ConfinedSession(op_seconds=5) as session:
        registry = session.registry([])
        with pytest.raises(ConfinedBuildError, match="longer than 5 s"):
            registry.add_source("SIZE = 9 ** 9 ** 9\n", "<hostile>", "hostile")
        assert registry.sources == {}  # not in the journal, so not registered again after the restart
        registry.add_source(ASKS_THE_MODEL, "<candidate>", "fruit")
        assert session.starts == 2


def test_entry_model_calls_are_answered_by_the_parents_model_within_bounds():
    class Model:
        prompts: list[str] = []

        def generate(self, prompt, *, max_new_tokens=64, stop=(), charset=None):
            self.prompts.append(prompt)
            return "yellow"

        def choose(self, prompt, options):
            return options[0]

    model = Model()
    with ConfinedSession() as session:
        registry = session.registry([(ASKS_THE_MODEL, "<fruit>", "fruit")], check=True)
        compiled = registry.compile("fruit-colour")
        assert compiled.run({"fruit": "banana"}, target_lm=model).result == {"the colour": "yellow"}
        assert registry.run("fruit-colour", {"fruit": "lemon"}, target_lm=model).result == {"the colour": "yellow"}
        assert "lemon" in model.prompts[-1]
        with pytest.raises(TargetModelError, match="needs the target model"):
            compiled.run({"fruit": "banana"})  # no model in the parent: the entry's own error


class _RunsCommand:
    """Unpickling this with the full unpickler calls os.system."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


@pytest.mark.parametrize("payload", ["callable", "reduce"])
def test_a_reply_naming_a_callable_is_refused_and_nothing_runs(payload, tmp_path):
    marker = tmp_path / "marker"
    ours, theirs = socket.socketpair()
    child = SimpleNamespace(conn=Connection(ours.detach()), exit_code=lambda *a: None, pid=0)
    value = os.system if payload == "callable" else _RunsCommand(marker)
    with Connection(theirs.detach()) as subverted:
        subverted.send_bytes(pickle.dumps(("ok", value)))
        with pytest.raises(ConfinedBuildError, match="refused"):
            ConfinedSession()._receive(child, 5, None, "a request")
    assert not marker.exists()

"""Fair use of the shared model: caps per entry model call, the deadline between decode steps, the
background lane, and no model object reachable from entry code. Real onnxruntime (the tiny Llama),
real worker processes."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from edge_runtime.entries.compiler import LoadedCompiledEntry, compile_entry
from edge_runtime.entries.registry import Registry
from edge_runtime.errors import DeadlineExceededError, ExecutionError, LMDeadlineError, LMLimitError
from edge_runtime.execute.worker_pool import WorkerPool
from edge_runtime.model.lm_engine import LMEngine
from edge_runtime.model.lm_limits import LMLimits
from edge_runtime.model.onnx_target_lm import OnnxTargetLM

HEADER = "from edge_runtime.semantic import Param, entry_point, lm, load, narrate, semantic_function\n"


def entry_source(name: str, description: str, body: str) -> str:
    return HEADER + f'''

@semantic_function(
    {description!r},
    inputs={{"the starting number": 1}},
    outputs={{"the result": 1}},
)
def {name}(ctx):
    n = load(ctx, "the starting number", int)
    narrate(ctx, "Working from " + str(n) + ".")
{body}
    return {{"the result": n}}


ENTRY = entry_point(
    id={name.replace("_", "-")!r},
    description={description!r},
    template="Work from {{start}}",
    params=[Param(name="start", description="the starting number", type=int, original=1)],
    root={description!r},
)
'''


ENTRIES = {
    "ask_briefly": ("Ask the model about a short text", '    n = len(lm(ctx, "Summarise", "Ship twelve boxes by sea")) * 0 + n'),
    "ask_at_length": ("Ask the model about an enormous text", '    n = len(lm(ctx, "Summarise", "boxes by sea " * 1200)) + n'),
    "add_one": ("Add one to a whole number without the model", "    n = n + 1"),
    "reach_for_the_model": ("Reach for the model object behind the context", "    n = ctx.target_lm.generate('x', "
                                                                             "max_new_tokens=512)"),
}


class EndlessTargetLM(OnnxTargetLM):
    """A model call that would never finish on its own (a long generation, restarted whenever it stops):
    only the engine's deadline, checked before every pass, ends it."""

    def generate(self, prompt: str, *, max_new_tokens: int = 64, stop: Sequence[str] = (), charset: str | None = None) -> str:
        while True:
            self.engine.greedy(self.engine.encode(prompt), max_new_tokens=4000)


@pytest.fixture(scope="module")
def entries(embedder) -> dict[str, str]:
    registry = Registry(embedder)
    for name, (description, body) in ENTRIES.items():
        registry.add_source(entry_source(name, description, body), f"{name}.py")
    return {entry_id: compile_entry(registry, entry_id).source for entry_id in registry.entries}


@pytest.fixture(scope="module")
def engine(tiny_fp32) -> LMEngine:
    return LMEngine(tiny_fp32)


def run(pool: WorkerPool, entries: dict[str, str], entry_id: str, **kw: Any):
    return pool.run("fair-use", entry_id, entries[entry_id], {"start": 1}, **kw)


def test_a_prompt_over_the_cap_ends_quickly_as_an_lm_limit_error_and_the_pool_keeps_serving(engine, entries) -> None:
    with WorkerPool(1, target_lm=OnnxTargetLM(engine), lm_limits=LMLimits(max_prompt_tokens=256)) as pool:
        started = time.monotonic()
        with pytest.raises(LMLimitError, match="exceeds the cap of 256"):
            run(pool, entries, "ask-at-length")
        assert time.monotonic() - started < 2.0
        assert run(pool, entries, "ask-briefly").result == {"the result": 1}
        assert pool.stats["lm_refused"] == 1


def test_the_deadline_stops_generation_between_decode_steps(engine) -> None:
    ids = engine.encode("Ship twelve boxes")
    started = time.monotonic()
    with pytest.raises(LMDeadlineError), engine.budget(started + 0.3):
        while True:  # far more decode steps than 0.3 s allows
            engine.greedy(ids, max_new_tokens=4000)
    assert time.monotonic() - started < 0.3 + 0.5
    assert engine.greedy(ids, max_new_tokens=3)  # outside the block the engine has no deadline


def test_an_endless_model_call_ends_at_its_budget_and_frees_its_worker(engine, entries) -> None:
    limits = LMLimits(call_seconds=0.5)
    with WorkerPool(1, target_lm=EndlessTargetLM(engine), lm_limits=limits, default_timeout_s=10.0) as pool:
        started = time.monotonic()
        with pytest.raises(LMLimitError, match="budget of 0.5 s"):
            run(pool, entries, "ask-briefly")
        assert time.monotonic() - started < 0.5 + 1.0
        # ... and at the request's own deadline when that comes first
        started = time.monotonic()
        with pytest.raises(DeadlineExceededError):
            run(pool, entries, "ask-briefly", timeout_s=0.3)
        assert time.monotonic() - started < 0.3 + 1.0
        pool.set_target_lm(OnnxTargetLM(engine))
        assert run(pool, entries, "ask-briefly").result == {"the result": 1}


def test_entry_code_gets_no_model_object_from_its_context(engine, entries) -> None:
    with WorkerPool(1, target_lm=OnnxTargetLM(engine)) as pool:
        with pytest.raises(ExecutionError, match="target_lm"):
            run(pool, entries, "reach-for-the-model")
    with pytest.raises(ExecutionError, match="target_lm"):
        LoadedCompiledEntry(entries["reach-for-the-model"]).run({"start": 1}, target_lm=OnnxTargetLM(engine))


def test_other_requests_are_served_while_a_long_model_call_runs(engine, entries) -> None:
    limits = LMLimits(call_seconds=4.0)
    with WorkerPool(2, target_lm=EndlessTargetLM(engine), lm_limits=limits, default_timeout_s=10.0) as pool:
        outcome: list[BaseException] = []

        def hog() -> None:
            try:
                run(pool, entries, "ask-briefly")
            except BaseException as exc:  # noqa: BLE001 - inspected below
                outcome.append(exc)

        thread = threading.Thread(target=hog)
        thread.start()
        time.sleep(0.3)
        served = 0
        ids = engine.encode("What is the pressure, in kPa, of 7 mol")
        while thread.is_alive() and served < 20:
            assert engine.forward(ids, want_logits=True).logits is not None  # an extraction pass, foreground
            assert run(pool, entries, "add-one", timeout_s=5.0).result == {"the result": 2}  # the other worker
            served += 1
        assert served == 20 and thread.is_alive(), "the foreground passes finished while the long call still ran"
        thread.join(10.0)
        assert outcome and isinstance(outcome[0], LMLimitError)


def test_a_bundle_may_lower_the_device_limits_but_never_raise_them() -> None:
    device = LMLimits(max_prompt_tokens=512, max_new_tokens=64, call_seconds=2.0)
    assert device.within(None) == device
    assert device.within({"max_prompt_tokens": 100000, "call_seconds": 0.5}) == LMLimits(512, 64, 0.5)
    for bad in ({"max_new_tokens": 0}, {"call_seconds": "fast"}, {"steal": 1}, [1]):
        with pytest.raises(ValueError):
            device.within(bad)

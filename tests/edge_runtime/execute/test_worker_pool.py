"""WorkerPool: compiled entries in sandboxed worker processes; runaways end their own call only.

Real processes throughout. Hostile entries are valid ARC sources (they pass the validator and
compile): what they do wrong is only visible at run time, which is what the pool is for.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fakes import ScriptedTargetLM

from edge_runtime.entries.compiler import LoadedCompiledEntry, compile_entry
from edge_runtime.entries.registry import Execution, Registry
from edge_runtime.errors import (
    DeadlineExceededError,
    ExecutionError,
    ResourceExhaustedError,
    TargetModelError,
    ToolNotAllowedError,
    UnsafeCodeError,
    WorkerCrashedError,
    WorkerPoolClosedError,
)
from edge_runtime.execute.wire import MAX_REPLY_BYTES, _load_reply, _ProtocolError
from edge_runtime.execute.worker_pool import WorkerPool
from edge_runtime.model.target_lm import TargetLM

HEADER = "import re\n\nfrom edge_runtime.semantic import Param, entry_point, invoke_tool, load, narrate, semantic_function\n"


def entry_source(name: str, description: str, body: str) -> str:
    """A one-function module: load the starting number n, narrate, ``body``, return n."""
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
    "double_it": ("Double a whole number", "    n = n * 2"),
    "spin_forever": ("Count upward forever from a starting number", "    while True:\n        n = n + 1"),
    "allocate_at_once": ("Allocate one gigantic block of numbers", "    block = [0] * (10 ** 10)\n    n = len(block)"),
    "allocate_forever": (
        "Keep collecting chunks of numbers without end",
        "    chunks = []\n    while True:\n        chunks.append([n] * 1000000)",
    ),
    "recurse_deeply": (
        "Descend through a self-recursive helper without a base case",
        "    down = lambda k: down(k + 1) + 1\n    n = down(n)",
    ),
    "divide_by_zero": ("Divide a number by zero", "    n = n // 0"),
    "return_huge_text": ("Produce an enormous block of text", "    n = 'x' * (5 * 1024 * 1024)"),
    "return_a_pattern": ("Compile a regular expression for repeated letters", "    n = re.compile('a+')"),
    "scale_with_tool": (
        "Scale a number with the host multiplier tool",
        '    n = invoke_tool(ctx, "multiplier", {"value": n, "factor": 3})',
    ),
    "call_missing_tool": ("Ask the host for a tool it never registered", '    n = invoke_tool(ctx, "format_disk", {})'),
    "call_failing_tool": ("Call a host tool that always fails", '    n = invoke_tool(ctx, "explode", {"value": n})'),
}

PARENT_PID = os.getpid()
tool_calls: list[tuple[int, dict[str, Any]]] = []


def multiplier(value: int, factor: int) -> int:
    tool_calls.append((os.getpid(), {"value": value, "factor": factor}))
    return value * factor


def explode(value: int) -> int:
    raise ValueError(f"no way to handle {value}")


TOOLS = {"multiplier": multiplier, "explode": explode}


@pytest.fixture(scope="module")
def hostile(embedder) -> dict[str, str]:
    """entry id -> compiled source, for every entry in ENTRIES."""
    registry = Registry(embedder)
    for name, (description, body) in ENTRIES.items():
        registry.add_source(entry_source(name, description, body), f"{name}.py")
    return {entry_id: compile_entry(registry, entry_id).source for entry_id in registry.entries}


@pytest.fixture(scope="module")
def pool():
    with WorkerPool(2, default_timeout_s=5.0, tools=TOOLS) as pool:
        yield pool


def run(pool: WorkerPool, hostile: dict[str, str], entry_id: str, start: int = 1, **kw: Any) -> Execution:
    return pool.run("hostile-bundle", entry_id, hostile[entry_id], {"start": start}, **kw)


def assert_pool_still_serves(pool: WorkerPool, hostile: dict[str, str]) -> None:
    assert run(pool, hostile, "double-it", 21).result == {"the result": 42}


def outcome(call) -> Any:
    try:
        return call()
    except Exception as exc:  # noqa: BLE001 - compared as (class, message)
        return type(exc), str(exc)


# ---- same answers as in-process ------------------------------------------------------------------


def test_every_example_gives_the_same_execution_through_the_pool(example_registry, pool) -> None:
    replies = {"Text: a glass flower vase\n": "fragile", "Value: 1 1/2\n": "1.5"}  # shipping; recipe amount
    pool.set_target_lm(ScriptedTargetLM(replies))
    try:
        for entry_id, entry in sorted(example_registry.entries.items()):
            source = compile_entry(example_registry, entry_id).source
            values = entry.validate(entry.original_values)
            direct = outcome(lambda: LoadedCompiledEntry(source, entry_id).run(
                values, target_lm=ScriptedTargetLM(replies), tools=TOOLS))
            through_pool = outcome(lambda: pool.run("examples", entry_id, source, values))
            assert isinstance(direct, Execution), (entry_id, direct)
            assert through_pool == direct, entry_id
            again = pool.run("examples", entry_id, source, values)  # cached module in one worker at least
            assert again == direct, entry_id
    finally:
        pool.set_target_lm(None)


def test_lm_call_inside_the_worker_is_answered_by_the_parent_model(example_registry, pool) -> None:
    entry = example_registry.entries["parcel-shipping-cost"]
    source = compile_entry(example_registry, entry.id).source
    values = {**entry.original_values, "contents": "frozen salmon fillets"}
    model = ScriptedTargetLM({"Text: frozen salmon fillets\n": "perishable"})
    pool.set_target_lm(model)
    before = pool.stats["lm_calls"]
    try:
        execution = pool.run("examples", entry.id, source, values)
    finally:
        pool.set_target_lm(None)
    assert execution.result["handling class of the parcel"] == "perishable"
    assert execution.result["total shipping cost in dollars"] == pytest.approx((895 + 140 * 3 + 600) / 100)
    assert len(model.prompts) == 1 and "Text: frozen salmon fillets\n" in model.prompts[0]
    assert pool.stats["lm_calls"] == before + 1
    # Without a model the entry fails exactly as it does in-process.
    direct = outcome(lambda: LoadedCompiledEntry(source, entry.id).run(values))
    assert direct[0] is TargetModelError
    assert outcome(lambda: pool.run("examples", entry.id, source, values)) == direct


class BrokenModel(TargetLM):
    def generate(self, prompt, *, max_new_tokens=64, stop=(), charset=None):
        raise RuntimeError("onnxruntime session lost")

    def choose(self, prompt, options):
        raise RuntimeError("onnxruntime session lost")


def test_a_failing_parent_model_is_a_target_model_error_in_the_entry(example_registry, pool) -> None:
    entry = example_registry.entries["parcel-shipping-cost"]
    source = compile_entry(example_registry, entry.id).source
    pool.set_target_lm(BrokenModel())
    try:
        with pytest.raises(TargetModelError, match="target model failed: RuntimeError: onnxruntime session lost"):
            pool.run("examples", entry.id, source, entry.original_values)
    finally:
        pool.set_target_lm(None)
    pool.set_target_lm(ScriptedTargetLM({"Text: a glass flower vase\n": "fragile"}))
    try:
        assert pool.run("examples", entry.id, source, entry.original_values).result["handling class of the parcel"] == (
            "fragile"
        )
    finally:
        pool.set_target_lm(None)


def test_tools_run_in_the_parent_and_fail_as_they_do_in_process(pool, hostile) -> None:
    tool_calls.clear()
    assert run(pool, hostile, "scale-with-tool", 7).result == {"the result": 21}
    assert tool_calls == [(PARENT_PID, {"value": 7, "factor": 3})]
    for entry_id, error in (("call-missing-tool", ToolNotAllowedError), ("call-failing-tool", ExecutionError)):
        direct = outcome(lambda: LoadedCompiledEntry(hostile[entry_id], entry_id).run({"start": 4}, tools=TOOLS))
        assert direct[0] is error
        assert outcome(lambda: run(pool, hostile, entry_id, 4)) == direct
    assert "ValueError: no way to handle 4" in direct[1]


def test_entry_errors_keep_their_class_and_message_and_the_worker(pool, hostile) -> None:
    replaced = pool.stats["workers_replaced"]
    direct = outcome(lambda: LoadedCompiledEntry(hostile["divide-by-zero"], "divide-by-zero").run({"start": 1}))
    assert direct == (ExecutionError, "divide-by-zero: ZeroDivisionError: integer division or modulo by zero")
    assert outcome(lambda: run(pool, hostile, "divide-by-zero")) == direct
    unsafe = hostile["double-it"].replace('"""Compiled', 'import os\n"""Compiled', 1)
    with pytest.raises(UnsafeCodeError) as info:
        pool.run("bad-bundle", "double-it", unsafe, {"start": 1})
    assert info.value.rule == "import" and info.value.line == 1  # attributes survive the trip
    assert pool.stats["workers_replaced"] == replaced


def test_worker_caches_by_source_digest_not_just_by_key(pool, hostile) -> None:
    tripled = hostile["double-it"].replace("n = n * 2", "n = n * 3")
    assert tripled != hostile["double-it"]
    for _ in range(3):  # both workers see both versions under the same key and entry id
        assert pool.run("same-key", "double-it", hostile["double-it"], {"start": 5}).result == {"the result": 10}
        assert pool.run("same-key", "double-it", tripled, {"start": 5}).result == {"the result": 15}


def test_oversized_result_is_refused_but_the_worker_stays(pool, hostile) -> None:
    replaced = pool.stats["workers_replaced"]
    with pytest.raises(ResourceExhaustedError, match=f"over the {MAX_REPLY_BYTES}-byte limit"):
        run(pool, hostile, "return-huge-text")
    assert pool.stats["workers_replaced"] == replaced
    assert_pool_still_serves(pool, hostile)


def test_a_result_the_parent_would_refuse_is_an_error_but_the_worker_stays(pool, hostile) -> None:
    direct = LoadedCompiledEntry(hostile["return-a-pattern"], "return-a-pattern").run({"start": 1})
    assert direct.result["the result"].pattern == "a+"  # in-process any object goes; across the pipe only plain data
    before = pool.stats
    with pytest.raises(ExecutionError, match="return-a-pattern: the result cannot leave the worker: .*re._compile"):
        run(pool, hostile, "return-a-pattern")
    assert pool.stats["workers_replaced"] == before["workers_replaced"] and pool.stats["crashed"] == before["crashed"]
    assert_pool_still_serves(pool, hostile)


def test_worker_asks_again_for_a_source_it_no_longer_holds(pool, hostile) -> None:
    source = hostile["double-it"].replace("n = n * 2", "n = n * 5")
    cache_key = ("forgotten", "double-it", hashlib.sha256(source.encode("utf-8")).hexdigest())
    for worker in list(pool._workers):  # the parent believes every worker has it (as after an eviction)
        worker.known.add(cache_key)
    assert pool.run("forgotten", "double-it", source, {"start": 2}).result == {"the result": 10}


# ---- runaways end their own call only -------------------------------------------------------------


def test_infinite_loop_hits_the_deadline_and_the_worker_is_replaced(pool, hostile) -> None:
    before = pool.stats
    started = time.monotonic()
    with pytest.raises(DeadlineExceededError, match=r"spin-forever: exceeded its deadline of 0\.5 s"):
        run(pool, hostile, "spin-forever", timeout_s=0.5)
    assert time.monotonic() - started < 0.5 + 1.0
    after = pool.stats
    assert after["deadline_exceeded"] == before["deadline_exceeded"] + 1
    assert after["workers_replaced"] == before["workers_replaced"] + 1
    assert_pool_still_serves(pool, hostile)


@pytest.mark.parametrize("entry_id", ["allocate-at-once", "allocate-forever"])
def test_memory_bomb_is_resource_exhausted_and_the_worker_is_replaced(pool, hostile, entry_id) -> None:
    before = pool.stats
    with pytest.raises(ResourceExhaustedError, match=f"{entry_id}: exceeded the worker memory limit of 512 MiB"):
        run(pool, hostile, entry_id, timeout_s=20)
    after = pool.stats
    assert after["resource_exhausted"] == before["resource_exhausted"] + 1
    assert after["workers_replaced"] == before["workers_replaced"] + 1
    assert_pool_still_serves(pool, hostile)


def test_deep_recursion_is_an_execution_error_and_the_worker_is_replaced(pool, hostile) -> None:
    before = pool.stats
    with pytest.raises(ExecutionError) as info:
        run(pool, hostile, "recurse-deeply")
    assert type(info.value) is ExecutionError
    assert str(info.value) == "recurse-deeply: recursion too deep"
    assert pool.stats["workers_replaced"] == before["workers_replaced"] + 1
    assert pool.stats["crashed"] == before["crashed"]
    assert_pool_still_serves(pool, hostile)


@pytest.mark.parametrize(
    ("signum", "error", "counter"),
    [
        (signal.SIGTERM, WorkerCrashedError, "crashed"),
        # SIGKILL that the pool did not send is what the kernel's OOM killer sends.
        (signal.SIGKILL, ResourceExhaustedError, "resource_exhausted"),
    ],
)
def test_a_worker_killed_from_outside_is_replaced(hostile, signum, error, counter) -> None:
    with WorkerPool(1, default_timeout_s=10.0) as pool:
        pid = pool.debug_worker_info()["pid"]
        threading.Timer(0.3, os.kill, (pid, signum)).start()
        with pytest.raises(error, match=f"killed by {signal.Signals(signum).name}"):
            run(pool, hostile, "spin-forever")
        assert pool.stats[counter] == 1 and pool.stats["workers_replaced"] == 1
        assert_pool_still_serves(pool, hostile)
        assert pool.debug_worker_pids() != [pid]


def test_waiting_for_a_busy_pool_is_bounded_by_the_deadline(hostile) -> None:
    with WorkerPool(1) as pool:
        spinner = threading.Thread(target=outcome, args=(lambda: run(pool, hostile, "spin-forever", timeout_s=1.5),))
        spinner.start()
        time.sleep(0.2)
        started = time.monotonic()
        with pytest.raises(DeadlineExceededError, match="no worker became free within the deadline of 0.3 s"):
            run(pool, hostile, "double-it", timeout_s=0.3)
        assert time.monotonic() - started < 1.0
        spinner.join()
        assert_pool_still_serves(pool, hostile)


# ---- concurrency, isolation, shutdown --------------------------------------------------------------


def test_sixteen_threads_share_a_pool_of_two(pool, hostile) -> None:
    results: dict[tuple[int, int], Any] = {}

    def client(t: int) -> None:
        for i in range(5):
            results[(t, i)] = outcome(lambda: run(pool, hostile, "double-it", t * 10 + i, timeout_s=20).result)

    threads = [threading.Thread(target=client, args=(t,)) for t in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {(t, i): {"the result": 2 * (t * 10 + i)} for t in range(16) for i in range(5)}
    assert pool.stats["busy"] == 0


def test_worker_is_sandboxed(pool, monkeypatch) -> None:
    monkeypatch.setenv("ARC_TEST_SECRET", "hunter2")
    info = pool.debug_worker_info()
    assert info["pid"] != os.getpid() and info["pid"] in pool.debug_worker_pids()
    assert Path(info["cwd"]).resolve() != Path.cwd().resolve()
    assert Path(info["cwd"]).name.startswith("arc-worker-")
    assert info["rlimits"]["as"] == 512 << 20
    assert info["rlimits"]["nofile"] == 0  # nothing can be opened, even if open() were reachable
    assert info["recursion_limit"] == 2000
    assert "ARC_TEST_SECRET" not in info["environ"] and set(info["environ"]) <= {"PATH", "LANG", "LANGUAGE", "TZ"} | {
        k for k in info["environ"] if k.startswith("LC_")
    }
    assert info["heavy_modules"] == []  # no onnxruntime, no gRPC in the worker
    if os.geteuid() == 0:
        assert info["uid"] != 0


def test_hostile_replies_are_refused_before_any_code_runs() -> None:
    class Boom:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    with pytest.raises(_ProtocolError, match="may not refer to posix.system"):
        _load_reply(pickle.dumps(("ok", 1, {"x": Boom()}, [])))
    with pytest.raises(_ProtocolError):
        _load_reply(b"not a pickle")
    with pytest.raises(_ProtocolError, match="not a tagged tuple"):
        _load_reply(pickle.dumps({"ok": 1}))


def _process_gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "X"  # never a zombie ("Z"): someone must have reaped it


def test_the_module_paths_given_as_strings_name_real_modules() -> None:
    """The forkserver preloads modules by name and silently skips one that fails to import (a stale name
    would only make every worker start slower); a stand-in exception names the module that made it."""
    import importlib

    from edge_runtime.execute.remote_errors import _rebuild_error
    from edge_runtime.execute.worker_pool import _PRELOAD
    from edge_runtime.execute.worker_process import _worker_main

    assert _worker_main.__module__ in _PRELOAD
    for name in _PRELOAD:
        importlib.import_module(name)
    stand_in = _rebuild_error("other", "HostileError", "boom", None, {})
    assert type(stand_in).__name__ == "HostileError" and str(stand_in) == "boom"
    assert type(stand_in).__module__ == f"{_rebuild_error.__module__}.remote"


def test_close_ends_every_worker_and_later_calls_fail(hostile) -> None:
    pool = WorkerPool(2)
    pids = pool.debug_worker_pids()
    workdirs = [Path(pool.debug_worker_info()["cwd"])]
    assert len(pids) == 2 and all(Path(f"/proc/{pid}").exists() for pid in pids)
    spinner_result: list[Any] = []
    spinner = threading.Thread(
        target=lambda: spinner_result.append(outcome(lambda: run(pool, hostile, "spin-forever", timeout_s=30)))
    )
    spinner.start()
    time.sleep(0.2)
    pool.close()
    spinner.join(5)
    assert spinner_result and spinner_result[0][0] is WorkerPoolClosedError
    give_up = time.monotonic() + 3
    while not all(_process_gone(pid) for pid in pids) and time.monotonic() < give_up:
        time.sleep(0.02)
    assert all(_process_gone(pid) for pid in pids), [Path(f"/proc/{p}/stat").read_text() for p in pids]
    assert not any(d.exists() for d in workdirs)
    assert pool.debug_worker_pids() == []
    with pytest.raises(WorkerPoolClosedError):
        run(pool, hostile, "double-it")
    pool.close()  # idempotent


def test_spawn_start_method_works_and_fork_is_refused(hostile) -> None:
    with pytest.raises(ValueError, match="fork is unsafe"):
        WorkerPool(1, start_method="fork")
    with WorkerPool(1, start_method="spawn") as pool:
        assert_pool_still_serves(pool, hostile)
        assert pool.debug_worker_info()["heavy_modules"] == []


def test_memory_limit_below_an_idle_worker_is_refused() -> None:
    with pytest.raises(ValueError, match="below what an idle worker already maps"):
        WorkerPool(1, memory_limit_mb=64)

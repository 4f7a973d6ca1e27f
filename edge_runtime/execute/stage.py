"""IS3 as one stage: run the entry's compiled module on the values IS2 read, in the bundle's executor.

What goes wrong while it runs is a Miss with the reason the user sees: the deadline, the memory limit, or any
other failure of the entry (the worker is replaced by the pool; the server serves on).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from edge_runtime.entries.registry import Execution
from edge_runtime.errors import ArcError, DeadlineExceededError, ResourceExhaustedError
from edge_runtime.outcome import MissReason, StageTimings
from edge_runtime.read.reading import Reading

#: Runs compiled entry code: (bundle digest, entry id, module source, values, timeout seconds) -> Execution.
Executor = Callable[[str, str, str, dict[str, Any], "float | None"], Execution]


class ExecuteStage:
    """IS3 for one bundle: its compiled modules and the executor that runs them."""

    def __init__(self, digest: str, modules: Mapping[str, str], executor: Executor) -> None:
        self.digest = digest
        self.modules = modules
        self.executor = executor

    def run(self, reading: Reading, timeout_s: float | None, timings: StageTimings) -> Execution:
        """The entry's result and narration for ``reading``, or a Miss."""
        eid = reading.entry_id
        with timings.stage("is3_ms"):
            try:
                return self.executor(self.digest, eid, self.modules[eid], reading.values, timeout_s)
            except DeadlineExceededError as exc:
                raise reading.miss(MissReason.DEADLINE_EXCEEDED, str(exc)) from exc
            except ResourceExhaustedError as exc:
                raise reading.miss(MissReason.RESOURCE_EXHAUSTED, str(exc)) from exc
            except ArcError as exc:
                raise reading.miss(MissReason.EXECUTION_FAILED, str(exc)) from exc

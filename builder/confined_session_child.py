"""The confined side of the LLM builder's session: registries of untrusted entry code, behind the walls.

Role ``session`` of :mod:`builder.confined_launch`. The child loads the embedder, enters the walls
(:func:`builder.confined_launch.prepare`), says ``ready``, then serves requests from the builder
one at a time until its pipe closes. It holds every registry (the main one, each question's
workspace, each candidate's scratch copy) and every compiled entry, by handle; the parent holds
only handles and the plain metadata this side sends back (:mod:`builder.confined_session`).

A request is ``("req", op, args, drops)``; ``drops`` are handles the parent no longer uses (any
other message is the late answer to a model call that a time limit cut short, and is skipped). Each reply is
``("ok", value)`` or ``("error", kind, class, message, args, attributes)`` (the worker pool's error
description), pickled so that the parent's restricted unpickler accepts it. While an entry runs,
its ``lm()`` calls go to the parent as ``("lm", job, method, args, kwargs)`` and wait for the answer
(the worker pool's target-model proxy): the build server's model stays in the parent.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from builder.confined_launch import prepare
from builder.time_limit import time_limit
from edge_runtime.entries.compiler import LoadedCompiledEntry, compile_entry
from edge_runtime.entries.context import Context
from edge_runtime.entries.metadata import entry_to_dict
from edge_runtime.entries.registry import Execution, Registry, wrap_failures
from edge_runtime.errors import ArcError, DefinitionError
from edge_runtime.execute.remote_errors import _describe_error
from edge_runtime.execute.wire import _dumps_for_parent
from edge_runtime.execute.worker_process import _ParentChannel, _ParentTargetLM
from edge_runtime.semantic import call_function

_JOB = 0  # the channel's job id: one request runs at a time


def clone_registry(registry: Registry) -> Registry:
    """An isolated copy: registering into it leaves ``registry`` untouched (functions are shared, immutable)."""
    clone = copy.copy(registry)
    for name, value in vars(registry).items():
        if isinstance(value, (dict, list)):
            setattr(clone, name, copy.copy(value))
    return clone


def registry_conflicts(registry: Registry) -> list[str]:
    """Every do() intent and entry root must still resolve, unambiguously, once the new module is in."""
    problems = []
    for reg in registry.functions.values():
        for intent in reg.facts.intents:
            try:
                registry.resolve_function(intent)
            except ArcError as exc:
                problems.append(f"{reg.source_module}.{reg.function.name}: {exc}")
    for entry_id in registry.entries:
        try:
            registry.check_entry(entry_id)
        except ArcError as exc:
            problems.append(str(exc))
    return problems


def _registered(registry: Registry, added: list[str]) -> dict[str, Any]:
    """Plain metadata of what ``add_source`` just added: function declarations and entry dicts."""
    functions = {}
    for name in added:
        reg = registry.functions.get(name)
        if reg is not None:
            f = reg.function
            functions[name] = {"name": f.name, "description": f.description, "inputs": dict(f.inputs),
                               "outputs": dict(f.outputs), "calls": list(f.calls), "module": reg.source_module}
    entries = {entry_id: {"entry": entry_to_dict(registry.entries[entry_id]), "module": registry.entries[entry_id].module}
               for entry_id in added if entry_id in registry.entries}
    return {"functions": functions, "entries": entries}


def _execution(execution: Execution) -> dict[str, Any]:
    return {"result": dict(execution.result), "narration": [(s.function, s.text) for s in execution.narration]}


class _Session:
    """The child's state and one method per request."""

    def __init__(self, conn: Connection, embedder: Any) -> None:
        self.conn = conn
        self.embedder = embedder
        self.registries: dict[int, Registry] = {}
        self.compiled: dict[int, LoadedCompiledEntry] = {}

    def target_lm(self, has_lm: bool) -> Any:
        return _ParentTargetLM(_ParentChannel(self.conn, _JOB)) if has_lm else None

    # ---- registries --------------------------------------------------------------------
    def new(self, handle: int, registrations: list[tuple[str, str, str]], check: bool) -> dict[str, Any]:
        registry = Registry(self.embedder)
        added: list[str] = []
        for source, filename, module in registrations:
            if not all(isinstance(x, str) for x in (source, filename, module)):
                raise DefinitionError("entry sources must be text")
            added += registry.add_source(source, filename, module)
        if check:
            for entry_id in added:
                if entry_id in registry.entries:
                    registry.check_entry(entry_id)
        self.registries[handle] = registry
        return _registered(registry, added)

    def clone(self, handle: int, new: int) -> None:
        self.registries[new] = clone_registry(self.registries[handle])

    def add(self, handle: int, source: str, filename: str, module: str) -> dict[str, Any]:
        registry = self.registries[handle]
        return _registered(registry, registry.add_source(source, filename, module))

    def resolve(self, handle: int, intent: str) -> str:
        return self.registries[handle].resolve_function(intent).name

    def similarity(self, handle: int, a: str, b: str) -> float:
        vectors = self.embedder.embed([a, b])
        return float(vectors[0] @ vectors[1])

    def check_entry(self, handle: int, entry_id: str) -> None:
        self.registries[handle].check_entry(entry_id)

    def conflicts(self, handle: int) -> list[str]:
        return registry_conflicts(self.registries[handle])

    # ---- runs --------------------------------------------------------------------------
    def run_function(self, handle: int, name: str, inputs: dict[str, Any], seconds: float) -> dict[str, Any]:
        """A candidate on its planned inputs; the narration comes back even when it fails."""
        registry = self.registries[handle]
        ctx = Context(resolver=registry)
        record: dict[str, Any] = {"outputs": None, "error": None}
        try:
            with time_limit(seconds), wrap_failures(name, ctx):
                record["outputs"] = dict(call_function(ctx, registry.functions[name].function, inputs))
        except (ArcError, TimeoutError) as exc:
            record["error"] = _describe_error(exc)
        record["narration"] = [step.text for step in ctx.trace]
        return record

    def run_entry(self, handle: int, entry_id: str, values: dict[str, Any], has_lm: bool, seconds: float) -> dict:
        with time_limit(seconds):
            return _execution(self.registries[handle].run(entry_id, values, target_lm=self.target_lm(has_lm)))

    def compile(self, handle: int, entry_id: str, new: int) -> dict[str, Any]:
        compiled = compile_entry(self.registries[handle], entry_id)
        self.compiled[new] = LoadedCompiledEntry(compiled.source, entry_id)
        return {"source": compiled.source, "functions": list(compiled.functions)}

    def load_compiled(self, new: int, source: str, entry_id: str) -> None:
        self.compiled[new] = LoadedCompiledEntry(source, entry_id)

    def run_compiled(self, handle: int, values: dict[str, Any], has_lm: bool, seconds: float) -> dict[str, Any]:
        with time_limit(seconds):
            return _execution(self.compiled[handle].run(values, target_lm=self.target_lm(has_lm)))

    def drop(self, handles: list[int]) -> None:
        for handle in handles:
            self.registries.pop(handle, None)
            self.compiled.pop(handle, None)


_OPS: dict[str, Callable[..., Any]] = {
    name: getattr(_Session, name)
    for name in ("new", "clone", "add", "resolve", "similarity", "check_entry", "conflicts", "run_function",
                 "run_entry", "compile", "load_compiled", "run_compiled")
}


def _reply(conn: Connection, reply: tuple) -> None:
    try:
        data = _dumps_for_parent(reply)
    except Exception as exc:  # noqa: BLE001 - e.g. a result of a class the parent refuses
        data = _dumps_for_parent(("error", *_describe_error(ArcError(f"the value cannot leave the session: {exc}"))))
    conn.send_bytes(data)


def serve(conn: Connection, workdir: str, memory_limit_bytes: int) -> None:
    """Entry point of the child: confine, say ready, then answer requests until the pipe closes."""
    try:
        embedder, walls = prepare(workdir, memory_limit_bytes)
    except Exception as exc:  # noqa: BLE001 - reported, then the child ends
        _reply(conn, ("error", *_describe_error(exc)))
        return
    _reply(conn, ("ready", walls, os.getpid()))
    session = _Session(conn, embedder)
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if not (isinstance(msg, tuple) and len(msg) == 4 and msg[0] == "req"):
            continue
        _, op, args, drops = msg
        session.drop(drops)
        try:
            reply: tuple = ("ok", _OPS[op](session, *args))
        except Exception as exc:  # noqa: BLE001 - any failure of entry code (MemoryError too) is the parent's to word
            reply = ("error", *_describe_error(exc))
        _reply(conn, reply)

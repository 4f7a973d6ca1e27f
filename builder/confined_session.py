"""The LLM builder's confined session: every registration, compile and test run of LLM-written code
happens in one long-lived confined child, never in the builder's process.

``arc-build entries`` holds the Anthropic API key (the ``anthropic`` SDK reads it in this process)
and writes registry files; the code the builder model writes is untrusted. So the builder works on
*handles*: a :class:`ConfinedRegistry` stands for a registry that lives in the child
(:mod:`builder.confined_session_child`, started by :func:`builder.confined_launch.launch` with a
scrubbed environment, behind the device's walls), and a :class:`ConfinedCompiled` for a compiled
entry loaded there. This side keeps only plain metadata the child sends back, read with the worker
pool's restricted unpickler and checked for shape: function declarations (:class:`FunctionInfo`,
whose body facts this side computes itself from the source text, with :mod:`ast` only), entry
dicts rebuilt by the device's manifest parser, run results.

A child that dies or overruns its time (an import that computes ``9 ** 9 ** 9``, a run stuck in
one C call) is killed; the request fails with :class:`ConfinedBuildError` and the next request
starts a fresh child, into which each handle is rebuilt from its journal (the sources registered
into it, in order) the first time it is used. Model calls of entry code (``lm()``) are answered by
the parent's target model, with the device's bounds on their size.
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from builder.confined_build import MEMORY_LIMIT_BYTES, ConfinedBuildError
from builder.confined_launch import ConfinedChild, launch
from edge_runtime.entries.context import NarrationStep
from edge_runtime.entries.metadata import EntryPoint, entry_from_dict
from edge_runtime.entries.registry import Execution
from edge_runtime.entries.source_analysis import FunctionFacts, analyse_function, decorated_functions
from edge_runtime.errors import ArcError
from edge_runtime.execute.remote_errors import _describe_error, _rebuild_error
from edge_runtime.execute.wire import MAX_REPLY_BYTES, _check_lm_bounds, _check_lm_request, _check_value, _load_reply

#: Starting the child: a fresh interpreter that loads onnxruntime and the embedder.
START_SECONDS = 120.0
#: Registration, resolution, compiling: no entry code runs but module-level constant arithmetic.
OP_SECONDS = 60.0
#: Added to a run's own time limit (enforced in the child) before the parent kills the child.
GRACE_SECONDS = 10.0

Registration = tuple[str, str, str]  # (source, filename, module)


@dataclass(frozen=True)
class FunctionInfo:
    """A registered semantic function as the builder sees it: its declaration and its body's facts."""

    name: str
    description: str
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    calls: tuple[str, ...]
    module: str
    facts: FunctionFacts


@dataclass
class FunctionRun:
    """One candidate run: its outputs, or the error it raised, and its narration either way."""

    outputs: dict[str, Any] | None
    narration: list[str]
    error: Exception | None


class ConfinedSession:
    """The parent's side of the confined child; close it (or use it as a context manager)."""

    def __init__(self, *, memory_limit_bytes: int = MEMORY_LIMIT_BYTES, run_seconds: float = 10.0,
                 op_seconds: float = OP_SECONDS) -> None:
        self.memory_limit_bytes = memory_limit_bytes
        self.run_seconds = run_seconds
        self.op_seconds = op_seconds
        self.walls: dict[str, Any] = {}
        self.starts = 0
        self._child: ConfinedChild | None = None
        self._known: set[int] = set()  # handles the current child holds
        self._dropped: list[int] = []
        self._ids = itertools.count(1)
        self._finalizer: weakref.finalize | None = None

    def __enter__(self) -> ConfinedSession:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        return self._child.pid if self._child is not None else None

    def close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()
        self._child, self._finalizer = None, None
        self._known.clear()

    # ---- handles ------------------------------------------------------------------------
    def registry(self, registrations: Sequence[Registration] = (), *, check: bool = False) -> ConfinedRegistry:
        """A new registry in the child holding ``registrations``; ``check``: check its entries, as
        ``Registry.add_directory`` does."""
        handle = self._new_handle()
        registrations = list(registrations)
        added = self.request("new", handle, registrations, check)
        registry = ConfinedRegistry(self, handle, tuple(registrations))
        registry._note(added, registrations)
        return registry

    def _new_handle(self) -> int:
        return next(self._ids)

    def _forget(self, handle: int) -> None:
        self._dropped.append(handle)

    def _track(self, owner: object, handle: int) -> None:
        weakref.finalize(owner, self._forget, handle)

    # ---- the protocol -------------------------------------------------------------------
    def _start(self) -> ConfinedChild:
        child = launch("session", self.memory_limit_bytes)
        self._finalizer = weakref.finalize(self, child.close)
        self._child, self._known, self._dropped = child, set(), []
        self.starts += 1
        try:
            reply = self._receive(child, START_SECONDS, None, "starting the confined session")
            if not (reply[0] == "ready" and len(reply) == 3 and isinstance(reply[1], dict)):
                raise ConfinedBuildError("the confined session broke the protocol while starting")
        except BaseException:
            self.close()
            raise
        self.walls = dict(reply[1])
        return child

    def request(self, op: str, *args: Any, seconds: float | None = None, target_lm: Any = None) -> Any:
        """Send one request and return its value (raising its error, rebuilt); the child's ``lm()``
        calls meanwhile are answered with ``target_lm``."""
        child = self._child
        if child is None or child.process.poll() is not None:
            self.close()  # a child that died between requests: its handles are rebuilt on use
            child = self._start()
        drops = [h for h in self._dropped if h in self._known]
        self._known.difference_update(self._dropped)
        self._dropped = []
        try:
            child.conn.send(("req", op, args, drops))
        except OSError:
            self.close()
            raise ConfinedBuildError("the confined session is gone; the request was not sent") from None
        reply = self._receive(child, seconds if seconds is not None else self.op_seconds, target_lm, op)
        if reply[0] == "ok" and len(reply) == 2:
            return reply[1]
        if reply[0] == "error" and len(reply) == 6:
            raise _rebuild_error(*reply[1:])
        self.close()
        raise ConfinedBuildError(f"the confined session broke the protocol answering {op!r}")

    def _receive(self, child: ConfinedChild, seconds: float, target_lm: Any, what: str) -> tuple:
        while True:
            if not child.conn.poll(seconds):
                self.close()
                raise ConfinedBuildError(f"{what} took longer than {seconds:g} s; the confined session was stopped")
            try:
                reply = _load_reply(child.conn.recv_bytes(MAX_REPLY_BYTES))
                if reply[0] != "lm":
                    _check_value(reply)
                    return reply
                self._answer_lm(child, target_lm, reply)
            except (EOFError, OSError):
                code = child.exit_code()
                self.close()
                raise ConfinedBuildError(f"the confined session died during {what} (exit code {code})") from None
            except Exception as exc:  # noqa: BLE001 - a reply our child code would never send
                self.close()
                raise ConfinedBuildError(f"the confined session sent a reply that was refused: {exc}") from None

    @staticmethod
    def _answer_lm(child: ConfinedChild, target_lm: Any, msg: tuple) -> None:
        """One ``lm()`` call of entry code, answered by the builder's own target model."""
        method, args, kwargs = _check_lm_request(msg)
        try:
            _check_lm_bounds(target_lm, method, args, kwargs)
            answer = target_lm.generate(args[0], **kwargs) if method == "generate" else target_lm.choose(*args)
            if not isinstance(answer, str):
                raise TypeError(f"the target model returned a {type(answer).__name__}, not a str")
            reply: tuple = ("ok", answer)
        except ArcError as exc:
            reply = ("err", *_describe_error(exc))
        except Exception as exc:  # noqa: BLE001 - the model's failure becomes the entry's error
            from edge_runtime.errors import TargetModelError

            reply = ("err", *_describe_error(TargetModelError(f"target model failed: {type(exc).__name__}: {exc}")))
        child.conn.send(reply)

    def ensure(self, handle: int, rebuild: tuple[str, tuple]) -> None:
        """Make the current child hold ``handle``, rebuilding it from its journal after a restart."""
        if self._child is None or self._child.process.poll() is not None or handle not in self._known:
            op, args = rebuild
            self.request(op, handle, *args)
            self._known.add(handle)


def _function_info(data: Any, facts: dict[str, FunctionFacts]) -> FunctionInfo:
    if not (isinstance(data, dict) and isinstance(data.get("name"), str) and data["name"] in facts
            and isinstance(data.get("description"), str) and isinstance(data.get("module"), str)
            and isinstance(data.get("inputs"), dict) and isinstance(data.get("outputs"), dict)
            and isinstance(data.get("calls"), list) and all(isinstance(c, str) for c in data["calls"])):
        raise ConfinedBuildError("the confined session sent a malformed function declaration")
    return FunctionInfo(data["name"], data["description"], dict(data["inputs"]), dict(data["outputs"]),
                        tuple(data["calls"]), data["module"], facts[data["name"]])


def _execution(data: Any) -> Execution:
    if not (isinstance(data, dict) and isinstance(data.get("result"), dict) and isinstance(data.get("narration"), list)
            and all(isinstance(s, tuple) and len(s) == 2 and all(isinstance(x, str) for x in s)
                    for s in data["narration"])):
        raise ConfinedBuildError("the confined session sent a malformed run result")
    return Execution(dict(data["result"]), [NarrationStep(f, t) for f, t in data["narration"]])


class ConfinedRegistry:
    """A registry that lives in the confined child; ``functions`` and ``entries`` mirror its metadata."""

    def __init__(self, session: ConfinedSession, handle: int, journal: tuple[Registration, ...]) -> None:
        self.session = session
        self.handle = handle
        self.journal = journal
        self.functions: dict[str, FunctionInfo] = {}
        self.entries: dict[str, EntryPoint] = {}
        session._known.add(handle)
        session._track(self, handle)

    @property
    def sources(self) -> dict[str, str]:
        """Module name -> source text of everything registered (this side's own copy of the text)."""
        return {module: source for source, _, module in self.journal}

    def _use(self) -> int:
        self.session.ensure(self.handle, ("new", (list(self.journal), False)))
        return self.handle

    def _note(self, added: Any, registrations: list[Registration]) -> None:
        """Mirror what the child registered; the body facts come from this side's own parse."""
        if not (isinstance(added, dict) and isinstance(added.get("functions"), dict)
                and isinstance(added.get("entries"), dict)):
            raise ConfinedBuildError("the confined session sent a malformed registration reply")
        facts: dict[str, FunctionFacts] = {}
        for source, filename, _ in registrations:
            for name, node in decorated_functions(ast.parse(source, filename)).items():
                facts[name] = analyse_function(node, filename)
        for data in added["functions"].values():
            info = _function_info(data, facts)
            self.functions[info.name] = info
        for entry_id, data in added["entries"].items():
            try:
                entry = dataclasses.replace(entry_from_dict(data["entry"]), module=str(data["module"]))
            except Exception as exc:  # noqa: BLE001 - malformed plain data
                raise ConfinedBuildError(f"the confined session sent a malformed entry: {exc}") from None
            if entry.id != entry_id:
                raise ConfinedBuildError(f"the confined session sent entry {entry.id!r} as {entry_id!r}")
            self.entries[entry.id] = entry

    def add_source(self, source: str, filename: str, module: str) -> list[str]:
        """Register ``source`` in the child (validated, imported and checked there); returns what it added."""
        added = self.session.request("add", self._use(), source, filename, module)
        self._note(added, [(source, filename, module)])
        self.journal += ((source, filename, module),)
        return [*added["functions"], *added["entries"]]

    def clone(self) -> ConfinedRegistry:
        """An isolated copy: registering into it leaves this registry untouched."""
        handle = self.session._new_handle()
        self.session.request("clone", self._use(), handle)
        copy = ConfinedRegistry(self.session, handle, self.journal)
        copy.functions, copy.entries = dict(self.functions), dict(self.entries)
        return copy

    def resolve_function(self, intent: str) -> FunctionInfo:
        """The function ``intent`` names (NoMatchError / AmbiguousReferenceError as in-process)."""
        name = self.session.request("resolve", self._use(), intent)
        if name not in self.functions:
            raise ConfinedBuildError(f"the confined session resolved {intent!r} to an unknown function")
        return self.functions[name]

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two descriptions under the registry's embedder."""
        score = self.session.request("similarity", self._use(), a, b)
        if not isinstance(score, float):
            raise ConfinedBuildError("the confined session sent a malformed similarity")
        return score

    def check_entry(self, entry_id: str) -> None:
        self.session.request("check_entry", self._use(), entry_id)

    def conflicts(self) -> list[str]:
        """Every do() intent and entry root that no longer resolves unambiguously."""
        problems = self.session.request("conflicts", self._use())
        if not (isinstance(problems, list) and all(isinstance(p, str) for p in problems)):
            raise ConfinedBuildError("the confined session sent malformed conflicts")
        return problems

    def run_function(self, name: str, inputs: Mapping[str, Any], seconds: float) -> FunctionRun:
        """Run one registered function on ``inputs`` within ``seconds``."""
        data = self.session.request("run_function", self._use(), name, dict(inputs), seconds,
                                    seconds=seconds + GRACE_SECONDS)
        if not (isinstance(data, dict) and isinstance(data.get("narration"), list)
                and all(isinstance(t, str) for t in data["narration"])
                and (data.get("outputs") is None or isinstance(data["outputs"], dict))
                and (data.get("error") is None or (isinstance(data["error"], tuple) and len(data["error"]) == 5))):
            raise ConfinedBuildError("the confined session sent a malformed run record")
        error = _rebuild_error(*data["error"]) if data.get("error") is not None else None
        return FunctionRun(data.get("outputs"), list(data["narration"]), error)

    def run(self, entry_id: str, values: Mapping[str, Any], *, target_lm: Any = None) -> Execution:
        """Dynamic run of an entry (the root resolved by meaning), as ``Registry.run``."""
        seconds = self.session.run_seconds
        data = self.session.request("run_entry", self._use(), entry_id, dict(values), target_lm is not None, seconds,
                                    seconds=seconds + GRACE_SECONDS, target_lm=target_lm)
        return _execution(data)

    def compile(self, entry_id: str) -> ConfinedCompiled:
        """Compile ``entry_id`` in the child and keep the compiled module loaded there."""
        handle = self.session._new_handle()
        data = self.session.request("compile", self._use(), entry_id, handle)
        if not (isinstance(data, dict) and isinstance(data.get("source"), str) and isinstance(data.get("functions"), list)):
            raise ConfinedBuildError("the confined session sent a malformed compiled entry")
        return ConfinedCompiled(self.session, handle, data["source"], entry_id, tuple(map(str, data["functions"])))


class ConfinedCompiled:
    """A compiled entry loaded in the child; ``source`` is its module text."""

    def __init__(self, session: ConfinedSession, handle: int, source: str, entry_id: str,
                 functions: tuple[str, ...]) -> None:
        self.session = session
        self.handle = handle
        self.source = source
        self.entry_id = entry_id
        self.functions = functions
        session._known.add(handle)
        session._track(self, handle)

    def run(self, values: Mapping[str, Any], *, target_lm: Any = None) -> Execution:
        """Run the compiled entry on ``values``, as ``LoadedCompiledEntry.run``."""
        self.session.ensure(self.handle, ("load_compiled", (self.source, self.entry_id)))
        seconds = self.session.run_seconds
        data = self.session.request("run_compiled", self.handle, dict(values), target_lm is not None, seconds,
                                    seconds=seconds + GRACE_SECONDS, target_lm=target_lm)
        return _execution(data)

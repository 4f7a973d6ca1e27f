"""Dynamic mode: semantic functions and entry points found by what they mean.

``do()`` intents resolve against function descriptions and ``load()`` queries against
the keys of a memory layer, by embedding similarity. A reference that matches nothing
above ``threshold``, or two candidates within ``margin``, is an error naming them all:
a wrong callee is never picked silently.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edge_runtime.entries.context import Context, NarrationStep
from edge_runtime.entries.metadata import EntryPoint, SemanticFunction
from edge_runtime.entries.sandbox import exec_source
from edge_runtime.entries.source_analysis import FunctionFacts, analyse_function, decorated_functions
from edge_runtime.errors import (
    AmbiguousReferenceError,
    ArcError,
    DefinitionError,
    ExecutionError,
    NoMatchError,
    ParameterValidationError,
)
from edge_runtime.route.embedder import Embedder
from edge_runtime.semantic import call_function


@dataclass(frozen=True)
class Execution:
    """IS3/IS4 output: the result dict and the narration trace."""

    result: dict[str, Any]
    narration: list[NarrationStep]

    def narration_text(self) -> list[str]:
        return [step.text for step in self.narration]


@dataclass(frozen=True)
class RegisteredFunction:
    function: SemanticFunction
    facts: FunctionFacts
    source_module: str


def _normalise(text: str) -> str:
    return " ".join(text.lower().split())


class Registry:
    """An in-memory registry of semantic functions and entry points with semantic discovery."""

    def __init__(
        self, embedder: Embedder, *, threshold: float = 0.55, margin: float = 0.03, exact_shortcut: bool = True
    ) -> None:
        """``exact_shortcut``: a reference spelled exactly like one candidate resolves to it without
        embedding (same answer, since identical text has similarity 1; off, every reference is embedded,
        which is how semantic discovery costs are measured)."""
        self.embedder = embedder
        self.threshold = threshold
        self.margin = margin
        self.exact_shortcut = exact_shortcut
        #: Similarity at which two function descriptions are reported as near-duplicates (pairs kept in
        #: ``near_duplicates``: the registry reports them for review and never merges them silently).
        self.near_duplicate = 0.92
        self.near_duplicates: list[tuple[str, str, float]] = []
        self.functions: dict[str, RegisteredFunction] = {}
        self.entries: dict[str, EntryPoint] = {}
        self.sources: dict[str, str] = {}
        self._descriptions: list[str] = []
        self._vectors = np.zeros((0, embedder.dim), dtype=np.float32)

    # ---- registration -------------------------------------------------
    def add_source(self, source: str, filename: str, module: str | None = None) -> list[str]:
        """Validate, check and register every function and entry point defined in ``source``."""
        module = module or Path(filename).stem
        if module in self.sources:
            raise DefinitionError(f"module {module!r} is already registered")
        namespace = exec_source(source, filename, module)
        tree = ast.parse(source, filename)
        nodes = decorated_functions(tree)
        added: list[str] = []
        new_functions: list[RegisteredFunction] = []
        seen: set[int] = set()
        for value in namespace.values():
            if isinstance(value, SemanticFunction) and id(value) not in seen:
                seen.add(id(value))
                node = nodes.get(value.name)
                if node is None:
                    raise DefinitionError(f"{filename}: {value.name} is not a top-level decorated function")
                facts = analyse_function(node, filename)
                _check_declarations(value, facts, filename)
                new_functions.append(RegisteredFunction(value, facts, module))
        new_entries = list({id(v): v for v in namespace.values() if isinstance(v, EntryPoint)}.values())
        ids = [entry.id for entry in new_entries]
        if len(set(ids)) != len(ids):
            raise DefinitionError(f"{filename}: entry ids must be unique, got {sorted(ids)}")
        for reg in new_functions:
            if reg.function.name in self.functions:
                raise DefinitionError(f"{filename}: a function named {reg.function.name!r} is already registered")
        for entry in new_entries:
            if entry.id in self.entries:
                raise DefinitionError(f"{filename}: entry {entry.id!r} is already registered")
        self.sources[module] = source
        for reg in new_functions:
            self.functions[reg.function.name] = reg
            self._descriptions.append(reg.function.description)
            added.append(reg.function.name)
        if new_functions:
            vectors = self.embedder.embed([r.function.description for r in new_functions])
            self._report_near_duplicates(new_functions, vectors)
            self._vectors = np.vstack([self._vectors, vectors])
        for entry in new_entries:
            self.entries[entry.id] = EntryPoint(**{**entry.__dict__, "module": module})
            added.append(entry.id)
        return added

    def _report_near_duplicates(self, new: list[RegisteredFunction], vectors: np.ndarray) -> None:
        """Record (never merge) pairs of functions whose descriptions say nearly the same thing."""
        if len(self._vectors):
            scores = vectors @ self._vectors[: len(self._descriptions) - len(new)].T
            existing = self.functions_by_index()
            for i, j in zip(*np.nonzero(scores >= self.near_duplicate)):
                self.near_duplicates.append((new[i].function.name, existing[j].function.name, float(scores[i, j])))
        if len(new) > 1:
            inner = vectors @ vectors.T
            for i, j in zip(*np.nonzero(np.triu(inner, 1) >= self.near_duplicate)):
                self.near_duplicates.append((new[i].function.name, new[j].function.name, float(inner[i, j])))

    def add_file(self, path: str | Path) -> list[str]:
        path = Path(path)
        return self.add_source(path.read_text(encoding="utf-8"), str(path), path.stem)

    def add_directory(self, directory: str | Path) -> list[str]:
        """Register every ``*.py`` file in ``directory`` (sorted, so builds are reproducible), then check the entries."""
        added: list[str] = []
        for path in sorted(Path(directory).glob("*.py")):
            if not path.name.startswith("_"):
                added += self.add_file(path)
        for entry_id in added:
            if entry_id in self.entries:
                self.check_entry(entry_id)
        return added

    def check_entry(self, entry_id: str) -> None:
        """An entry must be consistent before it is served: originals valid, template renders the
        original question, the root resolves and returns the declared answer key."""
        entry = self.entries[entry_id]
        where = f"entry {entry_id!r} ({entry.module})"
        try:
            originals = entry.validate(entry.original_values)
        except ParameterValidationError as exc:
            raise DefinitionError(f"{where}: original value invalid: {exc}") from exc
        for param in entry.params:
            for example in param.examples:
                try:
                    param.validate(example)
                except ParameterValidationError as exc:
                    raise DefinitionError(f"{where}: example value invalid: {exc}") from exc
        if entry.question and _normalise(entry.render(originals)) != _normalise(entry.question):
            raise DefinitionError(f"{where}: the template with the original values does not give the original question")
        root = self.resolve_function(entry.root)
        if entry.answer_key is not None and entry.answer_key not in root.outputs:
            raise DefinitionError(f"{where}: answer_key {entry.answer_key!r} is not an output of {root.name}")

    # ---- resolution ---------------------------------------------------
    def match(self, kind: str, query: str, candidates: Sequence[str], vectors: np.ndarray | None = None) -> int | None:
        """Index of the candidate ``query`` refers to; None below threshold; raises when ambiguous."""
        if not candidates:
            return None
        wanted = _normalise(query)
        exact = [i for i, c in enumerate(candidates) if _normalise(c) == wanted]
        if len(exact) == 1 and self.exact_shortcut:
            return exact[0]
        if vectors is None:
            embedded = self.embedder.embed([query, *candidates])
            q, vectors = embedded[0], embedded[1:]
        else:
            q = self.embedder.embed([query])[0]
        scores = vectors @ q
        order = np.argsort(-scores)
        ranked = [(candidates[i], float(scores[i])) for i in order[:5]]
        best = float(scores[order[0]])
        if best < self.threshold:
            return None
        if len(order) > 1 and float(scores[order[1]]) >= max(self.threshold, best - self.margin):
            raise AmbiguousReferenceError(kind, query, ranked, f"two candidates within margin {self.margin}")
        return int(order[0])

    def resolve_function(self, intent: str) -> SemanticFunction:
        index = self.match("do", intent, self._descriptions, self._vectors)
        if index is None:
            ranked = self._ranked(intent)
            raise NoMatchError("do", intent, ranked, f"no function description reaches threshold {self.threshold}")
        return self.functions_by_index()[index].function

    def resolve_key(self, kind: str, query: str, keys: Sequence[str]) -> str | None:
        index = self.match(kind, query, keys)
        return None if index is None else keys[index]

    def functions_by_index(self) -> list[RegisteredFunction]:
        return list(self.functions.values())

    def registered(self, function: SemanticFunction) -> RegisteredFunction:
        return self.functions[function.name]

    def _ranked(self, query: str) -> list[tuple[str, float]]:
        if not self._descriptions:
            return []
        scores = self._vectors @ self.embedder.embed([query])[0]
        order = np.argsort(-scores)[:5]
        return [(self._descriptions[i], float(scores[i])) for i in order]

    # ---- execution (IS3 in dynamic mode) ------------------------------
    def run(
        self,
        entry_id: str,
        values: Mapping[str, Any],
        *,
        target_lm: Any = None,
        tools: Mapping[str, Callable[..., Any]] | None = None,
    ) -> Execution:
        """Validate ``values``, then dispatch the entry's root function in a fresh context."""
        entry = self.entries[entry_id]
        checked = entry.validate(dict(values))
        ctx = Context(resolver=self, target_lm=target_lm, tools=dict(tools or {}))
        root = self.resolve_function(entry.root)
        with wrap_failures(entry_id, ctx):
            out = call_function(ctx, root, entry.payload(checked))
        return Execution(dict(out), list(ctx.trace))


@contextmanager
def wrap_failures(entry_id: str, ctx: Context) -> Iterator[None]:
    """Any non-ARC exception inside an entry becomes an ExecutionError naming the function it left."""
    try:
        yield
    except ArcError:
        raise
    except RecursionError as exc:
        raise ExecutionError(f"{entry_id}: recursion too deep") from exc
    except Exception as exc:  # noqa: BLE001 - entry code may raise anything; the caller gets one type
        raise ExecutionError(f"{entry_id}: {type(exc).__name__}: {exc}") from exc


def _check_declarations(function: SemanticFunction, facts: FunctionFacts, filename: str) -> None:
    """The declared metadata must tell the truth about the body."""
    where = f"{filename}:{facts.node.lineno} {function.name}"
    if set(facts.intents) != set(function.calls):
        raise DefinitionError(
            f"{where}: declares calls {sorted(function.calls)} but its do() intents are {sorted(set(facts.intents))}"
        )
    if facts.narrates == 0:
        raise DefinitionError(f"{where}: never narrates; every step of a cached solution must be explained")
    if not function.outputs:
        raise DefinitionError(f"{where}: declares no outputs")
    for keys in facts.return_keys:
        if keys is None or set(keys) != set(function.outputs):
            raise DefinitionError(
                f"{where}: every return must be a dict literal with exactly the declared outputs {sorted(function.outputs)}"
            )
    if not facts.return_keys:
        raise DefinitionError(f"{where}: never returns its outputs")

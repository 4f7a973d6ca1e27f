"""The execution context: a stack of isolated memory layers plus the narration trace.

Each ``do()`` pushes a fresh layer holding only the payloads it passes and pops it
afterwards, so sibling calls never see each other's values.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import InitVar, dataclass, field
from typing import Any, Protocol

from edge_runtime.entries.metadata import SemanticFunction
from edge_runtime.errors import ExecutionError, NoMatchError


@dataclass(frozen=True)
class NarrationStep:
    """One human-readable reasoning step, attributed to the function that took it."""

    function: str
    text: str


class Resolver(Protocol):
    """Resolves natural-language references; the dynamic registry implements it."""

    def resolve_function(self, intent: str) -> SemanticFunction: ...

    def resolve_key(self, kind: str, query: str, keys: Sequence[str]) -> str | None:
        """The key ``query`` refers to, None if nothing is close enough; raises if ambiguous."""
        ...


#: Each context's target model, kept off the context itself: entry code holds ``ctx``, and nothing
#: reachable from it may be the model (entries reach the model only through lm/extract/smart_convert,
#: which apply the caps). Weak keys: a context's model goes with it.
_MODELS: weakref.WeakKeyDictionary[Context, Any] = weakref.WeakKeyDictionary()


def model_of(ctx: Context) -> Any:
    """The target model ``ctx`` was created with (None if none): for the primitives only."""
    return _MODELS.get(ctx)


@dataclass(eq=False)
class Context:
    """Per-invocation state. Compiled code uses it only for narration and tools; the target model it is
    created with is not an attribute (see ``model_of``)."""

    resolver: Resolver | None = None
    target_lm: InitVar[Any] = None
    tools: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    max_depth: int = 32
    layers: list[dict[str, Any]] = field(default_factory=list)
    frames: list[str] = field(default_factory=list)
    trace: list[NarrationStep] = field(default_factory=list)

    def __post_init__(self, target_lm: Any) -> None:
        if target_lm is not None:
            _MODELS[self] = target_lm

    def push(self, payload: Mapping[str, Any], function: str) -> None:
        if len(self.frames) >= self.max_depth:
            raise ExecutionError(f"call depth exceeds {self.max_depth} at {function!r}")
        self.layers.append(dict(payload))
        self.frames.append(function)

    def pop(self) -> None:
        self.layers.pop()
        self.frames.pop()

    @property
    def current_function(self) -> str:
        return self.frames[-1] if self.frames else "<entry>"

    def lookup(self, query: str) -> Any:
        """Find the value whose key best matches ``query``, searching layers top-down."""
        if self.resolver is None:
            raise ExecutionError("load() needs a resolver: this context runs compiled code only")
        for layer in reversed(self.layers):
            key = self.resolver.resolve_key("load", query, list(layer))
            if key is not None:
                return layer[key]
        candidates = [(k, 0.0) for layer in self.layers for k in layer]
        raise NoMatchError("load", query, candidates, "no value in any memory layer matches")

    def narrate(self, text: str, function: str | None = None) -> None:
        self.trace.append(NarrationStep(function or self.current_function, str(text)))


del Context.target_lm  # the InitVar's default, which dataclass leaves on the class: ctx.target_lm must not exist

"""The eight primitives and the two declarations that semantic-function sources import.

This is the only module entry sources (and compiled modules) may import from the runtime.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from edge_runtime.entries.context import Context, model_of
from edge_runtime.entries.conversion import convert
from edge_runtime.entries.metadata import EntryPoint, Param, SemanticFunction
from edge_runtime.errors import (
    ConversionError,
    DefinitionError,
    ExecutionError,
    TargetModelError,
    ToolNotAllowedError,
)
from edge_runtime.read.values import parse_quantity

__all__ = [
    "semantic_function",
    "entry_point",
    "Param",
    "load",
    "do",
    "narrate",
    "lm",
    "extract",
    "convert",
    "smart_convert",
    "invoke_tool",
]


def semantic_function(
    description: str,
    *,
    inputs: Mapping[str, Any],
    outputs: Mapping[str, Any],
    calls: Sequence[str] = (),
) -> Callable[[Callable[..., dict[str, Any]]], SemanticFunction]:
    """Declare a semantic function: what it does, what it reads and returns (description -> example), whom it calls."""

    def wrap(fn: Callable[..., dict[str, Any]]) -> SemanticFunction:
        if not description.strip():
            raise DefinitionError(f"{fn.__name__}: empty description")
        return SemanticFunction(
            name=fn.__name__,
            description=description,
            inputs=dict(inputs),
            outputs=dict(outputs),
            calls=tuple(calls),
            fn=fn,
            module=getattr(fn, "__module__", "<unknown>") or "<unknown>",
        )

    return wrap


def entry_point(
    *,
    id: str,
    description: str,
    template: str,
    params: Sequence[Param],
    root: str,
    question: str = "",
    answer_key: str | None = None,
    whole_answer: bool = False,
    answer_minimum: float | None = None,
) -> EntryPoint:
    """Declare how a class of questions enters the cache (template ``q(•1..•n)`` with ``{name}`` slots)."""
    return EntryPoint(
        id=id,
        description=description,
        template=template,
        params=tuple(params),
        root=root,
        question=question,
        answer_key=answer_key,
        whole_answer=whole_answer,
        answer_minimum=answer_minimum,
    )


def load(ctx: Context, query: str, d_type: type | None = None) -> Any:
    """The value whose description best matches ``query`` (top layer first), coerced to ``d_type``."""
    value = ctx.lookup(query)
    return convert(value, d_type) if d_type is not None else value


class SemanticDict(dict):  # type: ignore[type-arg]
    """A function's output dict; a key not present verbatim is resolved by description."""

    def __init__(self, data: Mapping[str, Any], ctx: Context) -> None:
        super().__init__(data)
        self._ctx = ctx

    def __missing__(self, query: str) -> Any:
        resolver = self._ctx.resolver
        key = resolver.resolve_key("output", query, list(self)) if resolver is not None else None
        if key is None:
            raise KeyError(query)
        return dict.__getitem__(self, key)


def do(ctx: Context, intent: str, payloads: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Find the function whose description matches ``intent``, run it in a fresh layer, return its outputs."""
    if ctx.resolver is None:
        raise ExecutionError("do() needs a resolver: this context runs compiled code only")
    target = ctx.resolver.resolve_function(intent)
    return call_function(ctx, target, payloads or {})


def call_function(ctx: Context, target: SemanticFunction, payloads: Mapping[str, Any]) -> dict[str, Any]:
    """Run ``target`` in an isolated layer and check it returned exactly what it declared."""
    ctx.push(payloads, target.description)
    try:
        out = target.fn(ctx)
    finally:
        ctx.pop()
    if not isinstance(out, dict) or set(out) != set(target.outputs):
        got = sorted(out) if isinstance(out, dict) else type(out).__name__
        raise DefinitionError(f"{target.name} returned {got}, declared outputs {sorted(target.outputs)}")
    return SemanticDict(out, ctx)


def narrate(ctx: Context, text: Any, function: str | None = None) -> None:
    """Append a human-readable reasoning step to the trace."""
    ctx.narrate(str(text), function)


def _model(ctx: Context) -> Any:
    model = model_of(ctx)
    if model is None:
        raise TargetModelError("this step needs the target model, and none is configured")
    return model


def lm(ctx: Context, task: str, text: str = "", choices: Sequence[str] | None = None) -> str:
    """Ask the target model an atomic language task; with ``choices`` the answer is one of them."""
    if choices:
        prompt = f"Task: {task}\nOptions: {', '.join(choices)}\nText: {text}\nAnswer with one option:"
        answer = _model(ctx).choose(prompt, list(choices))
        if answer not in choices:
            raise TargetModelError(f"target model answered {answer!r}, not one of {list(choices)!r}")
        return answer
    prompt = f"Task: {task}\nText: {text}\nAnswer:"
    return _model(ctx).generate(prompt, max_new_tokens=48, stop=("\n",)).strip()


def extract(ctx: Context, what: str, text: str) -> str:
    """Pull ``what`` out of ``text`` verbatim; an answer not found in the text is refused."""
    prompt = f"Copy from the text, word for word, {what}.\nText: {text}\nCopied:"
    answer = _model(ctx).generate(prompt, max_new_tokens=32, stop=("\n",)).strip()
    if not answer or answer not in text:
        raise TargetModelError(f"extracted {answer!r} for {what!r}, which is not verbatim in the text")
    return answer


#: Characters a literal of these types may contain; generation is held to them.
_LITERAL_CHARSETS: dict[type, str] = {int: "0123456789-", float: "0123456789.-", Fraction: "0123456789.-", bool: "TrueFals"}


def smart_convert(ctx: Context, value: Any, d_type: type) -> Any:
    """``convert``; then the number reader for numbers people write ("1 1/2", "two and a half", "a dozen");
    failing both, ask T for a Python literal, accepted only if it parses and has the type."""
    try:
        return convert(value, d_type)
    except ConversionError:
        pass
    if d_type in (int, float, Fraction) and isinstance(value, str):
        try:
            quantity = parse_quantity(value)
        except ConversionError:
            pass
        else:
            if quantity.unit is None:  # a bare number; with a unit attached, the model decides what it means
                return convert(quantity.value, d_type)
    type_name = getattr(d_type, "__name__", str(d_type))
    prompt = (
        f"Rewrite the value as a Python {type_name} literal. Reply with the literal only.\n"
        f"Examples: 'three' -> 3; 'one half' -> 0.5; 'yes' -> True\nValue: {value}\nLiteral:"
    )
    charset = _LITERAL_CHARSETS.get(d_type)
    answer = _model(ctx).generate(prompt, max_new_tokens=24, stop=("\n",), charset=charset).strip()
    try:
        literal = ast.literal_eval(answer)
    except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
        raise ConversionError(f"{value!r}: target model answer {answer!r} is not a Python literal") from exc
    try:
        return convert(literal, d_type)
    except ConversionError as exc:
        raise ConversionError(f"{value!r}: target model answer {answer!r} is not a {type_name}") from exc


def invoke_tool(ctx: Context, tool: str, args: Mapping[str, Any] | None = None) -> Any:
    """Call a tool the host registered; any other name is refused."""
    if tool not in ctx.tools:
        raise ToolNotAllowedError(f"tool {tool!r} is not registered by the host (allowed: {sorted(ctx.tools)})")
    return ctx.tools[tool](**dict(args or {}))

"""One client over the Messages API for the three build roles: source S, builder B, judges J (a committee of 2).

Every answer is structured: the request offers one tool, the answer is that tool's ``tool_use``
input, checked against the tool's JSON schema (and the tool's own semantic check). An answer
without the tool call, with a wrong shape or with unparsable JSON is sent back to the model with
the error and asked again, up to ``answer_retries`` times; what is left is an :class:`AnswerError`
the build records as a rejection, never a crash.

HTTP failures that may pass (429, 408/409, 5xx, connection errors) are retried here with
exponential backoff (the SDK's own retries are off, so this loop is the one tests exercise).
Concurrency is bounded by a semaphore. Usage is turned into dollars with a price table, per role
and per :class:`Meter`. ``record=PATH`` appends every request/response pair to a JSONL cassette;
``replay=PATH`` serves answers from one without any HTTP.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from builder.llm.schema import schema_errors

T = TypeVar("T")

DEFAULT_MODEL = "claude-opus-4-5"
ROLES = ("source", "builder", "judge-1", "judge-2")
JUDGES = ("judge-1", "judge-2")
_RETRYABLE_STATUS = frozenset({408, 409, 429})


# ---- prices and accounting ---------------------------------------------------------------
@dataclass(frozen=True)
class Prices:
    """Dollars per million tokens (Opus 4.5 list prices by default)."""

    input: float = 5.0
    output: float = 25.0
    cache_write: float = 6.25
    cache_read: float = 0.50

    def cost(self, usage: Mapping[str, Any]) -> float:
        """Dollars for one response's ``usage``."""
        return (
            _tokens(usage, "input_tokens") * self.input
            + _tokens(usage, "output_tokens") * self.output
            + _tokens(usage, "cache_creation_input_tokens") * self.cache_write
            + _tokens(usage, "cache_read_input_tokens") * self.cache_read
        ) / 1_000_000


def _tokens(usage: Mapping[str, Any], key: str) -> int:
    return int(usage.get(key) or 0)


@dataclass
class Tally:
    """Calls, tokens, dollars and seconds of one role."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    usd: float = 0.0
    seconds: float = 0.0

    def add(self, usage: Mapping[str, Any], usd: float, seconds: float) -> None:
        self.calls += 1
        self.input_tokens += _tokens(usage, "input_tokens")
        self.output_tokens += _tokens(usage, "output_tokens")
        self.cache_write_tokens += _tokens(usage, "cache_creation_input_tokens")
        self.cache_read_tokens += _tokens(usage, "cache_read_input_tokens")
        self.usd += usd
        self.seconds += seconds


class Meter:
    """Thread-safe usage per role group (``source``, ``builder``, ``judge``: both judges share one)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.tallies: dict[str, Tally] = defaultdict(Tally)

    def add(self, role: str, usage: Mapping[str, Any], usd: float, seconds: float) -> None:
        with self._lock:
            self.tallies[role_group(role)].add(usage, usd, seconds)

    @property
    def usd(self) -> float:
        return sum(t.usd for t in self.tallies.values())

    def as_dict(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {role: asdict(t) for role, t in sorted(self.tallies.items())}


def role_group(role: str) -> str:
    return "judge" if role.startswith("judge") else role


# ---- errors ------------------------------------------------------------------------------------
class LLMError(Exception):
    """The service did not answer (after retries), or answered with an error that retrying cannot fix."""


class FatalLLMError(LLMError):
    """Credentials or configuration are wrong (401/403/404): no later request would fare better."""


class ReplayMissError(LLMError):
    """Replay mode met a request the cassette does not hold (the prompts changed since recording)."""


class MalformedResponseError(LLMError):
    """The HTTP body was not a Message (invalid JSON, wrong shape)."""


class AnswerError(LLMError):
    """No valid structured answer after every retry; ``errors`` holds the last problems found."""

    def __init__(self, tool: str, errors: Sequence[str]) -> None:
        self.tool = tool
        self.errors = list(errors)
        super().__init__(f"no valid {tool} answer: " + "; ".join(self.errors[:5]))


# ---- tools ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tool:
    """A structured answer: a tool the model must call, its schema, and an optional semantic check.

    ``check(answer)`` returns a list of problems (empty when the answer is usable); they are fed
    back to the model like schema errors."""

    name: str
    description: str
    schema: dict[str, Any]
    check: Callable[[dict[str, Any]], list[str]] | None = field(default=None, compare=False)

    def param(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.schema}

    def problems(self, answer: Any) -> list[str]:
        errors = schema_errors(answer, self.schema)
        if not errors and self.check is not None:
            errors = list(self.check(answer))
        return errors


# ---- configuration ------------------------------------------------------------------------
@dataclass
class ClientConfig:
    """Models per role, limits, retries, prices and the cassette mode."""

    source_model: str = DEFAULT_MODEL
    builder_model: str = DEFAULT_MODEL
    judge_models: tuple[str, str] = (DEFAULT_MODEL, DEFAULT_MODEL)
    api_key: str | None = None
    base_url: str | None = None
    thinking_budget: int | None = 4096
    builder_max_tokens: int = 12_000
    source_max_tokens: int = 8_000
    judge_max_tokens: int = 2_000
    max_retries: int = 5
    base_delay: float = 1.0
    max_delay: float = 30.0
    answer_retries: int = 2
    concurrency: int = 4
    timeout: float = 600.0
    record: str | Path | None = None
    replay: str | Path | None = None
    prices: Prices = field(default_factory=Prices)

    @classmethod
    def from_flags(cls, flags: Any) -> ClientConfig:
        """The configuration a command's LLM flags ask for (``base_url``, ``record``, ``replay`` and, where the
        command has them, ``model_source``, ``model_builder``, ``model_judge``): one reading for every command."""
        config = cls(base_url=flags.base_url, record=flags.record, replay=flags.replay)
        if getattr(flags, "model_builder", None):
            config.builder_model = flags.model_builder
        if getattr(flags, "model_judge", None):
            config.judge_models = (flags.model_judge, flags.model_judge)
        if getattr(flags, "model_source", None):
            config.source_model = flags.model_source
        return config

    def model(self, role: str) -> str:
        if role == "source":
            return self.source_model
        if role == "builder":
            return self.builder_model
        return self.judge_models[JUDGES.index(role)]

    def max_tokens(self, role: str) -> int:
        return {"source": self.source_max_tokens, "builder": self.builder_max_tokens}.get(role, self.judge_max_tokens)


def request_key(request: Mapping[str, Any]) -> str:
    """What a cassette files a request under: the hash of its canonical JSON."""
    return hashlib.sha256(json.dumps(request, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


class Cassette:
    """A JSONL file of ``{key, role, request, response}`` lines; appends when recording."""

    def __init__(self, path: str | Path, mode: str) -> None:
        self.path = Path(path)
        self.mode = mode
        self._lock = threading.Lock()
        self._served: dict[str, deque[dict[str, Any]]] = defaultdict(deque)
        self._last: dict[str, dict[str, Any]] = {}
        if mode == "replay":
            if not self.path.exists():
                raise FileNotFoundError(f"no cassette at {self.path}")
            for line in self.path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    self._served[row["key"]].append(row["response"])
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, role: str, request: Mapping[str, Any], response: Mapping[str, Any]) -> None:
        line = json.dumps({"key": request_key(request), "role": role, "request": request, "response": response},
                          ensure_ascii=False)
        with self._lock, open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")

    def serve(self, role: str, request: Mapping[str, Any]) -> dict[str, Any]:
        key = request_key(request)
        with self._lock:
            queue = self._served.get(key)
            if queue:
                self._last[key] = queue.popleft()
                return self._last[key]
            if key in self._last:  # asked again more often than recorded: same answer
                return self._last[key]
        raise ReplayMissError(f"the cassette {self.path} holds no answer for this {role} request (key {key[:12]})")


# ---- the client ---------------------------------------------------------------------------
class LLMClient:
    """``ask(role, ...)`` → a validated tool input; usage lands in ``self.meter`` and the caller's meter."""

    def __init__(
        self,
        config: ClientConfig | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        sdk: Any = None,
    ) -> None:
        self.config = config or ClientConfig()
        if self.config.record and self.config.replay:
            raise ValueError("record and replay are exclusive")
        self.sleep = sleep
        self.meter = Meter()
        self.http_calls = 0
        self._semaphore = threading.BoundedSemaphore(max(1, self.config.concurrency))
        self._count_lock = threading.Lock()
        self.cassette: Cassette | None = None
        if self.config.replay:
            self.cassette = Cassette(self.config.replay, "replay")
        elif self.config.record:
            self.cassette = Cassette(self.config.record, "record")
        self._sdk = sdk
        if self._sdk is None and not self.config.replay:
            import anthropic

            self._sdk = anthropic.Anthropic(
                api_key=self.config.api_key, base_url=self.config.base_url,
                max_retries=0, timeout=self.config.timeout,
            )

    def close(self) -> None:
        if self._sdk is not None and hasattr(self._sdk, "close"):
            self._sdk.close()

    # ---- structured answers --------------------------------------------------------
    def ask(
        self,
        role: str,
        *,
        system: str,
        prompt: str,
        tool: Tool,
        context: str | None = None,
        meter: Meter | None = None,
    ) -> dict[str, Any]:
        """Ask ``role`` to answer ``prompt`` by calling ``tool``; returns the tool input once it validates.

        ``context`` (a question and its transcript) is sent as a second system block marked for
        prompt caching, since every phase of one question repeats it."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; one of {ROLES}")
        thinking = role == "builder" and bool(self.config.thinking_budget)
        blocks: list[dict[str, Any]] = [{"type": "text", "text": f"[arc-role:{role}] {system}"}]
        if context:
            blocks.append({"type": "text", "text": context, "cache_control": {"type": "ephemeral"}})
        request: dict[str, Any] = {
            "model": self.config.model(role),
            "max_tokens": self.config.max_tokens(role),
            "system": blocks,
            "tools": [tool.param()],
            # Extended thinking allows only tool_choice "auto": the prompt asks for the call instead.
            "tool_choice": {"type": "auto"} if thinking or role == "source" else {"type": "tool", "name": tool.name},
            "messages": [{"role": "user", "content": prompt}],
        }
        if thinking:
            request["thinking"] = {"type": "enabled", "budget_tokens": int(self.config.thinking_budget or 0)}
            request["max_tokens"] = max(request["max_tokens"], int(self.config.thinking_budget or 0) + 1024)
        problems: list[str] = []
        for _attempt in range(self.config.answer_retries + 1):
            try:
                response = self.send(role, request, meter)
            except MalformedResponseError as exc:
                problems = [str(exc)]
                continue  # nothing to answer to: ask the same again
            answer, problems, follow_up = self._read(response, tool)
            if answer is not None:
                return answer
            if follow_up:
                request = {**request, "messages": [*request["messages"], *follow_up]}
        raise AnswerError(tool.name, problems)

    def _read(
        self, response: Mapping[str, Any], tool: Tool
    ) -> tuple[dict[str, Any] | None, list[str], list[dict[str, Any]]]:
        """(answer, problems, messages to append for the retry)."""
        content = [dict(b) for b in response.get("content") or []]
        calls = [b for b in content if b.get("type") == "tool_use"]
        mine = [b for b in calls if b.get("name") == tool.name]
        if not mine:
            problems = [f"the answer has no {tool.name} tool call"]
            feedback = f"Your answer did not call the `{tool.name}` tool. Answer again by calling `{tool.name}`."
            if not content:
                return None, problems, []
            if calls:  # other tools were called: each needs a result
                turn: list[dict[str, Any]] = [
                    {"type": "tool_result", "tool_use_id": b["id"], "is_error": True, "content": feedback} for b in calls
                ]
                return None, problems, [{"role": "assistant", "content": content}, {"role": "user", "content": turn}]
            return None, problems, [{"role": "assistant", "content": content}, {"role": "user", "content": feedback}]
        answer: Any = mine[0].get("input")
        if isinstance(answer, str):
            try:
                answer = json.loads(answer)
            except json.JSONDecodeError as exc:
                answer, problems = None, [f"the tool input is not valid JSON: {exc}"]
        problems = tool.problems(answer) if answer is not None else problems
        if not problems:
            return answer, [], []
        message = (
            f"Your `{tool.name}` call was rejected:\n" + "\n".join(f"- {p}" for p in problems)
            + f"\nCall `{tool.name}` again with a corrected, complete answer."
        )
        results = [
            {"type": "tool_result", "tool_use_id": b["id"], "is_error": True,
             "content": message if b is mine[0] else "ignored: only one call is expected"}
            for b in calls
        ]
        return None, problems, [{"role": "assistant", "content": content}, {"role": "user", "content": results}]

    # ---- one request -------------------------------------------------------------------
    def send(self, role: str, request: Mapping[str, Any], meter: Meter | None = None) -> dict[str, Any]:
        """One Messages request (replayed, or over HTTP with backoff); accounts its usage."""
        started = time.perf_counter()
        if self.cassette is not None and self.cassette.mode == "replay":
            response = self.cassette.serve(role, request)
        else:
            response = self._http(request)
            if self.cassette is not None:
                self.cassette.write(role, request, response)
        usage = response.get("usage") or {}
        usd = self.config.prices.cost(usage)
        seconds = time.perf_counter() - started
        self.meter.add(role, usage, usd, seconds)
        if meter is not None:
            meter.add(role, usage, usd, seconds)
        return response

    def _http(self, request: Mapping[str, Any]) -> dict[str, Any]:
        import anthropic

        attempt = 0
        while True:
            retry_after: float | None = None
            try:
                with self._semaphore:
                    with self._count_lock:
                        self.http_calls += 1
                    message = self._sdk.messages.create(**request)
                return message.model_dump(mode="json", exclude_none=True)
            except (json.JSONDecodeError, anthropic.APIResponseValidationError) as exc:
                raise MalformedResponseError(f"the service's answer was not a valid message: {exc}") from exc
            except anthropic.APIStatusError as exc:
                status = exc.status_code
                if status in (401, 403, 404):
                    raise FatalLLMError(f"HTTP {status}: {exc.message}") from exc
                if status not in _RETRYABLE_STATUS and status < 500:
                    raise LLMError(f"HTTP {status}: {exc.message}") from exc
                failure: Exception = exc
                retry_after = _retry_after(exc.response.headers if exc.response is not None else {})
            except anthropic.APIConnectionError as exc:
                failure = exc
            except anthropic.CredentialsError as exc:
                raise FatalLLMError(f"no usable API credential: set ANTHROPIC_API_KEY or pass api_key ({exc})") from exc
            except TypeError as exc:  # the SDK's way of saying that no credential is configured at all
                if "authentication" in str(exc):
                    raise FatalLLMError(f"no API credential: set ANTHROPIC_API_KEY or pass api_key ({exc})") from exc
                raise
            if attempt >= self.config.max_retries:
                raise LLMError(f"gave up after {attempt + 1} attempts: {failure}") from failure
            self.sleep(self.backoff(attempt, retry_after))
            attempt += 1

    def backoff(self, attempt: int, retry_after: float | None = None) -> float:
        """Exponential delay with jitter in [50%, 100%], never below the server's retry-after, capped."""
        delay = self.config.base_delay * (2 ** attempt) * (0.5 + random.random() / 2)
        if retry_after is not None:
            delay = max(delay, retry_after)
        return min(delay, self.config.max_delay)

    # ---- fan-out -----------------------------------------------------------------------
    def parallel(self, calls: Sequence[Callable[[], T]]) -> list[T]:
        """Run independent calls on threads (HTTP concurrency is still bounded by the semaphore)."""
        if len(calls) <= 1:
            return [call() for call in calls]
        with ThreadPoolExecutor(max_workers=min(len(calls), max(1, self.config.concurrency))) as pool:
            return [f.result() for f in [pool.submit(call) for call in calls]]


def _retry_after(headers: Mapping[str, str]) -> float | None:
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is not None:
            try:
                return float(value) / scale
            except ValueError:
                return None
    return None

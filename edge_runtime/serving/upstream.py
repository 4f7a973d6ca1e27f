"""Optional fallback on a MISS: ask the source model through the ``anthropic`` SDK.

Off by default. A device with no network (or no SDK) behaves exactly as without it; the
reply is attached to the MISS, never turned into a HIT, so an app always knows which answers
came from the compiled cache. The SDK is imported only when a fallback is configured.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from edge_runtime.errors import ArcError
from edge_runtime.flags import option

SYSTEM = "Answer the user's question. Be brief: give the answer and at most two sentences of reasoning."


class UpstreamConfigError(ArcError):
    """The upstream fallback was asked for but cannot be set up (SDK missing, no key)."""


@dataclass(frozen=True)
class UpstreamConfig:
    """The source model asked on a MISS (off unless ``--upstream-model`` names one)."""

    model: str = option(flag="--upstream-model",
                        help="on a MISS, also ask this source model via the anthropic SDK (off by default; key from "
                             "$ANTHROPIC_API_KEY); the reply is attached to the MISS")
    base_url: str | None = option(None, flag="--upstream-base-url", help="Messages API base URL for --upstream-model")
    api_key_env: str = option("ANTHROPIC_API_KEY", help="environment variable holding the API key")
    timeout_s: float = option(20.0, flag="--upstream-timeout", help="time budget of one upstream call (seconds)")
    max_tokens: int = option(512, help="longest upstream reply (tokens)")


@dataclass(frozen=True)
class UpstreamReply:
    model: str
    text: str = ""
    error: str = ""
    latency_ms: float = 0.0


class AnthropicUpstream:
    """One client for the server's lifetime; every call is bounded by the caller's deadline."""

    def __init__(self, config: UpstreamConfig) -> None:
        try:
            import anthropic
        except ImportError as exc:
            raise UpstreamConfigError("the upstream fallback needs the anthropic SDK: pip install anthropic") from exc
        key = os.environ.get(config.api_key_env)
        if not key:
            raise UpstreamConfigError(f"the upstream fallback needs an API key in ${config.api_key_env}; set it, or "
                                      "drop --upstream-model")
        self.config = config
        self._errors = (anthropic.APIError,)
        self.client = anthropic.Anthropic(
            api_key=key, base_url=config.base_url, timeout=config.timeout_s, max_retries=0
        )

    def ask(self, question: str, timeout_s: float | None = None) -> UpstreamReply:
        """The source model's answer, or an UpstreamReply with ``error`` set; never raises for the network."""
        timeout = self.config.timeout_s if timeout_s is None else min(timeout_s, self.config.timeout_s)
        started = time.perf_counter()
        if timeout <= 0.05:
            return UpstreamReply(self.config.model, error="no time left before the call's deadline")
        try:
            message = self.client.messages.create(
                model=self.config.model,
                max_tokens=self.config.max_tokens,
                system=SYSTEM,
                messages=[{"role": "user", "content": question}],
                timeout=timeout,
            )
        except self._errors as exc:
            return UpstreamReply(self.config.model, error=f"{type(exc).__name__}: {exc}"[:500],
                                 latency_ms=(time.perf_counter() - started) * 1000)
        text = "".join(getattr(block, "text", "") for block in message.content if block.type == "text")
        return UpstreamReply(message.model or self.config.model, text=text.strip(),
                             latency_ms=(time.perf_counter() - started) * 1000)

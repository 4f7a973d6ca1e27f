"""Caps on what one lm()/extract()/smart_convert() call may ask of the device's one shared model.

Why: the model is shared by every request; without caps one entry's long prompt or long generation
held it for tens of seconds and starved everyone else. The device sets the limits
(``arc-edge serve --lm-max-prompt-tokens/--lm-max-new-tokens/--lm-call-seconds``); a bundle may only
ask for less. The parent process enforces them (a worker can ask anything over its pipe).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from edge_runtime.flags import option


@dataclass(frozen=True)
class LMLimits:
    """Per-call caps: prompt tokens, new tokens, and seconds (queueing for the model included)."""

    max_prompt_tokens: int = option(512, flag="--lm-max-prompt-tokens", help="cap on one entry model call's prompt")
    max_new_tokens: int = option(64, flag="--lm-max-new-tokens", help="cap on one entry model call's generation")
    call_seconds: float = option(2.0, flag="--lm-call-seconds", help="time budget of one entry model call")

    def __post_init__(self) -> None:
        if self.max_prompt_tokens < 1 or self.max_new_tokens < 1 or not self.call_seconds > 0:
            raise ValueError(f"lm limits must be positive: {self}")

    def within(self, requested: Any) -> LMLimits:
        """The limits a bundle's manifest asks for (``"lm_limits": {"max_prompt_tokens": ..., ...}``),
        never above these device limits; a field it leaves out keeps the device's value."""
        if requested is None:
            return self
        if not isinstance(requested, dict):
            raise ValueError("manifest lm_limits must be an object")
        unknown = set(requested) - {"max_prompt_tokens", "max_new_tokens", "call_seconds"}
        if unknown:
            raise ValueError(f"manifest lm_limits has unknown fields {sorted(unknown)}")
        for name, value in requested.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"manifest lm_limits.{name} must be a positive number")
        return LMLimits(
            min(self.max_prompt_tokens, int(requested.get("max_prompt_tokens", self.max_prompt_tokens))),
            min(self.max_new_tokens, int(requested.get("max_new_tokens", self.max_new_tokens))),
            min(self.call_seconds, float(requested.get("call_seconds", self.call_seconds))),
        )

"""Deterministic stand-ins for the target model and the router, for tests only (the real engine is onnxruntime)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from edge_runtime.model.target_lm import TargetLM


class ScriptedTargetLM(TargetLM):
    """Answers from a script: the first key found in the prompt picks the reply; records every prompt.

    ``choose`` returns the first option whose text appears in the prompt's ``Text:`` line, else the
    scripted reply for a matching key, else the first option.
    """

    def __init__(self, replies: Mapping[str, str] | None = None, default: str = "") -> None:
        self.replies = dict(replies or {})
        self.default = default
        self.prompts: list[str] = []

    def _scripted(self, prompt: str) -> str | None:
        for key, reply in self.replies.items():
            if key in prompt:
                return reply
        return None

    def generate(
        self, prompt: str, *, max_new_tokens: int = 64, stop: Sequence[str] = (), charset: str | None = None
    ) -> str:
        self.prompts.append(prompt)
        reply = self._scripted(prompt)
        return self.default if reply is None else reply

    def choose(self, prompt: str, options: Sequence[str]) -> str:
        self.prompts.append(prompt)
        scripted = self._scripted(prompt)
        if scripted in options:
            return scripted
        text = prompt.split("Text:", 1)[-1].lower()
        for option in options:
            if option.lower() in text:
                return option
        return options[0]


@dataclass
class Route:
    entry_id: str
    similarity: float


class FixedRouter:
    """Routes every question to the same (entry id, similarity) candidates, best first."""

    def __init__(self, *candidates: tuple[str, float]) -> None:
        self.candidates = [Route(entry_id, similarity) for entry_id, similarity in candidates]

    def route(self, query: str, k: int = 3) -> list[Route]:
        return self.candidates[:k]

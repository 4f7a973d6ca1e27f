"""The interface through which lm/extract/smart_convert reach the small target model T.

The onnxruntime engine implements it; tests may plug a deterministic stand-in.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Sequence


class TargetLM(ABC):
    """A small language model that answers atomic tasks for semantic functions."""

    @abstractmethod
    def generate(
        self, prompt: str, *, max_new_tokens: int = 64, stop: Sequence[str] = (), charset: str | None = None
    ) -> str:
        """Greedy completion of ``prompt``, cut at the first ``stop`` string.

        With ``charset``, every generated token consists only of those characters (how a
        numeric literal is forced out of a small model that would rather chat).
        """

    @abstractmethod
    def choose(self, prompt: str, options: Sequence[str]) -> str:
        """The option the model finds most likely after ``prompt`` (decoding constrained to options)."""

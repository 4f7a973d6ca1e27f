"""The interface through which lm/extract/smart_convert reach the small target model T.

The onnxruntime engine implements it; tests may plug a deterministic stand-in.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext


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

    def count_tokens(self, text: str) -> int:
        """Prompt length in the model's tokens (what the prompt cap counts). Stand-ins without a tokenizer
        count characters, an upper bound for any subword tokenizer."""
        return len(text)

    def budget(self, deadline: float | None, *, background: bool = False) -> AbstractContextManager[None]:
        """Within this block, this thread's model passes stop at ``deadline`` (time.monotonic()) with
        LMDeadlineError, and with ``background`` they yield to foreground passes (the server's extraction).
        Stand-ins that cannot be interrupted ignore it."""
        return nullcontext()

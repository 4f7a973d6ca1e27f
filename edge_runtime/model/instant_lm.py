"""A target-model stand-in that answers instantly from simple rules.

It exists for two honest uses only: benchmarks that must measure dispatch rather than
model latency, and demos on a machine where the ONNX target model is not built yet.
Every answer it gives is something a real model would be asked to produce.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from edge_runtime.model.target_lm import TargetLM
from edge_runtime.read.english_words import FRACTIONS, ONES

_UNITS = {**{w: v for w, v in ONES.items() if v <= 12}, "a": 1, "an": 1}
_FRACTIONS = {w: 1 / FRACTIONS[w] for w in ("half", "quarter", "third")}


class InstantTargetLM(TargetLM):
    """Rule-based answers: options found in the text, number words rewritten as literals."""

    def generate(
        self, prompt: str, *, max_new_tokens: int = 64, stop: Sequence[str] = (), charset: str | None = None
    ) -> str:
        value = _field(prompt, "Value:") or _field(prompt, "Text:") or ""
        number = words_to_number(value)
        if number is not None:
            return repr(number)
        found = re.search(r"-?\d+(?:\.\d+)?", value)
        return found.group(0) if found else value.strip()

    def choose(self, prompt: str, options: Sequence[str]) -> str:
        text = (_field(prompt, "Text:") or prompt).lower()
        for option in options:
            if option.lower() in text:
                return option
        return options[0]


def _field(prompt: str, label: str) -> str | None:
    for line in prompt.splitlines():
        if line.startswith(label):
            return line[len(label):].strip()
    return None


def words_to_number(text: str) -> float | None:
    """'two and a half' -> 2.5, 'a quarter' -> 0.25, 'three' -> 3; None when not number words."""
    words = [w for w in re.split(r"[\s-]+", text.lower().strip()) if w and w != "and"]
    if not words:
        return None
    total = 0.0
    pending: float | None = None
    for word in words:
        if word in _UNITS:
            pending = float(_UNITS[word])
        elif word.rstrip("s") in _FRACTIONS:
            total += (pending if pending is not None else 1.0) * _FRACTIONS[word.rstrip("s")]
            pending = None
        else:
            return None
    if pending is not None:
        total += pending
    return int(total) if float(total).is_integer() else total

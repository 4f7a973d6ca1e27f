"""The TargetLM that lm(), extract() and smart_convert() use on a device: the ONNX engine."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from edge_runtime.lm_engine import LMEngine
from edge_runtime.target_lm import TargetLM

SYSTEM = "You are a precise assistant. Answer with the answer only, no explanation."


class OnnxTargetLM(TargetLM):
    """Greedy generation and option choice on the int8 ONNX target model, prompts in ChatML."""

    def __init__(self, engine: LMEngine, system: str = SYSTEM) -> None:
        self.engine = engine
        self.system = system

    def _prompt_ids(self, prompt: str) -> list[int]:
        prefix = f"<|im_start|>system\n{self.system}<|im_end|>\n<|im_start|>user\n"
        state_ids = self.engine.encode(prefix)
        return state_ids + self.engine.encode(f"{prompt}<|im_end|>\n<|im_start|>assistant\n")

    def generate(
        self, prompt: str, *, max_new_tokens: int = 64, stop: Sequence[str] = (), charset: str | None = None
    ) -> str:
        stop_ids = self.engine.encode("<|im_end|>")[:1]
        allowed = self.engine.tokens_within(charset) if charset else None
        out = self.engine.greedy(
            self._prompt_ids(prompt), max_new_tokens=max_new_tokens, stop_ids=stop_ids, allowed=allowed
        )
        text = self.engine.decode(out)
        for marker in stop:
            if marker and marker in text:
                text = text[: text.index(marker)]
        return text.strip()

    def choose(self, prompt: str, options: Sequence[str]) -> str:
        """Greedy decoding restricted to the options' token sequences (a trie walk)."""
        if not options:
            raise ValueError("choose() needs at least one option")
        sequences = [self.engine.encode(str(option)) for option in options]
        result = self.engine.forward(self._prompt_ids(prompt))
        emitted: list[int] = []
        while True:
            complete = [i for i, seq in enumerate(sequences) if seq == emitted]
            nexts = sorted({seq[len(emitted)] for seq in sequences if seq[: len(emitted)] == emitted and len(seq) > len(emitted)})
            if complete and not nexts:
                return str(options[complete[0]])
            if len(nexts) == 1 and not complete:
                token = nexts[0]
            else:
                end = self.engine.encode("<|im_end|>")[0]
                candidates = nexts + ([end] if complete else [])
                scores = self.engine.scores(result.hidden[-1], candidates)
                token = candidates[int(np.argmax(scores))]
                if complete and token == end:
                    return str(options[complete[0]])
            emitted.append(token)
            result = self.engine.forward([token], result.state)

"""Which extraction prompt a target model was made for: named by its artefact's manifest.

The stock model needs the long prompt (instructions, every parameter described, one worked example:
~300 tokens, ``extractor.prompt_parts``). A reader tuned on the cache's own questions
(``arc-build finetune``) was trained on the short one below and has no use for the rest: the
answer's keys are forced by the constraint, so the prompt only has to name the parameters in order.
The artefact says which one it was trained with (``manifest["prompt"]``); a manifest without the
field is the stock model, and a name the device does not know is refused rather than guessed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from edge_runtime.entries.metadata import EntryPoint
from edge_runtime.errors import TargetModelError

PromptParts = Callable[[EntryPoint, str], "tuple[str, str]"]

SHORT_SYSTEM = "Copy the parameter values out of the question as JSON."


def short_prompt_parts(entry: EntryPoint, question: str) -> tuple[str, str]:
    """(prefix, suffix) of the short prompt; the prefix depends on the entry only (its KV state is reused)."""
    names = ", ".join(p.name for p in entry.params)
    prefix = f"<|im_start|>system\n{SHORT_SYSTEM}<|im_end|>\n<|im_start|>user\nParameters: {names}\nQuestion:"
    suffix = f" {question.strip()}<|im_end|>\n<|im_start|>assistant\n"
    return prefix, suffix


def _full(entry: EntryPoint, question: str) -> tuple[str, str]:
    from edge_runtime.read.extractor import prompt_parts  # the extractor imports this module

    return prompt_parts(entry, question)


PROMPTS: dict[str, PromptParts] = {"full": _full, "short": short_prompt_parts}


def prompt_for(manifest: Mapping[str, Any] | None) -> PromptParts:
    """The prompt an artefact's model reads (``"full"`` when its manifest names none)."""
    name = (manifest or {}).get("prompt", "full")
    if name not in PROMPTS:
        raise TargetModelError(f"the target model's manifest asks for prompt {name!r}; this device knows {sorted(PROMPTS)}")
    return PROMPTS[name]

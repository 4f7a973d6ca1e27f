"""The prompt a target model reads is the one its artefact's manifest names."""

from __future__ import annotations

import pytest

from edge_runtime.entries.metadata import EntryPoint, Param
from edge_runtime.errors import TargetModelError
from edge_runtime.read.extractor import prompt_parts
from edge_runtime.read.prompt_variants import prompt_for, short_prompt_parts

GAS = EntryPoint("gas", "pressure", "What is the pressure of {moles} mol at {temperature} K?",
                 (Param("moles", "the amount", float, 2.0), Param("temperature", "the temperature", float, 300.0)),
                 "root")


def test_manifest_names_the_prompt() -> None:
    assert prompt_for({"recipe": "int8-smooth"})(GAS, "q") == prompt_parts(GAS, "q")  # the stock model
    assert prompt_for(None)(GAS, "q") == prompt_parts(GAS, "q")
    assert prompt_for({"prompt": "short"}) is short_prompt_parts
    with pytest.raises(TargetModelError, match="prompt 'tiny'"):
        prompt_for({"prompt": "tiny"})


def test_short_prompt_is_short_and_keeps_the_question_suffix() -> None:
    prefix, suffix = short_prompt_parts(GAS, "  What about 3 mol?  ")
    full_prefix, full_suffix = prompt_parts(GAS, "  What about 3 mol?  ")
    assert suffix == full_suffix == " What about 3 mol?<|im_end|>\n<|im_start|>assistant\n"
    assert "moles, temperature" in prefix and len(prefix) < len(full_prefix) / 2
    assert short_prompt_parts(GAS, "other")[0] == prefix  # the prefix depends on the entry only

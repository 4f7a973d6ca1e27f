"""Fixtures of the tuned reader's data tests: the tiny test model's tokenizer and the example entries."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tokens(tmp_path_factory):
    """The tokenizer of the tiny Llama every tuning test builds once per session (tests/tiny_llama.py)."""
    from builder.finetune_data import TokenizerTokens

    sys.path.insert(0, str(REPO / "tests"))
    from tiny_llama import session_base, tiny_llama_dir

    return TokenizerTokens.from_file(tiny_llama_dir(session_base(tmp_path_factory)) / "tokenizer.json")


@pytest.fixture(scope="module")
def entries() -> dict:
    from builder.finetune import load_entries

    return load_entries([REPO / "bundles" / "examples"])

"""Shared fixtures: one real embedder and one registry of the example entries per session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "bundles" / "examples"


@pytest.fixture(scope="session")
def embedder():
    from edge_runtime.route.embedder import OnnxSentenceEmbedder

    return OnnxSentenceEmbedder()


@pytest.fixture(scope="session")
def example_registry(embedder):
    from edge_runtime.entries.registry import Registry

    registry = Registry(embedder)
    registry.add_directory(EXAMPLES)
    return registry


@pytest.fixture(scope="session")
def tiny_base(tmp_path_factory):
    """One directory for the tiny random Llama and its artefacts, built once per session (tests/tiny_llama.py)."""
    from tiny_llama import session_base

    return session_base(tmp_path_factory)


@pytest.fixture(scope="session")
def tiny_dir(tiny_base):
    from tiny_llama import tiny_llama_dir

    return tiny_llama_dir(tiny_base)


@pytest.fixture(scope="session")
def tiny_fp32(tiny_base):
    from tiny_llama import tiny_artefact

    return tiny_artefact(tiny_base, "fp32")


@pytest.fixture(scope="session")
def tiny_int8(tiny_base):
    from tiny_llama import tiny_artefact

    return tiny_artefact(tiny_base, "int8-smooth")


@pytest.fixture(scope="session")
def tiny_optimum_fp32(tiny_base):
    from tiny_llama import tiny_artefact

    return tiny_artefact(tiny_base, "optimum-fp32")


@pytest.fixture(scope="session")
def tiny_optimum_int8(tiny_base):
    from tiny_llama import tiny_artefact

    return tiny_artefact(tiny_base, "optimum-int8")

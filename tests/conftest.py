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
    from edge_runtime.embedder import OnnxSentenceEmbedder

    return OnnxSentenceEmbedder()


@pytest.fixture(scope="session")
def example_registry(embedder):
    from edge_runtime.registry import Registry

    registry = Registry(embedder)
    registry.add_directory(EXAMPLES)
    return registry

"""Builders for server tests: signing keys, a cheap static embedder, and signed example bundles.

The static embedder here has a random table (routing quality is not what server tests check);
benchmarks/routing.py measures the real distilled table.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from builder.bundle_build import build_bundle
from builder.keys import generate_keypair, load_public_key
from edge_runtime.route.embedder import default_model_paths
from edge_runtime.route.static_embedder import StaticEmbedder

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "bundles" / "examples"


def random_static_embedder(directory: Path, dim: int = 32, seed: int = 0) -> Path:
    tokenizer = default_model_paths()[1]
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((30522, dim)).astype(np.float32)
    return StaticEmbedder(tokenizer, table, meta={"method": "random (tests)"}).save(directory)


def make_keys(directory: Path) -> tuple[Path, bytes]:
    private, public = generate_keypair(directory)
    return private, load_public_key(public)


def example_bundle(out_dir: Path, key: Path, embedder_dir: Path, version: str, sources: Path = EXAMPLES) -> Path:
    return build_bundle(
        sources, out_dir, name="examples", version=version, private_key=key, target_model_dir=None,
        embedder_dir=embedder_dir, progress=lambda _: None,
    ).path

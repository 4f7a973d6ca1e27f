"""The build steps the CLI and the demo share: key, target model, static embedder, bundle."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console

from builder.bundle_build import build_bundle
from builder.distill import distill_static_embedder
from builder.keys import ensure_default_key

console = Console(stderr=True)
EMBEDDER_DIR = Path("build/static_embedder")


def default_key() -> Path:
    """The default signing key, created on first use (its location is printed)."""
    path, created = ensure_default_key()
    if created:
        console.log(f"created signing key {path} (public key beside it)")
    return path


def target_model_dir(source: str | Path | None) -> Path | None:
    if source is None:
        return None
    if source != "default":
        return Path(source)
    from builder.target_model import build_target_model

    return build_target_model(progress=console.log)


def make_bundle(
    sources: Path, out_dir: Path, *, name: str, version: str, key: Path | None, target_model: str | Path | None,
    include_unverified: bool = True,
    reading: Mapping[str, Any] | None = None,
) -> Path:
    model_dir = target_model_dir(target_model)
    embedder_dir = distill_static_embedder(EMBEDDER_DIR)
    result = build_bundle(
        sources, out_dir, name=name, version=version, private_key=key or default_key(),
        target_model_dir=model_dir, embedder_dir=embedder_dir, progress=console.log,
        include_unverified=include_unverified, reading=reading,
    )
    return result.path

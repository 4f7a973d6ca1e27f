"""``arc-build bundle``: entry sources → compiled modules + routing index + calibration → signed bundle."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder.bundle import pack_bundle
from builder.confined_build import compile_confined, read_sources
from builder.negatives import GENERAL_NEGATIVES
from builder.verification import Verification
from edge_runtime.answer.verification import VerificationStatus
from edge_runtime.bundles.bundle import INCLUDE_UNVERIFIED, VERIFIED_ONLY
from edge_runtime.entries.metadata import EntryPoint, Param
from edge_runtime.errors import BundleError
from edge_runtime.route.bundle_routing import SHARED_ROUTING_FILES, routing_files
from edge_runtime.route.router import Router, calibrate
from edge_runtime.route.static_embedder import StaticEmbedder

#: The routing threshold never goes below this, whatever calibration on few negatives says.
MIN_THRESHOLD = 0.45


@dataclass
class BundleBuild:
    path: Path
    entries: int
    threshold: float
    calibration: dict
    verified: int = 0  # entries packed that an independent solution verified
    unverified_left_out: int = 0  # entries the policy did not pack


def sample_values(entry: EntryPoint, rng: random.Random) -> dict:
    """Valid parameter values for a re-parameterised variant (examples, originals, domain samples)."""
    values = {}
    for param in entry.params:
        pool = [param.original, *param.examples]
        values[param.name] = rng.choice(pool) if param.type is str or param.choices else _numeric(param, rng, pool)
    return entry.validate(values)


def _numeric(param: Param, rng: random.Random, pool: list) -> object:
    if rng.random() < 0.5 or param.reading is not None:  # "half", "a third": only the values it lists
        return rng.choice(pool)
    low = param.minimum if param.minimum is not None else 1
    high = param.maximum if param.maximum is not None else max(100, abs(low) * 10)
    high = min(high, max(abs(low) * 10, 100, *[abs(float(v)) * 3 for v in pool]))
    if param.type is int:
        return rng.randint(int(low) + (1 if param.exclusive_minimum else 0), int(high))
    value = round(rng.uniform(float(low), float(high)), 1)
    return value if value > low else float(pool[0])


def routing_texts(entry: EntryPoint, rng: random.Random, variants: int = 3) -> list[str]:
    """What represents an entry in the index: its description, its question, and re-parameterised variants."""
    texts = [entry.description, entry.question or entry.render(entry.original_values)]
    for _ in range(variants):
        texts.append(entry.render(sample_values(entry, rng)))
    return texts


def build_bundle(
    sources: Path,
    out_dir: Path,
    *,
    name: str,
    version: str,
    private_key: Path | None,
    target_model_dir: Path | None,
    embedder_dir: Path,
    extra_negatives: list[str] | None = None,
    max_false_hit_rate: float = 0.01,
    progress: Callable[[str], None] = print,
    seed: int = 0,
    include_unverified: bool = True,
    reading: Mapping[str, Any] | None = None,
) -> BundleBuild:
    """``include_unverified=False`` packs only entries whose verification record (``_meta/<id>.json``
    beside the sources, written by the importer) says an independent solution agreed with them.
    ``reading``: the manifest's ``{pack, settings}`` (None: no field, the device's default pack)."""
    rng = random.Random(seed)
    progress(f"registering and compiling the entry sources of {sources} in a confined process")
    confined = compile_confined(read_sources(sources))
    if confined.near_duplicates:
        a, b, score = confined.near_duplicates[0]
        progress(f"{len(confined.near_duplicates)} near-duplicate function pair(s) kept for review, e.g. {a} ~ {b} ({score:.3f})")
    compiled = confined.compiled
    progress(f"compiled {len(compiled)} entries behind {', '.join(k for k, v in confined.walls.items() if v is True)}")
    verification = {c.entry.id: Verification.read_sidecar(sources, c.entry.id) for c in compiled}
    verified = [c for c in compiled if verification[c.entry.id].status is VerificationStatus.VERIFIED]
    left_out = 0 if include_unverified else len(compiled) - len(verified)
    progress(f"{len(verified)} of {len(compiled)} entries verified by an independent solution; "
             + (f"{len(compiled) - len(verified)} unverified packed (marked in the manifest)" if include_unverified
                else f"{left_out} unverified left out"))
    if not include_unverified:
        compiled = verified
        if not compiled:
            raise BundleError("no entry is verified: nothing to pack (--include-unverified packs them anyway)")
    embedder = StaticEmbedder.load(embedder_dir, mmap=False)
    entries = [c.entry for c in compiled]
    router = Router([(e.id, routing_texts(e, rng)) for e in entries], embedder)
    positives = [(e.render(sample_values(e, rng)), e.id) for e in entries for _ in range(10)]
    negatives = list(GENERAL_NEGATIVES) + list(extra_negatives or [])
    calibration = calibrate(router, positives, negatives, max_false_hit_rate).to_dict()
    threshold = max(MIN_THRESHOLD, calibration["threshold"])
    progress(f"routing threshold {threshold:.3f} (calibrated {calibration['threshold']:.3f} on {len(negatives)} negatives)")
    routing = {
        "embedder": "static (distilled from all-MiniLM-L6-v2)",
        "threshold": threshold,
        "min_threshold": MIN_THRESHOLD,
        "calibration": calibration,
    }
    inline = routing_files(embedder, router)
    shared = {p: inline.pop(p) for p in SHARED_ROUTING_FILES}  # same for every bundle of this embedder
    path = pack_bundle(
        out_dir, name=name, version=version, compiled=compiled, private_key_path=private_key,
        extra_files=inline, routing=routing, target_model_dir=target_model_dir,
        verification={entry_id: v.to_dict() for entry_id, v in verification.items()}, blob_files=shared,
        reading=reading, verification_policy=INCLUDE_UNVERIFIED if include_unverified else VERIFIED_ONLY,
    )
    progress(f"wrote {path} ({path.stat().st_size} bytes; routing table and tokenizer in {path.parent / 'blobs'}, "
             f"{sum(len(v) for v in shared.values())} bytes, sent to a device once)")
    return BundleBuild(path, len(compiled), threshold, calibration, len(verified), left_out)

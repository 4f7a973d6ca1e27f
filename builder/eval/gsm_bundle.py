"""The GSM8K evaluation bundle: a subset of the imported GSM8K entries, the rest held out.

``arc-build import-pot`` turns the PAL GSM-Hard programs into one entry per GSM8K test row
(``gsm8k-NNNN``). The evaluation bundle holds

- every accepted entry a dev set refers to (``gsm_symbolic_dev``: templates 0-29,
  ``gsm_plus_dev``: 100 seeds), so those sets measure serving, not coverage;
- ``others`` further accepted entries (default: all that are not held out);

and holds out ``unrelated`` accepted entries (default 400, chosen with a fixed seed among the
entries no dev set refers to). Their GSM8K questions become the *unrelated* query set: questions
of the same style and domain that no entry of the bundle answers.

    .venv/bin/python -m builder.eval.gsm_bundle [--registry build/eval/registry] [--out build/eval]

imports the entries if the registry is empty, chooses the split, builds the signed bundle with
the default target model, and writes the derived query sets (builder.eval.sets).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import tempfile
from pathlib import Path

from builder.eval.gsm_data import DEV_SETS, GSM8K_TEST, INDEPENDENT, PAL_GSMHARD
from builder.eval.querysets import gsm8k_entry_id
from builder.eval.sets import write_sets
from builder.eval.split import Split

EVAL_DIR = Path("build/eval")


def accepted_entries(registry: Path) -> set[str]:
    """Entry ids the importer accepted (``entries/*.py``)."""
    return {p.stem for p in (Path(registry) / "entries").glob("*.py") if not p.name.startswith("_")}


def dev_entry_ids(dev_sets: tuple[Path, ...] = DEV_SETS) -> set[str]:
    ids: set[str] = set()
    for path in dev_sets:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    ids.add(gsm8k_entry_id(json.loads(line)["gsm8k_row"]))
    return ids


def choose_split(
    accepted: set[str], dev_ids: set[str], *, unrelated: int = 400, others: int | None = None, seed: int = 0
) -> Split:
    """Dev entries always in the bundle; ``unrelated`` held out among the rest; then ``others`` (None: all left)."""
    rest = sorted(accepted - dev_ids)
    if unrelated > len(rest):
        raise ValueError(f"only {len(rest)} accepted entries outside the dev sets; cannot hold out {unrelated}")
    random.Random(seed).shuffle(rest)
    held_out = sorted(rest[:unrelated])
    remaining = rest[unrelated:]
    chosen = remaining if others is None else remaining[:others]
    bundle = sorted((dev_ids & accepted) | set(chosen))
    return Split(tuple(bundle), tuple(held_out), tuple(sorted(dev_ids)), seed)


def reuse_split(saved: Split, accepted: set[str]) -> Split:
    """A saved split for a registry imported anew: the same held-out entries and the same bundle where still accepted,
    and every dev entry accepted now that is not held out (dev entries are always in the bundle: one the importer
    accepts only now is measured on its own rows, not counted a miss of the bundle's). Other entries accepted only now
    stay out of both, so two imports compare on the same held-out questions."""
    dev = set(saved.dev_ids) & accepted - set(saved.unrelated_ids)
    bundle = sorted({e for e in saved.bundle_ids if e in accepted} | dev)
    return Split(tuple(bundle), tuple(e for e in saved.unrelated_ids if e in accepted), saved.dev_ids, saved.seed)


def ensure_registry(registry: Path, *, workers: int | None = None) -> Path:
    """Import the GSM8K entries into ``registry`` unless it already has them (the import is resumable)."""
    if not accepted_entries(registry):
        from builder.pot_import.batch import run_import

        run_import(PAL_GSMHARD, GSM8K_TEST, registry, workers=workers, progress=True, independent=INDEPENDENT)
    return registry


def eval_key(directory: Path = EVAL_DIR / "keys") -> Path:
    """A signing key of the evaluation's own (not the user's default key), created on first use."""
    from builder.keys import PRIVATE_NAME, generate_keypair

    private = Path(directory) / PRIVATE_NAME
    if not private.exists():
        generate_keypair(Path(directory))
    return private


def bundle_version(split: Split, with_model: bool, include_unverified: bool, reading: str | None = None) -> str:
    """Semantic versioning (a device refuses anything else) whose pre-release part names the content (and the
    reading pack, when one is named: "plain/1" -> "-plain-1")."""
    pack = "-" + re.sub(r"[^0-9A-Za-z]+", "-", reading) if reading else ""
    return f"1.0.0-{split.digest}" + ("" if with_model else "-nomodel") + ("-all" if include_unverified else "") + pack


def build_eval_bundle(
    registry: Path,
    split: Split,
    out_dir: Path,
    *,
    key: Path,
    target_model: str | Path | None = "default",
    name: str = "gsm8k-eval",
    reuse: bool = True,
    include_unverified: bool = False,
    reading: str | None = None,
) -> Path:
    """``reading``: the reading pack named in the manifest (None: none, the device's default).
    Copy the chosen entry sources (and their verification records) into a temporary sources dir and
    pack them with make_bundle; by default only the entries an independent solution verified."""
    from builder.pipeline import make_bundle

    version = bundle_version(split, target_model is not None, include_unverified, reading)
    path = Path(out_dir) / f"{name}-{version}.arcb"
    if reuse and path.exists():
        return path
    with tempfile.TemporaryDirectory(prefix="arc-eval-sources-") as tmp:
        sources = Path(tmp)
        (sources / "_meta").mkdir()
        for entry_id in split.bundle_ids:
            shutil.copy2(Path(registry) / "entries" / f"{entry_id}.py", sources / f"{entry_id}.py")
            meta = Path(registry) / "entries" / "_meta" / f"{entry_id}.json"
            if meta.exists():
                shutil.copy2(meta, sources / "_meta" / meta.name)
        return make_bundle(sources, Path(out_dir), name=name, version=version, key=key, target_model=target_model,
                           include_unverified=include_unverified,
                           reading={"pack": reading, "settings": {}} if reading else None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the GSM8K evaluation bundle and its query sets.")
    parser.add_argument("--registry", type=Path, default=EVAL_DIR / "registry")
    parser.add_argument("--out", type=Path, default=EVAL_DIR)
    parser.add_argument("--unrelated", type=int, default=400, help="accepted entries held out as unrelated questions")
    parser.add_argument("--others", type=int, default=None, help="entries beyond the dev sets' (default: all not held out)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-target-model", action="store_true")
    parser.add_argument("--target-model", type=Path, default=None, metavar="DIR",
                        help="an exported target-model directory to reference (default: export or reuse the default one)")
    parser.add_argument("--include-unverified", action="store_true",
                        help="also pack the entries no independent program verified (default: verified entries only)")
    parser.add_argument("--reading", default=None, metavar="PACK",
                        help="name this reading pack in the bundle's manifest (docs/reading-packs.md; default: none)")
    parser.add_argument("--split", type=Path, default=None,
                        help="reuse a saved split.json (so a changed importer is compared on the same held-out entries)")
    args = parser.parse_args(argv)
    ensure_registry(args.registry)
    accepted = accepted_entries(args.registry)
    if args.split is not None:
        split = reuse_split(Split.load(args.split), accepted)
    else:
        split = choose_split(accepted, dev_entry_ids(), unrelated=args.unrelated, others=args.others, seed=args.seed)
    split.save(args.out / "split.json")
    bundle = build_eval_bundle(args.registry, split, args.out / "bundles", key=eval_key(args.out / "keys"),
                               target_model=None if args.no_target_model else (args.target_model or "default"),
                               include_unverified=args.include_unverified, reading=args.reading)
    sets = write_sets(args.out / "sets", split, args.registry)
    print(json.dumps({"bundle": str(bundle), "entries": len(split.bundle_ids), "unrelated": len(split.unrelated_ids),
                      "sets": {k: str(v) for k, v in sets.items()}}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

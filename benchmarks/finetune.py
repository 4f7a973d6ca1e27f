"""The tuned reader against the stock one, side by side in one run (issue 22's figures).

For each model (the stock SmolLM2-135M-Instruct artefact and the tuned one ``arc-build finetune``
writes), in its own process, with ``benchmarks/extraction.py``'s question sets and measurement:

- ``accuracy``: served-right fraction per set. ``examples_reparam`` (the entry's template, new values),
  ``examples_paraphrased`` (other wordings, constrained decoding from a disagreement),
  ``examples_paraphrased_agree_or_miss`` (the same under the device's policy: served only when the model
  reproduces the aligner's draft), ``unseen_entries`` (under the device's policy: the example paraphrases
  of the entries the tuned model was not trained on, and reworded questions of the importer's held-out
  entries); with ``--gsm-bundle``, ``gsm_plus_paraphrase`` / ``gsm_plus_distraction`` (all 100 rows of each
  kind of GSM-Plus dev, served right, in-process IS1-IS4 with the guard, the bundle's model replaced by the
  one measured) and ``miss_p50_ms`` (20 rows of each changed kind and 40 unrelated questions);
- ``served_wrong`` (over the example sets, device policy), ``lm_path_p50_ms``, ``rss_mb``.

The tuned artefact is one under build/target-models whose manifest's data digest and steps match the
training set this run builds; otherwise it is trained first (``train_seconds`` counts it).

    .venv/bin/python benchmarks/finetune.py [--registry bundles/examples --registry build/ver6/registry]
        [--steps 30] [--tuned DIR] [--pruned DIR] [--base DIR] [--eval-build build] [--gsm-bundle B.arcb] [--json]

``--pruned DIR``: a third artefact (a layer-pruned tuned reader, ``arc-build finetune --keep-layers N``) measured
in the same run under the key ``pruned``, with its own tuning record under ``pruned_model``; ``--no-base`` leaves
the stock model out (the pruned reader beside the full tuned one, in one run).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import extraction  # noqa: E402

UNSEEN_IMPORTED = 80  # reworded questions of held-out imported entries measured per model


def _measure(artefact: Path, sets: dict, extra: dict, threads: int) -> dict[str, Any]:
    return extraction.measure_recipe(artefact, sets, threads, naive=0, extra_sets=extra)


GSM_KINDS = {"gsm_plus_paraphrase": "problem understanding", "gsm_plus_distraction": "distraction insertion"}
CHANGED_PER_KIND = 20  # rows of each GSM-Plus kind whose reasoning changed, for the time a miss takes
UNRELATED = 40


def _gsm(bundle: Path, sets_dir: Path, artefact: Path, threads: int, held: set[str]) -> dict[str, Any]:
    """GSM-Plus paraphrase and distraction rows (all of the set's, entry in the bundle or not), served-right share;
    the changed kinds and unrelated questions answered too, for ``miss_p50_ms`` and the changed ones served."""
    import statistics

    from builder.eval.querysets import load_query_set

    plus = load_query_set(sets_dir / "gsm_plus_dev.jsonl").rows
    rows = [r for r in plus if r.kind in GSM_KINDS.values()]
    changed_kinds = sorted({r.kind for r in plus if r.changed})
    rows += [r for k in changed_kinds for r in [x for x in plus if x.kind == k][:CHANGED_PER_KIND]]
    rows += list(load_query_set(sets_dir / "gsm8k_unrelated.jsonl").rows[:UNRELATED])
    result = extraction.bundle_accuracy(bundle, sets_dir / "gsm_plus_dev.jsonl", threads, model=artefact, rows_given=rows)
    out: dict[str, Any] = {}
    for key, kind in GSM_KINDS.items():
        mine = [(r, hit, ok) for r, hit, ok, _ in result["records"] if r.kind == kind]
        out[key] = round(sum(ok for _, _, ok in mine) / len(mine), 4)
        out[key + "_wrong"] = sum(hit and not ok for _, hit, ok in mine)
        unseen = [ok for r, _, ok in mine if r.entry_id in held]
        out[key + "_held_out_entries"] = [sum(unseen), len(unseen)]
    misses = [ms for r, hit, _, ms in result["records"] if (r.changed or r.unrelated) and not hit]
    out["miss_p50_ms"] = round(statistics.median(misses), 2) if misses else None
    out["changed_or_unrelated_served"] = sum(hit for r, hit, _, _ in result["records"] if r.changed or r.unrelated)
    out["outcomes"] = result["outcomes"]  # by path: which rows the model served
    out["changed_or_unrelated_rows"] = sum(1 for r, _, _, _ in result["records"] if r.changed or r.unrelated)
    return out


def _tuning(artefact: Path) -> tuple[dict[str, Any], float]:
    """An artefact's tuning record (manifest) and the seconds its run took (tuning.json; 0 when absent)."""
    tuning = json.loads((artefact / "manifest.json").read_text()).get("tuning") or {}
    record = artefact / "tuning.json"
    seconds = json.loads(record.read_text()).get("total_seconds", 0.0) if record.exists() else 0.0
    return tuning, seconds


def _model_record(artefact: Path, tuning: dict[str, Any]) -> dict[str, Any]:
    from builder.finetune import PROMPT

    return {"base": tuning.get("base_model"), "tuned": artefact.name, "prompt": PROMPT,
            "data_digest": tuning.get("data_digest"), "steps": tuning.get("steps"),
            "keep_layers": tuning.get("keep_layers"), "lora": tuning.get("lora"), "metrics": tuning.get("metrics")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--registry", type=Path, action="append", default=None)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--tuned", type=Path, default=None, help="a tuned artefact (default: found by data digest, else trained)")
    parser.add_argument("--pruned", type=Path, default=None, help="a layer-pruned tuned artefact, measured as a third model")
    parser.add_argument("--base", type=Path, default=None, help="the stock artefact (default: built or reused from SmolLM2)")
    parser.add_argument("--no-base", action="store_true", help="leave the stock model out (tuned and --pruned side by side)")
    parser.add_argument("--models", type=Path, default=REPO / "build" / "target-models",
                        help="where tuned artefacts are looked for and written")
    parser.add_argument("--work", type=Path, default=REPO / "build" / "finetune",
                        help="finetune's work dir (tokenizer, checkpoints)")
    parser.add_argument("--eval-build", type=Path, default=REPO / "build")
    parser.add_argument("--per-entry", type=int, default=12)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--gsm-bundle", type=Path, default=None, help="a GSM8K evaluation bundle (e.g. build/ver6/bundles/"
                        "gsm8k-eval-...arcb): adds gsm_plus_* and miss_p50_ms, its sets read from --gsm-sets")
    parser.add_argument("--gsm-sets", type=Path, default=None, help="default: the bundle's run dir /sets")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    registries = args.registry or [REPO / "bundles" / "examples"]

    from builder.finetune import find_tuned, finetune, training_data
    from builder.target_model import build_target_model
    from edge_runtime.read.extractor import validate_spans

    log = lambda m: print(m, file=sys.stderr)  # noqa: E731
    base = None if args.no_base else args.base or build_target_model(progress=log)
    prepared = training_data(registries, work=args.work, build_dir=args.eval_build, progress=log)
    entries, data = prepared.entries, prepared.data
    train_seconds = 0.0
    tuned = args.tuned or find_tuned(args.models, data.digest, args.steps, prepared.source_sha256)
    if tuned is None:
        started = time.time()
        tuned = finetune(registries, steps=args.steps, learning_rate=args.learning_rate, build_dir=args.eval_build,
                         out=args.models, work=args.work, progress=log)
        train_seconds = time.time() - started
    tuning, recorded_seconds = _tuning(Path(tuned))
    train_seconds = train_seconds or recorded_seconds

    examples = {k: v for k, v in entries.items() if k in extraction.PARAPHRASES}
    sets = extraction.questions(examples, args.per_entry, 7)
    held = set(tuning.get("held_out_entries", data.held_out_entries))
    unseen = [item for item in sets["examples_paraphrased"] if item[0].id in held]
    rng = random.Random(0)
    imported = [e for e in data.held_out if e.entry_id not in examples and e.kind.startswith("reworded")]
    for example in rng.sample(imported, min(UNSEEN_IMPORTED, len(imported))):
        entry = entries[example.entry_id]
        unseen.append((entry, example.question, validate_spans(entry, dict(example.spans))))
    extra = {"examples_reparam": sets["examples_reparam"], "unseen_entries": unseen}

    results: dict[str, Any] = {}
    measured = ([("base", Path(base))] if base is not None else []) + [("tuned", Path(tuned))] \
        + ([("pruned", args.pruned)] if args.pruned else [])
    for name, artefact in measured:
        with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
            figures = pool.submit(_measure, artefact, sets, extra, args.threads).result()
        gsm: dict[str, Any] = {}
        if args.gsm_bundle is not None:
            sets_dir = args.gsm_sets or args.gsm_bundle.resolve().parents[1] / "sets"
            with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
                gsm = pool.submit(_gsm, args.gsm_bundle, sets_dir, artefact, args.threads, held).result()
        accuracy = figures["accuracy"]
        outcomes = figures["outcomes"]
        wrong = sum(v for s in ("examples_reparam", "examples_paraphrased_agree_or_miss")
                    for k, v in outcomes.get(s, {}).items() if k.endswith(":wrong"))
        results[name] = {
            "artefact": str(artefact),
            "prompt": figures.get("prompt", None) or json.loads((artefact / "manifest.json").read_text()).get("prompt", "full"),
            "accuracy": {k: accuracy.get(k) for k in ("examples_reparam", "examples_paraphrased",
                                                      "examples_paraphrased_agree_or_miss", "unseen_entries")}
                        | {k: gsm.get(k) for k in GSM_KINDS},
            "served_wrong": wrong,
            "served_wrong_decode_policy": sum(v for k, v in outcomes["examples_paraphrased"].items() if k.endswith(":wrong")),
            "lm_path_p50_ms": figures["lm_path_p50_ms"],
            "one_pass_p50_ms": figures["one_pass_p50_ms"],
            "miss_p50_ms": gsm.get("miss_p50_ms"),
            "gsm": gsm,
            "rss_mb": figures["rss_mb"],
            "outcomes": outcomes,
        }
    out = {
        **results,
        "model": _model_record(Path(tuned), tuning),
        "train_seconds": round(train_seconds, 1),
        "examples": tuning.get("examples"),
        "tokens": tuning.get("tokens"),
        "unseen_entries_questions": len(unseen),
        "held_out_entries": sorted(held),
        "gsm_bundle": str(args.gsm_bundle) if args.gsm_bundle else None,
    }
    if args.pruned:
        pruned_tuning, pruned_seconds = _tuning(args.pruned)
        if pruned_tuning.get("data_digest") not in (None, tuning.get("data_digest")):
            log(f"warning: {args.pruned} was tuned on data {pruned_tuning.get('data_digest')}, not {tuning.get('data_digest')}")
        out["pruned_model"] = _model_record(args.pruned, pruned_tuning) | {"train_seconds": pruned_seconds}
    if args.json:
        print(json.dumps(out))
        return
    for key in ("examples_reparam", "examples_paraphrased", "examples_paraphrased_agree_or_miss", "unseen_entries"):
        print(f"{key:40s} " + "  ".join(f"{name} {results[name]['accuracy'][key]}" for name, _ in measured))
    for key in ("served_wrong", "lm_path_p50_ms", "one_pass_p50_ms", "rss_mb"):
        print(f"{key:40s} " + "  ".join(f"{name} {results[name][key]}" for name, _ in measured))
    print(json.dumps({k: out[k] for k in ("model", "train_seconds", "examples", "tokens")}))


if __name__ == "__main__":
    main()

"""IS2 extraction on the real target model: accuracy and latency per path and per quantisation recipe.

Question sets (all generated here from the example entries, values drawn from each
parameter's domain with a fixed seed):
- ``examples_reparam``: the entry's own template with new values (the agent case: fast path);
- ``examples_paraphrased``: the same values in wordings the entry has never seen (LM path).
Latency: the LM path as a device serves it (``lm_path_p50_ms``: cached prompt prefix, the aligner's
draft verified in one pass, served when the model agrees or its one disagreement is an impossible reading (the
device's rereads, on by default); p50 over the questions it served), every
question that reached the model (``agree_or_miss_p50_ms``), the decode policy (constrained decoding
from the first disagreement, ``decode_policy_p50_ms``),
the template fast path, and the naive baseline (whole prompt, no prefix reuse, unconstrained
greedy decode) on the same questions, in the same run; ``one_pass_p50_ms`` is the floor of
the LM path on this machine: a single forward pass over question and draft on a reused prefix.
Each recipe (default: the default one and all-int8) is built or reused from build/target-models
and measured on the same questions; the top-level JSON keys are the first recipe's.

    .venv/bin/python benchmarks/extraction.py [--recipes R1,R2 | --artefact DIR] [--per-entry N]
        [--gsm-bundle build/eval7/bundles/gsm8k-eval-....arcb [--gsm-set ../shared/data/gsm_symbolic_dev.jsonl]] [--json]

``--gsm-bundle`` adds ``accuracy[gsm_symbolic_dev]``: the share of the set's rows whose entry is in
the bundle that are answered right in-process (their parameters checked through the answer).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import random
import re
import resource
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from fractions import Fraction
from pathlib import Path
from typing import Any

from tqdm import tqdm

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from edge_runtime.entries.metadata import EntryPoint, Param  # noqa: E402
from edge_runtime.entries.registry import Registry  # noqa: E402
from edge_runtime.errors import ExtractionError  # noqa: E402
from edge_runtime.model.lm_engine import LMEngine  # noqa: E402
from edge_runtime.options import PipelineOptions  # noqa: E402
from edge_runtime.read.extractor import Extractor  # noqa: E402
from edge_runtime.read.prompt_variants import prompt_for  # noqa: E402
from edge_runtime.route.embedder import OnnxSentenceEmbedder  # noqa: E402

#: Other wordings of the example entries' questions (same slots), written for this benchmark.
PARAPHRASES: dict[str, list[str]] = {
    "ideal-gas-pressure": [
        "A {volume} {volume_unit} container holds {moles} mol of ideal gas at {temperature} degrees {temperature_unit}. Find "
        "its pressure in kPa.",
        "Find the pressure in kPa: {moles} mol of gas, temperature {temperature} degrees {temperature_unit}, volume {volume} "
        "{volume_unit}.",
    ],
    "charles-law-volume": [
        "At constant pressure, {volume} litres of air at {start_temperature} degrees {temperature_unit} is brought to "
        "{end_temperature} degrees {temperature_unit}. What volume in litres does it take up?",
        "Air starts at {start_temperature} degrees {temperature_unit} in a {volume} litres balloon and ends at "
        "{end_temperature} degrees {temperature_unit}; pressure is constant. New volume in litres?",
    ],
    "compound-interest-balance": [
        "What will ${principal} grow to in {years} years at {rate}% per year, compounded {frequency}?",
        "A saver puts ${principal} into an account paying {rate}% a year compounded {frequency}. How much is there after "
        "{years} years?",
    ],
    "parcel-shipping-cost": [
        "What is the postage for a {weight} kg parcel with {contents} going to a {zone} address?",
        "I am shipping {contents} in a parcel that weighs {weight} kg to a {zone} address. How much will it cost?",
    ],
    "recipe-ingredient-scaling": [
        "To serve {servings} people a recipe needs {quantity} {unit} of {ingredient}. How many {unit} of {ingredient} are "
        "needed for {wanted} people?",
        "My recipe uses {quantity} {unit} of {ingredient} for {servings} servings. How many {unit} of {ingredient} for "
        "{wanted} servings?",
    ],
    "school-trip-cost": [
        "{students} students and {teachers} teachers visit a museum. Buses seat {seats} each and cost ${bus_price} to hire; "
        "student tickets are ${ticket_price} and teachers go free. How many buses, and what is the total cost in dollars?",
        "For a museum trip with {students} students and {teachers} teachers, each bus holds {seats} people at ${bus_price} "
        "per bus, and each student ticket is ${ticket_price} (teachers free). How many buses are needed and what does the "
        "trip cost in dollars?",
    ],
}


def sample_value(param: Param, rng: random.Random) -> Any:
    if param.choices is not None:
        return rng.choice(list(param.choices))
    if param.type is str:
        return rng.choice([param.original, *param.examples])
    low = param.minimum if param.minimum is not None else 0
    high = min(param.maximum if param.maximum is not None else 1000, max(abs(low) * 10, 500))
    if param.type is int:
        return rng.randint(int(math.ceil(low + (1 if param.exclusive_minimum else 0))), int(high))
    value = round(rng.uniform(max(low, 0.1), high), rng.choice([0, 1, 2]))
    return value if value > low else low + 1


def questions(entries: dict[str, EntryPoint], per_entry: int, seed: int) -> dict[str, list[tuple[EntryPoint, str, dict]]]:
    rng = random.Random(seed)
    sets: dict[str, list[tuple[EntryPoint, str, dict]]] = {"examples_reparam": [], "examples_paraphrased": []}
    for entry_id, entry in sorted(entries.items()):
        for i in range(per_entry):
            values = {p.name: sample_value(p, rng) for p in entry.params}
            values = entry.validate(values)
            sets["examples_reparam"].append((entry, entry.render(values), values))
            template = PARAPHRASES[entry_id][i % len(PARAPHRASES[entry_id])]
            rendered = template.format(**{k: _text(v) for k, v in values.items()})
            sets["examples_paraphrased"].append((entry, rendered, values))
    return sets


def _text(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _without_article(text: str) -> str:
    return re.sub(r"^(?:a|an|the)\s+", "", text.strip().lower())


def same(expected: dict, got: dict, entry: EntryPoint) -> bool:
    for param in entry.params:
        a, b = expected[param.name], got.get(param.name)
        if param.type is str and param.choices is None and isinstance(a, str):
            # free text by its span, a leading article aside ("glass flower vase" names the goods of "a glass flower
            # vase"); the recipe quantity is the span as written ("two and a half", not "2.5")
            if _without_article(a) != _without_article(str(b)):
                return False
        elif isinstance(a, (int, float, Fraction)) and not isinstance(a, bool):
            if not isinstance(b, (int, float, Fraction)) or not math.isclose(float(a), float(b), rel_tol=1e-9):
                return False
        elif a != b:
            return False
    return True


def run_set(extractor: Extractor, items: list, record: list[float],
            keys: list[str] | None = None) -> tuple[float, dict[str, int]]:
    right = 0
    outcomes: dict[str, int] = {}
    for entry, question, values in items:
        start = time.perf_counter()
        try:
            result = extractor.extract(entry, question)
            record.append((time.perf_counter() - start) * 1000)
            ok = same(values, result.values, entry)
            key = f"{result.path}:{'right' if ok else 'wrong'}"
            right += ok
        except ExtractionError as exc:
            record.append((time.perf_counter() - start) * 1000)
            key = f"miss:{exc.reason}"
        outcomes[key] = outcomes.get(key, 0) + 1
        if keys is not None:
            keys.append(key)
    return right / len(items), outcomes


def p50(values: list[float]) -> float:
    return round(statistics.median(values), 2) if values else float("nan")


def peak_rss_mb() -> float:
    """This process's peak resident memory. Not ru_maxrss: Linux keeps that across exec, so a spawned
    process would report its parent's peak (the export of a model: several GB)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


#: The device's serving policy for the model path (agree-or-miss, rereads as configured by default).
DEVICE = PipelineOptions()


def measure_recipe(artefact: Path, sets: dict, threads: int, naive: int, extra_sets: dict | None = None) -> dict[str, Any]:
    """Load one artefact and measure both model policies and the naive baseline on the same questions;
    ``extra_sets`` (name -> items) are answered as a device serves them (agree-or-miss) on the same engine."""
    start = time.perf_counter()
    engine = LMEngine(artefact, threads=threads)
    prompt_parts = prompt_for(engine.manifest)  # the prompt this artefact's model reads (a tuned reader's is short)
    figures: dict[str, Any] = {"model_load_s": round(time.perf_counter() - start, 3), "accuracy": {}, "outcomes": {}}
    for policy in ("decode", "miss"):
        lm = Extractor(engine, on_disagreement=policy, impossible_rereads=DEVICE.impossible_rereads if policy == "miss" else None)
        for entry, question, _ in sets["examples_paraphrased"][:: max(1, len(sets["examples_paraphrased"]) // 6)]:
            try:  # warm each entry's prompt prefix once
                lm.extract(entry, question)
            except ExtractionError:
                pass
        lm_ms: list[float] = []
        keys: list[str] = []
        acc, outcomes = run_set(lm, sets["examples_paraphrased"], lm_ms, keys)
        name = "examples_paraphrased" if policy == "decode" else "examples_paraphrased_agree_or_miss"
        figures["accuracy"][name] = round(acc, 4)
        figures["outcomes"][name] = outcomes
        if policy == "decode":
            figures["decode_policy_p50_ms"] = p50(lm_ms)
            figures["decode_policy_p90_ms"] = round(sorted(lm_ms)[int(0.9 * (len(lm_ms) - 1))], 2)
        else:
            # The device's model path: the aligner's draft verified in one pass, served only when the model agrees.
            hits = [ms for ms, key in zip(lm_ms, keys) if not key.startswith("miss")]
            figures["lm_path_p50_ms"] = p50(hits)
            figures["lm_path_p90_ms"] = round(sorted(hits)[int(0.9 * (len(hits) - 1))], 2) if hits else None
            figures["agree_or_miss_p50_ms"] = p50(lm_ms)
    served = {k: v for k, v in figures["outcomes"]["examples_paraphrased_agree_or_miss"].items() if not k.startswith("miss")}
    right = sum(v for k, v in served.items() if k.endswith(":right"))
    figures["agree_or_miss_served"] = sum(served.values())
    figures["agree_or_miss_served_precision"] = round(right / max(1, sum(served.values())), 4)

    # The floor: one forward pass over question + draft on a reused prefix, nothing else.
    floor_ms: list[float] = []
    for entry, question, _ in sets["examples_paraphrased"][:12]:
        prefix, suffix = prompt_parts(entry, question)
        state = engine.prefix_state(engine.encode(prefix))
        ids = engine.encode(suffix + json.dumps({p.name: "0" for p in entry.params}))
        start = time.perf_counter()
        engine.forward(ids, state)
        floor_ms.append((time.perf_counter() - start) * 1000)
    figures["one_pass_p50_ms"] = p50(floor_ms)

    naive_ms: list[float] = []
    end = engine.encode("<|im_end|>")[:1]
    for entry, question, _ in sets["examples_paraphrased"][:naive]:
        prefix, suffix = prompt_parts(entry, question)
        start = time.perf_counter()
        engine.greedy(engine.encode(prefix + suffix), max_new_tokens=96, stop_ids=end)
        naive_ms.append((time.perf_counter() - start) * 1000)
    figures["naive_p50_ms"] = p50(naive_ms)
    device = Extractor(engine, on_disagreement="miss", impossible_rereads=DEVICE.impossible_rereads)
    for name, items in (extra_sets or {}).items():
        keys = []
        acc, outcomes = run_set(device, items, [], keys)
        figures["accuracy"][name] = round(acc, 4) if items else None
        figures["outcomes"][name] = outcomes
    figures["prefix_cache_mb"] = round(engine.prefix_cache_used / 2**20, 2)
    figures["recipe"] = engine.manifest.get("recipe")
    figures["rss_mb"] = peak_rss_mb()  # this recipe's process
    return figures


def bundle_accuracy(bundle_path: Path, set_path: Path, threads: int, model: Path | None = None,
                    rows_given: list | None = None) -> dict[str, Any]:
    """Answer every row of a query set whose entry is in ``bundle_path`` in-process (IS1-IS4, guard on)
    and count the rows answered right. GSM-Symbolic's bindings name the template's own variables, not
    the entry's parameters, so the parameters are checked through the answer they produce.
    ``model``: serve with this artefact instead of the one the bundle names (benchmarks/finetune.py compares
    two readers on one bundle; a bundle naming the artefact would load it the same way). ``rows_given``: answer
    these rows (any kind, changed ones too) instead; ``records`` then holds (row, hit, right, ms) per row."""
    import tempfile

    from builder.eval.answers import answers_match
    from builder.eval.querysets import load_query_set
    from builder.eval.runner import bundle_model_dir
    from edge_runtime.bundles.bundle import read_bundle
    from edge_runtime.options import ModelOptions
    from edge_runtime.serving.runtime import EdgeRuntime, RuntimeOptions

    # The evaluation bundles are signed with their own key: trust the signer the manifest names, as
    # arc-build eval does (this measures extraction, not the signature check).
    bundle = read_bundle(bundle_path, trusted_keys=None, allow_unsigned=True)
    public = bytes.fromhex(bundle.manifest["public_key"])
    rows = rows_given if rows_given is not None else [
        r for r in load_query_set(set_path).rows if r.entry_id in bundle.entries and r.should_serve]
    outcomes: dict[str, int] = {}
    records: list[tuple[Any, bool, bool, float]] = []
    with tempfile.TemporaryDirectory(prefix="arc-extraction-") as tmp:
        runtime = EdgeRuntime(RuntimeOptions(data_dir=Path(tmp), trusted_keys=[public],
                                             model=ModelOptions(threads=threads), use_worker_pool=False))
        bundled = bundle_model_dir(bundle, lambda m: print(m, file=sys.stderr))
        if bundled is not None:
            runtime.blobs.import_target_model(bundled)
        staged, missing = runtime.stage_bundle(bundle_path.read_bytes())
        runtime.blobs.import_from_dir(bundle_path.parent / "blobs", missing)  # routing table, tokenizer
        reader = model or bundled  # before 2026-12-04 22:35 the bundle's model replaced ``model`` here
        if reader is not None:
            engine = LMEngine(reader, threads=threads, concurrent_runs=runtime.options.model.model_runs)
            runtime._engine_for = lambda _bundle: engine  # noqa: SLF001 - the reader under test, see the docstring
        runtime.activate(f"{staged.name}-{staged.version}")
        right = 0
        for row in tqdm(rows, desc=set_path.stem, file=sys.stderr):
            start = time.perf_counter()
            _, answer = runtime.answer(row.query)
            ok = answer.hit and answers_match(answer.answer, row.answer)
            records.append((row, answer.hit, bool(ok), (time.perf_counter() - start) * 1000))
            right += ok
            key = f"{answer.path}:{'right' if ok else 'wrong'}" if answer.hit else f"miss:{answer.miss_reason}"
            outcomes[key] = outcomes.get(key, 0) + 1
        runtime.close()
    return {"rows": len(rows), "accuracy": round(right / len(rows), 4) if rows else None, "outcomes": outcomes,
            "records": records}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artefact", type=Path, default=None, help="one target-model artefact (instead of --recipes)")
    parser.add_argument("--recipes", default=None, help="comma-separated recipes built from SmolLM2 and compared "
                        "side by side (default: the default recipe and int8)")
    parser.add_argument("--per-entry", type=int, default=12)
    parser.add_argument("--naive", type=int, default=6, help="questions timed on the naive path (slow)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--gsm-bundle", type=Path, default=None,
                        help="a GSM8K bundle (python -m builder.eval.gsm_bundle): also measure --gsm-set on it")
    parser.add_argument("--gsm-set", type=Path, default=REPO.parent / "shared" / "data" / "gsm_symbolic_dev.jsonl")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from builder.target_model import DEFAULT_RECIPE

    if args.artefact is not None:
        artefacts = {"artefact": args.artefact}
    else:
        from builder.target_model import build_target_model

        recipes = args.recipes.split(",") if args.recipes else [DEFAULT_RECIPE, "optimum-int8-fp32-down"]
        artefacts = {r: build_target_model(recipe=r, progress=lambda m: print(m, file=sys.stderr)) for r in recipes}
    registry = Registry(OnnxSentenceEmbedder())
    registry.add_directory(REPO / "bundles" / "examples")
    sets = questions(registry.entries, args.per_entry, args.seed)

    fast = Extractor(None)
    fast_ms: list[float] = []
    acc_fast, out_fast = run_set(fast, sets["examples_reparam"], fast_ms)

    per_recipe = {}
    for name, artefact in tqdm(artefacts.items(), desc="recipes", disable=args.json):
        # One process per recipe: a model loaded earlier (its memory, its threads) would slow the next one
        # (measured: 391 ms for a pass that takes 140 ms alone).
        with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
            per_recipe[name] = pool.submit(measure_recipe, Path(artefact), sets, args.threads, args.naive).result()
    if args.gsm_bundle is not None:  # its own process too, after the recipes: the answers use the default model
        with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
            gsm = pool.submit(bundle_accuracy, args.gsm_bundle, args.gsm_set, args.threads).result()
    headline = per_recipe[next(iter(per_recipe))]  # the default recipe (or the one artefact)
    figures: dict[str, Any] = {
        key: headline[key]
        for key in ("lm_path_p50_ms", "lm_path_p90_ms", "agree_or_miss_p50_ms", "decode_policy_p50_ms", "one_pass_p50_ms",
                    "naive_p50_ms",
                    "model_load_s", "prefix_cache_mb", "agree_or_miss_served", "agree_or_miss_served_precision", "recipe")
    }
    figures["accuracy"] = {"examples_reparam": round(acc_fast, 4), **headline["accuracy"]}
    figures["outcomes"] = {"examples_reparam": out_fast, **headline["outcomes"]}
    figures.update(
        {
            "fast_path_p50_ms": round(statistics.median(fast_ms), 3),
            "rss_mb": headline["rss_mb"],
            "questions_per_set": len(sets["examples_reparam"]),
            "threads": args.threads,
            "recipes": per_recipe,
        }
    )
    if args.gsm_bundle is not None:
        figures["accuracy"][args.gsm_set.stem] = gsm["accuracy"]
        figures["outcomes"][args.gsm_set.stem] = gsm["outcomes"]
        figures[f"{args.gsm_set.stem}_rows"] = gsm["rows"]
    if args.json:
        print(json.dumps(figures))
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    table = Table(title=f"IS2 extraction — SmolLM2-135M, {args.threads} threads, {len(sets['examples_reparam'])} questions "
                        f"per set")
    table.add_column("figure")
    for name in per_recipe:
        table.add_column(name, justify="right")
    rows = ("lm_path_p50_ms", "lm_path_p90_ms", "agree_or_miss_p50_ms", "decode_policy_p50_ms", "one_pass_p50_ms",
            "naive_p50_ms",
            "model_load_s", "prefix_cache_mb", "agree_or_miss_served")
    for key in rows:
        table.add_row(key, *(str(per_recipe[n][key]) for n in per_recipe))
    for set_name in headline["accuracy"]:
        table.add_row(escape(f"accuracy[{set_name}]"), *(f"{per_recipe[n]['accuracy'][set_name]:.1%}" for n in per_recipe))
    table.add_row("precision when served (agree-or-miss)",
                  *(f"{per_recipe[n]['agree_or_miss_served_precision']:.1%}" for n in per_recipe))
    console.print(table)
    console.print(f"template fast path: p50 {figures['fast_path_p50_ms']} ms, accuracy {acc_fast:.1%} {out_fast}")
    if args.gsm_bundle is not None:
        console.print(escape(f"{args.gsm_set.stem}: {gsm['accuracy']:.1%} of the {gsm['rows']} rows whose entry is in "
                             f"{args.gsm_bundle.name} answered right {gsm['outcomes']}"))
    console.print("peak RSS per recipe process (model, prefix cache, the question sets): "
                  + ", ".join(f"{n} {per_recipe[n]['rss_mb']} MB" for n in per_recipe))
    for name, fig in per_recipe.items():
        for set_name, outcomes in fig["outcomes"].items():
            console.print(escape(f"[{name}] {set_name}: {outcomes}"))


if __name__ == "__main__":
    main()

"""``arc-build finetune``: tune the target model on the cache's own questions and export it for devices.

Steps: build the training set from the registry's entries (``builder/finetune_data.py``; a split of
the entries is held out), train LoRA adapters on the base model's float weights
(``builder/finetune_train.py``, checkpoints under ``--work``, ``--resume``), merge them, write the
merged model as a Hugging Face checkpoint and export it through the same compact int8 recipe as the
stock model (SmoothQuant calibrated on the tuned weights, ``builder/target_model.py``). The artefact
is content-addressed like any other under build/target-models/; its manifest adds ``prompt`` (the
short prompt the device then uses: ``edge_runtime/read/prompt_variants.py``) and ``tuning`` (base model,
data digest, steps, examples, tokens, held-out metrics). A bundle names it as it names the stock
model (``arc-build bundle --model DIR``), so a device receives it once and the stock model stays
selectable.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from builder.finetune_data import (
    Dataset,
    Example,
    TokenizerTokens,
    build_dataset,
    default_evaluation_paths,
    evaluation_queries,
)
from builder.finetune_train import TrainConfig, answer_accuracy, torch_llama, train_lora
from builder.target_model import DEFAULT_RECIPE, build_target_model, default_source, sha256_of
from edge_runtime.entries.metadata import EntryPoint

if TYPE_CHECKING:
    from builder.finetune_misslog import MissLogLabeller
    from builder.finetune_rephrase import Rephraser

REPO = Path(__file__).resolve().parents[1]
PROMPT = "short"
#: Per imported entry: (renderings, rewordings) besides its original question. The hand-written entries get
#: 40 and 120. Chosen for the compute of this machine (2 shared cores: ~60 s a step when busy).
GSM_EXAMPLES = (0, 1)


def load_entries(directories: Sequence[Path]) -> dict[str, EntryPoint]:
    """The entries of each registry directory (an importer's registry root, its entries/ or a sources dir)."""
    from edge_runtime.entries.registry import Registry

    entries: dict[str, EntryPoint] = {}
    for directory in directories:
        directory = Path(directory)
        if (directory / "entries").is_dir():
            directory = directory / "entries"
        if (directory / "_meta").is_dir():  # an importer's entries reference each other by exact description
            from builder.pot_import.verify import ExactEmbedder

            registry = Registry(ExactEmbedder())
        else:
            from edge_runtime.route.embedder import OnnxSentenceEmbedder

            registry = Registry(OnnxSentenceEmbedder())
        registry.add_directory(directory)
        entries.update(registry.entries)
    return entries


def prepare_dataset(entries: dict[str, EntryPoint], tokens: TokenizerTokens, *, seed: int, build_dir: Path,
                    examples_entries: Sequence[str] = (), gsm_examples: tuple[int, int] = GSM_EXAMPLES,
                    rephraser: Rephraser | None = None, misslog: MissLogLabeller | None = None,
                    progress: Callable[[str], None] = print) -> Dataset:
    """The training set: the hand-written entries get many examples, an importer's entries a few each; with a
    ``rephraser``, also the source model's validated rephrasings (PT1, ``builder/finetune_rephrase.py``); with a
    ``misslog`` labeller, the device's missed questions the builder labelled (``builder/finetune_misslog.py``)."""
    forbidden = evaluation_queries(default_evaluation_paths(build_dir)) | benchmark_queries(entries)
    per_entry = {e: gsm_examples for e in entries if e not in set(examples_entries)}
    rephrased = rephraser.run(entries, tokens, forbidden, progress) if rephraser is not None else None
    labelled = misslog.run(entries, tokens, forbidden, progress) if misslog is not None else None
    extra: dict[str, list[Example]] = {}
    for report in (rephrased, labelled):
        for entry_id, examples in (report.examples if report is not None else {}).items():
            extra.setdefault(entry_id, []).extend(examples)
    data = build_dataset(entries, tokens, prompt=PROMPT, seed=seed, forbidden=forbidden, per_entry=per_entry,
                         renderings=40, rewordings=120, extra_examples=extra or None)
    for reason, count in (rephrased.dropped if rephrased is not None else {}).items():
        data.dropped[f"source rephrasing: {reason}"] = count
    if labelled is not None:
        for reason, count in {**labelled.dropped, **labelled.skipped}.items():
            data.dropped[f"miss log: {reason}"] = count
    return data


def benchmark_queries(entries: dict[str, EntryPoint]) -> set[str]:
    """The questions benchmarks/extraction.py generates for the example entries (its seed and size): never trained on."""
    import importlib.util

    from builder.finetune_data import normalise

    path = REPO / "benchmarks" / "extraction.py"
    if not path.exists():
        return set()
    spec = importlib.util.spec_from_file_location("arc_benchmark_extraction", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    known = {k: v for k, v in entries.items() if k in module.PARAPHRASES}
    found: set[str] = set()
    for per_entry in (12, 24):
        for rows in module.questions(known, per_entry, 7).values():
            found.update(normalise(question) for _, question, _ in rows)
    return found


@dataclasses.dataclass(frozen=True)
class TrainingData:
    """What a tuning run reads before it trains: the base model, its tokenizer and the training set."""

    source: Path
    source_sha256: str
    hf_dir: Path
    tokens: TokenizerTokens
    entries: dict[str, EntryPoint]
    data: Dataset


def training_data(registries: Sequence[Path], *, base: Path | None = None, work: Path = REPO / "build" / "finetune",
                  seed: int = 0, gsm_examples: tuple[int, int] = GSM_EXAMPLES, build_dir: Path | None = None,
                  progress: Callable[[str], None] = print, rephraser: Rephraser | None = None,
                  misslog: MissLogLabeller | None = None) -> TrainingData:
    """The training set a run on ``registries`` builds (its digest names the run), without training.

    One function for ``finetune`` and for whoever needs to know which artefact a run would reuse
    (``arc-build demo --tuned``, benchmarks/finetune.py), so the two cannot compute different digests."""
    from builder.target_model import _tokenizer_and_config

    source = Path(base) if base is not None else default_source()
    hf_dir, _ = _tokenizer_and_config(source, Path(work) / "hf", progress)
    tokens = TokenizerTokens.from_file(hf_dir / "tokenizer.json")
    progress(f"reading the entries of {', '.join(str(r) for r in registries)}")
    entries: dict[str, EntryPoint] = {}
    hand_written: list[str] = []
    for registry in registries:
        found = load_entries([registry])
        if not (Path(registry) / "_meta").is_dir() and not (Path(registry) / "entries").is_dir():
            hand_written += list(found)
        entries.update(found)
    build_dir = build_dir or REPO / "build"
    if not any(Path(build_dir).glob("*/sets")):
        progress(f"warning: no evaluation query sets under {build_dir}: only the benchmark's own sets are excluded")
    data = prepare_dataset(entries, tokens, seed=seed, build_dir=build_dir, examples_entries=hand_written,
                           gsm_examples=gsm_examples, rephraser=rephraser, misslog=misslog, progress=progress)
    progress(f"data {data.digest}: {len(data.rows)} examples ({data.tokens} tokens) from {len(data.train_entries)} "
             f"entries; {len(data.held_out_rows)} held-out examples of {len(data.held_out_entries)} entries; "
             f"dropped {data.dropped}")
    return TrainingData(source, sha256_of(source), hf_dir, tokens, entries, data)


def finetune(
    registries: Sequence[Path], *, base: Path | None = None, out: Path = REPO / "build" / "target-models",
    work: Path = REPO / "build" / "finetune", steps: int = 60, resume: bool = False, seed: int = 0,
    keep_layers: int | None = None, gsm_examples: tuple[int, int] = GSM_EXAMPLES, batch_size: int = 8,
    learning_rate: float = 1e-3, lora_layers: int | None = 15, recipe: str = DEFAULT_RECIPE,
    progress: Callable[[str], None] = print,
    show_bar: bool = True, build_dir: Path | None = None, continue_from: Path | None = None,
    rephraser: Rephraser | None = None, misslog: MissLogLabeller | None = None,
) -> Path:
    """Train and export; returns the tuned artefact's directory (reused when one with the same data and settings exists).

    ``continue_from``: the ``latest.pt`` checkpoint of a shorter run with the same data and settings, which this run
    lengthens to ``steps`` (``train_lora``); the manifest records the step it continued from. ``rephraser``: add the
    source model's rephrasings (PT1); ``misslog``: add the labelled rows of the device's miss log. Either changes the
    data digest, so such a run has its own artefact."""
    from builder.compact_export import read_weights

    started = time.time()
    prepared = training_data(registries, base=base, work=work, seed=seed, gsm_examples=gsm_examples,
                             build_dir=build_dir, progress=progress, rephraser=rephraser, misslog=misslog)
    source, source_sha, hf_dir, tokens, data = (prepared.source, prepared.source_sha256, prepared.hf_dir,
                                                prepared.tokens, prepared.data)
    config = TrainConfig(steps=steps, batch_size=batch_size, learning_rate=learning_rate, seed=seed, lora_layers=lora_layers)
    continued = _checkpoint_step(continue_from) if continue_from is not None else None
    run_key = (f"{data.digest}-{source_sha[:8]}-{steps}-{keep_layers or 'all'}-{lora_layers or 'all'}"
               + (f"-from{continued}" if continued is not None else ""))
    existing = find_tuned(out, data.digest, steps, source_sha, keep_layers,
                          lora={"layers": config.lora_layers, "learning_rate": config.learning_rate,
                                "continued_from_step": continued})
    if existing is not None:
        progress(f"reusing tuned artefact {existing}")
        return existing
    run_dir = Path(work) / run_key
    weights = read_weights(source)
    if keep_layers is not None:
        weights = dataclasses.replace(weights, layers=weights.layers[:keep_layers],
                                      config=dataclasses.replace(weights.config, num_layers=keep_layers))
    model = torch_llama(weights)
    pad_id = tokens.encode("<|endoftext|>")[0] if tokens.encode("<|endoftext|>") else 0
    merged, record = train_lora(model, data.rows, config, run_dir / "checkpoints", pad_id=pad_id,
                                data_digest=data.digest, resume=resume, progress=progress, show_bar=show_bar,
                                continue_from=continue_from)
    progress("measuring the held-out entries' answer tokens")
    held = answer_accuracy(merged, data.held_out_rows[:64], pad_id) if data.held_out_rows else None
    seen = answer_accuracy(merged, data.rows[:64], pad_id)
    checkpoint = run_dir / "merged"
    if checkpoint.exists():
        shutil.rmtree(checkpoint)
    merged.save_pretrained(checkpoint, safe_serialization=True)
    for item in hf_dir.iterdir():
        if item.is_file() and item.name != "config.json" and not item.name.endswith((".safetensors", ".bin", ".gguf")):
            shutil.copy(item, checkpoint / item.name)
    tuning = {
        "base_model": source.name, "base_sha256": source_sha, "data_digest": data.digest, "steps": steps,
        "examples": len(data.rows), "tokens": data.tokens, "train_entries": len(data.train_entries),
        "held_out_entries": data.held_out_entries, "keep_layers": keep_layers, "seed": seed,
        "lora": {"layers": config.lora_layers, "rank": config.lora_rank, "alpha": config.lora_alpha,
                 "learning_rate": config.learning_rate,
                 "batch_size": config.batch_size, "continued_from_step": record["continued_from_step"]},
        "metrics": {"train_answer_tokens": seen, "held_out_answer_tokens": held,
                    "loss_first_last": record["losses_first_last"], "loss_mean_last_10": record["loss_mean_last_10"]},
    }
    artefact = build_target_model(checkpoint, cache_dir=out, recipe=recipe, progress=progress,
                                  extra_manifest={"prompt": PROMPT, "tuning": tuning})
    (artefact / "tuning.json").write_text(json.dumps({**tuning, "train_seconds": record["train_seconds"],
                                                      "total_seconds": round(time.time() - started, 1),
                                                      "device": record["device"], "dropped": data.dropped,
                                                      **extra_rows(data)}, indent=2))
    return artefact


def extra_rows(data: Dataset) -> dict[str, dict[str, int]]:
    """How many training and held-out rows are the source model's rephrasings (PT1) and labelled miss-log rows:
    tuning.json says which rows trained."""
    from builder.finetune_misslog import KIND as MISS_LOG
    from builder.finetune_rephrase import KIND as REPHRASING

    return {name: {"train": sum(e.kind == kind for e in data.train), "held_out": sum(e.kind == kind for e in data.held_out)}
            for name, kind in (("source_rephrasings", REPHRASING), ("miss_log", MISS_LOG))}


def _checkpoint_step(path: Path) -> int:
    """The step a training checkpoint (``latest.pt``) reached."""
    import torch

    return int(torch.load(path, map_location="cpu", weights_only=False)["step"])


def find_tuned(out: Path, data_digest: str, steps: int, base_sha256: str | None = None,
               keep_layers: int | None = None, lora: dict | None = None) -> Path | None:
    """A tuned artefact under ``out`` built from this data, for this many steps (and base, and pruning).

    ``lora``: settings its manifest's ``tuning.lora`` must have too (e.g. ``{"layers": None}``: LoRA on every
    block), so a run with other adapters or another learning rate is not mistaken for this one."""
    for manifest in sorted(Path(out).glob("*/manifest.json")):
        try:
            tuning = json.loads(manifest.read_text()).get("tuning") or {}
        except (OSError, json.JSONDecodeError):
            continue
        if (tuning.get("data_digest") == data_digest and tuning.get("steps") == steps
                and (base_sha256 is None or tuning.get("base_sha256") == base_sha256)
                and tuning.get("keep_layers") == keep_layers
                and all((tuning.get("lora") or {}).get(k) == v for k, v in (lora or {}).items())):
            return manifest.parent
    return None

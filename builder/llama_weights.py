"""The weights of a Llama-architecture model, read from a GGUF file (exact blocks) or a Hugging Face checkpoint.

Both readers give the same ``LlamaWeights``: block-quantised linear layers in PyTorch's
orientation ([out, in]) and Hugging Face's Q/K row order, float norms, and the embedding
(which is also the output head when the model ties them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from builder.quant_blocks import Linear, from_q4_1, from_q8_0


class WeightsError(ValueError):
    """The source cannot be read as a supported Llama model."""


@dataclass(frozen=True)
class LlamaConfig:
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    rms_norm_eps: float
    rope_theta: float
    max_positions: int
    tie_word_embeddings: bool
    bos_token_id: int | None = None
    eos_token_id: int | list[int] | None = None


@dataclass
class LlamaLayer:
    q: Linear
    k: Linear
    v: Linear
    o: Linear
    gate: Linear
    up: Linear
    down: Linear
    attn_norm: np.ndarray
    mlp_norm: np.ndarray
    #: SmoothQuant scales per linear group ("qkv", "o", "gate_up", "down"), already divided out of
    #: the producer of that group's input (builder/smoothing.py); the int8 weight multiplies them in.
    smoothing: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass
class LlamaWeights:
    config: LlamaConfig
    embedding: Linear  # [vocab, hidden]
    head: Linear  # [vocab, hidden]; the embedding itself when tied
    final_norm: np.ndarray
    layers: list[LlamaLayer] = field(default_factory=list)
    exact: bool = False  # the source's own quantised values, not a rounding of float weights


#: Each linear layer's tensor name in a GGUF file and in a Hugging Face checkpoint.
_LINEARS = {
    "q": ("attn_q.weight", "self_attn.q_proj.weight"),
    "k": ("attn_k.weight", "self_attn.k_proj.weight"),
    "v": ("attn_v.weight", "self_attn.v_proj.weight"),
    "o": ("attn_output.weight", "self_attn.o_proj.weight"),
    "gate": ("ffn_gate.weight", "mlp.gate_proj.weight"),
    "up": ("ffn_up.weight", "mlp.up_proj.weight"),
    "down": ("ffn_down.weight", "mlp.down_proj.weight"),
}


def _unpermute(rows: int, heads: int) -> np.ndarray:
    """Row order undoing llama.cpp's Q/K permutation (rotary pairs interleaved per head)."""
    dim = rows // heads // 2
    return np.arange(rows).reshape(heads, dim, 2).swapaxes(2, 1).reshape(rows)


def _rows(weight: Linear, order: np.ndarray) -> Linear:
    return weight[order] if isinstance(weight, np.ndarray) else weight.rows(order)


def read_gguf(path: str | Path) -> LlamaWeights:
    """Every weight of a Llama GGUF file whose linear layers are Q4_1 or Q8_0, converted exactly."""
    from gguf import GGUFReader

    try:
        reader = GGUFReader(str(path))
    except Exception as exc:  # gguf raises ValueError, struct.error, ... on a damaged file
        raise WeightsError(f"cannot read GGUF {path}: {type(exc).__name__}: {exc}") from exc

    def field_value(name: str, default: object = None) -> object:
        item = reader.fields.get(name)
        if item is None:
            return default
        value = item.parts[item.data[0]]
        return value.tobytes().decode() if value.dtype == np.uint8 else value.tolist()[0]

    arch = field_value("general.architecture")
    if arch != "llama":
        raise WeightsError(f"{path}: architecture {arch!r} is not supported (supported: llama)")
    tensors = {t.name: t for t in reader.tensors}
    hidden = int(field_value("llama.embedding_length"))
    heads = int(field_value("llama.attention.head_count"))
    kv_heads = int(field_value("llama.attention.head_count_kv", heads))
    vocab = int(tensors["token_embd.weight"].shape[1])
    config = LlamaConfig(
        hidden_size=hidden,
        intermediate_size=int(field_value("llama.feed_forward_length")),
        num_layers=int(field_value("llama.block_count")),
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=hidden // heads,
        vocab_size=vocab,
        rms_norm_eps=float(field_value("llama.attention.layer_norm_rms_epsilon", 1e-5)),
        rope_theta=float(field_value("llama.rope.freq_base", 10000.0)),
        max_positions=int(field_value("llama.context_length", 8192)),
        tie_word_embeddings="output.weight" not in tensors,
        bos_token_id=field_value("tokenizer.ggml.bos_token_id"),
        eos_token_id=field_value("tokenizer.ggml.eos_token_id"),
    )

    def matrix(name: str) -> Linear:
        tensor = tensors.get(name)
        if tensor is None:
            raise WeightsError(f"{path}: tensor {name} is missing")
        k, n = (int(x) for x in tensor.shape)
        kind = tensor.tensor_type.name
        if kind == "Q4_1":
            return from_q4_1(tensor.data, n, k)
        if kind == "Q8_0":
            return from_q8_0(tensor.data, n, k)
        if kind in ("F32", "F16"):
            return np.asarray(tensor.data, dtype=np.float32).reshape(n, k)
        raise WeightsError(f"{path}: tensor {name} is {kind}; supported: Q4_1, Q8_0, F16, F32")

    def vector(name: str) -> np.ndarray:
        tensor = tensors.get(name)
        if tensor is None:
            raise WeightsError(f"{path}: tensor {name} is missing")
        return np.asarray(tensor.data, dtype=np.float32).reshape(-1).copy()

    q_order = _unpermute(heads * config.head_dim, heads)
    k_order = _unpermute(kv_heads * config.head_dim, kv_heads)
    layers = []
    for i in range(config.num_layers):
        p = f"blk.{i}."
        linears = {field: matrix(p + name) for field, (name, _) in _LINEARS.items()}
        linears["q"], linears["k"] = _rows(linears["q"], q_order), _rows(linears["k"], k_order)
        layers.append(LlamaLayer(**linears, attn_norm=vector(p + "attn_norm.weight"),
                                 mlp_norm=vector(p + "ffn_norm.weight")))
    embedding = matrix("token_embd.weight")
    head = embedding if config.tie_word_embeddings else matrix("output.weight")
    return LlamaWeights(config, embedding, head, vector("output_norm.weight"), layers, exact=True)


def read_hf_checkpoint(directory: str | Path) -> LlamaWeights:
    """A Hugging Face Llama checkpoint (safetensors), every weight as float32."""
    from safetensors.torch import load_file  # torch reads bf16, numpy cannot

    directory = Path(directory)
    raw = json.loads((directory / "config.json").read_text())
    if raw.get("model_type") != "llama":
        raise WeightsError(f"{directory}: architecture {raw.get('model_type')!r} is not supported (supported: llama)")
    theta = raw.get("rope_theta", (raw.get("rope_parameters") or {}).get("rope_theta", 10000.0))
    if raw.get("rope_scaling"):
        raise WeightsError(f"{directory}: rope_scaling {raw['rope_scaling']} is not supported yet")
    heads = raw["num_attention_heads"]
    config = LlamaConfig(
        hidden_size=raw["hidden_size"],
        intermediate_size=raw["intermediate_size"],
        num_layers=raw["num_hidden_layers"],
        num_heads=heads,
        num_kv_heads=raw.get("num_key_value_heads", heads),
        head_dim=raw.get("head_dim") or raw["hidden_size"] // heads,
        vocab_size=raw["vocab_size"],
        rms_norm_eps=float(raw.get("rms_norm_eps", 1e-5)),
        rope_theta=float(theta),
        max_positions=int(raw.get("max_position_embeddings", 8192)),
        tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
        bos_token_id=raw.get("bos_token_id"),
        eos_token_id=raw.get("eos_token_id"),
    )
    files = sorted(directory.glob("*.safetensors"))
    if not files:
        raise WeightsError(f"{directory} has no *.safetensors weights")
    state: dict[str, np.ndarray] = {}
    for file in files:
        state.update({k: v.float().numpy() for k, v in load_file(str(file)).items()})

    def get(name: str) -> np.ndarray:
        if name not in state:
            raise WeightsError(f"{directory}: weight {name} is missing")
        return state[name].astype(np.float32)

    layers = []
    for i in range(config.num_layers):
        p = f"model.layers.{i}."
        layers.append(LlamaLayer(**{field: get(p + name) for field, (_, name) in _LINEARS.items()},
                                 attn_norm=get(p + "input_layernorm.weight"),
                                 mlp_norm=get(p + "post_attention_layernorm.weight")))
    embedding = get("model.embed_tokens.weight")
    head = embedding if config.tie_word_embeddings or "lm_head.weight" not in state else get("lm_head.weight")
    return LlamaWeights(config, embedding, head, get("model.norm.weight"), layers, exact=False)

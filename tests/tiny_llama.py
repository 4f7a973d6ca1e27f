"""A tiny random Llama checkpoint and its target-model artefacts, built once per test session.

Not a conftest: test modules import the helpers (``from tiny_llama import ...``) and wrap them in
their own session fixtures. Every builder is memoised on its base directory (module-level caches),
so the checkpoint and each artefact are built once per session however many modules ask for them.

The checkpoint is deterministic: a byte-level BPE tokenizer (600 tokens, digits split one by one
as in SmolLM2) trained on a fixed corpus, a LlamaConfig written in code (initializer_range 0.3 so
greedy output is not a degenerate repetition) and ``torch.manual_seed(0)`` weights. Its answers
are arbitrary but reproducible, which is what the engine and extractor tests need (equality, not
quality). Checkpoint + fp32 + int8 artefacts build in about ten seconds.
"""

from __future__ import annotations

import functools
import json
import threading
import warnings
from pathlib import Path

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

HIDDEN_SIZE = 64
NUM_LAYERS = 2
NUM_HEADS = 4
NUM_KV_HEADS = 2
ROPE_THETA = 100000.0
#: Larger than the default 0.02 so the layers, not the tied embedding alone, drive the next token
#: (with 0.02 a random tied model just repeats its last input token).
INIT_RANGE = 0.3

_lock = threading.Lock()


def corpus() -> list[str]:
    """A few hundred sentences with digits, units, number words, JSON punctuation and ChatML turns."""
    units = ["celsius", "fahrenheit", "kelvin", "litres", "millilitres", "cubic metres", "mol", "kPa", "boxes"]
    words = ["twelve", "a dozen", "half", "three", "seven", "twenty", "hundred", "thousand"]
    modes = ["air", "sea", "road", "rail"]
    lines: list[str] = []
    for i in range(120):
        n = (i * 37) % 1000
        unit = units[i % len(units)]
        word = words[i % len(words)]
        lines.append(f"What is the pressure, in kPa, of {n} mol of an ideal gas at {i * 3 - 40} degrees {unit}?")
        lines.append(f"Ship {word} boxes of {n / 4:g} {unit} by {modes[i % len(modes)]}.")
        lines.append(json.dumps({"moles": str(n), "temperature": f"{i}.5", "unit": unit, "mode": modes[i % 4]}))
        lines.append(f"<|im_start|>user\nQuestion: convert {n},{i:03d} {unit} into {units[(i + 1) % len(units)]}<|im_end|>")
        lines.append(f"<|im_start|>assistant\n{{\"value\": \"{3 + i % 5} {i % 7}/8\", \"count\": {i}}}<|im_end|><|endoftext|>")
    lines += [
        "You copy parameter values out of a question. Answer with JSON only.",
        "Copy every value exactly as it is written in the question.",
        "You are a precise assistant. Answer with the answer only, no explanation.",
        "Parameters: - moles: amount of gas in moles (a number, copied as written)",
        "The capital of France is Paris. The capital of Spain is Madrid.",
        "0 1 2 3 4 5 6 7 8 9 10 11 12 100 1,200 3 1/2 -5 -40 0.5 2.5 500",
    ]
    return lines


def _train_tokenizer(out: Path) -> object:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    # SmolLM2's layout: digits one by one, then GPT-2 byte-level pieces (so '",' and '"}' merge).
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus(), trainer)
    tokenizer.save(str(out / "tokenizer.json"))
    return tokenizer


def _build_checkpoint(out: Path) -> Path:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out.mkdir(parents=True, exist_ok=True)
    raw = _train_tokenizer(out)
    ids = {name: raw.token_to_id(name) for name in SPECIAL_TOKENS}
    fast = PreTrainedTokenizerFast(
        tokenizer_file=str(out / "tokenizer.json"),
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        unk_token="<|endoftext|>",
        pad_token="<|endoftext|>",
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    (out / "chat_template.jinja").write_text(CHAT_TEMPLATE, encoding="utf-8")
    config = LlamaConfig(
        hidden_size=HIDDEN_SIZE,
        intermediate_size=128,
        num_hidden_layers=NUM_LAYERS,
        num_attention_heads=NUM_HEADS,
        num_key_value_heads=NUM_KV_HEADS,
        vocab_size=raw.get_vocab_size(),
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        rope_theta=ROPE_THETA,
        initializer_range=INIT_RANGE,
        bos_token_id=ids["<|im_start|>"],
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    model.save_pretrained(out)
    return out


@functools.cache
def _checkpoint(base: str) -> Path:
    return _build_checkpoint(Path(base) / "tiny-llama")


def tiny_llama_dir(base: Path) -> Path:
    """The tiny checkpoint directory under ``base`` (built on first use)."""
    with _lock:
        return _checkpoint(str(base))


@functools.cache
def _artefact(base: str, recipe: str) -> Path:
    from builder.target_model import build_target_model

    source = _checkpoint(base)
    with warnings.catch_warnings():  # the tracer's warnings are about the export, not about the tests
        warnings.simplefilter("ignore")
        return build_target_model(
            source=source, cache_dir=Path(base) / "target-models", recipe=recipe, progress=lambda _m: None
        )


def tiny_artefact(base: Path, recipe: str = "fp32") -> Path:
    """The artefact of the tiny checkpoint for ``recipe`` (built on first use, then cached)."""
    with _lock:
        return _artefact(str(base), recipe)


def session_base(tmp_path_factory) -> Path:
    """One directory per pytest session that every module shares (the base temp dir is per session)."""
    base = tmp_path_factory.getbasetemp() / "tiny-llama-shared"
    base.mkdir(exist_ok=True)
    return base


def chatml(user: str, system: str | None = None) -> str:
    """A ChatML prompt ending with the assistant turn's header."""
    head = f"<|im_start|>system\n{system}<|im_end|>\n" if system else ""
    return f"{head}<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"


def write_gguf(checkpoint: Path, out: Path) -> Path:
    """The checkpoint as a llama.cpp-style GGUF: Q4_1 linear layers, Q8_0 embedding, Q/K rows permuted."""
    import gguf
    import numpy as np
    from gguf import GGMLQuantizationType as Q
    from gguf.quants import quantize
    from safetensors.numpy import load_file

    config = json.loads((checkpoint / "config.json").read_text())
    weights = load_file(str(checkpoint / "model.safetensors"))
    writer = gguf.GGUFWriter(str(out), "llama")
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(config["num_attention_heads"])
    writer.add_head_count_kv(config["num_key_value_heads"])
    writer.add_rope_freq_base(config["rope_theta"])
    writer.add_layer_norm_rms_eps(config["rms_norm_eps"])
    writer.add_vocab_size(config["vocab_size"])
    writer.add_rope_dimension_count(config["hidden_size"] // config["num_attention_heads"])

    def permute(w: np.ndarray, heads: int) -> np.ndarray:  # llama.cpp's rotary layout
        return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)

    def add(name: str, array: np.ndarray, kind: Q) -> None:
        array = array.astype(np.float32)
        writer.add_tensor(name, array if kind == Q.F32 else quantize(array, kind), raw_dtype=kind)

    add("token_embd.weight", weights["model.embed_tokens.weight"], Q.Q8_0)
    add("output_norm.weight", weights["model.norm.weight"], Q.F32)
    for i in range(config["num_hidden_layers"]):
        hf, gg = f"model.layers.{i}.", f"blk.{i}."
        add(gg + "attn_q.weight", permute(weights[hf + "self_attn.q_proj.weight"], config["num_attention_heads"]), Q.Q4_1)
        add(gg + "attn_k.weight", permute(weights[hf + "self_attn.k_proj.weight"], config["num_key_value_heads"]), Q.Q4_1)
        for ours, theirs in (("attn_v", "self_attn.v_proj"), ("attn_output", "self_attn.o_proj"),
                             ("ffn_gate", "mlp.gate_proj"), ("ffn_up", "mlp.up_proj"), ("ffn_down", "mlp.down_proj")):
            add(f"{gg}{ours}.weight", weights[f"{hf}{theirs}.weight"], Q.Q4_1)
        add(gg + "attn_norm.weight", weights[hf + "input_layernorm.weight"], Q.F32)
        add(gg + "ffn_norm.weight", weights[hf + "post_attention_layernorm.weight"], Q.F32)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out

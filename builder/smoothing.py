"""SmoothQuant for the int8 linears: move activation outliers into the weights, exactly.

int8 matmuls quantise their input activations per call with one scale, so a few channels with
large values (LLMs have them, worst at the MLP down projection) cost every other channel its
precision. SmoothQuant divides input channel k by s_k = max|x_k|^a / max|W_k|^(1-a) and
multiplies the weight's column k by it: the product is unchanged, the activations are flatter.
The division is folded into whatever produces the input, so it costs nothing at run time and
stays exact on the 4-bit side:

- ``qkv`` and ``gate_up`` read an RMS norm: its gain is divided by s;
- ``down`` reads SiLU(gate) * up: the rows of ``up`` (block scales) are divided by s;
- ``o`` reads the attention output, a mix of V rows: V's rows are divided by s, one s per
  key/value head and dimension (heads that share a V must share s).

The maxima come from running the exact (fp32) graph over calibration prompts.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from builder.llama_onnx import Precision
from builder.llama_weights import LlamaWeights
from builder.quant_blocks import BlockQuantized, Linear, dense

#: Calibration text, written for this purpose: the extractor's prompt shape (system, parameter list,
#: a question, the JSON answer), word problems with numbers, units and money, and plain chat turns.
_SYSTEM = ("<|im_start|>system\nYou copy parameter values out of a question. Answer with JSON only. "
           "Copy every value exactly as it is written in the question.<|im_end|>\n")
_EXTRACTIONS = (
    ("- volume: the volume of the gas (a number, copied as written)\n- unit: the unit of the volume (one of: litres, "
     "millilitres)", "A 4 litres flask holds 1.5 mol of gas at 30 degrees celsius. What is the pressure?",
     '{"volume": "4", "unit": "litres"}'),
    ("- eggs: eggs laid per day (a number, copied as written)\n- price: price per egg (a number, copied as written)",
     "Maria's hens lay 23 eggs a day. She keeps five and sells the rest for $1.25 each. How much does she earn?",
     '{"eggs": "23", "price": "$1.25"}'),
    ("- students: students on the trip (a number, copied as written)\n- seats: seats per bus (a number, copied as "
     "written)", "A school takes 508 students to a museum. Each bus has 50 seats. How many buses are needed?",
     '{"students": "508", "seats": "50"}'),
    ("- distance: the distance driven (a number, copied as written)\n- speed: the average speed (a number, copied as "
     "written)", "Tom drives 312 miles at an average of sixty-five miles per hour. How long does the trip take?",
     '{"distance": "312", "speed": "sixty-five"}'),
    ("- principal: the amount deposited (a number, copied as written)\n- rate: the yearly rate (a number, copied as "
     "written)\n- years: the number of years (a number, copied as written)",
     "If you deposit $4,223.70 at 1.25% a year for 50 years, what is the balance?",
     '{"principal": "$4,223.70", "rate": "1.25%", "years": "50"}'),
    ("- weight: the parcel's weight (a number, copied as written)\n- mode: how it is sent (one of: air, sea, road)",
     "How much does it cost to send a 12 kg parcel by air?", '{"weight": "12", "mode": "air"}'),
    ("- servings: servings the recipe makes (a number, copied as written)\n- flour: cups of flour (a number, copied "
     "as written)", "A recipe for 8 servings uses 2 1/2 cups of flour. How much flour do 20 servings need?",
     '{"servings": "8", "flour": "2 1/2"}'),
    ("- temperature: the temperature (a number, copied as written)\n- scale: the scale (one of: celsius, fahrenheit, "
     "kelvin)", "Convert 451 degrees fahrenheit to celsius.", '{"temperature": "451", "scale": "fahrenheit"}'),
)
_WORD_PROBLEMS = (
    "Janet buys 3 boxes of pencils with 12 pencils in each box. She gives a third of them to her brother and "
    "keeps the rest. How many pencils does she keep?",
    "A train leaves at 9:15 and travels 240 kilometres at 80 km/h. At what time does it arrive?",
    "Carlos earns $18.50 an hour and works 37.5 hours a week. After 20% tax, how much does he take home?",
    "A rectangular garden is 14 metres long and 9 metres wide. Fencing costs $7 per metre. What does it cost to "
    "fence the garden?",
    "There are twice as many red marbles as blue marbles in a jar, and 45 marbles in all. How many are blue?",
    "Lena read 1/4 of a 320-page book on Monday and half of the rest on Tuesday. How many pages are left?",
)
_CHATS = (
    ("What is the capital of France? Answer in one word.", "Paris"),
    ("Is a whale a fish or a mammal?", "A whale is a mammal."),
    ("Give the number forty-two in digits.", "42"),
    ("Summarise in five words: the meeting moved from Monday to Thursday afternoon.", "Meeting moved to Thursday afternoon."),
    ("Classify the sentiment of 'I loved the film': positive or negative?", "positive"),
)
CALIBRATION_TEXTS = tuple(
    f"{_SYSTEM}<|im_start|>user\nParameters:\n{params}\nQuestion: {question}<|im_end|>\n"
    f"<|im_start|>assistant\n{answer}<|im_end|>\n"
    for params, question, answer in _EXTRACTIONS
) + tuple(f"<|im_start|>user\n{text}<|im_end|>\n" for text in _WORD_PROBLEMS) + tuple(
    f"<|im_start|>system\nYou are a precise assistant. Answer with the answer only, no explanation.<|im_end|>\n"
    f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n{answer}<|im_end|>\n"
    for question, answer in _CHATS
)


#: Token ids -> their embedding rows, [tokens, hidden].
EmbedFn = Callable[[list[int]], np.ndarray]


def activation_maxima(model_path: Path, embed: EmbedFn, token_batches: Iterable[Sequence[int]],
                      num_layers: int, num_kv_heads: int, head_dim: int) -> dict[tuple[int, str], np.ndarray]:
    """max |x_k| of every linear group's input over the calibration tokens, from a calibration graph."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs() if o.name.endswith(".input")]
    maxima: dict[tuple[int, str], np.ndarray] = {}
    for ids in token_batches:
        feeds = {"inputs_embeds": embed(list(ids))[None], "seqlens_k": np.array([len(ids) - 1], np.int32),
                 "total_sequence_length": np.array(len(ids), np.int32)}
        empty = np.zeros((1, num_kv_heads, 0, head_dim), np.float32)
        for i in range(num_layers):
            feeds[f"past_key_values.{i}.key"] = empty
            feeds[f"past_key_values.{i}.value"] = empty
        for name, value in zip(names, session.run(names, feeds)):
            _, layer, group, _ = name.split(".")
            key = (int(layer), group)
            peak = np.abs(value.reshape(-1, value.shape[-1])).max(axis=0)
            maxima[key] = peak if key not in maxima else np.maximum(maxima[key], peak)
    return maxima


def _weight_maxima(weight: Linear) -> np.ndarray:
    return np.abs(dense(weight)).max(axis=0)


def _scales(x_max: np.ndarray, w_max: np.ndarray, alpha: float) -> np.ndarray:
    s = np.power(np.maximum(x_max, 1e-5), alpha) / np.power(np.maximum(w_max, 1e-5), 1 - alpha)
    return np.clip(s, 1e-2, 1e2).astype(np.float32)


def _scale_rows(weight: Linear, factor: np.ndarray) -> Linear:
    """``weight`` with output row n multiplied by factor[n]: exact for blocks (only their scales change)."""
    if isinstance(weight, np.ndarray):
        return (weight * factor[:, None]).astype(np.float32)
    return BlockQuantized(weight.codes, (weight.scales * factor[:, None]).astype(np.float32), weight.zeros,
                          weight.bits, weight.block)


def smooth(weights: LlamaWeights, maxima: dict[tuple[int, str], np.ndarray], precision: Precision,
           alpha: float = 0.7) -> LlamaWeights:
    """A copy of ``weights`` with SmoothQuant scales for every linear group ``precision`` computes in int8."""
    cfg = weights.config
    out = copy.copy(weights)
    out.layers = []
    group_size = cfg.num_heads // cfg.num_kv_heads
    for i, layer in enumerate(weights.layers):
        layer = copy.copy(layer)
        layer.smoothing = dict(layer.smoothing)
        groups = {g for g in ("qkv", "o", "gate_up", "down") if precision.kind(g, i) in ("int8", "int8-token")}
        if "qkv" in groups:
            w_max = np.maximum.reduce([_weight_maxima(layer.q), _weight_maxima(layer.k), _weight_maxima(layer.v)])
            s = _scales(maxima[(i, "qkv")], w_max, alpha)
            layer.attn_norm = (layer.attn_norm / s).astype(np.float32)
            layer.smoothing["qkv"] = s
        if "gate_up" in groups:
            w_max = np.maximum(_weight_maxima(layer.gate), _weight_maxima(layer.up))
            s = _scales(maxima[(i, "gate_up")], w_max, alpha)
            layer.mlp_norm = (layer.mlp_norm / s).astype(np.float32)
            layer.smoothing["gate_up"] = s
        if "down" in groups:
            s = _scales(maxima[(i, "down")], _weight_maxima(layer.down), alpha)
            layer.up = _scale_rows(layer.up, 1.0 / s)
            layer.smoothing["down"] = s
        if "o" in groups:
            x_max = maxima[(i, "o")].reshape(cfg.num_kv_heads, group_size, cfg.head_dim).max(axis=1)
            w_max = _weight_maxima(layer.o).reshape(cfg.num_kv_heads, group_size, cfg.head_dim).max(axis=1)
            s_kv = _scales(x_max, w_max, alpha)  # [kv_heads, head_dim]
            layer.v = _scale_rows(layer.v, 1.0 / s_kv.reshape(-1))
            layer.smoothing["o"] = np.repeat(s_kv[:, None, :], group_size, axis=1).reshape(-1)
        out.layers.append(layer)
    return out

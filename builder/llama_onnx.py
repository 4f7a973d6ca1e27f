"""Write a Llama model as a compact onnxruntime graph: fused block-quantised matmuls and attention.

The generic exporter's graph (optimum, ``text-generation-with-past``) spends about 40% of a
forward pass on small shape and mask operators, and its int8 dynamic quantisation re-rounds
weights that a GGUF file already holds at 4 bits. This writer emits, per layer, one RMS norm,
one fused QKV ``MatMulNBits``, one ``GroupQueryAttention`` (rotary embedding, KV cache and
causal mask inside one kernel), the output projection, a second norm fused with the residual
add, one fused gate/up ``MatMulNBits``, SiLU and the down projection. Weights come as
``BlockQuantized`` codes, so a GGUF model runs with exactly its own weights.

The graph's contract (what ``edge_runtime/model/lm_engine.py`` feeds and reads):

- inputs: ``inputs_embeds`` [batch, seq, hidden] (the engine looks the embedding up itself),
  ``past_key_values.{i}.key|value`` [batch, kv_heads, past, head_dim], ``seqlens_k`` [batch]
  int32 (tokens so far minus one, per row), ``total_sequence_length`` int32 scalar;
- outputs: ``hidden`` [batch, seq, hidden] after the final norm, ``present.{i}.key|value``.

A second graph, ``head.onnx``, multiplies one hidden state by the output head (8-bit blocks)
for free generation; constrained decoding needs only a few head rows and skips it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from builder.llama_weights import LlamaConfig, LlamaWeights
from builder.quant_blocks import BlockQuantized, Linear, dense, quantize_rtn, stack

OPSET = 21  # blocked QuantizeLinear (a scale per token)
MS = "com.microsoft"


def _rotary_caches(config: LlamaConfig, max_positions: int) -> tuple[np.ndarray, np.ndarray]:
    inv_freq = 1.0 / (config.rope_theta ** (np.arange(0, config.head_dim, 2, dtype=np.float64) / config.head_dim))
    angles = np.outer(np.arange(max_positions, dtype=np.float64), inv_freq)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


class _Graph:
    """A tiny helper over onnx.helper: named initializers and nodes in order."""

    def __init__(self) -> None:
        import onnx.helper  # noqa: F401 - fail early when onnx is missing

        self.nodes: list = []
        self.initializers: list = []
        self._count = 0

    def const(self, name: str, array: np.ndarray) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(self, op: str, inputs: list[str], outputs: int | list[str] = 1, domain: str = "", **attrs: object) -> list[str]:
        from onnx import helper

        self._count += 1
        names = outputs if isinstance(outputs, list) else [f"{op.lower()}_{self._count}_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, names, name=f"{op}_{self._count}", domain=domain, **attrs))
        return names

    def scalar(self, name: str, value: float, dtype: type = np.float32) -> str:
        return self.const(name, np.array(value, dtype=dtype))

    def _per_token_int8(self, x: str, b: str, b_scale: str, name: str, k: int) -> str:
        """int8 matmul with one activation scale per token (symmetric, codes shifted by 128 to uint8): a
        token with outlying values costs only itself its precision. One blocked QuantizeLinear (a block is
        a whole row of ``k`` inputs) and one DequantizeLinear do what took eight elementwise operators before."""
        axes = self.const(f"{name}.axes", np.array([-1], dtype=np.int64))
        peak = self.node("ReduceMax", [self.node("Abs", [x])[0], axes], keepdims=1)[0]
        a_scale = self.node("Max", [self.node("Div", [peak, self.scalar(f"{name}.127", 127.0)])[0],
                                    self.scalar(f"{name}.tiny", 1e-8)])[0]
        # QuantizeLinear wants a zero point shaped like its scale: 128 for every token.
        zero = self.node("Cast", [self.node("Add", [self.node("Mul", [a_scale, self.scalar(f"{name}.0", 0.0)])[0],
                                                    self.scalar(f"{name}.128", 128.0)])[0]], to=2)[0]
        codes = self.node("QuantizeLinear", [x, a_scale, zero], axis=-1, block_size=k)[0]
        acc = self.node("MatMulInteger", [codes, b, self.scalar(f"{name}.zp", 128, np.uint8)])[0]
        y = self.node("DequantizeLinear", [acc, b_scale], axis=-1)[0]
        return self.node("Mul", [y, a_scale])[0]

    def linear(self, x: str, weight: Linear, name: str, kind: str, input_scale: np.ndarray | None = None) -> str:
        """``x @ weight.T`` computed as ``kind`` (see ``LINEAR_KINDS``). ``input_scale`` multiplies the
        weight's input channels (SmoothQuant: the producer of ``x`` already divided them out)."""
        if input_scale is not None and kind not in ("fp32", "int8", "int8-token"):
            raise ValueError(f"{kind} linears take no smoothing scales")
        if kind == "fp32":
            w = dense(weight) if input_scale is None else dense(weight) * input_scale[None, :].astype(np.float32)
            return self.node("MatMul", [x, self.const(f"{name}.W", np.ascontiguousarray(w.T))])[0]
        if kind in ("int8", "int8-token"):
            w = dense(weight)
            if input_scale is not None:
                w = w * input_scale[None, :].astype(np.float32)
            # 7-bit codes: AVX2's u8 x s8 multiply-add (vpmaddubsw) saturates int16 on full-range
            # weights, which made per-channel int8 output garbage (measured: 0% top-1 agreement)
            scale = (np.maximum(np.abs(w).max(axis=1), 1e-12) / 63.0).astype(np.float32)
            codes = np.clip(np.rint(w / scale[:, None]), -63, 63).astype(np.int8)
            b = self.const(f"{name}.B", np.ascontiguousarray(codes.T))
            b_scale = self.const(f"{name}.scales", scale)
            if kind == "int8":
                return self.node("DynamicQuantizeMatMul", [x, b, b_scale], domain=MS)[0]
            return self._per_token_int8(x, b, b_scale, name, k=codes.shape[1])  # a block is a whole row of x
        if kind != "blocks8-int8":
            raise ValueError(f"unknown linear kind {kind!r}; choose one of {LINEAR_KINDS}")
        blocks = weight if isinstance(weight, BlockQuantized) and weight.bits == 8 and weight.integer_zeros \
            else quantize_rtn(dense(weight), bits=8)
        n, k = blocks.shape
        inputs = [
            x,
            self.const(f"{name}.B", blocks.packed()),
            self.const(f"{name}.scales", blocks.scales.reshape(-1).astype(np.float32)),
            self.const(f"{name}.zeros", blocks.packed_zeros()),
        ]
        return self.node(
            "MatMulNBits", inputs, domain=MS, K=k, N=n, bits=8, block_size=blocks.block,
            accuracy_level=4,  # int8 activations per block; accuracy level 0 (fp32) takes 188 ms for SmolLM2's head
        )[0]


#: How a linear layer computes (measured on SmolLM2-135M, 2 AVX2 cores; docs/target-model.md):
#: ``fp32`` — dense fp32 MatMul (the reference); ``int8`` — 7-bit per-channel weights, activations
#: quantised per call (MLAS QGEMM: the fastest for many tokens at once on AVX2); ``blocks8-int8`` —
#: MatMulNBits on 8-bit blocks of 32 (a near-exact copy of 4-bit GGUF weights) with activations
#: rounded to int8 per block of 32: accurate, fast for one token (the head: 1.4 ms), and fast for
#: many where the CPU has int8 dot products (AVX-VNNI, AVX512-VNNI, arm64 dotprod); ``int8-token`` — as
#: ``int8`` with one activation scale per token (for the MLP down projection, whose inputs have the
#: largest outliers: 97.2% instead of 96.2% next-token agreement with fp32 at the same speed).
LINEAR_KINDS = ("fp32", "int8", "int8-token", "blocks8-int8")
#: The four linear groups of a layer, by the name ``Precision`` uses.
LINEARS = ("qkv", "o", "gate_up", "down")


@dataclass(frozen=True)
class Precision:
    """The kind of every linear group: ``default`` unless ``overrides`` names it as ``"{layer}.{group}"``,
    ``"{layer}.*"`` or ``"{group}"`` (first match in that order)."""

    default: str = "fp32"
    overrides: tuple[tuple[str, str], ...] = ()

    def kind(self, linear: str, layer: int | None = None) -> str:
        table = dict(self.overrides)
        keys = ([f"{layer}.{linear}", f"{layer}.*"] if layer is not None else []) + [linear]
        return next((table[k] for k in keys if k in table), self.default)


def build_llama_graphs(weights: LlamaWeights, out_dir: Path, *, precision: Precision = Precision(),
                       max_positions: int | None = None, calibration: bool = False) -> tuple[Path, Path]:
    """Write ``model.onnx`` and ``head.onnx`` into ``out_dir``; returns both paths.

    With ``calibration`` the graph also outputs every linear layer's input
    (``layers.{i}.{linear}.input``), for activation statistics (``builder/smoothing.py``)."""
    import onnx
    from onnx import TensorProto, helper

    cfg = weights.config
    max_positions = max_positions or min(cfg.max_positions, 8192)
    g = _Graph()
    cos, sin = _rotary_caches(cfg, max_positions)
    cos_name, sin_name = g.const("rotary.cos", cos), g.const("rotary.sin", sin)
    mlp_split = g.const("split.mlp", np.array([cfg.intermediate_size, cfg.intermediate_size], dtype=np.int64))

    inputs = [helper.make_tensor_value_info("inputs_embeds", TensorProto.FLOAT, ["batch", "seq", cfg.hidden_size])]
    outputs = [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "seq", cfg.hidden_size])]
    kv_shape = ["batch", cfg.num_kv_heads, "past", cfg.head_dim]
    present_shape = ["batch", cfg.num_kv_heads, "total", cfg.head_dim]
    for i in range(cfg.num_layers):
        for kind in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(f"past_key_values.{i}.{kind}", TensorProto.FLOAT, kv_shape))
            outputs.append(helper.make_tensor_value_info(f"present.{i}.{kind}", TensorProto.FLOAT, present_shape))
    inputs.append(helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, ["batch"]))
    inputs.append(helper.make_tensor_value_info("total_sequence_length", TensorProto.INT32, []))

    residual = "inputs_embeds"
    pending: str | None = None  # the previous block's output, not yet added to the residual stream
    for i, layer in enumerate(weights.layers):
        p = f"layers.{i}"
        norm_w = g.const(f"{p}.attn_norm", layer.attn_norm)
        if pending is None:
            normed = g.node("SimplifiedLayerNormalization", [residual, norm_w], epsilon=cfg.rms_norm_eps, axis=-1)[0]
        else:
            normed, _, _, residual = g.node(
                "SkipSimplifiedLayerNormalization", [pending, residual, norm_w],
                [f"{p}.normed", "", "", f"{p}.residual_attn"], domain=MS, epsilon=cfg.rms_norm_eps,
            )
        def linear(x: str, weight: Linear, group: str) -> str:
            if calibration:
                name = f"{p}.{group}.input"
                g.node("Identity", [x], [name])
                outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
            return g.linear(x, weight, f"{p}.{group}", precision.kind(group, i), layer.smoothing.get(group))

        qkv = linear(normed, stack([layer.q, layer.k, layer.v]), "qkv")
        attn = g.node(  # packed Q/K/V in one input: no Split
            "GroupQueryAttention",
            [qkv, "", "", f"past_key_values.{i}.key", f"past_key_values.{i}.value", "seqlens_k",
             "total_sequence_length", cos_name, sin_name],
            [f"{p}.attn", f"present.{i}.key", f"present.{i}.value"],
            domain=MS, num_heads=cfg.num_heads, kv_num_heads=cfg.num_kv_heads, do_rotary=1, rotary_interleaved=0,
        )[0]
        o = linear(attn, layer.o, "o")
        mlp_w = g.const(f"{p}.mlp_norm", layer.mlp_norm)
        normed, _, _, residual = g.node(
            "SkipSimplifiedLayerNormalization", [o, residual, mlp_w],
            [f"{p}.normed_mlp", "", "", f"{p}.residual_mlp"], domain=MS, epsilon=cfg.rms_norm_eps,
        )
        gate_up = linear(normed, stack([layer.gate, layer.up]), "gate_up")
        gate, up = g.node("Split", [gate_up, mlp_split], 2, axis=-1)
        silu = g.node("Mul", [gate, g.node("Sigmoid", [gate])[0]])[0]
        pending = linear(g.node("Mul", [silu, up])[0], layer.down, "down")
    final_w = g.const("final_norm", weights.final_norm)
    g.node("SkipSimplifiedLayerNormalization", [pending, residual, final_w], ["hidden"], domain=MS,
           epsilon=cfg.rms_norm_eps)

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model = helper.make_model(
        helper.make_graph(g.nodes, "llama", inputs, outputs, g.initializers),
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(MS, 1)],
        producer_name="arc-build",
    )
    model_path = out_dir / "model.onnx"
    large = sum(t.ByteSize() for t in g.initializers) > 1_800_000_000
    onnx.save(model, str(model_path), save_as_external_data=large,
              location="model.onnx.data" if large else None, all_tensors_to_one_file=True)

    h = _Graph()
    n, k = weights.head.shape
    logits = h.linear("hidden", weights.head, "head", "fp32" if precision.default == "fp32" else "blocks8-int8")
    head_model = helper.make_model(
        helper.make_graph(
            h.nodes, "head",
            [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["rows", k])],
            [helper.make_tensor_value_info(logits, TensorProto.FLOAT, ["rows", n])],
            h.initializers,
        ),
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(MS, 1)],
        producer_name="arc-build",
    )
    head_model.graph.output[0].name = logits
    head_path = out_dir / "head.onnx"
    onnx.save(head_model, str(head_path))
    return model_path, head_path

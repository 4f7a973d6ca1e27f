"""The compact Llama graph: exact GGUF weights, equality with transformers, SmoothQuant folding, int8 kernels."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tiny_llama import write_gguf

from builder.llama_onnx import LINEAR_KINDS, Precision, build_llama_graphs
from builder.llama_weights import WeightsError, read_gguf, read_hf_checkpoint
from builder.quant_blocks import BlockQuantized, dense, from_q8_0, quantize_rtn

IDS = [5, 40, 41, 42, 100, 7, 9, 300, 12, 77, 150, 3]


@pytest.fixture(scope="module")
def tiny_gguf(tiny_dir, tmp_path_factory) -> Path:
    return write_gguf(tiny_dir, tmp_path_factory.mktemp("gguf") / "tiny.gguf")


def session(path: Path):
    import onnxruntime as ort

    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def run(sess, table: np.ndarray, ids: list[int], past: list | None = None, past_len: int = 0, layers: int = 2):
    feeds = {"inputs_embeds": table[ids][None].astype(np.float32),
             "seqlens_k": np.array([past_len + len(ids) - 1], np.int32),
             "total_sequence_length": np.array(past_len + len(ids), np.int32)}
    empty = np.zeros((1, 2, 0, 16), np.float32)
    for i in range(layers):
        feeds[f"past_key_values.{i}.key"] = past[2 * i] if past else empty
        feeds[f"past_key_values.{i}.value"] = past[2 * i + 1] if past else empty
    names = ["hidden"] + [f"present.{i}.{k}" for i in range(layers) for k in ("key", "value")]
    out = sess.run(names, feeds)
    return out[0][0], out[1:]


def transformers_hidden(model, ids: list[int]) -> np.ndarray:
    import torch

    with torch.no_grad():
        return model(torch.tensor([ids]), output_hidden_states=True).hidden_states[-1][0].numpy()


# ---- GGUF blocks ------------------------------------------------------------------------------


def test_gguf_weights_are_read_exactly_as_transformers_reads_them(tiny_gguf):
    from transformers import AutoModelForCausalLM

    reference = AutoModelForCausalLM.from_pretrained(tiny_gguf.parent, gguf_file=tiny_gguf.name)
    state = {k: v.detach().numpy() for k, v in reference.state_dict().items()}
    weights = read_gguf(tiny_gguf)
    assert weights.exact and weights.config.num_kv_heads == 2 and weights.config.rope_theta == 100000
    for i, layer in enumerate(weights.layers):
        for ours, theirs in (("q", "self_attn.q_proj"), ("k", "self_attn.k_proj"), ("v", "self_attn.v_proj"),
                             ("o", "self_attn.o_proj"), ("gate", "mlp.gate_proj"), ("up", "mlp.up_proj"),
                             ("down", "mlp.down_proj")):
            block = getattr(layer, ours)
            assert isinstance(block, BlockQuantized) and block.bits == 4
            np.testing.assert_allclose(block.dequantize(), state[f"model.layers.{i}.{theirs}.weight"], atol=1e-6)
        np.testing.assert_array_equal(layer.attn_norm, state[f"model.layers.{i}.input_layernorm.weight"])
    np.testing.assert_array_equal(weights.embedding.dequantize(), state["model.embed_tokens.weight"])
    assert weights.head is weights.embedding  # tied


def test_compact_graph_of_a_gguf_computes_what_transformers_computes(tiny_gguf, tmp_path):
    from transformers import AutoModelForCausalLM

    reference = AutoModelForCausalLM.from_pretrained(tiny_gguf.parent, gguf_file=tiny_gguf.name).eval()
    weights = read_gguf(tiny_gguf)
    model, _ = build_llama_graphs(weights, tmp_path, precision=Precision("fp32"))
    table = weights.embedding.dequantize()
    hidden, _ = run(session(model), table, IDS)
    np.testing.assert_allclose(hidden, transformers_hidden(reference, IDS), rtol=1e-4, atol=1e-4)


def test_broken_gguf_and_other_architectures_are_refused(tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(WeightsError, match="cannot read GGUF"):
        read_gguf(broken)
    import gguf

    writer = gguf.GGUFWriter(str(tmp_path / "gpt2.gguf"), "gpt2")
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.zeros((4, 32), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(WeightsError, match="'gpt2' is not supported"):
        read_gguf(tmp_path / "gpt2.gguf")


# ---- the graph against transformers ------------------------------------------------------------


@pytest.fixture(scope="module")
def reference(tiny_dir):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_dir).eval()


@pytest.fixture(scope="module")
def fp32_graph(tiny_dir, tmp_path_factory):
    weights = read_hf_checkpoint(tiny_dir)
    model, head = build_llama_graphs(weights, tmp_path_factory.mktemp("fp32"), precision=Precision("fp32"))
    return weights, session(model), session(head)


def test_hidden_states_equal_transformers_and_a_cached_prefix_changes_nothing(fp32_graph, reference):
    weights, sess, _ = fp32_graph
    table = dense(weights.embedding)
    expected = transformers_hidden(reference, IDS)
    whole, _ = run(sess, table, IDS)
    np.testing.assert_allclose(whole, expected, rtol=1e-4, atol=1e-4)
    first, past = run(sess, table, IDS[:5])
    rest, _ = run(sess, table, IDS[5:], past, past_len=5)
    np.testing.assert_allclose(np.concatenate([first, rest]), expected, rtol=1e-4, atol=1e-4)


def test_head_graph_gives_the_full_logits(fp32_graph, reference):
    import torch

    weights, sess, head = fp32_graph
    hidden, _ = run(sess, dense(weights.embedding), IDS)
    logits = head.run(None, {"hidden": hidden[-1:]})[0][0]
    with torch.no_grad():
        expected = reference(torch.tensor([IDS])).logits[0, -1].numpy()
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4)


def test_smoothing_scales_leave_the_function_unchanged(fp32_graph, tiny_dir, tmp_path):
    """SmoothQuant divides each int8 linear's input channels out of their producer and multiplies them into
    the weight; computed in fp32, the smoothed model must equal the original."""
    from builder.smoothing import activation_maxima, smooth

    weights, sess, _ = fp32_graph
    table = dense(weights.embedding)
    calibration, _ = build_llama_graphs(weights, tmp_path / "cal", calibration=True)
    maxima = activation_maxima(calibration, lambda ids: table[ids], [IDS, IDS[::-1]], 2, 2, 16)
    assert set(maxima) == {(i, g) for i in range(2) for g in ("qkv", "o", "gate_up", "down")}
    smoothed = smooth(weights, maxima, Precision("int8"), alpha=0.7)
    assert all(set(layer.smoothing) == {"qkv", "o", "gate_up", "down"} for layer in smoothed.layers)
    assert not np.allclose(smoothed.layers[0].attn_norm, weights.layers[0].attn_norm)
    model, _ = build_llama_graphs(smoothed, tmp_path / "smoothed", precision=Precision("fp32"))
    np.testing.assert_allclose(run(session(model), table, IDS)[0], run(sess, table, IDS)[0], rtol=1e-3, atol=1e-3)


# ---- the linear kinds against numpy ------------------------------------------------------------


def single_linear(kind: str, weight, x: np.ndarray, tmp_path: Path) -> np.ndarray:
    from onnx import TensorProto, helper

    from builder.llama_onnx import MS, OPSET, _Graph

    g = _Graph()
    y = g.linear("x", weight, "w", kind)
    n = weight.shape[0]
    model = helper.make_model(
        helper.make_graph(g.nodes, "one", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info(y, TensorProto.FLOAT, [x.shape[0], n])], g.initializers),
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(MS, 1)],
    )
    path = tmp_path / f"{kind}.onnx"
    path.write_bytes(model.SerializeToString())
    return session(path).run(None, {"x": x})[0]


def test_each_linear_kind_computes_the_product(tmp_path):
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((48, 64)) * np.linspace(0.1, 3, 48)[:, None]).astype(np.float32)
    x = rng.standard_normal((6, 64)).astype(np.float32)
    x[2] *= 40  # one token with outlying values
    exact = x @ w.T
    scale = np.abs(w).max(axis=1) / 63
    w7 = np.clip(np.rint(w / scale[:, None]), -63, 63) * scale[:, None]
    # int8: one activation scale for the whole call (uint8, asymmetric)
    low, high = min(x.min(), 0), max(x.max(), 0)
    step = (high - low) / 255
    zero = np.rint(-low / step)
    per_call = (np.clip(np.rint(x / step) + zero, 0, 255) - zero) * step
    np.testing.assert_allclose(single_linear("int8", w, x, tmp_path), per_call @ w7.T, rtol=1e-4, atol=1e-3)
    # int8-token: one symmetric scale per row
    row = np.abs(x).max(axis=1, keepdims=True) / 127
    per_token = np.clip(np.rint(x / row), -128, 127) * row
    np.testing.assert_allclose(single_linear("int8-token", w, x, tmp_path), per_token @ w7.T, rtol=1e-4, atol=1e-3)
    others = [0, 1, 3, 4, 5]  # the outlying token costs the per-call scale every other token's precision
    assert np.abs(per_token @ w7.T - exact)[others].max() < 0.2 * np.abs(per_call @ w7.T - exact)[others].max()
    np.testing.assert_allclose(single_linear("fp32", w, x, tmp_path), exact, rtol=1e-5, atol=1e-4)
    blocks = quantize_rtn(w, bits=8)
    exact_blocks = x @ blocks.dequantize().T
    per_block = single_linear("blocks8-int8", blocks, x, tmp_path)  # activations rounded per block of 32
    assert np.abs(per_block - exact_blocks)[others].max() < 0.02 * np.abs(exact_blocks).max()
    assert set(LINEAR_KINDS) == {"fp32", "int8", "int8-token", "blocks8-int8"}


def test_q8_0_blocks_are_read_exactly(tmp_path):
    """GGUF Q8_0 (the embedding and tied head) becomes 8-bit codes with zero point 128: no rounding of weights."""
    import gguf
    from gguf.quants import quantize

    rng = np.random.default_rng(1)
    w = rng.standard_normal((40, 64)).astype(np.float32)
    raw = quantize(w, gguf.GGMLQuantizationType.Q8_0)
    blocks = from_q8_0(raw, 40, 64)
    np.testing.assert_array_equal(blocks.dequantize(), gguf.quants.dequantize(raw, gguf.GGMLQuantizationType.Q8_0))
    assert blocks.integer_zeros and blocks.bits == 8
    x = rng.standard_normal((3, 64)).astype(np.float32)
    exact = x @ blocks.dequantize().T
    assert np.abs(single_linear("blocks8-int8", blocks, x, tmp_path) - exact).max() < 0.02 * np.abs(exact).max()


def test_rtn_quantisation_error_is_within_half_a_step():
    rng = np.random.default_rng(2)
    w = rng.standard_normal((16, 64)).astype(np.float32)
    for bits in (4, 8):
        q = quantize_rtn(w, bits=bits)
        step = q.scales.repeat(32, axis=1)
        assert np.all(np.abs(q.dequantize() - w) <= step + 1e-6)  # half a step, plus half for the rounded zero
        assert q.integer_zeros and q.codes.max() < 2**bits
    for value in (0.25, -3.0, 0.0):  # constant blocks
        np.testing.assert_allclose(quantize_rtn(np.full((2, 32), value, np.float32), bits=8).dequantize(), value)


def test_hf_checkpoint_reader_refuses_what_it_cannot_write(tmp_path, tiny_dir):
    import shutil

    source = tmp_path / "scaled"
    shutil.copytree(tiny_dir, source)
    config = json.loads((source / "config.json").read_text())
    config["rope_scaling"] = {"rope_type": "llama3", "factor": 8.0}
    (source / "config.json").write_text(json.dumps(config))
    with pytest.raises(WeightsError, match="rope_scaling"):
        read_hf_checkpoint(source)
    (source / "config.json").write_text(json.dumps({**config, "rope_scaling": None, "model_type": "gpt2"}))
    with pytest.raises(WeightsError, match="not supported"):
        read_hf_checkpoint(source)

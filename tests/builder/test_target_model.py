"""build_target_model on a tiny random Llama: artefact layout, manifest, caching, bad inputs, both exports
(the compact graph and optimum's with head surgery)."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import numpy as np
import pytest
from tiny_llama import ROPE_THETA

from builder.target_model import ARTEFACT_VERSION, RECIPES, TargetModelBuildError, build_target_model, sha256_of

COMMON_FILES = {"model.onnx", "manifest.json", "tokenizer.json", "chat_template.jinja"}
ARTEFACT_FILES = {"compact": COMMON_FILES | {"head.onnx", "embedding.npy"}, "optimum": COMMON_FILES | {"lm_head.f16.npy"}}


def independent_dir_sha256(folder: Path) -> str:
    """Names and bytes of every file, sorted by relative path (written here, not imported)."""
    digest = hashlib.sha256()
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(file.relative_to(folder).as_posix().encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()


def manifest_of(artefact: Path) -> dict:
    return json.loads((artefact / "manifest.json").read_text())


def tokenizer_vocab_size(tiny_dir: Path) -> int:
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(tiny_dir / "tokenizer.json")).get_vocab_size()


# ---- artefact and manifest --------------------------------------------------------------------


@pytest.fixture
def artefacts(tiny_fp32, tiny_int8, tiny_optimum_fp32, tiny_optimum_int8) -> dict[str, Path]:
    return {"fp32": tiny_fp32, "int8-smooth": tiny_int8, "optimum-fp32": tiny_optimum_fp32,
            "optimum-int8": tiny_optimum_int8}


@pytest.mark.parametrize("recipe", ["fp32", "int8-smooth", "optimum-fp32", "optimum-int8"])
def test_artefact_files_and_manifest(recipe, tiny_dir, artefacts):
    artefact = artefacts[recipe]
    names = {p.name for p in artefact.iterdir()}
    manifest = manifest_of(artefact)
    assert manifest["graph"] == RECIPES[recipe]["graph"]
    assert ARTEFACT_FILES[manifest["graph"]] <= names, sorted(names)
    assert manifest["artefact_version"] == ARTEFACT_VERSION
    assert manifest["recipe"] == recipe
    assert manifest["recipe_description"] == RECIPES[recipe]["description"]
    assert manifest["source"] == tiny_dir.name
    assert manifest["source_sha256"] == independent_dir_sha256(tiny_dir)
    assert manifest["source_sha256"] == sha256_of(tiny_dir)
    assert manifest["model_sha256"] == hashlib.sha256((artefact / "model.onnx").read_bytes()).hexdigest()
    assert manifest["architecture"] == "llama"
    assert manifest["rope_theta"] == ROPE_THETA == 100000
    assert manifest["vocab_size"] == tokenizer_vocab_size(tiny_dir)
    assert (manifest["hidden_size"], manifest["num_layers"], manifest["num_kv_heads"], manifest["head_dim"]) == (
        64,
        2,
        2,
        16,
    )
    config = json.loads((tiny_dir / "config.json").read_text())
    assert manifest["bos_token_id"] == config["bos_token_id"]
    assert manifest["eos_token_id"] == config["eos_token_id"]
    for library in ("torch", "transformers", "onnx", "onnxruntime", "tokenizers"):
        assert manifest["libraries"].get(library), f"{library} missing from {manifest['libraries']}"
    assert "<|im_start|>" in (artefact / "chat_template.jinja").read_text(encoding="utf-8")
    assert (artefact / "tokenizer.json").read_bytes() == (tiny_dir / "tokenizer.json").read_bytes()


def ops(artefact: Path) -> set[str]:
    import onnx

    return {n.op_type for n in onnx.load(str(artefact / "model.onnx"), load_external_data=False).graph.node}


def test_int8_recipes_quantise_and_fp32_ones_do_not(artefacts):
    assert {"MatMulInteger", "DynamicQuantizeLinear"} <= ops(artefacts["optimum-int8"])
    assert not {"MatMulInteger", "DynamicQuantizeLinear", "DequantizeLinear"} & ops(artefacts["optimum-fp32"])
    # compact int8-smooth: int8 matmuls, the down projection quantised per token (MatMulInteger)
    assert {"DynamicQuantizeMatMul", "MatMulInteger", "GroupQueryAttention"} <= ops(artefacts["int8-smooth"])
    assert "MatMul" not in ops(artefacts["int8-smooth"])
    assert {"MatMul", "GroupQueryAttention"} <= ops(artefacts["fp32"])
    assert not {"DynamicQuantizeMatMul", "MatMulInteger"} & ops(artefacts["fp32"])
    for fp32, int8 in (("fp32", "int8-smooth"), ("optimum-fp32", "optimum-int8")):
        assert (artefacts[int8] / "model.onnx").stat().st_size < (artefacts[fp32] / "model.onnx").stat().st_size
    smoothing = manifest_of(artefacts["int8-smooth"])["smoothing"]
    assert smoothing["alpha"] == RECIPES["int8-smooth"]["smoothing_alpha"] and smoothing["calibration_texts"] > 10


# ---- content-hash cache -----------------------------------------------------------------------


def test_second_build_reuses_the_cached_artefact(tiny_base, tiny_dir, tiny_fp32):
    messages: list[str] = []
    stamp = (tiny_fp32 / "model.onnx").stat().st_mtime_ns
    started = time.perf_counter()
    again = build_target_model(
        source=tiny_dir, cache_dir=tiny_base / "target-models", recipe="fp32", progress=messages.append
    )
    seconds = time.perf_counter() - started
    assert again == tiny_fp32
    assert any("reusing" in m for m in messages), messages
    assert not any("exporting" in m for m in messages), messages
    assert seconds < 5, f"reusing the cached artefact took {seconds:.2f}s"
    assert (tiny_fp32 / "model.onnx").stat().st_mtime_ns == stamp


@pytest.mark.parametrize("recipe", ["fp32", "int8-smooth"])
def test_re_exporting_the_same_model_gives_the_same_bytes(tiny_base, tiny_dir, artefacts, recipe):
    """A rebuilt artefact keeps every blob hash, so bundles made against the first build still load."""
    before = {p.name: sha256_of(p) for p in artefacts[recipe].iterdir() if p.is_file()}
    again = build_target_model(source=tiny_dir, cache_dir=tiny_base / "target-models", recipe=recipe,
                               progress=lambda _: None, force=True)
    after = {p.name: sha256_of(p) for p in again.iterdir() if p.is_file()}
    assert again == artefacts[recipe]
    assert after == before


def test_different_recipe_gives_a_different_directory(artefacts):
    folders = set(artefacts.values())
    assert len(folders) == len(artefacts)
    assert len({f.parent for f in folders}) == 1
    assert len({manifest_of(f)["source_sha256"] for f in folders}) == 1


# ---- bad inputs -------------------------------------------------------------------------------


def build_error(source: Path, tmp_path: Path, recipe: str = "fp32") -> str:
    with pytest.raises(TargetModelBuildError) as info:
        build_target_model(source=source, cache_dir=tmp_path / "cache", recipe=recipe, progress=lambda _m: None)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())
    return str(info.value)


def test_missing_path(tmp_path):
    message = build_error(tmp_path / "no-such-model", tmp_path)
    assert "does not exist" in message and "no-such-model" in message


def test_text_file_is_refused(tmp_path):
    source = tmp_path / "weights.txt"
    source.write_text("not a model")
    message = build_error(source, tmp_path)
    assert "weights.txt" in message and "neither" in message and ".gguf" in message


def test_gguf_name_without_the_magic(tmp_path):
    source = tmp_path / "x.gguf"
    source.write_bytes(b"PK\x03\x04 this is a zip, not a GGUF file")
    message = build_error(source, tmp_path)
    assert "x.gguf" in message and "not a GGUF file" in message and "magic" in message


def test_gguf_magic_followed_by_garbage(tmp_path):
    source = tmp_path / "broken.gguf"
    source.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + bytes(range(256)) * 4)
    message = build_error(source, tmp_path)
    assert "cannot read GGUF" in message and "broken.gguf" in message


def test_unknown_recipe(tiny_dir, tmp_path):
    message = build_error(tiny_dir, tmp_path, recipe="int4")
    assert "unknown recipe" in message and "int4" in message and "fp32" in message


def test_unsupported_architecture(tmp_path):
    from transformers import GPT2Config, GPT2LMHeadModel

    source = tmp_path / "tiny-gpt2"
    config = GPT2Config(n_embd=16, n_layer=1, n_head=2, vocab_size=64, n_positions=32)
    GPT2LMHeadModel(config).save_pretrained(source)
    message = build_error(source, tmp_path)
    assert "'gpt2'" in message and "not supported" in message and "llama" in message


def test_rope_theta_disagreement_is_refused(tmp_path, tiny_dir):
    """A transformers-5 style config whose rope_parameters disagree with rope_theta would export wrong RoPE."""
    import shutil

    source = tmp_path / "rope-mismatch"
    shutil.copytree(tiny_dir, source)
    config = json.loads((source / "config.json").read_text())
    config["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0}
    (source / "config.json").write_text(json.dumps(config))
    from transformers import AutoConfig

    if getattr(AutoConfig.from_pretrained(source), "rope_parameters", None) is None:
        pytest.skip("this transformers version drops unknown rope_parameters from the config")
    message = build_error(source, tmp_path)
    assert "rope_theta" in message


def test_directory_without_config_json(tmp_path):
    source = tmp_path / "nothing-here"
    source.mkdir()
    (source / "README.md").write_text("no checkpoint in this folder")
    message = build_error(source, tmp_path)
    assert "config.json" in message


# ---- optimum export: head surgery ---------------------------------------------------------------


@pytest.mark.parametrize("recipe", ["optimum-fp32", "optimum-int8"])
def test_graph_outputs_after_surgery(recipe, artefacts):
    import onnx

    artefact = artefacts[recipe]
    graph = onnx.load(str(artefact / "model.onnx")).graph
    outputs = {o.name: o for o in graph.output}
    assert "logits" in outputs and "hidden" in outputs
    logits_dims = outputs["logits"].type.tensor_type.shape.dim
    assert len(logits_dims) == 3
    assert logits_dims[1].dim_value == 1 and not logits_dims[1].dim_param
    assert logits_dims[2].dim_value == manifest_of(artefact)["vocab_size"]
    hidden_dims = outputs["hidden"].type.tensor_type.shape.dim
    assert [d.dim_param for d in hidden_dims[:2]] == ["batch_size", "sequence_length"]
    assert hidden_dims[2].dim_value == 64
    assert {f"present.{i}.{kind}" for i in range(2) for kind in ("key", "value")} <= set(outputs)
    # The head has its own weight: no Transpose of the embedding feeds the head MatMul any more.
    assert any(n.name == "arc/last_position" and n.op_type == "Slice" for n in graph.node)


def test_logits_are_last_position_only_and_hidden_every_position(tiny_optimum_fp32):
    import onnxruntime as ort

    tiny_fp32 = tiny_optimum_fp32
    session = ort.InferenceSession(str(tiny_fp32 / "model.onnx"), providers=["CPUExecutionProvider"])
    manifest = manifest_of(tiny_fp32)
    ids = np.array([[5, 40, 41, 42, 100, 7, 9]], dtype=np.int64)
    feeds = {
        "input_ids": ids,
        "attention_mask": np.ones_like(ids),
        "position_ids": np.arange(ids.shape[1], dtype=np.int64)[None],
    }
    empty = np.zeros((1, manifest["num_kv_heads"], 0, manifest["head_dim"]), dtype=np.float32)
    for i in range(manifest["num_layers"]):
        feeds[f"past_key_values.{i}.key"] = empty
        feeds[f"past_key_values.{i}.value"] = empty
    logits, hidden = session.run(["logits", "hidden"], feeds)
    assert logits.shape == (1, 1, manifest["vocab_size"])
    assert hidden.shape == (1, ids.shape[1], manifest["hidden_size"])
    head = np.load(tiny_fp32 / "lm_head.f16.npy").astype(np.float32)
    np.testing.assert_allclose(logits[0, 0], head @ hidden[0, -1], rtol=1e-2, atol=1e-2)


def test_head_weight_is_the_tied_embedding(tiny_dir, tiny_optimum_fp32, tiny_optimum_int8):
    from safetensors.numpy import load_file

    weights = load_file(str(tiny_dir / "model.safetensors"))
    embedding = weights["model.embed_tokens.weight"]
    for artefact in (tiny_optimum_fp32, tiny_optimum_int8):
        head = np.load(artefact / "lm_head.f16.npy")
        assert head.dtype == np.float16
        assert head.shape == embedding.shape == (manifest_of(artefact)["vocab_size"], 64)
        np.testing.assert_allclose(head.astype(np.float32), embedding, rtol=1e-3, atol=1e-4)


# ---- compact export -----------------------------------------------------------------------------


def test_compact_embedding_table_is_the_checkpoints(tiny_dir, tiny_fp32, tiny_int8):
    from safetensors.numpy import load_file

    embedding = load_file(str(tiny_dir / "model.safetensors"))["model.embed_tokens.weight"]
    np.testing.assert_array_equal(np.load(tiny_fp32 / "embedding.npy"), embedding)  # fp32 recipe: exact
    table = np.load(tiny_int8 / "embedding.npy")
    assert table.dtype == np.float16
    np.testing.assert_allclose(table.astype(np.float32), embedding, rtol=1e-3, atol=1e-4)
    assert not (tiny_fp32 / "lm_head.npy").exists()  # tied: the runtime multiplies by the embedding


def test_compact_recipe_refuses_an_architecture_it_does_not_write(tmp_path, tiny_dir):
    import shutil

    source = tmp_path / "as-qwen2"
    shutil.copytree(tiny_dir, source)
    config = json.loads((source / "config.json").read_text())
    config["model_type"] = "qwen2"
    config["architectures"] = ["Qwen2ForCausalLM"]
    (source / "config.json").write_text(json.dumps(config))
    message = build_error(source, tmp_path, recipe="int8-smooth")
    assert "qwen2" in message and "optimum-" in message

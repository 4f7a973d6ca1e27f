"""LoRA tuning on a tiny random Llama: the torch model equals the checkpoint, checkpoints resume exactly,
and the exported artefact names its prompt and tuning; the device reads it with the short prompt."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from builder.finetune_train import TrainConfig, batch_order, torch_llama, train_lora
from builder.llama_weights import read_hf_checkpoint

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tiny_llama import session_base, tiny_llama_dir  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ROWS = [([1, 5, 9, 14, 20, 33], [40, 41, 42]), ([3, 4, 5], [7, 8]), ([11, 12, 13, 14], [50, 51, 52, 53]),
        ([2, 2, 60], [61]), ([70, 71], [72, 73, 74])]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return tiny_llama_dir(session_base(tmp_path_factory))


def test_torch_model_equals_the_checkpoint(checkpoint) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    ours = torch_llama(read_hf_checkpoint(checkpoint)).eval()
    theirs = AutoModelForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float32).eval()
    ids = torch.tensor([[1, 5, 9, 14, 20, 33, 40]])
    with torch.no_grad():
        assert torch.allclose(ours(input_ids=ids).logits, theirs(input_ids=ids).logits, atol=1e-5)


def test_batches_depend_on_the_step_alone() -> None:
    assert batch_order(10, 4, 1, 0) == batch_order(10, 4, 1, 0)
    epoch = [i for s in range(2) for i in batch_order(10, 4, s, 0)]
    assert len(set(epoch)) == 8


def _adapters(model) -> dict:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_checkpoint_and_resume_give_the_uninterrupted_run(checkpoint, tmp_path) -> None:
    import torch

    weights = read_hf_checkpoint(checkpoint)
    config = TrainConfig(steps=4, batch_size=2, learning_rate=1e-2, warmup=1, lora_rank=4, lora_alpha=8,
                         checkpoint_every=2)
    whole, record = train_lora(torch_llama(weights), ROWS, config, tmp_path / "a", pad_id=0, data_digest="d",
                               show_bar=False)
    assert record["steps"] == 4 and len(json.loads((tmp_path / "a" / "losses.json").read_text())) == 4
    # Interrupted after step 2 (checkpointed every 2 steps), then resumed: the same adapters as the whole run.
    _, partial = train_lora(torch_llama(weights), ROWS, config, tmp_path / "b", pad_id=0, data_digest="d",
                            show_bar=False, stop_after=2)
    assert partial["steps"] == 2 and torch.load(tmp_path / "b" / "latest.pt", weights_only=False)["step"] == 2
    resumed, _ = train_lora(torch_llama(weights), ROWS, config, tmp_path / "b", pad_id=0, data_digest="d",
                            resume=True, show_bar=False)
    a, b = _adapters(whole), _adapters(resumed)
    assert a.keys() == b.keys()
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)
    base = torch_llama(weights).state_dict()
    assert not torch.allclose(a["model.layers.0.self_attn.q_proj.weight"], base["model.layers.0.self_attn.q_proj.weight"])
    with pytest.raises(ValueError, match="other data"):
        train_lora(torch_llama(weights), ROWS, config, tmp_path / "b", pad_id=0, data_digest="other", resume=True,
                   show_bar=False)


def test_tuned_artefact_manifest_and_short_prompt(checkpoint, tmp_path) -> None:
    from builder.finetune import find_tuned, finetune
    from edge_runtime.model.lm_engine import LMEngine
    from edge_runtime.read.extractor import Extractor
    from edge_runtime.read.prompt_variants import short_prompt_parts

    artefact = finetune([REPO / "bundles" / "examples"], base=checkpoint, out=tmp_path / "models",
                        work=tmp_path / "work", steps=2, batch_size=2, show_bar=False, build_dir=tmp_path,
                        progress=lambda m: None)
    manifest = json.loads((artefact / "manifest.json").read_text())
    tuning = manifest["tuning"]
    assert manifest["prompt"] == "short" and manifest["recipe"] == "int8-smooth" and "smoothing" in manifest
    assert tuning["steps"] == 2 and tuning["base_model"] == checkpoint.name and len(tuning["data_digest"]) == 16
    assert tuning["examples"] > 100 and tuning["tokens"] > tuning["examples"] and tuning["held_out_entries"]
    assert set(tuning["metrics"]) >= {"train_answer_tokens", "held_out_answer_tokens", "loss_first_last"}
    assert find_tuned(tmp_path / "models", tuning["data_digest"], 2) == artefact
    assert find_tuned(tmp_path / "models", tuning["data_digest"], 3) is None
    # Other adapters are another run: LoRA on every block (layers None) is not this run's last 15.
    assert find_tuned(tmp_path / "models", tuning["data_digest"], 2, lora={"layers": 15, "learning_rate": 1e-3}) == artefact
    assert find_tuned(tmp_path / "models", tuning["data_digest"], 2, lora={"layers": None}) is None
    engine = LMEngine(artefact, threads=1)
    assert Extractor(engine).prompt_parts is short_prompt_parts
    hidden = engine.forward(engine.encode("<|im_start|>user\nQuestion: 3 mol"), engine.empty_state()).hidden
    assert np.isfinite(hidden).all()


def test_a_shorter_run_lengthened_goes_on_with_the_longer_schedule(checkpoint, tmp_path) -> None:
    import dataclasses

    import torch

    from builder.finetune_train import learning_rate_factor

    weights = read_hf_checkpoint(checkpoint)
    short = TrainConfig(steps=2, batch_size=2, learning_rate=1e-2, warmup=1, lora_rank=4, lora_alpha=8,
                        checkpoint_every=1)
    long = dataclasses.replace(short, steps=6)
    train_lora(torch_llama(weights), ROWS, short, tmp_path / "short", pad_id=0, data_digest="d",
               show_bar=False)
    earlier = torch.load(tmp_path / "short" / "latest.pt", weights_only=False)
    _, record = train_lora(torch_llama(weights), ROWS, long, tmp_path / "long", pad_id=0, data_digest="d",
                           show_bar=False, continue_from=tmp_path / "short" / "latest.pt", stop_after=3)
    saved = torch.load(tmp_path / "long" / "latest.pt", weights_only=False)
    # Two steps carried over, one more taken; the losses of the first two are the shorter run's.
    assert record["steps"] == 3 and saved["losses"][:2] == earlier["losses"] and record["continued_from_step"] == 2
    # The learning rate after step 3 is the 6-step schedule's (the 2-step one is at its 10% floor by then).
    assert saved["optimiser"]["param_groups"][0]["lr"] == pytest.approx(1e-2 * learning_rate_factor(long, 3))
    assert learning_rate_factor(long, 3) > learning_rate_factor(short, 3)
    changed = [k for k, v in saved["adapters"].items() if not torch.allclose(v, earlier["adapters"][k])]
    assert changed
    # Resumed, the lengthened run keeps saying where it came from.
    _, resumed = train_lora(torch_llama(weights), ROWS, long, tmp_path / "long", pad_id=0, data_digest="d",
                            show_bar=False, resume=True, continue_from=tmp_path / "short" / "latest.pt")
    assert resumed["steps"] == 6 and resumed["continued_from_step"] == 2
    with pytest.raises(ValueError, match="other data or settings"):
        train_lora(torch_llama(weights), ROWS, dataclasses.replace(long, lora_rank=8), tmp_path / "other",
                   pad_id=0, data_digest="d", show_bar=False, continue_from=tmp_path / "short" / "latest.pt")
    with pytest.raises(ValueError, match="past this run"):
        train_lora(torch_llama(weights), ROWS, dataclasses.replace(short, steps=1), tmp_path / "other", pad_id=0,
                   data_digest="d", show_bar=False, continue_from=tmp_path / "short" / "latest.pt")

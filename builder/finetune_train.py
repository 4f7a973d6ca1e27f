"""LoRA training of the target model on CPU (or an accelerator when torch sees one), with checkpoints.

The base weights are read as ``builder/llama_weights.py`` reads them for the export (a GGUF file's
own blocks de-quantised to floats, or a Hugging Face checkpoint's floats) and put into a
transformers ``LlamaForCausalLM``; peft adds LoRA adapters to every linear layer of every block.
The loss is the cross-entropy of the answer tokens only (the prompt is context). The batch order is
a function of the seed and the step, so a run resumed from a checkpoint (``--resume``) sees exactly
the batches the uninterrupted run would have. At the end the adapters are merged into the weights.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder.llama_weights import LlamaWeights
from builder.quant_blocks import dense

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 60
    batch_size: int = 8
    learning_rate: float = 5e-4
    warmup: int = 5
    lora_rank: int = 16
    lora_alpha: int = 32
    seed: int = 0
    checkpoint_every: int = 10
    #: LoRA on the last N blocks only (None: all). The frozen blocks below need no backward pass: with half of
    #: SmolLM2's 30 blocks a step costs about a third less.
    lora_layers: int | None = None


def torch_llama(weights: LlamaWeights) -> Any:
    """A float32 transformers Llama holding exactly ``weights`` (Q/K rows already in Hugging Face order)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = weights.config
    eos = cfg.eos_token_id[0] if isinstance(cfg.eos_token_id, list) else cfg.eos_token_id
    config = LlamaConfig(
        hidden_size=cfg.hidden_size, intermediate_size=cfg.intermediate_size, num_hidden_layers=cfg.num_layers,
        num_attention_heads=cfg.num_heads, num_key_value_heads=cfg.num_kv_heads, head_dim=cfg.head_dim,
        vocab_size=cfg.vocab_size, rms_norm_eps=cfg.rms_norm_eps, rope_theta=cfg.rope_theta,
        max_position_embeddings=cfg.max_positions, tie_word_embeddings=cfg.tie_word_embeddings,
        bos_token_id=cfg.bos_token_id, eos_token_id=eos, torch_dtype="float32",
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)  # random init, every weight overwritten below
    state = {"model.embed_tokens.weight": dense(weights.embedding), "model.norm.weight": weights.final_norm}
    if not cfg.tie_word_embeddings:
        state["lm_head.weight"] = dense(weights.head)
    names = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj", "o": "self_attn.o_proj",
             "gate": "mlp.gate_proj", "up": "mlp.up_proj", "down": "mlp.down_proj"}
    for i, layer in enumerate(weights.layers):
        p = f"model.layers.{i}."
        for field, name in names.items():
            state[p + name + ".weight"] = dense(getattr(layer, field))
        state[p + "input_layernorm.weight"] = layer.attn_norm
        state[p + "post_attention_layernorm.weight"] = layer.mlp_norm
    tensors = {k: torch.from_numpy(v.astype("float32", copy=False).copy()) for k, v in state.items()}
    result = model.load_state_dict(tensors, strict=False)
    missing = [n for n in result.missing_keys if not (cfg.tie_word_embeddings and n == "lm_head.weight")]
    if missing or result.unexpected_keys:
        raise ValueError(f"weights do not fit the model: missing {missing[:3]}, unexpected {result.unexpected_keys[:3]}")
    if cfg.tie_word_embeddings:
        model.tie_weights()
    return model.float()


def batch_order(rows: int, batch_size: int, step: int, seed: int) -> list[int]:
    """The row indices of ``step``'s batch: epochs of a seeded permutation, a function of the step alone."""
    per_epoch = max(1, rows // batch_size)
    epoch, index = divmod(step, per_epoch)
    order = list(range(rows))
    random.Random(f"{seed}:{epoch}").shuffle(order)
    return order[index * batch_size:(index + 1) * batch_size]


def collate(rows: Sequence[tuple[list[int], list[int]]], pad_id: int) -> tuple[Any, Any, Any, Any]:
    """(input ids, attention mask, position ids, labels of the last K-1 positions), left-padded.

    Left padding puts every row's answer at the end, so the head runs only over the last K positions
    (K = the longest answer + 1): the vocabulary projection of every prompt token, ~20% of a step, is skipped.
    Positions count from each row's first real token, as on the device."""
    import torch

    width = max(len(p) + len(t) for p, t in rows)
    keep = max(len(t) for _, t in rows) + 1
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    labels = torch.full((len(rows), keep - 1), -100, dtype=torch.long)
    for i, (prompt, target) in enumerate(rows):
        seq = prompt + target
        ids[i, width - len(seq):] = torch.tensor(seq)
        mask[i, width - len(seq):] = 1
        labels[i, keep - 1 - len(target):] = torch.tensor(target)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    return ids, mask, positions, labels


def answer_loss(model: Any, batch: tuple[Any, Any, Any, Any]) -> tuple[Any, Any]:
    """(mean cross-entropy of the answer tokens, the logits that predict them [B, K-1, vocab])."""
    import torch

    ids, mask, positions, labels = batch
    keep = labels.shape[1] + 1
    logits = model(input_ids=ids, attention_mask=mask, position_ids=positions, logits_to_keep=keep).logits[:, :-1]
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1),
                                             ignore_index=-100)
    return loss, logits


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def answer_accuracy(model: Any, rows: Sequence[tuple[list[int], list[int]]], pad_id: int, batch_size: int = 8) -> dict:
    """Mean answer-token loss and the share of answer tokens the model ranks first (teacher forcing)."""
    import torch

    model.eval()
    total = correct = 0
    loss_sum = 0.0
    device = next(model.parameters()).device
    with torch.no_grad():
        for start in range(0, len(rows), batch_size):
            batch = tuple(t.to(device) for t in collate(rows[start:start + batch_size], pad_id))
            _, logits = answer_loss(model, batch)
            target = batch[3]
            keep = target != -100
            loss_sum += torch.nn.functional.cross_entropy(logits[keep].float(), target[keep], reduction="sum").item()
            correct += (logits.argmax(-1)[keep] == target[keep]).sum().item()
            total += int(keep.sum())
    model.train()
    return {"loss": round(loss_sum / max(1, total), 4), "token_accuracy": round(correct / max(1, total), 4),
            "tokens": total}


def learning_rate_factor(config: TrainConfig, step: int) -> float:
    """The share of ``config.learning_rate`` at ``step``: linear warm-up, then linear decay to a floor of 10%."""
    return min(1.0, (step + 1) / max(1, config.warmup)) * max(0.1, 1 - step / max(1, config.steps))


def _same_settings(saved: dict, config: TrainConfig, *, but_steps: bool) -> bool:
    mine = dict(config.__dict__)
    theirs = dict(saved)
    if but_steps:
        mine.pop("steps"), theirs.pop("steps", None)
    return mine == theirs


def train_lora(
    model: Any, rows: Sequence[tuple[list[int], list[int]]], config: TrainConfig, checkpoints: Path, *,
    pad_id: int, data_digest: str, resume: bool = False, progress: Callable[[str], None] = print,
    show_bar: bool = True, stop_after: int | None = None, continue_from: Path | None = None,
) -> tuple[Any, dict]:
    """Train LoRA adapters for ``config.steps`` steps; returns (merged model, record of the run).
    ``stop_after``: end (checkpointed) after that many steps of the run, as an interruption would; ``resume`` goes on.

    ``continue_from``: the last checkpoint of a *shorter* run on the same data with the same settings (a run of
    200 steps, lengthened to an epoch): its adapters, optimiser moments and losses carry over and this run goes on
    from its step with its own schedule. The rows seen are exactly the longer run's (the batches are a function of
    the step); the learning rates of the first part were the shorter run's (decayed sooner), so the result is
    close to, not equal to, the uninterrupted run. A ``resume`` checkpoint of this run takes precedence."""
    import torch
    from peft import LoraConfig, get_peft_model, get_peft_model_state_dict, set_peft_model_state_dict
    from tqdm import tqdm

    if not rows:
        raise ValueError("no training rows")
    torch.manual_seed(config.seed)
    device = _device()
    layers = model.config.num_hidden_layers
    top = None if config.lora_layers is None else list(range(max(0, layers - config.lora_layers), layers))
    lora = LoraConfig(r=config.lora_rank, lora_alpha=config.lora_alpha, lora_dropout=0.0,
                      target_modules=list(LORA_TARGETS), bias="none", task_type="CAUSAL_LM", layers_to_transform=top)
    model = get_peft_model(model, lora).to(device)
    model.train()
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(trainable, lr=config.learning_rate, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda s: learning_rate_factor(config, s))
    checkpoints.mkdir(parents=True, exist_ok=True)
    start, losses, seconds, continued = 0, [], 0.0, None
    latest = checkpoints / "latest.pt"
    if continue_from is not None and not (resume and latest.exists()):
        saved = torch.load(continue_from, map_location=device, weights_only=False)
        if saved["data_digest"] != data_digest or not _same_settings(saved["config"], config, but_steps=True):
            raise ValueError(f"{continue_from} was written for other data or settings than this run's")
        if saved["step"] > config.steps:
            raise ValueError(f"{continue_from} is at step {saved['step']}, past this run's {config.steps} steps")
        set_peft_model_state_dict(model, saved["adapters"])
        optimiser.load_state_dict(saved["optimiser"])
        torch.set_rng_state(saved["rng"])
        start, losses, seconds, continued = saved["step"], saved["losses"], saved["seconds"], saved["step"]
        schedule.last_epoch = start  # this run's schedule from the step reached, not the shorter run's
        for group, base in zip(optimiser.param_groups, schedule.base_lrs):
            group["lr"] = base * learning_rate_factor(config, start)
        progress(f"continuing from step {start} of a {saved['config']['steps']}-step run ({continue_from})")
    elif resume and latest.exists():
        saved = torch.load(latest, map_location=device, weights_only=False)
        if saved["data_digest"] != data_digest or not _same_settings(saved["config"], config, but_steps=False):
            raise ValueError(f"{latest} was written for other data or settings; remove it or drop --resume")
        set_peft_model_state_dict(model, saved["adapters"])
        optimiser.load_state_dict(saved["optimiser"])
        schedule.load_state_dict(saved["schedule"])
        torch.set_rng_state(saved["rng"])
        start, losses, seconds = saved["step"], saved["losses"], saved["seconds"]
        continued = saved.get("continued_from")
        progress(f"resuming from step {start} ({latest})")
    bar = tqdm(total=config.steps, initial=start, desc="finetune", unit="step", disable=not show_bar)
    tokens = 0
    for step in range(start, config.steps):
        began = time.perf_counter()
        batch = [rows[i] for i in batch_order(len(rows), config.batch_size, step, config.seed)]
        tensors = tuple(t.to(device) for t in collate(batch, pad_id))
        loss, _ = answer_loss(model, tensors)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        optimiser.step()
        schedule.step()
        optimiser.zero_grad(set_to_none=True)
        losses.append(round(float(loss.item()), 4))
        tokens += int(tensors[1].sum())
        seconds += time.perf_counter() - began
        bar.set_postfix(loss=f"{losses[-1]:.3f}")
        bar.update(1)
        if (step + 1) % config.checkpoint_every == 0 or step + 1 == config.steps:
            torch.save({"step": step + 1, "adapters": get_peft_model_state_dict(model),
                        "optimiser": optimiser.state_dict(), "schedule": schedule.state_dict(),
                        "rng": torch.get_rng_state(), "losses": losses, "seconds": seconds,
                        "data_digest": data_digest, "config": config.__dict__, "continued_from": continued},
                       checkpoints / "latest.tmp")
            (checkpoints / "latest.tmp").replace(latest)
        if stop_after is not None and step + 1 >= stop_after:
            break
    bar.close()
    merged = model.merge_and_unload()
    record = {"steps": len(losses), "train_seconds": round(seconds, 1), "losses_first_last":
              [losses[0], losses[-1]] if losses else [],
        "loss_mean_last_10": round(sum(losses[-10:]) / max(1, len(losses[-10:])), 4),
              "config": config.__dict__, "device": device, "continued_from_step": continued}
    (checkpoints / "losses.json").write_text(json.dumps(losses))
    return merged.cpu(), record

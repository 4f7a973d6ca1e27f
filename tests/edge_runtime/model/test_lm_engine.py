"""LMEngine on the tiny random Llama artefacts: greedy == optimum's ORTModelForCausalLM, KV-prefix reuse,
the prefix LRU, the sparse fp16 head, constrained greedy, and an edge process without torch."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from tiny_llama import chatml

from edge_runtime.errors import TargetModelError
from edge_runtime.model.lm_engine import LMEngine
from edge_runtime.model.onnx_target_lm import OnnxTargetLM

REPO = Path(__file__).resolve().parents[3]

PROMPTS = [
    "The capital of France is",
    chatml("Convert 12 celsius into fahrenheit"),
    chatml("What is the pressure, in kPa, of 2 mol of an ideal gas?", system="You are a precise assistant."),
    '{"moles": "2", "temperature": "',
    "What is the pressure, in kPa, of 7 mol",
    "Ship twelve boxes of 3 1/2 litres by sea.",
]


@pytest.fixture(scope="module")
def engine(tiny_fp32) -> LMEngine:
    return LMEngine(tiny_fp32)


@pytest.fixture(scope="module")
def optimum_model(tiny_dir, tmp_path_factory):
    """The same checkpoint exported by optimum alone (no surgery), loaded with its own runtime class."""
    from optimum.exporters.onnx import main_export
    from optimum.onnxruntime import ORTModelForCausalLM

    out = tmp_path_factory.mktemp("optimum-export")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        main_export(str(tiny_dir), output=str(out), task="text-generation-with-past", device="cpu")
        return ORTModelForCausalLM.from_pretrained(out, use_cache=True)


# ---- equality with optimum ----------------------------------------------------------------------


@pytest.mark.parametrize("prompt", PROMPTS, ids=range(len(PROMPTS)))
def test_greedy_equals_optimum_generate(engine, optimum_model, prompt):
    import torch

    ids = engine.encode(prompt)
    with torch.no_grad():
        generated = optimum_model.generate(
            torch.tensor([ids]),
            attention_mask=torch.ones(1, len(ids), dtype=torch.long),
            max_new_tokens=20,
            do_sample=False,
            eos_token_id=engine.eos_id,
            pad_token_id=engine.eos_id,
        )
    reference = generated[0, len(ids) :].tolist()
    ours = engine.greedy(ids, max_new_tokens=20)
    if reference and reference[-1] == engine.eos_id:
        reference = reference[:-1]  # generate() keeps the eos it stopped on; greedy() drops it
    else:
        assert len(ours) == 20
    assert ours == reference, (engine.decode(ours), engine.decode(reference))


def test_the_equality_is_not_trivial(engine):
    """The tiny model must not be degenerate (a random tied model at the default init repeats its input)."""
    outputs = [tuple(engine.greedy(engine.encode(p), max_new_tokens=20)) for p in PROMPTS]
    assert len(set(outputs)) == len(outputs)
    assert max(len(set(o)) for o in outputs) > 5


# ---- prefix state reuse ---------------------------------------------------------------------------


def test_prefix_state_continuation_equals_one_pass(engine):
    prefix = engine.encode("<|im_start|>system\nYou copy parameter values out of a question.<|im_end|>\n")
    suffix = engine.encode(chatml("Ship 7 boxes by air."))
    state = engine.prefix_state(prefix)
    assert state.length == len(prefix)
    assert engine.greedy(prefix + suffix, max_new_tokens=20) == engine.greedy(suffix, state=state, max_new_tokens=20)
    whole = engine.forward(prefix + suffix, want_logits=True)
    continued = engine.forward(suffix, state, want_logits=True)
    np.testing.assert_allclose(continued.hidden, whole.hidden[len(prefix) :], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(continued.logits, whole.logits, rtol=1e-4, atol=1e-4)
    assert continued.state.length == whole.state.length == len(prefix) + len(suffix)
    for a, b in zip(continued.state.keys + continued.state.values, whole.state.keys + whole.state.values):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_a_pass_that_drops_its_state_reads_the_same_hidden_states(engine):
    """A verifying pass needs hidden states only; it must not hold (or build) a new KV state."""
    prefix = engine.encode("<|im_start|>system\nYou copy parameter values out of a question.<|im_end|>\n")
    suffix = engine.encode(chatml("Ship 7 boxes by air."))
    state = engine.prefix_state(prefix)
    kept = engine.forward(suffix, state)
    dropped = engine.forward(suffix, state, keep_state=False)
    np.testing.assert_array_equal(dropped.hidden, kept.hidden)
    assert dropped.state is state and kept.state.length == state.length + len(suffix)


def test_prefix_cache_hit_returns_the_identical_state(tiny_fp32):
    engine = LMEngine(tiny_fp32)
    prefix = engine.encode("What is the pressure, in kPa, of")
    first = engine.prefix_state(prefix)
    assert engine.prefix_state(list(prefix)) is first
    assert engine.prefix_cache_entries == 1
    assert engine.prefix_cache_used == first.nbytes > 0


def test_prefix_cache_lru_eviction_respects_the_byte_budget(tiny_fp32):
    probe = LMEngine(tiny_fp32)
    prefixes = [probe.encode(text) for text in (
        "Ship seven boxes by air today", "Convert twelve litres into millilitres", "Send half a dozen crates of 40 mol")]
    prefixes = [p[:5] for p in prefixes]  # equal lengths: equal state sizes
    assert all(len(p) == 5 for p in prefixes) and len({tuple(p) for p in prefixes}) == 3
    one = probe.forward(prefixes[0]).state.nbytes
    assert one == 2 * 2 * (1 * 2 * 5 * 16) * 4  # layers x (k, v) x [1, kv_heads, length, head_dim] x float32

    engine = LMEngine(tiny_fp32, prefix_cache_bytes=2 * one + one // 2)
    a, b, c = prefixes
    state_a = engine.prefix_state(a)
    state_b = engine.prefix_state(b)
    assert (engine.prefix_cache_entries, engine.prefix_cache_used) == (2, 2 * one)
    assert engine.prefix_state(a) is state_a  # a is now the most recently used
    state_c = engine.prefix_state(c)  # evicts b, the least recently used
    assert engine.prefix_cache_entries == 2
    assert engine.prefix_cache_used == 2 * one <= engine.prefix_cache_bytes
    assert engine.prefix_state(a) is state_a
    assert engine.prefix_state(c) is state_c
    assert engine.prefix_state(b) is not state_b  # recomputed (and it evicted a)
    assert engine.prefix_cache_entries == 2 and engine.prefix_cache_used <= engine.prefix_cache_bytes
    assert engine.prefix_state(c) is state_c


# ---- sparse head and constrained greedy -------------------------------------------------------------


@pytest.mark.parametrize("prompt", PROMPTS[:3], ids=range(3))
def test_scores_equal_the_full_logits(engine, prompt):
    result = engine.forward(engine.encode(prompt), want_logits=True)
    logits = result.logits
    vocab = engine.manifest["vocab_size"]
    assert logits.shape == (vocab,)
    ids = sorted(set(range(0, vocab, 7)) | set(np.argsort(-logits)[:5].tolist()))
    sparse = engine.scores(result.hidden[-1], ids)
    scale = float(np.abs(logits).max())
    np.testing.assert_allclose(sparse, logits[ids], rtol=1e-2, atol=1e-2 * scale)
    assert int(np.argmax(sparse)) == ids.index(int(np.argmax(logits)))
    # every row of the head, all at once
    np.testing.assert_allclose(engine.scores(result.hidden[-1], range(vocab)), logits, rtol=1e-2, atol=1e-2 * scale)


def test_greedy_with_allowed_only_emits_allowed_tokens(engine):
    digits = engine.tokens_within("0123456789 ")
    some = sorted(set(engine.encode("celsius fahrenheit litres mol")))
    emitted = 0
    for allowed in (digits, some, [engine.encode(" litres")[0]]):
        for prompt in PROMPTS:
            out = engine.greedy(engine.encode(prompt), max_new_tokens=12, allowed=allowed)
            assert set(out) <= set(allowed), (prompt, out)  # an empty answer means eos won
            emitted += len(out)
    assert emitted > 3 * len(PROMPTS)


def test_greedy_with_allowed_picks_the_best_allowed_token(engine):
    ids = engine.encode(PROMPTS[1])
    allowed = engine.tokens_within("0123456789")
    logits = engine.forward(ids, want_logits=True).logits
    choices = sorted(set(allowed) | {engine.eos_id})
    expected = choices[int(np.argmax(logits[choices]))]
    assert engine.greedy(ids, max_new_tokens=1, allowed=allowed) == ([] if expected == engine.eos_id else [expected])


def test_greedy_stops_on_stop_ids(engine):
    ids = engine.encode(PROMPTS[2])
    free = engine.greedy(ids, max_new_tokens=20)
    assert len(free) >= 3
    stop = free[2]
    cut = engine.greedy(ids, max_new_tokens=20, stop_ids=[stop])
    assert cut == free[: free.index(stop)]


def test_tokens_within(engine):
    charset = "0123456789.,"
    found = engine.tokens_within(charset)
    assert engine.tokens_within(charset) is found  # computed once per charset
    for char in "0123456789.,":
        assert engine.encode(char)[0] in found
    vocab = engine.tokenizer.get_vocab_size()
    expected = [t for t in range(vocab)
                if (text := engine.tokenizer.decode([t], skip_special_tokens=False)) and set(text) <= set(charset)]
    assert found == expected
    assert all(set(engine.token_text(t)) <= set(charset) for t in found)
    assert engine.eos_id not in found


# ---- KVState ----------------------------------------------------------------------------------------


def test_kvstate_truncate(engine):
    ids = engine.encode("What is the pressure, in kPa, of 7 mol of an ideal gas at 25 degrees celsius")
    assert len(ids) > 12
    full = engine.forward(ids)
    twelve = engine.forward(ids[:12]).state
    seven = twelve.truncate(7)
    assert seven.length == 7
    assert all(k.shape == (1, 2, 7, 16) for k in seven.keys + seven.values)
    assert seven.nbytes == twelve.nbytes * 7 // 12
    direct = engine.forward(ids[:7]).state
    for a, b in zip(seven.keys + seven.values, direct.keys + direct.values):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    assert twelve.truncate(12) is twelve and twelve.truncate(40) is twelve
    resumed = engine.forward(ids[7:], seven)
    np.testing.assert_allclose(resumed.hidden, full.hidden[7:], rtol=1e-4, atol=1e-4)
    assert twelve.length == 12 and twelve.keys[0].shape[2] == 12  # the original is untouched


def test_empty_state_and_forward_errors(engine):
    empty = engine.empty_state()
    assert empty.length == 0 and empty.nbytes == 0 and len(empty.keys) == 2
    with pytest.raises(TargetModelError, match="at least one token"):
        engine.forward([])


def test_not_an_artefact(tmp_path):
    with pytest.raises(TargetModelError, match="no manifest.json"):
        LMEngine(tmp_path)


def test_background_load_gives_the_same_model(tiny_fp32, engine):
    """A server starts answering template hits while the session loads; the first forward pass waits."""
    background = LMEngine(tiny_fp32, background=True)
    ids = engine.encode(PROMPTS[1])
    np.testing.assert_array_equal(background.forward(ids).hidden, engine.forward(ids).hidden)
    assert background.loaded


def test_threads_sleep_between_operators_unless_told_to_spin(tiny_fp32, engine):
    """Spinning threads hold cores the entry workers and gRPC share on a small device (benchmarks/serve_ab.py);
    either way the model computes the same thing."""
    assert engine._options().get_session_config_entry("session.intra_op.allow_spinning") == "0"
    spinning = LMEngine(tiny_fp32, spin=True)
    assert spinning._options().get_session_config_entry("session.intra_op.allow_spinning") == "1"
    ids = engine.encode(PROMPTS[0])
    np.testing.assert_array_equal(spinning.forward(ids).hidden, engine.forward(ids).hidden)


class _CountingSession:
    """Wraps a session and records how many ``run`` calls overlapped at most."""

    def __init__(self, session) -> None:
        self.session = session
        self.active = 0
        self.most = 0
        self.lock = threading.Lock()

    def run(self, *args, **kwargs):
        with self.lock:
            self.active += 1
            self.most = max(self.most, self.active)
        try:
            time.sleep(0.02)  # long enough for the other callers to arrive
            return self.session.run(*args, **kwargs)
        finally:
            with self.lock:
                self.active -= 1


@pytest.mark.parametrize("runs", [1, 2])
def test_concurrent_runs_bound_the_passes_in_the_session_and_change_nothing(tiny_fp32, engine, runs):
    """Two passes at once share two cores better than one (benchmarks/concurrent_runs.py); never more than
    ``concurrent_runs`` enter the session, and each caller gets what it would get alone."""
    bounded = LMEngine(tiny_fp32, concurrent_runs=runs)
    counting = _CountingSession(bounded.session)
    bounded._session = counting
    prompts = [engine.encode(text) for text in PROMPTS] * 2
    expected = [engine.forward(ids).hidden for ids in prompts]
    results: dict[int, np.ndarray] = {}

    def call(i: int) -> None:
        results[i] = bounded.forward(prompts[i]).hidden

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(prompts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counting.most == runs
    for i, hidden in enumerate(expected):
        np.testing.assert_array_equal(results[i], hidden)


def test_concurrent_runs_must_be_positive(tiny_fp32):
    with pytest.raises(TargetModelError, match="concurrent_runs"):
        LMEngine(tiny_fp32, concurrent_runs=0)


def test_a_damaged_model_fails_clearly_in_either_mode(tiny_fp32, tmp_path):
    from edge_runtime.entries.metadata import EntryPoint, Param
    from edge_runtime.errors import ExtractionError
    from edge_runtime.read.extractor import Extractor

    copy = tmp_path / "damaged"
    shutil.copytree(tiny_fp32, copy)
    (copy / "model.onnx").write_bytes(b"not a protobuf")
    with pytest.raises(TargetModelError, match="cannot load"):
        LMEngine(copy)
    background = LMEngine(copy, background=True)  # returns at once; the error surfaces on use
    with pytest.raises(TargetModelError, match="cannot load"):
        background.forward([1, 2, 3])
    assert not background.loaded
    entry = EntryPoint(
        id="boxes", description="boxes", template="Ship {count} boxes.",
        params=(Param("count", "number of boxes", type=int, original=3, minimum=1),), root="ship",
    )
    with pytest.raises(ExtractionError) as info:  # a MISS with a reason, not a crash
        Extractor(background).extract(entry, "Please send 4 boxes over.")
    assert info.value.reason == "extraction_failed" and "unavailable" in info.value.detail


def test_eos_token_id_zero_is_respected(tiny_fp32, tmp_path):
    copy = tmp_path / "eos-zero"
    shutil.copytree(tiny_fp32, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["eos_token_id"] = 0
    (copy / "manifest.json").write_text(json.dumps(manifest))
    assert LMEngine(copy).eos_id == 0


# ---- int8 artefact ----------------------------------------------------------------------------------


def test_int8_artefact_loads_and_generates(tiny_int8, engine):
    int8 = LMEngine(tiny_int8)
    vocab = int8.manifest["vocab_size"]
    for prompt in PROMPTS:
        ids = int8.encode(prompt)
        assert ids == engine.encode(prompt)
        out = int8.greedy(ids, max_new_tokens=10)
        assert all(0 <= t < vocab for t in out)
        result = int8.forward(ids, want_logits=True)
        assert result.logits.shape == (vocab,) and np.isfinite(result.logits).all()
        assert result.hidden.shape == (len(ids), 64) and np.isfinite(result.hidden).all()


# ---- OnnxTargetLM on the engine -----------------------------------------------------------------------


def test_onnx_target_lm_generate_respects_the_charset(engine):
    lm = OnnxTargetLM(engine)
    text = lm.generate("How many litres?", max_new_tokens=8, charset="0123456789")
    assert set(text) <= set("0123456789")
    free = lm.generate("How many litres?", max_new_tokens=8)
    assert isinstance(free, str) and "<|im_end|>" not in free


def test_onnx_target_lm_choose_returns_an_option(engine):
    lm = OnnxTargetLM(engine)
    for options in (["celsius", "fahrenheit", "kelvin"], ["1", "12", "120"], ["litres", "cubic metres"], ["only"]):
        assert lm.choose("Which unit?", options) in options
    with pytest.raises(ValueError):
        lm.choose("Which unit?", [])


# ---- the edge process stays light ----------------------------------------------------------------------

CHILD = r"""
import json, sys
from pathlib import Path

import edge_runtime.read.extractor
import edge_runtime.model.onnx_target_lm
from edge_runtime.read.extractor import Extractor
from edge_runtime.model.lm_engine import LMEngine
from edge_runtime.entries.metadata import EntryPoint, Param
from edge_runtime.model.onnx_target_lm import OnnxTargetLM

engine = LMEngine(Path(sys.argv[1]))
tokens = engine.greedy(engine.encode("What is the pressure, in kPa, of 7 mol"), max_new_tokens=8)
text = OnnxTargetLM(engine).generate("Convert 12 celsius", max_new_tokens=4, charset="0123456789")
entry = EntryPoint(id="t", description="t", template="Name {word}.", root="r",
                   params=(Param("word", "a word", type=str, original="x"),))
spans = Extractor(engine, use_fast_path=False, on_disagreement="decode")._with_model(entry, "Name the river Thames.").spans
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "transformers", "optimum", "builder"))
print(json.dumps({"tokens": tokens, "text": text, "spans": spans, "heavy": heavy}))
"""


def test_edge_process_decodes_without_torch_or_transformers(tiny_int8):
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tiny_int8)], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["heavy"] == []
    assert len(report["tokens"]) <= 8 and set(report["text"]) <= set("0123456789")
    assert report["spans"]["word"] in "Name the river Thames."


def test_choose_picks_the_option_with_the_most_likely_whole_answer(engine):
    """Independent check: score each option by one full pass over prompt + option + end of turn."""
    lm = OnnxTargetLM(engine)
    end = engine.encode("<|im_end|>")[:1]
    for prompt in ("Which unit?", "Convert 12 celsius into what?"):
        options = ["celsius", "fahrenheit", "kelvin", "litres"]
        prefix, rest = lm._prompt_parts(prompt)
        ids = prefix + rest
        scores = []
        for option in options:
            answer = engine.encode(option) + end
            hidden = engine.forward(ids + answer).hidden[len(ids) - 1 : -1]  # row j predicts answer token j
            logits = engine.full_logits(hidden).astype(np.float64)
            top = logits.max(-1, keepdims=True)
            log_probs = logits - np.log(np.exp(logits - top).sum(-1, keepdims=True)) - top
            scores.append(sum(log_probs[j, t] for j, t in enumerate(answer)))
        assert lm.choose(prompt, options) == options[int(np.argmax(scores))]
    assert lm.choose("Which unit?", ["only"]) == "only"


def test_choose_computes_the_task_and_options_once_per_call_site(tiny_fp32):
    """lm()'s prompt differs between calls only from its 'Text:' line on: the rest comes from the prefix cache."""
    engine = LMEngine(tiny_fp32)
    lm = OnnxTargetLM(engine)
    task = "Task: classify the parcel's contents\nOptions: fragile, perishable, standard\n"
    lm.choose(task + "Text: three glass vases\nAnswer with one option:", ["fragile", "perishable", "standard"])
    cached = engine.prefix_cache_entries
    passes = []
    forward = engine.forward
    engine.forward = lambda ids, state=None, **kw: passes.append(len(ids)) or forward(ids, state, **kw)
    lm.choose(task + "Text: two kilos of fresh fish\nAnswer with one option:", ["fragile", "perishable", "standard"])
    assert engine.prefix_cache_entries == cached  # the same prefix, reused
    prefix, rest = lm._prompt_parts(task + "Text: two kilos of fresh fish\nAnswer with one option:")
    assert passes[0] == len(rest) and len(prefix) > len(engine.encode(task)) // 2  # the prompt pass skips the task

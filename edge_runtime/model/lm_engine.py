"""Greedy decoding of the ONNX target model with onnxruntime, tokenizers and numpy only.

Two artefact layouts (``manifest["graph"]``):

- ``compact`` (builder/llama_onnx.py): the engine reads the rows of its tokens from the
  embedding table (edge_runtime/model/row_table.py) and feeds ``inputs_embeds``; the graph returns final hidden states; a
  separate ``head.onnx`` turns one hidden state into full logits when free generation needs them.
- ``optimum``: the exported decoder, fed token ids, returning hidden states and the last
  position's logits.

Constrained decoding never needs full logits: it multiplies a hidden state by the few head
rows it may choose from, far cheaper than the full vocabulary.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np  # noqa: E402

from edge_runtime.errors import LMDeadlineError, TargetModelError  # noqa: E402
from edge_runtime.model.malloc_tuning import release_free_memory  # noqa: E402
from edge_runtime.model.row_table import RowTable  # noqa: E402

#: Bytes of float32 head rows kept for the token sets constraints ask about (a 100-token copy set is 230 KB).
ROWS_CACHE_BYTES = 24 << 20


class RunSlots:
    """The shared model's scheduler: at most ``size`` forward passes at once, in two lanes.

    Foreground passes (the server's own extraction and guard passes of ordinary requests) take any free
    slot. Background passes (entries' lm()/extract()/smart_convert() calls, answered for a worker) take a
    slot only while the model is otherwise idle (no pass running or waiting), so one at a time: a long
    generation runs one decode step per slot grant, between the others' passes, and cannot starve them. A background wait
    ends at its deadline (LMDeadlineError), never a hang."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._cond = threading.Condition()
        self._busy = 0
        self._background_busy = 0
        self._foreground_waiting = 0

    def acquire(self, background: bool, deadline: float | None) -> None:
        with self._cond:
            if background:
                while self._busy or self._foreground_waiting:  # the model is idle: nothing runs, nothing waits
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        raise LMDeadlineError("the model call's deadline passed while it waited for the model")
                    self._cond.wait(remaining)
                self._background_busy += 1
            else:
                self._foreground_waiting += 1
                try:
                    while self._busy >= self.size:
                        self._cond.wait()
                finally:
                    self._foreground_waiting -= 1
            self._busy += 1

    def release(self, background: bool) -> None:
        with self._cond:
            self._busy -= 1
            if background:
                self._background_busy -= 1
            self._cond.notify_all()


@dataclass(frozen=True)
class KVState:
    """Past keys and values of one sequence, [1, kv_heads, length, head_dim] per layer."""

    keys: tuple[np.ndarray, ...]
    values: tuple[np.ndarray, ...]
    length: int

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.keys) + sum(a.nbytes for a in self.values)

    def truncate(self, length: int) -> KVState:
        """The state of the first ``length`` tokens (drops rejected draft tokens)."""
        if length >= self.length:
            return self
        return KVState(
            tuple(k[:, :, :length] for k in self.keys), tuple(v[:, :, :length] for v in self.values), length
        )


@dataclass(frozen=True)
class ForwardResult:
    hidden: np.ndarray  # [new_tokens, hidden_size] final-norm hidden states
    logits: np.ndarray | None  # [vocab] at the last position, when asked for
    state: KVState


class LMEngine:
    """One loaded artefact: session, tokenizer, sparse head, and an LRU of prefix KV states."""

    def __init__(
        self, artefact: str | Path, *, threads: int = 2, prefix_cache_bytes: int = 256 << 20, background: bool = False,
        spin: bool = False, concurrent_runs: int = 2,
    ) -> None:
        """With ``background``, the onnxruntime session (about a second of graph optimisation) is
        created on a thread and the first forward pass waits for it: a server answers template
        hits while the model is still loading. ``spin``: let onnxruntime's threads busy-wait for work
        between operators (its default); off, they sleep, which leaves the cores to the entry
        workers and the gRPC threads a device shares them with (benchmarks/serve.py --spin).
        ``concurrent_runs``: forward passes allowed in the session at once. With sleeping threads, two
        passes share the cores better than one pass at a time does (the small operators of one
        pass leave a core idle between them): 1.4x the passes per second under load, the same
        latency for a lone pass (benchmarks/concurrent_runs.py)."""
        from tokenizers import Tokenizer

        self.root = Path(artefact)
        manifest_path = self.root / "manifest.json"
        if not manifest_path.exists():
            raise TargetModelError(f"{self.root} is not a target-model artefact (no manifest.json)")
        if not (self.root / "model.onnx").exists():
            raise TargetModelError(f"{self.root} has no model.onnx")
        self.manifest = json.loads(manifest_path.read_text())
        if concurrent_runs < 1:
            raise TargetModelError("concurrent_runs must be at least 1")
        self.threads = threads
        self.spin = spin
        self.concurrent_runs = concurrent_runs
        self._session: Any = None
        self._session_error: BaseException | None = None
        self._session_ready = threading.Event()
        if background:
            threading.Thread(target=self._load_session, name="arc-model-load", daemon=True).start()
        else:
            self._load_session()
            self.session  # noqa: B018 - raise a load error here, not at the first forward pass
        self.tokenizer = Tokenizer.from_file(str(self.root / "tokenizer.json"))
        self.compact = self.manifest.get("graph") == "compact"
        if self.compact:
            self.embedding = RowTable(self.root / "embedding.npy")
            head_file = self.root / "lm_head.npy"
            self.head = RowTable(head_file) if head_file.exists() else self.embedding
        else:
            self.head = RowTable(self.root / "lm_head.f16.npy")
        self._head_session: Any = None
        self._head_lock = threading.Lock()
        self.num_layers = int(self.manifest["num_layers"])
        self.kv_heads = int(self.manifest["num_kv_heads"])
        self.head_dim = int(self.manifest["head_dim"])
        eos = self.manifest.get("eos_token_id")
        eos = eos[0] if isinstance(eos, list) and eos else eos
        self.eos_id = int(eos) if eos is not None else int(self.tokenizer.token_to_id("<|endoftext|>") or 0)
        self._present = [f"present.{i}.{kind}" for i in range(self.num_layers) for kind in ("key", "value")]
        self._prefix_cache: OrderedDict[str, KVState] = OrderedDict()
        self.prefix_cache_bytes = prefix_cache_bytes
        self._prefix_lock = threading.Lock()
        self._run_slots = RunSlots(concurrent_runs)
        self._budget = threading.local()  # this thread's (deadline, background) inside budget()
        self._rows_cache: dict[tuple[int, ...], np.ndarray] = {}
        self._rows_bytes = 0
        self._token_text: dict[int, str] = {}
        self._charset_tokens: dict[str, list[int]] = {}
        release_free_memory()  # the tokenizer's parse of tokenizer.json (~16 MB)

    def _load_session(self) -> None:
        try:
            import onnxruntime as ort

            self._session = ort.InferenceSession(str(self.root / "model.onnx"), self._options(),
                                                 providers=["CPUExecutionProvider"])
            release_free_memory()  # the graph parse's freed heap (~50 MB for SmolLM2)
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own types for a damaged file
            self._session_error = exc
        finally:
            self._session_ready.set()

    @property
    def session(self) -> Any:
        """The onnxruntime session, waiting for a background load to finish."""
        self._session_ready.wait()
        if self._session_error is not None:
            raise TargetModelError(f"cannot load {self.root / 'model.onnx'}: {self._session_error}") from self._session_error
        return self._session

    @property
    def loaded(self) -> bool:
        """Whether the session is ready (a background load has finished without error)."""
        return self._session_ready.is_set() and self._session_error is None

    # ---- tokens ---------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=False)

    def token_text(self, token_id: int) -> str:
        """The exact text a single token contributes (byte-level BPE safe for whole characters)."""
        text = self._token_text.get(token_id)
        if text is None:
            text = self.tokenizer.decode([token_id], skip_special_tokens=False)
            self._token_text[token_id] = text
        return text

    def tokens_within(self, charset: str) -> list[int]:
        """Every token whose text uses only ``charset`` (computed once per charset: a vocabulary scan)."""
        cached = self._charset_tokens.get(charset)
        if cached is None:
            allowed = set(charset)
            size = self.tokenizer.get_vocab_size()
            cached = [t for t in range(size) if (text := self.token_text(t)) and set(text) <= allowed]
            self._charset_tokens[charset] = cached
        return cached

    # ---- scheduling -----------------------------------------------------
    @contextmanager
    def budget(self, deadline: float | None, *, background: bool = False) -> Iterator[None]:
        """Passes this thread runs inside the block stop at ``deadline`` (checked before every pass, so
        between decode steps) and, with ``background``, run in the scheduler's background lane."""
        previous = getattr(self._budget, "value", None)
        self._budget.value = (deadline, background)
        try:
            yield
        finally:
            self._budget.value = previous

    @contextmanager
    def _slot(self) -> Iterator[None]:
        deadline, background = getattr(self._budget, "value", None) or (None, False)
        if deadline is not None and time.monotonic() >= deadline:
            raise LMDeadlineError("the model call's deadline passed; generation was stopped")
        self._run_slots.acquire(background, deadline)
        try:
            yield
        finally:
            self._run_slots.release(background)

    # ---- model ----------------------------------------------------------
    def empty_state(self) -> KVState:
        empty = np.zeros((1, self.kv_heads, 0, self.head_dim), dtype=np.float32)
        return KVState(tuple(empty for _ in range(self.num_layers)), tuple(empty for _ in range(self.num_layers)), 0)

    def forward(
        self, ids: Sequence[int], state: KVState | None = None, *, want_logits: bool = False, keep_state: bool = True
    ) -> ForwardResult:
        """Run ``ids`` after ``state``; returns hidden states of the new positions and the new state.

        With ``keep_state=False`` the new keys and values are not fetched (``state`` of the result is the
        one passed in): a verifying pass that only reads hidden states then holds no ~20 MB KV copy while
        its caller checks the draft, which under concurrency added up to hundreds of MB."""
        if not ids:
            raise TargetModelError("forward() needs at least one token")
        state = state or self.empty_state()
        count = len(ids)
        total = state.length + count
        if self.compact:
            if max(ids) >= len(self.embedding) or min(ids) < 0:
                raise TargetModelError("a token id is outside the vocabulary")
            feeds: dict[str, np.ndarray] = {
                "inputs_embeds": np.asarray(self.embedding[list(ids)], dtype=np.float32)[None],
                "seqlens_k": np.array([total - 1], dtype=np.int32),
                "total_sequence_length": np.array(total, dtype=np.int32),
            }
        else:
            feeds = {
                "input_ids": np.asarray([ids], dtype=np.int64),
                "attention_mask": np.ones((1, total), dtype=np.int64),
                "position_ids": np.arange(state.length, total, dtype=np.int64)[None, :],
            }
        for i in range(self.num_layers):
            feeds[f"past_key_values.{i}.key"] = state.keys[i]
            feeds[f"past_key_values.{i}.value"] = state.values[i]
        in_graph_logits = want_logits and not self.compact
        names = (["logits"] if in_graph_logits else []) + ["hidden"] + (self._present if keep_state else [])
        with self._slot():  # at most ``concurrent_runs`` passes at once: more would only oversubscribe the cores
            outputs = self.session.run(names, feeds)
            offset = 1 if in_graph_logits else 0
            hidden = outputs[offset][0]
            logits = None
            if in_graph_logits:
                logits = outputs[0][0, -1]
            elif want_logits:
                logits = self._head_logits(hidden[-1:])[0]
        if not keep_state:
            return ForwardResult(hidden, logits, state)
        presents = outputs[offset + 1 :]
        new_state = KVState(tuple(presents[0::2]), tuple(presents[1::2]), total)
        return ForwardResult(hidden, logits, new_state)

    def full_logits(self, hidden: np.ndarray) -> np.ndarray:
        """Logits over the whole vocabulary for each row of ``hidden`` ([rows, hidden] -> [rows, vocab])."""
        rows = np.asarray(hidden, dtype=np.float32).reshape(-1, hidden.shape[-1])
        if self.compact:
            with self._slot():
                return self._head_logits(rows)
        return rows @ np.asarray(self.head, dtype=np.float32).T

    def _head(self) -> Any:
        """The full-vocabulary head of a compact artefact (loaded on first use: constrained decoding never needs it)."""
        with self._head_lock:  # two run slots may ask for it at once: load it once
            if self._head_session is None:
                import onnxruntime as ort

                self._head_session = ort.InferenceSession(str(self.root / "head.onnx"), self._options(),
                                                          providers=["CPUExecutionProvider"])
                release_free_memory()
        return self._head_session

    def _options(self) -> Any:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if self.spin else "0")
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        return options

    def _head_logits(self, rows: np.ndarray) -> np.ndarray:
        """``head.onnx`` on [rows, hidden]; the caller holds a run slot."""
        return self._head().run(None, {"hidden": np.ascontiguousarray(rows, dtype=np.float32)})[0]

    def scores(self, hidden: np.ndarray, token_ids: Sequence[int]) -> np.ndarray:
        """Logits of ``token_ids`` only: a [k, hidden] x [hidden] product instead of the whole vocabulary."""
        key = tuple(token_ids)
        rows = self._rows_cache.get(key)
        if rows is None:
            rows = np.asarray(self.head[list(key)], dtype=np.float32)
            if self._rows_bytes + rows.nbytes > ROWS_CACHE_BYTES:  # bounded by bytes: copy sets can be large
                self._rows_cache.clear()
                self._rows_bytes = 0
            self._rows_cache[key] = rows
            self._rows_bytes += rows.nbytes
        return rows @ hidden.astype(np.float32)

    def prefix_state(self, prefix_ids: Sequence[int]) -> KVState:
        """KV state of a prompt prefix, computed once and reused (bounded LRU, bytes accounted)."""
        key = ",".join(map(str, prefix_ids))
        with self._prefix_lock:
            cached = self._prefix_cache.get(key)
            if cached is not None:
                self._prefix_cache.move_to_end(key)
                return cached
        state = self.forward(list(prefix_ids)).state
        with self._prefix_lock:
            self._prefix_cache[key] = state
            while self.prefix_cache_used > self.prefix_cache_bytes and len(self._prefix_cache) > 1:
                self._prefix_cache.popitem(last=False)
        return state

    @property
    def prefix_cache_used(self) -> int:
        return sum(state.nbytes for state in self._prefix_cache.values())

    @property
    def prefix_cache_entries(self) -> int:
        return len(self._prefix_cache)

    def greedy(
        self,
        ids: Sequence[int],
        *,
        max_new_tokens: int = 64,
        stop_ids: Sequence[int] = (),
        state: KVState | None = None,
        allowed: Sequence[int] | None = None,
    ) -> list[int]:
        """Greedy decoding with a KV cache; with ``allowed``, only those tokens (or a stop) may be chosen."""
        stops = set(stop_ids) | {self.eos_id}
        choices = None if allowed is None else sorted(set(allowed) | stops)
        result = self.forward(list(ids), state, want_logits=choices is None)
        out: list[int] = []
        for _ in range(max_new_tokens):
            if choices is None:
                assert result.logits is not None
                token = int(np.argmax(result.logits))
            else:
                token = choices[int(np.argmax(self.scores(result.hidden[-1], choices)))]
            if token in stops:
                break
            out.append(token)
            result = self.forward([token], result.state, want_logits=choices is None)
        return out

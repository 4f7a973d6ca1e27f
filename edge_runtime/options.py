"""The runtime's options as one tree of dataclasses; ``arc-edge serve``'s flags are generated from it
(edge_runtime/flags.py). Each option is declared once, with its default and help, in the branch that uses it::

    ServeOptions                       serving/server.py   listeners, TLS, metrics, start-up bundles
      runtime: RuntimeOptions          serving/runtime.py  the device: data dir, trust, limits, upstream
        pool: PoolOptions              (here)              IS3's worker pool
          lm_limits: LMLimits          model/lm_limits.py  caps on each entry model call
        model: ModelOptions            (here)              the target model's engine
        pipeline: PipelineOptions      (here)              how a question goes through the stages
        upstream: UpstreamConfig|None  serving/upstream.py the optional source-model fallback
      follow: FollowOptions|None       fleet/options.py    the registry a fleet device follows
"""

from __future__ import annotations

from dataclasses import dataclass

from edge_runtime.flags import option, subtree
from edge_runtime.model.lm_limits import LMLimits

#: The rank within which every draft token must lie for ``--rereads`` (read/extractor.py ``impossible_rereads``).
REREAD_RANK = 2


@dataclass(frozen=True)
class PipelineOptions:
    """How a question goes through the stages (edge_runtime/pipeline.py)."""

    top_k: int = option(3, flag="--top-k", help="candidates the embedding router proposes (IS1)")
    # The aligned path, not the skeleton score, decides: over the dev sets, the reparam and reword probes, the
    # unrelated and added-clause sets it took no other entry's template among the top ten skeleton candidates at any
    # score (tested against 90 000 pairs; docs/benchmarks.md, *The skeleton search ranks, the aligner decides*). A
    # short question whose objects, units and verbs are all renamed scores low on bigrams while still ranking its
    # own template first, so the floor only skips templates that share next to no phrasing.
    skeleton_min_score: float = option(
        0.05, flag="--skeleton-min-score",
        help="least skeleton score at which one of the search's top candidates is tried on the model-free paths "
             "(template, aligned: both strict, so this is permissive)")
    # names and things renamed throughout ("Junebugs" -> "slugs", "trees" -> "oak trees") put a question's own entry
    # first at 0.35-0.50 while the embedding misses it; read there, the model and the guard decide (2026-12-08: 5 more
    # re-parameterisations of templates nobody here had read and 7 more generated controls served right; 407 more
    # rows of the dev sets and probes read, none served; docs/benchmarks.md, *Templates nobody here had read*)
    skeleton_model_score: float = option(
        0.35, flag="--skeleton-model-score",
        help="least skeleton score at which an entry the embedding router missed is also read by the model")
    # each candidate costs a forward pass; on GSM-Plus and the example paraphrases a second or third served
    # nothing the first did not (docs/target-model.md)
    model_attempts: int = option(1, flag="--model-attempts", help="candidates the model path verifies, best first")
    set_aside_disclaimers: bool = option(
        True, flag="--set-aside",
        help="read a question that misses once more without what it calls irrelevant (read/disclaimers.py)")
    guard: bool = option(True, flag="--guard", help="the changed-reasoning guard between IS2 and IS3 (read/guard.py)")
    on_disagreement: str = option(
        "miss", flag="--on-disagreement", choices=("miss", "decode"),
        help="where the model disagrees with the aligner's draft: miss, or serve the model's own reading "
             "(read/extractor.py)")
    # Measured (docs/benchmarks.md, *Rereads on spare capacity*): on the GSM8K sets +73 right, 0 wrong, 5 more of
    # 5 229 generated changed questions served; a reread runs one at a time in the model's background lane, so under
    # load it gives way (throughput at 16 clients -13%, against -32% when rereads took foreground slots).
    impossible_rereads: int | None = option(
        REREAD_RANK, flag="--rereads", flag_default=True, convert=lambda on: REREAD_RANK if on else None,
        help="serve the aligner's draft where the model's only disagreement is an impossible reading, on the "
             "model's spare capacity (more right answers on reworded questions: docs/benchmarks.md)")
    use_alignment: bool = option(
        True, flag="--alignment", help="the aligned path: the template reworded around its slots, read with no model")
    use_draft: bool = option(True, flag="--draft", help="the aligner drafts the values the model verifies in one pass")


@dataclass(frozen=True)
class ModelOptions:
    """The target model's onnxruntime engine (model/lm_engine.py), one per server."""

    threads: int = option(2, flag="--threads", help="onnxruntime threads of the model")
    spin: bool = option(False, flag="--spin",
                        help="let the model's threads busy-wait between operators (onnxruntime's default; off here)")
    model_runs: int = option(2, flag="--model-runs",
                             help="forward passes of the model at once (1: one at a time, each with every thread)")


@dataclass(frozen=True)
class PoolOptions:
    """IS3's worker pool (execute/worker_pool.py): processes that run entry code, and what each call may use."""

    workers: int = option(2, flag="--workers", help="worker processes that run entry code")
    memory_limit_mb: int = option(512, flag="--memory-limit-mb", help="memory limit of each worker process (MB)")
    entry_timeout_s: float = option(5.0, flag="--entry-timeout", help="deadline of one entry call (seconds)")
    lm_limits: LMLimits = subtree(LMLimits, help="caps on each entry model call (model/lm_limits.py)")


__all__ = ["REREAD_RANK", "ModelOptions", "PipelineOptions", "PoolOptions"]

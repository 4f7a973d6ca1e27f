"""The runtime's options as one tree of dataclasses (pipeline for now; see docs/architecture.md)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PipelineOptions:
    """How a question goes through the stages (edge_runtime/pipeline.py)."""

    #: candidates the embedding router proposes (IS1)
    top_k: int = 3
    #: the least skeleton score at which an entry is tried on the model-free paths (template, aligned: both
    #: strict, so this is permissive)
    skeleton_min_score: float = 0.25
    #: the least skeleton score at which an entry the embedding router missed is also tried on the model path
    skeleton_model_score: float = 0.5
    #: candidates the model path verifies, best first; each costs a forward pass, and on GSM-Plus and the
    #: example paraphrases a second or third served nothing the first did not (docs/target-model.md)
    model_attempts: int = 1
    #: a question that misses is read once more without what it calls irrelevant (read/disclaimers.py)
    set_aside_disclaimers: bool = True
    #: the changed-reasoning guard between IS2 and IS3 (read/guard.py)
    guard: bool = True
    #: what the model path may serve where the model disagrees with the aligner's draft: "miss" or "decode"
    #: (read/extractor.py)
    on_disagreement: str = "miss"
    #: with the guard on, serve the aligner's draft where the model's only disagreement is an impossible reading
    #: and the draft is among its this many best tokens (read/extractor.py); None: off. Measured
    #: (docs/benchmarks.md): GSM-Plus +6 right, nothing wrong or changed served, but on a load half of
    #: model-path questions throughput at 16 clients 55 -> 31 req/s and peak RSS 478 -> 544 MB (goal 500).
    impossible_rereads: int | None = None
    #: the aligned path: the template reworded around its slots, read with no model (read/template_align.py)
    use_alignment: bool = True
    #: the aligner drafts the values the model verifies in one pass (read/draft.py)
    use_draft: bool = True

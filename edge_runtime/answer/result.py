"""What IS4 returns for one question, HIT or MISS: the record every caller (service, CLI, evaluation) reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from edge_runtime.answer.verification import VerificationStatus
from edge_runtime.entries.context import NarrationStep
from edge_runtime.outcome import MissReason, ServingPath


@dataclass
class Answer:
    """Everything IS4 returns, HIT or MISS."""

    hit: bool
    miss_reason: MissReason | None = None  # None on a hit
    miss_detail: str = ""
    entry_id: str = ""
    similarity: float = 0.0
    parameters: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] = field(default_factory=dict)
    answer: Any = None
    narration: list[NarrationStep] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    #: How IS2 read the values (None when the question missed before they were read).
    path: ServingPath | None = None
    #: Of the entry that answered, as the bundle attests it (None on a miss).
    verification: VerificationStatus | None = None

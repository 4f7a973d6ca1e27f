"""What IS4 returns for one question, HIT or MISS: the record every caller (service, CLI, evaluation) reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from edge_runtime.answer.verification import VerificationStatus
from edge_runtime.entries.context import NarrationStep


@dataclass
class Answer:
    """Everything IS4 returns, HIT or MISS."""

    hit: bool
    miss_reason: str = ""
    miss_detail: str = ""
    entry_id: str = ""
    similarity: float = 0.0
    parameters: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] = field(default_factory=dict)
    answer: Any = None
    narration: list[NarrationStep] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    path: str = ""
    #: Of the entry that answered, as the bundle attests it (None on a miss).
    verification: VerificationStatus | None = None

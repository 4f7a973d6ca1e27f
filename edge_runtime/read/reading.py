"""What IS2 hands IS3: the entry a question was read against, the values read and how they were read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from edge_runtime.errors import Miss
from edge_runtime.outcome import MissReason, ServingPath


@dataclass(frozen=True)
class Reading:
    """One accepted reading of a question: ``values`` are validated against ``entry_id``'s parameters.

    ``similarity`` is the router's score of the entry (1.0 on the model-free paths, which match the template
    itself)."""

    entry_id: str
    similarity: float
    values: dict[str, Any] = field(default_factory=dict)
    path: ServingPath = ServingPath.TEMPLATE
    guarded: bool = False  # the guard already passed these values on this path (the extractor's draft check)

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", ServingPath(self.path))  # a reader may name its path by its text

    def miss(self, reason: MissReason, detail: str) -> Miss:
        """A miss after this reading: it reports the entry, the values and the path, as a hit would."""
        return Miss(reason, detail, entry_id=self.entry_id, similarity=self.similarity, parameters=self.values,
                    path=self.path)

"""MiniCache group mechanics: when and how a group of transcripts becomes a cache entry.

A *group* is one class of questions (in MiniCache: requests routed together by embedding). It
collects Program-of-Thought transcripts and tries to build an entry once it holds ``nu`` of them:

1. **split** the transcripts into a generation set (the candidate is built from these) and a
   validation set (the candidate must answer these);
2. **generate** a candidate, **validate** it, and accept it when its pass rate is at least ``alpha``;
3. on a failed validation **retry** up to ``max_retries`` times, handing the generator the failure
   summaries of every earlier attempt (MiniCache's "reflection");
4. when every retry fails, **back off**: the group waits for more transcripts, ``nu <- beta * nu``
   (exponential backoff), and after ``max_build_failures`` failed builds it is **uncacheable**.

A fatal validation result (the candidate is wrong on its own transcript, or unsafe) ends the build
at once: no reflection turns a wrong program into a right one.

Groups of one. GSM8K has one transcript per class (one PAL program per test question), so the
importer (:mod:`builder.pot_import`) uses groups with ``nu = 1``: the single transcript is the
generation set, and the validation set is synthetic — the original question plus N re-parameterised
variants checked against the transcript's own program (a differential oracle). A retry there is not
an LLM call: the failure summary names the parameters that broke the round trip and the generator
keeps them constant in the next candidate. With one transcript there is nothing more to wait for,
so a failed build of a group of one is final (its backoff state is still recorded for a caller that
may feed more transcripts later).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")  # a transcript
C = TypeVar("C")  # a candidate entry


@dataclass(frozen=True)
class GroupPolicy:
    """The knobs of MiniCache's build loop."""

    alpha: float = 0.8  # pass rate a candidate needs on the validation set
    nu: int = 1  # transcripts a group needs before its first build attempt
    beta: float = 2.0  # backoff factor for nu after a failed build (> 1)
    max_retries: int = 2  # extra attempts per build, each with the failure summaries so far
    max_build_failures: int = 3  # failed builds before the group is marked uncacheable
    generation_share: float = 0.5  # share of the transcripts used for generation (at least one)

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha <= 1.0:
            raise ValueError("alpha must be in (0, 1]")
        if self.nu < 1:
            raise ValueError("nu must be at least 1")
        if self.beta <= 1.0:
            raise ValueError("beta must be greater than 1 (exponential backoff)")
        if self.max_retries < 0 or self.max_build_failures < 1:
            raise ValueError("max_retries >= 0 and max_build_failures >= 1 are required")


@dataclass(frozen=True)
class Validation:
    """What validating one candidate found."""

    passed: int
    total: int
    failures: tuple[str, ...] = ()  # short summaries, fed back to the generator on a retry
    fatal: str | None = None  # a reason that no retry can fix (e.g. wrong on the original question)
    reason: str = "round_trip_failed"  # why a failing validation failed, when it is not fatal

    @property
    def pass_rate(self) -> float:
        return self.passed / self.total if self.total else 0.0


class GenerationFailed(Exception):
    """The generator could not produce a candidate; ``reason`` names why (``fatal`` stops retries)."""

    def __init__(self, reason: str, detail: str = "", fatal: bool = True) -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail
        self.fatal = fatal


@dataclass
class Attempt(Generic[C]):
    candidate: C | None
    validation: Validation | None
    error: str | None = None


@dataclass
class BuildOutcome(Generic[C]):
    """The result of one build: the accepted candidate, or why there is none."""

    accepted: C | None
    attempts: list[Attempt[C]]
    reason: str | None = None  # rejection reason of the last attempt
    detail: str = ""


Generate = Callable[[Sequence[T], Sequence[str]], C]
Validate = Callable[[C, Sequence[T], Sequence[T]], Validation]


@dataclass
class PotGroup(Generic[T, C]):
    """One group of transcripts and its build state (collecting → built | uncacheable)."""

    key: str
    policy: GroupPolicy
    generate: Generate
    validate: Validate
    transcripts: list[T] = field(default_factory=list)
    nu: float = 0.0
    build_failures: int = 0
    status: str = "collecting"
    entry: C | None = None
    outcomes: list[BuildOutcome[C]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.nu:
            self.nu = float(self.policy.nu)

    @property
    def ready(self) -> bool:
        return self.status == "collecting" and len(self.transcripts) >= math.ceil(self.nu)

    def add(self, transcript: T) -> BuildOutcome[C] | None:
        """Add a transcript; build when the group has reached its threshold. Returns the build, if any."""
        if self.status != "collecting":
            return None
        self.transcripts.append(transcript)
        return self.build() if self.ready else None

    def split(self) -> tuple[list[T], list[T]]:
        """(generation set, validation set): at least one transcript generates."""
        n = len(self.transcripts)
        k = min(n, max(1, round(n * self.policy.generation_share)))
        return self.transcripts[:k], self.transcripts[k:]

    def build(self) -> BuildOutcome[C]:
        generation, validation_set = self.split()
        reflections: list[str] = []
        attempts: list[Attempt[C]] = []
        outcome: BuildOutcome[C] | None = None
        for _ in range(1 + self.policy.max_retries):
            try:
                candidate = self.generate(generation, tuple(reflections))
            except GenerationFailed as exc:
                attempts.append(Attempt(None, None, str(exc)))
                outcome = BuildOutcome(None, attempts, exc.reason, exc.detail)
                if exc.fatal:
                    break
                reflections.append(str(exc))
                continue
            result = self.validate(candidate, generation, validation_set)
            attempts.append(Attempt(candidate, result))
            if result.fatal is None and result.total and result.pass_rate >= self.policy.alpha:
                self.entry = candidate
                self.status = "built"
                outcome = BuildOutcome(candidate, attempts)
                self.outcomes.append(outcome)
                return outcome
            reason = result.fatal or result.reason
            detail = "; ".join(result.failures[:3]) or f"pass rate {result.pass_rate:.2f} < {self.policy.alpha}"
            outcome = BuildOutcome(None, attempts, reason, detail)
            if result.fatal is not None:
                break
            reflections.extend(result.failures)
        assert outcome is not None
        self.build_failures += 1
        self.nu = self.nu * self.policy.beta  # exponential backoff of the build threshold
        if self.build_failures >= self.policy.max_build_failures:
            self.status = "uncacheable"
        self.outcomes.append(outcome)
        return outcome

    def summary(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "status": self.status,
            "transcripts": len(self.transcripts),
            "nu": self.nu,
            "build_failures": self.build_failures,
        }

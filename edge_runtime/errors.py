"""One exception hierarchy for the whole runtime, so callers can catch broadly or precisely."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from edge_runtime.outcome import MissReason, ServingPath


class ArcError(Exception):
    """Base of every error the ARC runtime raises on purpose."""


class UnsafeCodeError(ArcError):
    """Semantic-function source broke a safety rule; names the file, line and rule."""

    def __init__(self, filename: str, line: int, rule: str, detail: str) -> None:
        self.filename = filename
        self.line = line
        self.rule = rule
        self.detail = detail
        super().__init__(f"{filename}:{line}: [{rule}] {detail}")


class DefinitionError(ArcError):
    """A semantic function or entry point is declared inconsistently."""


class ResolutionError(ArcError):
    """A natural-language reference (a do() intent or a load() query) could not be resolved."""

    def __init__(self, kind: str, reference: str, candidates: Sequence[tuple[str, float]], reason: str) -> None:
        self.kind = kind
        self.reference = reference
        self.candidates = list(candidates)
        shown = ", ".join(f"{text!r} ({score:.3f})" for text, score in self.candidates) or "none"
        super().__init__(f"{kind} reference {reference!r}: {reason}; candidates: {shown}")


class NoMatchError(ResolutionError):
    """Nothing matched the reference above the similarity threshold."""


class AmbiguousReferenceError(ResolutionError):
    """Two candidates matched the reference within the ambiguity margin."""


class ConversionError(ArcError):
    """A value could not be coerced to the requested type."""


class ToolNotAllowedError(ArcError):
    """An entry asked for a tool the host did not register."""


class TargetModelError(ArcError):
    """The target model could not answer (not configured, or its answer was unusable)."""


class ExecutionError(ArcError):
    """A semantic function failed while running; wraps the original exception."""


class CompileError(ArcError):
    """The static compiler met something it cannot resolve at compile time."""


class ParameterValidationError(ArcError):
    """An extracted parameter value is missing, of the wrong type, or outside its declared domain."""

    def __init__(self, param: str, detail: str) -> None:
        self.param = param
        self.detail = detail
        super().__init__(f"parameter {param!r}: {detail}")


class Miss(ArcError):
    """A stage could not serve the question: ``reason`` is the MISS reason users see, ``detail`` says why.

    Every stage of the pipeline (edge_runtime/pipeline.py) raises this one type; the pipeline turns it into the
    MISS answer. What the stage knew by then (the entry it tried, its similarity, the values read and how) goes
    with it, so the answer reports it."""

    def __init__(self, reason: MissReason | str, detail: str, *, entry_id: str = "", similarity: float = 0.0,
                 parameters: dict[str, Any] | None = None, path: ServingPath | None = None) -> None:
        self.reason = MissReason(reason)
        self.detail = detail
        self.entry_id = entry_id
        self.similarity = similarity
        self.parameters = dict(parameters or {})
        self.path = path
        super().__init__(f"{self.reason}: {detail}")

    def at(self, entry_id: str, similarity: float) -> Miss:
        """The same miss, reported against the candidate it happened on."""
        return Miss(self.reason, self.detail, entry_id=entry_id, similarity=similarity, parameters=self.parameters,
                    path=self.path)


class ExtractionError(Miss):
    """IS2 could not produce a valid parameter set (``extraction_failed`` or ``validation_failed``)."""

    def __init__(self, reason: MissReason | str, detail: str) -> None:
        super().__init__(reason, detail)


class BundleError(ArcError):
    """A bundle cannot be built or loaded; the subclasses say which check refused it."""


class BundleFormatError(BundleError):
    """The bundle's bytes are not a well-formed bundle (magic, truncation, msgpack, offsets, paths)."""


class SignatureError(BundleError):
    """The bundle is unsigned, its signature does not verify, or its signer is not trusted."""


class IntegrityError(BundleError):
    """A payload file's bytes do not match the hash the signed manifest lists for it."""


class BundleVersionError(BundleError):
    """A bundle's version cannot be ordered (neither an integer nor semver), so it cannot be protected against downgrade."""


class BundleConflictError(BundleError):
    """A bundle id already stored on the device was pushed again with different bytes; the stored one is kept."""


class BundleNameRefusedError(BundleError):
    """The device pins the bundle names it accepts (``--accept-bundle``) and this name is not one of them."""


class DowngradeError(ArcError):
    """Activation of a version not higher than the highest activated for that bundle name (use an explicit rollback)."""


class BlobQuotaError(ArcError):
    """A pushed blob is larger than the per-blob limit or would take the store past its total quota; nothing was kept."""


class ServerBindError(ArcError):
    """A listener could not be opened (address already in use, socket path not usable)."""


class BlobStoreError(ArcError):
    """The device's content-addressed store is missing a blob, or was given bytes that fail their hash."""


class MissingBlobError(BlobStoreError):
    """A bundle names a blob (by sha256) that the device's store does not hold; the message says how to push it."""


class SigningKeyError(ArcError):
    """A signing key cannot be created or loaded (exists already, unreadable, not Ed25519)."""


class DeadlineExceededError(ExecutionError):
    """An entry ran past its per-call deadline (or found no free worker in time); its worker was killed and replaced."""


class ResourceExhaustedError(ExecutionError):
    """An entry exceeded its worker's memory limit (or its result its size limit); the call ended, the pool serves on."""


class WorkerCrashedError(ExecutionError):
    """The worker process running an entry died or broke the reply protocol; it was replaced."""


class WorkerPoolClosedError(ExecutionError):
    """The worker pool was closed before or while the call ran."""


class LMLimitError(ResourceExhaustedError):
    """An lm()/extract()/smart_convert() call asked more of the shared model than its caps allow
    (prompt tokens, new tokens, or its time budget): the request becomes a MISS, the model stays free."""


class LMDeadlineError(DeadlineExceededError):
    """The request's deadline passed while its model call was queued or decoding: generation stopped there."""

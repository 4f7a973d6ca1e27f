"""Transcripts: PoT rows joined to reference questions with gold answers.

Also the fixed vocabulary of rejection reasons: every later step may turn a transcript into a
``Rejected`` with one of them, and the batch report counts them by reason.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from builder.gsm8k import ReferenceIndex
from builder.independent import IndependentProgram

REASONS: tuple[str, ...] = (
    "no_match_in_gsm8k",
    "unparsable_program",
    "unsafe_program",
    "no_parameters",
    "template_mismatch",
    "wrong_on_original",
    "round_trip_failed",
    "independent_disagreement",
    "runtime_error",
)
"""The fixed vocabulary of rejection reasons."""



class Rejected(Exception):
    """A transcript that does not become an entry, with a reason from :data:`REASONS`."""

    def __init__(self, reason: str, detail: str = "") -> None:
        assert reason in REASONS, reason
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class Transcript:
    """One PoT transcript joined to its reference question."""

    row: int  # line of the transcript file
    code: str
    question: str  # the reference (original) question: the template is built from it
    gold: Any
    ref_index: int  # row of the reference file: the entry id is derived from it
    docstring: str = ""
    variant: str = ""  # GSM-Hard question (one number replaced), when the file has one
    join: str = "exact"
    id_prefix: str = "gsm8k"
    #: Programs written by someone else for the same question (builder.independent): the entry is
    #: verified only where it agrees with one of them on rendered variants.
    independent: tuple[IndependentProgram, ...] = ()
    #: Where ``code`` came from when it is not the transcript file's own program: the independent source whose
    #: program the importer tried in its place (:meth:`Importer.import_one`).
    program_source: str = ""
    #: Parameters that a constant of the program may have been computed from vary, and the independent check decides
    #: whether they may (:meth:`Importer.import_one`); otherwise the planner keeps them constant.
    check_derived: bool = False

    @property
    def entry_id(self) -> str:
        return f"{self.id_prefix}-{self.ref_index:04d}"


def program_docstring(code: str) -> str:
    """The docstring of ``solution()`` (empty if the code does not parse or has none)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return ""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "solution":
            return ast.get_docstring(node, clean=False) or ""
    return ""


def join_transcripts(
    rows: Sequence[dict[str, Any]], reference: ReferenceIndex, id_prefix: str = "gsm8k"
) -> list[Transcript | Rejected]:
    """Join every row to a reference question: exact on the normalised docstring (or the row's
    ``question``), then a conservative fuzzy fallback for rows still unmatched. One reference row is
    used by at most one transcript (later duplicates are ``no_match_in_gsm8k``)."""
    out: list[Transcript | Rejected | None] = [None] * len(rows)
    used: set[int] = set()
    pending: list[int] = []
    docs = []
    for i, row in enumerate(rows):
        code = str(row.get("code", ""))
        doc = program_docstring(code)
        docs.append(doc)
        text = doc or str(row.get("question", ""))
        ref = reference.exact(text)
        if ref is not None and ref.index not in used:
            used.add(ref.index)
            out[i] = _transcript(i, row, code, doc, ref, "exact", id_prefix)
        else:
            pending.append(i)
    for i in pending:
        row = rows[i]
        text = docs[i] or str(row.get("question", "")) or str(row.get("input", ""))
        ref = reference.fuzzy(text, used) or (reference.fuzzy(str(row.get("input", "")), used) if row.get("input") else None)
        if ref is not None and ref.index not in used:
            used.add(ref.index)
            out[i] = _transcript(i, row, str(row.get("code", "")), docs[i], ref, "fuzzy", id_prefix)
        else:
            out[i] = Rejected("no_match_in_gsm8k", f"row {i}: no reference question matches {text[:60]!r}")
    return [o for o in out if o is not None]


def _transcript(i: int, row: dict, code: str, doc: str, ref: Any, join: str, id_prefix: str) -> Transcript:
    return Transcript(
        row=i, code=code, question=ref.question, gold=ref.gold, ref_index=ref.index, docstring=doc,
        variant=str(row.get("input", "") or ""), join=join, id_prefix=id_prefix,
    )

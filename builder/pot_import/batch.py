"""Batch import: resumable, parallel, confined, audited, with a report; ``arc-build import-pot``.

Every transcript is imported in a confined worker (never in this process); accepted entries are
written to ``entries/``, rejections appended to ``rejections.jsonl``, and ``index.json`` is
rewritten, so a run that stops resumes where it left off.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from builder.confined_pool import MalformedReply, WorkerLost, confined_map, rebuild_dataclass
from builder.gsm8k import ReferenceIndex, is_close, read_jsonl
from builder.independent import IndependentProgram, load_independent
from builder.pot_import.matching import sanitise
from builder.pot_import.program import RunTimeout, deadline
from builder.pot_import.transcripts import REASONS, Rejected, Transcript, join_transcripts
from builder.pot_import.verify import ExactEmbedder, Importer, ImportOptions, ImportResult, describe_exc
from builder.worked_solution import load_worked_solutions
from edge_runtime.entries.validator import validate_source
from edge_runtime.errors import UnsafeCodeError
from edge_runtime.execute.wire import _dumps_for_parent

_WORKER: Importer | None = None


def _worker_init(options: ImportOptions, memory_limit: int | None, scratch: str) -> None:
    """A pool worker runs third-party programs and registers candidate entries: it first gives up what
    the device's workers give up (edge_runtime/execute/confinement.py: no network, no new files, ``nobody``,
    an empty directory, an address-space cap), after importing everything the import will need.

    Its empty directory lies inside the parent's ``scratch``, which the parent removes: a worker that
    runs as ``nobody`` cannot remove its own directory from a sticky temporary directory."""
    global _WORKER
    import codecs

    import numpy.random  # noqa: F401 - the registry's embedder draws from it lazily

    import edge_runtime.entries.compiler  # noqa: F401 - imported before the file limit
    import edge_runtime.entries.registry  # noqa: F401
    import edge_runtime.read.extractor  # noqa: F401

    for codec in ("utf_8_sig", "unicode_escape", "raw_unicode_escape", "latin_1", "ascii", "idna", "cp1252",
                  "utf_16", "utf_32", "charmap"):
        codecs.lookup(codec)  # codecs load on first use, which the file limit would refuse
    from edge_runtime.execute.confinement import enter_sandbox

    _WORKER = Importer(options)
    workdir = tempfile.mkdtemp(prefix="worker-", dir=scratch)
    os.chmod(workdir, 0o777)
    enter_sandbox(memory_limit or (3 << 30), workdir, 2000, forkserver=False, cut_network=True)


def _worker_run(t: Transcript) -> bytes:
    """Import one transcript in the confined worker; the result leaves it as plain data that the
    parent reads with the restricted unpickler (builder/confined_pool.py), never as an object."""
    assert _WORKER is not None
    result = _safe_import(_WORKER, t)
    try:
        return _dumps_for_parent(("result", asdict(result)))
    except TypeError as exc:  # a value of a class the parent does not accept
        failed = ImportResult(t.row, t.entry_id, False, reason="runtime_error",
                              detail=f"importer: the result cannot leave the worker: {exc}")
        return _dumps_for_parent(("result", asdict(failed)))


def _safe_import(importer: Importer, t: Transcript) -> ImportResult:
    try:
        return importer.import_one(t)
    except MemoryError:
        return ImportResult(t.row, t.entry_id, False, reason="runtime_error", detail="out of memory")
    except RunTimeout as exc:
        return ImportResult(t.row, t.entry_id, False, reason="runtime_error", detail=str(exc))
    except RecursionError:
        return ImportResult(t.row, t.entry_id, False, reason="runtime_error", detail="recursion too deep")
    except Exception as exc:  # noqa: BLE001 - one bad transcript must not stop the import
        return ImportResult(t.row, t.entry_id, False, reason="runtime_error", detail=f"importer: {describe_exc(exc)}")


class RegistryDir:
    """The output directory: entries/*.py (accepted, reviewable), rejections.jsonl, index.json."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.entries = self.root / "entries"
        self.rejections = self.root / "rejections.jsonl"
        self.index = self.root / "index.json"
        self.entries.mkdir(parents=True, exist_ok=True)

    def accepted_ids(self) -> set[str]:
        return {p.stem for p in self.entries.glob("*.py") if not p.name.startswith("_")}

    def rejected(self) -> dict[int, dict[str, Any]]:
        out: dict[int, dict[str, Any]] = {}
        if self.rejections.exists():
            for line in self.rejections.read_text(encoding="utf-8").splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by a crash: that row is decided again
                out[int(record["row"])] = record
        return out

    def write_entry(self, result: ImportResult) -> None:
        assert result.id is not None
        meta = self.entries / "_meta"  # written first: the entry file is the commit marker
        meta.mkdir(exist_ok=True)
        (meta / f"{result.id}.json").write_text(json.dumps(result.info, ensure_ascii=False, indent=1), encoding="utf-8")
        path = self.entries / f"{result.id}.py"
        tmp = path.with_suffix(".py.tmp")
        tmp.write_text(result.source, encoding="utf-8")
        os.replace(tmp, path)

    def write_rejection(self, handle: Any, result: ImportResult) -> None:
        handle.write(json.dumps({
            "row": result.row, "id": result.id, "reason": result.reason, "detail": result.detail,
            **{k: v for k, v in result.info.items() if k == "attempts"},
        }, ensure_ascii=False) + "\n")
        handle.flush()

    def verified_count(self, ids: set[str], *, within_scope: bool = False) -> int:
        """How many of ``ids`` an independent program verified (their _meta records say so); with
        ``within_scope``, only those verified with some parameters held at their original values (``fixed``)."""
        count = 0
        for entry_id in ids:
            path = self.entries / "_meta" / f"{entry_id}.json"
            try:
                record = json.loads(path.read_text(encoding="utf-8")).get("verification") or {}
            except (OSError, json.JSONDecodeError):
                continue
            count += record.get("status") == "verified" and (not within_scope or bool(record.get("fixed")))
        return count

    def write_index(self, meta: dict[str, Any]) -> None:
        accepted = sorted(self.accepted_ids())
        entries = {}
        meta_dir = self.entries / "_meta"
        for entry_id in accepted:
            path = meta_dir / f"{entry_id}.json"
            entries[entry_id] = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        data = {**meta, "accepted": accepted, "entries": entries}
        tmp = self.index.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
        os.replace(tmp, self.index)


def id_prefix_for(reference: str | Path) -> str:
    """Entry ids are ``<prefix>-<reference row>``; the prefix is the reference file's first name part
    (``gsm8k_test.jsonl`` -> ``gsm8k``)."""
    head = re.split(r"[_.\-\s]", Path(reference).name.lower())[0]
    return sanitise(head) or "entry"


def run_import(
    file: str | Path,
    reference: str | Path,
    registry_dir: str | Path,
    *,
    limit: int | None = None,
    workers: int | None = None,
    options: ImportOptions | None = None,
    progress: bool = False,
    audit: bool = True,
    independent: Sequence[str | Path] = (),
    reference_solutions: bool = True,
) -> dict[str, Any]:
    """Import every transcript of ``file`` into ``registry_dir``; resumable; returns the summary.

    An entry is verified only where an independent solution agrees with it on rendered variants:
    ``independent`` files of programs written by someone else for the same reference questions
    (:func:`builder.independent.load_independent`) and, with ``reference_solutions``, the
    reference's own worked solution where its calculator annotations reach the gold answer."""
    started = time.perf_counter()
    options = options or ImportOptions()
    rows = read_jsonl(file)
    if limit is not None:
        rows = rows[:limit]
    ref = ReferenceIndex.load(reference)
    out = RegistryDir(registry_dir)
    prefix = id_prefix_for(reference)
    joined = _with_independent(join_transcripts(rows, ref, prefix), reference, ref, independent, reference_solutions)
    workers = workers if workers is not None else min(2, os.cpu_count() or 1)
    decided_now = _decide(out, joined, options, workers, progress)
    meta = {"source": str(file), "reference": str(reference), "options": options.__dict__,
            "independent": [str(p) for p in independent], "reference_solutions": reference_solutions}
    out.write_index(meta)
    considered_ids = {t.entry_id for t in joined if isinstance(t, Transcript)}
    accepted_ids = out.accepted_ids() & considered_ids
    rejected = out.rejected()
    considered_rows = set(range(len(rows)))
    by_reason = {reason: 0 for reason in REASONS}
    for row, record in rejected.items():
        if row in considered_rows:
            by_reason[record.get("reason", "runtime_error")] = by_reason.get(record.get("reason", "runtime_error"), 0) + 1
    wrong = audit_entries(out, ref, workers, prefix) if audit else None
    return {
        "total": len(rows),
        "accepted": len(accepted_ids),
        "verified": out.verified_count(accepted_ids),
        "verified_within_scope": out.verified_count(accepted_ids, within_scope=True),
        "rejected_by_reason": by_reason,
        "wrong_on_original": wrong if wrong is not None else 0,
        "seconds": round(time.perf_counter() - started, 2),
        "decided_this_run": decided_now,
    }


def _with_independent(joined: list[Transcript | Rejected], reference: str | Path, ref: ReferenceIndex,
                      independent: Sequence[str | Path], reference_solutions: bool) -> list[Transcript | Rejected]:
    """Every joined transcript with the independent solutions of its reference row attached."""
    by_row: dict[int, tuple[IndependentProgram, ...]] = {}
    for found in ((load_worked_solutions(reference, ref),) if reference_solutions else ()) + (
            (load_independent(independent, ref),) if independent else ()):
        for row, programs in found.items():
            by_row[row] = by_row.get(row, ()) + programs
    return [dataclasses.replace(t, independent=by_row.get(t.ref_index, ())) if isinstance(t, Transcript) else t
            for t in joined]


def _decide(out: RegistryDir, joined: list[Transcript | Rejected], options: ImportOptions, workers: int,
            progress: bool) -> int:
    """Import every transcript the registry has not decided yet, writing each result as it comes; returns how
    many were decided in this run. Join failures are written as rejections without a worker."""
    accepted_before = out.accepted_ids()
    rejected_before = out.rejected()
    todo: list[Transcript] = []
    decided_now = 0
    with open(out.rejections, "a", encoding="utf-8") as handle:
        for i, item in enumerate(joined):
            if isinstance(item, Rejected):
                if i not in rejected_before:
                    result = ImportResult(i, None, False, reason=item.reason, detail=item.detail)
                    out.write_rejection(handle, result)
                    rejected_before[i] = {"row": i, "reason": item.reason}
                continue
            if item.entry_id in accepted_before or item.row in rejected_before:
                continue
            todo.append(item)
        results = _results(todo, options, workers)
        bar = _progress_bar(len(todo)) if progress else None
        accepted_now = 0
        try:
            for result in results:
                if result.accepted:
                    out.write_entry(result)
                    accepted_now += 1
                else:
                    out.write_rejection(handle, result)
                decided_now += 1
                if bar is not None:
                    bar.update(bar.task_ids[0], advance=1, accepted=accepted_now)
        finally:
            if bar is not None:
                bar.stop()
    return decided_now


def _progress_bar(total: int) -> Any:
    """A started rich progress bar on stderr with one task of ``total`` transcripts."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(TextColumn("import-pot"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                   TextColumn("{task.fields[accepted]} accepted"), console=Console(stderr=True))
    bar.start()
    bar.add_task("import", total=total, accepted=0)
    return bar


def _results(todo: list[Transcript], options: ImportOptions, workers: int, *,
             run: Callable[[Transcript], bytes] | None = None) -> Iterator[ImportResult]:
    """Every transcript is imported behind ``_worker_init``'s walls, never in this process: one worker
    (in order) for a few transcripts or ``--workers 1``, else ``workers``. Each reply is plain data,
    read restrictedly and checked field by field before it becomes an :class:`ImportResult`.
    ``run`` (default :func:`_worker_run`) is what a worker does with a transcript: a module-level
    function, since the worker is a fresh interpreter that imports it by name."""

    def accept(reply: tuple) -> ImportResult:
        if len(reply) != 2 or reply[0] != "result":
            raise MalformedReply("an import reply is ('result', fields)")
        return rebuild_dataclass(ImportResult, reply[1], {
            "row": int, "id": (str, type(None)), "accepted": bool, "source": str,
            "reason": (str, type(None)), "detail": str, "info": dict,
        })

    n = 1 if workers <= 1 or len(todo) < 8 else workers
    with tempfile.TemporaryDirectory(prefix="arc-import-") as scratch:
        yield from _checked(confined_map(todo, run or _worker_run, accept, workers=n, initializer=_worker_init,
                                         initargs=(options, 3 * 1024**3, scratch)))


def _checked(results: Iterator[tuple[Transcript, ImportResult | WorkerLost]]) -> Iterator[ImportResult]:
    """A worker's answer stands only for its own transcript and only with a source that passes the
    entry validator again here: a worker runs third-party code and is not trusted."""
    for t, result in results:
        if not isinstance(result, WorkerLost) and (result.row, result.id) != (t.row, t.entry_id):
            # the id names the file the entry is written to: only the parent's own id is used
            result = WorkerLost("the worker answered for another transcript")
        if not isinstance(result, WorkerLost) and result.accepted:
            try:
                validate_source(result.source, f"<imported {t.entry_id}>")
            except UnsafeCodeError as exc:
                result = WorkerLost(f"the worker accepted an unsafe entry: {exc}")
        if isinstance(result, WorkerLost):
            yield ImportResult(t.row, t.entry_id, False, reason="runtime_error", detail=f"importer: {result}")
        else:
            yield result


def audit_entries(out: RegistryDir, reference: ReferenceIndex, workers: int = 1, prefix: str = "gsm8k") -> int:
    """Independent re-check of every accepted entry file: register, compile, answer the original
    question through the fast path; returns how many give a wrong answer (must be 0).

    Registering an entry imports it, so the check runs behind ``_worker_init``'s walls like the
    import itself: this process only reads the files and counts the plain booleans that come back."""
    rows = {f"{prefix}-{row.index:04d}": row for row in reference.rows}
    jobs = []
    for path in sorted(out.entries.glob("*.py")):
        row = rows.get(path.stem)
        jobs.append((str(path), path.read_text(encoding="utf-8"), row.question if row else "", row.gold if row else None))

    def accept(reply: tuple) -> bool:
        if len(reply) != 2 or reply[0] != "audit" or not isinstance(reply[1], bool):
            raise MalformedReply("an audit reply is ('audit', bool)")
        return reply[1]

    n = 1 if workers <= 1 or len(jobs) < 16 else workers
    with tempfile.TemporaryDirectory(prefix="arc-import-") as scratch:
        results = confined_map(jobs, _audit_run, accept, workers=n, initializer=_worker_init,
                               initargs=(ImportOptions(), 3 * 1024**3, scratch))
        return sum(1 for _, ok in results if ok is not True)


def _audit_run(job: tuple[str, str, str, Any]) -> bytes:
    return _dumps_for_parent(("audit", _audit_one(job)))


def _audit_one(job: tuple[str, str, str, Any]) -> bool:
    from edge_runtime.entries.compiler import LoadedCompiledEntry, compile_entry
    from edge_runtime.entries.registry import Registry
    from edge_runtime.read.extractor import Extractor

    path, source, question, gold = job
    entry_id = Path(path).stem
    try:
        registry = Registry(_AUDIT_EMBEDDER)
        registry.add_source(source, path, entry_id)
        registry.check_entry(entry_id)
        compiled = LoadedCompiledEntry(compile_entry(registry, entry_id).source, sanitise(entry_id))
        values = Extractor(None).extract(registry.entries[entry_id], question).values
        with deadline(5.0):
            answer = compiled.run(values).result["answer"]
        return bool(gold is not None and is_close(answer, gold))
    except (Exception, RunTimeout):  # noqa: BLE001 - any failure of an accepted entry counts as wrong
        return False


_AUDIT_EMBEDDER = ExactEmbedder()


def summary_table(summary: dict[str, Any]) -> Any:
    from rich.table import Table

    table = Table(title=f"import-pot: {summary['accepted']} of {summary['total']} accepted")
    table.add_column("outcome")
    table.add_column("rows", justify="right")
    table.add_column("share", justify="right")
    total = max(1, summary["total"])
    table.add_row("accepted", str(summary["accepted"]), f"{100 * summary['accepted'] / total:.1f}%")
    table.add_row("  of them verified by an independent program", str(summary.get("verified", 0)),
                  f"{100 * summary.get('verified', 0) / total:.1f}%")
    scoped = summary.get("verified_within_scope", 0)
    table.add_row("    of those within a scope (some numbers kept as stated)", str(scoped), f"{100 * scoped / total:.1f}%")
    for reason, count in summary["rejected_by_reason"].items():
        table.add_row(reason, str(count), f"{100 * count / total:.1f}%")
    table.add_row("accepted but wrong on original (audit)", str(summary["wrong_on_original"]), "")
    table.add_row("seconds", str(summary["seconds"]), "")
    return table


def cli_import_pot(args: Any) -> int:
    """``arc-build import-pot``: see builder/cli.py."""
    import sys

    from rich.console import Console

    if not Path(args.file).exists() or not Path(args.reference).exists():
        print(f"arc-build: {args.file if not Path(args.file).exists() else args.reference} does not exist", file=sys.stderr)
        return 2
    options = ImportOptions(number_words=getattr(args, "number_words", "parameter") or "parameter")
    summary = run_import(
        args.file, args.reference, args.registry, limit=args.limit, workers=getattr(args, "workers", None),
        options=options, progress=True, independent=getattr(args, "independent", ()) or (),
        reference_solutions=getattr(args, "reference_solutions", True),
    )
    console = Console(stderr=bool(args.json))
    console.print(summary_table(summary))
    if args.json:
        print(json.dumps({k: summary[k] for k in ("total", "accepted", "verified", "verified_within_scope",
                                                  "rejected_by_reason", "wrong_on_original", "seconds")}))
    return 0

"""``build_entries``: source-model transcripts → verified cache entries in a registry directory.

Each question is built in an isolated registry (the main registry's functions plus its own), and
only an entry that passes every test is merged: its module is written atomically as
``<registry>/<module>.py``, registered into the main registry (so later questions can reuse its
functions), and its decision recorded in ``<registry>/build_index.jsonl``. Rejections are recorded
there too, with their reason. A re-run skips every decided question, so a crash loses no accepted
entry; a module written just before a crash, whose index line is missing, is adopted on restart.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder.confined_build import read_sources
from builder.confined_session import ConfinedCompiled, ConfinedRegistry, ConfinedSession
from builder.llm import prompts
from builder.llm.assemble import assemble_module
from builder.llm.client import AnswerError, FatalLLMError, LLMClient, LLMError, Tool
from builder.llm.implement import FunctionOutcome, Implementer
from builder.llm.phases import Job, decompose, identify_parameters, isolate, plan_functions
from builder.llm.report import EntryReport, Rejected, economics, source_call_usd, summarise
from builder.llm.verify import answers_match, pass_rate, plan_round_trips, run_round_trip
from edge_runtime.entries.metadata import EntryPoint
from edge_runtime.errors import ArcError, CompileError
from edge_runtime.read.extractor import Extractor

INDEX = "build_index.jsonl"
_KEY_MARK = re.compile(r"^build-key: (\S+)$", re.MULTILINE)

ANSWER_TOOL = Tool(
    "record_answer",
    "Record the final answer to the question.",
    {"type": "object", "properties": {"answer": {"type": ["string", "number"]}}, "required": ["answer"]},
)


@dataclass
class BuildOptions:
    max_tries: int = 3              # candidates per function
    round_trips: int = 4            # N robustness tests per entry
    min_round_trip_pass: float = 1.0
    references: bool = True         # ask the source model to answer each rendered question
    reuse: bool = True
    run_seconds: float = 10.0       # time limit of one candidate run
    seed: int = 0


def question_key(row: Mapping[str, Any]) -> str:
    if row.get("id") is not None:
        return str(row["id"])
    return hashlib.sha256(" ".join(str(row["question"]).split()).encode("utf-8")).hexdigest()[:16]


#: Rejections that say nothing about the question (the service failed, the builder has a bug): a re-run retries them.
RETRIED_REASONS = frozenset({"llm_failed", "build_error"})


class BuildStore:
    """The registry directory: accepted modules (``*.py``) and the decision index.

    ``decisions`` holds the decided questions: accepted, or rejected for a reason other than
    :data:`RETRIED_REASONS` (those lines stay in the index as history)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.index = self.root / INDEX
        self.decisions: dict[str, dict[str, Any]] = {}
        if self.index.exists():
            for line in self.index.read_text(encoding="utf-8").splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by a crash: that question is decided again
                self._note(record)

    def adopt_orphans(self) -> list[str]:
        """Modules written by a run that crashed before recording them are accepted entries: record them."""
        adopted = []
        for path in sorted(self.root.glob("*.py")):
            found = _KEY_MARK.search(path.read_text(encoding="utf-8"))
            if found and found.group(1) not in self.decisions:
                self.record({"key": found.group(1), "question": "", "status": "accepted", "module": path.stem,
                             "detail": "adopted: module written before the crash that lost its index line"})
                adopted.append(path.stem)
        return adopted

    def write_module(self, module: str, source: str) -> Path:
        path = self.root / f"{module}.py"
        tmp = path.with_name(f".{module}.py.tmp")
        tmp.write_text(source, encoding="utf-8")
        os.replace(tmp, path)
        return path

    def record(self, decision: dict[str, Any]) -> None:
        with open(self.index, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(decision, ensure_ascii=False, default=str) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        self._note(decision)

    def _note(self, decision: dict[str, Any]) -> None:
        if decision.get("status") == "accepted" or decision.get("reason") not in RETRIED_REASONS:
            self.decisions[decision["key"]] = decision
        else:
            self.decisions.pop(decision["key"], None)


def load_registry(directory: Path, session: ConfinedSession) -> ConfinedRegistry:
    """The accepted modules of ``directory``, registered and checked in the confined session (this
    process only reads their text), as ``Registry.add_directory`` would."""
    directory = Path(directory)
    sources = read_sources(directory) if directory.exists() else {}
    return session.registry([(text, str(directory / name), Path(name).stem) for name, text in sources.items()],
                            check=True)


class QuestionBuilder:
    """Builds one question end to end; any failure becomes a rejection with its reason."""

    def __init__(self, client: LLMClient, main: ConfinedRegistry, options: BuildOptions, extractor: Extractor,
                 target_lm: Any = None) -> None:
        self.client = client
        self.main = main
        self.options = options
        self.extractor = extractor
        self.target_lm = target_lm

    def build(self, row: Mapping[str, Any]) -> tuple[EntryReport, str | None]:
        """(report, module source when accepted)."""
        started = time.perf_counter()
        job = Job(question_key(row), str(row["question"]), str(row.get("transcript", "")),
                  None if row.get("answer") is None else str(row["answer"]))
        report = EntryReport(job.key, job.question)
        source = None
        try:
            source = self._build(job, report)
            report.status, report.reason = "accepted", None
        except Rejected as exc:
            report.reason, report.detail = exc.reason, exc.detail
        except FatalLLMError:
            raise
        except AnswerError as exc:
            report.reason, report.detail = "llm_failed", str(exc)
        except LLMError as exc:
            report.reason, report.detail = "llm_failed", str(exc)
        except Exception as exc:  # noqa: BLE001 - one bad question must not stop the build
            report.reason, report.detail = "build_error", f"{type(exc).__name__}: {exc}"
        report.usage = job.meter.as_dict()
        report.cost_usd = round(job.meter.usd, 6)
        report.seconds = round(time.perf_counter() - started, 3)
        usd, basis = source_call_usd(row, self.client.config.prices)
        report.economics = economics(job.meter.usd, usd, basis)
        return report, source

    def _build(self, job: Job, report: EntryReport) -> str:
        isolation = isolate(self.client, job)
        reference: Any = job.answer if job.answer is not None else isolation["answer"]
        if job.answer is not None and not answers_match(isolation["answer"], job.answer):
            raise Rejected("isolation_mismatch", f"the transcript concludes {isolation['answer']!r}, the row says {job.answer!r}")
        decomposition = decompose(self.client, job, isolation)
        parameters = identify_parameters(self.client, job, decomposition, self.main)
        report.entry_id, report.module = parameters.entry_id, parameters.module
        plan = plan_functions(self.client, job, decomposition, parameters)
        report.granularity = plan.granularity
        workspace = self.main.clone()
        implementer = Implementer(self.client, job, plan, workspace, reference=reference,
                                  max_tries=self.options.max_tries, run_seconds=self.options.run_seconds,
                                  reuse=self.options.reuse)
        try:
            outcomes = implementer.run()
        finally:
            report.functions = [o.as_dict() for o in implementer.outcomes]
        entry = parameters.entry(job.question, plan.root_function.description, plan.answer_key)
        source = self.assemble(job, entry, outcomes)
        final = self.main.clone()
        try:
            final.add_source(source, f"{parameters.module}.py", parameters.module)
            final.check_entry(entry.id)
        except ArcError as exc:
            raise Rejected("entry_invalid", str(exc)) from exc
        conflicts = final.conflicts()
        if conflicts:
            raise Rejected("registry_conflict", conflicts)
        try:
            compiled = final.compile(entry.id)
        except (CompileError, ArcError) as exc:
            raise Rejected("compile_failed", str(exc)) from exc
        self.test_original(final, compiled, entry, reference)
        self.test_round_trips(job, entry, compiled, report)
        return source

    def assemble(self, job: Job, entry: EntryPoint, outcomes: list[FunctionOutcome]) -> str:
        reused = [o.reused["function"] for o in outcomes if o.reused]
        lines = [
            f"{entry.description}.",
            "",
            "Built by `arc-build entries` from a source-model transcript (phases: isolation, decomposition,",
            "parameters, planning, implementation with a 2-judge committee; root and round-trip tests passed).",
        ]
        if reused:
            lines.append(f"Reuses registered functions through do(): {', '.join(reused)}.")
        lines += ["", f"build-key: {job.key}"]
        chunks = [o.source for o in outcomes if o.source]
        return assemble_module(chunks, docstring="\n".join(lines) + "\n", entry=entry)

    def test_original(self, final: ConfinedRegistry, compiled: ConfinedCompiled, entry: EntryPoint, reference: Any) -> None:
        try:
            dynamic = final.run(entry.id, entry.original_values, target_lm=self.target_lm).result[entry.answer_key]
            static = compiled.run(entry.original_values, target_lm=self.target_lm).result[entry.answer_key]
        except ArcError as exc:
            raise Rejected("wrong_on_original", f"the entry crashed on the original values: {exc}") from exc
        if not answers_match(dynamic, reference) or not answers_match(static, reference):
            raise Rejected("wrong_on_original", f"answers {dynamic!r} (compiled {static!r}); the transcript's answer "
                                                f"is {reference!r}")

    def test_round_trips(self, job: Job, entry: EntryPoint, compiled: ConfinedCompiled, report: EntryReport) -> None:
        seed = int(hashlib.sha256(f"{self.options.seed}:{job.key}".encode()).hexdigest()[:8], 16)
        trips = plan_round_trips(entry, self.options.round_trips, seed)
        if self.options.references and trips:
            answers = self.client.parallel([self._reference_call(job, t.question) for t in trips])
            for trip, answer in zip(trips, answers):
                trip.reference = answer
        for trip in trips:
            run_round_trip(entry, compiled, self.extractor, trip, target_lm=self.target_lm)
        report.round_trips = [t.as_dict() for t in trips]
        if pass_rate(trips) < self.options.min_round_trip_pass:
            failed = [t for t in trips if not t.ok]
            raise Rejected("round_trip_failed", {
                "failed": len(failed), "of": len(trips),
                "parameters": sorted({name for t in failed for name in t.varied}),
                "problems": [t.problem for t in failed],
            })

    def _reference_call(self, job: Job, question: str) -> Callable[[], Any]:
        def call() -> Any:
            try:
                return self.client.ask("source", system=prompts.SOURCE_SYSTEM, prompt=prompts.source_prompt(question),
                                       tool=ANSWER_TOOL, meter=job.meter)["answer"]
            except AnswerError:
                return None  # no reference: the trip still checks extraction and that the run does not crash
        return call


def build_entries(
    transcripts: Iterable[Mapping[str, Any]],
    registry_dir: str | Path,
    client: LLMClient,
    *,
    session: ConfinedSession | None = None,
    options: BuildOptions | None = None,
    extractor: Extractor | None = None,
    target_lm: Any = None,
    progress: bool = False,
    on_accepted: Callable[[EntryReport], None] | None = None,
) -> dict[str, Any]:
    """Build every transcript row ({"question", "transcript", "answer"}) into ``registry_dir``; resumable.

    Every registration, compile and test run of the code the builder model writes happens in
    ``session`` (:mod:`builder.confined_session`; one is started, and closed at the end, when none
    is given), never in this process, which holds the API key.

    Returns the summary (see :func:`builder.llm.report.summarise`) with a ``reports`` list."""
    started = time.perf_counter()
    options = options or BuildOptions()
    own_session = session is None
    if session is None:
        session = ConfinedSession(run_seconds=options.run_seconds)
    try:
        return _build_all(transcripts, registry_dir, client, session, options, extractor, target_lm, progress,
                          on_accepted, started)
    finally:
        if own_session:
            session.close()


def _build_all(
    transcripts: Iterable[Mapping[str, Any]], registry_dir: str | Path, client: LLMClient, session: ConfinedSession,
    options: BuildOptions, extractor: Extractor | None, target_lm: Any, progress: bool,
    on_accepted: Callable[[EntryReport], None] | None, started: float,
) -> dict[str, Any]:
    store = BuildStore(registry_dir)
    store.adopt_orphans()
    main = load_registry(store.root, session)
    builder = QuestionBuilder(client, main, options, extractor or Extractor(None), target_lm)
    cost_before = client.meter.usd
    rows = list(transcripts)
    reports: list[EntryReport] = []
    fresh: list[EntryReport] = []
    bar = _progress(len(rows), progress)
    try:
        for row in rows:
            key = question_key(row)
            if key in store.decisions:
                reports.append(_from_decision(store.decisions[key]))
                bar.update(1)
                continue
            report, source = builder.build(row)
            fresh.append(report)
            if source is not None and report.module is not None:
                store.write_module(report.module, source)
                main.add_source(source, str(store.root / f"{report.module}.py"), report.module)
            store.record(report.as_dict())
            reports.append(report)
            bar.update(1)
            bar.set_postfix(accepted=sum(r.accepted for r in reports), usd=f"{client.meter.usd - cost_before:.3f}")
            if report.accepted and on_accepted is not None:
                on_accepted(report)
    finally:
        bar.close()
    summary = summarise(reports, built=len(fresh), cost_usd=client.meter.usd - cost_before,
                        usage=_usage_this_run(fresh),
                        seconds=time.perf_counter() - started)
    summary["reports"] = [r.as_dict() for r in reports]
    return summary


def _usage_this_run(reports: Iterable[EntryReport]) -> dict[str, dict[str, Any]]:
    total: dict[str, dict[str, Any]] = {}
    for report in reports:
        for role, tally in report.usage.items():
            into = total.setdefault(role, {})
            for name, value in tally.items():
                into[name] = into.get(name, 0) + value
    return dict(sorted(total.items()))


def _from_decision(decision: Mapping[str, Any]) -> EntryReport:
    fields = EntryReport.__dataclass_fields__
    return EntryReport(**{k: v for k, v in decision.items() if k in fields})


def _progress(total: int, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc="entries", unit="question", disable=not enabled, leave=False)


def read_transcripts(path: str | Path) -> list[dict[str, Any]]:
    rows = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            row = json.loads(line)
            if "question" not in row:
                raise ValueError(f"{path}:{n}: a transcript row needs a 'question'")
            rows.append(row)
    return rows


def cli_entries(args: Any) -> int:
    """``arc-build entries``: see builder/cli.py."""
    import sys

    from rich.console import Console

    from builder.llm.client import ClientConfig
    from builder.llm.report import entries_table, summary_table

    if getattr(args, "from_heat", None) is not None:
        from builder.fleet.heat import heat_rows

        if args.transcripts is not None or not Path(args.from_heat).is_file():
            print(f"arc-build: --from-heat takes the place of TRANSCRIPTS and needs an existing file "
                  f"(arc-build heat --json HEAT.json wrote it): {args.from_heat}", file=sys.stderr)
            return 2
        rows = heat_rows(json.loads(Path(args.from_heat).read_text(encoding="utf-8"))["classes"], args.top)
    elif args.transcripts is None or not Path(args.transcripts).exists():
        print(f"arc-build: {args.transcripts or 'TRANSCRIPTS'} does not exist (or pass --from-heat HEAT.json)", file=sys.stderr)
        return 2
    else:
        rows = read_transcripts(args.transcripts)
    config = ClientConfig.from_flags(args)
    options = BuildOptions(max_tries=args.max_tries, round_trips=args.round_trips)
    client = LLMClient(config)
    try:
        summary = build_entries(rows[: args.limit], args.registry, client,
                                options=options, progress=not args.json)
    except FatalLLMError as exc:
        print(f"arc-build: {exc}", file=sys.stderr)
        return 2
    finally:
        client.close()
    console = Console(stderr=bool(args.json))
    console.print(entries_table(summary["reports"]))
    console.print(summary_table(summary))
    if args.json:
        print(json.dumps({k: v for k, v in summary.items() if k != "reports"}))
    return 0

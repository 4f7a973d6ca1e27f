"""``arc-build eval``: every query of every set through every system, then the reports.

    arc-build eval --bundle BUNDLE --queries SET.jsonl [--queries SET2.jsonl ...] --json PATH
                   [--markdown PATH] [--plots DIR] [--limit N] [--systems arc,exact_cache,...]

1. The bundle is read without trusting anyone (``allow_unsigned=True``); its manifest's signer key
   becomes the key the evaluation's edge server trusts. Its target model (if any) is the cached
   default artefact (``builder.target_model.build_target_model``), checked against the bundle's digest.
2. The exact cache and GPTCache hold the bundle's entries as (original question, reference answer)
   pairs (:func:`builder.eval.systems.cache_contents`).
3. ``arc`` runs on a real edge server started for it (guard on, ``on_disagreement="miss"``: the
   device defaults); after the sets, queries that missed only because of the routing threshold are
   sent again with their closest entry forced (``InvokeRequest.entry_id``), which gives the hit rate
   below the bundle's threshold for the threshold sweep; then the speed runs. ``arc_guard_off`` runs
   on a second server (guard off, ``on_disagreement="decode"``).
4. Reports: one JSON object (``--json``), per-query records beside it (``*.records.jsonl``), Markdown
   tables and PNG plots.
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from builder.eval.answers import answers_match
from builder.eval.metrics import percentiles, summarise_by_kind, sweep
from builder.eval.querysets import QuerySet, load_query_set
from builder.eval.systems import ArcSystem, ExactCache, Outcome, cache_contents

ALL_SYSTEMS = ("arc", "arc_guard_off", "exact_cache", "gptcache", "gptcache_t0.9")
DEFAULT_REFERENCE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "gsm8k" / "gsm8k_test.jsonl"


@dataclass
class EvalOptions:
    bundle: Path
    queries: list[Path]
    json_path: Path
    markdown: Path | None = None
    plots: Path | None = None
    limit: int | None = None
    systems: tuple[str, ...] = ALL_SYSTEMS
    reference: Path | None = DEFAULT_REFERENCE
    speed_seconds: float = 8.0
    concurrency: tuple[int, ...] = (1, 4, 16, 32)
    sweep_probes: bool = True
    resume: bool = False
    threads: int = 2
    workers: int = 2
    command: str = ""
    progress: Callable[[str], None] = field(default=lambda message: None)


def record(qs: QuerySet, row: Any, system: str, outcome: Outcome, bundle_entries: set[str]) -> dict[str, Any]:
    return {
        "set": qs.name, "system": system, "index": row.index, "query": row.query, "kind": row.kind,
        "expected": row.answer, "expected_entry": row.entry_id, "should_serve": row.should_serve,
        "changed": row.changed, "unrelated": row.unrelated,
        "covered": (row.entry_id in bundle_entries) if row.entry_id else True,
        "served": outcome.served, "correct": outcome.served and answers_match(outcome.answer, row.answer),
        "answer": outcome.answer, "path": outcome.path, "miss_reason": outcome.miss_reason,
        "detail": outcome.detail[:300], "entry_id": outcome.entry_id, "similarity": round(outcome.similarity, 5),
        "latency_ms": round(outcome.latency_ms, 3), **({"server_ms": outcome.server_ms} if outcome.server_ms else {}),
        **({"verification": outcome.verification} if outcome.verification else {}),
        **{f"x_{k}": v for k, v in row.extra.items() if isinstance(v, (str, int, float, bool))},
    }


def run_system(system: Any, sets: Sequence[QuerySet], bundle_entries: set[str], progress: Callable[[str], None]
               ) -> list[dict[str, Any]]:
    out = []
    for qs in sets:
        started = time.perf_counter()
        for row in qs.rows:
            out.append(record(qs, row, system.name, system.answer(row.query), bundle_entries))
        progress(f"{system.name}: {qs.name} ({len(qs.rows)} queries) in {time.perf_counter() - started:.1f} s")
    return out


def bundle_model_dir(bundle: Any, progress: Callable[[str], None]) -> Path | None:
    """The default target-model artefact, checked to be the one ``bundle`` references."""
    if not bundle.target_model:
        return None
    from builder.bundle import target_model_reference
    from builder.target_model import build_target_model

    model = build_target_model(progress=progress)
    if target_model_reference(model)["sha256"] != bundle.target_model["sha256"]:
        raise RuntimeError(
            f"the bundle's target model {bundle.target_model['sha256'][:12]} is not the default artefact {model}; "
            "rebuild the bundle with the default target model")
    return model


def _arc_run(options: EvalOptions, bundle: Any, key: bytes, model: Path | None, sets: Sequence[QuerySet], *,
             name: str, guard: bool, on_disagreement: str, probes: bool, speed: bool) -> dict[str, Any]:
    from builder.eval.edge_process import EdgeServerProcess
    from builder.eval.speed import mixed_hits, throughput_table

    entries = set(bundle.entries)
    with EdgeServerProcess(options.bundle, key, model_dir=model, guard=guard, on_disagreement=on_disagreement,
                           threads=options.threads, workers=options.workers, log=options.progress) as server:
        system = ArcSystem(server.address, name=name)
        try:
            records = run_system(system, sets, entries, options.progress)
            result: dict[str, Any] = {"records": records, "activation_s": round(server.activation_s, 2)}
            if probes:
                result["probes"] = _probes(system, records, sets, options.progress)
            if speed:
                queries = mixed_hits(records)
                options.progress(f"{name}: throughput at concurrency {options.concurrency} on {len(queries)} hit queries")
                result["throughput"] = throughput_table(server.address, queries, options.speed_seconds, options.concurrency)
            result["rss_mb"] = round(server.rss_mb(), 1)
        finally:
            system.close()
    return result


def _probes(system: ArcSystem, records: list[dict[str, Any]], sets: Sequence[QuerySet],
            progress: Callable[[str], None]) -> dict[str, dict[str, Any]]:
    """For each below-threshold miss: what the closest entry would have done had routing passed it."""
    rows = {(qs.name, r.index): r for qs in sets for r in qs.rows}
    out: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    todo = [r for r in records if not r["served"] and r["miss_reason"] == "below_threshold" and r["entry_id"]]
    for r in todo:
        outcome = system.answer(r["query"], entry_id=r["entry_id"])
        row = rows[(r["set"], r["index"])]
        out[f"{r['set']}#{r['index']}"] = {"served": outcome.served, "correct": outcome.served and answers_match(
            outcome.answer, row.answer), "miss_reason": outcome.miss_reason}
    progress(f"{system.name}: {len(todo)} below-threshold probes in {time.perf_counter() - started:.1f} s")
    return out


def arc_sweep_points(records: Sequence[dict[str, Any]],
                     probes: dict[str, dict[str, Any]]) -> list[tuple[float, bool, bool, bool]]:
    """(similarity, would be right, would serve, should serve) per query, for metrics.sweep."""
    points = []
    for r in records:
        if r["served"]:
            points.append((1.0 if r["path"] == "template" else r["similarity"], r["correct"], True, r["should_serve"]))
        elif r["miss_reason"] == "below_threshold" and f"{r['set']}#{r['index']}" in probes:
            probe = probes[f"{r['set']}#{r['index']}"]
            points.append((r["similarity"], probe["correct"], probe["served"], r["should_serve"]))
        else:
            points.append((r["similarity"], False, False, r["should_serve"]))
    return points


def gptcache_sweep_points(records: Sequence[dict[str, Any]], nearest: dict[str, tuple[str, float]],
                          answers: dict[str, Any]) -> list[tuple[float, bool, bool, bool]]:
    """GPTCache serves the nearest cached question's answer when (1 + cos) / 2 >= its similarity_threshold."""
    points = []
    for r in records:
        entry_id, cosine = nearest[f"{r['set']}#{r['index']}"]
        points.append(((1 + cosine) / 2, answers_match(answers[entry_id], r["expected"]), True, r["should_serve"]))
    return points


class Checkpoints:
    """Each finished system's results beside the report (``<json stem>.parts/``), so ``--resume`` after an
    interrupted run redoes only the systems that did not finish. A part is reused only for the same
    bundle, query files (contents), limit and options."""

    def __init__(self, options: EvalOptions, bundle_digest: str) -> None:
        import hashlib

        self.dir = options.json_path.parent / (options.json_path.stem + ".parts")
        digest = hashlib.sha256(bundle_digest.encode())
        for path in options.queries:
            digest.update(Path(path).read_bytes())
        digest.update(json.dumps([options.limit, options.sweep_probes, options.speed_seconds,
                                  list(options.concurrency), options.threads, options.workers]).encode())
        self.fingerprint = digest.hexdigest()
        self.resume = options.resume

    def load(self, name: str) -> dict[str, Any] | None:
        path = self.dir / f"{name}.json"
        if not self.resume or not path.exists():
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        return data["data"] if data.get("fingerprint") == self.fingerprint else None

    def save(self, name: str, data: dict[str, Any]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.dir / f"{name}.json.tmp"
        tmp.write_text(json.dumps({"fingerprint": self.fingerprint, "data": data}, default=str), encoding="utf-8")
        os.replace(tmp, self.dir / f"{name}.json")


def run_eval(options: EvalOptions) -> dict[str, Any]:
    from edge_runtime.bundles.bundle import read_bundle

    progress = options.progress
    unknown = set(options.systems) - set(ALL_SYSTEMS)
    if unknown:
        raise ValueError(f"unknown systems {sorted(unknown)}; choose from {', '.join(ALL_SYSTEMS)}")
    bundle = read_bundle(options.bundle, trusted_keys=None, allow_unsigned=True)
    if not bundle.manifest.get("public_key"):
        raise RuntimeError(f"{options.bundle} is unsigned: the evaluation serves signed bundles only")
    key = bytes.fromhex(bundle.manifest["public_key"])
    sets = [load_query_set(p).limited(options.limit) for p in options.queries]
    names = [qs.name for qs in sets]
    if len(set(names)) != len(names):
        raise ValueError(f"two query sets share a name (file stem): {names}")
    entries = set(bundle.entries)
    contents = cache_contents(bundle, options.reference)
    started = datetime.now(timezone.utc)
    records: list[dict[str, Any]] = []
    extra: dict[str, Any] = {"skipped": {}}

    if "exact_cache" in options.systems:
        records += run_system(ExactCache(contents), sets, entries, progress)

    parts = Checkpoints(options, bundle.digest)
    if {"gptcache", "gptcache_t0.9"} & set(options.systems):
        from builder.eval.gptcache_baseline import GPTCacheBaseline, gptcache_missing

        reason = gptcache_missing()
        wanted = tuple(s for s in ("gptcache", "gptcache_t0.9") if s in options.systems)
        saved = parts.load("gptcache-" + "-".join(wanted))
        if reason:
            for name in wanted:
                extra["skipped"][name] = reason
        elif saved is not None:
            records += saved["records"]
            extra.update(saved["extra"])
            progress(f"gptcache: reusing the records of an interrupted run ({parts.dir})")
        else:
            before = len(records)
            baseline = GPTCacheBaseline(contents)
            try:
                progress(f"gptcache: {len(contents)} questions cached in {baseline.fill_s:.1f} s")
                for threshold, name in ((0.8, "gptcache"), (0.9, "gptcache_t0.9")):
                    if name in options.systems:
                        records += run_system(baseline.system(threshold, name), sets, entries, progress)
                keys = [(qs.name, r.index, r.query) for qs in sets for r in qs.rows]
                t0 = time.perf_counter()
                nearest = baseline.nearest([q for _, _, q in keys])
                extra["gptcache_nearest"] = {f"{s}#{i}": n for (s, i, _), n in zip(keys, nearest)}
                extra["gptcache_embed_ms_per_query"] = round((time.perf_counter() - t0) * 1000 / max(1, len(keys)), 3)
                extra["gptcache_fill_s"] = round(baseline.fill_s, 2)
            finally:
                baseline.close()
            parts.save("gptcache-" + "-".join(wanted), {
                "records": records[before:],
                "extra": {k: extra[k] for k in ("gptcache_nearest", "gptcache_embed_ms_per_query", "gptcache_fill_s")}})

    arc_results: dict[str, dict[str, Any]] = {}
    if {"arc", "arc_guard_off"} & set(options.systems):
        model = bundle_model_dir(bundle, progress)
        runs = {"arc": dict(guard=True, on_disagreement="miss", probes=options.sweep_probes, speed=True),
                "arc_guard_off": dict(guard=False, on_disagreement="decode", probes=False, speed=False)}
        for name, how in runs.items():
            if name not in options.systems:
                continue
            saved = parts.load(name)
            if saved is not None:
                progress(f"{name}: reusing the records of an interrupted run ({parts.dir})")
                arc_results[name] = saved
                continue
            arc_results[name] = _arc_run(options, bundle, key, model, sets, name=name, **how)
            parts.save(name, arc_results[name])
        for result in arc_results.values():
            records += result["records"]

    finished = datetime.now(timezone.utc)
    report = build_report(options, bundle, sets, records, arc_results, extra, contents, started, finished)
    write_outputs(options, report, records)
    return report


def build_report(options: EvalOptions, bundle: Any, sets: Sequence[QuerySet], records: list[dict[str, Any]],
                 arc_results: dict[str, dict[str, Any]], extra: dict[str, Any], contents: Sequence[Any],
                 started: datetime, finished: datetime) -> dict[str, Any]:
    systems = [s for s in ALL_SYSTEMS if any(r["system"] == s for r in records)]
    report: dict[str, Any] = {
        "meta": {
            "command": options.command,
            "started": started.isoformat(timespec="seconds"), "finished": finished.isoformat(timespec="seconds"),
            "seconds": round((finished - started).total_seconds(), 1),
            "machine": {"cpus": os.cpu_count(), "gpu": "none", "platform": platform.platform(),
                        "processor": platform.machine(), "python": platform.python_version()},
            "bundle": {"path": str(options.bundle), "name": bundle.name, "version": bundle.version,
                       "entries": len(bundle.entries), "threshold": bundle.routing.get("threshold"),
                       "target_model": (bundle.target_model or {}).get("sha256", "")},
            "limit": options.limit,
            "systems": systems,
            "skipped": extra.get("skipped", {}),
            "cached_questions": len(contents),
        },
        "sets": {},
    }
    for qs in sets:
        mine = [r for r in records if r["set"] == qs.name]
        report["sets"][qs.name] = {
            "path": str(qs.path), "queries": len(qs.rows), "kinds": qs.kinds,
            "systems": {s: summarise_by_kind([r for r in mine if r["system"] == s]) for s in systems
                        if any(r["system"] == s for r in mine)},
        }
    # Threshold sweeps, all sets pooled.
    sweeps: dict[str, Any] = {}
    if "arc" in arc_results and "probes" in arc_results["arc"]:
        arc_records = [r for r in records if r["system"] == "arc"]
        points = arc_sweep_points(arc_records, arc_results["arc"]["probes"])
        thresholds = [round(0.3 + 0.025 * i, 3) for i in range(29)]
        sweeps["arc"] = {"parameter": "routing threshold (static-embedding cosine)",
                         "operating_point": bundle.routing.get("threshold"), "points": sweep(points, thresholds)}
    if "gptcache_nearest" in extra:
        which = "gptcache" if "gptcache" in systems else "gptcache_t0.9"
        base = [r for r in records if r["system"] == which]  # the rows and expectations; served or not is recomputed
        answers = {c.entry_id: c.answer for c in contents}
        points = gptcache_sweep_points(base, extra["gptcache_nearest"], answers)
        thresholds = [round(0.5 + 0.0125 * i, 4) for i in range(41)]
        sweeps["gptcache"] = {"parameter": "similarity_threshold ((1 + cosine) / 2)", "operating_point": 0.8,
                              "points": sweep(points, thresholds)}
    report["sweeps"] = sweeps
    # Speed.
    speed: dict[str, Any] = {}
    for name, result in arc_results.items():
        hits = [r for r in result["records"] if r["served"]]
        speed[name] = {
            "hit_latency_ms": {path: percentiles([r["latency_ms"] for r in hits if r["path"] == path])
                               for path in sorted({r["path"] for r in hits})},
            "miss_latency_ms": percentiles([r["latency_ms"] for r in result["records"] if not r["served"]]),
            "activation_s": result.get("activation_s"), "server_rss_mb": result.get("rss_mb"),
        }
        if "throughput" in result:
            speed[name]["throughput"] = result["throughput"]
    for name in ("gptcache", "gptcache_t0.9", "exact_cache"):
        mine = [r for r in records if r["system"] == name]
        if mine:
            speed[name] = {"lookup_latency_ms": percentiles([r["latency_ms"] for r in mine]),
                           "hit_latency_ms": percentiles([r["latency_ms"] for r in mine if r["served"]])}
    if "gptcache" in speed:
        speed["gptcache"]["fill_s"] = extra.get("gptcache_fill_s")
    report["speed"] = speed
    return report


def write_outputs(options: EvalOptions, report: dict[str, Any], records: list[dict[str, Any]]) -> None:
    from builder.eval.report import write_json, write_markdown, write_records

    write_json(options.json_path, report)
    write_records(options.json_path.with_suffix(".records.jsonl"), records)
    if options.markdown:
        write_markdown(options.markdown, report)
    if options.plots:
        try:
            from builder.eval.plots import write_plots
        except ImportError as exc:  # matplotlib is a builder extra
            report["meta"]["plots_skipped"] = str(exc)
            write_json(options.json_path, report)
        else:
            report["meta"]["plots"] = [str(p) for p in write_plots(options.plots, report, records)]
            write_json(options.json_path, report)
            if options.markdown:
                write_markdown(options.markdown, report)


def command_line(args: Any) -> str:
    """The ``arc-build eval`` command that reproduces ``args``."""
    import shlex

    parts = ["arc-build", "eval", "--bundle", str(args.bundle)]
    for path in args.queries:
        parts += ["--queries", str(path)]
    parts += ["--json", str(args.json)]
    for flag, value in (("--markdown", args.markdown), ("--plots", args.plots), ("--limit", args.limit),
                        ("--systems", args.systems)):
        if value is not None:
            parts += [flag, str(value)]
    if args.speed_seconds != 8.0:
        parts += ["--speed-seconds", f"{args.speed_seconds:g}"]
    if args.no_probes:
        parts.append("--no-probes")
    return " ".join(shlex.quote(p) for p in parts)


def cli_eval(args: Any) -> int:
    """``arc-build eval``: see builder/cli.py."""
    import sys

    from rich.console import Console

    console = Console(stderr=True)
    systems = tuple(s.strip() for s in args.systems.split(",") if s.strip()) if args.systems else ALL_SYSTEMS
    options = EvalOptions(
        bundle=args.bundle, queries=list(args.queries), json_path=args.json, markdown=args.markdown,
        plots=args.plots if args.plots is not None else Path(args.json).parent / "img", limit=args.limit,
        systems=systems, speed_seconds=args.speed_seconds,
        sweep_probes=not args.no_probes, resume=args.resume, command=command_line(args), progress=console.log,
    )
    for path in [options.bundle, *options.queries]:
        if not Path(path).exists():
            print(f"arc-build: {path} does not exist", file=sys.stderr)
            return 2
    try:
        report = run_eval(options)
    except (RuntimeError, ValueError) as exc:
        print(f"arc-build: {exc}", file=sys.stderr)
        return 2
    from builder.eval.report import headline_table

    console.print(headline_table(report))
    print(json.dumps({"json": str(options.json_path), "sets": list(report["sets"]), "systems": report["meta"]["systems"]}))
    return 0

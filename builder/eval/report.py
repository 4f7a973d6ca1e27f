"""Report writers: the JSON object, per-query records, Markdown tables, and the console headline."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def write_json(path: Path, report: dict[str, Any]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(report, indent=1, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def write_records(path: Path, records: Iterable[dict[str, Any]]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for r in records:
            handle.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
    return path


def _pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.1f}%)" if whole else "—"


def _ms(value: Any) -> str:
    return "—" if value is None else (f"{value:.1f}" if value >= 1 else f"{value:.3f}")


def _set_table(name: str, data: dict[str, Any]) -> list[str]:
    lines = [f"### {name} ({data['queries']} queries)", "",
             "| system | should serve | coverage | served right | served wrong | missed | changed served | "
             "unrelated served | p50 ms | p95 ms | p99 ms |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for system, s in data["systems"].items():
        lat = s["latency_ms"]
        lines.append(
            f"| {system} | {s['should_serve']} | {_pct(s['coverage'], s['should_serve'])} | "
            f"{_pct(s['served_right'], s['should_serve'])} | {_pct(s['served_wrong'], s['should_serve'])} | "
            f"{s['missed']} | {_pct(s['changed_served'], s['changed'])} | {_pct(s['unrelated_served'], s['unrelated'])} | "
            f"{_ms(lat['p50'])} | {_ms(lat['p95'])} | {_ms(lat['p99'])} |")
    lines.append("")
    kinds = data.get("kinds") or []
    if kinds:
        lines += [f"#### {name} by kind", "",
                  "| kind | system | rows | served right | served wrong | changed served |",
                  "|---|---|---:|---:|---:|---:|"]
        for kind in kinds:
            for system, s in data["systems"].items():
                k = s.get("by_kind", {}).get(kind)
                if not k:
                    continue
                lines.append(
                    f"| {kind} | {system} | {k['queries']} | {_pct(k['served_right'], k['should_serve'])} | "
                    f"{_pct(k['served_wrong'], k['should_serve'])} | {_pct(k['changed_served'], k['changed'])} |")
        lines.append("")
    verification = {system: s.get("by_verification") for system, s in data["systems"].items()
                    if any(status for status in (s.get("by_verification") or {}))}
    if verification:
        lines += [f"#### {name}: ARC hits by the serving entry's verification", "",
                  "| system | verification | served right | served wrong | changed served | unrelated served |",
                  "|---|---|---:|---:|---:|---:|"]
        for system, statuses in verification.items():
            for status, c in statuses.items():
                lines.append(f"| {system} | {status or '—'} | {c['served_right']} | {c['served_wrong']} | "
                             f"{c['changed_served']} | {c['unrelated_served']} |")
        lines.append("")
    reasons = {system: s["miss_reasons"] for system, s in data["systems"].items() if system.startswith("arc")}
    if reasons:
        lines += [f"#### {name}: ARC misses by reason, hits by path", ""]
        for system, counts in reasons.items():
            paths = data["systems"][system]["served_by_path"]
            lines.append(f"- **{system}**: misses " + (", ".join(f"{k} {v}" for k, v in counts.items()) or "none")
                         + "; hits " + (", ".join(f"{k} {v}" for k, v in paths.items()) or "none"))
        lines.append("")
    return lines


def markdown(report: dict[str, Any], image_dir: str | None = None) -> str:
    meta = report["meta"]
    b = meta["bundle"]
    lines = [
        "<!-- written by arc-build eval (builder/eval/report.py) -->",
        f"Run: {meta['started']} → {meta['finished']} ({meta['seconds']} s) on {meta['machine']['cpus']} CPU cores, "
        f"no GPU ({meta['machine']['platform']}, Python {meta['machine']['python']}).",
        "",
        f"Bundle `{b['name']}-{b['version']}`: {b['entries']} entries, routing threshold {b['threshold']:.3f}"
        + (f", target model {b['target_model'][:12]}" if b["target_model"] else ", no target model")
        + f". Caches compared hold the same {meta['cached_questions']} questions.",
        "",
        "```", meta["command"] or "arc-build eval ...", "```", "",
    ]
    if meta.get("limit"):
        lines += [f"`--limit {meta['limit']}`: at most {meta['limit']} rows per set (spread evenly over kinds).", ""]
    for system, reason in meta.get("skipped", {}).items():
        lines += [f"- {system} skipped: {reason}"]
    for name, data in report["sets"].items():
        lines += _set_table(name, data)
    sweeps = report.get("sweeps", {})
    if sweeps:
        lines += ["### Threshold sweeps (all sets pooled)", "",
                  "| system | threshold | served right (of should-serve) | false hits (of changed + unrelated) |",
                  "|---|---:|---:|---:|"]
        for system, data in sweeps.items():
            for point in data["points"][::4]:
                lines.append(f"| {system} | {point['threshold']} | {point['served_right']} | {point['false_hits']} |")
        lines.append("")
    speed = report.get("speed", {})
    if speed:
        lines += ["### Speed", "", "| system | what | n | p50 ms | p95 ms | p99 ms |", "|---|---|---:|---:|---:|---:|"]
        for system, data in speed.items():
            for label, key in (("hit", "hit_latency_ms"), ("lookup", "lookup_latency_ms")):
                value = data.get(key)
                if not value:
                    continue
                if "n" in value:
                    lines.append(f"| {system} | {label} | {value['n']} | {_ms(value['p50'])} | {_ms(value['p95'])} | "
                                 f"{_ms(value['p99'])} |")
                else:
                    for path, p in value.items():
                        lines.append(f"| {system} | {label} ({path}) | {p['n']} | {_ms(p['p50'])} | {_ms(p['p95'])} "
                                     f"| {_ms(p['p99'])} |")
            miss = data.get("miss_latency_ms")
            if miss and miss.get("n"):
                lines.append(f"| {system} | miss | {miss['n']} | {_ms(miss['p50'])} | {_ms(miss['p95'])} | {_ms(miss['p99'])} |")
        lines.append("")
        for system, data in speed.items():
            if data.get("throughput"):
                lines += [f"Throughput of `{system}` (hit queries of this run, mixed paths, gRPC on 127.0.0.1):", "",
                          "| concurrency | requests | req/s | p50 ms | p95 ms | p99 ms | failed |",
                          "|---:|---:|---:|---:|---:|---:|---:|"]
                for t in data["throughput"]:
                    lat = t["latency_ms"]
                    lines.append(f"| {t['concurrency']} | {t['requests']} | {t['rps']} | {_ms(lat['p50'])} | "
                                 f"{_ms(lat['p95'])} | {_ms(lat['p99'])} | {t['failed']} |")
                lines.append("")
    plots = meta.get("plots") or []
    if plots:
        lines += ["### Plots", ""]
        for plot in plots:
            target = os.path.join(image_dir, Path(plot).name) if image_dir else plot
            lines.append(f"![{Path(plot).stem}]({target})")
        lines.append("")
    return "\n".join(lines) + "\n"


def write_markdown(path: Path, report: dict[str, Any]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    plots = report["meta"].get("plots") or []
    image_dir = os.path.relpath(Path(plots[0]).parent, path.parent) if plots else None
    path.write_text(markdown(report, image_dir), encoding="utf-8")
    return path


def headline_table(report: dict[str, Any]) -> Any:
    from rich.table import Table

    table = Table(title=f"arc-build eval: {report['meta']['bundle']['name']}-{report['meta']['bundle']['version']}")
    for column in ("set", "system", "served right", "served wrong", "changed served", "unrelated served", "p50 ms"):
        table.add_column(column)
    for name, data in report["sets"].items():
        for system, s in data["systems"].items():
            table.add_row(name, system, _pct(s["served_right"], s["should_serve"]), _pct(s["served_wrong"], s["should_serve"]),
                          _pct(s["changed_served"], s["changed"]), _pct(s["unrelated_served"], s["unrelated"]),
                          _ms(s["latency_ms"]["p50"]))
    return table

"""PNG plots of an evaluation (matplotlib, Agg backend): thresholds, latency, outcomes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

COLOURS = {"arc": "#1f77b4", "arc_guard_off": "#9ecae1", "exact_cache": "#7f7f7f", "gptcache": "#d62728",
           "gptcache_t0.9": "#ff9896"}


def _rates(points: Sequence[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t = np.array([p["threshold"] for p in points], dtype=float)
    right = np.array([p["served_right"] if p["served_right"] is not None else np.nan for p in points], dtype=float)
    false = np.array([p["false_hits"] if p["false_hits"] is not None else np.nan for p in points], dtype=float)
    return t, right, false


def plot_sweeps(path: Path, sweeps: dict[str, Any]) -> Path | None:
    if not sweeps:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
    for ax, system in zip(axes[:2], ("arc", "gptcache")):
        data = sweeps.get(system)
        if not data:
            ax.set_axis_off()
            continue
        t, right, false = _rates(data["points"])
        ax.plot(t, right, "-o", ms=3, color=COLOURS[system], label="served right / should-serve")
        ax.plot(t, false, "--s", ms=3, color="#444444", label="false hits / (changed + unrelated)")
        ax.axvline(data["operating_point"], color="#999999", lw=1, ls=":", label=f"operating point {data['operating_point']:.3f}")
        ax.set_xlabel(data["parameter"])
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(system)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best")
    ax = axes[2]
    for system, data in sweeps.items():
        t, right, false = _rates(data["points"])
        ax.plot(false, right, "-o", ms=3, color=COLOURS.get(system, None), label=system)
        op = int(np.argmin(np.abs(t - float(data["operating_point"]))))
        ax.plot([false[op]], [right[op]], "k*", ms=11)
    ax.set_xlabel("false hits (served, must not be)")
    ax.set_ylabel("served right")
    ax.set_title("trade-off across thresholds (★ operating point)")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.suptitle("Hit rate vs false hits across thresholds, all query sets pooled")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_latency(path: Path, records: Sequence[dict[str, Any]]) -> Path | None:
    groups: dict[str, list[float]] = {}
    for r in records:
        if r["system"].startswith("arc"):
            label = f"{r['system']} {r['path'] if r['served'] else 'miss'}"
        elif r["system"] == "exact_cache":
            continue
        else:
            label = f"{r['system']} lookup"
        groups.setdefault(label, []).append(max(float(r["latency_ms"]), 1e-3))
    if not groups:
        return None
    labels = sorted(groups)
    fig, ax = plt.subplots(figsize=(10, 0.5 * len(labels) + 1.8))
    ax.boxplot([groups[k] for k in labels], orientation="horizontal", whis=(1, 99), showfliers=False)
    ax.set_yticks(range(1, len(labels) + 1), [f"{k} (n={len(groups[k])})" for k in labels], fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("latency per query, ms (client wall clock; whiskers p1–p99)")
    ax.grid(alpha=0.3, axis="x")
    ax.set_title("Latency by system and serving path")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_outcomes(path: Path, report: dict[str, Any]) -> Path | None:
    sets = report["sets"]
    systems = report["meta"]["systems"]
    if not sets or not systems:
        return None
    fig, axes = plt.subplots(1, len(sets), figsize=(3.4 * len(sets) + 1, 4.2), squeeze=False)
    for ax, (name, data) in zip(axes[0], sets.items()):
        xs = np.arange(len(systems))
        right, wrong, neg = [], [], []
        for system in systems:
            s = data["systems"].get(system)
            should = s["should_serve"] if s else 0
            negatives = (s["changed"] + s["unrelated"]) if s else 0
            right.append(s["served_right"] / should if s and should else 0)
            wrong.append(s["served_wrong"] / should if s and should else 0)
            neg.append((s["changed_served"] + s["unrelated_served"]) / negatives if s and negatives else 0)
        ax.bar(xs - 0.2, right, 0.4, color="#2ca02c", label="served right")
        ax.bar(xs - 0.2, wrong, 0.4, bottom=right, color="#ff7f0e", label="served wrong")
        ax.bar(xs + 0.2, neg, 0.4, color="#d62728", label="must-not served")
        ax.set_xticks(xs, systems, rotation=40, ha="right", fontsize=8)
        ax.set_ylim(0, 1.02)
        ax.set_title(name, fontsize=9)
        ax.grid(alpha=0.3, axis="y")
    axes[0][0].legend(fontsize=7, loc="upper left")
    fig.suptitle("Outcomes per set (left bar: share of should-serve rows; right bar: share of changed/unrelated rows)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def write_plots(directory: Path, report: dict[str, Any], records: Sequence[dict[str, Any]], prefix: str = "eval") -> list[Path]:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = [
        plot_sweeps(directory / f"{prefix}_thresholds.png", report.get("sweeps", {})),
        plot_latency(directory / f"{prefix}_latency.png", records),
        plot_outcomes(directory / f"{prefix}_outcomes.png", report),
    ]
    return [p for p in written if p is not None]

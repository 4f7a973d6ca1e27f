"""How closely a quantised target model follows its fp32 reference on the extractor's real prompts.

For GSM-Plus questions that should be served, the extractor's prompt for the question's entry
(cached prefix, the question, then a JSON answer: the aligner's draft, else the entry's original
values) is run through the fp32 compact graph and through each artefact given; at every position
of the question and the answer the next-token choice is compared (top-1 agreement) and the
divergence of the distributions measured (KL(fp32 || quantised), nats). Both are computed with
the same fp32 head, so only the body of the network is compared. Pass time (question + answer
on the cached prefix) is timed per artefact in its own process, side by side in one run.

    .venv/bin/python benchmarks/agreement.py --bundle build/eval4/bundles/gsm8k-eval-*.arcb \\
        --key build/eval4/keys/arc-signing.pub --queries build/eval4/sets/gsm_plus_dev.jsonl \\
        --reference build/target-models/<fp32> ARTEFACT [ARTEFACT ...] [--prompts 35] [--json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from edge_runtime.bundles.bundle import read_bundle  # noqa: E402
from edge_runtime.model.lm_engine import LMEngine  # noqa: E402
from edge_runtime.read.draft import draft_values  # noqa: E402
from edge_runtime.read.extractor import prompt_parts  # noqa: E402

Prompt = tuple[str, str, str]  # (prefix, suffix, answer)


def prompts(bundle_path: Path, key: Path, queries: Path, count: int) -> list[Prompt]:
    """The extractor's prompts for the first ``count`` should-serve rows whose entry is in the bundle."""
    bundle = read_bundle(bundle_path, trusted_keys=[bytes.fromhex(key.read_text().strip())])
    out: list[Prompt] = []
    for line in queries.read_text().splitlines():
        row = json.loads(line)
        entry = bundle.entries.get(f"gsm8k-{int(row.get('gsm8k_row', -1)):04d}")
        if entry is None or row.get("reasoning_changed") or row.get("unrelated"):
            continue
        draft = draft_values(entry.template, entry.params, row["query"])
        if draft is None or None in draft.values():  # no whole draft (free text is the model's): the original values
            draft = {p.name: p.text(p.original) for p in entry.params}
        answer = draft
        prefix, suffix = prompt_parts(entry, row["query"])
        out.append((prefix, suffix, json.dumps(answer, ensure_ascii=False)))
        if len(out) == count:
            break
    return out


def run_artefact(artefact: str, items: list[Prompt], threads: int) -> dict[str, Any]:
    """Hidden states at the question and answer positions of every prompt, and the pass times."""
    engine = LMEngine(artefact, threads=threads)
    hidden, times = [], []
    for prefix, suffix, answer in items:
        state = engine.prefix_state(engine.encode(prefix))
        ids = engine.encode(suffix + answer)
        engine.forward(ids, state)  # warm
        start = time.perf_counter()
        result = engine.forward(ids, state)
        times.append((time.perf_counter() - start) * 1000)
        hidden.append(result.hidden[:-1])  # row j predicts token j + 1
    return {"hidden": hidden, "pass_ms": statistics.median(times), "recipe": engine.manifest.get("recipe"),
            "tokens": statistics.median(len(engine.encode(s + a)) for _, s, a in items)}


def _log_softmax(x: np.ndarray) -> np.ndarray:
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def compare(reference: list[np.ndarray], other: list[np.ndarray], head: np.ndarray) -> tuple[float, float]:
    agree, kl, n = 0, 0.0, 0
    for ref, got in zip(reference, other):
        p = _log_softmax(ref @ head.T)
        q = _log_softmax(got @ head.T)
        agree += int((p.argmax(-1) == q.argmax(-1)).sum())
        kl += float((np.exp(p) * (p - q)).sum())
        n += len(ref)
    return agree / n, kl / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("artefacts", nargs="+", type=Path)
    parser.add_argument("--reference", type=Path, required=True, help="the fp32 artefact")
    parser.add_argument("--bundle", type=Path, required=True)
    parser.add_argument("--key", type=Path, required=True, help="the bundle signer's public key")
    parser.add_argument("--queries", type=Path, required=True)
    parser.add_argument("--prompts", type=int, default=35)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    items = prompts(args.bundle, args.key, args.queries, args.prompts)
    results: dict[str, dict[str, Any]] = {}
    for artefact in [args.reference, *args.artefacts]:
        # One process per artefact: a second loaded model's spinning threads would slow the first.
        with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
            results[str(artefact)] = pool.submit(run_artefact, str(artefact), items, args.threads).result()
    head = np.load(args.reference / "embedding.npy", mmap_mode="r").astype(np.float32)
    reference = results[str(args.reference)]["hidden"]
    rows = []
    for artefact in args.artefacts:
        got = results[str(artefact)]
        top1, kl = compare(reference, got["hidden"], head)
        rows.append({"artefact": artefact.name, "recipe": got["recipe"], "top1_agreement": round(top1, 4),
                     "kl": round(kl, 4), "pass_ms": round(got["pass_ms"], 1)})
    summary = {"prompts": len(items), "tokens_per_pass": results[str(args.reference)]["tokens"],
               "reference_pass_ms": round(results[str(args.reference)]["pass_ms"], 1), "artefacts": rows}
    if args.json:
        print(json.dumps(summary))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"next-token agreement with fp32 — {len(items)} extraction prompts, "
                        f"~{summary['tokens_per_pass']:.0f} tokens a pass, {args.threads} threads")
    for column in ("artefact", "recipe", "top-1 agreement", "KL (nats)", "pass ms"):
        table.add_column(column, justify="left" if column in ("artefact", "recipe") else "right")
    table.add_row(args.reference.name, "fp32 (reference)", "100%", "0", str(summary["reference_pass_ms"]))
    for row in rows:
        table.add_row(row["artefact"], str(row["recipe"]), f"{row['top1_agreement']:.1%}", f"{row['kl']:.4f}",
                      str(row["pass_ms"]))
    Console().print(table)


if __name__ == "__main__":
    main()

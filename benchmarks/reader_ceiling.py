"""Where GSM-Plus's should-serve misses come from: the reader (IS2) or the guard.

The same bundle answers the same GSM-Plus rows in process, once per reader, everything else as shipped
(routing, fast paths, set-aside reading, guard):
- ``shipped``: the device default: the aligner drafts the values, the target model must reproduce them;
- ``model``: the target model's own constrained reading is served where it disagrees with the draft;
- ``draft``: the aligner's draft is served without the model (no second reader);
- ``oracle``: a perfect reader for the kinds that keep the original numbers (problem understanding,
  distraction insertion): the row's own entry gets its original values, any other entry misses;
- ``oracle-no-guard``: the same, with the guard off: what routing alone lets through.
With the oracle reader, the guard's remaining refusals of distractions are numbers it cannot show irrelevant;
``relevance`` asks the target model itself whether each such sentence is needed, next to the sentences the
guard refuses in added-operation rows: ``relevance_auc`` is the area under the ROC curve of its Yes-No
margin (0.5: chance), the test of whether the reader could take that judgement from the guard.
For the kinds whose numbers change (numerical, digit, int-dec-frac) the oracle's values are wrong by
construction, so its columns count only the two kinds above; for the changed-reasoning kinds they measure
what the guard alone refuses when the original values are read.

    .venv/bin/python benchmarks/reader_ceiling.py --bundle build/eval20/bundles/gsm8k-eval-*.arcb \\
        --queries build/eval20/sets/gsm_plus_dev.jsonl [--readers shipped,draft,oracle] [--plot PNG] [--json]

JSON keys: ``readers`` -> reader -> ``kinds`` -> kind -> {``n``, ``right``, ``wrong``, ``served``},
``changed_served``, ``changed``; ``goal`` (served-right share per should-serve kind); ``relevance_auc``,
``relevance_pairs`` (added-operation and distraction sentences judged) when the oracle reader ran.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tqdm import tqdm  # noqa: E402

from builder.eval.answers import answers_match  # noqa: E402
from builder.eval.querysets import load_query_set  # noqa: E402
from builder.eval.runner import bundle_model_dir  # noqa: E402
from edge_runtime.bundles.bundle import read_bundle  # noqa: E402
from edge_runtime.entries.metadata import EntryPoint  # noqa: E402
from edge_runtime.errors import ExtractionError  # noqa: E402
from edge_runtime.read.draft import draft_values  # noqa: E402
from edge_runtime.read.extractor import Extraction, Extractor  # noqa: E402
from edge_runtime.read.guard import make_guard, scan  # noqa: E402
from edge_runtime.read.question_words import sentences  # noqa: E402
from edge_runtime.serving.runtime import EdgeRuntime, RuntimeOptions  # noqa: E402

READERS = ("shipped", "model", "draft", "oracle", "oracle-no-guard")
SAME_NUMBERS = ("problem understanding", "distraction insertion")
GOAL = 0.97


class DraftReader(Extractor):
    """Serves the aligner's draft as read, without the model's verification."""

    def _with_model(self, entry: EntryPoint, question: str) -> Extraction:
        draft = draft_values(entry.template, entry.params, question)
        if draft is None or None in draft.values():
            raise ExtractionError("extraction_failed", "the aligner found no draft (or the question has free text)")
        return Extraction(values={}, spans={p.name: draft[p.name] for p in entry.params}, path="draft")


class OracleReader(Extractor):
    """Reads the row's own entry perfectly (its original values); any other entry misses."""

    expected = ""

    def _with_model(self, entry: EntryPoint, question: str) -> Extraction:
        if entry.id != self.expected:
            raise ExtractionError("extraction_failed", "the oracle reads only the row's own entry")
        return Extraction(values={}, spans={p.name: p.text(p.original) for p in entry.params}, path="oracle")


_UNUSED = re.compile(r"the question states '(.+?)', a quantity the entry's reasoning does not use")
RELEVANCE_PROMPT = ("<|im_start|>system\nYou are a careful math tutor.<|im_end|>\n<|im_start|>user\nWord problem: {q}\n\n"
                    "Is this sentence needed to compute the answer: \"{s}\"? Answer Yes or No.<|im_end|>\n"
                    "<|im_start|>assistant\n")


def refused_sentence(question: str, detail: str) -> str | None:
    """The sentence holding the number the guard could not account for, if that was the refusal."""
    match = _UNUSED.search(detail or "")
    if match is None:
        return None
    mention = next((m for m in scan(question) if m.text == match.group(1)), None)
    if mention is None:
        return None
    return next((question[s:e].strip() for s, e in sentences(question) if s <= mention.start < e), None)


def relevance_auc(engine: Any, judged: list[tuple[bool, str, str]]) -> float | None:
    """AUC of the target model's Yes-minus-No margin for "is this sentence needed" (needed: an added operation)."""
    if engine is None:
        return None
    yes, no = engine.encode("Yes")[-1], engine.encode("No")[-1]
    margins = []
    for needed, question, sentence in tqdm(judged, desc="relevance", unit="q"):
        result = engine.forward(engine.encode(RELEVANCE_PROMPT.format(q=question, s=sentence)), engine.empty_state())
        scores = engine.scores(result.hidden[-1], [yes, no])
        margins.append((needed, float(scores[0] - scores[1])))
    positive = [m for n, m in margins if n]
    negative = [m for n, m in margins if not n]
    if not positive or not negative:
        return None
    wins = sum((a > b) + 0.5 * (a == b) for a in positive for b in negative)
    return wins / (len(positive) * len(negative))


def _extractor(reader: str, engine: Any) -> Extractor:
    if reader == "shipped":
        return Extractor(engine, on_disagreement="miss")
    if reader == "model":
        return Extractor(engine, on_disagreement="decode")
    if reader == "draft":
        return DraftReader(engine)
    return OracleReader(engine)


def measure(bundle_path: Path, queries: Path, readers: list[str]) -> dict[str, Any]:
    """Per reader, per kind: rows, served right, served wrong; changed-reasoning rows served."""
    bundle = read_bundle(bundle_path, trusted_keys=None, allow_unsigned=True)
    public = bytes.fromhex(bundle.manifest["public_key"])
    rows = load_query_set(queries).rows
    out: dict[str, Any] = {}
    judged: list[tuple[bool, str, str]] = []  # (an added operation, question, the sentence the guard refused)
    auc = None
    with tempfile.TemporaryDirectory() as tmp:
        runtime = EdgeRuntime(RuntimeOptions(data_dir=Path(tmp), trusted_keys=[public], use_worker_pool=False))
        try:
            model = bundle_model_dir(bundle, lambda message: None)
            if model is not None:
                runtime.blobs.import_target_model(model)
            staged, missing = runtime.stage_bundle(bundle_path.read_bytes())
            runtime.blobs.import_from_dir(bundle_path.parent / "blobs", missing)  # routing table, tokenizer
            runtime.activate(f"{staged.name}-{staged.version}")
            answerer = runtime._active
            assert answerer is not None
            engine, guard = answerer.extractor.engine, answerer.guard
            for reader in readers:
                extractor = _extractor(reader, engine)
                answerer.read.extractor = extractor
                answerer.read.guard = None if reader == "oracle-no-guard" else (guard or make_guard())
                kinds: dict[str, dict[str, int]] = {}
                changed = changed_served = 0
                for row in tqdm(rows, desc=reader, unit="q"):
                    if isinstance(extractor, OracleReader):
                        extractor.expected = row.entry_id
                    _, answer = runtime.answer(row.query)
                    if row.should_serve:
                        tally = kinds.setdefault(row.kind, {"n": 0, "right": 0, "wrong": 0, "served": 0})
                        tally["n"] += 1
                        tally["served"] += answer.hit
                        right = answer.hit and answers_match(answer.answer, row.answer)
                        tally["right"] += right
                        tally["wrong"] += answer.hit and not right
                    elif row.changed:
                        changed += 1
                        changed_served += answer.hit
                    if reader == "oracle" and row.kind in ("distraction insertion", "adding operation"):
                        sentence = refused_sentence(row.query, answer.miss_detail)
                        if sentence:
                            judged.append((row.kind == "adding operation", row.query, sentence))
                if reader.startswith("oracle"):
                    kinds = {k: v for k, v in kinds.items() if k in SAME_NUMBERS}
                out[reader] = {"kinds": kinds, "changed": changed, "changed_served": changed_served}
            if judged:
                auc = relevance_auc(engine, judged)
        finally:
            runtime.close()
    pairs = {"added_operation": sum(n for n, _, _ in judged), "distraction": sum(not n for n, _, _ in judged)}
    return {"readers": out, "goal": GOAL, "queries": str(queries), "bundle": bundle_path.name,
            "relevance_auc": auc, "relevance_pairs": pairs}


def table(result: dict[str, Any]) -> str:
    readers = list(result["readers"])
    kinds = sorted({k for r in result["readers"].values() for k in r["kinds"]})
    lines = ["| kind | " + " | ".join(readers) + " |", "|---|" + "---|" * len(readers)]
    for kind in kinds:
        cells = []
        for reader in readers:
            tally = result["readers"][reader]["kinds"].get(kind)
            cells.append("—" if tally is None else f"{tally['right']}/{tally['n']} right, {tally['wrong']} wrong")
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    lines.append("| changed served | " + " | ".join(
        f"{r['changed_served']}/{r['changed']}" for r in result["readers"].values()) + " |")
    if result.get("relevance_auc") is not None:
        pairs = result["relevance_pairs"]
        lines.append(f"\nThe target model as relevance judge: AUC {result['relevance_auc']:.2f} over "
                     f"{pairs['added_operation']} added-operation and {pairs['distraction']} distraction sentences "
                     "the guard refused (0.5: chance).")
    return "\n".join(lines)


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    readers = list(result["readers"])
    kinds = sorted({k for r in result["readers"].values() for k in r["kinds"]})
    fig, ax = plt.subplots(figsize=(10, 5.5))
    width = 0.8 / len(readers)
    for i, reader in enumerate(readers):
        shares = [100 * t["right"] / t["n"] if (t := result["readers"][reader]["kinds"].get(k)) else 0 for k in kinds]
        tally = result["readers"][reader]
        ax.bar([x + i * width for x in range(len(kinds))], shares, width,
               label=f"{reader} (changed served {tally['changed_served']}/{tally['changed']})")
    ax.axhline(100 * result["goal"], color="k", linestyle="--", linewidth=1, label="goal")
    ax.set_xticks([x + width * (len(readers) - 1) / 2 for x in range(len(kinds))], [k.replace(" ", "\n", 1) for k in kinds])
    ax.set_ylabel("served right, % of the kind's rows")
    ax.set_title("GSM-Plus should-serve kinds by reader (oracle: kinds that keep the original numbers)")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=8, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.18))
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bundle", type=Path, required=True)
    parser.add_argument("--queries", type=Path, required=True)
    parser.add_argument("--readers", default=",".join(READERS))
    parser.add_argument("--plot", type=Path)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    readers = [r for r in args.readers.split(",") if r]
    unknown = set(readers) - set(READERS)
    if unknown:
        parser.error(f"unknown readers {sorted(unknown)}; choose from {', '.join(READERS)}")
    result = measure(args.bundle, args.queries, readers)
    if args.plot:
        plot(result, args.plot)
    print(json.dumps(result) if args.json else table(result))


if __name__ == "__main__":
    main()

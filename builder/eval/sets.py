"""Query-set preparation: derived JSONL sets under build/eval/sets (never in the repository).

- ``gsm_hard.jsonl`` — GSM-Hard v2 inputs (a GSM8K test question with one number replaced by a
  large one) whose GSM8K entry is in the evaluation bundle; answer = the PAL program's ``target``;
  should be served.
- ``gsm8k_unrelated.jsonl`` — the GSM8K test questions of the entries held out of the bundle
  (``unrelated: true``): same style and domain, no entry answers them.
- ``gsm_symbolic_dev.jsonl``, ``gsm_plus_dev.jsonl`` — the two dev sets, passed through.
- ``gsm_plus_tune.jsonl`` / ``gsm_plus_heldout.jsonl`` — gsm_plus_dev split by seed question
  (:func:`plus_split`): the guard was tuned on the first and is reported on the second.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from builder.eval.gsm_data import DATA, GSM8K_TEST, PAL_GSMHARD
from builder.eval.querysets import gsm8k_entry_id
from builder.eval.split import Split

#: Seed of the tune / held-out split of gsm_plus_dev's 100 seed questions.
PLUS_SPLIT_SEED = 20261201


def _read(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _write(path: Path, rows: Iterable[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def gsm8k_gold(answer: str) -> int | float:
    from builder.gsm8k import gold_answer

    value = gold_answer(answer)
    assert value is not None, answer
    return value


def pal_reference_rows(registry: Path) -> dict[int, int]:
    """PAL file row -> GSM8K test row, for every entry the importer accepted (from its index.json;
    entries without one are joined again on the program's docstring)."""
    index_path = Path(registry) / "index.json"
    mapping: dict[int, int] = {}
    if index_path.exists():
        for meta in json.loads(index_path.read_text(encoding="utf-8")).get("entries", {}).values():
            if "row" in meta and "reference_row" in meta:
                mapping[int(meta["row"])] = int(meta["reference_row"])
    if mapping:
        return mapping
    from builder.gsm8k import ReferenceIndex
    from builder.pot_import.transcripts import program_docstring

    reference = ReferenceIndex.load(GSM8K_TEST)
    for i, row in enumerate(_read(PAL_GSMHARD)):
        found = reference.exact(program_docstring(row.get("code", "")))
        if found is not None:
            mapping[i] = found.index
    return mapping


def gsm_hard_rows(split: Split, registry: Path) -> list[dict[str, Any]]:
    in_bundle = set(split.bundle_ids)
    rows = []
    for pal_row, ref_row in sorted(pal_reference_rows(registry).items()):
        if gsm8k_entry_id(ref_row) not in in_bundle:
            continue
        record = _read_pal()[pal_row]
        rows.append({"query": record["input"], "answer": record["target"], "gsm8k_row": ref_row, "pal_row": pal_row})
    return rows


_PAL_CACHE: list[dict[str, Any]] = []


def _read_pal() -> list[dict[str, Any]]:
    if not _PAL_CACHE:
        _PAL_CACHE.extend(_read(PAL_GSMHARD))
    return _PAL_CACHE


def unrelated_rows(split: Split) -> list[dict[str, Any]]:
    gsm8k = _read(GSM8K_TEST)
    rows = []
    for entry_id in split.unrelated_ids:
        index = int(entry_id.rsplit("-", 1)[1])
        rows.append({"query": gsm8k[index]["question"], "answer": gsm8k_gold(gsm8k[index]["answer"]),
                     "unrelated": True, "gsm8k_row": index})
    return rows


def plus_split(seeds: Iterable[int], seed: int = PLUS_SPLIT_SEED) -> tuple[set[int], set[int]]:
    """(tune, held-out): the GSM8K seed rows of gsm_plus_dev shuffled with a fixed seed, halved."""
    ordered = sorted(set(seeds))
    random.Random(seed).shuffle(ordered)
    half = len(ordered) // 2
    return set(ordered[:half]), set(ordered[half:])


def write_sets(out_dir: Path, split: Split, registry: Path) -> dict[str, Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {
        "gsm_hard": _write(out_dir / "gsm_hard.jsonl", gsm_hard_rows(split, registry)),
        "gsm8k_unrelated": _write(out_dir / "gsm8k_unrelated.jsonl", unrelated_rows(split)),
    }
    for name in ("gsm_symbolic_dev", "gsm_plus_dev"):
        written[name] = Path(shutil.copyfile(DATA / f"{name}.jsonl", out_dir / f"{name}.jsonl"))
    plus = _read(DATA / "gsm_plus_dev.jsonl")
    tune, held_out = plus_split(r["gsm8k_row"] for r in plus)
    written["gsm_plus_tune"] = _write(out_dir / "gsm_plus_tune.jsonl", (r for r in plus if r["gsm8k_row"] in tune))
    written["gsm_plus_heldout"] = _write(out_dir / "gsm_plus_heldout.jsonl", (r for r in plus if r["gsm8k_row"] in held_out))
    return written


def plus_split_report(records_path: Path, set_name: str = "gsm_plus_dev") -> str:
    """Markdown: the figures of ``set_name`` per system × kind on the tune and the held-out halves
    (records of an ``arc-build eval`` run, ``*.records.jsonl``)."""
    from builder.eval.metrics import summarise_by_kind

    records = [r for r in _read(Path(records_path)) if r["set"] == set_name]
    tune, held_out = plus_split(int(r["expected_entry"].rsplit("-", 1)[1]) for r in records)
    lines = ["| half | system | kind | served right | served wrong | changed served |", "|---|---|---|---:|---:|---:|"]
    systems = list(dict.fromkeys(r["system"] for r in records))
    for half, seeds in (("tune", tune), ("held-out", held_out)):
        for system in systems:
            mine = [r for r in records if r["system"] == system and int(r["expected_entry"].rsplit("-", 1)[1]) in seeds]
            summary = summarise_by_kind(mine)
            for kind, s in [("all", summary), *sorted(summary.get("by_kind", {}).items())]:
                right = f"{s['served_right']}/{s['should_serve']}" if s["should_serve"] else "—"
                wrong = f"{s['served_wrong']}/{s['should_serve']}" if s["should_serve"] else "—"
                changed = f"{s['changed_served']}/{s['changed']}" if s["changed"] else "—"
                lines.append(f"| {half} | {system} | {kind} | {right} | {wrong} | {changed} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Query-set helpers for arc-build eval.")
    sub = parser.add_subparsers(dest="command", required=True)
    split = sub.add_parser("plus-split", help="tune / held-out figures of gsm_plus_dev from an eval run's records")
    split.add_argument("records", type=Path)
    args = parser.parse_args(argv)
    if args.command == "plus-split":
        print(plus_split_report(args.records), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

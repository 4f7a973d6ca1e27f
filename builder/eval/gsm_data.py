"""Where the GSM8K-derived data lives: the shared data directory, outside the repository (read only).

Its own module so that the bundle builder (:mod:`builder.eval.gsm_bundle`), the query sets
(:mod:`builder.eval.sets`) and the probes can all name the files without importing each other.
"""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
GSM8K_TEST = DATA / "gsm8k" / "gsm8k_test.jsonl"
PAL_GSMHARD = DATA / "gsm8k" / "pal_gsmhard_v2.jsonl"
#: Independently written programs for the same questions: an entry is verified only where one agrees.
INDEPENDENT = (DATA / "gsm8k" / "pot_codex_fewshot.jsonl", DATA / "gsm8k" / "pot_codex_zeroshot.jsonl")
DEV_SETS = (DATA / "gsm_symbolic_dev.jsonl", DATA / "gsm_plus_dev.jsonl")

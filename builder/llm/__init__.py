"""The LLM builder: source-model transcripts → cache entries, through the five build phases.

- :mod:`client` — one Messages API client for the roles S (source), B (builder, extended thinking)
  and J (a committee of 2 judges): structured answers via tool use, retries with backoff, bounded
  concurrency, dollars per role, record/replay cassettes.
- :mod:`phases` — phases 1–4 (isolation, decomposition, parameters, planning); :mod:`implement` —
  phase 5, the per-function agentic loop with registry reuse, static checks, runs and judges;
  :mod:`verify` — the root correctness test and round-trip robustness tests; :mod:`assemble` —
  the entry module; :mod:`prompts` — what the models are told; :mod:`schema` — tool-input checks.
- :mod:`build` — ``build_entries`` (resumable, isolated per question, merged on success) and the
  ``arc-build entries`` command; :mod:`report` — per-entry reports, rejection reasons, economics.
- :mod:`stub_server` — a loopback Messages API stand-in for tests.
"""

from builder.llm.build import BuildOptions, build_entries, read_transcripts
from builder.llm.client import ClientConfig, LLMClient, Prices

__all__ = ["BuildOptions", "ClientConfig", "LLMClient", "Prices", "build_entries", "read_transcripts"]

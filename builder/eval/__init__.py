"""``arc-build eval``: ARC against its peers on query sets, through a real edge server.

One concept per module:

- :mod:`builder.eval.answers`      — answer normalisation and comparison
- :mod:`builder.eval.querysets`    — a query set: rows, kinds, expected behaviour, entry ids
- :mod:`builder.eval.sets`         — deriving the GSM8K query sets into ``build/eval/``
- :mod:`builder.eval.gsm_bundle`   — the evaluation bundle (a subset of the imported GSM8K entries)
- :mod:`builder.eval.gsm_data`     — where the GSM8K-derived data files live
- :mod:`builder.eval.split`        — the bundle / held-out split, saved as split.json
- :mod:`builder.eval.edge_process` — the edge server process the evaluation starts and stops
- :mod:`builder.eval.systems`      — the systems compared (ARC over gRPC, exact-match cache)
- :mod:`builder.eval.gptcache_baseline` — GPTCache 0.1.44, offline
- :mod:`builder.eval.metrics`      — per set × system × kind figures from per-query records
- :mod:`builder.eval.speed`        — hit latency and throughput by concurrency
- :mod:`builder.eval.runner`       — the whole run and the CLI entry point
- :mod:`builder.eval.report`       — JSON and Markdown writers
- :mod:`builder.eval.compare_records` — two runs' records row for row, timings aside (a no-change check)
- :mod:`builder.eval.plots`        — PNG plots (matplotlib)
"""

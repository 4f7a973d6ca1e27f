"""The loopback Messages stub as the tuning tests script it (tests/builder/test_finetune_rephrase.py,
test_finetune_misslog.py): the example entry they ask about, a judge's verdict, a client that retries at once, and
the check that the key reached no file the builder wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from builder.llm.client import ClientConfig
from builder.llm.stub_server import StubMessagesServer

#: The example entry both modules rephrase or label, and its parameters in the order the device's target lists them.
EXAMPLE_ENTRY = "school-trip-cost"
EXAMPLE_ORDER = ("students", "teachers", "seats", "bus_price", "ticket_price")
#: A base URL no server listens on: a client that reaches for the network there fails at once.
NOTHING_LISTENS = "http://127.0.0.1:9"


def verdict(role: str, same: bool, match: str | None = None, reason: str = "same question, same values",
            repeat: bool = False) -> dict[str, Any]:
    """A judge's scripted answer (``role`` "judge-1" or "judge-2"), for requests containing ``match`` if given."""
    out: dict[str, Any] = {"role": role, "input": {"reason": reason, "same_meaning": same}}
    if match is not None:
        out["match"] = match
    if repeat:
        out["repeat"] = True
    return out


def fast_config(api_key: str, base_url: str, **overrides: Any) -> ClientConfig:
    """A client of the stub with ``api_key`` that retries without waiting."""
    return ClientConfig(api_key=api_key, base_url=base_url, base_delay=0.001, max_delay=0.01, timeout=30, **overrides)


def assert_no_file_holds_the_key(root: Path, stub: StubMessagesServer, api_key: str) -> None:
    """Every request carried the key as a bearer token; neither the cassette nor the cache under ``root`` holds it."""
    assert stub.requests and all(r.headers["authorization"] == f"Bearer {api_key}" for r in stub.requests)
    for name in ("cassette.jsonl", "cache.jsonl"):
        text = (root / name).read_text(encoding="utf-8")
        assert text.strip() and api_key not in text and api_key[8:] not in text

"""A loopback stand-in for the Messages API, for tests: scripted answers, injected faults, recorded requests.

``POST /v1/messages`` answers like the service: a JSON ``Message`` (id, type, role, model, content
blocks, stop_reason, usage). Each request takes the first *unconsumed* script item that matches it
(see :func:`item_matches`); items marked ``"repeat": true`` are never consumed, so they serve as
defaults placed after the specific items. A script item is one of

- ``{"input": {...}}``: a ``tool_use`` block calling the request's only (or named ``tool``) tool;
  a ``thinking`` block (with a signature) goes first when the request enabled thinking;
- ``{"text": "..."}``: a text-only answer (a model that forgot to call the tool);
- ``{"content": [...]}``: the content blocks verbatim (ids and signatures are filled in);
- ``{"status": 429 | 500 | ..., "error": "..."}``: an HTTP error with the service's error body;
- ``{"raw": "..."}``: a 200 whose body is these bytes (a malformed answer).

Optional keys: ``role`` (matched against the ``[arc-role:NAME]`` tag in the system prompt),
``tool`` (a tool the request offers), ``match`` (a substring of the request's JSON body),
``usage`` (token counts), ``stop_reason``. Every request is recorded with its headers and body.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ROLE_TAG = re.compile(r"\[arc-role:([\w-]+)\]")

DEFAULT_USAGE = {
    "input_tokens": 1000,
    "output_tokens": 200,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}

_ERROR_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
    404: "not_found_error", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error",
}


@dataclass
class RecordedRequest:
    """One request the stub received."""

    path: str
    headers: dict[str, str]
    body: Any
    raw: str
    served: dict[str, Any] | None

    @property
    def role(self) -> str | None:
        return request_role(self.body) if isinstance(self.body, dict) else None

    @property
    def tools(self) -> list[str]:
        return [t.get("name", "") for t in self.body.get("tools", [])] if isinstance(self.body, dict) else []


def system_text(body: dict[str, Any]) -> str:
    system = body.get("system", "")
    if isinstance(system, list):
        return "\n".join(block.get("text", "") for block in system if isinstance(block, dict))
    return str(system)


def request_role(body: dict[str, Any]) -> str | None:
    found = ROLE_TAG.search(system_text(body))
    return found.group(1) if found else None


def item_matches(item: dict[str, Any], body: dict[str, Any], raw: str) -> bool:
    """An item matches when each of its ``role``, ``tool`` and ``match`` keys (those present) agrees."""
    if "role" in item and item["role"] != request_role(body):
        return False
    if "tool" in item and item["tool"] not in [t.get("name") for t in body.get("tools", [])]:
        return False
    if "match" in item and item["match"] not in raw and item["match"] not in json.dumps(body, ensure_ascii=False):
        return False
    return True


class StubMessagesServer:
    """``with StubMessagesServer(script) as stub: ... stub.base_url ... stub.requests``."""

    def __init__(self, script: Iterable[dict[str, Any]] = ()) -> None:
        self.script: list[dict[str, Any]] = [dict(item) for item in script]
        self.consumed: list[bool] = [False] * len(self.script)
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._counter = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle ----------------------------------------------------------------
    def start(self) -> StubMessagesServer:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length).decode("utf-8", "replace")
                status, payload = stub.handle(self.path, {k.lower(): v for k, v in self.headers.items()}, raw)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                if status == 429:
                    self.send_header("retry-after", "0")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="stub-messages", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> StubMessagesServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "the stub is not running"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    # ---- answering ------------------------------------------------------------------
    def add(self, *items: dict[str, Any]) -> None:
        with self._lock:
            self.script += [dict(i) for i in items]
            self.consumed += [False] * len(items)

    def unused(self) -> list[dict[str, Any]]:
        """Script items never served (repeat items excluded): a test can assert the script was used up."""
        return [item for item, used in zip(self.script, self.consumed) if not used and not item.get("repeat")]

    def handle(self, path: str, headers: dict[str, str], raw: str) -> tuple[int, Any]:
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            body = None
        with self._lock:
            item = self._take(body, raw) if isinstance(body, dict) and path.rstrip("/").endswith("/v1/messages") else None
            self.requests.append(RecordedRequest(path, headers, body, raw, item))
            self._counter += 1
            serial = self._counter
        if item is None:
            return 500, _error_body(500, f"stub: no scripted response for this request ({path})")
        if "status" in item:
            return int(item["status"]), _error_body(int(item["status"]), item.get("error", "injected error"))
        if "raw" in item:
            return 200, str(item["raw"]).encode("utf-8")
        return 200, self._message(item, body, serial)

    def _take(self, body: dict[str, Any], raw: str) -> dict[str, Any] | None:
        for i, item in enumerate(self.script):
            if not self.consumed[i] and item_matches(item, body, raw):
                if not item.get("repeat"):
                    self.consumed[i] = True
                return item
        return None

    def _message(self, item: dict[str, Any], body: dict[str, Any], serial: int) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if "content" in item:
            content = [dict(block) for block in item["content"]]
        else:
            thinking = (body.get("thinking") or {}).get("type") == "enabled"
            if thinking:
                content.append({"type": "thinking", "thinking": item.get("thinking", "Working through the request.")})
            if "text" in item:
                content.append({"type": "text", "text": item["text"]})
            if "input" in item:
                tools = [t.get("name") for t in body.get("tools", [])]
                name = item.get("tool") or (tools[0] if tools else "tool")
                content.append({"type": "tool_use", "name": name, "input": item["input"]})
        for k, block in enumerate(content):
            if block.get("type") == "thinking":
                block.setdefault("signature", f"stub-signature-{serial}-{k}")
            if block.get("type") == "tool_use":
                block.setdefault("id", f"toolu_stub_{serial:04d}_{k}")
        stop = item.get("stop_reason") or ("tool_use" if any(b.get("type") == "tool_use" for b in content) else "end_turn")
        return {
            "id": f"msg_stub_{serial:04d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "stub-model"),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {**DEFAULT_USAGE, **item.get("usage", {})},
        }


def _error_body(status: int, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message}}

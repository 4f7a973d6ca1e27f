"""What a confined import worker runs in place of ``_worker_run`` in tests/builder/test_confined_pool.py.

Module-level, so the worker (a fresh interpreter behind ``_worker_init``'s walls) imports them by name.
"""

from __future__ import annotations

import os
import pickle
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from builder.pot_import.verify import ImportResult
from edge_runtime.execute.wire import _dumps_for_parent


def _reply(result: ImportResult) -> bytes:
    return _dumps_for_parent(("result", asdict(result)))


def _can_open() -> bool:
    try:
        open(__file__, "rb").close()
    except OSError:
        return False
    return True


def where(t: Any) -> bytes:
    """Where the work ran: its process, user, environment and whether it may still open files."""
    return _reply(ImportResult(t.row, t.entry_id, False, reason="no_parameters", detail="probe", info={
        "pid": os.getpid(), "uid": os.getuid(), "api_key": "ANTHROPIC_API_KEY" in os.environ,
        "can_open": _can_open(),
    }))


def where_slowly(t: Any) -> bytes:
    """:func:`where`, then a pause, so the parent can look at the worker while it still runs."""
    reply = where(t)
    time.sleep(0.5)
    return reply


def dies_on_row_one(t: Any) -> bytes:
    if t.row == 1:
        os._exit(3)
    return where(t)


def forged(t: Any) -> bytes:
    """Row 0 answers for another entry id; the others accept a program that imports ``os``."""
    if t.row == 0:
        return _reply(ImportResult(t.row, "../../escaped", True, source="x = 1\n"))
    return _reply(ImportResult(t.row, t.entry_id, True, source="import os\n"))


class RunsCommand:
    """Unpickling this with the full unpickler calls os.system."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def runs_command(t: Any) -> bytes:
    """A reply that would run a command in the parent (touch ``t.marker``) if the parent unpickled it fully."""
    return pickle.dumps(("result", RunsCommand(Path(t.marker))))


def echo(item: int) -> bytes:
    return _dumps_for_parent(("ok", item * 2, os.getpid()))

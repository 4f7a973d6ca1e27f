"""The PoT importer runs every transcript in a confined worker, and reads its replies as plain data only.

Real forked workers behind ``_worker_init``'s walls. ``Importer.import_one`` and ``_worker_run`` are
replaced (the fork inherits the replacement) to report where they ran, or to send what a subverted
worker could send.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from types import SimpleNamespace

import pytest

import builder.pot_import.batch as pot
from builder.confined_pool import MalformedReply, WorkerLost, confined_map

TRANSCRIPTS = [SimpleNamespace(row=i, entry_id=f"gsm8k-{i:04d}") for i in range(3)]


def _where(self, t):
    return pot.ImportResult(t.row, t.entry_id, False, reason="no_parameters", detail="probe", info={
        "pid": os.getpid(), "uid": os.getuid(), "api_key": "ANTHROPIC_API_KEY" in os.environ,
        "can_open": _can_open(),
    })


def _can_open() -> bool:
    try:
        open(__file__, "rb").close()
    except OSError:
        return False
    return True


def test_a_few_transcripts_with_one_worker_run_confined_and_in_order(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-secret")
    monkeypatch.setattr(pot.Importer, "import_one", _where)
    results = list(pot._results(TRANSCRIPTS, pot.ImportOptions(), workers=1))
    assert [r.row for r in results] == [0, 1, 2]  # one worker: the order of the input
    pids = {r.info["pid"] for r in results}
    assert len(pids) == 1 and os.getpid() not in pids  # not this process
    assert all(r.info["api_key"] is False and r.info["can_open"] is False for r in results)
    if os.geteuid() == 0:
        assert all(r.info["uid"] != 0 for r in results)


class _RunsCommand:
    """Unpickling this with the full unpickler calls os.system."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_a_worker_reply_naming_os_system_is_refused(monkeypatch, tmp_path):
    marker = tmp_path / "marker"
    monkeypatch.setattr(pot, "_worker_run", lambda t: pickle.dumps(("result", _RunsCommand(marker))))
    results = list(pot._results(TRANSCRIPTS[:2], pot.ImportOptions(), workers=1))
    assert [(r.row, r.accepted, r.reason) for r in results] == [(0, False, "runtime_error"), (1, False, "runtime_error")]
    assert "may not refer to posix.system" in results[0].detail
    assert not marker.exists()


def test_a_reply_for_another_transcript_or_with_an_unsafe_entry_is_refused(monkeypatch):
    def forged(self, t):
        if t.row == 0:
            return pot.ImportResult(t.row, "../../escaped", True, source="x = 1\n")
        return pot.ImportResult(t.row, t.entry_id, True, source="import os\n")

    monkeypatch.setattr(pot.Importer, "import_one", forged)
    first, second = pot._results(TRANSCRIPTS[:2], pot.ImportOptions(), workers=1)
    assert (first.id, first.accepted, first.detail) == ("gsm8k-0000", False, "importer: the worker answered for another "
                                                                             "transcript")
    assert not second.accepted and "unsafe entry" in second.detail and "[import]" in second.detail


def test_a_worker_that_dies_costs_only_its_transcript(monkeypatch):
    def dies_on_row_one(self, t):
        if t.row == 1:
            os._exit(3)
        return _where(self, t)

    monkeypatch.setattr(pot.Importer, "import_one", dies_on_row_one)
    results = {r.row: r for r in pot._results(TRANSCRIPTS, pot.ImportOptions(), workers=1)}
    assert results[1].reason == "runtime_error" and "exit code 3" in results[1].detail
    assert results[0].detail == results[2].detail == "probe"
    assert results[0].info["pid"] != results[2].info["pid"]  # a fresh worker took the dead one's place


def _echo(item: int) -> bytes:
    from edge_runtime.execute.wire import _dumps_for_parent

    return _dumps_for_parent(("ok", item * 2, os.getpid()))


def _accept(reply: tuple) -> tuple[int, int]:
    if reply[0] != "ok":
        raise MalformedReply("not ok")
    return reply[1], reply[2]


def test_the_pool_spreads_items_over_its_workers_and_refuses_malformed_replies():
    done = dict(confined_map(list(range(12)), _echo, _accept, workers=2))
    assert {item: value for item, (value, _) in done.items()} == {i: 2 * i for i in range(12)}
    assert len({pid for _, pid in done.values()}) == 2
    lost = dict(confined_map([1, 2], _echo, lambda reply: (_ for _ in ()).throw(MalformedReply("no")), workers=1))
    assert all(isinstance(v, WorkerLost) and "refused" in str(v) for v in lost.values())


@pytest.mark.parametrize("workers", [1, 2])
def test_an_empty_import_starts_no_worker(workers):
    assert list(pot._results([], pot.ImportOptions(), workers)) == []

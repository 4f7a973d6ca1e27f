"""The PoT importer runs every transcript in a confined worker, and reads its replies as plain data only.

Real workers behind ``_worker_init``'s walls: fresh interpreters, so what they run in place of
``_worker_run`` (where they ran, or what a subverted worker could send) is imported by name from
tests/builder/confined_doubles.py.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

import builder.pot_import.batch as pot
from builder.confined_launch import _LAUNCH_KEEP
from builder.confined_pool import MalformedReply, WorkerLost, confined_map
from tests.builder import confined_doubles as doubles

TRANSCRIPTS = [SimpleNamespace(row=i, entry_id=f"gsm8k-{i:04d}") for i in range(3)]


def test_a_few_transcripts_with_one_worker_run_confined_and_in_order(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-secret")
    results = list(pot._results(TRANSCRIPTS, pot.ImportOptions(), workers=1, run=doubles.where))
    assert [r.row for r in results] == [0, 1, 2]  # one worker: the order of the input
    pids = {r.info["pid"] for r in results}
    assert len(pids) == 1 and os.getpid() not in pids  # not this process
    assert all(r.info["api_key"] is False and r.info["can_open"] is False for r in results)
    if os.geteuid() == 0:
        assert all(r.info["uid"] != 0 for r in results)


def test_a_worker_starts_with_none_of_the_builders_environment(monkeypatch):
    """Not only cleared later: the worker's initial environment block (its memory, /proc/PID/environ)
    never held the key, which a fork of this process would have carried."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-secret")
    results = pot._results(TRANSCRIPTS[:2], pot.ImportOptions(), workers=1, run=doubles.where_slowly)
    first = next(results)
    block = Path(f"/proc/{first.info['pid']}/environ").read_bytes()
    names = {item.split(b"=", 1)[0].decode() for item in block.split(b"\0") if item}
    list(results)
    assert names and all(n in _LAUNCH_KEEP or n.startswith("LC_") for n in names), names
    assert b"sk-test-secret" not in block


def test_a_worker_reply_naming_os_system_is_refused(tmp_path):
    marker = tmp_path / "marker"
    todo = [SimpleNamespace(row=t.row, entry_id=t.entry_id, marker=str(marker)) for t in TRANSCRIPTS[:2]]
    results = list(pot._results(todo, pot.ImportOptions(), workers=1, run=doubles.runs_command))
    assert [(r.row, r.accepted, r.reason) for r in results] == [(0, False, "runtime_error"), (1, False, "runtime_error")]
    assert "may not refer to posix.system" in results[0].detail
    assert not marker.exists()


def test_a_reply_for_another_transcript_or_with_an_unsafe_entry_is_refused():
    first, second = pot._results(TRANSCRIPTS[:2], pot.ImportOptions(), workers=1, run=doubles.forged)
    assert (first.id, first.accepted, first.detail) == ("gsm8k-0000", False, "importer: the worker answered for another "
                                                                             "transcript")
    assert not second.accepted and "unsafe entry" in second.detail and "[import]" in second.detail


def test_a_worker_that_dies_costs_only_its_transcript():
    results = {r.row: r for r in pot._results(TRANSCRIPTS, pot.ImportOptions(), workers=1, run=doubles.dies_on_row_one)}
    assert results[1].reason == "runtime_error" and "exit code 3" in results[1].detail
    assert results[0].detail == results[2].detail == "probe"
    assert results[0].info["pid"] != results[2].info["pid"]  # a fresh worker took the dead one's place


def _accept(reply: tuple) -> tuple[int, int]:
    if reply[0] != "ok":
        raise MalformedReply("not ok")
    return reply[1], reply[2]


def test_the_pool_spreads_items_over_its_workers_and_refuses_malformed_replies():
    done = dict(confined_map(list(range(12)), doubles.echo, _accept, workers=2))
    assert {item: value for item, (value, _) in done.items()} == {i: 2 * i for i in range(12)}
    assert len({pid for _, pid in done.values()}) == 2
    lost = dict(confined_map([1, 2], doubles.echo, lambda reply: (_ for _ in ()).throw(MalformedReply("no")), workers=1))
    assert all(isinstance(v, WorkerLost) and "refused" in str(v) for v in lost.values())


@pytest.mark.parametrize("workers", [1, 2])
def test_an_empty_import_starts_no_worker(workers):
    assert list(pot._results([], pot.ImportOptions(), workers)) == []

"""Entry code on the build server runs only in the confined compile, never beside the signing key.

Real processes: the confined child is a fresh interpreter behind edge_runtime.execute.confinement's walls.
The walls are checked directly (what code that got past the validator could still do), and the
build routes (``arc-build compile-entries``, ``bundle``) are checked to go through them.
"""

from __future__ import annotations

import multiprocessing
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from builder.confined_build import ConfinedBuildError, compile_confined, read_sources
from edge_runtime.entries.registry import Registry

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "bundles" / "examples"


def _probe(conn, workdir: str, secret: str, port: int) -> None:
    """What code behind the walls can still reach: run in a spawned child, as the confined compile is."""
    from edge_runtime.execute.confinement import enter_sandbox

    walls = enter_sandbox(1 << 30, workdir, 2000, forkserver=False, cut_network=True)
    found = {"walls": walls, "cwd": os.getcwd(), "env": sorted(os.environ)}
    try:
        with open(secret, "rb") as handle:
            found["secret"] = handle.read()
    except OSError as exc:
        found["secret_error"] = type(exc).__name__
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        found["connected"] = True
    except OSError as exc:
        found["connected"] = False
        found["connect_error"] = type(exc).__name__
    try:
        found["listing"] = os.listdir(".")
    except OSError as exc:
        found["listing_error"] = type(exc).__name__
    conn.send(found)


def test_code_behind_the_walls_cannot_read_the_key_reach_the_network_or_see_the_environment(tmp_path, monkeypatch):
    secret = tmp_path / "arc-signing.pem"
    secret.write_bytes(b"PRIVATE KEY MATERIAL")
    secret.chmod(0o600)
    workdir = tmp_path / "work"
    workdir.mkdir()
    workdir.chmod(0o777)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-secret")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        process = ctx.Process(target=_probe, args=(child, str(workdir), str(secret), listener.getsockname()[1]))
        process.start()
        assert parent.poll(60)
        found = parent.recv()
        process.join(10)
    assert "secret" not in found  # no new file can be opened, and as nobody the key is unreadable
    assert found["connected"] is False and found["walls"]["network_cut"] is True
    assert "ANTHROPIC_API_KEY" not in found["env"]
    assert found["cwd"] == str(workdir)
    if os.geteuid() == 0:
        assert found["walls"]["dropped_root"] is True


def test_the_confined_compile_gives_the_same_entries_as_in_process(embedder):
    confined = compile_confined(read_sources(EXAMPLES))
    registry = Registry(embedder)
    registry.add_directory(EXAMPLES)
    assert sorted(c.entry.id for c in confined.compiled) == sorted(registry.entries)
    from edge_runtime.entries.compiler import compile_entry

    for item in confined.compiled:
        assert item.source == compile_entry(registry, item.entry.id).source
        assert item.entry == registry.entries[item.entry.id]
    assert confined.walls["network_cut"] is True


#: Constant arithmetic passes the validator but runs at import: an endless power and a memory bomb.
ENDLESS_IMPORT = "SIZE = 9 ** 9 ** 9\n"
MEMORY_BOMB_IMPORT = "BLOCK = 'x' * (10 ** 11)\n"


def test_an_import_that_never_ends_is_stopped_and_reported():
    with pytest.raises(ConfinedBuildError, match="longer than 5 s"):
        compile_confined({"hostile.py": ENDLESS_IMPORT}, time_limit_s=5)


def test_an_import_that_exhausts_memory_ends_only_the_confined_child():
    with pytest.raises(ConfinedBuildError, match="MemoryError|exhausted its limits"):
        compile_confined({"hostile.py": MEMORY_BOMB_IMPORT})


def test_a_refused_entry_is_a_clear_error(tmp_path):
    with pytest.raises(ConfinedBuildError, match="not allowed|dunder|private"):
        compile_confined({"bad.py": "import os\n"})
    with pytest.raises(ConfinedBuildError, match="not a directory"):
        read_sources(tmp_path / "missing")


def test_compile_entries_cli_compiles_through_the_confined_child(tmp_path):
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "builder.cli", "compile-entries", str(EXAMPLES), "--out", str(out)],
        capture_output=True, text=True, cwd=REPO, env={**os.environ, "ORT_DISABLE_TELEMETRY": "1"}, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    printed = sorted(line.split(":")[0] for line in result.stdout.splitlines())
    assert sorted(path.stem for path in out.glob("*.py")) == printed
    assert "parcel-shipping-cost" in printed and len(printed) == 6


def _importer_worker_walls(conn, scratch: str) -> None:
    """What an import-pot pool worker can reach after its initializer ran."""
    from builder.pot_import.batch import _worker_init
    from builder.pot_import.verify import ImportOptions

    _worker_init(ImportOptions(), 3 << 30, scratch)
    found = {"uid": os.getuid(), "env": sorted(os.environ)}
    try:
        open(os.path.join(REPO, "pyproject.toml"), "rb").close()
        found["opened"] = True
    except OSError:
        found["opened"] = False
    try:
        socket.create_connection(("127.0.0.1", 9), timeout=1).close()
        found["network"] = "connected"
    except OSError as exc:
        found["network"] = type(exc).__name__ + str(exc.errno)
    conn.send(found)


def test_import_pot_workers_run_programs_behind_the_same_walls(monkeypatch, tmp_path):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-secret")
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    process = ctx.Process(target=_importer_worker_walls, args=(child, str(tmp_path)))
    process.start()
    assert parent.poll(60)
    found = parent.recv()
    process.join(10)
    assert found["opened"] is False
    # EMFILE: not even a socket can be made (no new file descriptors); ENETUNREACH would also do
    assert found["network"] in ("OSError24", "OSError101")
    assert "ANTHROPIC_API_KEY" not in found["env"]
    if os.geteuid() == 0:
        assert found["uid"] != 0

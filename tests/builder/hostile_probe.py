"""Hostile entry code that reports where it ran, and a validator bypass to let it run at all.

Not a test module: the route tests (tests/builder/test_hostile_routes.py) import it. The validator
stops every known escape, so a test of the walls *behind* it has to take it away: with
:func:`bypass` applied every source validates and entry code gets the full builtins, as it would
after an unknown validator bug. The probe then tries to read the signing key and to write a marker
file (both work in the builder's own process), and raises with what it saw, so a test can check
that it ran, and that it ran only behind the walls: no marker, no secret, no API key, another pid.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

API_KEY = "sk-test-secret-in-parent"
_SEEN = re.compile(r"hostile code ran: (\{[^{}]*\})")

_PROBE = '''
import os
seen = {"pid": os.getpid(), "api_key": os.environ.get("ANTHROPIC_API_KEY")}
try:
    with open(SECRET) as handle:
        seen["secret"] = handle.read()
except OSError as exc:
    seen["secret"] = type(exc).__name__
try:
    with open(MARKER, "w") as handle:
        handle.write(repr(seen))
except OSError:
    pass
raise RuntimeError("hostile code ran: " + repr(seen))
'''


def probe_statement(marker: Path, secret: Path) -> str:
    """One statement (``exec`` of the probe) to put where entry code runs: module level or a function body."""
    code = _PROBE.replace("SECRET", repr(str(secret))).replace("MARKER", repr(str(marker)))
    return f"exec({code!r})"


def signing_key(directory: Path) -> Path:
    """A real signing key pair in ``directory`` (the private key is 0600); the private key's path."""
    from builder.keys import generate_keypair

    return generate_keypair(directory)[0]


def _no_violations(source: str, filename: str, extra_allowed_imports: frozenset[str]) -> tuple[ast.Module, list]:
    return ast.parse(source, filename=filename), []


def bypass_targets(*, importer: bool = False) -> Iterator[tuple[Any, str, Any]]:
    """(module, attribute, replacement) that take the validator and the reduced builtins away;
    ``importer``: the PoT importer's own copy of the builtins too."""
    import edge_runtime.entries.sandbox as sandbox
    import edge_runtime.entries.validator as validator

    yield validator, "_check", _no_violations
    yield sandbox, "SAFE_BUILTINS", builtins.__dict__
    if importer:
        import builder.pot_import.program as pot_program

        yield pot_program, "SAFE_BUILTINS", builtins.__dict__


def bypass() -> None:
    """Apply :func:`bypass_targets` for good (in a child's ``sitecustomize``)."""
    for module, name, value in bypass_targets():
        setattr(module, name, value)


def write_sitecustomize(directory: Path) -> Path:
    """A ``sitecustomize`` that applies the bypass in every interpreter with ``directory`` on PYTHONPATH
    (the confined children are fresh interpreters: a monkeypatch in the test does not reach them)."""
    directory.mkdir(parents=True, exist_ok=True)
    here = Path(__file__).resolve().parent
    (directory / "sitecustomize.py").write_text(
        f"import sys\nsys.path.insert(0, {str(here)!r})\nimport hostile_probe\nhostile_probe.bypass()\n"
        "sys.path.remove(" + repr(str(here)) + ")\n",
        encoding="utf-8",
    )
    return directory


def sightings(text: str) -> list[dict[str, Any]]:
    """What every probe run reported, from any text its error message ended up in."""
    return [ast.literal_eval(found) for found in _SEEN.findall(text)]


def assert_confined(text: str, marker: Path, parent_pid: int | None = None) -> None:
    """The probe ran (its report is in ``text``), and only where it could not reach anything."""
    seen = sightings(text)
    assert seen, f"the hostile code never ran (nothing to check): {text[-2000:]}"
    assert not marker.exists(), f"hostile code ran unconfined: {marker.read_text()}"
    for report in seen:
        assert "PRIVATE KEY" not in report["secret"] and report["api_key"] is None, report
        if parent_pid is not None:
            assert report["pid"] != parent_pid, report

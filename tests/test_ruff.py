"""The code passes the project's ruff configuration (pyproject.toml ``[tool.ruff]``), as CI runs it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _ruff() -> list[str]:
    """ruff from this interpreter's environment (the ``test`` extra pins it), else from PATH."""
    beside = Path(sys.executable).with_name("ruff")
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("ruff")
    if found is None:
        pytest.fail("ruff is not installed: pip install -e '.[test]' (pyproject.toml pins it)")
    return [found]


def test_ruff_check_passes_on_the_runtime_the_builder_the_tests_and_the_benchmarks():
    run = subprocess.run([*_ruff(), "check", "--no-cache", "edge_runtime", "builder", "tests", "benchmarks"], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr

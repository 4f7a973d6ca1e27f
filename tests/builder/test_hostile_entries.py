"""Hostile entry sources submitted to the build server: the issue-19 escape classes.

Each source would write a marker file (and read the signing key) if any of its code ran while
``arc-build compile-entries`` or ``arc-build bundle`` registers it; the build must reject it with
a clear safety error, and the marker must never appear.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from edge_runtime.entries.validator import find_violations, validate_source
from edge_runtime.errors import UnsafeCodeError

REPO = Path(__file__).resolve().parents[2]

_HEADER = "import functools\nimport collections\nfrom edge_runtime.semantic import load, narrate, semantic_function\n"
_BODY = '''
@semantic_function("Add one", inputs={"the number": 1}, outputs={"the result": 2})
def add_one(ctx, f=FIRST, g=SECOND):
    narrate(ctx, "adds one")
    return {"the result": load(ctx, "the number", int) + 1}
'''

#: Escape class -> (first default argument, second default argument).
ESCAPES = {
    # The attack of issue 19: update_wrapper copies collections' globals (its _sys) into the function.
    "update_wrapper_globals": (
        "functools.update_wrapper(lambda: 0, collections.namedtuple, (), ['__globals__'])",
        "_sys.modules['os'].system('touch MARKER')",
    ),
    "private_module_global": ("0", "_sys.modules['os'].system('touch MARKER')"),
    "dunder_string_attribute": ("functools.reduce(lambda a, b: a, ['__globals__'])", "0"),
    "call_in_default": ("print(open('MARKER', 'w'))", "0"),
    "wraps_by_string": ("functools.wraps(len, ('__globals__',))", "0"),
}


def hostile_source(escape: str, marker: Path) -> str:
    first, second = ESCAPES[escape]
    body = _BODY.replace("FIRST", first).replace("SECOND", second).replace("MARKER", str(marker))
    return _HEADER + body


@pytest.mark.parametrize("escape", sorted(ESCAPES))
def test_validator_rejects_every_escape_class(escape: str, tmp_path: Path) -> None:
    source = hostile_source(escape, tmp_path / "marker")
    with pytest.raises(UnsafeCodeError):
        validate_source(source, f"<{escape}>")


def test_issue_attack_is_reported_with_its_rules(tmp_path: Path) -> None:
    rules = {v.rule for v in find_violations(hostile_source("update_wrapper_globals", tmp_path / "m"))}
    assert {"default", "private"} <= rules


def test_constant_defaults_and_declarations_still_pass() -> None:
    validate_source(_HEADER.replace("import functools\nimport collections\n", "") +
                    _BODY.replace("FIRST", "-1.5").replace("SECOND", "('a', 2)"))


@pytest.mark.parametrize("command", ["compile-entries", "bundle"])
def test_cli_routes_refuse_and_run_nothing(command: str, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    sources = tmp_path / "entries"
    sources.mkdir()
    (sources / "hostile.py").write_text(hostile_source("update_wrapper_globals", marker), encoding="utf-8")
    args = [sys.executable, "-m", "builder.cli", command, str(sources), "--out", str(tmp_path / "out")]
    if command == "bundle":
        args += ["--name", "hostile", "--version", "1", "--no-target-model", "--key", str(tmp_path / "nokey.pem")]
    env = {**os.environ, "PYTHONPATH": str(REPO), "ARC_KEY_DIR": str(tmp_path / "keys")}
    done = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "UnsafeCodeError" in done.stderr or "arc-build:" in done.stderr
    assert not marker.exists()


#: Further escape classes, each with the rule that must stop it (docs/security.md lists them).
MORE_ESCAPES = {
    "getattr_by_string": ("x = 1\ndef f():\n    return getattr(x, '__class__')\n", "forbidden-call"),
    "format_string_attribute": ("def f():\n    return '{0.__class__}'.format(1)\n", "format-string"),
    "decorator_argument_call": (
        "from edge_runtime.semantic import semantic_function\n@semantic_function(print('x'))\ndef f(ctx):\n    pass\n",
        "decorator",
    ),
    "module_level_call": ("import math\nX = math.factorial(10**8)\n", "top-level"),
    "subclass_walk": ("def f():\n    return ().__class__.__bases__[0].__subclasses__()\n", "dunder"),
    "lambda_default_call": ("def f():\n    g = lambda a=print('x'): a\n", "default"),
    "forbidden_import": ("import os\n", "import"),
    "private_string_key": ("def f(d):\n    return d['_sys']\n", "private-string"),
}


@pytest.mark.parametrize("escape", sorted(MORE_ESCAPES))
def test_more_escape_classes_are_rejected(escape: str) -> None:
    source, rule = MORE_ESCAPES[escape]
    assert rule in {v.rule for v in find_violations(source)}

"""A new user's first hour with the CLIs: each test runs the real command in a temp dir (issue 25).

Every error is one line on stderr naming the file, the problem and the fix, with exit code 2;
``arc-edge invoke`` exits 3 on a MISS; ``--help`` shows defaults; ``inspect`` without ``--trust``
does not claim a signed bundle is unsigned; a refused ``serve`` start writes no state.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from edge_server_fixtures import example_bundle, make_keys, random_static_embedder

REPO = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), ORT_DISABLE_TELEMETRY="1")
    env.pop("ANTHROPIC_API_KEY", None)
    return env


def run(cwd: Path, tool: str, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    module = {"arc-build": "builder.cli", "arc-edge": "edge_runtime.cli"}[tool]
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=timeout)


def one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def signed(tmp_path_factory) -> tuple[Path, Path, Path]:
    """A signed example bundle (random routing table), its public key, and a foreign public key."""
    root = tmp_path_factory.mktemp("firsthour")
    private, _ = make_keys(root / "keys")
    make_keys(root / "other")
    path = example_bundle(root / "bundles", private, random_static_embedder(root / "embedder"), "1")
    return path, root / "keys" / "arc-signing.pub", root / "other" / "arc-signing.pub"


def test_keys_twice_says_it_will_not_overwrite(tmp_path):
    assert run(tmp_path, "arc-build", "keys", "--out", "k").returncode == 0
    one_line_error(run(tmp_path, "arc-build", "keys", "--out", "k"), "k/arc-signing.pem", "exists already", "--out")


def test_bundle_on_a_misspelt_directory(tmp_path):
    one_line_error(run(tmp_path, "arc-build", "bundle", "bundles/exampels", "--name", "x", "--version", "1"),
                   "bundles/exampels", "no such directory", "bundles/examples")


def test_bundle_with_a_missing_key(tmp_path):
    one_line_error(run(tmp_path, "arc-build", "bundle", str(REPO / "bundles" / "examples"), "--name", "x",
                       "--version", "1", "--key", "nokey.pem"), "nokey.pem", "arc-build keys")


def test_bundle_with_an_entry_syntax_error(tmp_path):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "entry.py").write_text("def f(:\n    pass\n")
    one_line_error(run(tmp_path, "arc-build", "bundle", "bad", "--name", "x", "--version", "1"),
                   "bad/entry.py:1", "syntax")


def test_push_of_a_missing_path_and_a_directory(tmp_path):
    one_line_error(run(tmp_path, "arc-edge", "push", "nothere.arcb"), "nothere.arcb", "does not exist", ".arcb")
    (tmp_path / "somedir").mkdir()
    one_line_error(run(tmp_path, "arc-edge", "push", "somedir"), "somedir", "is a directory")


def test_push_model_typo_and_non_model_dir(tmp_path, signed):
    bundle, _, _ = signed
    one_line_error(run(tmp_path, "arc-edge", "push", str(bundle), "--model", "build/target-models/typo"),
                   "build/target-models/typo", "does not exist", "build/target-models/")
    one_line_error(run(tmp_path, "arc-edge", "push", str(bundle), "--model", str(REPO / "bundles" / "examples")),
                   "bundles/examples", "not a target-model artefact")


def test_serve_trust_missing_file(tmp_path):
    one_line_error(run(tmp_path, "arc-edge", "serve", "--trust", "missing.pub", "--data-dir", "d"),
                   "missing.pub", "arc-build keys")


def test_serve_untrusted_bundle_names_the_file_and_writes_no_state(tmp_path, signed):
    bundle, _, foreign = signed
    one_line_error(run(tmp_path, "arc-edge", "serve", "--bundle", str(bundle), "--trust", str(foreign),
                       "--data-dir", "d"), str(bundle), "untrusted key")
    assert not (tmp_path / "d" / "state.json").exists()


def test_serve_upstream_without_key_writes_no_state(tmp_path, signed):
    bundle, public, _ = signed
    one_line_error(run(tmp_path, "arc-edge", "serve", "--bundle", str(bundle), "--trust", str(public),
                       "--data-dir", "d", "--upstream-model", "some-model"), "ANTHROPIC_API_KEY")
    assert not (tmp_path / "d" / "state.json").exists()


def test_inspect_without_trust_says_signature_not_checked(tmp_path, signed):
    bundle, public, _ = signed
    unchecked = run(tmp_path, "arc-edge", "inspect", str(bundle))
    assert unchecked.returncode == 0, unchecked.stderr
    assert json.loads(unchecked.stdout)["signed"].startswith("signature not checked")
    checked = run(tmp_path, "arc-edge", "inspect", str(bundle), "--trust", str(public))
    assert json.loads(checked.stdout)["signed"] is True


@pytest.mark.parametrize("tool,command,default", [
    ("arc-edge", "serve", "50551"), ("arc-edge", "invoke", "127.0.0.1:50551"), ("arc-build", "bundle", "build/bundles"),
])
def test_help_shows_defaults(tmp_path, tool, command, default):
    result = run(tmp_path, tool, command, "--help")
    assert result.returncode == 0
    assert f"(default: {default})" in " ".join(result.stdout.split())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_invoke_exits_3_on_a_miss_and_the_server_logs_its_shutdown(tmp_path, signed):
    bundle, public, _ = signed
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "edge_runtime.cli", "serve", "--bundle", str(bundle), "--trust", str(public),
         "--data-dir", "d", "--port", str(port), "--workers", "1"],
        cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        deadline = time.monotonic() + 60
        result = None
        while time.monotonic() < deadline:
            result = run(tmp_path, "arc-edge", "invoke", "What colour is the sky on Mars?", "--to", f"127.0.0.1:{port}")
            if result.returncode != 2:
                break
            time.sleep(0.5)
        assert result is not None and result.returncode == 3, (result.stdout, result.stderr)
        assert result.stdout.startswith("MISS (")
        server.send_signal(signal.SIGINT)  # serve's documented stop: a clean shutdown, logged, exit 0
        out, _ = server.communicate(timeout=30)
        assert server.returncode == 0, out
        assert "Traceback" not in out
        assert "stopped" in out.splitlines()[-1]
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def _threads(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except FileNotFoundError:
        return 0


def test_ctrl_c_is_one_line_and_exit_130(tmp_path):
    """Ctrl-C while ``arc-build bundle`` distils the routing table (10 s to minutes in a fresh directory, by host).

    The signal goes when the encoder's session has started its threads (the distillation is under way), not after a
    fixed sleep: on a fast host a fixed 8 s let the whole build finish first. The child starts with Ctrl-C's default
    disposition, as from an interactive shell: a test run started as a background job (``make test &`` in a script)
    has SIGINT ignored, every child inherits that, and the build then ran to exit 0 after the signal."""
    build = subprocess.Popen(
        [sys.executable, "-m", "builder.cli", "bundle", str(REPO / "bundles" / "examples"), "--name", "x",
         "--version", "1", "--no-target-model"],
        cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while build.poll() is None and _threads(build.pid) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert build.poll() is None, "the build ended before it started distilling"
    time.sleep(0.5)  # inside the encoding loop
    build.send_signal(signal.SIGINT)
    _, err = build.communicate(timeout=60)
    assert build.returncode == 130, err
    assert "Traceback" not in err
    assert "arc-build: interrupted" in err  # after the progress bar rich leaves behind


def test_serve_with_the_wrong_model_names_the_blob_expected_and_found(tmp_path, signed):
    """A bundle built against one model, served with --model of another: both hashes in one line."""
    from builder.bundle_build import build_bundle

    bundle, public, _ = signed
    model_a, model_b = tmp_path / "model-a", tmp_path / "model-b"
    for folder, text in ((model_a, "a"), (model_b, "b")):
        folder.mkdir()
        (folder / "model.onnx").write_text(text)
        (folder / "manifest.json").write_text("{}")
    private = bundle.parents[1] / "keys" / "arc-signing.pem"
    built = build_bundle(REPO / "bundles" / "examples", tmp_path / "out", name="examples", version="2",
                         private_key=private, target_model_dir=model_a,
                         embedder_dir=bundle.parents[1] / "embedder", progress=lambda _: None).path
    line = one_line_error(run(tmp_path, "arc-edge", "serve", "--bundle", str(built), "--trust", str(public),
                              "--model", str(model_b), "--data-dir", "d"), str(built), "model.onnx")
    import hashlib

    assert hashlib.sha256(b"a").hexdigest()[:16] in line and hashlib.sha256(b"b").hexdigest()[:16] in line
    assert not (tmp_path / "d" / "state.json").exists()


def test_docs_name_the_default_port_and_an_spdx_license():
    """The Node client README's example dials arc-edge serve's default port; the license is an SPDX string."""
    import re

    help_text = run(REPO, "arc-edge", "serve", "--help").stdout
    default_port = re.search(r"--port PORT\s+\(default: (\d+)\)", help_text).group(1)
    node_readme = (REPO / "clients" / "node" / "README.md").read_text()
    assert set(re.findall(r"127\.0\.0\.1:(\d+)", node_readme)) == {default_port}
    pyproject = (REPO / "pyproject.toml").read_text()
    assert re.search(r'^license = "Apache-2.0"$', pyproject, re.M)
    benchmarks = (REPO / "docs" / "benchmarks.md").read_text()
    assert "gsm8k-eval-5b17f5d790" not in benchmarks and "../shared/data" in benchmarks


def test_a_fractional_count_is_refused_in_user_terms():
    """30.5 students: the MISS says a whole number was expected, not a Python repr of a Fraction."""
    from fractions import Fraction

    from edge_runtime.entries.metadata import Param
    from edge_runtime.errors import ParameterValidationError

    with pytest.raises(ParameterValidationError) as caught:
        Param("students", "the number of students", int).validate(Fraction(61, 2))
    assert str(caught.value) == "parameter 'students': 30.5: expected a whole number"


def test_readme_device_section_says_how_to_reach_the_commands():
    """After `make demo` the commands are in .venv/bin, not on PATH: the device section says so first."""
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## On a device"):]
    assert section.index("source .venv/bin/activate") < section.index("arc-build keys")
    assert "moves\nkilobytes" not in readme and "~/.local/share/arc-edge" in readme


def test_serve_benchmark_draws_only_questions_the_entries_accept(signed):
    """benchmarks/serve.py's fast-path questions: no value set the entry's own code refuses (-40 kelvin)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import serve as bench

    from edge_runtime.bundles.bundle import read_bundle
    from edge_runtime.entries.compiler import LoadedCompiledEntry
    from edge_runtime.errors import ExecutionError, TargetModelError

    bundle_path, public, _ = signed
    from builder.keys import load_public_key

    bundle = read_bundle(bundle_path, trusted_keys=[load_public_key(public)])
    import random

    rng = random.Random(3)
    for entry in bundle.entries.values():
        module = LoadedCompiledEntry(bundle.modules[entry.id], entry.id)
        for _ in range(30):
            values = bench.accepted_values(entry, module, rng)
            try:
                module.run(values)
            except TargetModelError:
                pass
            except ExecutionError as exc:
                pytest.fail(f"{entry.id} {values}: {exc}")


def test_run_compiled_help_example_works(tmp_path):
    """The two commands in `arc-edge run-compiled --help`'s example, run as written."""
    import shlex

    (tmp_path / "bundles").symlink_to(REPO / "bundles")  # the example's paths are from a checkout's root
    help_text = run(tmp_path, "arc-edge", "run-compiled", "--help").stdout
    commands = [line.strip() for line in help_text.splitlines() if line.strip().startswith(("arc-build ", "arc-edge "))]
    assert len(commands) == 2, help_text
    compiled = run(tmp_path, "arc-build", *shlex.split(commands[0])[1:])
    assert compiled.returncode == 0, compiled.stderr
    done = run(tmp_path, "arc-edge", *shlex.split(commands[1])[1:])
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"pressure in kilopascals": 498.868}
    one_line_error(run(tmp_path, "arc-edge", "run-compiled", "build/compiled/parcel-shipping-cost.py", "--params",
                       "{}", "--model", "build/target-models/typo"), "build/target-models/typo", "not a target-model")


def test_push_sends_only_missing_blobs_names_a_missing_one_and_the_server_logs_it(tmp_path, signed):
    """`arc-edge push` of a bundle whose blobs directory is elsewhere: one line naming the blob and --blobs;
    with the builder's blobs/ beside it, the routing table goes once and the push, activation are logged."""
    import shutil

    bundle, public, _ = signed
    lone = tmp_path / "lone" / bundle.name
    lone.parent.mkdir()
    shutil.copy(bundle, lone)
    one_line_error(run(tmp_path, "arc-edge", "serve", "--bundle", str(lone), "--trust", str(public), "--data-dir", "x"),
                   str(lone), "needs blob", "routing/embedder/", "arc-build bundle")
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "edge_runtime.cli", "serve", "--trust", str(public), "--data-dir", "d",
         "--port", str(port), "--workers", "1"],
        cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        socket_flag = ["--admin-socket", "d/admin.sock", "--to", f"127.0.0.1:{port}"]
        deadline = time.monotonic() + 60
        while not (tmp_path / "d" / "admin.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        line = one_line_error(run(tmp_path, "arc-edge", "push", str(lone), *socket_flag), "still lacks 2 blob(s)",
                              "routing/embedder/", "--blobs")
        assert any(len(word) == 64 for word in line.split())  # the hash itself
        pushed = run(tmp_path, "arc-edge", "push", str(lone), "--blobs", str(bundle.parent / "blobs"), "--activate",
                     *socket_flag)
        assert pushed.returncode == 0, pushed.stderr
        assert "pushed 2 blob(s)" in pushed.stdout and "active: examples-1" in pushed.stdout
        again = run(tmp_path, "arc-edge", "push", str(bundle), *socket_flag)
        assert again.returncode == 0 and "pushed 0 blob(s), 0 bytes" in again.stdout, again.stdout
        server.send_signal(signal.SIGINT)
        out, _ = server.communicate(timeout=30)
        assert "pushed bundle examples-1 (name examples, version 1" in out
        assert "activated bundle examples-1" in out and "shutting down (bundle: examples-1)" in out
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()

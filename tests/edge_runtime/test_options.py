"""The options tree and the ``arc-edge serve`` flags generated from it."""

from __future__ import annotations

import argparse
import inspect
from pathlib import Path

import pytest

from edge_runtime import cli
from edge_runtime.flags import from_flags
from edge_runtime.fleet.options import FollowOptions
from edge_runtime.model.lm_limits import LMLimits
from edge_runtime.options import ModelOptions, PipelineOptions, PoolOptions
from edge_runtime.serving.runtime import RuntimeOptions
from edge_runtime.serving.server import ServeOptions, default_data_dir
from edge_runtime.serving.upstream import UpstreamConfig

#: Every flag ``arc-edge serve`` had when cli.py declared them by hand, with its default (scripts and docs use
#: them: none may go or change its default, but for ``--rereads``, on by default since they run on spare capacity;
#: ``--rereads`` alone still turns them on, and ``--no-rereads`` off).
OLD_FLAGS = {
    "--bundle": [], "--model": None, "--address": "127.0.0.1", "--port": 50551, "--data-dir": None, "--trust": [],
    "--insecure-allow-unsigned": False, "--threads": 2, "--spin": False, "--model-runs": 2, "--workers": 2,
    "--metrics-port": None, "--entry-timeout": 5.0, "--rereads": True, "--upstream-model": None,
    "--upstream-base-url": None, "--upstream-timeout": 20.0, "--admin-socket": None, "--tls-cert": None,
    "--tls-key": None, "--client-ca": None, "--admin-address": None, "--reflection": False, "--accept-bundle": [],
    "--max-blob-bytes": 2 << 30, "--max-blob-store-bytes": 8 << 30, "--lm-max-prompt-tokens": 512,
    "--lm-max-new-tokens": 64, "--lm-call-seconds": 2.0,
    "--follow": None, "--tuf-root": None, "--poll-interval": 60.0, "--poll-jitter": 0.2, "--upload-misses": False,
    "--share-questions": False, "--device-id": "",
}
#: The old switches: given alone they turn something on.
OLD_SWITCHES = {"--insecure-allow-unsigned", "--spin", "--reflection", "--upload-misses", "--share-questions"}


def _serve_parser() -> argparse.ArgumentParser:
    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["serve"]


def test_the_generated_serve_flags_keep_every_old_flag_and_default():
    actions = {s: a for a in _serve_parser()._actions for s in a.option_strings}
    for flag, default in OLD_FLAGS.items():
        assert flag in actions, flag
        assert actions[flag].default == default, flag
        if flag in OLD_SWITCHES:
            assert actions[flag].nargs == 0 and isinstance(actions[flag], argparse._StoreTrueAction), flag


def test_the_extractor_and_pipeline_knobs_are_flags_too():
    parsed = _serve_parser().parse_args(["--top-k", "5", "--model-attempts", "2", "--no-guard", "--no-set-aside",
                                         "--on-disagreement", "decode", "--no-alignment", "--memory-limit-mb", "256"])
    runtime = from_flags(ServeOptions, parsed).runtime
    assert runtime.pipeline == PipelineOptions(top_k=5, model_attempts=2, guard=False, set_aside_disclaimers=False,
                                               on_disagreement="decode", use_alignment=False)
    assert runtime.pool.memory_limit_mb == 256


def test_no_flags_give_the_tree_of_defaults():
    tree = from_flags(ServeOptions, _serve_parser().parse_args([]))
    assert tree.runtime == RuntimeOptions(data_dir=default_data_dir())
    assert tree.runtime.pool == PoolOptions() and tree.runtime.model == ModelOptions()
    assert tree.runtime.upstream is None and tree.runtime.accept_bundle_names == ()
    assert tree.server.port == 50551 and tree.server.bundles == [] and tree.follow is None
    follow = from_flags(ServeOptions, _serve_parser().parse_args(["--follow", "reg/repo", "--tuf-root", "r.json"])).follow
    assert follow == FollowOptions("reg/repo", Path("r.json")) and follow.interval_s == 60.0


def test_flags_reach_their_branch(tmp_path):
    key = tmp_path / "k.pub"
    key.write_text("00" * 32)
    parsed = _serve_parser().parse_args([
        "--rereads", "--upstream-model", "claude-x", "--lm-call-seconds", "3", "--threads", "1", "--trust", str(key),
        "--accept-bundle", "a", "--accept-bundle", "b", "--data-dir", str(tmp_path), "--bundle", "x.arcb"])
    tree = from_flags(ServeOptions, parsed)
    runtime = tree.runtime
    assert runtime.pipeline.impossible_rereads == 2 and runtime.model.threads == 1
    assert runtime.upstream == UpstreamConfig("claude-x") and runtime.upstream.timeout_s == 20.0
    assert runtime.pool.lm_limits == LMLimits(call_seconds=3.0)
    assert runtime.trusted_keys == [bytes(32)] and runtime.accept_bundle_names == ("a", "b")
    assert runtime.data_dir == tmp_path and tree.server.bundles == [Path("x.arcb")]
    assert from_flags(ServeOptions, _serve_parser().parse_args(["--no-rereads"])).runtime.pipeline.impossible_rereads is None


def test_cli_declares_no_serve_flag_of_its_own():
    source = inspect.getsource(cli.build_parser)
    assert "serve.add_argument" not in source


@pytest.mark.parametrize("flag", ["--guard", "--set-aside", "--alignment", "--draft"])
def test_switches_that_default_on_can_be_turned_off(flag):
    parsed = _serve_parser().parse_args([flag.replace("--", "--no-", 1)])
    assert from_flags(ServeOptions, parsed).runtime.pipeline != PipelineOptions()

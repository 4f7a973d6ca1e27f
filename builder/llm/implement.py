"""Phase 5: implement the planned functions bottom-up, each in an agentic loop.

For every planned function (callees first):

1. **reuse**: search the registry (the main one plus this question's functions so far) by the
   planned description; a match above the registry's threshold is reused and no builder call is made;
2. **candidate**: the builder writes the source (a rewrite gets the previous source and structured feedback);
3. **static checks**: syntax and the safety validator, structure (one decorated function, the planned
   name), registration (the registry's declaration checks), interface (planned description, inputs,
   outputs and calls) and narration (a ``narrate`` with an f-string showing a value and some words);
4. **run** on the original question's values, within a time limit, and compare with the values
   the transcript gives (the root's answer with the reference answer);
5. **judges**: both judges must pass it (unanimity) against the transcript.

A failed step becomes feedback for the next try, up to ``max_tries``; then the question is rejected
with ``function_rejected`` and every attempt's problems are kept in the report.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from builder.confined_session import ConfinedRegistry, FunctionInfo
from builder.llm import prompts
from builder.llm.assemble import assemble_module
from builder.llm.client import JUDGES, AnswerError, LLMClient, Tool
from builder.llm.phases import Job, Plan, PlannedFunction, ask_builder, normalise
from builder.llm.report import Rejected
from builder.llm.verify import answers_match, jsonable
from edge_runtime.entries.validator import find_violations
from edge_runtime.errors import AmbiguousReferenceError, ArcError, NoMatchError

SUBMIT_TOOL = Tool(
    "submit_function",
    "Submit the complete Python source of one semantic function.",
    {
        "type": "object",
        "properties": {"source": {"type": "string", "minLength": 1}, "notes": {"type": "string"}},
        "required": ["source"],
    },
)


def _verdict_problems(answer: dict[str, Any]) -> list[str]:
    if answer["verdict"] == "fail" and not answer["reasons"]:
        return ["a fail verdict needs at least one reason"]
    return []


VERDICT_TOOL = Tool(
    "record_verdict",
    "Record your verdict on the candidate function.",
    {
        "type": "object",
        "properties": {
            "verdict": {"enum": ["pass", "fail"]},
            "reasons": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["verdict", "reasons"],
    },
    check=_verdict_problems,
)


@dataclass
class FunctionSpec:
    """What one function must be: the plan's promise with callee references mapped to real functions."""

    name: str
    description: str
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    calls: list[str]
    root: bool = False

    def as_prompt(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "inputs": self.inputs,
                "outputs": self.outputs, "calls": self.calls}


@dataclass
class Attempt:
    number: int
    source: str | None = None
    problems: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    run: dict[str, Any] | None = None


@dataclass
class FunctionOutcome:
    planned: str
    name: str
    description: str
    status: str  # built | reused
    tries: int = 0
    attempts: list[Attempt] = field(default_factory=list)
    reused: dict[str, Any] | None = None
    source: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def narration_problems(node: ast.FunctionDef) -> list[str]:
    """At least one narrate() whose text is an f-string with a value and a few words of explanation."""
    for call in ast.walk(node):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "narrate":
            text = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "text"), None)
            if isinstance(text, ast.JoinedStr):
                values = [v for v in text.values if isinstance(v, ast.FormattedValue)]
                words = " ".join(v.value for v in text.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
                if values and sum(1 for w in words.split() if any(c.isalpha() for c in w)) >= 2:
                    return []
    return ["narration: no narrate(ctx, f\"...\") explains a step with its values (an f-string with a value and words)"]


class Implementer:
    """Phase 5 for one question; functions it accepts are registered into ``workspace`` as it goes.

    ``workspace`` lives in the confined session: candidate code is registered and run there only."""

    def __init__(
        self,
        client: LLMClient,
        job: Job,
        plan: Plan,
        workspace: ConfinedRegistry,
        *,
        reference: Any,
        max_tries: int = 3,
        run_seconds: float = 10.0,
        reuse: bool = True,
    ) -> None:
        self.client = client
        self.job = job
        self.plan = plan
        self.workspace = workspace
        self.reference = reference
        self.max_tries = max_tries
        self.run_seconds = run_seconds
        self.reuse = reuse
        self.actual: dict[str, FunctionInfo] = {}  # normalised planned description -> function in use
        self.outcomes: list[FunctionOutcome] = []

    # ---- the loop over functions ----------------------------------------------------------
    def run(self) -> list[FunctionOutcome]:
        for planned in self.plan.functions:
            is_root = planned is self.plan.root_function
            found = None if is_root or not self.reuse else self.find_reusable(planned.description)
            if found is not None:
                function, score = found
                self.actual[normalise(planned.description)] = function
                self.outcomes.append(FunctionOutcome(
                    planned.name, function.name, function.description, "reused",
                    reused={"function": function.name, "module": function.module,
                            "description": function.description, "similarity": round(score, 4)},
                ))
                continue
            self.outcomes.append(self.implement(self.spec(planned, is_root)))
        return self.outcomes

    def find_reusable(self, description: str) -> tuple[FunctionInfo, float] | None:
        try:
            function = self.workspace.resolve_function(description)
        except NoMatchError:
            return None
        except AmbiguousReferenceError as exc:  # near-duplicates: reuse the closest
            best = exc.candidates[0][0]
            function = next(f for f in self.workspace.functions.values() if f.description == best)
        return function, self.workspace.similarity(description, function.description)

    def spec(self, planned: PlannedFunction, is_root: bool) -> FunctionSpec:
        name, n = planned.name, 2
        while name in self.workspace.functions:
            name, n = f"{planned.name}_{n}", n + 1
        calls = [self.actual[normalise(c)].description for c in planned.calls]
        return FunctionSpec(name, planned.description, dict(planned.inputs), dict(planned.outputs), calls, is_root)

    def callees(self, spec: FunctionSpec) -> list[dict[str, Any]]:
        by_description = {f.description: f for f in self.actual.values()}
        return [
            {"description": f.description, "inputs": f.inputs, "outputs": f.outputs}
            for f in (by_description[c] for c in spec.calls)
        ]

    # ---- one function ------------------------------------------------------------------
    def implement(self, spec: FunctionSpec) -> FunctionOutcome:
        outcome = FunctionOutcome(spec.name, spec.name, spec.description, "built")
        previous: str | None = None
        feedback: list[dict[str, Any]] = []
        for number in range(1, self.max_tries + 1):
            attempt = Attempt(number)
            outcome.attempts.append(attempt)
            outcome.tries = number
            prompt = prompts.implementation_prompt(spec.as_prompt(), self.callees(spec), previous, feedback)
            answer = ask_builder(self.client, self.job, prompt, SUBMIT_TOOL, "function_rejected")
            attempt.source = answer["source"]
            accepted = self.evaluate(spec, attempt)
            if accepted is not None:
                self.workspace.add_source(self.chunk_module(spec, attempt.source), f"<built {spec.name}>",
                                          f"_arc_build_{spec.name}")
                self.actual[normalise(spec.description)] = self.workspace.functions[spec.name]
                outcome.source = attempt.source
                return outcome
            previous, feedback = attempt.source, attempt.problems
        raise Rejected("function_rejected", {
            "function": spec.name, "tries": self.max_tries,
            "last_problems": outcome.attempts[-1].problems if outcome.attempts else [],
        })

    def chunk_module(self, spec: FunctionSpec, source: str) -> str:
        return assemble_module([source], docstring=f"Candidate {spec.name} (build workspace).")

    def evaluate(self, spec: FunctionSpec, attempt: Attempt) -> FunctionInfo | None:
        """Static checks, run, judges; problems go into ``attempt``; the function when it passes all."""
        source = attempt.source or ""
        problems = self.static_problems(spec, source)
        registered = None
        if not problems:
            scratch = self.workspace.clone()
            try:
                scratch.add_source(self.chunk_module(spec, source), f"<candidate {spec.name}>",
                                   f"_arc_candidate_{spec.name}_{attempt.number}")
                registered = scratch.functions.get(spec.name)
                if registered is None:
                    problems.append({"stage": "structure", "problem": f"no function named {spec.name} was registered"})
            except ArcError as exc:
                problems.append({"stage": "registration", "problem": str(exc)})
            except Exception as exc:  # noqa: BLE001 - the module body ran candidate code
                problems.append({"stage": "registration", "problem": f"{type(exc).__name__}: {exc}"})
        if registered is not None:
            problems += [{"stage": "interface", "problem": p} for p in self.interface_problems(spec, registered)]
            problems += [{"stage": "narration", "problem": p} for p in narration_problems(registered.facts.node)]
        if not problems and registered is not None:
            attempt.run = self.run_candidate(scratch, spec, problems)
        if not problems:
            attempt.verdicts = self.judge(spec, source, attempt.run or {})
            for verdict in attempt.verdicts:
                if verdict["verdict"] != "pass":
                    problems.append({"stage": "judge", "judge": verdict["judge"], "reasons": verdict["reasons"]})
        attempt.problems = problems
        return registered if not problems else None

    def static_problems(self, spec: FunctionSpec, source: str) -> list[dict[str, Any]]:
        violations = find_violations(source, f"<candidate {spec.name}>")
        if violations:
            stage = "syntax" if any(v.rule == "syntax" for v in violations) else "safety"
            return [{"stage": stage, "problem": str(v)} for v in violations]
        tree = ast.parse(source)
        functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        problems = []
        if [f.name for f in functions] != [spec.name]:
            problems.append(f"the source must define exactly one function, `def {spec.name}(ctx):`; "
                            f"it defines {[f.name for f in functions]}")
        if any(isinstance(n, ast.Assign) and "entry_point" in ast.unparse(n) for n in tree.body):
            problems.append("do not declare an entry point; the builder generates it")
        return [{"stage": "structure", "problem": p} for p in problems]

    def interface_problems(self, spec: FunctionSpec, registered: FunctionInfo) -> list[str]:
        fn, facts = registered, registered.facts
        problems = []
        if normalise(fn.description) != normalise(spec.description):
            problems.append(f"the description must be exactly {spec.description!r}, not {fn.description!r}")
        if set(fn.outputs) != set(spec.outputs):
            problems.append(f"declared outputs {sorted(fn.outputs)} must be exactly {sorted(spec.outputs)}")
        if set(fn.inputs) != set(spec.inputs):
            problems.append(f"declared inputs {sorted(fn.inputs)} must be exactly {sorted(spec.inputs)}")
        if {normalise(q) for q in facts.load_queries} != {normalise(i) for i in spec.inputs}:
            problems.append(f"load() must read exactly the inputs {sorted(spec.inputs)}, "
                            f"it reads {sorted(set(facts.load_queries))}")
        if {normalise(c) for c in fn.calls} != {normalise(c) for c in spec.calls}:
            problems.append(f"calls must be exactly {spec.calls}, not {list(fn.calls)}")
        return problems

    def run_candidate(self, scratch: ConfinedRegistry, spec: FunctionSpec, problems: list[dict[str, Any]]) -> dict[str, Any]:
        """Run on the original values, in the confined session within ``run_seconds``; mismatches with
        the transcript's values become problems."""
        record: dict[str, Any] = {"inputs": jsonable(spec.inputs)}
        try:
            run = scratch.run_function(spec.name, spec.inputs, self.run_seconds)
        except ArcError as exc:  # the session itself failed: stopped at its time limit, or died
            problems.append({"stage": "run", "problem": f"{type(exc).__name__}: {exc}"})
            record["error"], record["narration"] = str(exc), []
            return record
        record["narration"] = run.narration
        if run.error is not None:
            if not isinstance(run.error, (ArcError, TimeoutError)):
                raise run.error
            problems.append({"stage": "run", "problem": f"{type(run.error).__name__}: {run.error}"})
            record["error"] = str(run.error)
            return record
        out = run.outputs or {}
        record["outputs"] = jsonable(dict(out))
        expected = dict(spec.outputs)
        if spec.root and self.plan.answer_key in expected:
            expected[self.plan.answer_key] = self.reference
        for key, want in expected.items():
            if not answers_match(out.get(key), want):
                problems.append({"stage": "result", "problem":
                                 f"output {key!r} is {out.get(key)!r} on the original values; the transcript gives {want!r}"})
        return record

    def judge(self, spec: FunctionSpec, source: str, run: dict[str, Any]) -> list[dict[str, Any]]:
        prompt = prompts.judge_prompt(spec.as_prompt(), source, run)

        def ask(role: str, index: int) -> Callable[[], dict[str, Any]]:
            def call() -> dict[str, Any]:
                try:
                    answer = self.client.ask(role, system=prompts.JUDGE_SYSTEM.format(index=index), context=self.job.context,
                                             prompt=prompt, tool=VERDICT_TOOL, meter=self.job.meter)
                except AnswerError as exc:
                    raise Rejected("judge_failed", {"judge": role, "errors": exc.errors}) from exc
                return {"judge": role, "verdict": answer["verdict"], "reasons": list(answer["reasons"])}
            return call

        return self.client.parallel([ask(role, i + 1) for i, role in enumerate(JUDGES)])

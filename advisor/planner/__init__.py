"""Capacity planner: what fits, at what context and concurrency, and how fast the hardware allows at most.

`make_plan` is pure given a resolved ModelSpec and the machine bench; the edges (CLI, UI) resolve the
model from files (`spec.resolve_model`) and measure the CPU (`machine_bench.get`) before calling it.
"""
from __future__ import annotations

from advisor import kschema as ks
from advisor.answers import Answers
from advisor.hardware import Hardware
from advisor.knowledge import Knowledge
from advisor.planner.capacity import Workload, add_offload_option, plan_engine
from advisor.planner.machine_bench import MachineBench
from advisor.planner.spec import ModelSpec, ModelSpecError, resolve_model
from advisor.planner.target import build_target
from advisor.planner.types import EnginePlan, Plan, PlanOption, Target

__all__ = ["EnginePlan", "MachineBench", "ModelSpec", "ModelSpecError", "Plan", "PlanOption", "Target", "Workload",
           "make_plan", "resolve_model", "workload_for"]


def workload_for(answers: Answers, knowledge: Knowledge) -> Workload:
    m = answers.model
    prompt = min(knowledge.planner.prompt_tokens[answers.prompt_mix], m.context_tokens)
    return Workload(precision=m.precision, context_tokens=m.context_tokens, concurrency=answers.concurrency,
                    prompt_tokens=prompt)


def make_plan(answers: Answers, hardware: Hardware | None, knowledge: Knowledge, spec: ModelSpec | None = None,
              machine: MachineBench | None = None, lang: str = "en", detail: bool = True) -> Plan:
    if spec is None:
        spec = resolve_model(answers.model, knowledge, read_files=False)
    target = build_target(answers, hardware, knowledge, machine)
    wl = workload_for(answers, knowledge)
    plans = {e: plan_engine(e, spec, target, wl, knowledge, lang, detail=detail) for e in ks.ENGINE_IDS}
    if detail:
        add_offload_option(plans, knowledge, lang)
    notes = list(spec.notes)
    if spec.approximate:
        notes.insert(0, knowledge.s("plan_generic_note", lang, params=f"{spec.params_b:g}") + " "
                     + knowledge.models.generic.description.get(lang))
    return Plan(model=spec, target=target, engines=plans, notes=notes)

"""Capacity planner: what fits, at what context and concurrency, and how fast the hardware allows at most.

`make_plan` is pure given a resolved ModelSpec and the machine bench; the edges (CLI, UI) resolve the
model from files (`spec.resolve_model`) and measure the CPU (`machine_bench.get`) before calling it.

May import: advisor.inputs, advisor.knowledge, and the probes' cache dir (`probes.cache`, where the machine bench is
kept beside the probes' own artefacts).
"""
from __future__ import annotations

from advisor.inputs.answers import Answers, checkpoint_precision
from advisor.inputs.hardware import Hardware
from advisor.knowledge import schema as ks
from advisor.knowledge.load import Knowledge
from advisor.planner import machine_bench
from advisor.planner.capacity import Workload, add_offload_option, plan_engine
from advisor.planner.machine_bench import MachineBench
from advisor.planner.spec import ModelSpec, ModelSpecError, find_known, generic, keep_config, known_spec, resolve_model
from advisor.planner.target import build_target, find_gpu
from advisor.planner.types import EnginePlan, Plan, PlanOption, Target


def edge_inputs(answers: Answers, knowledge: Knowledge, measure: bool = True, on_measure=None
                ) -> tuple[ModelSpec, MachineBench | None]:
    """What only the edge may do: read the user's model files, and measure this CPU (once, cached) when the
    plan is for this machine. Raises ModelSpecError (one line) for a model that cannot be resolved.
    on_measure() is called just before a measurement starts (to tell the user why they wait ~3 s)."""
    spec = resolve_model(answers.model, knowledge, read_files=True)
    machine = None
    if answers.hardware is None:
        machine = machine_bench.cached()
        if machine is None and measure:
            if on_measure:
                on_measure()
            machine = machine_bench.get()
    return spec, machine


__all__ = ["EnginePlan", "MachineBench", "ModelSpec", "ModelSpecError", "Plan", "PlanOption", "Target", "Workload",
           "edge_inputs", "find_gpu", "find_known", "generic", "keep_config", "known_spec", "machine_bench", "make_plan",
           "resolve_model", "workload_for"]


def workload_for(answers: Answers, knowledge: Knowledge) -> Workload:
    """The typical request (the answers' token counts, else the prompt mix's) plans the concurrency; the context is
    the most one request may hold."""
    m, sv = answers.model, knowledge.serving
    prompt = min(m.input_tokens or knowledge.planner.prompt_tokens[answers.prompt_mix], m.context_tokens)
    output = m.output_tokens or sv.output_tokens[answers.prompt_mix]
    sd = 0.0 if m.input_tokens else round(prompt * sv.prompt_sd_share[answers.prompt_mix], 1)
    return Workload(precision=m.precision, context_tokens=m.context_tokens, concurrency=answers.concurrency,
                    prompt_tokens=prompt, kv_cache_dtype=m.kv_cache_dtype,
                    typical_tokens=min(prompt + output, m.context_tokens), output_tokens=output, input_sd=sd,
                    ttft_target_ms=float(answers.ttft_p95_ms),
                    request_rate=answers.load.request_rate_rps if answers.load is not None else None,
                    max_batch=answers.load.max_batch if answers.load is not None else None,
                    itl_target_ms=answers.itl_p95_ms)


def _price(plans, answers: Answers, hardware: Hardware | None, target, knowledge: Knowledge) -> None:
    from advisor.planner.cost import hourly_usd, usd_per_million_tokens

    cores = (answers.hardware.cpu_cores if answers.hardware is not None
             else (hardware.cpu.usable_cores if hardware is not None else None))
    for p in plans.values():
        usd, why = hourly_usd(p, target, knowledge, cores, answers.gpu_usd_per_hour, answers.cpu_core_usd_per_hour)
        p.usd_per_hour = None if usd is None else round(usd, 4)
        p.cost_basis = why
        best = usd_per_million_tokens(usd, p.decode_tps_total_upper_bound) if p.loads is not False else None
        p.usd_per_m_tokens_at_least = None if best is None else round(best, 4)
        sv = p.serving
        if sv is None or usd is None or sv.replicas is None:
            continue
        # the fleet: replicas x the replica's GPUs at the plan's price per GPU (a CPU replica is one machine)
        per_gpu = usd / max(1, p.gpus_used) if p.device == "gpu" else None
        sv.fleet_usd_per_hour = round(per_gpu * (sv.fleet_gpus or 0) if per_gpu is not None else usd * sv.replicas, 4)
        m = usd_per_million_tokens(sv.fleet_usd_per_hour, sv.fleet_output_tps)
        sv.usd_per_m_output_tokens = None if m is None else round(m, 4)
        if sv.leaner is not None and per_gpu is not None:
            sv.leaner.fleet_usd_per_hour = round(per_gpu * sv.leaner.fleet_gpus, 4)


def make_plan(answers: Answers, hardware: Hardware | None, knowledge: Knowledge, spec: ModelSpec | None = None,
              machine: MachineBench | None = None, lang: str = "en", detail: bool = True,
              calibration: dict | None = None, serving_skip: frozenset[str] = frozenset(),
              searched: frozenset[str] | None = None, reuse: dict | None = None) -> Plan:
    """calibration: this machine's efficiencies per engine from a sweep measured here (advisor.planner.calibration,
    read at the edge); it applies to plans for this machine's CPU only. detail=False: the verdicts only (the flip
    search); serving_skip: advisor.planner.perf.serving_plan's skip; searched: the engines whose serving plans run
    their capacity searches (None: all; the others skip "searches"). reuse (detail=False): a dict the caller keeps
    for the plans of one recommendation (their spec and knowledge), where plans that differ only in the TTFT target
    share their memory plans (advisor.planner.capacity.plan_engine)."""
    if spec is None:
        spec = resolve_model(answers.model, knowledge, read_files=False)
    target = build_target(answers, hardware, knowledge, machine)
    wl = workload_for(answers, knowledge)
    same_target = None if reuse is None or detail else reuse.setdefault(target.model_dump_json(), {})
    plans = {e: plan_engine(e, spec, target, wl, knowledge, lang, detail=detail, calibration=calibration,
                            serving_skip=serving_skip if searched is None or e in searched
                            else serving_skip | {"searches"}, reuse=same_target)
             for e in ks.ENGINE_IDS}
    if detail:
        add_offload_option(plans, knowledge, lang)
    _price(plans, answers, hardware, target, knowledge)
    notes = list(spec.notes)
    if wl.context_tokens > spec.max_context:
        notes.append(knowledge.s("plan_a_ctx_beyond", lang, ctx=f"{wl.context_tokens:,}", max=f"{spec.max_context:,}"))
    if spec.approximate:
        notes.insert(0, knowledge.s("plan_generic_note", lang, params=f"{spec.params_b:g}") + " "
                     + knowledge.models.generic.description.get(lang))
    if target.gpu_count and target.gpu_name and target.gpu_id is None:
        mem = f"{target.gpu_memory_gib:.1f} GiB" if target.gpu_memory_gib else "—"
        notes.append(knowledge.s("plan_gpu_not_listed", lang, name=target.gpu_name[:80], mem=mem))
    m = answers.model
    if m.name and not m.path and checkpoint_precision(m.name, knowledge) == m.precision:  # (given or not: the app saves it)
        notes.append(knowledge.s("plan_checkpoint_precision", lang, name=spec.name, prec=m.precision))
    if spec.unknown_name:
        notes.insert(0, knowledge.s("plan_unknown_model", lang, name=spec.name, params=f"{spec.params_b:g}",
                                    close=", ".join(spec.suggestions) or "—"))
    return Plan(model=spec, target=target, engines=plans, asked_precision=answers.model.precision, notes=notes)

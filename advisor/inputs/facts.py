"""Flatten answers + hardware into the named facts that rule conditions may test.

The set of names is closed (advisor.knowledge.vocabulary): knowledge loading rejects a rule that tests an unknown fact.
"""
from __future__ import annotations

from typing import Any

from advisor.inputs.answers import Answers
from advisor.inputs.hardware import Hardware


def plan_facts(plan, fix_none: str) -> dict[str, Any]:
    """An EnginePlan as flat facts; numbers rounded for the reason texts they fill."""
    def r(x: float | None) -> float | None:
        return None if x is None else round(x, 1)

    avail = plan.available_gib
    return {
        "plan_fits": plan.fits,
        "plan_loads": plan.loads,
        "plan_offload": plan.device == "gpu+cpu",
        "plan_offload_layers": plan.offload_layers,
        "plan_device": plan.device,
        "plan_precision": plan.precision_label,
        "plan_precision_id": plan.precision,
        "plan_headroom_fraction": (plan.headroom_gib / avail) if avail and plan.headroom_gib is not None else None,
        "plan_headroom_gib": r(plan.headroom_gib),
        "plan_total_gib": r(plan.total_gib),
        "plan_available_gib": r(avail),
        "plan_weights_gib": r(plan.weights_gib),
        "plan_kv_gib": r(plan.kv_gib),
        "plan_overhead_gib": r(plan.overhead_gib),
        "plan_max_concurrency": plan.max_concurrency,
        "plan_max_context_tokens": plan.max_context_tokens,
        "plan_decode_tps_upper_bound": plan.decode_tps_upper_bound,
        "plan_fix": "; ".join(o.text for o in plan.options) or fix_none,
        "plan_fits_known": plan.fits is not None,
        "plan_offload_ram_gib": r(plan.offload_ram_gib),
        "plan_typical_tokens": f"{plan.typical_tokens or plan.context_tokens:,}",
        **serving_facts(plan),
    }


#: the parts of a serving plan that a plan may leave out (advisor.planner.perf.serving_plan's skip), with the facts below
#: that read them: a flip search whose rules test none of a part's facts does not compute it
SERVING_PARTS = {
    "band": frozenset({"plan_capacity_low", "plan_capacity_high", "plan_capacity_bound", "plan_margin_low"}),
    "levels": frozenset({"plan_ttft_p95_ms", "plan_itl_ms", "plan_output_tps", "plan_ttft_one_ms", "plan_miss_x",
                         "plan_miss_in_band"}),
}


def serving_facts(plan) -> dict[str, Any]:
    """The serving prediction as facts: whether Q1's users meet Q2 on one replica, on how many, or not at all."""
    sv = getattr(plan, "serving", None)
    known = sv is not None and sv.ttft_target_ms is not None and sv.capacity is not None and plan.loads is not False
    at = sv.at_users if sv is not None else None
    fleet_gpus = (sv.leaner.fleet_gpus if sv.leaner else sv.fleet_gpus) if sv is not None else None

    def g(x: float | None, nd: int = 0):
        return None if x is None else (round(x) if nd == 0 else round(x, nd))

    return {
        "plan_predicted": known,
        "plan_sla_replicas": sv.replicas if known else None,
        "plan_sla_missed": known and sv.replicas is None,
        # the capacity's and the fleet's basis, which stays our model's where the silicon predictor gives the decode
        # side (own_label, own_band): the scores never depend on which predictor gave ITL and tok/s
        "plan_rough": bool(known and (sv.own_label or sv.label) == "rough"),
        "plan_label": (sv.own_label or sv.label) if sv is not None else None,
        "plan_band_pct": g((sv.own_band if sv.own_band is not None else sv.band) * 100) if sv is not None else None,
        "plan_capacity": sv.capacity if known else None,
        "plan_capacity_low": sv.capacity_low if known else None,
        "plan_capacity_high": sv.capacity_high if known else None,
        # "batch": held by the engine's default batch cap (max_num_seqs), which a deployment may raise; "kv": the pool
        "plan_capacity_bound": sv.capacity_bound if known else None,
        "plan_margin": (sv.capacity / sv.users) if known and sv.users else None,
        "plan_margin_low": (sv.capacity_low / sv.users) if known and sv.users and sv.capacity_low is not None
        else None,  # at the band's slow end
        "plan_ttft_p95_ms": g(at.ttft_ms_p95) if at is not None else None,
        "plan_itl_ms": g(at.itl_ms_p50, 1) if at is not None else None,
        "plan_output_tps": g(at.output_tps) if at is not None else None,
        "plan_ttft_one_ms": g(sv.ttft_ms_p95_one) if sv is not None else None,
        "plan_miss_x": (round(sv.ttft_ms_p95_one / sv.ttft_target_ms, 1)
                        if known and sv.ttft_ms_p95_one and sv.ttft_target_ms else None),
        # the miss lies inside the band: at the band's fast end one user would meet the target (a rough prediction
        # that close cannot say it misses)
        "plan_miss_in_band": (sv.ttft_ms_p95_one / sv.ttft_target_ms
                              <= 1 + (sv.own_band if sv.own_band is not None else sv.band)
                              if known and sv.ttft_ms_p95_one and sv.ttft_target_ms else None),
        # the engine's leanest fleet that meets Q2 (smaller replicas than the plan's own where they do): what the
        # ranking compares engines by; the plan's row and bundle keep the plan's own layout
        "plan_fleet_gpus": fleet_gpus if known else None,
        # GPUs of the fleet, or machines for a CPU fleet: what the relative rules compare
        "plan_fleet_size": (fleet_gpus or sv.replicas) if known and sv.replicas else None,
        "plan_fleet_ratio": None,  # set by the rules' Evaluator, which sees every engine
        "plan_mode": sv.mode if sv is not None else None,
        # which predictor each quoted figure comes from (a reason's text names it: its source line is the rule's)
        "plan_by": _predicted_by(sv) if sv is not None else None,
    }


def _predicted_by(sv) -> str:
    """Whose figures a serving reason quotes: the user's benchmark file's ratios, this machine's own sweep, our model
    alone, the measured-silicon predictor's decode side beside our TTFT, or the silicon predictor's TTFT too."""
    if sv.evidence is not None:
        return "evidence"
    if sv.basis == "measured":
        return "measured"
    if sv.predictor == "serving-model":
        return "ours"
    return "silicon_ttft" if sv.ttft_fixed_ms is not None else "silicon"


def build_facts(answers: Answers, hardware: Hardware | None) -> dict[str, Any]:
    m = answers.model
    f: dict[str, Any] = {
        "concurrency": answers.concurrency,
        "ttft_p95_ms": answers.ttft_p95_ms,
        "cross_platform": answers.cross_platform,
        "cuda_expertise": answers.cuda_expertise,
        "model_update": answers.model_update,
        "non_llm_models": answers.non_llm_models,
        "strict_sla": answers.strict_sla,
        "deployment": answers.deployment,
        "prompt_mix": answers.prompt_mix,
        "prefix_sharing": answers.prefix_sharing,
        "architecture": m.architecture,
        "precision": m.precision,
        "params_b": m.params_b,
        "context_tokens": m.context_tokens,
        "kv_cache_dtype": m.kv_cache_dtype,
        "moe": False,  # set from the resolved model (advisor.decide.rules.Evaluator), as are the next three
        "modality": m.modality or ("vision" if m.architecture == "cnn" else "text"),
        "mla": False,
        "sliding_window": None,
    }
    t = answers.hardware
    if t is not None:
        f.update(gpu_vendor=t.gpu_vendor, gpu_count=t.gpu_count, gpu_memory_gb=t.gpu_memory_gb,
                 ram_gb=t.ram_gb, cpu_cores=t.cpu_cores, os=t.os, cpu_arch=t.cpu_arch,
                 has_avx2=None, has_avx512=None, hardware_source="answers", accelerator=t.accelerator,
                 nodes=t.nodes, gpus_per_node=t.gpus_per_node, interconnect=t.interconnect,
                 unified_memory=t.unified_memory)
    elif hardware is not None:
        g = hardware.gpus
        mem = g[0].memory_total_mb / 1024 if g and g[0].memory_total_mb else None
        arch = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}.get(hardware.cpu.arch)
        f.update(gpu_vendor=hardware.gpu_vendor, gpu_count=len(g), gpu_memory_gb=mem,
                 ram_gb=hardware.ram_total_mb / 1024, cpu_cores=hardware.cpu.usable_cores,
                 os=hardware.os if hardware.os in ("linux", "windows", "windows-wsl", "macos") else None, cpu_arch=arch,
                 has_avx2="avx2" in hardware.cpu.flags,
                 has_avx512=any(x.startswith("avx512") for x in hardware.cpu.flags),
                 hardware_source="detected", accelerator="gpu", nodes=1, gpus_per_node=len(g) or None,
                 interconnect=None, unified_memory=hardware.apple_silicon)
    else:
        f.update(gpu_vendor="none", gpu_count=0, gpu_memory_gb=None, ram_gb=None, cpu_cores=None, os=None,
                 cpu_arch=None, has_avx2=None, has_avx512=None, hardware_source="answers", accelerator="gpu",
                 nodes=1, gpus_per_node=None, interconnect=None, unified_memory=None)
    mem = f["gpu_memory_gb"]
    f["total_gpu_memory_gb"] = mem * f["gpu_count"] if mem else None
    return f

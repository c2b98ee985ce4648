"""Predicted serving performance of one engine plan: the curve, the SLA capacity with its band, and the fleet. Pure.

The figures come from advisor/planner/serving.py with the efficiencies of knowledge/serving_fit.yaml (fitted by
bench/fit_serving.py on published measurements), chosen in this order: the engine's own fit on the hardware class,
the class's pooled fit (another engine's evidence: labelled rough), the unfitted prior (rough), or, for this
machine's CPU, the recalibration a sweep measured here left in the user cache ("measured").
"""
from __future__ import annotations

from typing import Callable

from advisor.knowledge.load import Knowledge
from advisor.planner.serving import Eff, Load, capacity, capacity_reaches, predict, replicas_for, with_band
from advisor.planner.types import Calibrated, ServingLevel, ServingPlan, Target

Calibration = dict[str, Calibrated]
MAX_USERS = 100_000


def hw_class(target: Target, device: str, k: Knowledge) -> str:
    """The hardware class whose fitted efficiencies apply (knowledge/serving.yaml)."""
    if device == "cpu":
        return "arm-cpu" if (target.cpu_arch or "").lower() in ("arm64", "aarch64") else "x86-cpu"
    v = target.gpu_vendor
    if v == "nvidia":
        gid, name = target.gpu_id or "", (target.gpu_name or "").lower()
        consumer = any(gid.startswith(p) for p in k.serving.geforce_prefixes) or "geforce" in name
        return "geforce" if consumer else "datacenter-nvidia"
    return v if v in ("amd", "apple") else "other"


def _eff(g) -> Eff:
    """A knowledge Efficiency (or fit group, or calibration) as the serving model's Eff."""
    return Eff(g.bw_eff, g.flops_eff, g.step_ms, g.request_ms)


def efficiency(engine: str, cls: str, k: Knowledge, calibrated: Calibrated | None = None, batching: bool = False
               ) -> tuple[Eff, float, str, str]:
    """(efficiencies, band, basis, group) for an engine on a hardware class. batching: the prediction is of many
    users batched together, which a fit on batch-1 figures alone does not speak for (its band is then rough)."""
    sv = k.serving
    if calibrated is not None:
        return (_eff(calibrated), max(calibrated.band, sv.band_floor),
                "measured", "this machine")
    groups = k.serving_fit.groups
    own = groups.get(f"{engine}/{cls}")
    if own is not None:
        band = max(own.band, sv.band_floor)
        if batching and not own.serving_points:
            band = max(band, sv.rough_above * 1.2)
        return _eff(own), band, "fitted", f"{engine}/{cls}"
    pooled = groups.get(cls)
    if pooled is not None:  # another engine's evidence on this class: no better than rough
        return (_eff(pooled),
                max(pooled.band * 1.5, sv.rough_above * 1.2, sv.band_floor), "class", cls)
    p = sv.priors[cls]
    return _eff(p), sv.band_without_evidence, "prior", cls


def _level(mode, hw, eff, wl, c: int, gpus: int, target_ms: float | None) -> ServingLevel:
    p = predict(mode, hw, eff, Load(wl.prompt_tokens, wl.output_tokens, wl.input_sd, concurrency=c))
    per_gpu = p.output_tps / gpus if p.output_tps is not None and gpus else p.output_tps
    meets = None if target_ms is None or p.ttft_ms_p95 is None else p.ttft_ms_p95 <= target_ms
    return ServingLevel(concurrency=c, ttft_ms_p50=_r(p.ttft_ms_p50), ttft_ms_p95=_r(p.ttft_ms_p95),
                        itl_ms_p50=_r(p.itl_ms_p50), itl_ms_p95=_r(p.itl_ms_p95), output_tps=_r(p.output_tps),
                        output_tps_per_user=_r(p.output_tps_per_user), output_tps_per_gpu=_r(per_gpu), meets=meets)


def _r(x: float | None) -> float | None:
    return None if x is None else float(f"{x:.4g}")


def serving_plan(c, make_alt: Callable[[int], object], calibration: Calibration | None = None,
                 detail: bool = True, skip: frozenset[str] = frozenset(), wl=None) -> ServingPlan | None:
    """c: the capacity planner's _Calc for one engine; make_alt(n): the same plan on n GPUs (the fleet's choice of
    tensor-parallel degree). detail=False (the flip search) keeps the capacity and fleet, not the curve, nor what no
    fact carries (replicas_high, the fleet's tok/s and its price). skip (with detail=False): parts whose facts no rule
    tests, left None (advisor.inputs.facts.SERVING_PARTS; advisor.decide.rules.Evaluator decides): "band", the band's
    capacities (with replicas_high, three capacity searches of an engine's five), "levels", the prediction at the
    users and at one user, and "searches", every capacity search (the plan stops before them: capacity None). wl: the
    workload, when it is not c.wl (a _Calc made for another TTFT target, which is all they may differ in)."""
    skip = skip if not detail else frozenset()
    if c.loads() is False:
        return None  # an engine that does not start serves nothing (the plan says why and how to fix it)
    hw = c.serving_hw()
    if hw is None:
        return None
    k, wl, target = c.k, wl or c.wl, c.target
    cls = hw_class(target, c.device, k)
    here = target.source == "detected" and c.device == "cpu"
    cal = (calibration or {}).get(c.engine) if here else None
    if cal is not None and target.cpu_model and cal.cpu_model != target.cpu_model:
        cal = None  # a sweep on another CPU says nothing of this one
    eff, band, basis, group = efficiency(c.engine, cls, k, cal, batching=c.mode != "sequential" and
                                         wl.concurrency > 1)
    label = "measured" if basis == "measured" else ("rough" if band > k.serving.rough_above else "fitted")
    mode, users, target_ms = c.mode, wl.concurrency, wl.ttft_target_ms
    gpus = c.n if c.device == "gpu" else 0
    out = ServingPlan(mode=mode, hw_class=cls, basis=basis, group=group, label=label, band=round(band, 3),
                      bw_eff=eff.bw_eff, flops_eff=eff.flops_eff, step_ms=eff.step_ms, request_ms=eff.request_ms,
                      input_tokens=wl.prompt_tokens,
                      output_tokens=wl.output_tokens, input_sd=wl.input_sd, typical_tokens=c.typical,
                      ttft_target_ms=target_ms, users=users, gpus_per_replica=gpus,
                      tensor_parallel=max(1, c.tp) if c.cap.multi_gpu == "tensor" and c.device == "gpu" else 1,
                      measured_change=_change(cal))
    if "levels" not in skip:
        out.at_users = _level(mode, hw, eff, wl, users, gpus, target_ms)
        out.ttft_ms_p95_one = _level(mode, hw, eff, wl, 1, gpus, target_ms).ttft_ms_p95
    if detail:
        top = min(max(2 * users, 8), max(k.serving.curve_levels))
        levels = sorted({lv for lv in k.serving.curve_levels if lv <= top} | {users})
        out.levels = [_level(mode, hw, eff, wl, lv, gpus, target_ms) for lv in levels]
    if target_ms is None or "searches" in skip:
        return out
    cap = capacity(mode, hw, eff, wl.prompt_tokens, wl.output_tokens, wl.input_sd, target_ms, MAX_USERS)
    out.capacity = cap
    # the fleet: the tensor-parallel degree (on this target's nodes) that meets Q1 with the fewest GPUs
    best = (replicas_for(users, cap), gpus, cap, hw, out.tensor_parallel)
    if c.device == "gpu" and c.cap.multi_gpu == "tensor":
        per_node = target.gpus_per_node or target.gpu_count or 1
        for n in k.planner.tensor_parallel_sizes:
            if n == c.n or n > per_node:
                continue
            fewer = best[0] * max(best[1], 1) if best[0] is not None else None  # GPUs it must use fewer of
            if fewer is not None and n >= fewer:
                continue  # at least one replica of n GPUs: never fewer GPUs than the best so far (no search needed)
            alt = make_alt(n)
            if alt.n != n or alt.device != "gpu" or not alt.loads():
                continue
            ahw = alt.serving_hw()
            if ahw is None:
                continue
            if fewer is not None:  # r replicas of n GPUs use fewer when r <= ceil(fewer / n) - 1: each must hold
                most = -(-fewer // n) - 1  # users / that many
                if not capacity_reaches(mode, ahw, eff, wl.prompt_tokens, wl.output_tokens, wl.input_sd, target_ms,
                                        -(-users // most), MAX_USERS):
                    continue
            acap = capacity(mode, ahw, eff, wl.prompt_tokens, wl.output_tokens, wl.input_sd, target_ms, MAX_USERS)
            r = replicas_for(users, acap)
            if r is not None and (best[0] is None or r * n < best[0] * max(best[1], 1)):
                best = (r, n, acap, ahw, alt.tp)
    replicas, n, bcap, bhw, tp = best
    if replicas is None:
        return out
    out.replicas, out.fleet_gpus = replicas, replicas * n if n else None
    if n != gpus:
        out.gpus_per_replica, out.tensor_parallel = n, max(1, tp)
    if "band" in skip:
        return out
    slow, fast = with_band(eff, band)
    out.capacity_low = capacity(mode, hw, slow, wl.prompt_tokens, wl.output_tokens, wl.input_sd, target_ms, MAX_USERS)
    out.capacity_high = capacity(mode, hw, fast, wl.prompt_tokens, wl.output_tokens, wl.input_sd, target_ms,
                                 MAX_USERS)
    if not detail:
        return out
    slow_cap = capacity(mode, bhw, slow, wl.prompt_tokens, wl.output_tokens, wl.input_sd, target_ms, MAX_USERS)
    out.replicas_high = replicas_for(users, slow_cap)
    each = max(1, -(-users // replicas))
    lv = _level(mode, bhw, eff, wl, each, n, target_ms)
    out.fleet_output_tps = _r(lv.output_tps * users / each) if lv.output_tps else None
    return out


def fleet_floor(p, k: Knowledge) -> int:
    """The fewest GPUs (machines, for a fleet without GPUs) that serving_plan's fleet for this engine plan can have,
    without a capacity search: at least one replica, on the plan's GPUs, or on one GPU where the fleet may choose
    another tensor-parallel degree."""
    if p.device == "gpu" and k.planner.engines[p.engine].multi_gpu == "tensor":
        return 1
    return p.gpus_used if p.device == "gpu" and p.gpus_used else 1


def _change(cal: Calibrated | None) -> str | None:
    if cal is None:
        return None
    parts = []
    if cal.change_tps:
        parts.append(f"tok/s x{cal.change_tps:.2f}")
    if cal.change_ttft:
        parts.append(f"TTFT p95 x{cal.change_ttft:.2f}")
    return ", ".join(parts) or None

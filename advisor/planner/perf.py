"""Predicted serving performance of one engine plan: the curve, the SLA capacity with its band, and the fleet. Pure
but for the measured-silicon predictor's tables (advisor/planner/aic.py), which give ITL and output tok/s where it
has data; TTFT, capacities and fleets are our model's everywhere.

The figures come from advisor/planner/serving.py with the efficiencies of knowledge/serving_fit.yaml (fitted by
bench/fit_serving.py on published measurements), chosen in this order: the engine's own fit on the hardware class,
the class's pooled fit (another engine's evidence: labelled rough), the unfitted prior (rough), or, for this
machine's CPU, the recalibration a sweep measured here left in the user cache ("measured").
"""
from __future__ import annotations

import math
from typing import Callable

from advisor.knowledge.load import Knowledge
from advisor.planner.serving import Eff, Load, _search, capacity, capacity_reaches, predict, replicas_for, with_band
from advisor.planner.aic import predictor_name as aic_name
from advisor.planner.types import Calibrated, Disaggregation, LeanerFleet, ServingLevel, ServingPlan, Target

Calibration = dict[str, Calibrated]
MAX_USERS = 100_000
# the splits whose fleet may hold fewer GPUs a replica than the plan: a tensor-parallel degree, or fewer GPUs for an
# engine that splits layers (serving_plan and fleet_floor read the same set, so the flip search skips what the fleet may not)
RESIZABLE = ("tensor", "layer")


def beyond_window(typical_tokens: int | None, window: int) -> bool:
    """The typical request (its prompt and output) is longer than the model's trained window: vLLM, SGLang and
    TensorRT-LLM take the window as their default max_model_len and reject a longer request (extending it needs
    RoPE scaling the model card documents, and an override on the engine); llama.cpp runs past it with a warning,
    where the model's output degrades. No measurement in the fit speaks for either, so a plan predicts none."""
    return typical_tokens is not None and typical_tokens > window


def cpu_without_flops(device: str, target: Target) -> bool:
    """A CPU plan with no FLOPS figure for its CPU: a prompt's compute would be free (its TTFT a read of the weights,
    77 ms for 512 tokens of an 8B on a Mac mini's CPU), so a plan predicts none; its decode bound needs none."""
    return device == "cpu" and not target.cpu_gflops


def hw_class(target: Target, device: str, k: Knowledge) -> str:
    """The hardware class whose fitted efficiencies apply (knowledge/serving.yaml)."""
    if device == "cpu":  # (an Apple silicon target is Arm whether or not the answers say so)
        arm = (target.cpu_arch or "").lower() in ("arm64", "aarch64") or target.gpu_vendor == "apple"
        return "arm-cpu" if arm else "x86-cpu"
    v = target.gpu_vendor
    if v == "nvidia":
        gid, name = target.gpu_id or "", (target.gpu_name or "").lower()
        consumer = any(gid.startswith(p) for p in k.serving.geforce_prefixes) or "geforce" in name
        return "geforce" if consumer else "datacenter-nvidia"
    return v if v in ("amd", "apple") else "other"


def _eff(g) -> Eff:
    """A knowledge Efficiency (or fit group, or calibration) as the serving model's Eff."""
    return Eff(g.bw_eff, g.flops_eff, g.step_ms, g.request_ms, getattr(g, "seq_ms", 0.0), getattr(g, "prefill_x", 1.0))


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
        if (batching and not own.serving_points) or own.rough:
            band = max(band, sv.rough_above * 1.2)
        return _eff(own), band, "fitted", f"{engine}/{cls}"
    pooled = groups.get(cls)
    if pooled is not None:  # another engine's evidence on this class: no better than rough
        return (_eff(pooled),
                max(pooled.band * 1.5, sv.rough_above * 1.2, sv.band_floor), "class", cls)
    p = sv.priors[cls]
    return _eff(p), sv.band_without_evidence, "prior", cls


def label_for(basis: str, group: str, k: Knowledge, batching: bool) -> str:
    """measured, fitted or rough. Rough is thin evidence (another engine's, a prior, a group with too few held-out
    figures of its own, a batch-1 fit for a batched load), not a wide band: a band earned on many figures is shown as
    wide as it is."""
    if basis == "measured":
        return "measured"
    fg = k.serving_fit.groups.get(group) if basis == "fitted" else None
    thin = basis in ("class", "prior") or (fg is not None and (fg.rough or (batching and not fg.serving_points)))
    return "rough" if thin else "fitted"


def metric_bands(band: float, basis: str, group: str, label: str, k: Knowledge) -> tuple[float, float, bool]:
    """(TTFT band, ITL band, whether the TTFT band is rough) beside a tok/s band from efficiency(): the held-out p80
    per metric (bench/fit_serving.py), widened as the tok/s band was: another engine's evidence by half again, a rough
    one to at least the rough floor (a rough tok/s band is not TTFT's). One function for the plan and for
    bench/predict_vs_measured.py, so the bands it checks are the bands a plan shows."""
    g = k.serving_fit.groups.get(group) if basis in ("fitted", "class") else None
    if g is None:
        return band, band, False

    def one(b: float | None) -> float:
        if b is None:
            return band
        b = b * 1.5 if basis == "class" else b
        return round(max(b, k.serving.band_floor, k.serving.rough_above * 1.2 if label == "rough" else 0), 3)
    return one(g.band_ttft), one(g.band_itl), bool(g.rough_ttft)  # (g is a fit group: never measured)


def _level(mode, hw, eff, wl, c: int, gpus: int, target_ms: float | None) -> ServingLevel:
    p = predict(mode, hw, eff, Load(wl.prompt_tokens, wl.output_tokens, wl.input_sd, concurrency=c))
    per_gpu = p.output_tps / gpus if p.output_tps is not None and gpus else p.output_tps
    meets = None if target_ms is None or p.ttft_ms_p95 is None else p.ttft_ms_p95 <= target_ms
    return ServingLevel(concurrency=c, ttft_ms_p50=_r(p.ttft_ms_p50), ttft_ms_p95=_r(p.ttft_ms_p95),
                        itl_ms_p50=_r(p.itl_ms_p50), itl_ms_p95=_r(p.itl_ms_p95), output_tps=_r(p.output_tps),
                        output_tps_per_user=_r(p.output_tps_per_user), output_tps_per_gpu=_r(per_gpu), meets=meets)


def _r(x: float | None) -> float | None:
    return None if x is None else float(f"{x:.4g}")


SILICON_EDGE_BATCH = 128  # the largest batch aiconfigurator-core 0.12.0's SGLang and TensorRT-LLM tables answer for


class _Silicon:
    """The measured-silicon predictor (advisor/planner/aic.py) for one engine plan: the decode side (ITL, output
    tok/s) at a concurrency from its measured kernels, with the engine's running cap (the KV pool, the engine's max)
    applied as our model applies it. Its TTFT alone erred more than ours on the published rows (median 37 %, fitted
    against ours' 19 % in-sample), because it times the kernels only: with each engine's fixed cost per request added
    (knowledge/aiconfigurator.yaml ttft_fixed_ms, earned held out by source) and our model's wait for a place beyond
    the running cap, it errs less than ours held out (23 % against 36 %, 2026-12-06), so the plan shows that TTFT and
    its capacities and fleet are searches on it (serving_plan cap_of). The p95 of ITL, which it does not give, is its
    mean times our model's p95/p50 at the same load; its TTFT's p95 is its p50 plus our model's p95 - p50."""

    def __init__(self, key, mode: str, hw, eff, wl, extra_ms: float = 0.0, seq_ms: float = 0.0,
                 host_ms_per_seq: float = 0.0, ttft_fixed_ms: float | None = None):
        self.key, self.mode, self.hw, self.eff, self.wl = key, mode, hw, eff, wl
        self.extra_ms = extra_ms  # the engine's per-step host work its tables lack (knowledge: step_overhead_ms)
        self.seq_ms = seq_ms  # and per running sequence per step (knowledge: seq_overhead_ms)
        self.host_ms_per_seq = host_ms_per_seq  # the served floor of a step per sequence (knowledge: host_ms_per_seq)
        # the engine's fixed cost per request its TTFT lacks (knowledge: ttft_fixed_ms); None: TTFT stays ours
        self.ttft_fixed_ms = ttft_fixed_ms

    def _ttft(self, users: int, b: int, ours) -> tuple[float | None, float | None]:
        """(p50, p95) TTFT at `users` with b of them running: the library's TTFT for a request joining a batch of
        min(b, its tables' edge), plus the engine's fixed cost per request, plus what our model adds beyond that
        batch (a wait for a place in the running batch, growth past the tables' edge); the p95 is that plus our
        model's p95 - p50 at these users (the spread of the prompts and of the wait)."""
        from advisor.planner import aic

        if self.ttft_fixed_ms is None or ours.ttft_ms_p50 is None:
            return ours.ttft_ms_p50, ours.ttft_ms_p95
        wl = self.wl
        e = max(1, min(b, SILICON_EDGE_BATCH))
        pe = aic.point(self.key, wl.prompt_tokens, wl.output_tokens, e)
        if pe is None:
            return ours.ttft_ms_p50, ours.ttft_ms_p95
        at_e = self._ours(e).ttft_ms_p50 if e < users else None
        beyond = ours.ttft_ms_p50 - at_e if at_e is not None else 0.0
        t50 = pe.ttft_ms + self.ttft_fixed_ms + max(0.0, beyond or 0.0)
        t95 = t50 + max(0.0, (ours.ttft_ms_p95 or ours.ttft_ms_p50) - ours.ttft_ms_p50)
        return t50, t95

    def _ours(self, c: int):
        wl = self.wl
        return predict(self.mode, self.hw, self.eff, Load(wl.prompt_tokens, wl.output_tokens, wl.input_sd,
                                                          concurrency=c))

    def figures(self, c: int) -> tuple[float | None, float | None, float, float, float] | None:
        """(ttft p50, ttft p95 — ours; itl p50, itl p95, output tok/s — its) at c users; None: it has no data."""
        from advisor.planner import aic

        wl, cap = self.wl, self.hw.max_running
        users = max(1, c)
        b = users if cap is None else max(1, min(users, cap))
        pt = aic.point(self.key, wl.prompt_tokens, wl.output_tokens, b)
        if pt is None:
            return None
        ours = self._ours(users)
        r_itl = (ours.itl_ms_p95 / ours.itl_ms_p50) if ours.itl_ms_p50 and ours.itl_ms_p95 else 1.0
        tpot, tps = pt.tpot_ms, pt.output_tps
        if b > SILICON_EDGE_BATCH and not self.hw.moe_share:  # (MoE: our model's own growth with the batch is
            # what it gets most wrong on held-out runs, several-fold too fast: the library's figures stand as they are)
            # beyond the batches its tables hold, the library repeats its last step (SGLang's and TensorRT-LLM's
            # tables end at 128), and its vLLM tok/s turns down while its ITL still rises: a curve must not turn
            # back. Flat: its edge carried on by our model's throughput growth from the edge to b, the ITL what b
            # requests in flight then take. Still moving: its ITL, and the tok/s b requests in flight complete at it.
            # Either way at most what the card computes at our fitted share of its peak (every prompt and output
            # token costs 2 x matmul params; TensorRT-LLM's published 2,048 users of 128/128 on an H100: 28,310
            # tok/s), and never below the edge's own figure.
            out = max(1, wl.output_tokens)
            edge = aic.point(self.key, wl.prompt_tokens, wl.output_tokens, SILICON_EDGE_BATCH)
            at_b = self._ours(b)
            served = at_b.ttft_ms_p50 or 0.0  # a request's own TTFT with b in flight (no wait for a place)
            if edge is not None and abs(edge.tpot_ms - pt.tpot_ms) <= 1e-3 * edge.tpot_ms:
                at_edge = self._ours(SILICON_EDGE_BATCH)
                if at_b.output_tps and at_edge.output_tps:
                    tps = edge.output_tps * max(1.0, at_b.output_tps / at_edge.output_tps)
            else:
                tps = max(tps, b * out / (served / 1000 + out * tpot / 1000))
            hw, eff = self.hw, self.eff
            if hw.flops and hw.matmul_params:
                tps = min(tps, hw.flops * out / (2 * hw.matmul_params * (wl.prompt_tokens / eff.prefill_eff
                                                                           + out / eff.flops_eff)))
            tps = max(tps, edge.output_tps if edge is not None else 0.0)
            if tps > 0:  # the ITL b requests in flight take at that rate
                tpot = max(tpot, (1000 * b * out / tps - served) / out)
        tpot, tps = with_step_overhead(tpot, tps, self.extra_ms + b * self.seq_ms)
        tpot, tps = with_host_floor(tpot, tps, b * self.host_ms_per_seq)
        return (*self._ttft(users, b, ours), tpot, tpot * max(1.0, r_itl), tps)

    def host_bound(self, c: int) -> bool:
        """Whether at c users the served host floor, not the GPU, sets the step (with_host_floor)."""
        f = self.figures(c)
        b = max(1, c) if self.hw.max_running is None else max(1, min(c, self.hw.max_running))
        return f is not None and self.host_ms_per_seq > 0 and f[2] <= b * self.host_ms_per_seq * (1 + 1e-9)

    def level(self, c: int, gpus: int, target_ms: float | None) -> ServingLevel | None:
        f = self.figures(c)
        if f is None:
            return None
        t50, t95, i50, i95, tps = f
        return ServingLevel(concurrency=c, ttft_ms_p50=_r(t50), ttft_ms_p95=_r(t95), itl_ms_p50=_r(i50),
                            itl_ms_p95=_r(i95), output_tps=_r(tps), output_tps_per_user=_r(1000 / i50),
                            output_tps_per_gpu=_r(tps / gpus if gpus else tps),
                            meets=None if target_ms is None or t95 is None else t95 <= target_ms)


def with_step_overhead(tpot_ms: float, tps: float, extra_ms: float) -> tuple[float, float]:
    """The library's (TPOT, output tok/s) with `extra_ms` of host work added to every decode step: each step takes
    that much longer, so the same requests in flight complete tokens that much more slowly."""
    if extra_ms <= 0:
        return tpot_ms, tps
    return tpot_ms + extra_ms, tps * tpot_ms / (tpot_ms + extra_ms)


def with_host_floor(tpot_ms: float, tps: float, floor_ms: float) -> tuple[float, float]:
    """The library's (TPOT, output tok/s) where a served engine's host work, which overlaps the GPU's step, takes
    `floor_ms` a step (its API server streaming every sequence's token): a step takes the longer of the two, so
    past the batch where the host's share outgrows the GPU's, ITL grows with the sequences and tok/s stops growing
    (GPUStack's 1,000-prompt bursts on one H100: 3-8k tok/s whatever the model)."""
    if floor_ms <= tpot_ms:
        return tpot_ms, tps
    return floor_ms, tps * tpot_ms / floor_ms


def takes_ttft(key) -> bool:
    """Whether a plan takes the library's TTFT for this layout (with the engine's fixed cost): where the published
    runs it was held against cover it, tensor parallel; not attention data-parallel, where a request's whole prompt
    is prefilled on one rank and no held-out run measured its TTFT (it is several times its tensor-parallel one)."""
    return key.dp == 1


def _silicon(c, mode: str, hw, eff, wl, k: Knowledge, ttft_only: bool = False
             ) -> tuple[_Silicon | None, str | None]:
    """The measured-silicon predictor for this engine plan, or (None, why not) where our model predicts alone.
    ttft_only (the flip search, which reads only TTFT and capacities): None where the plan would not take its TTFT,
    before any of its tables is read."""
    if c.device != "gpu" or c.target.gpu_vendor != "nvidia" or c.engine not in k.aiconfigurator.backends:
        return None, None
    from advisor.planner import aic

    if not aic.installed():
        return None, "not_installed"
    key, why = aic.key_for(c.engine, c.target.gpu_id, c.spec.id, c.prec, c.tp, c.kv_bytes,
                           bool(c.spec.moe_experts), c.pp, k, dp=c.attn_dp, spec=c.spec)
    if key is None:
        return None, why
    fixed = k.aiconfigurator.ttft_fixed_ms.get(c.engine) if takes_ttft(key) else None
    if ttft_only and fixed is None:
        return None, None
    s = _Silicon(key, mode, hw, eff, wl, k.aiconfigurator.step_overhead_ms.get(c.engine, 0.0),
                 k.aiconfigurator.seq_overhead_ms.get(c.engine, 0.0), k.aiconfigurator.host_ms_per_seq, fixed)
    if s.figures(1) is None:
        return None, "nodata"
    return s, None


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
    # (here, not in serving_hw: a published run that served past its window, or a CPU row's decode, is still fitted)
    if hw is None or beyond_window(c.wl.typical_tokens, c.spec.max_context) or cpu_without_flops(c.device, c.target):
        return None
    k, wl, target = c.k, wl or c.wl, c.target
    cls = hw_class(target, c.device, k)
    here = target.source == "detected" and c.device == "cpu"
    cal = (calibration or {}).get(c.engine) if here else None
    if cal is not None and target.cpu_model and cal.cpu_model != target.cpu_model:
        cal = None  # a sweep on another CPU says nothing of this one
    eff, band, basis, group = efficiency(c.engine, cls, k, cal, batching=c.mode != "sequential" and
                                         wl.concurrency > 1)
    label = label_for(basis, group, k, batching=c.mode != "sequential" and wl.concurrency > 1)
    mode, users, target_ms = c.mode, wl.concurrency, wl.ttft_target_ms
    gpus = c.n if c.device == "gpu" else 0
    out = ServingPlan(mode=mode, hw_class=cls, basis=basis, group=group, label=label, band=round(band, 3),
                      own_band=round(band, 3), own_label=label,
                      bw_eff=eff.bw_eff, flops_eff=eff.flops_eff, step_ms=eff.step_ms, request_ms=eff.request_ms,
                      seq_ms=eff.seq_ms, prefill_x=eff.prefill_x,
                      input_tokens=wl.prompt_tokens,
                      output_tokens=wl.output_tokens, input_sd=wl.input_sd, typical_tokens=c.typical,
                      ttft_target_ms=target_ms, users=users, gpus_per_replica=gpus,
                      tensor_parallel=max(1, c.tp) if c.cap.multi_gpu == "tensor" and c.device == "gpu" else 1,
                      attention_dp=c.attn_dp if c.device == "gpu" else 1,
                      measured_change=_change(cal),
                      measured_sweep_at=cal.sweep_at if cal is not None and basis == "measured" else None,
                      measured_levels=cal.levels if cal is not None and basis == "measured" else None)
    # the silicon predictor's ITL and tok/s alone no score reads, so the flip search (detail=False) skips it there;
    # where it gives TTFT too (the engine's fixed cost known), the capacities the scores read are searches on it, so
    # the flip search plans with it as the ranking does
    si, why = _silicon(c, mode, hw, eff, wl, k, ttft_only=not detail) if basis != "measured" and (
        detail or c.engine in k.aiconfigurator.ttft_fixed_ms) else (None, None)
    ev = _evidence_for(c, calibration)
    out.predictor = "serving-model"
    out.predictor_note = why
    out.band_ttft, out.band_itl, rough_ttft = metric_bands(out.band, basis, group, label, k)
    ours = (out.band, out.band_itl, out.band_ttft)  # our tok/s, ITL and TTFT bands, for the cross-check beside the
    # silicon predictor
    # a capacity is where TTFT reaches Q2, so it carries our TTFT band (as do the facts the scores read), and is rough
    # where that band is (too few TTFT figures on this class: the pooled band)
    out.own_band = band = out.band_ttft
    if rough_ttft:
        out.own_label = "rough"
    if si is not None:  # its decode side; its TTFT too where the engine's fixed cost is known (then the capacities
        # are searches on that TTFT, with its band), else TTFT and the capacities stay ours, with our band
        a = k.aiconfigurator
        out.predictor = aic_name(si.key, k)
        out.band_itl, out.band = a.bands["itl"].band, a.bands["tps"].band
        out.label = "silicon"
        if si.ttft_fixed_ms is not None and ev is None:  # (None: not for this layout, takes_ttft)
            out.ttft_fixed_ms = si.ttft_fixed_ms
            out.band_ttft = out.own_band = band = a.bands["ttft"].band
            out.own_label = "fitted"
        else:  # the user's benchmark file recalibrates our model's TTFT (its ratios): TTFT stays ours
            si.ttft_fixed_ms = None

    def same_ttft(s):
        """A layout's silicon predictor with the plan's own TTFT choice (the library's, or ours where the user's
        benchmark file recalibrates ours)."""
        if s is not None and out.ttft_fixed_ms is None:
            s.ttft_fixed_ms = None
        return s

    if ev is not None:  # the user's own benchmark file of this engine on this GPU and count: its ratios, its band
        out.evidence = ev
        out.band = out.band_ttft = out.band_itl = out.own_band = band = ev.band

    def level_at(n: int, g: int, h=hw, s=si) -> ServingLevel:
        lv = s.level(n, g, target_ms) if s is not None else None
        lv = lv if lv is not None else _level(mode, h, eff, wl, n, g, target_ms)
        return _scaled(lv, ev, target_ms) if ev is not None else lv

    if "levels" not in skip:
        out.at_users = level_at(users, gpus)
        out.ttft_ms_p95_one = level_at(1, gpus).ttft_ms_p95
        if si is not None:  # our model beside it, as a cross-check
            out.host_bound = si.host_bound(users)
            ours_level = _level(mode, hw, eff, wl, users, gpus, target_ms)
            out.cross_check = ours_level
            out.disagree = _disagree(out.at_users, ours_level, out, ours, k)
        elif ev is None and hw.host_s_per_seq and mode != "sequential":  # ours: where serving._batching applied it
            out.host_bound = predict(mode, hw, eff, Load(wl.prompt_tokens, wl.output_tokens, wl.input_sd,
                                                         concurrency=users)).host_bound
    if detail and wl.request_rate:
        out.request_rate_rps = wl.request_rate
        out.at_rate, out.at_rate_saturated = _at_rate(mode, hw, eff, wl, si, gpus, target_ms)
        if ev is not None and out.at_rate is not None:
            out.at_rate = _scaled(out.at_rate, ev, target_ms)
    if detail:
        top = min(max(2 * users, 8), max(k.serving.curve_levels))
        levels = sorted({lv for lv in k.serving.curve_levels if lv <= top} | {users})
        out.levels = [level_at(lv, gpus) for lv in levels]
    if target_ms is None or "searches" in skip:
        return out

    def cap_of(h, need: int | None = None, e: Eff = eff, s=None, scale: float = 1.0):
        """One replica's capacity within Q2 (or whether it reaches need): a TTFT search, our model's with
        efficiencies e (the band's ends: the slow and fast efficiencies), or, where the measured-silicon predictor
        gives this layout's TTFT (s), its TTFT times scale (the band's ends: x (1 + band), / (1 + band))."""
        goal = target_ms / ev.ttft_scale if ev is not None else target_ms  # measured TTFT = ratio x ours
        if s is not None and s.ttft_fixed_ms is not None and ev is None:
            def ok(n: int, s=s) -> bool:
                f = s.figures(n)
                return f is not None and f[1] is not None and f[1] * scale <= goal
            return _search(ok, MAX_USERS, need)
        if need is not None:
            return capacity_reaches(mode, h, e, wl.prompt_tokens, wl.output_tokens, wl.input_sd, goal, need,
                                    MAX_USERS)
        return capacity(mode, h, e, wl.prompt_tokens, wl.output_tokens, wl.input_sd, goal, MAX_USERS)

    cap = cap_of(hw, s=si)
    out.capacity = cap
    # the fleet: the tensor-parallel degree (on this target's nodes) that meets Q1 with the fewest GPUs; for an engine
    # that splits layers, the fewest GPUs a replica loads on (its GPUs add memory, not speed: _Calc.serving_ranks)
    best = (replicas_for(users, cap), gpus, cap, hw, out.tensor_parallel, None)
    if c.device == "gpu" and c.cap.multi_gpu in RESIZABLE:
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
            # the same predictor's TTFT as the plan's own layout, where it has this layout's data
            asi = same_ttft(_silicon(alt, mode, ahw, eff, wl, k)[0]) if si is not None else None
            if fewer is not None:  # r replicas of n GPUs use fewer when r <= ceil(fewer / n) - 1: each must hold
                most = -(-fewer // n) - 1  # users / that many
                if not cap_of(ahw, need=-(-users // most), s=asi):
                    continue
            acap = cap_of(ahw, s=asi)
            r = replicas_for(users, acap)
            if r is not None and (best[0] is None or r * n < best[0] * max(best[1], 1)):
                best = (r, n, acap, ahw, alt.tp if alt.serving_tensor else 1, alt)
    replicas, n, bcap, bhw, tp, balt = best
    lean = None
    own = replicas_for(users, cap)
    if n != gpus and own is not None:  # the row stays the plan's own layout, which the bundle deploys; the leaner
        lean, (replicas, n, bcap, bhw, tp, balt) = best, (own, gpus, cap, hw, out.tensor_parallel, None)  # one aside
    if replicas is None:
        return out
    out.replicas, out.fleet_gpus = replicas, replicas * n if n else None
    if lean is not None:
        out.leaner = LeanerFleet(gpus_per_replica=lean[1], tensor_parallel=max(1, lean[4]), replicas=lean[0],
                                 fleet_gpus=lean[0] * lean[1], capacity=lean[2],
                                 attention_dp=lean[5].attn_dp if lean[5] is not None else 1)
    if n != gpus:
        out.gpus_per_replica, out.tensor_parallel = n, max(1, tp)
        out.attention_dp = balt.attn_dp if balt is not None else 1
    if (detail and wl.itl_target_ms and c.device == "gpu" and mode != "sequential" and c.engine in k.serving.pd_engines
            and c.attn_dp <= 1):  # (a data-parallel-attention plan's split is not weighed: its workers are not TP)
        out.disaggregation = _disaggregation(c, make_alt, hw, eff, band, wl, k, mode)
    if "band" in skip:
        return out
    slow, fast = with_band(eff, band)
    out.capacity_low = cap_of(hw, e=slow, s=si, scale=1 + band)
    out.capacity_high = cap_of(hw, e=fast, s=si, scale=1 / (1 + band))
    if mode != "sequential" and hw.max_running and out.capacity_low >= hw.max_running:
        # even the band's slow end is past what one step holds: the users beyond it queue, which sets the capacity
        pool = c.max_concurrency()  # the running cap is the KV pool's when the pool is the smaller of the two
        out.capacity_bound = "kv" if pool is not None and hw.max_running >= pool else "batch"
        out.kv_bound, out.running_cap = out.capacity_bound == "kv", hw.max_running
    if not detail:
        return out
    bsi = si if balt is None or si is None else same_ttft(_silicon(balt, mode, bhw, eff, wl, k)[0])
    slow_cap = cap_of(bhw, e=slow, s=bsi, scale=1 + band)
    out.replicas_high = replicas_for(users, slow_cap)
    each = max(1, -(-users // replicas))
    lv = level_at(each, n, bhw, bsi)
    out.fleet_output_tps = _r(lv.output_tps * users / each) if lv.output_tps else None
    if lean is not None and out.leaner is not None:  # its TTFT at Q1's users spread over its replicas
        lr, ln, _, lhw, _, lalt = lean
        lsi = None if si is None or lalt is None else same_ttft(_silicon(lalt, mode, lhw, eff, wl, k)[0])
        out.leaner.ttft_ms_p95 = level_at(max(1, -(-users // lr)), ln, lhw, lsi).ttft_ms_p95
    return out


def _disaggregation(c, make_alt, hw, eff, band: float, wl, k: Knowledge, mode: str) -> Disaggregation:
    """Prefill/decode split against the aggregated fleet for Q1's users and both targets (advisor.planner.disagg), each
    side with the replica size (the plan's own, or a smaller tensor-parallel degree that loads) that needs the fewest
    GPUs, at the centre and at the band's slow end; recommended only where it needs fewer GPUs at both."""
    from advisor.planner import disagg

    t, sv = c.target, k.serving
    users, i, o, sd = wl.concurrency, wl.prompt_tokens, wl.output_tokens, wl.input_sd
    per_node = t.gpus_per_node or t.gpu_count or max(1, c.n)
    sizes = [(max(1, c.n), hw, c)]
    for n in k.planner.tensor_parallel_sizes:
        if n < c.n and n <= per_node:
            alt = make_alt(n)
            ahw = alt.serving_hw() if alt.n == n and alt.device == "gpu" and alt.loads() else None
            if ahw is not None:
                sizes.append((n, ahw, alt))

    def link(gpus: int) -> tuple[str, float]:
        """Both pools in one node: NVLink (the catalogue's figure is both directions); else the node link."""
        if gpus <= per_node and t.interconnect_gb_s:
            return "nvlink", t.interconnect_gb_s / 2 * 1e9
        name = t.interconnect if t.interconnect in sv.node_link_gb_s else "ethernet"
        return name, sv.node_link_gb_s.get(name, 12.5) * 1e9

    def best(e: Eff):
        agg = sp = None  # (gpus, size, replicas, point) and (gpus, size, Split, link)
        for g, h, cc in sizes:
            a = disagg.aggregated_replicas(mode, h, e, users, i, o, sd, wl.ttft_target_ms, wl.itl_target_ms)
            if a is not None and (agg is None or a[0] * g < agg[0]):
                agg = (a[0] * g, g, a[0], a[1])
            kv = cc.kv_tok_at(i)
            for name in ("near", "far"):
                ln, bw = link(g) if name == "near" else link(10**9)
                x = disagg.split(h, e, users, i, o, sd, wl.ttft_target_ms / 1000, wl.itl_target_ms / 1000, kv, bw)
                if x is None:
                    continue
                total = (x.prefill_workers + x.decode_workers) * g
                if name == "near" and ln == "nvlink" and total > per_node:
                    continue  # the pools do not fit in one node: the KV goes over the node link (next)
                if sp is None or total < sp[0]:
                    sp = (total, g, x, ln)
                break
        return agg, sp

    agg, sp = best(eff)
    slow_agg, slow_sp = best(with_band(eff, band)[0])
    out = Disaggregation(itl_target_ms=wl.itl_target_ms, gpus_per_worker=sp[1] if sp else max(1, c.n),
                         link=sp[3] if sp else "nvlink")
    if agg is not None:
        out.aggregated_gpus, out.aggregated_gpus_per_replica, out.aggregated_replicas = agg[0], agg[1], agg[2]
        out.aggregated_ttft_ms_p95, out.aggregated_itl_ms_p95 = _r(agg[3].ttft_ms_p95), _r(agg[3].itl_ms_p95)
    if sp is not None:
        x = sp[2]
        out.prefill_workers, out.decode_workers, out.gpus = x.prefill_workers, x.decode_workers, sp[0]
        out.ttft_ms_p95, out.itl_ms, out.kv_transfer_ms = _r(x.ttft_ms_p95), _r(x.itl_ms), _r(x.kv_transfer_ms)
        out.decode_batch = x.decode_batch
    out.slow_gpus = slow_sp[0] if slow_sp else None
    out.slow_aggregated_gpus = slow_agg[0] if slow_agg else None
    if sp is None:
        out.verdict = "both_miss" if agg is None else "split_misses"
    elif agg is None:
        out.verdict = "aggregated_misses"
        out.recommended = out.slow_gpus is not None
    elif out.gpus >= out.aggregated_gpus:
        out.verdict = "no_gain"
    elif out.slow_gpus is None or (out.slow_aggregated_gpus is not None and out.slow_gpus >= out.slow_aggregated_gpus):
        out.verdict = "band"
    else:
        out.verdict, out.recommended = "pays", True
    return out


def _evidence_for(c, calibration: dict | None):
    """The user's benchmark file's recalibration for this engine (advisor.evidence.imported, passed in the calibration
    dict as "evidence:<engine>"), when the plan is for the GPU and count it measured; else None."""
    ev = (calibration or {}).get(f"evidence:{c.engine}")
    if ev is None or c.device != "gpu" or c.target.gpu_id != ev.gpu_id or c.n != ev.gpu_count:
        return None
    return ev


def _scaled(lv: ServingLevel, ev, target_ms: float | None) -> ServingLevel:
    """A level as the user's file measured this engine: TTFT and ITL times its ratios, tok/s times its own."""
    def m(x, f):
        return None if x is None else _r(x * f)
    ttft95 = m(lv.ttft_ms_p95, ev.ttft_scale)
    return lv.model_copy(update={
        "ttft_ms_p50": m(lv.ttft_ms_p50, ev.ttft_scale), "ttft_ms_p95": ttft95,
        "itl_ms_p50": m(lv.itl_ms_p50, ev.itl_scale), "itl_ms_p95": m(lv.itl_ms_p95, ev.itl_scale),
        "output_tps": m(lv.output_tps, ev.tps_scale), "output_tps_per_user": m(lv.output_tps_per_user, ev.tps_scale),
        "output_tps_per_gpu": m(lv.output_tps_per_gpu, ev.tps_scale),
        "meets": None if target_ms is None or ttft95 is None else ttft95 <= target_ms})


def _at_rate(mode, hw, eff, wl, si, gpus: int, target_ms: float | None) -> tuple[ServingLevel | None, bool]:
    """The figures at an open-loop rate on one replica. Ours predicts Poisson arrivals directly; the silicon
    predictor's steady state is at a number in flight, found by Little's law on its own latency (in flight = rate x
    time in system), iterated to a fixed point. Saturated: the rate is more than the replica completes."""
    rate = float(wl.request_rate)
    p = predict(mode, hw, eff, Load(wl.prompt_tokens, wl.output_tokens, wl.input_sd, request_rate=rate))
    if si is not None:
        n, o = 1, max(1, wl.output_tokens)
        full = si.figures(hw.max_running or MAX_USERS)  # the most it completes: every slot busy
        if full is not None and rate >= full[4] / o:
            return None, True
        for _ in range(30):
            f = si.figures(n)
            if f is None:
                break
            nxt = max(1, round(rate * (f[0] + f[2] * max(0, o - 1)) / 1000))
            if nxt > MAX_USERS:
                return None, True
            if nxt == n:
                break
            n = nxt
        lv = si.level(n, gpus, target_ms)
        if lv is not None:
            return lv, False
    if p.saturated or p.ttft_ms_p95 is None:
        return None, True
    c = max(1, round(p.concurrency)) if p.concurrency else max(1, p.running)
    per_gpu = p.output_tps / gpus if p.output_tps is not None and gpus else p.output_tps
    return ServingLevel(concurrency=c, ttft_ms_p50=_r(p.ttft_ms_p50), ttft_ms_p95=_r(p.ttft_ms_p95),
                        itl_ms_p50=_r(p.itl_ms_p50), itl_ms_p95=_r(p.itl_ms_p95), output_tps=_r(p.output_tps),
                        output_tps_per_user=_r(p.output_tps_per_user), output_tps_per_gpu=_r(per_gpu),
                        meets=None if target_ms is None else p.ttft_ms_p95 <= target_ms), False


def _disagree(silicon: ServingLevel, ours: ServingLevel, out: ServingPlan, own: tuple[float, float, float | None],
              k: Knowledge) -> list[str]:
    """The figures where our model lies outside both predictors' bands of the silicon one (output tok/s, ITL p50, and
    TTFT p50 where the plan's TTFT is the library's): [] when they agree within them. own: our model's (tok/s, ITL,
    TTFT) bands here."""
    f = k.aiconfigurator.disagree_factor
    pairs = [("output_tps", out.band, own[0], silicon.output_tps, ours.output_tps),
             ("itl", out.band_itl, own[1], silicon.itl_ms_p50, ours.itl_ms_p50)]
    if out.ttft_fixed_ms is not None:  # (else the plan's TTFT is ours: nothing to set beside it)
        pairs.insert(0, ("ttft", out.band_ttft, own[2], silicon.ttft_ms_p50, ours.ttft_ms_p50))
    bad = []
    for name, b, ob, a, o in pairs:
        if a and o and b is not None:
            # both bands of that figure: the silicon one's and ours; a ratio beyond their sum in log terms disagrees
            if abs(math.log(o / a)) > f * (math.log1p(b) + math.log1p(ob or 0)):
                bad.append(name)
    return bad


def fleet_floor(p, k: Knowledge) -> int:
    """The fewest GPUs (machines, for a fleet without GPUs) that serving_plan's fleet for this engine plan can have,
    without a capacity search: at least one replica, on the plan's GPUs, or on one GPU where the fleet may choose
    another tensor-parallel degree (or, for an engine that splits layers, fewer GPUs a replica)."""
    if p.device == "gpu" and k.planner.engines[p.engine].multi_gpu in RESIZABLE:
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

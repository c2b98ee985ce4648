"""Revisit the recommendation with measurements: SLA met or not, goodput, and whether the advice changes."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from advisor.decide.recommendation import Recommendation
from probes.result import ProbeResult, device_kind


class EngineVerdict(BaseModel):
    engine: str
    rank: int | None
    measured: bool
    ttft_p95_ms: float | None = None
    target_ms: float
    meets_sla: bool | None = None
    goodput: float | None = None
    output_tps_total: float | None = None
    text: str
    elsewhere: str | None = None  # why this measurement does not speak for the target hardware


class Verdict(BaseModel):
    engines: list[EngineVerdict]
    changes_advice: bool
    summary: str
    # confirmed: the top engine meets the target; changed: another measured engine should lead;
    # missed: the top engine misses and nothing measured meets it; unmeasured: the top engine was not measured;
    # elsewhere: it was measured, but on another kind of device (or GPU) than the target, so that says nothing
    status: Literal["confirmed", "changed", "missed", "unmeasured", "elsewhere"] = "unmeasured"


class TargetDevice(BaseModel):
    """What the advice is for: this machine as detected, or the answers' target hardware."""

    kind: Literal["cpu", "gpu"]
    gpu_name: str | None = None
    gpu_id: str | None = None  # the gpus.yaml id, to compare models however they are written
    label: str  # "2 × L40S", "CPU only"


def target_device(answers, hardware, knowledge, lang: str = "en") -> TargetDevice | None:
    """The device class (and GPU model) the advice is for; None when unknown."""
    from advisor.planner.target import find_gpu

    t = answers.hardware
    if t is not None:
        if t.gpu_vendor == "none":
            return TargetDevice(kind="cpu", label=_t(lang, "CPU only", "纯 CPU"))
        g = find_gpu(t.gpu_model, knowledge)
        name = t.gpu_model or (g.name if g else t.gpu_vendor)
        return TargetDevice(kind="gpu", gpu_name=name, gpu_id=g.id if g else None,
                            label=f"{max(1, t.gpu_count)} × {name}")
    if hardware is None:
        return None
    if hardware.gpus:
        name = hardware.gpus[0].name
        g = find_gpu(name, knowledge)
        return TargetDevice(kind="gpu", gpu_name=name, gpu_id=g.id if g else None,
                            label=_t(lang, f"this machine's {len(hardware.gpus)} × {name}",
                                     f"本机的 {len(hardware.gpus)} × {name}"))
    return TargetDevice(kind="cpu", label=_t(lang, "this machine's CPU", "本机 CPU"))


def measured_on(res: ProbeResult) -> tuple[str | None, str | None]:
    """("cpu" | "gpu" | "remote" | None, the GPU's name when the result names it) from what the probe recorded."""
    return device_kind(res.device)


def mismatch(res: ProbeResult, target: TargetDevice | None, knowledge=None, lang: str = "en") -> str | None:
    """Why this measurement does not speak for the target (None when it does, or when that cannot be told)."""
    if target is None:
        return None
    kind, gpu = measured_on(res)
    if kind in (None, "remote"):
        return None
    if kind != target.kind:
        where = _t(lang, "this machine's CPU", "本机 CPU") if kind == "cpu" else \
            _t(lang, f"a GPU ({gpu})" if gpu else "a GPU", f"GPU（{gpu}）" if gpu else "GPU")
        return _t(lang, f"measured on {where}; your target is {target.label}, so this measurement does not speak "
                        "for it", f"实测在{where}上进行；你的目标是 {target.label}，这次测量不能代表目标硬件")
    if kind == "gpu" and gpu and target.gpu_name and knowledge is not None:
        from advisor.planner.target import find_gpu

        g = find_gpu(gpu, knowledge)
        measured_id = g.id if g else gpu.lower()
        if target.gpu_id and measured_id != target.gpu_id:
            return _t(lang, f"measured on {gpu}; your target is {target.label}, so its speed does not speak for it",
                      f"实测在 {gpu} 上进行；你的目标是 {target.label}，其速度不能代表目标硬件")
    return None


def _t(lang: str, en: str, zh: str) -> str:
    return zh if lang == "zh" else en


def revisit(rec: Recommendation, results: list[ProbeResult], target_ms: float, lang: str = "en",
            labels: list[str] | None = None, target: TargetDevice | None = None, knowledge=None) -> Verdict:
    """The latest ok result per engine decides (results come oldest first; labels, e.g. "#12 llama.cpp", name
    the run that decided); a ranked engine that misses the TTFT p95 target loses the lead to the best-ranked
    engine that meets it. A result measured on another kind of device than `target` (a CPU probe for a GPU
    target, or another GPU model) is shown with that caveat and never changes the advice."""
    latest: dict[str, ProbeResult] = {}
    label: dict[str, str] = {}
    count: dict[str, int] = {}
    for i, r in enumerate(results):
        if r.status == "ok":
            latest[r.engine] = r
            label[r.engine] = labels[i] if labels and i < len(labels) else r.engine
            count[r.engine] = count.get(r.engine, 0) + 1
    rank = {r.engine: i for i, r in enumerate(rec.ranking, 1)}
    out = []
    for engine in [r.engine for r in rec.ranking] + sorted(set(latest) - set(rank)):
        res = latest.get(engine)
        if res is None:
            out.append(EngineVerdict(engine=engine, rank=rank.get(engine), measured=False, target_ms=target_ms,
                                     text=_t(lang, "not measured", "未实测")))
            continue
        p95 = res.ttft_ms.p95
        meets = p95 is not None and p95 <= target_ms
        text = (_t(lang, f"TTFT p95 {p95:.0f} ms ≤ target {target_ms:.0f} ms — meets the SLA",
                   f"首 token p95 {p95:.0f} 毫秒 ≤ 目标 {target_ms:.0f} 毫秒——满足 SLA") if meets else
                _t(lang, f"TTFT p95 {p95:.0f} ms > target {target_ms:.0f} ms — misses the SLA",
                   f"首 token p95 {p95:.0f} 毫秒 > 目标 {target_ms:.0f} 毫秒——未满足 SLA"))
        if res.goodput is not None:
            text += _t(lang, f"; goodput {res.goodput:.0%}", f"；达标率 {res.goodput:.0%}")
        if res.system_load.busy:
            text += _t(lang, " (measured on a busy machine)", "（测量时机器繁忙）")
        if count[engine] > 1:
            text += _t(lang, f" (run {label[engine]}, the latest of {count[engine]} runs of {engine})",
                       f"（取 {engine} 的 {count[engine]} 次运行中最新的一次：{label[engine]}）")
        elsewhere = mismatch(res, target, knowledge, lang)
        if elsewhere:
            text += " — " + elsewhere
        out.append(EngineVerdict(engine=engine, rank=rank.get(engine), measured=True, ttft_p95_ms=p95,
                                 target_ms=target_ms, meets_sla=meets, goodput=res.goodput,
                                 output_tps_total=res.output_tps_total, text=text, elsewhere=elsewhere))
    top = rec.ranking[0].engine if rec.ranking else None
    by = {v.engine: v for v in out}
    changes = False
    status = "unmeasured"
    if top and by.get(top) and by[top].measured and by[top].elsewhere:
        status = "elsewhere"
        summary = _t(lang, f"{top}: {by[top].elsewhere}. The advice stands on the plan; measure on the target "
                           "hardware to confirm it.",
                     f"{top}：{by[top].elsewhere}。建议仍以容量规划为准；请在目标硬件上实测以确认。")
    elif top and by.get(top) and by[top].measured:
        if by[top].meets_sla:
            status = "confirmed"
            summary = _t(lang, f"The measurement confirms the advice: {top} meets the TTFT target.",
                         f"实测支持该建议：{top} 满足首 token 目标。")
        else:
            better = next((v.engine for v in out if v.measured and v.meets_sla and v.rank and not v.elsewhere), None)
            if better:
                changes, status = True, "changed"
                summary = _t(lang, f"The measurement changes the advice: {top} misses the TTFT target and "
                                   f"{better} meets it — prefer {better} on this hardware.",
                             f"实测改变了建议：{top} 未达到首 token 目标，而 {better} 达到——在该硬件上优先选择 {better}。")
            else:
                status = "missed"
                summary = _t(lang, f"{top} misses the TTFT target and no measured engine meets it: revisit the "
                                   "hardware, the model size or the target.",
                             f"{top} 未达到首 token 目标，且没有已测引擎达到：请重新考虑硬件、模型大小或目标。")
    else:
        summary = _t(lang, "The top-ranked engine has not been measured yet.", "排名第一的引擎尚未实测。")
    return Verdict(engines=out, changes_advice=changes, summary=summary, status=status)

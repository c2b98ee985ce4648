"""Revisit the recommendation with measurements: SLA met or not, goodput, and whether the advice changes."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from advisor.recommendation import Recommendation
from probes.result import ProbeResult


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


class Verdict(BaseModel):
    engines: list[EngineVerdict]
    changes_advice: bool
    summary: str
    # confirmed: the top engine meets the target; changed: another measured engine should lead;
    # missed: the top engine misses and nothing measured meets it; unmeasured: the top engine was not measured
    status: Literal["confirmed", "changed", "missed", "unmeasured"] = "unmeasured"


def _t(lang: str, en: str, zh: str) -> str:
    return zh if lang == "zh" else en


def revisit(rec: Recommendation, results: list[ProbeResult], target_ms: float, lang: str = "en",
            labels: list[str] | None = None) -> Verdict:
    """The latest ok result per engine decides (results come oldest first; labels, e.g. "#12 llama.cpp", name
    the run that decided); a ranked engine that misses the TTFT p95 target loses the lead to the best-ranked
    engine that meets it."""
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
        out.append(EngineVerdict(engine=engine, rank=rank.get(engine), measured=True, ttft_p95_ms=p95,
                                 target_ms=target_ms, meets_sla=meets, goodput=res.goodput,
                                 output_tps_total=res.output_tps_total, text=text))
    top = rec.ranking[0].engine if rec.ranking else None
    by = {v.engine: v for v in out}
    changes = False
    status = "unmeasured"
    if top and by.get(top) and by[top].measured:
        if by[top].meets_sla:
            status = "confirmed"
            summary = _t(lang, f"The measurement confirms the advice: {top} meets the TTFT target.",
                         f"实测支持该建议：{top} 满足首 token 目标。")
        else:
            better = next((v.engine for v in out if v.measured and v.meets_sla and v.rank), None)
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

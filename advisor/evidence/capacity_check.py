"""What a concurrency sweep says against the answers: the measured SLA capacity per engine next to Q1, the cost
of a million output tokens at that capacity, and whether that changes the advice. Pure."""
from __future__ import annotations

from pydantic import BaseModel

from advisor.knowledge.load import Knowledge
from advisor.planner.cost import usd_per_million_tokens


class CapacityRow(BaseModel):
    engine: str
    name: str
    capacity: int | None
    ttft_p95_ms: float | None = None  # at the capacity level
    output_tps: float | None = None  # at the capacity level
    usd_per_hour: float | None = None
    usd_per_m_tokens: float | None = None  # measured: at the capacity level's output tok/s
    plan_max_concurrency: int | None = None
    stop_reason: str | None = None
    device: str | None = None


class CapacityVerdict(BaseModel):
    rows: list[CapacityRow]
    lines: list[str]
    summary: str
    changes_advice: bool = False
    better: str | None = None


def machine_usd_per_hour(device: str | None, cores: int | None, knowledge: Knowledge,
                         gpu_price: float | None = None, core_price: float | None = None) -> float | None:
    """What an hour of the machine a sweep ran on costs: its GPU (by the name the result gives) or its cores."""
    from advisor.planner.cost import core_hour, gpu_hour
    from advisor.planner.target import find_gpu
    from probes.result import device_kind

    kind, name = device_kind(device)
    if kind == "gpu":
        g = find_gpu(name, knowledge)
        return gpu_hour(g.id if g else None, knowledge, gpu_price)[0]
    if kind == "cpu" and cores:
        rate = core_hour(knowledge, core_price)[0]
        return rate * cores if rate is not None else None
    return None


def check_capacity(sweeps, asked: int, top: str | None, knowledge: Knowledge, lang: str = "en",
                   cores: int | None = None, gpu_price: float | None = None,
                   core_price: float | None = None) -> CapacityVerdict:
    s = lambda key, **kw: knowledge.s(key, lang, **kw)  # noqa: E731
    rows, lines = [], []
    for sw in sweeps:
        name = knowledge.engines[sw.engine].name if sw.engine in knowledge.engines else sw.engine
        at = next((lv for lv in sw.levels if lv.concurrency == sw.capacity), None)
        usd = machine_usd_per_hour(sw.device, cores, knowledge, gpu_price, core_price)
        row = CapacityRow(engine=sw.engine, name=name, capacity=sw.capacity, device=sw.device,
                          ttft_p95_ms=at.ttft_ms.p95 if at else None, output_tps=at.output_tps_total if at else None,
                          usd_per_hour=usd, plan_max_concurrency=sw.plan_max_concurrency, stop_reason=sw.stop_reason)
        cost = usd_per_million_tokens(usd, row.output_tps)
        row.usd_per_m_tokens = None if cost is None else round(cost, 4)
        rows.append(row)
        target = f"{sw.ttft_target_ms:g}" if sw.ttft_target_ms else "—"
        if sw.status != "ok":
            lines.append(s("cap_line_failed", engine=name, why=sw.reason or sw.status))
        elif sw.capacity is None:
            lines.append(s("cap_line_none", engine=name, ms=target, asked=asked))
        else:
            lines.append(s("cap_line", engine=name, ms=target, n=sw.capacity, asked=asked,
                           share=f"{sw.goodput_share:.0%}"))
    measured = {r.engine: r for r in rows if r.capacity is not None}
    top_row = measured.get(top) if top else None
    best = max(measured.values(), key=lambda r: r.capacity, default=None)
    changes, better = False, None
    if top and top_row is not None and top_row.capacity >= asked:
        summary = s("cap_sum_top_meets", engine=top_row.name, n=top_row.capacity, asked=asked)
    elif best is not None and best.capacity >= asked and best.engine != top:
        changes, better = True, best.engine
        summary = s("cap_sum_changes", best=best.name, n=best.capacity, asked=asked)
    elif best is not None:
        summary = s("cap_sum_none_meets", best=best.name, n=best.capacity, asked=asked)
    else:
        summary = s("cap_sum_unmeasured")
    return CapacityVerdict(rows=rows, lines=lines, summary=summary, changes_advice=changes, better=better)

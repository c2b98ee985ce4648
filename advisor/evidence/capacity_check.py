"""What a concurrency sweep says against the answers: the measured SLA capacity per engine next to Q1, the cost
of a million output tokens at that capacity, and whether that changes the advice. Pure."""
from __future__ import annotations

import re

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
    stop_reason: str | None = None  # in the page's language (SweepResult.stop), else the sweep's English words
    device: str | None = None
    inconclusive_at: int | None = None
    held: str | None = None  # why this sweep cannot change the advice (busy, another device, another question)


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


def stop_text(sw, knowledge: Knowledge, lang: str) -> str:
    """Why the sweep stopped, in the page's language (from its structured `stop`), else its English words."""
    st = sw.stop or {}
    key = f"cap_stop_{st.get('key')}"
    if key in knowledge.strings:
        try:
            return knowledge.s(key, lang, **{k: v for k, v in st.items() if k != "key"})
        except (KeyError, IndexError, ValueError):
            pass
    return sw.stop_reason or ""


_FAILED = re.compile(r"requests failed(?: or ended early)?: (.+)$", re.S)


def failed_line(sw, name: str, knowledge: Knowledge, lang: str) -> str:
    """A sweep whose first level was not measured: when its requests ran and too many failed, it ran, and says how
    many and why ("ran; 15 of 20 requests failed: “HTTP 500 …”", walk-3 L13); it "did not run" only when no request
    did (the engine would not start, the endpoint was refused)."""
    lv = next((x for x in sw.levels if x.status != "ok"), None)
    bad = (lv.errors + lv.requests_incomplete) if lv is not None else 0
    if lv is None or not lv.requests_total or not bad:
        return knowledge.s("cap_line_failed", lang, engine=name, why=sw.reason or sw.status)
    m = _FAILED.search(lv.reason or sw.reason or "")
    cause = " ".join((m.group(1) if m else (lv.reason or sw.reason or lv.status)).split())[:300]
    return knowledge.s("cap_line_ran_failed", lang, engine=name, c=lv.concurrency, bad=bad, total=lv.requests_total,
                       cause=cause.replace("“", '"').replace("”", '"'))


def check_capacity(sweeps, asked: int, top: str | None, knowledge: Knowledge, lang: str = "en",
                   cores: int | None = None, gpu_price: float | None = None,
                   core_price: float | None = None, target=None, target_ms: float | None = None,
                   answers_id: str | None = None) -> CapacityVerdict:
    """Each sweep is judged against the target it was run with. A sweep measured on a busy machine, on another
    device than `target` (a TargetDevice) or for other answers than `answers_id` is shown, and cannot change
    the advice."""
    from advisor.evidence.verdict import busy_here, mismatch

    s = lambda key, **kw: knowledge.s(key, lang, **kw)  # noqa: E731
    rows, lines = [], []
    for sw in sweeps:
        name = knowledge.engines[sw.engine].name if sw.engine in knowledge.engines else sw.engine
        at = next((lv for lv in sw.levels if lv.concurrency == sw.capacity), None)
        usd = machine_usd_per_hour(sw.device, cores, knowledge, gpu_price, core_price)
        held = None
        if busy_here(sw):  # never for a server on another machine: this machine's CPU does not slow it
            held = s("cap_held_busy", pct=f"{max((lv.other_cpu_percent or 0) for lv in sw.levels):.0f}")
        elsewhere = mismatch(sw, target, knowledge, lang) if target is not None else None
        if elsewhere:
            held = elsewhere
        if answers_id and sw.answers_id and sw.answers_id != answers_id:
            held = s("cap_held_other_answers")
        row = CapacityRow(engine=sw.engine, name=name, capacity=sw.capacity, device=sw.device,
                          ttft_p95_ms=at.ttft_ms.p95 if at else None, output_tps=at.output_tps_total if at else None,
                          usd_per_hour=usd, plan_max_concurrency=sw.plan_max_concurrency,
                          stop_reason=stop_text(sw, knowledge, lang), inconclusive_at=sw.inconclusive_at, held=held)
        cost = usd_per_million_tokens(usd, row.output_tps)
        row.usd_per_m_tokens = None if cost is None else round(cost, 4)
        rows.append(row)
        target_txt = f"{sw.ttft_target_ms:g}" if sw.ttft_target_ms else "—"
        their_asked = sw.asked_concurrency or asked
        if sw.status in ("interrupted", "running"):  # its finished levels stand; it has no capacity yet
            line = s("cap_line_interrupted", engine=name, why=stop_text(sw, knowledge, lang) or sw.status)
        elif sw.status == "cancelled":  # what finished before the cancel stands (walk-3 M6), said in the page's words
            kept = [lv for lv in sw.levels if lv.status == "ok"]
            cut = next((lv for lv in sw.levels if lv.status != "ok"), None)
            where = s("cap_cancel_at", n=len(kept) + 1, c=cut.concurrency if cut else "—",
                      done=cut.requests_total if cut else 0)
            line = (s("cap_line_cancelled_kept", engine=name, where=where, levels=", ".join(
                str(lv.concurrency) for lv in kept), n=len(kept)) if kept else
                    s("cap_line_cancelled_none", engine=name, where=where))
            if kept and sw.capacity:
                line += " " + s("cap_line_cancelled_capacity", c=sw.capacity, ms=target_txt)
        elif sw.status != "ok":
            line = failed_line(sw, name, knowledge, lang)
        elif sw.capacity is None and sw.inconclusive_at:
            line = s("cap_line_inconclusive", engine=name, ms=target_txt, c=sw.inconclusive_at, asked=their_asked)
        elif sw.capacity is None:
            line = s("cap_line_none", engine=name, ms=target_txt, asked=their_asked)
        else:
            line = s("cap_line", engine=name, ms=target_txt, n=sw.capacity, asked=their_asked,
                     share=f"{sw.goodput_share:.0%}")
            if sw.inconclusive_at:
                line += " " + s("cap_line_then_inconclusive", c=sw.inconclusive_at)
        if target_ms is not None and sw.ttft_target_ms and abs(sw.ttft_target_ms - target_ms) > 0.5:
            line += " " + s("cap_other_target", run=f"{sw.ttft_target_ms:g}", now=f"{target_ms:g}")
        if held:
            line += " " + s("cap_held", why=held)
        lines.append(line)
    measured = {r.engine: r for r in rows if r.capacity is not None}
    decisive = {e: r for e, r in measured.items() if r.held is None}
    top_row = measured.get(top) if top else None
    best = max(decisive.values(), key=lambda r: r.capacity, default=None)
    best_any = max(measured.values(), key=lambda r: r.capacity, default=None)
    changes, better = False, None
    if top and top_row is not None and top_row.capacity >= asked:
        summary = s("cap_sum_top_meets", engine=top_row.name, n=top_row.capacity, asked=asked)
    elif best is not None and best.capacity >= asked and best.engine != top:
        changes, better = True, best.engine
        summary = s("cap_sum_changes", best=best.name, n=best.capacity, asked=asked)
    elif rows and all(r.held for r in rows):
        summary = s("cap_sum_held")
    elif best is not None:
        summary = s("cap_sum_none_meets", best=best.name, n=best.capacity, asked=asked)
    elif best_any is not None:
        summary = s("cap_sum_held")
    elif any(r.inconclusive_at for r in rows):
        summary = s("cap_sum_inconclusive")
    else:
        summary = s("cap_sum_unmeasured")
    return CapacityVerdict(rows=rows, lines=lines, summary=summary, changes_advice=changes, better=better)

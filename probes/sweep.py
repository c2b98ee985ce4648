"""A concurrency sweep: the same workload at rising concurrency, until the TTFT target or goodput breaks.

Each level is one probe (`run_probe`: its own child process, one warm-up, at least max(8, 2 × concurrency)
measured requests), so every level is measured under the same conditions as a single probe. The sweep's answer
is the SLA capacity: the highest concurrency whose goodput (share of requests finished within the TTFT target)
is at least `goodput_share`.
"""
from __future__ import annotations

import threading
import time
from typing import Callable

from pydantic import BaseModel, Field

from probes.result import Percentiles, ProbeResult, ProbeSettings

DEFAULT_LEVELS = (1, 2, 4, 8, 16, 32, 64)


class SweepLevel(BaseModel):
    concurrency: int
    status: str
    requests_total: int = 0
    requests_ok: int = 0
    errors: int = 0
    ttft_ms: Percentiles = Field(default_factory=Percentiles)
    itl_ms: Percentiles = Field(default_factory=Percentiles)
    output_tps_total: float | None = None
    requests_per_s: float | None = None
    goodput: float | None = None
    reason: str | None = None

    @classmethod
    def of(cls, c: int, r: ProbeResult) -> "SweepLevel":
        return cls(concurrency=c, status=r.status, requests_total=r.requests_total, requests_ok=r.requests_ok,
                   errors=r.errors, ttft_ms=r.ttft_ms, itl_ms=r.itl_ms, output_tps_total=r.output_tps_total,
                   requests_per_s=r.requests_per_s, goodput=r.goodput, reason=r.reason)


class SweepResult(BaseModel):
    engine: str
    status: str  # ok | error | unavailable | cancelled
    reason: str | None = None
    device: str | None = None
    model: str | None = None
    ttft_target_ms: float | None = None
    goodput_share: float = 0.9
    levels: list[SweepLevel] = Field(default_factory=list)
    capacity: int | None = None  # the highest concurrency that met the SLA (goodput ≥ share); None: not even 1
    stop_reason: str | None = None
    plan_max_concurrency: int | None = None  # the planner's memory-bound figure, for comparison
    plan_decode_total_bound: float | None = None
    serving: str | None = None
    started_at: str | None = None
    duration_s: float | None = None
    results: list[ProbeResult] = Field(default_factory=list)  # every level's full result (raw timestamps)
    run_ids: list[int | None] = Field(default_factory=list)  # where the UI saved each level's result (history)


def levels_for(spec: str | None, plan_max: int | None = None) -> list[int]:
    """"1,2,4,8" or None (the default doubling); never above the plan's memory-bound maximum when known."""
    if spec:
        out = sorted({int(x) for x in spec.split(",") if x.strip()})
    else:
        out = list(DEFAULT_LEVELS)
    if plan_max:
        out = [c for c in out if c <= plan_max] or [1]
    return out


def run_sweep(base: ProbeSettings, levels: list[int], until_sla: bool = True, goodput_share: float = 0.9,
              plan_max: int | None = None, plan_total_bound: float | None = None,
              on_event: Callable[[dict], None] | None = None, cancel: threading.Event | None = None,
              runner: Callable[..., ProbeResult] | None = None) -> SweepResult:
    """Run the levels in order; stop early (when until_sla) once p95 TTFT exceeds the target, goodput falls below
    the share, a level fails, or the plan's max concurrency is reached."""
    if runner is None:
        from probes.runner import run_probe as runner
    on_event = on_event or (lambda e: None)
    cancel = cancel or threading.Event()
    t0 = time.monotonic()
    out = SweepResult(engine=base.engine, status="ok", ttft_target_ms=base.ttft_target_ms, goodput_share=goodput_share,
                      plan_max_concurrency=plan_max, plan_decode_total_bound=plan_total_bound,
                      started_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    target = base.ttft_target_ms
    for i, c in enumerate(levels):
        if cancel.is_set():
            out.status, out.stop_reason = "cancelled", "cancelled by the user"
            break
        on_event({"type": "sweep", "level": i, "levels": len(levels), "concurrency": c})
        s = base.model_copy(update={"concurrency": c, "requests": max(base.requests, 8, 2 * c),
                                    "warmup": max(1, base.warmup)})
        res = runner(s, on_event=on_event, cancel=cancel)
        out.results.append(res)
        out.levels.append(SweepLevel.of(c, res))
        out.device = out.device or res.device
        out.model = out.model or res.model
        out.serving = out.serving or res.serving
        if res.status != "ok":
            if i == 0:
                out.status, out.reason = res.status, res.reason
            out.stop_reason = f"concurrency {c}: {res.status}: {res.reason}"
            break
        good = res.goodput if res.goodput is not None else 0.0
        p95 = res.ttft_ms.p95
        if good >= goodput_share:
            out.capacity = c
        if not until_sla:
            continue
        if target is not None and p95 is not None and p95 > target:
            out.stop_reason = f"at concurrency {c}, TTFT p95 {p95:.0f} ms > the {target:g} ms target"
            break
        if good < goodput_share:
            out.stop_reason = f"at concurrency {c}, goodput {good:.0%} < {goodput_share:.0%}"
            break
        if plan_max is not None and c >= plan_max:
            out.stop_reason = f"concurrency {c} is the plan's memory-bound maximum"
            break
    else:
        out.stop_reason = out.stop_reason or "every level ran"
    out.duration_s = round(time.monotonic() - t0, 2)
    return out

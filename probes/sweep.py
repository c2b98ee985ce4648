"""A concurrency sweep: the same workload at rising concurrency, until the TTFT target or goodput breaks.

Each level is one probe (`run_probe`: its own child process, one warm-up, at least max(MIN_LEVEL_REQUESTS,
2 × concurrency) measured requests), so every level is measured under the same conditions as a single probe.
With fewer than 20 requests a "p95" is the slowest request; each level also carries the p95's bootstrap interval.

The sweep's answer is the SLA capacity: the highest level that meets the target (`level_outcome`: goodput ≥
`goodput_share` and the p95 within the target with its interval) with no clear miss below it. A level whose
interval straddles the target is inconclusive: it is neither capacity nor a reason to stop. A level measured
on a busy machine is kept and marked, and the sweep as a whole is then `busy` (it cannot change the advice).
"""
from __future__ import annotations

import threading
import time
from typing import Callable

from probes.result import ProbeResult, ProbeSettings
from probes.sweep_result import SweepLevel, SweepResult, level_outcome, sign

DEFAULT_LEVELS = (1, 2, 4, 8, 16, 32, 64)
MIN_LEVEL_REQUESTS = 20


def levels_for(spec: str | list[int] | None, plan_max: int | None = None) -> list[int]:
    """"1,2,4,8" or [1, 2, 4, 8] or None (the default doubling); never above the plan's memory-bound maximum."""
    if isinstance(spec, str):
        out = sorted({int(x) for x in spec.split(",") if x.strip()})
    else:
        out = sorted(set(spec)) if spec else list(DEFAULT_LEVELS)
    if plan_max:
        out = [c for c in out if c <= plan_max] or [1]
    return out


def run_sweep(base: ProbeSettings, levels: list[int], until_sla: bool = True, goodput_share: float = 0.9,
              plan_max: int | None = None, plan_total_bound: float | None = None,
              on_event: Callable[[dict], None] | None = None, cancel: threading.Event | None = None,
              runner: Callable[..., ProbeResult] | None = None, seed_each_level: bool = False) -> SweepResult:
    """Run the levels in order; stop early (when until_sla) once p95 TTFT exceeds the target, goodput falls below
    the share, a level fails, or the plan's max concurrency is reached. seed_each_level: every level draws its own
    prompts (a server kept up across the levels would otherwise serve a level's prompts, the same as the last
    level's, from its prompt or prefix cache)."""
    if runner is None:
        from probes.runner import run_probe as runner
    on_event = on_event or (lambda e: None)
    cancel = cancel or threading.Event()
    t0 = time.monotonic()
    out = SweepResult(engine=base.engine, status="ok", ttft_target_ms=base.ttft_target_ms, goodput_share=goodput_share,
                      plan_max_concurrency=plan_max, plan_decode_total_bound=plan_total_bound,
                      started_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"), answers_id=base.answers_id,
                      asked_concurrency=base.asked_concurrency)
    target = base.ttft_target_ms
    missed = False  # capacity counts up from the first level: a meet above a clear miss is luck, not capacity
    # (an inconclusive level below does not block it: a clear meet at a higher load speaks for the lower one)
    for i, c in enumerate(levels):
        if cancel.is_set():
            out.status, out.stop_reason = "cancelled", "cancelled by the user"
            out.stop = {"key": "cancelled", "c": c}
            break
        on_event({"type": "sweep", "level": i, "levels": len(levels), "concurrency": c})
        s = base.model_copy(update={"concurrency": c, "requests": max(base.requests, MIN_LEVEL_REQUESTS, 2 * c),
                                    "warmup": max(1, base.warmup),
                                    "seed": base.seed + 7919 * i if seed_each_level else base.seed})
        res = runner(s, on_event=on_event, cancel=cancel)
        out.results.append(res)
        level = SweepLevel.of(c, res)
        level.outcome = level_outcome(level, target, goodput_share)
        out.levels.append(level)
        out.busy = out.busy or level.busy
        out.device = out.device or res.device
        out.model = out.model or res.model
        out.serving = out.serving or res.serving
        if out.first_settings is None and res.ok and res.settings is not None:
            ok = max(1, res.requests_ok)
            out.first_settings = res.settings.model_dump(mode="json", exclude={"extra"})
            out.first_backend_settings = {k: v for k, v in res.backend_settings.items()
                                          if isinstance(v, (str, int, float, bool)) or v is None}
            out.first_tokens = [round((res.prompt_tokens_total or 0) / ok), round((res.output_tokens_total or 0) / ok)]
            out.first_server_kind = res.server_kind
        if res.status != "ok":
            if i == 0 or res.status == "cancelled":
                out.status, out.reason = res.status, res.reason
            out.stop_reason = f"concurrency {c}: {res.status}: {res.reason}"
            out.stop = {"key": "failed", "c": c, "status": res.status, "why": (res.reason or "")[:300]}
            break
        if level.outcome == "meets" and not missed:
            out.capacity = c
        elif level.outcome == "inconclusive":
            out.inconclusive_at = out.inconclusive_at or c
        else:
            missed = True
        if not until_sla:
            continue
        if level.outcome == "misses":
            p95 = res.ttft_ms.p95
            good = res.goodput if res.goodput is not None else 0.0
            slow = target is not None and p95 is not None and p95 > target
            out.stop_reason = (f"at concurrency {c}, TTFT p95 {p95:.0f} ms > the {target:g} ms target" if slow else
                               f"at concurrency {c}, goodput {good:.0%} < {goodput_share:.0%}")
            out.stop = ({"key": "ttft", "c": c, "p95": round(p95), "target": target} if slow else
                        {"key": "goodput", "c": c, "good": round(good * 100), "share": round(goodput_share * 100)})
            break
        if plan_max is not None and c >= plan_max:
            out.stop_reason = f"concurrency {c} is the plan's memory-bound maximum"
            out.stop = {"key": "plan_max", "c": c}
            break
    else:
        out.stop_reason = out.stop_reason or "every level ran"
        out.stop = out.stop or {"key": "all"}
    out.duration_s = round(time.monotonic() - t0, 2)
    return sign(out) if base.engine != "endpoint" else out  # made here: it may recalibrate this machine

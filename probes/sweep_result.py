"""The typed outcome of a concurrency sweep (probes.sweep runs it): the probes' public sweep type, free of any
engine or runner import, so that advisor may read it."""
from __future__ import annotations

from pydantic import BaseModel, Field

from probes.result import Percentiles, ProbeResult


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

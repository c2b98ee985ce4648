"""Typed result of the rules engine: what the CLI prints, the UI shows and the report embeds."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from advisor.planner.types import EnginePlan, Plan


class Reason(BaseModel):
    rule: str
    text: str
    delta: float | None = None
    source: str  # as knowledge/*.yaml writes it; the engine's own doc where the rule names one (Rule.sources)
    version: str | None = None  # the engine version that source speaks for, as the knowledge says
    read: str | None = None  # the day it was read (YYYY-MM-DD)


class RankedEngine(BaseModel):
    engine: str
    name: str
    score: float
    reasons: list[Reason]
    plan: EnginePlan | None = None


class ExcludedEngine(BaseModel):
    engine: str
    name: str
    reasons: list[Reason]
    plan: EnginePlan | None = None


class Flip(BaseModel):
    """A smallest change of answers that reverses the top two."""

    changes: dict[str, Any]
    text: str
    scores: dict[str, float | None] = Field(default_factory=dict)


class Recommendation(BaseModel):
    ranking: list[RankedEngine]
    excluded: list[ExcludedEngine]
    flips: list[Flip] = Field(default_factory=list)
    flip_note: str | None = None
    lang: str = "en"
    facts: dict[str, Any] = Field(default_factory=dict)
    plan: Plan | None = None  # model, target and every engine's plan (also attached per engine above)

    @property
    def excluded_engines(self) -> frozenset[str]:
        """The ids of the engines excluded (cannot run as asked): what the serving table marks."""
        return frozenset(x.engine for x in self.excluded)

    @property
    def top(self) -> RankedEngine | None:
        return self.ranking[0] if self.ranking else None

    def none_meets(self) -> tuple[str, float | None, float] | None:
        """When every ranked engine with a serving prediction is predicted to miss the TTFT target (no fleet of
        its replicas meets it), and at least one has a prediction: (the name of the engine whose single user waits
        least, that wait in ms p95, the target in ms), to lead the page with. None otherwise."""
        predicted = [(r.name, r.plan.serving) for r in self.ranking
                     if r.plan is not None and r.plan.serving is not None and r.plan.serving.ttft_target_ms]
        if not predicted or any(sv.replicas is not None for _, sv in predicted):
            return None
        waits = [sv.ttft_ms_p95_one for _, sv in predicted if sv.ttft_ms_p95_one is not None]
        least = min(waits) if waits else None
        # the best-ranked of those within 5 % of the least wait: a prediction does not tell 375.8 s from 375.9 s
        name, sv = next(((n, sv) for n, sv in predicted if least is not None and sv.ttft_ms_p95_one is not None
                         and sv.ttft_ms_p95_one <= least * 1.05), predicted[0])
        return name, sv.ttft_ms_p95_one, float(sv.ttft_target_ms)

    def nothing_fits(self) -> list[tuple[str, str | None, float | None]] | None:
        """When no ranked engine fits as asked and at least one is known not to: (engine name, its first fix or None,
        the RAM an offload plan needs when the target's RAM is not given) for each, to lead the page with. None when
        something fits, or when no fit is known either way."""
        plans = [(r.name, r.plan) for r in self.ranking if r.plan is not None]
        if not plans or any(p.fits for _, p in plans) or not any(p.fits is False or p.loads is False
                                                                 for _, p in plans):
            return None
        return [(name, p.options[0].text if p.options else None,
                 p.offload_ram_gib if p.device == "gpu+cpu" and p.fits is None else None) for name, p in plans]

"""Typed result of the rules engine: what the CLI prints, the UI shows and the report embeds."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from advisor.planner.types import EnginePlan, Plan


class Reason(BaseModel):
    rule: str
    text: str
    delta: float | None = None
    source: str


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
    def top(self) -> RankedEngine | None:
        return self.ranking[0] if self.ranking else None

"""Deployment bundles: for each engine, the server command with the plan's settings (each value traced to the plan
figure it carries), a launch script, docker run, compose.yaml, a Kubernetes Deployment + Service and, where the engine
has a KServe runtime, an InferenceService. Pure: a plan, the answers and knowledge/deploy.yaml in, text out; refused
with the reason where the plan's combination cannot run (a TP degree that does not divide the heads, a KV dtype the
GPU cannot run, an engine that does not load)."""
from __future__ import annotations

from advisor.deploy.render import render
from advisor.deploy.settings import build_settings, safe_name
from advisor.deploy.types import HOST, MODEL, PORT, Arg, Bundle, EnvVar
from advisor.inputs.answers import Answers
from advisor.knowledge.load import Knowledge
from advisor.planner.types import Plan

__all__ = ["Arg", "Bundle", "EnvVar", "HOST", "MODEL", "PORT", "bundle_for", "bundles", "safe_name"]


def bundle_for(engine: str, plan: Plan, answers: Answers, knowledge: Knowledge, lang: str = "en",
               cpu_cores: int | None = None, notes: list[str] | None = None, refuse: str | None = None) -> Bundle:
    """One engine's bundle, its files rendered (none when refused or without a server). `notes` go first among its
    warnings and into every file's header (e.g. why the ranking excluded the engine); `refuse`: why no bundle can
    be written at all (the engine's pinned version does not implement the model's architecture)."""
    b = build_settings(engine, plan, answers, knowledge, lang, cpu_cores)
    if refuse:
        return b.model_copy(update={"status": "refused", "reason": refuse, "args": [], "env": [], "files": {}})
    if notes:
        b = b.model_copy(update={"warnings": [*notes, *b.warnings]})
    return render(b, knowledge)


def bundles(engines: list[str], plan: Plan, answers: Answers, knowledge: Knowledge, lang: str = "en",
            cpu_cores: int | None = None) -> list[Bundle]:
    return [bundle_for(e, plan, answers, knowledge, lang, cpu_cores) for e in engines]

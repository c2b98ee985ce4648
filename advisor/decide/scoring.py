"""The score arithmetic: base + each matching rule's delta + each support-matrix cell's, clamped to the bounds.

`score` keeps every contribution (the reasons a ranking shows); `totals` is the fast path the flip search calls
many times. Pure; no I/O.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.decide.support_score import effects as support_effects
from advisor.knowledge import schema as ks
from advisor.knowledge.conditions import compile_condition
from advisor.knowledge.load import Knowledge

EngineFacts = dict[str, dict[str, Any]]


@dataclass
class Scored:
    scores: dict[str, float]
    contributions: dict[str, list[tuple[str, float]]]  # engine -> [(rule id, delta)]
    excluded: dict[str, list[str]]  # engine -> [rule id]

    def order(self) -> list[str]:
        ranked = [e for e in ks.ENGINE_IDS if e not in self.excluded]
        return sorted(ranked, key=lambda e: (-self.scores[e], ks.ENGINE_IDS.index(e)))


_COMPILED: dict[int, list[tuple[Any, ks.Rule]]] = {}


def _compiled(knowledge: Knowledge) -> list[tuple[Any, ks.Rule]]:
    key = id(knowledge.rules)
    if key not in _COMPILED:
        _COMPILED[key] = [(compile_condition(r.when), r) for r in knowledge.rules.rules]
    return _COMPILED[key]


_TESTED: dict[tuple[int, int], frozenset[str]] = {}


def tested_facts(knowledge: Knowledge) -> frozenset[str]:
    """Every fact a rule's or a support need's condition tests: what a score can depend on besides the precision that
    picks each engine's support-matrix row (advisor.knowledge.support.rows)."""
    from advisor.knowledge.conditions import leaves

    key = (id(knowledge.rules), id(knowledge.support))
    if key not in _TESTED:
        conds = [r.when for r in knowledge.rules.rules] + [n.when for n in knowledge.support.needs]
        _TESTED[key] = frozenset(leaf.fact for c in conds for leaf in leaves(c))
    return _TESTED[key]


def _each_engine(facts: dict[str, Any], engine_facts: EngineFacts | None) -> dict[str, dict[str, Any]]:
    return {e: {**facts, **engine_facts[e]} for e in ks.ENGINE_IDS} if engine_facts else {}


def score(facts: dict[str, Any], knowledge: Knowledge, engine_facts: EngineFacts | None = None) -> Scored:
    sc = knowledge.rules.scoring
    contributions = {e: [("base", sc.base[e])] for e in ks.ENGINE_IDS}
    excluded: dict[str, list[str]] = {}
    per_engine = _each_engine(facts, engine_facts)
    for test, rule in _compiled(knowledge):
        if rule.scope == "each-engine":
            for e, f in per_engine.items():
                if test(f):
                    if rule.self_delta is not None:
                        contributions[e].append((rule.id, rule.self_delta))
                    if rule.exclude_self:
                        excluded.setdefault(e, []).append(rule.id)
            continue
        if not test(facts):
            continue
        for e, d in rule.deltas.items():
            contributions[e].append((rule.id, d))
        for e in rule.exclude:
            excluded.setdefault(e, []).append(rule.id)
    for e, moved in support_effects(facts, engine_facts, knowledge).items():
        for v, d in moved:
            if d is None:
                excluded.setdefault(e, []).append(v.id)
            else:
                contributions[e].append((v.id, d))
    scores = {}
    for e, parts in contributions.items():
        total = sum(d for _, d in parts)
        clamped = min(sc.max_score, max(sc.min_score, total))
        if clamped != total:
            parts.append(("score-bounds", clamped - total))
        scores[e] = round(clamped, 2)
    return Scored(scores, contributions, excluded)


def totals(facts: dict[str, Any], knowledge: Knowledge, engine_facts: EngineFacts | None = None
           ) -> tuple[dict[str, float], set[str]]:
    """Clamped scores and exclusions only — the fast path the flip search calls many times."""
    sc = knowledge.rules.scoring
    t = dict(sc.base)
    ex: set[str] = set()
    per_engine = _each_engine(facts, engine_facts)
    for test, rule in _compiled(knowledge):
        if rule.scope == "each-engine":
            for e, f in per_engine.items():
                if test(f):
                    t[e] += rule.self_delta or 0.0
                    if rule.exclude_self:
                        ex.add(e)
        elif test(facts):
            for e, d in rule.deltas.items():
                t[e] += d
            ex.update(rule.exclude)
    for e, moved in support_effects(facts, engine_facts, knowledge).items():
        for v, d in moved:
            if d is None:
                ex.add(e)
            else:
                t[e] += d
    lo, hi = sc.min_score, sc.max_score
    return {e: round(min(hi, max(lo, v)), 2) for e, v in t.items()}, ex

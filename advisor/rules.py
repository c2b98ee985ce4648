"""The rules engine: (answers, hardware, knowledge) -> Recommendation. Pure; no I/O.

Every point of a score is a contribution that names its rule and source: the base score, each
matching rule's delta, and, when the total leaves [min, max], a clamp contribution — so the
contributions always sum to the score shown.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor import kschema as ks
from advisor.answers import Answers
from advisor.conditions import compile_condition
from advisor.facts import build_facts
from advisor.hardware import Hardware
from advisor.knowledge import Knowledge
from advisor.recommendation import ExcludedEngine, RankedEngine, Reason, Recommendation


class _Safe(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _fmt(text: str, facts: dict[str, Any]) -> str:
    shown = {k: (("%g" % v) if isinstance(v, float) else v) for k, v in facts.items()}
    return text.format_map(_Safe(shown))


@dataclass
class _Scored:
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


def score(facts: dict[str, Any], knowledge: Knowledge) -> _Scored:
    sc = knowledge.rules.scoring
    contributions = {e: [("base", sc.base[e])] for e in ks.ENGINE_IDS}
    excluded: dict[str, list[str]] = {}
    for test, rule in _compiled(knowledge):
        if not test(facts):
            continue
        for e, d in rule.deltas.items():
            contributions[e].append((rule.id, d))
        for e in rule.exclude:
            excluded.setdefault(e, []).append(rule.id)
    scores = {}
    for e, parts in contributions.items():
        total = sum(d for _, d in parts)
        clamped = min(sc.max_score, max(sc.min_score, total))
        if clamped != total:
            parts.append(("score-bounds", clamped - total))
        scores[e] = round(clamped, 2)
    return _Scored(scores, contributions, excluded)


def totals(facts: dict[str, Any], knowledge: Knowledge) -> tuple[dict[str, float], set[str]]:
    """Clamped scores and exclusions only — the fast path the flip search calls many times."""
    sc = knowledge.rules.scoring
    t = dict(sc.base)
    ex: set[str] = set()
    for test, rule in _compiled(knowledge):
        if test(facts):
            for e, d in rule.deltas.items():
                t[e] += d
            ex.update(rule.exclude)
    lo, hi = sc.min_score, sc.max_score
    return {e: round(min(hi, max(lo, v)), 2) for e, v in t.items()}, ex


def recommend(answers: Answers, hardware: Hardware | None, knowledge: Knowledge, lang: str = "en",
              with_flips: bool = True) -> Recommendation:
    facts = build_facts(answers, hardware)
    s = score(facts, knowledge)
    rules = {r.id: r for r in knowledge.rules.rules}
    sc = knowledge.rules.scoring

    def reason(rule_id: str, delta: float | None) -> Reason:
        if rule_id == "base":
            return Reason(rule="base", text=_fmt(sc.base_text.get(lang), facts), delta=delta, source=sc.source)
        if rule_id == "score-bounds":
            return Reason(rule=rule_id, text=_fmt(sc.clamp_text.get(lang), facts), delta=round(delta, 2),
                          source=sc.source)
        r = rules[rule_id]
        return Reason(rule=r.id, text=_fmt(r.text.get(lang), facts), delta=delta, source=r.source)

    ranking = [
        RankedEngine(engine=e, name=knowledge.engines[e].name, score=s.scores[e],
                     reasons=[reason(rid, d) for rid, d in s.contributions[e]])
        for e in s.order()
    ]
    excluded = [
        ExcludedEngine(engine=e, name=knowledge.engines[e].name, reasons=[reason(rid, None) for rid in s.excluded[e]])
        for e in ks.ENGINE_IDS if e in s.excluded
    ]
    rec = Recommendation(ranking=ranking, excluded=excluded, lang=lang, facts=facts)
    if with_flips:
        from advisor.flips import find_flips

        rec.flips, rec.flip_note = find_flips(answers, hardware, knowledge, s, lang)
    return rec

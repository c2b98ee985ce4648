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
SUPPORT_FIRST_FACTS = frozenset({"plan_capacity", "plan_capacity_low", "plan_capacity_high", "plan_capacity_bound",
                                 "plan_rough", "plan_band_pct", "plan_ttft_p95_ms"})  # (the tie-break reads all but the TTFT)


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
        # and the capacities at the band's ends, which support_first reads
        _TESTED[key] = frozenset(leaf.fact for c in conds for leaf in leaves(c)) | SUPPORT_FIRST_FACTS
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
    experimental: set[str] = set()
    for e, moved in support_effects(facts, engine_facts, knowledge).items():
        for v, d in moved:
            if d is None:
                excluded.setdefault(e, []).append(v.id)
            else:
                contributions[e].append((v.id, d))
                if v.status == "experimental":
                    experimental.add(e)
    raw = {e: sum(d for _, d in parts) for e, parts in contributions.items()}
    pred = {e: sum(d for rid, d in parts if rid.startswith("predicted-")) for e, parts in contributions.items()}
    for e, over, d in support_first(raw, pred, experimental, set(excluded), engine_facts):
        # the id carries what the reason says: the engine yielded to, and on which ground
        contributions[e].append((f"support-first/{over}/{_ground(e, over, experimental, engine_facts)}", d))
    totals_now = {e: sum(d for _, d in parts) for e, parts in contributions.items()}
    for e, over, d in tie_break(totals_now, set(excluded), engine_facts, sc.min_score, sc.max_score):
        kind = "tie-break" if d else ("tie-capped" if capped_lead(e, over, engine_facts) else "tie-kept")
        contributions[e].append((f"{kind}/{over}", d))
    scores = {}
    for e, parts in contributions.items():
        total = sum(d for _, d in parts)
        clamped = min(sc.max_score, max(sc.min_score, total))
        if clamped != total:
            parts.append(("score-bounds", clamped - total))
        scores[e] = round(clamped, 2)
    return Scored(scores, contributions, excluded)


def _weaker(a: str, b: str, experimental: set[str], engine_facts: EngineFacts) -> bool:
    """a's lead over b may not rest on a prediction inside the bands: a's path is experimental where b's is supported,
    or, at the same tier, a's prediction is rough (against a fitted one, or another rough one: thin evidence on both
    sides moves no engine above another)."""
    if (a in experimental) != (b in experimental):
        return a in experimental
    return bool(engine_facts[a].get("plan_rough"))


def _ground(a: str, b: str, experimental: set[str], engine_facts: EngineFacts) -> str:
    """Why a may not lead b on a prediction inside the bands: "experimental" (against supported), "rough" (against a
    fitted prediction) or "rough-both" (thin evidence on both sides)."""
    if (a in experimental) != (b in experimental):
        return "experimental"
    return "rough-both" if engine_facts[b].get("plan_rough") else "rough"


def _inside_bands(a: str, b: str, engine_facts: EngineFacts) -> bool:
    """a's predicted lead over b is inside both bands: a's capacity at the band's slow end does not clear b's at
    its fast end, and a's central capacity lies within b's range or the two differ by less than both bands together
    ((1 + band_a) x (1 + band_b)): a slow end that reaches zero users (a wide band against a tight target) does not
    make a 50-fold lead a tie; or the two TTFTs at the checklist's users lie within both bands (_ttft_inside). Where
    a holds more users and both TTFTs are predicted and lie beyond both bands, the lead is beyond them whatever the
    capacities' ratio (unless b's TTFT is a queue behind its default batch cap, which a deployment may raise): near
    one user a capacity is a small whole number (3 against 1 reads as inside ±89 % and ±134 % bands), while the TTFT
    they are searched on can differ 58-fold (llama.cpp's 1.1 s against transformers' one-at-a-time 65 s for 8 users
    on an L4). No capacity predicted: nothing beyond the bands either."""
    fa, fb = engine_facts[a], engine_facts[b]
    lo, hi = fa.get("plan_capacity_low"), fb.get("plan_capacity_high")
    if lo is None or hi is None:
        return True
    if lo > hi:
        return False
    ca, cb = fa.get("plan_capacity"), fb.get("plan_capacity")
    if ca is None or cb is None:
        return True
    if ca > cb and fb.get("plan_capacity_bound") != "batch" and fa.get("plan_ttft_p95_ms") \
            and fb.get("plan_ttft_p95_ms") and not _ttft_inside(fa, fb):
        return False  # (not where b's TTFT is a queue behind its default batch cap, a setting: capped_lead)
    # a's central capacity inside b's range is inside (near the target a capacity moves many times faster than the
    # TTFT it is searched on, so the central figures' ratio alone overstates a gap the ranges still cover)
    return ca <= hi or ca <= cb * _band_factor(fa, fb) or _ttft_inside(fa, fb)


def _ttft_inside(fa: dict[str, Any], fb: dict[str, Any]) -> bool:
    """The two TTFTs at the checklist's users on one replica lie within both bands of each other: the figure the
    bands are earned on. (On a T4, 8 users against a 1,500 ms target: SGLang's 916 ms and vLLM's 1,513 ms, bands
    ±65 % and ±79 %, read as capacities of 51 and 7 users: one prediction, not a 7-fold lead.)"""
    ta, tb = fa.get("plan_ttft_p95_ms"), fb.get("plan_ttft_p95_ms")
    return bool(ta and tb) and tb <= ta * _band_factor(fa, fb)


def _band_factor(fa: dict[str, Any], fb: dict[str, Any]) -> float:
    """How far apart two central capacities may lie and still be one prediction within both stated bands."""
    return (1 + (fa.get("plan_band_pct") or 0) / 100) * (1 + (fb.get("plan_band_pct") or 0) / 100)


def support_first(raw: dict[str, float], pred: dict[str, float], experimental: set[str], excluded: set[str],
                  engine_facts: EngineFacts | None) -> list[tuple[str, str, float]]:
    """(engine, the engine it must not outrank, delta): an engine whose lead over a better-supported (or
    better-predicted) one comes from its prediction rules alone, on a margin inside the bands, is put just below it
    (level with it where both are rough and were level without their predictions).
    Rank order as Scored.order (ties by ENGINE_IDS); at most one move per pair, so it ends."""
    if not engine_facts:
        return []
    t = dict(raw)
    pred = dict(pred)  # a move undoes prediction rules, so it counts among them: what remains is the answers' order
    out: list[tuple[str, str, float]] = []
    done: set[tuple[str, str]] = set()
    moved = True
    while moved:
        moved = False
        order = sorted((e for e in ks.ENGINE_IDS if e not in excluded), key=lambda e: (-t[e], ks.ENGINE_IDS.index(e)))
        for i, a in enumerate(order):
            for b in order[i + 1:]:
                lead = t[a] - t[b]
                if (a, b) in done or not _weaker(a, b, experimental, engine_facts) or pred[a] - pred[b] < lead \
                        or not (pred[a] > pred[b] or lead > 0) or not _inside_bands(a, b, engine_facts):
                    continue
                # put just below b; where both are rough and tied without their predictions, level with it (thin
                # evidence on both sides lifts neither: the tie is said, and rough predictions break no tie)
                level = _ground(a, b, experimental, engine_facts) == "rough-both" and pred[a] - pred[b] == lead
                d = -lead if level else -(lead + 1)
                t[a] += d
                pred[a] += d
                out.append((a, b, d))
                done.add((a, b))
                moved = True
                break
            if moved:
                break
    return out


def _beyond_both(a: str, b: str, engine_facts: EngineFacts) -> bool:
    """a out-serves b beyond both bands on both readings: a's capacity at its slow end clears b's at its fast end,
    and the central capacities differ by more than both stated bands together. (A capacity held by the KV pool or
    the batch cap has a narrow range of its own; the stated band still bounds what the prediction can tell.)"""
    fa, fb = engine_facts[a], engine_facts[b]
    lo, hi, ca, cb = (fa.get("plan_capacity_low"), fb.get("plan_capacity_high"), fa.get("plan_capacity"),
                      fb.get("plan_capacity"))
    if None in (lo, hi, ca, cb):
        return False
    return lo > hi and ca > cb * _band_factor(fa, fb)


def capped_lead(a: str, b: str, engine_facts: EngineFacts) -> bool:
    """a out-serves b beyond both bands, but b's capacity is held by its default batch cap (vLLM's max_num_seqs by
    GPU), a setting the deployment may raise, not what its GPUs hold: no tie is broken on it."""
    return engine_facts[b].get("plan_capacity_bound") == "batch" and _beyond_both(a, b, engine_facts)


TIE_BREAK = 0.1  # per engine of the tie beaten beyond both bands: orders a tie, never crosses a whole point
TIE_SAID = 1.1  # a predicted lead of 10 % or more inside the bands is said (delta 0), not acted on


def tie_break(t: dict[str, float], excluded: set[str], engine_facts: EngineFacts | None, lo: float = 0.0,
              hi: float = 100.0) -> list[tuple[str, str, float]]:
    """(engine, the engine it ties with and out-serves, delta): among engines of the same score, a predicted
    capacity beyond both bands (_beyond_both) breaks the tie where both predictions are fitted (a rough one weighs
    nothing); a lead inside them leaves it a tie (listed in the engines' id order), said (delta 0) from 10 %. Every
    delta is TIE_BREAK, and rule deltas are whole points, so no tie-break lifts an
    engine over one that scored a point more."""
    if not engine_facts:
        return []
    groups: dict[float, list[str]] = {}
    for e in ks.ENGINE_IDS:
        if e not in excluded:  # tied as shown: on the clamped score (at the top bound a +0.1 would be clamped away)
            groups.setdefault(round(min(hi, max(lo, t[e])), 2), []).append(e)
    out = []
    for tied in groups.values():
        for a in tied:
            for b in tied:
                ca, cb = engine_facts[a].get("plan_capacity"), engine_facts[b].get("plan_capacity")
                if a == b or ca is None or cb is None or ca <= cb:
                    continue
                if engine_facts[a].get("plan_rough") or engine_facts[b].get("plan_rough"):
                    continue  # a rough prediction (a prior, or a wide pooled band) breaks no tie and is not weighed
                if capped_lead(a, b, engine_facts):
                    out.append((a, b, 0.0))  # said, the tie kept
                elif _beyond_both(a, b, engine_facts):
                    if t[a] + TIE_BREAK <= hi:  # (at the top bound both stay at 100, a tie as shown)
                        out.append((a, b, TIE_BREAK))
                elif ca >= cb * TIE_SAID:  # a lead a reader would see, inside the bands: said, kept a tie
                    out.append((a, b, 0.0))
    return out


def totals(facts: dict[str, Any], knowledge: Knowledge, engine_facts: EngineFacts | None = None
           ) -> tuple[dict[str, float], set[str]]:
    """Clamped scores and exclusions only — the fast path the flip search calls many times."""
    sc = knowledge.rules.scoring
    t = dict(sc.base)
    ex: set[str] = set()
    per_engine = _each_engine(facts, engine_facts)
    pred = dict.fromkeys(t, 0.0)
    for test, rule in _compiled(knowledge):
        if rule.scope == "each-engine":
            for e, f in per_engine.items():
                if test(f):
                    t[e] += rule.self_delta or 0.0
                    if rule.id.startswith("predicted-"):
                        pred[e] += rule.self_delta or 0.0
                    if rule.exclude_self:
                        ex.add(e)
        elif test(facts):
            for e, d in rule.deltas.items():
                t[e] += d
            ex.update(rule.exclude)
    experimental: set[str] = set()
    for e, moved in support_effects(facts, engine_facts, knowledge).items():
        for v, d in moved:
            if d is None:
                ex.add(e)
            else:
                t[e] += d
                if v.status == "experimental":
                    experimental.add(e)
    for e, _, d in support_first(t, pred, experimental, ex, engine_facts):
        t[e] += d
    for e, _, d in tie_break(t, ex, engine_facts, sc.min_score, sc.max_score):
        t[e] += d
    lo, hi = sc.min_score, sc.max_score
    return {e: round(min(hi, max(lo, v)), 2) for e, v in t.items()}, ex

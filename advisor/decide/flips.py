"""'What would change your mind': the smallest answer changes that reverse the top two.

Candidates are the options of each checklist question (knowledge/checklist.yaml); distance is how
many option steps a change moves. Singles are tried first, then pairs of one-step moves.
"""
from __future__ import annotations

import itertools
from typing import Any

from advisor.decide.recommendation import Flip
from advisor.decide.scoring import totals
from advisor.inputs.answers import Answers, TargetHardware
from advisor.knowledge.load import Knowledge

MAX_FLIPS = 3
PAIR_POOL = 8


class _Hit:
    def __init__(self, scores: dict[str, float], excluded: set[str]):
        self.scores, self.excluded = scores, excluded


def _current_index(values: list[Any], current: Any) -> int:
    if current in values:
        return values.index(current)
    if isinstance(current, (int, float)) and not isinstance(current, bool):
        nums = [(abs(v - current), i) for i, v in enumerate(values) if isinstance(v, (int, float))]
        if nums:
            return min(nums)[1]
    return -1


def _target_key(hw: TargetHardware | None, knowledge: Knowledge) -> tuple | None:
    """What makes two targets the same choice for "what would flip": the GPUs, not the RAM or core count."""
    if hw is None:
        return None
    from advisor.planner.target import find_gpu

    known = find_gpu(hw.gpu_model, knowledge)
    return hw.gpu_vendor, known.id if known else (hw.gpu_model or "").lower(), hw.gpu_count


def _candidates(answers: Answers, knowledge: Knowledge):
    """Yield (question, option, distance, update-dict) for every single-answer change."""
    for q in knowledge.checklist.questions:
        values = [o.value for o in q.options]
        if not values:
            continue
        if q.kind == "hardware":
            cur = _target_key(answers.hardware, knowledge)
            cur_i = next((i for i, v in enumerate(values)
                          if _target_key(None if v is None else TargetHardware.model_validate(v), knowledge) == cur),
                         -1)
        else:
            cur = getattr(answers, q.key)
            cur_i = _current_index(values, cur)
        for i, opt in enumerate(q.options):
            if i == cur_i:
                continue
            value = opt.value
            if q.kind == "hardware" and value is not None:
                value = TargetHardware.model_validate(value)
            dist = abs(i - cur_i) if cur_i >= 0 else 1
            yield q, opt, dist, {q.key: value}


def find_flips(answers: Answers, ev, scored) -> tuple[list[Flip], str | None]:
    """ev: the rules' Evaluator (facts and capacity plans for any variant of the answers)."""
    knowledge, lang = ev.knowledge, ev.lang

    order = scored.order()
    if len(order) < 2:
        return [], knowledge.s("flip_none_ranked", lang)
    top, second = order[0], order[1]
    names = {e: knowledge.engines[e].name for e in order}

    def attempt(updates: list[tuple[Any, Any, int, dict]]):
        merged: dict[str, Any] = {}
        for _, _, _, u in updates:
            merged.update(u)
        facts, engine_facts = ev.facts(answers.model_copy(update=merged), detail=False)
        scores, excluded = totals(facts, knowledge, engine_facts)
        if second in excluded:
            return None, float("-inf")
        if top in excluded:
            return _Hit(scores, excluded), float("inf")
        gap = scores[second] - scores[top]
        wins = gap > 0 or (gap == 0 and order.index(second) < order.index(top))
        return (_Hit(scores, excluded) if wins else None), gap

    singles = list(_candidates(answers, knowledge))
    found: list[tuple[int, list, Any]] = []
    gains = []
    for cand in singles:
        hit, gap = attempt([cand])
        if hit:
            found.append((cand[2], [cand], hit))
        elif cand[2] == 1:
            gains.append((gap, cand))
    if not found:
        # pairs of one-step moves, most promising first (each moved the gap towards a flip)
        gains.sort(key=lambda g: -g[0])
        steps = [c for _, c in gains[:PAIR_POOL]]
        for a, b in itertools.combinations(steps, 2):
            if a[0].key == b[0].key:
                continue
            hit, _ = attempt([a, b])
            if hit:
                found.append((2, [a, b], hit))
    if not found:
        return [], knowledge.s("flip_none", lang, top=names[top], second=names[second])
    found.sort(key=lambda f: (f[0], len(f[1]), f[2].scores[top] - f[2].scores[second]))
    best = found[0][0]
    flips = []
    for dist, changes, s2 in found:
        if dist > best or len(flips) >= MAX_FLIPS:
            break
        label = "; ".join(f"{q.short.get(lang)} → {opt.label.get(lang)}" for q, opt, _, _ in changes)
        key = "flip_excluded" if top in s2.excluded else "flip_text"
        text = knowledge.s(key, lang, changes=label, top=names[top], second=names[second],
                           top_score=s2.scores[top], second_score=s2.scores[second])
        flips.append(Flip(
            changes={q.key: (opt.value) for q, opt, _, _ in changes},
            text=text,
            scores={top: None if top in s2.excluded else s2.scores[top], second: s2.scores[second]},
        ))
    return flips, None

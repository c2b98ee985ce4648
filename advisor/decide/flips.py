"""'What would change your mind': the smallest answer changes that reverse the top two.

Candidates are the options of each checklist question (knowledge/checklist.yaml); distance is how
many option steps a change moves. Singles are tried first, then pairs of one-step moves.

A flip is a change the user can make to their own answers: the hardware question is left out (swapping in a
preset machine they never asked about, a Mac or an Arc card, is not advice), and a flip whose new leader scores
0 or less is no flip (a leader at 0 only means every engine was ruled down).
"""
from __future__ import annotations

import itertools
from typing import Any

from advisor.decide.recommendation import Flip
from advisor.decide.scoring import totals
from advisor.inputs.answers import Answers
from advisor.knowledge import ENGINE_IDS
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


#: answers beyond the eight questions that the Checklist also asks (its model step), tried as flips too: a
#: prefix-heavy workload is what separates SGLang from vLLM, and no checklist answer does
EXTRA_FLIPS = {"prefix_sharing": ("low", "high"), "prompt_mix": ("short", "mixed", "long")}


class _Extra:
    """An extra answer shaped like a checklist question (key, short label, options), labelled from strings.yaml."""

    def __init__(self, key: str, values: tuple[str, ...], knowledge: Knowledge) -> None:
        from advisor.knowledge.schema import Option

        self.key, self.kind = key, "choice"
        self.short = knowledge.strings[f"ui_{key}"]
        self.options = [Option(value=v, label=knowledge.strings[f"ui_{key}_{v}"]) for v in values]


class _Choice:
    def __init__(self, value, en: str, zh: str) -> None:
        from advisor.knowledge.schema import Text

        self.value, self.label = value, Text(en=en, zh=zh)


class _HardwareFlip:
    """The target hardware as a flip, now that the serving prediction can weigh it: twice the GPUs, or a faster part
    of the same vendor (knowledge/serving.yaml flip_gpus). Only for hardware the answers name (a plan for this
    machine is not a purchase)."""

    key, kind = "hardware", "hardware-flip"

    def __init__(self, knowledge: Knowledge) -> None:
        self.short = knowledge.strings["ui_flip_hardware"]


def _hardware_candidates(answers: Answers, knowledge: Knowledge):
    from advisor.planner.target import find_gpu

    hw = answers.hardware
    if hw is None or hw.gpu_vendor == "none" or "ui_flip_hardware" not in knowledge.strings:
        return
    q = _HardwareFlip(knowledge)
    g = find_gpu(hw.gpu_model, knowledge)
    name = g.name if g else (hw.gpu_model or "GPU")
    if hw.nodes == 1 and hw.gpu_count * 2 <= 8:
        n = hw.gpu_count * 2
        new = hw.model_copy(update={"gpu_count": n, "gpus_per_node": n})
        yield q, _Choice(new.model_dump(exclude_none=True), f"{n} × {name}", f"{n} 块 {name}"), 1, {"hardware": new}
    if g is None or not g.bandwidth_gb_s:
        return
    faster = [x for x in (find_gpu(i, knowledge) for i in knowledge.serving.flip_gpus.get(hw.gpu_vendor, []))
              if x is not None and x.id != g.id and (x.bandwidth_gb_s or 0) > g.bandwidth_gb_s]
    for dist, x in enumerate(sorted(faster, key=lambda x: x.bandwidth_gb_s)[:2], start=1):
        new = hw.model_copy(update={"gpu_model": x.name, "gpu_memory_gb": None})
        label = f"{hw.gpu_count} × {x.name}"
        yield q, _Choice(new.model_dump(exclude_none=True), label,
                         f"{hw.gpu_count} 块 {x.name}"), dist, {"hardware": new}


def _questions(knowledge: Knowledge):
    yield from knowledge.checklist.questions
    for key, values in EXTRA_FLIPS.items():
        if f"ui_{key}" in knowledge.strings:
            yield _Extra(key, values, knowledge)


def _candidates(answers: Answers, knowledge: Knowledge):
    """Yield (question, option, distance, update-dict) for every single-answer change."""
    for q in _questions(knowledge):
        values = [o.value for o in q.options]
        if not values or q.kind == "hardware":
            continue
        cur_i = _current_index(values, getattr(answers, q.key))
        for i, opt in enumerate(q.options):
            if i == cur_i:
                continue
            value = opt.value
            dist = abs(i - cur_i) if cur_i >= 0 else 1
            yield q, opt, dist, {q.key: value}
    yield from _hardware_candidates(answers, knowledge)


def find_flips(answers: Answers, ev, scored) -> tuple[list[Flip], str | None]:
    """ev: the rules' Evaluator (facts and capacity plans for any variant of the answers)."""
    knowledge, lang = ev.knowledge, ev.lang

    order = scored.order()
    if len(order) < 2:
        return [], knowledge.s("flip_none_ranked", lang)
    names = {e: knowledge.engines[e].name for e in order}
    # engines tied with the leader (vLLM and SGLang share most mechanisms, so most answers score them alike): no
    # answer separates them, which is said; the flips are then against the first engine below the tie, and a flip
    # must lift it above every tied engine
    tied = [e for e in order[1:] if scored.scores[e] == scored.scores[order[0]]]
    top = order[0]
    rest = [e for e in order[1:] if e not in tied]
    tie_note = None
    if tied:
        tie_note = knowledge.s("flip_tie", lang, top=names[top], tied=knowledge.s("report_list_sep", lang).join(
            names[e] for e in tied), score=f"{scored.scores[top]:g}")
        if not rest:
            return [], tie_note
    second = rest[0] if tied else order[1]
    leaders = [top, *tied]
    relevant = frozenset([*leaders, second])  # the only scores a flip reads (ev.plan: the others' plans may be partial)

    def attempt(updates: list[tuple[Any, Any, int, dict]]):
        merged: dict[str, Any] = {}
        for _, _, _, u in updates:
            merged.update(u)
        facts, engine_facts = ev.facts(answers.model_copy(update=merged), detail=False, relevant=relevant)
        scores, excluded = totals(facts, knowledge, engine_facts)
        if second in excluded:
            return None, float("-inf")
        standing = [e for e in leaders if e not in excluded]
        if not standing:
            return (_Hit(scores, excluded), float("inf")) if scores[second] > 0 else (None, float("-inf"))
        gap = scores[second] - max(scores[e] for e in standing)
        # it leads when it scores above every standing leader, or ties one that the ranking's own order (the
        # engines' list order, advisor.decide.scoring; a capacity beyond both bands already moved the scores by
        # scoring.tie_break) puts after it
        wins = scores[second] > 0 and all(
            scores[second] > scores[e] or (scores[second] == scores[e] and ENGINE_IDS.index(second) < ENGINE_IDS.index(e))
            for e in standing)
        return (_Hit(scores, excluded) if wins else None), gap

    singles = list(_candidates(answers, knowledge))
    found: list[tuple[int, list, Any]] = []
    gains = []
    # nearest first: only the flips at the smallest distance that has any are shown, so once a distance has one no
    # farther change is tried (each may plan every engine again). Within a distance the candidates keep their order,
    # and the sort below is stable, so the flips and their order are those of trying every change.
    for dist in sorted({c[2] for c in singles}):
        for cand in singles:
            if cand[2] != dist:
                continue
            hit, gap = attempt([cand])
            if hit:
                found.append((cand[2], [cand], hit))
            elif cand[2] == 1:
                gains.append((gap, cand))
        if found:
            break
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
        if tie_note:
            return [], knowledge.s("flip_tie_none", lang, top=names[top], tied=knowledge.s(
                "report_list_sep", lang).join(names[e] for e in tied), score=f"{scored.scores[top]:g}",
                second=names[second])
        return [], knowledge.s("flip_none", lang, top=names[top], second=names[second])
    found.sort(key=lambda f: (f[0], len(f[1]), f[2].scores[top] - f[2].scores[second]))
    best = found[0][0]
    flips = []
    for dist, changes, s2 in found:
        if dist > best or len(flips) >= MAX_FLIPS:
            break
        label = "; ".join(f"{q.short.get(lang)} → {opt.label.get(lang)}" for q, opt, _, _ in changes)
        key = "flip_excluded" if top in s2.excluded else \
            "flip_text_tie" if s2.scores[second] == s2.scores[top] else "flip_text"
        text = knowledge.s(key, lang, changes=label, top=names[top], second=names[second],
                           top_score=s2.scores[top], second_score=s2.scores[second])
        flips.append(Flip(
            changes={q.key: (opt.value) for q, opt, _, _ in changes},
            text=text,
            scores={top: None if top in s2.excluded else s2.scores[top], second: s2.scores[second]},
        ))
    return flips, tie_note

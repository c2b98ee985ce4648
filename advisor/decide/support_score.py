"""What a support-matrix cell does to an engine's score, and the reason it gives. Pure.

The lookups themselves (which cell applies to this workload) are `advisor.knowledge.support`.
"""
from __future__ import annotations

from typing import Any

from advisor.knowledge import schema as ks
from advisor.knowledge.load import Knowledge
from advisor.knowledge.support import Verdict, axis_label, cc_value, needed_features, rows, value_label, verdicts

_EFFECTS: dict[tuple, dict[str, list[tuple[Verdict, float | None]]]] = {}
MAX_EFFECTS = 4096


def effects(facts: dict[str, Any], engine_facts: dict[str, dict[str, Any]] | None, knowledge: Knowledge
            ) -> dict[str, list[tuple[Verdict, float | None]]]:
    """Per engine: (verdict, delta) for each cell that moves the score; delta None = the engine is excluded.

    The cells depend on the facts only through each engine's rows, the NVIDIA compute capability and the features
    needed (advisor.knowledge.support.verdicts), so the answer is memoised on those (bounded; callers only read it):
    the flip search asks again for every variant of the answers, most of which keep all three."""
    needs = needed_features(facts, knowledge)
    cc = cc_value(facts.get("gpu_cc")) if facts.get("gpu_vendor") == "nvidia" else None
    key = (id(knowledge.support), cc, tuple(needs), facts.get("model_type"),
           tuple(tuple(rows(facts, engine_facts.get(e, {}) if engine_facts else {}).items()) for e in ks.ENGINE_IDS))
    out = _EFFECTS.get(key)
    if out is None:
        if len(_EFFECTS) >= MAX_EFFECTS:
            _EFFECTS.clear()
        out = _EFFECTS[key] = _effects(facts, engine_facts, knowledge, needs)
    return out


def _effects(facts: dict[str, Any], engine_facts: dict[str, dict[str, Any]] | None, knowledge: Knowledge,
             needs: list[str]) -> dict[str, list[tuple[Verdict, float | None]]]:
    sc = knowledge.support.scoring
    out: dict[str, list[tuple[Verdict, float | None]]] = {}
    for e in ks.ENGINE_IDS:
        ef = engine_facts.get(e, {}) if engine_facts else {}
        moved: list[tuple[Verdict, float | None]] = []
        for v in verdicts(e, facts, ef, knowledge, needs):
            if v.axis == "serving":
                d = {"unsupported": sc.feature_missing, "experimental": sc.feature_experimental,
                     "unknown": sc.feature_unknown}.get(v.status)
                if d:
                    moved.append((v, d))
            elif v.status == "unsupported":
                moved.append((v, None))
            elif v.status == "experimental" and sc.experimental:
                moved.append((v, sc.experimental))
        out[e] = moved
    return out


def text(v: Verdict, knowledge: Knowledge, lang: str) -> str:
    """The reason a verdict gives, in the reader's language, with what the docs say and what to do instead."""
    sc = knowledge.support.scoring.text
    kind = ("feature_missing" if v.status == "unsupported" else "feature_experimental") if v.axis == "serving" \
        else v.status
    template = getattr(sc, kind, None) or sc.experimental
    note = v.note.get(lang) if v.note else ""
    if v.cell.instead is not None and v.status == "unsupported":
        note = f"{note} {v.cell.instead.get(lang)}".strip()
    return template.get(lang).format(engine=knowledge.engines[v.engine].name, axis=axis_label(v.axis, knowledge, lang),
                                     value=value_label(v.axis, v.key, knowledge, lang), note=note).strip()

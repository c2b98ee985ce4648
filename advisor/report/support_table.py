"""The "can it run this?" table: the user's row on each axis against the five engines, from the support matrix.

One source for the Recommendation page, the Hardware page and the report (Markdown; the PDF colours the cells
by status). Every cell names its status and links to the page it was read from.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.knowledge import schema as ks
from advisor.knowledge import support
from advisor.knowledge.load import Knowledge

COLOURS = {"supported": "green", "experimental": "orange", "unsupported": "red", "unknown": "gray"}  # Streamlit's
FILLS = {"supported": (219, 240, 223), "experimental": (255, 240, 196), "unsupported": (246, 208, 212),
         "unknown": (232, 234, 237)}  # the PDF's cell colours


@dataclass(frozen=True)
class Cell:
    status: ks.SupportStatus
    key: str  # the engine's own key on this axis (precision: what that engine would run)
    source: str | None
    note: ks.Text | None


@dataclass(frozen=True)
class Row:
    axis: str
    key: str  # the user's key (precision: as asked)
    cells: dict[str, Cell]


TABLE_AXES = (*ks.CAN_RUN_AXES, "model_class", "serving")  # model_class: knowledge/architectures.yaml, not the matrix


def rows(facts: dict[str, Any], engine_facts: dict[str, dict[str, Any]], knowledge: Knowledge,
         axes: tuple[str, ...] = TABLE_AXES) -> list[Row]:
    per_engine = {e: support.verdicts(e, facts, engine_facts.get(e, {}), knowledge) for e in ks.ENGINE_IDS}
    out: list[Row] = []
    seen: list[tuple[str, str]] = []
    for v in per_engine[ks.ENGINE_IDS[0]]:
        if v.axis in axes:
            seen.append((v.axis, v.key))
    for axis, key in seen:
        cells = {}
        for e, vs in per_engine.items():
            v = next((x for x in vs if x.axis == axis), None) if axis != "serving" else \
                next((x for x in vs if x.axis == axis and x.key == key), None)
            if v is not None:
                cells[e] = Cell(v.status, v.key, v.cell.source, v.note)
        shown = _asked_precision(facts) if axis == "precision" else key
        out.append(Row(axis, shown, cells))
    return out


def _asked_precision(facts: dict[str, Any]) -> str:
    return support.precision_key(str(facts.get("precision") or "fp16"))


def status_label(status: str, knowledge: Knowledge, lang: str) -> str:
    return knowledge.s(f"sup_status_{status}", lang)


def markdown(table: list[Row], knowledge: Knowledge, lang: str, coloured: bool = True) -> list[str]:
    """A Markdown table. coloured: a dot in Streamlit's `:green[…]` colours for the browser (not an emoji, which a
    machine without an emoji font shows as a box); the report passes False and the PDF fills the cells itself."""
    from advisor.report.mdtext import md_escape

    if not table:
        return []
    engines = ks.ENGINE_IDS
    head = [knowledge.s("sup_col_row", lang)] + [knowledge.engines[e].name for e in engines]
    lines = ["| " + " | ".join(md_escape(h) for h in head) + " |", "|" + "---|" * len(head)]
    for r in table:
        label = (f"{support.axis_label(r.axis, knowledge, lang)}{knowledge.s('colon', lang)}"
                 f"{support.value_label(r.axis, r.key, knowledge, lang)}")
        cells = [md_escape(label)]
        for e in engines:
            c = r.cells.get(e)
            if c is None:
                cells.append("–")
                continue
            text = status_label(c.status, knowledge, lang)
            if c.key != r.key:  # the engine would run something else than asked (its own precision)
                text += f" ({support.value_label(r.axis, c.key, knowledge, lang)})"
            cell = f"[{md_escape(text)}]({c.source})" if c.source else md_escape(text)
            cells.append(f":{COLOURS[c.status]}[●]\u00a0{cell}" if coloured else cell)
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def lacks(table: list[Row], knowledge: Knowledge, lang: str) -> dict[str, list[str]]:
    """Per engine, what it lacks or has only experimentally here, as short texts (the Hardware page)."""
    out: dict[str, list[str]] = {e: [] for e in ks.ENGINE_IDS}
    for r in table:
        for e, c in r.cells.items():
            if c.status in ("unsupported", "experimental"):
                what = support.value_label(r.axis, c.key, knowledge, lang)
                note = f" — {c.note.get(lang)}" if c.note else ""
                out[e].append(f"{status_label(c.status, knowledge, lang)}{knowledge.s('colon', lang)}{what}{note}")
    return out


def read_date(knowledge: Knowledge) -> str:
    dates = {c.read for t in knowledge.support.engines.values() for axis in ks.SUPPORT_AXES
             for c in getattr(t, axis).values() if c.read}
    return max(dates) if dates else "–"


def from_recommendation(rec, knowledge: Knowledge, axes: tuple[str, ...] = TABLE_AXES) -> list[Row]:
    """The table for a Recommendation: its facts, and each engine's plan (the precision and device it assumed)."""
    from advisor.inputs.facts import plan_facts

    engine_facts = {e: plan_facts(p, "") for e, p in rec.plan.engines.items()} if rec.plan else {}
    return rows(rec.facts, engine_facts, knowledge, axes)

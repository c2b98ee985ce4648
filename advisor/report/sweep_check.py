"""Predicted vs measured for a sweep, as rows, text and Markdown (advisor.evidence.sweep_check makes the figures)."""
from __future__ import annotations

from advisor.evidence.sweep_check import SweepCheck, error_text
from advisor.knowledge.load import Knowledge
from advisor.planner.types import Calibrated
from advisor.report.mdtext import md_escape


def _n(x: float | None, fmt: str = "{:,.0f}") -> str:
    return "—" if x is None else fmt.format(x)


def _e(x: float | None) -> str:
    return "—" if x is None else f"{x:+.0%}"


def check_rows(c: SweepCheck, knowledge: Knowledge, lang: str) -> tuple[list[str], list[list[str]]]:
    s = knowledge.s

    def _e(x: float | None) -> str:
        return error_text(x, knowledge, lang)

    head = [s("svc_col_level", lang), s("svc_col_ttft", lang), s("svc_col_itl", lang), s("svc_col_tps", lang)]
    rows = []
    for lv in c.levels:
        e = lv.errors()
        rows.append([str(lv.concurrency) + (" *" if lv.busy else ""),
                     f"{_n(lv.measured_ttft_ms_p95)} / {_n(lv.predicted_ttft_ms_p95)} ({_e(e['ttft_p95'])})",
                     f"{_n(lv.measured_itl_ms_p50, '{:,.1f}')} / {_n(lv.predicted_itl_ms_p50, '{:,.1f}')} "
                     f"({_e(e['itl_p50'])})",
                     f"{_n(lv.measured_output_tps, '{:,.1f}')} / {_n(lv.predicted_output_tps, '{:,.1f}')} "
                     f"({_e(e['output_tps'])})"])
    return head, rows


def summary(c: SweepCheck, knowledge: Knowledge, lang: str) -> str:
    s = knowledge.s
    label = s(f"val_plan_label_{c.label}", lang)
    cap_m = "—" if c.measured_capacity is None else str(c.measured_capacity)
    cap_p = "—" if c.predicted_capacity is None else str(c.predicted_capacity)
    text = s("svc_summary", lang, engine=knowledge.engines[c.engine].name, i=c.input_tokens, o=c.output_tokens,
             label=label, band=round(c.band * 100), tps=_e(c.median_abs_error("output_tps")).lstrip("+"),
             ttft=_e(c.median_abs_error("ttft_p95")).lstrip("+"), cap_m=cap_m, cap_p=cap_p)
    if c.busy:
        text += " " + s("svc_busy", lang)
    return text


def check_text(c: SweepCheck, knowledge: Knowledge, lang: str) -> list[str]:
    head, rows = check_rows(c, knowledge, lang)
    out = [summary(c, knowledge, lang), "  " + " | ".join(head)]
    out += ["  " + " | ".join(r) for r in rows]
    out.append("  " + knowledge.s("svc_cells", lang))
    return out


def check_markdown(c: SweepCheck, knowledge: Knowledge, lang: str) -> str:
    head, rows = check_rows(c, knowledge, lang)
    lines = [md_escape(summary(c, knowledge, lang)), "", "| " + " | ".join(head) + " |",
             "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(md_escape(x) for x in r) + " |" for r in rows]
    lines += ["", md_escape(knowledge.s("svc_cells", lang))]
    return "\n".join(lines)


def recalibrated_text(cal: Calibrated, knowledge: Knowledge, lang: str) -> str:
    return knowledge.s("svc_recalibrated", lang, engine=knowledge.engines[cal.engine].name,
                       tps="—" if cal.change_tps is None else f"{cal.change_tps:.2f}",
                       ttft="—" if cal.change_ttft is None else f"{cal.change_ttft:.2f}",
                       band=round(cal.band * 100), levels=cal.levels)

"""A user's benchmark file beside the prediction (advisor.evidence.imported makes the figures), as lines of text for
the CLI, rows for the page, and Markdown for the report. Everything the file supplied (its name, model, GPU, notes)
is escaped by the Markdown caller (md_escape) and never formatted as markup here."""
from __future__ import annotations

from advisor.evidence.imported import EvidenceCheck, EvidenceLevel
from advisor.evidence.sweep_check import error_text
from advisor.knowledge.load import Knowledge
from advisor.report.mdtext import md_escape


def _n(x: float | None, digits: int = 0) -> str:
    return "—" if x is None else f"{x:,.{digits}f}"


def load_text(lv: EvidenceLevel, knowledge: Knowledge, lang: str) -> str:
    s = knowledge.s
    if lv.concurrency and lv.request_rate_rps:
        return s("ev_rate", lang, r=f"{lv.request_rate_rps:g}") + f" (≤ {lv.concurrency:,})"
    if lv.concurrency:
        return s("ev_users", lang, n=f"{lv.concurrency:,}")
    if lv.request_rate_rps:
        return s("ev_rate", lang, r=f"{lv.request_rate_rps:g}")
    return s("ev_burst", lang)


def rows(c: EvidenceCheck, knowledge: Knowledge, lang: str) -> tuple[list[str], list[list[str]]]:
    s = knowledge.s
    head = [s("ev_col_load", lang), s("ev_col_ttft", lang), s("ev_col_itl", lang), s("ev_col_tps", lang),
            s("ev_col_ok", lang)]
    out = []
    for lv in c.levels:
        e = lv.errors()

        def cell(m, p, key, digits):
            text = f"{_n(m, digits)} / {_n(p, digits)}"
            return text + (f" ({error_text(e[key], knowledge, lang)})" if e[key] is not None else "")

        out.append([load_text(lv, knowledge, lang), cell(lv.measured_ttft_ms, lv.predicted_ttft_ms, "ttft", 0),
                    cell(lv.measured_itl_ms, lv.predicted_itl_ms, "itl", 1),
                    cell(lv.measured_output_tps, lv.predicted_output_tps, "output_tps", 1),
                    f"{lv.requests_ok:,} / {'—' if lv.requests_failed is None else f'{lv.requests_failed:,}'}"])
    return head, out


def _note(note: str, knowledge: Knowledge, lang: str) -> str:
    key, _, arg = note.partition("|")
    return knowledge.s(key, lang, arg=arg) if key in knowledge.strings else note


def paragraphs(c: EvidenceCheck, knowledge: Knowledge, lang: str) -> list[str]:
    """The sentences around the table, in order: what it is, what it speaks for, why no prediction or no
    recalibration, the failures, the predictor, the recalibration, the file's own notes."""
    s = knowledge.s
    r = c.run
    what = {k: s(f"ev_what_{k}", lang) for k in ("engine", "gpu", "gpu_known", "model", "load")}
    out = [s("ev_title", lang, file=r.file_name, fmt=r.format_version)]
    eng = knowledge.engines[c.engine].name if c.engine in knowledge.engines else (c.engine or s("ev_unknown", lang))
    gpu = f"{c.gpu_name} × {c.gpu_count or 1}" if c.gpu_name else s("ev_unknown", lang)
    says = s("ev_says", lang, engine=eng, gpu=gpu, model=c.model or r.model or s("ev_unknown", lang))
    if c.said_by_user:
        says += s("ev_said_by_user", lang, what=("、" if lang == "zh" else ", ").join(what[w] for w in c.said_by_user))
    out.append(says)
    if c.missing:
        out.append(s("ev_missing", lang, what=("、" if lang == "zh" else ", ").join(what[w] for w in c.missing)))
    elif c.mismatch:
        out.append(s("ev_mismatch", lang, what=("、" if lang == "zh" else ", ").join(what[w] for w in c.mismatch)))
    total = sum(lv.requests_ok + (lv.requests_failed or 0) for lv in c.levels)
    if any(lv.requests_failed is None for lv in c.levels):
        out.append(s("ev_failed_unknown", lang))
    elif c.failed_share:
        failed = sum(lv.requests_failed or 0 for lv in c.levels)
        out.append(s("ev_failed", lang, failed=f"{failed:,}", total=f"{total:,}", pct=f"{c.failed_share:.0%}"))
    if c.predictor:
        out.append(s("ev_predictor", lang, predictor=_predictor(c.predictor, knowledge, lang),
                     band=f"{round((c.band or 0) * 100)} %"))
    if c.calibration is not None:
        cal = c.calibration
        out.append(s("ev_calibrated", lang, file=cal.file, date=cal.made_at or "—", n=cal.levels, engine=eng,
                     gpu=c.gpu_name or "—", g=cal.gpu_count, ttft=f"{cal.ttft_scale:.2f}", itl=f"{cal.itl_scale:.2f}",
                     tps=f"{cal.tps_scale:.2f}", band=f"{round(cal.band * 100)} %"))
    elif c.why_not_calibrated in ("ev_why_thin", "ev_why_failures"):
        out.append(s(c.why_not_calibrated, lang, pct=f"{knowledge.serving.evidence_max_failed_share:.0%}"))
    if r.notes:
        out.append(s("ev_notes", lang, notes=" ".join(_note(n, knowledge, lang) for n in r.notes)))
    return out


def _predictor(name: str, knowledge: Knowledge, lang: str) -> str:
    return knowledge.s("srv_predictor_ours", lang) if name == "serving-model" and \
        "srv_predictor_ours" in knowledge.strings else name


def evidence_text(c: EvidenceCheck, knowledge: Knowledge, lang: str) -> list[str]:
    head, body = rows(c, knowledge, lang)
    out = paragraphs(c, knowledge, lang)
    if body:
        out += ["  " + " | ".join(head)] + ["  " + " | ".join(r) for r in body]
    return out


def evidence_markdown(c: EvidenceCheck, knowledge: Knowledge, lang: str) -> str:
    head, body = rows(c, knowledge, lang)
    lines = [md_escape(p) + "\n" for p in paragraphs(c, knowledge, lang)]
    if body:
        lines += ["| " + " | ".join(md_escape(h) for h in head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(md_escape(x) for x in r) + " |" for r in body]
    return "\n".join(lines)


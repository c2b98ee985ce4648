"""The decision report: one Markdown source, rendered to PDF (Markdown → HTML → fpdf2 with a CJK font)."""
from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path

from advisor.answers import Answers
from advisor.hardware import Hardware
from advisor.knowledge import Knowledge
from advisor.recommendation import Recommendation
from advisor.verdict import revisit
from probes.result import ProbeResult

CJK_FONTS = [  # (path, index of the Simplified Chinese face in a collection)
    ("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc", 2),
    ("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc", 0),
    ("/System/Library/Fonts/PingFang.ttc", 0),
]


class ReportError(RuntimeError):
    pass


def _fmt(v, unit: str = "") -> str:
    if v is None:
        return "–"
    return f"{v:,.1f}{unit}" if isinstance(v, float) else f"{v}{unit}"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def build_markdown(answers: Answers, hardware: Hardware | None, rec: Recommendation, results: list[ProbeResult],
                   knowledge: Knowledge, lang: str = "en", images: dict[str, str] | None = None,
                   answers_file: str = "answers.yaml", probe_files: list[str] | None = None,
                   checks: list | None = None) -> str:
    """checks: advisor.planner.probe_check results (predicted vs measured) for local probes."""
    s = lambda key, **kw: knowledge.s(key, lang, **kw)  # noqa: E731
    images = images or {}
    out = [f"# {s('report_title')}", "",
           s("report_generated", when=dt.datetime.now().strftime("%Y-%m-%d %H:%M")), ""]
    # answers
    out += [f"## {s('report_answers')}", "", f"| # | {s('report_question')} | {s('report_answer')} |", "|---|---|---|"]
    for q in sorted(knowledge.checklist.questions, key=lambda q: q.number):
        value = getattr(answers, q.key)
        if q.kind == "hardware":
            shown = ("; ".join(f"{k}={v}" for k, v in value.model_dump(exclude_none=True).items())
                     if value else s("hardware_detected"))
        else:
            label = next((o.label.get(lang) for o in q.options if o.value == value), None)
            shown = label or str(value)
        out.append(f"| {q.number} | {_cell(q.question.get(lang))} | {_cell(shown)} |")
    m = answers.model
    out += ["", f"**{s('report_model')}:** " + ", ".join(f"{k}={v}" for k, v in m.model_dump(exclude_none=True).items()),
            ""]
    # hardware
    out += [f"## {s('hardware_title')}", ""]
    if answers.hardware is not None:
        out.append(f"{s('hardware_from_answers')}: " + ", ".join(
            f"{k}={v}" for k, v in answers.hardware.model_dump(exclude_none=True).items()))
    elif hardware is not None:
        gpus = ", ".join(f"{g.name} ({(g.memory_total_mb or 0) / 1024:.0f} GiB)" for g in hardware.gpus) or s("no_gpu")
        out += [f"- GPU: {gpus}", f"- CPU: {hardware.cpu.model}, {hardware.cpu.logical_cores} cores, "
                f"flags {' '.join(hardware.cpu.flags) or '–'}",
                f"- RAM: {hardware.ram_total_mb / 1024:.1f} GiB; OS: {hardware.os} {hardware.os_release}",
                "- " + s("engines_installed") + ": " + ", ".join(
                    f"{e.engine} {e.version}" if e.installed else f"{e.engine} ({s('not_installed')})"
                    for e in hardware.engines)]
    out.append("")
    # ranking
    out += [f"## {s('report_ranking')}", "", f"| # | {s('report_engine')} | {s('score')} |", "|---|---|---|"]
    out += [f"| {i} | {r.name} | {r.score:g} |" for i, r in enumerate(rec.ranking, 1)]
    out.append("")
    if "ranking" in images:
        out += [f"![ranking]({images['ranking']})", ""]
    out += [f"### {s('report_reasons')}", ""]
    for r in rec.ranking:
        out.append(f"**{r.name}** ({r.score:g})")
        out.append("")
        out += [f"- `{x.delta:+g}` {x.text} — *{x.rule}; {s('source')}: {x.source}*" for x in r.reasons]
        out.append("")
    if rec.excluded:
        out += [f"## {s('excluded_title')}", ""]
        for x in rec.excluded:
            out += [f"- **{x.name}**: " + " ".join(f"{y.text} (*{y.source}*)" for y in x.reasons)]
        out.append("")
    out += [f"## {s('flips_title')}", ""]
    out += [f"- {f.text}" for f in rec.flips] or [f"- {rec.flip_note}"]
    out.append("")
    if rec.plan is not None:
        from advisor.planner.render import plan_markdown

        out += [plan_markdown(rec.plan, knowledge, lang, checks, focus=rec.top.engine if rec.top else None)]
        for key in ("memory", "concurrency", "roofline"):
            if key in images:
                out += [f"![{key}]({images[key]})", ""]
    # measurements
    out += [f"## {s('report_measurements')}", ""]
    if not results:
        out += [s("report_no_measurements"), ""]
    else:
        out += ["| engine | status | TTFT p50/p95/p99 ms | ITL p50/p95 ms | decode tok/s | total tok/s | goodput | "
                "peak RSS MB | load s |", "|---|---|---|---|---|---|---|---|---|"]
        for r in results:
            out.append(f"| {r.engine} {r.engine_version or ''} | {r.status} | {_fmt(r.ttft_ms.p50)} / "
                       f"{_fmt(r.ttft_ms.p95)} / {_fmt(r.ttft_ms.p99)} | {_fmt(r.itl_ms.p50)} / {_fmt(r.itl_ms.p95)} | "
                       f"{_fmt(r.decode_tps_per_request.p50)} | {_fmt(r.output_tps_total)} | "
                       f"{'–' if r.goodput is None else f'{r.goodput:.0%}'} | {_fmt(r.peak_rss_mb)} | "
                       f"{_fmt(r.load_time_s)} |")
        out.append("")
        for r in results:
            detail = r.reason if r.status != "ok" else f"{r.serving}; {r.device}; {r.backend_settings}"
            out.append(f"- **{r.engine}**: {_cell(detail)}")
            out += [f"  - {n}" for n in r.notes]
        out.append("")
        for key in ("ttft", "itl", "throughput"):
            if key in images:
                out += [f"![{key}]({images[key]})", ""]
        v = revisit(rec, results, float(answers.ttft_p95_ms), lang)
        out += [f"## {s('report_verdict')}", "", f"**{v.summary}**", ""]
        out += [f"- {e.engine}: {e.text}" for e in v.engines if e.measured]
        out.append("")
    # caveats
    out += [f"## {s('report_caveats')}", "", f"- {s('report_caveat_scores')}", f"- {s('report_caveat_model')}",
            f"- {s('report_caveat_claims')}"]
    out += [f"- {n}" for r in results for n in r.notes if "busy" in n]
    out += ["", f"### {s('report_claims')}", ""]
    for c in knowledge.claims.claims:
        if c.verdict in ("impossible", "misleading", "optimistic"):
            out.append(f"- **{c.verdict}** — “{c.quote}” ({c.source}): {c.check.get(lang)}")
    out += ["", f"## {s('report_reproduce')}", "", "```",
            "python -m advisor report --answers " + answers_file
            + "".join(f" --probe {p}" for p in (probe_files or [])) + f" --lang {lang} --out report.pdf", "```", ""]
    return "\n".join(out)


def _font() -> tuple[str, int]:
    for path, index in CJK_FONTS:
        if Path(path).is_file():
            return path, index
    raise ReportError("no CJK font found for the PDF: apt-get install fonts-noto-cjk (or fonts-wqy-microhei)")


def markdown_to_pdf(md: str, image_files: dict[str, bytes] | None = None) -> bytes:
    """Render the Markdown report to PDF with an embedded CJK font. Images are passed as PNG bytes."""
    import markdown
    from fpdf import FPDF

    font, index = _font()
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in (image_files or {}).items():
            Path(tmp, name).write_bytes(data)
        body = markdown.markdown(md, extensions=["tables", "fenced_code"])
        body = body.replace('src="', f'src="{tmp}/')
        body = body.replace("<code>", "<font face=\"courier\">").replace("</code>", "</font>")
        body = body.replace("<img ", '<img width="480" ')
        pdf = FPDF(format="A4")
        pdf.set_auto_page_break(True, margin=15)
        for style in ("", "B", "I", "BI"):
            pdf.add_font("cjk", style=style, fname=font, collection_font_number=index)
        pdf.set_font("cjk", size=9)
        pdf.add_page()
        pdf.write_html(body, font_family="cjk", tag_styles=None)
        return bytes(pdf.output())


def chart_images(rec: Recommendation, results: list[ProbeResult], lang: str, checks: list | None = None,
                 names: dict[str, str] | None = None) -> tuple[dict[str, str], dict[str, bytes]]:
    """The report's charts as PNG: ({name: file name} for build_markdown, {file name: bytes} for the PDF).
    A chart that cannot be exported (no headless browser) is left out."""
    from advisor.charts import (concurrency_chart, latency_chart, memory_chart, ranking_chart, roofline_chart,
                                throughput_chart, to_png)

    ok = [r for r in results if r.status == "ok"]
    figs = {"ranking": ranking_chart(rec, lang)}
    if rec.plan is not None:
        names = names or {r.engine: r.name for r in [*rec.ranking, *rec.excluded]}
        figs.update(memory=memory_chart(rec.plan, names, lang), concurrency=concurrency_chart(rec.plan, names, lang),
                    roofline=roofline_chart(rec.plan, checks or [], names, lang))
    if ok:
        figs.update(ttft=latency_chart(ok, "ttft", lang), itl=latency_chart(ok, "itl", lang),
                    throughput=throughput_chart(ok, lang))
    images, files = {}, {}
    for name, fig in figs.items():
        png = to_png(fig)
        if png:
            images[name], files[f"{name}.png"] = f"{name}.png", png
    return images, files

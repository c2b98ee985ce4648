"""The decision report: one Markdown source, rendered to PDF (Markdown → HTML → fpdf2 with a CJK font).

Every user- or model-supplied string (model names and paths, GPU names, probe reasons, notes, settings) is escaped
before it enters the Markdown (md_escape), so it shows as text in the browser and in the PDF. The PDF reads no file
or URL: charts are handed over as bytes, and fpdf2's resource access policy is NONE.
"""
from __future__ import annotations

import datetime as dt
import html
import io
import re
import struct
from pathlib import Path
from typing import NamedTuple

from advisor.decide.recommendation import Recommendation
from advisor.evidence.verdict import busy_here, not_measured, revisit, target_device
from advisor.inputs.answers import Answers, ModelBlock, TargetHardware
from advisor.inputs.hardware import Hardware
from advisor.knowledge import age
from advisor.knowledge.load import Knowledge
from advisor.report.mdtext import cite, cite_reason, fold, md_escape, seed_lines
from probes.result import SERVER_NAMES, ProbeResult

CJK_FONTS = [  # (path, index of the Simplified Chinese face in a collection)
    ("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc", 2),
    ("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc", 0),
    ("/System/Library/Fonts/PingFang.ttc", 0),
]
VENDORS = {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel", "apple": "Apple"}


class ReportError(RuntimeError):
    pass


class ChartImage(NamedTuple):
    """A chart exported for the PDF: the file name the Markdown uses, and its axis titles as a caption (so the
    PDF's text layer says what the axes are, for search, screen readers and a test; a picture alone does not)."""

    file: str
    caption: str


def _fmt(v, unit: str = "", digits: int = 1) -> str:
    if v is None:
        return "–"
    return f"{v:,.{digits}f}{unit}" if isinstance(v, float) else f"{v}{unit}"


def _num(x: float) -> str:
    """A score or delta: at most one decimal, no trailing zeros."""
    return f"{round(x, 1):g}"


def _cell(text) -> str:
    """One Markdown table cell: escaped, on one line, folded (≤ 300 characters, no endless unbroken token)."""
    return md_escape(fold(" ".join(str(text).split())))


def _txt(text) -> str:
    """Inline user/model text outside a table."""
    return md_escape(fold(" ".join(str(text).split()), limit=2000, token=120))


def serving_label(r: ProbeResult, knowledge: Knowledge, lang: str) -> str | None:
    """How a run was served, in the reader's language: its serving mode, the server by the name it gave itself for
    an endpoint run, else the backend's own sentence (None when there is none)."""
    if r.serving_mode == "endpoint" and r.server_kind:
        server = SERVER_NAMES.get(r.server_kind, r.server_kind) + (f" {r.server_version}" if r.server_version else "")
        return knowledge.s("serving_mode_endpoint_known", lang, server=server)
    key = f"serving_mode_{r.serving_mode}"
    return knowledge.s(key, lang) if r.serving_mode and key in knowledge.strings else r.serving


def run_label(run_id: int | None, engine: str) -> str:
    """How a probe run is named everywhere (selector, tables, charts, verdict, report): "#12 llama.cpp"."""
    return engine if run_id is None else f"#{run_id} {engine}"


def run_labels(results: list[ProbeResult], run_ids: list[int] | None = None) -> list[str]:
    """run_label per run (history ids when given, else 1, 2, … in the given order)."""
    if run_ids is not None and len(run_ids) != len(results):
        raise ValueError(f"run_ids: {len(run_ids)} given for {len(results)} results")
    ids = run_ids if run_ids is not None else list(range(1, len(results) + 1))
    return [run_label(i, r.engine) for i, r in zip(ids, results)]


MAX_RUNS_SHOWN = 200  # runs with their own row and line in a report; the rest are summed up in one line
MAX_RUNS_CHARTED = 32  # runs drawn in the latency and throughput charts (the first measured ones shown)
MAX_NAMES_LISTED = 20  # run labels or engines named in one sentence before "N others"


def _charted(results: list[ProbeResult]) -> list[int]:
    """The indexes of the runs the charts draw: the first MAX_RUNS_CHARTED ok runs among those shown (200 boxes
    in one chart are unreadable, and each carries its requests' raw timestamps)."""
    return [i for i, r in enumerate(results[:MAX_RUNS_SHOWN]) if r.status == "ok"][:MAX_RUNS_CHARTED]


def _some(names: list[str], knowledge: Knowledge, lang: str) -> str:
    """Names in one sentence, the first MAX_NAMES_LISTED of them and then "N others"."""
    sep = knowledge.s("report_list_sep", lang)
    head = sep.join(names[:MAX_NAMES_LISTED])
    more = len(names) - MAX_NAMES_LISTED
    return head + (sep + knowledge.s("report_more_others", lang, n=f"{more:,}") if more > 0 else "")


def _capped(lines: list[str], knowledge: Knowledge, lang: str, cap: int = MAX_RUNS_SHOWN) -> list[str]:
    """A Markdown list of at most `cap` lines, then one saying how many more there are."""
    if len(lines) <= cap:
        return lines
    return lines[:cap] + ["", knowledge.s("report_more_lines", lang, n=f"{len(lines) - cap:,}")]


def _more_runs(labels: list[str], results: list[ProbeResult], knowledge: Knowledge, lang: str) -> str:
    """The runs past MAX_RUNS_SHOWN in one line: how many, of which engines and statuses, and their range of total
    output tok/s with the run at each end, so nothing measured is silently dropped."""
    s = lambda key, **kw: knowledge.s(key, lang, **kw)  # noqa: E731
    engines: dict[str, int] = {}
    statuses: dict[str, int] = {}
    for r in results:
        engines[r.engine] = engines.get(r.engine, 0) + 1
        statuses[r.status] = statuses.get(r.status, 0) + 1
    by_count = sorted(engines.items(), key=lambda kv: (-kv[1], kv[0]))
    engine_text = _some([f"{fold(e, limit=60)} ({c:,})" for e, c in by_count], knowledge, lang)
    status_text = s("report_list_sep").join(
        f"{c:,} {s(f'status_{st}') if f'status_{st}' in knowledge.strings else fold(st, limit=30)}"
        for st, c in sorted(statuses.items(), key=lambda kv: -kv[1]))
    tps = [(r.output_tps_total, lab) for lab, r in zip(labels, results)
           if r.status == "ok" and r.output_tps_total is not None]
    if tps:
        (worst, worst_run), (best, best_run) = min(tps, key=lambda x: x[0]), max(tps, key=lambda x: x[0])
        status_text += s("report_list_sep") + s("report_runs_more_range", worst=_fmt(worst), best=_fmt(best),
                                                worst_run=fold(worst_run, limit=60), best_run=fold(best_run, limit=60))
    return _txt(s("report_runs_more", n=f"{len(results):,}", cap=MAX_RUNS_SHOWN, engines=engine_text,
                  statuses=status_text))


def hardware_text(h: TargetHardware, knowledge: Knowledge, lang: str) -> str:
    """The answers' hardware block as a person writes it: "2 × NVIDIA L40S (48 GiB), 64 GB RAM, 16 CPU cores, linux"."""
    from advisor.planner.target import find_gpu

    s = lambda key, **kw: knowledge.s(key, lang, **kw)  # noqa: E731
    parts = []
    if h.gpu_vendor == "none" or not h.gpu_count:
        parts.append(s("no_gpu"))
    else:
        g = find_gpu(h.gpu_model, knowledge)
        vendor = VENDORS.get(h.gpu_vendor, h.gpu_vendor)
        name = g.name if g else (h.gpu_model or "")
        if not name.lower().startswith(vendor.lower()):
            name = f"{vendor} {name}".strip()
        mem = (f"{h.gpu_memory_gb:g} GB" if h.gpu_memory_gb else
               f"{g.memory_gb:g} {g.memory_unit}" if g and getattr(g, "memory_gb", None) else None)
        parts.append(f"{h.gpu_count} × {name}" + (f" ({mem})" if mem else ""))
    if h.ram_gb:
        parts.append(s("report_hw_ram", ram=f"{h.ram_gb:g}"))
    if h.cpu_cores:
        parts.append(s("report_hw_cores", n=h.cpu_cores))
    parts += [x for x in (h.cpu_arch, h.os) if x]
    return s("report_list_sep").join(parts)


def model_text(m: ModelBlock, knowledge: Knowledge, lang: str) -> str:
    """The answers' model block: "llama-3-8b — fp16, 4,096 tokens of context" (params only when no name/path)."""
    s = lambda key, **kw: knowledge.s(key, lang, **kw)  # noqa: E731
    if m.name:
        who = m.name
    elif m.path:
        who = s("report_model_file", path=m.path)
    else:
        who = s("report_model_generic", params=f"{m.params_b:g}")
    extra = [m.precision, s("report_model_ctx", ctx=f"{m.context_tokens:,}")]
    if m.architecture != "decoder-only":
        extra.append(m.architecture)
    if m.kv_cache_dtype != "auto":
        extra.append(s("ui_kv_cache_dtype") + " " + m.kv_cache_dtype.upper())
    if m.name and m.path:
        extra.append(s("report_model_file", path=m.path))
    return f"{who} — " + s("report_list_sep").join(extra)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(r) + " |" for r in rows] + [""])


def build_markdown(answers: Answers, hardware: Hardware | None, rec: Recommendation, results: list[ProbeResult],
                   knowledge: Knowledge, lang: str = "en", images: dict[str, ChartImage] | None = None,
                   answers_file: str = "answers.yaml", probe_files: list[str] | None = None,
                   checks: list | None = None, run_ids: list[int] | None = None, sweeps: list | None = None,
                   cores: int | None = None, sweep_files: list[str] | None = None,
                   sweep_checks: list | None = None, evidence: list | None = None) -> str:
    """checks: advisor.evidence.probe_check results (predicted vs measured) for local probes.
    sweep_checks: advisor.evidence.sweep_check results (the serving prediction beside each sweep), made at the edge.
    evidence: advisor.evidence.imported results (the user's GuideLLM/AIPerf/vllm bench/SGLang/llm-d files).
    run_ids: the history id of each result (same order): runs are labelled "#<id> <engine>" and the reproduce line
    names them probe-<id>.json (the Probe page's download names); without it runs are #1, #2, … and the reproduce
    line uses probe_files."""
    s = lambda key, **kw: knowledge.s(key, lang, **kw)  # noqa: E731
    images = images or {}
    labels = run_labels(results, run_ids)
    out = [f"# {s('report_title')}", "",
           s("report_generated", when=dt.datetime.now().strftime("%Y-%m-%d %H:%M")), "",
           _txt(age.as_of(knowledge).line(knowledge, lang)), ""]
    # answers
    out += [f"## {s('report_answers')}", ""]
    rows = []
    for q in sorted(knowledge.checklist.questions, key=lambda q: q.number):
        value = getattr(answers, q.key)
        if q.kind == "hardware":
            shown = hardware_text(value, knowledge, lang) if value else s("hardware_detected")
        else:
            label = next((o.label.get(lang) for o in q.options if o.value == value), None)
            shown = label or str(value)
        rows.append([str(q.number), _cell(q.question.get(lang)), _cell(shown)])
    out += _table(["#", s("report_question"), s("report_answer")], rows)
    out += [f"**{s('report_model')}{s('colon').strip()}** " + _txt(model_text(answers.model, knowledge, lang)), ""]
    # hardware
    out += [f"## {s('hardware_title')}", ""]
    if answers.hardware is not None:
        out.append(f"{s('hardware_from_answers')}{s('colon')}" + _txt(hardware_text(answers.hardware, knowledge, lang)))
    elif hardware is not None:
        gpus = ", ".join(f"{g.name} ({(g.memory_total_mb or 0) / 1024:.0f} GiB)" for g in hardware.gpus) or s("no_gpu")
        out += ["- GPU: " + _txt(gpus),
                "- " + _txt(s("report_hw_cpu", model=hardware.cpu.model, cores=hardware.cpu.logical_cores,
                                flags=" ".join(hardware.cpu.flags) or "–")),
                "- " + _txt(s("report_hw_ram_os", ram=f"{hardware.ram_total_mb / 1024:.1f}",
                                os=f"{hardware.os} {hardware.os_release}")),
                "- " + s("engines_installed") + ": " + _txt(", ".join(
                    f"{e.engine} {e.version}" if e.installed else f"{e.engine} ({s('not_installed')})"
                    for e in hardware.engines))]
    out.append("")
    # ranking
    out += [f"## {s('report_ranking')}", ""]
    none = rec.none_meets()
    if none:  # the headline the Recommendation page leads with: every engine is predicted to miss the target
        out += [f"> **{_txt(s('none_meets', best=none[0], target=f'{none[2]:,.0f}', one='—' if none[1] is None else f'{none[1]:,.0f}'))}**", ""]
    out += _table(["#", s("report_engine"), s("score")],
                  [[str(i), _cell(r.name), _num(r.score)] for i, r in enumerate(rec.ranking, 1)])
    out += _figure(images, "ranking")
    out += [f"### {s('report_reasons')}", ""]
    for r in rec.ranking:
        out += [f"**{_txt(r.name)}** ({_num(r.score)})", ""]
        out += [f"- `{round(x.delta, 1):+g}` {_txt(x.text)} — *{_txt(x.rule)}; {s('source')}{s('colon')}"
                f"{cite_reason(x, knowledge, lang)}*" for x in r.reasons]
        out.append("")
    if rec.excluded:
        out += [f"## {s('excluded_title')}", ""]
        for x in rec.excluded:
            out += [f"- **{_txt(x.name)}**{s('colon')}" + " ".join(f"{_txt(y.text)} (*{cite_reason(y, knowledge, lang)}*)"
                                                         for y in x.reasons)]
        out.append("")
    from advisor.report import support_table

    matrix = support_table.markdown(support_table.from_recommendation(rec, knowledge), knowledge, lang, coloured=False)
    if matrix:
        out += [f"## {s('sup_title')}", "", *matrix, "", s("sup_caption", date=support_table.read_date(knowledge)), ""]
    out += [f"## {s('flips_title')}", ""]
    out += ([f"- {_txt(rec.flip_note)}"] if rec.flip_note else []) + [f"- {_txt(f.text)}" for f in rec.flips]
    out.append("")
    if rec.plan is not None:
        from advisor.report.plan import plan_markdown

        out += [plan_markdown(rec.plan, knowledge, lang, checks, focus=rec.top.engine if rec.top else None)]
        for key in ("memory", "concurrency", "roofline"):
            out += _figure(images, key)
        from advisor.report.serving import serving_markdown

        out += [serving_markdown(rec.plan, knowledge, lang, excluded=rec.excluded_engines)]
        out += _figure(images, "serving")
    # measurements
    out += [f"## {s('report_measurements')}", ""]
    busy = [(lab, r) for lab, r in zip(labels, results) if busy_here(r)]
    shown = list(zip(labels, results))[:MAX_RUNS_SHOWN]  # the rest: one line (_more_runs)
    if not results:
        out += [s("report_no_measurements"), ""]
    else:
        rows = []
        for lab, r in shown:
            status = s(f"status_{r.status}") if f"status_{r.status}" in knowledge.strings else r.status
            bad = r.errors + r.requests_incomplete
            rows.append([_cell(lab), _cell(status),
                         f"{r.requests_ok} / {r.requests_incomplete} / {r.errors}" if r.requests_total else "–",
                         _cell(f"“{r.top_cause}”") if bad and r.top_cause else "",
                         f"{_fmt(r.ttft_ms.p50)} / {_fmt(r.ttft_ms.p95)} / {_fmt(r.ttft_ms.p99)}",
                         f"{_fmt(r.itl_ms.p50)} / {_fmt(r.itl_ms.p95)}", _fmt(r.decode_tps_per_request.p50),
                         _fmt(r.output_tps_total), "–" if r.goodput is None else f"{r.goodput:.0%}",
                         _fmt(r.peak_rss_mb, digits=0), _fmt(r.load_time_s)])
        out += _table(s("report_meas_cols").split("|"), rows)
        for lab, r in shown:
            version = f" {_txt(r.engine_version)}" if r.engine_version else ""
            if r.status != "ok":
                detail = not_measured(r, knowledge, lang)
            else:
                settings = ", ".join(f"{k}={v}" for k, v in r.backend_settings.items())
                serving = serving_label(r, knowledge, lang)
                detail = "; ".join(x for x in (serving, r.device, settings) if x)
            out.append(f"- **{_txt(lab)}**{version}{s('colon')}{_txt(detail)}")
            out += [f"    - {_txt(n)}" for n in dict.fromkeys(r.notes) if n != r.system_load.note]
        out.append("")
        if len(results) > MAX_RUNS_SHOWN:
            out += [_more_runs(labels[MAX_RUNS_SHOWN:], results[MAX_RUNS_SHOWN:], knowledge, lang), ""]
        counted = [(lab, r) for lab, r in busy if r.system_load.collapsed_roofline_pct is None]
        collapsed = [(lab, r) for lab, r in busy if r.system_load.collapsed_roofline_pct is not None]
        if counted:
            pct = max((r.system_load.other_processes_cpu_percent or 0) for _, r in counted)
            runs = _txt(_some([lab for lab, _ in counted], knowledge, lang))
            out += [f"> {s('report_busy', runs=runs, pct=f'{pct:.0f}')}", ""]
        if collapsed:  # the counters saw little, the run's own speed says otherwise (hold_collapsed)
            pct = max(r.system_load.collapsed_roofline_pct for _, r in collapsed)
            runs = _txt(_some([lab for lab, _ in collapsed], knowledge, lang))
            out += [f"> {s('report_collapsed', runs=runs, pct=f'{pct:g}')}", ""]
        for key in ("ttft", "itl", "throughput"):
            out += _figure(images, key)
        n_ok, n_drawn = sum(r.status == "ok" for r in results), len(_charted(results))
        if n_drawn < n_ok and any(k in images for k in ("ttft", "itl", "throughput")):
            out += [f"*{s('report_charts_capped', n=n_drawn, total=f'{n_ok:,}')}*", ""]
    cap = None
    if sweeps:
        from advisor.evidence.capacity_check import check_capacity

        from advisor.inputs import answers_id

        cap = check_capacity(sweeps, answers.concurrency, rec.top.engine if rec.top else None, knowledge, lang,
                             cores=cores, gpu_price=answers.gpu_usd_per_hour, core_price=answers.cpu_core_usd_per_hour,
                             target=target_device(answers, hardware, knowledge, lang),
                             target_ms=float(answers.ttft_p95_ms), answers_id=answers_id(answers))
    if results:
        v = revisit(rec, results, float(answers.ttft_p95_ms), lang, labels=labels,
                    target=target_device(answers, hardware, knowledge, lang), knowledge=knowledge)
        out += [f"## {s('report_verdict')}", ""]
        if cap is None:
            out += [f"**{_txt(v.summary)}**", ""]
            out += _capped([f"- {_txt(e.engine)}{s('colon')}{_txt(e.text)}" for e in v.engines
                            if e.measured or e.failed], knowledge, lang)
        else:  # probe runs and sweeps: one conclusion per engine (advisor.evidence.conclusion's rule)
            from advisor.evidence.conclusion import reconcile

            c = reconcile(v, cap, sweeps, answers.concurrency, rec.top.engine if rec.top else None, knowledge, lang,
                          ranked=[r.engine for r in rec.ranking])
            out += [f"**{_txt(c.summary)}**", ""]
            out += _capped([f"- **{_txt(e.name)}**{s('colon')}{_txt(e.text)}"
                            + "".join(f"\n    - {_txt(x)}" for x in e.cited) for e in c.engines], knowledge, lang)
        out.append("")
    # caveats
    if cap is not None:
        v = cap
        lead = (s("concl_see_verdict", title=s("report_verdict")) if results else f"**{_txt(v.summary)}**")
        out += ["", f"## {s('cap_title')}", "", lead, ""]
        out += _capped([f"- {_txt(line)}" for line in v.lines], knowledge, lang) + [""]
        ran = [sw for sw in sweeps[:MAX_RUNS_SHOWN] if getattr(sw, "deployed", None) is not None]
        if ran:  # a sweep of a server started from its deployment bundle: the exact command beside its figures
            from advisor.report.deploy import deployed_markdown

            for sw in ran:
                name = knowledge.engines[sw.engine].name if sw.engine in knowledge.engines else sw.engine
                out += deployed_markdown(name, sw.deployed, knowledge, lang)
        r1 = lambda x: "—" if x is None else f"{x:,.1f}"  # noqa: E731
        out += _table(s("cap_cols").split("|"), [
            [_cell(r.name), "—" if r.capacity is None else str(r.capacity), str(answers.concurrency),
             r1(r.ttft_p95_ms), r1(r.output_tps), "—" if r.usd_per_m_tokens is None else f"${r.usd_per_m_tokens:,.3f}",
             "—" if r.plan_max_concurrency is None else str(r.plan_max_concurrency), _cell(r.stop_reason or "")]
            for r in v.rows[:MAX_RUNS_SHOWN]])
        if len(v.rows) > MAX_RUNS_SHOWN:
            out += [s("report_more_lines", n=f"{len(v.rows) - MAX_RUNS_SHOWN:,}"), ""]
        out += ["", s("ui_sweep_cost_note"), ""]
        if sweep_checks:
            from advisor.report.sweep_check import check_markdown

            out += [f"### {s('svc_title')}", ""]
            for c in sweep_checks[:MAX_RUNS_SHOWN]:
                out += [check_markdown(c, knowledge, lang), ""]
        for key in ("sweep_ttft", "sweep_goodput", "sweep_tps"):
            out += _figure(images, key)
        from advisor.report.charts import MAX_LEVELS_CHARTED, MAX_SWEEPS_CHARTED

        many_levels = any(sum(x.status == "ok" for x in sw.levels) > MAX_LEVELS_CHARTED for sw in sweeps)
        if any(k in images for k in ("sweep_ttft", "sweep_goodput", "sweep_tps")) and (
                len(sweeps) > MAX_SWEEPS_CHARTED or many_levels):
            note = (s("report_sweeps_capped", n=MAX_SWEEPS_CHARTED, total=len(sweeps), levels=MAX_LEVELS_CHARTED)
                    if len(sweeps) > MAX_SWEEPS_CHARTED else s("report_sweep_levels_capped", levels=MAX_LEVELS_CHARTED))
            out += [f"*{note}*", ""]
    if evidence:
        from advisor.report.evidence import evidence_markdown

        out += [f"## {s('ev_section')}", ""]
        for c in evidence[:MAX_RUNS_SHOWN]:
            out += [evidence_markdown(c, knowledge, lang), ""]
    out += [f"## {s('report_caveats')}", "", f"- {s('report_caveat_scores')}", f"- {s('report_caveat_model')}",
            f"- {s('report_caveat_claims')}"]
    out += ["", f"### {s('report_claims')}", ""]
    for c in knowledge.claims.claims:
        if c.verdict in ("impossible", "misleading", "optimistic", "outdated"):
            out.append(f"- **{s('claim_verdict_' + c.verdict)}** — “{_txt(c.quote)}” "
                       f"({cite(c.source, knowledge, lang)}): {_txt(c.check.get(lang))}"
                       + (f" ({cite(c.evidence, knowledge, lang)})" if c.evidence else ""))
    out += ["", s("cite_seeds_intro"), ""]
    out += [f"- {line}" for line in seed_lines(knowledge, lang)]
    from advisor.report.deploy import appendix_markdown

    appendix = appendix_markdown(rec, answers, knowledge, lang, hardware)
    if appendix:
        out += ["", *appendix]
    files = (list(probe_files) if probe_files is not None else
             [f"probe-{i}.json" for i in run_ids] if run_ids is not None else [])
    sweep_names = list(sweep_files) if sweep_files is not None else [f"sweep-{i}.json" for i in range(1, len(sweeps or []) + 1)]
    cmd = ("python -m advisor report --answers " + _shell(answers_file) + _probe_words(files)
           + "".join(f" --sweep {_shell(p)}" for p in sweep_names) + f" --lang {lang} --out report.pdf")
    out += ["", f"## {s('report_reproduce')}", "", "```", cmd.replace("`", "'"), "```", ""]
    if files or sweep_names:  # the same runs in the field's format (the reproduce bundle holds them under llmd/)
        out += [s("report_llmd", files=", ".join(f"llmd/{Path(f).stem}.yaml" for f in [*files, *sweep_names])[:2000]),
                ""]
    return "\n".join(out)


_NUMBERED = re.compile(r"^(.*?)([1-9]\d{0,8})(\D*)$")


def _probe_words(files: list[str]) -> str:
    """The reproduce line's --probe words. Past MAX_RUNS_SHOWN files (10,000 names made 100 pages of PDF), a run of
    consecutively numbered names (probe-1.json … probe-9000.json, as the app names its downloads) is one brace
    range, --probe=probe-{1..9000}.json, which bash and zsh expand to the same words."""
    if len(files) <= MAX_RUNS_SHOWN:
        return "".join(f" --probe {_shell(p)}" for p in files)
    out, i = [], 0
    while i < len(files):
        m, j = _NUMBERED.match(str(files[i])), i + 1
        if m:
            pre, first, post = m.group(1), int(m.group(2)), m.group(3)
            while j < len(files) and files[j] == f"{pre}{first + j - i}{post}":
                j += 1
        if j - i >= 3:
            out.append(f" --probe={_shell(pre)}{{{first}..{first + j - i - 1}}}{_shell(post) if post else ''}")
        else:
            out += [f" --probe {_shell(p)}" for p in files[i:j]]
        i = j
    return "".join(out)


def _shell(word: str) -> str:
    """A file name for the reproduce line: shell-quoted, on one line (a newline could close the code fence)."""
    import shlex

    return shlex.quote(re.sub(r"[\x00-\x1f\x7f-\x9f]", "?", fold(str(word), limit=300, token=10_000)))


def _font() -> tuple[str, int]:
    for path, index in CJK_FONTS:
        if Path(path).is_file():
            return path, index
    raise ReportError("no CJK font found for the PDF: apt-get install fonts-noto-cjk (or fonts-wqy-microhei)")


def _png_size(data: bytes) -> tuple[int, int] | None:
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", data[16:24])


_TAG = re.compile(r"<[^>]+>")
_BLOCKS = re.compile(r"<table>(.*?)</table>|<p>\s*(<img\b[^>]*>)\s*</p>", re.S | re.I)
_IMG = re.compile(r"<img\b[^>]*>", re.I)
_SRC = re.compile(r"""\bsrc\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.I)
_ROW = re.compile(r"<tr>(.*?)</tr>", re.S | re.I)
_CELL = re.compile(r"<(t[hd])(?:\s[^>]*)?>(.*?)</t[hd]>", re.S | re.I)
_NUMERIC = re.compile(r"^[\s\d.,/%+\-–—≤≥×]+$")
_CJK = "\u2e80-\u9fff"  # CJK radicals, punctuation, kana and ideographs (U+3000 marks included)
_HAS_CJK = re.compile(f"[{_CJK}]")
# the units a column must hold whole: two CJK characters, or a run of any other non-space text (fpdf2 breaks Chinese
# between any two characters: a header "个用户所需集群" held whole took the width the prediction's label needed; two
# at a time keep a two-character word such as "运行" on one line; full-width brackets stay with what they enclose, so
# a capacity "13（8–35）" is not broken inside its range)
_UNITS = re.compile(f"[{_CJK}]{{1,2}}|[^\\s{_CJK}]+")
CJK_LINE_HEIGHT = 1.3  # a paragraph's or list's line height in a section that holds Chinese
_CJK_CHAR = re.compile(f"[{_CJK}\uf900-\ufaff\uff00-\uffef]")  # and compatibility ideographs, full-width forms
_OPENING = re.compile("[（「『【〈《]")  # a line does not end on an opening bracket
_SPACED = re.compile(r"<(p|ul|ol)>")  # (after the tables and images are split out: a placed image is <p><img></p>)

TABLE_PT, BODY_PT, CELL_PAD_MM = 7.5, 9.5, 2.4
PRE_PT = 7.5  # code blocks (the reproduce line, the deployment files): ~110 columns on an A4 page
H_PAD_MM = 1.0  # a cell's padding on each side (the table's padding=(0.6, H_PAD_MM))
CAPTION_MM = 10  # room kept under a chart for its one-line caption
KEEP_WITH_HEADING_MM = 35  # a heading starts a new page when less than this is left below it

# Invisible format characters (zero-width space, non-joiner and joiner, word joiner, byte-order mark, direction
# marks and overrides: Unicode's Cf class but the soft hyphen, which fpdf2 breaks at): no font of the PDF has a
# glyph for them, so each drew a 1-em "missing glyph" box and was measured as one
_FORMAT_CHARS = re.compile("[\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
                           "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
                           "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
                           "\U000e0020-\U000e007f]")
# Generic combining marks (accents, Zalgo's stacks): at most two on one character; a stack of 500 drew nothing
# readable and each one the font lacks drew a missing-glyph box. Scripts' own marks (Devanagari, Arabic…) are
# outside these blocks and untouched.
_MARK_STACK = re.compile("([\u0300-\u036f\u0483-\u0489\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff"
                         "\ufe20-\ufe2f]{2})[\u0300-\u036f\u0483-\u0489\u1ab0-\u1aff\u1dc0-\u1dff"
                         "\u20d0-\u20ff\ufe20-\ufe2f]+")


def pdf_text(text: str) -> str:
    """Text as the PDF draws it: no invisible format characters (fold()'s zero-width spaces among them: fpdf2
    breaks long words itself) and no stack of more than two combining marks."""
    return _MARK_STACK.sub(r"\1", _FORMAT_CHARS.sub("", text))


def _table_rows(inner: str) -> list[list[tuple[str, str, str | None]]]:
    """A Markdown-made HTML table as rows of (th|td, plain text, link): inline tags dropped (fpdf2 raises on nested
    tags in a cell), entities decoded, each cell folded to ≤ 300 characters."""
    rows = []
    for r in _ROW.finditer(inner):
        cells = [(tag.lower(), pdf_text(fold(" ".join(pdf_text(html.unescape(_TAG.sub("", text))).split()))),
                  _cell_link(text)) for tag, text in _CELL.findall(r.group(1))]
        if cells:
            rows.append(cells)
    n = max((len(r) for r in rows), default=0)
    return [r + [("td", "", None)] * (n - len(r)) for r in rows]


_HREF = re.compile(r'<a href="(https://[^"\s]+)"')


def _cell_link(cell_html: str) -> str | None:
    """The https link of a cell that is one link (the support table's sources), kept as a PDF link annotation.
    Only our Markdown makes links: user and model text is escaped before it reaches the HTML."""
    m = _HREF.search(cell_html)
    return html.unescape(m.group(1)) if m else None


def _status_fills() -> dict[str, tuple[int, int, int]]:
    """A support-matrix cell ("supported", "不支持 (GGUF)", …) is filled with its status colour, in both languages."""
    from advisor.knowledge.load import load_knowledge
    from advisor.report.support_table import FILLS

    k = load_knowledge()
    return {k.s(f"sup_status_{st}", lang): rgb for st, rgb in FILLS.items() for lang in ("en", "zh")}


def _render_table(pdf, rows: list[list[tuple[str, str, str | None]]], family: str) -> None:
    """fpdf2's HTML tables give every column the same width (so "TensorRT-LLM" breaks mid-word) and justify the
    text. Here: every column at least as wide as its longest word, the rest of the page shared by how much text a
    column has, left-aligned text and right-aligned numbers; the header row repeats on a new page."""
    from fpdf import FontFace

    if not rows:
        return
    n = len(rows[0])
    numeric = [all(not t or _NUMERIC.match(t) for tag, t, _ in (r[j] for r in rows) if tag == "td") for j in range(n)]
    pdf.set_font(family, style="B", size=TABLE_PT)
    glyph: dict[str, float] = {}
    need, want, floor = [], [], []
    for j in range(n):
        texts = [r[j][1] for r in rows]
        words = [pdf.get_string_width(w) for t in texts for w in _UNITS.findall(t)] or [0]
        need.append(min(max(words), 40.0) + CELL_PAD_MM)
        want.append(max(pdf.get_string_width(t) for t in texts) + CELL_PAD_MM)
        for ch in {ch for t in texts for ch in t} - glyph.keys():
            glyph[ch] = pdf.get_string_width(ch)
        # never narrower than its widest character and the padding: fpdf2 cannot place a character in less
        # ("Not enough horizontal space to render a single character", a column of marks that measure 0 mm
        # shrunk below its padding)
        floor.append(max((glyph[ch] for t in texts for ch in set(t)), default=0.0) + CELL_PAD_MM)
    widths = _column_widths(need, want, floor, pdf.epw)
    heading = all(tag == "th" for tag, _, _ in rows[0])
    pdf.set_font(family, size=TABLE_PT)
    pdf.ln(1)
    with pdf.table(width=min(sum(widths), pdf.epw), col_widths=widths, align="LEFT", line_height=pdf.font_size * 1.35,
                   padding=(0.6, H_PAD_MM), text_align=tuple("RIGHT" if x else "LEFT" for x in numeric),
                   first_row_as_headings=heading, num_heading_rows=1 if heading else 0, repeat_headings=1,
                   headings_style=FontFace(emphasis="BOLD", fill_color=(236, 239, 242)),
                   borders_layout="ALL", v_align="TOP") as table:
        fills = _status_fills()
        for i, r in enumerate(rows):
            row = table.row()
            for j, (_, text, link) in enumerate(r):
                fill = fills.get(text.split(" (")[0]) if i or not heading else None
                row.cell(text, align="LEFT" if i == 0 and heading else None,
                         style=FontFace(fill_color=fill) if fill else None, link=link)
    pdf.ln(3)


def _column_widths(need: list[float], want: list[float], floor: list[float], epw: float) -> list[float]:
    """Column widths in mm that fit the page: each column its text's width when all fit on one line, else every
    word whole with the rest shared by how much text a column has, else shrunk by its words' share, but never below
    its floor (widest character and padding), never above the page, and the sum at most the page width (fpdf2
    refuses a table a hair wider than the page)."""
    n = len(need)
    floor = [min(f, epw / n) for f in floor]  # more columns than the page holds at their floors: equal shares
    need = [max(m, f) for m, f in zip(need, floor)]
    want = [max(w, m) for w, m in zip(want, need)]
    if sum(want) <= epw:  # everything on one line: as wide as the text, not stretched over the page
        widths = want
    elif sum(need) <= epw:  # every word whole; the rest of the width goes where the text is
        spare = [w - m for w, m in zip(want, need)]
        widths = [m + (epw - sum(need)) * sp / (sum(spare) or 1) for m, sp in zip(need, spare)]
    else:  # every column shrunk by the same factor; one that falls below its floor is held there, the others pay
        widths = [m * epw / sum(need) for m in need]
        for _ in range(n):
            low = [w < f for w, f in zip(widths, floor)]
            if not any(low):
                break
            rest = sum(w for w, lo in zip(widths, low) if not lo)
            scale = max(epw - sum(f for f, lo in zip(floor, low) if lo), 0.0) / rest if rest else 0.0
            widths = [f if lo else w * scale for w, f, lo in zip(widths, floor, low)]
    widths = [min(max(w, f), epw) for w, f in zip(widths, floor)]
    total = sum(widths)
    if total > epw:  # float sums land a hair over the page width
        widths = [w * epw / total for w in widths]
    while sum(widths) > epw:
        widths = [w * (1 - 1e-9) for w in widths]
    return widths


def _break_between_cjk() -> None:
    """Chinese may break between any two characters; fpdf2 (2.8.9) breaks lines only where it recorded a break
    opportunity, at a space or a soft hyphen, so a run of Chinese after an English word went whole to the next line
    ("依据在该 / GPU、该引擎上实测的…" left half a line empty) and a run with no space was cut wherever it overflowed,
    inside an English word too ("仅支持N / VIDIA"). Here fpdf2's own line class also records an opportunity after each
    Chinese character (not after an opening bracket), as it does at a space but keeping the character: the line then
    breaks at the last space or Chinese character before the overflow, so English words stay whole. Set once; if that
    class changes shape, fpdf2 is left as it is."""
    from fpdf import line_break

    cls, hint = getattr(line_break, "CurrentLine", None), getattr(line_break, "SpaceHint", None)
    add = getattr(cls, "add_character", None)
    if add is None or hint is None or getattr(add, "cjk", False):
        return

    def add_character(self, character, character_width, original_fragment, original_fragment_index,
                      original_character_index, height, url=None):
        add(self, character, character_width, original_fragment, original_fragment_index, original_character_index,
            height, url)
        if isinstance(character, str) and _CJK_CHAR.match(character) and not _OPENING.match(character) \
                and self.fragments:  # resumed after this character, which stays on the line (a space is dropped)
            self.space_break_hint = hint(original_fragment_index, original_character_index, len(self.fragments),
                                         len(self.fragments[-1].characters), self.width, self.number_of_spaces)

    add_character.cjk = True
    cls.add_character = add_character


def markdown_to_pdf(md: str, image_files: dict[str, bytes] | None = None) -> bytes:
    """Render the Markdown report to PDF with an embedded CJK font. Images are passed as PNG bytes, keyed by the
    file name the Markdown uses; any other <img> is dropped and fpdf2 may read no file or URL.
    Raises ReportError (one line) when the PDF cannot be made."""
    import markdown
    from fpdf import FPDF, FontFace, TextStyle
    from fpdf.enums import ResourceAccessPolicy

    font, index = _font()
    _break_between_cjk()
    images = {name: data for name, data in (image_files or {}).items() if _png_size(data)}
    try:
        # fpdf2 breaks long words itself, and has no glyph for the zero-width spaces fold() puts in them
        body = markdown.markdown(pdf_text(md), extensions=["tables", "fenced_code"])
        pdf = FPDF(format="A4")
        pdf.resource_access_policy = ResourceAccessPolicy.NONE  # nothing is read but the bytes we hand over
        pdf.set_auto_page_break(True, margin=15)
        pdf.set_margins(15, 15, 15)
        bold = font.replace("-Regular.", "-Bold.")
        bold = bold if bold != font and Path(bold).is_file() else font
        # regular and bold only: nothing the report writes asks for italics (em/i below are a colour), and each face
        # registered is parsed and subset again for every document (about 0.15 s each for the CJK collection)
        for style in ("", "B"):
            pdf.add_font("cjk", style=style, fname=bold if "B" in style else font, collection_font_number=index)
        mono = _mono_font()
        if mono:
            pdf.add_font("mono", fname=mono[0], collection_font_number=mono[1])
            for style, suffix in (("B", "-Bold"),):
                face = mono[0].replace(".ttf", f"{suffix}.ttf")  # code in bold text (**`launch.sh`**) is monoB
                pdf.add_font("mono", style=style, fname=face if Path(face).is_file() else mono[0],
                             collection_font_number=mono[1])
        pdf.set_fallback_fonts(["cjk"])  # a glyph the monospace font lacks (a Chinese path) comes from the CJK one
        code = "mono" if mono else "cjk"  # never a core font: they are Latin-1 only
        styles = {"code": FontFace(family=code, color="#7a2e0e"),
                  "pre": TextStyle(font_family=code, font_size_pt=PRE_PT, t_margin=3, b_margin=3),
                  # no synthetic italic: it would be the regular face again under the same subset name, and PDF
                  # readers mix up the two (copied text turns to wrong characters)
                  "em": FontFace(color="#555555"), "i": FontFace(color="#555555")}
        pdf.set_font(code, size=PRE_PT)
        body = wrap_pre(body, int(pdf.epw / (pdf.get_string_width("0" * 100) / 100)) - 1)
        title = next((html.unescape(_TAG.sub("", h)) for h in re.findall(r"<h1>(.*?)</h1>", body, re.S)), None)
        if title:
            pdf.set_title(title)  # document metadata only; the page shows the <h1> once
        pdf.set_creator("inference-engine selection advisor")
        pdf.set_font("cjk", size=BODY_PT)
        pdf.add_page()
        # tables and charts are placed by us (sizes known, the cursor moved below them); any other <img> (inline,
        # in a cell, or pointing anywhere else) is dropped
        pos = 0
        for m in [*_BLOCKS.finditer(body), None]:
            chunk = _IMG.sub("", body[pos:m.start() if m else len(body)])
            for piece in re.split(r"(?=<h[1-6]>)", chunk):
                if not piece.strip():
                    continue
                if piece.startswith("<h") and pdf.get_y() + KEEP_WITH_HEADING_MM > pdf.page_break_trigger:
                    pdf.add_page()  # no heading alone at the foot of a page
                pdf.set_font("cjk", size=BODY_PT)
                if _HAS_CJK.search(piece):  # Chinese fills its em box: at fpdf2's line height (1.0) a wrapped
                    # line's characters all but touch the next line's; the Latin faces' own leading spares English
                    piece = _SPACED.sub(rf'<\1 line-height="{CJK_LINE_HEIGHT}">', piece)
                pdf.write_html(piece, font_family="cjk", tag_styles=styles)
            if m is None:
                break
            pos = m.end()
            if m.group(1) is not None:
                _render_table(pdf, _table_rows(m.group(1)), "cjk")
            else:
                src = _SRC.search(m.group(2))
                name = next((g for g in src.groups() if g), "") if src else ""
                if name in images:
                    _place_image(pdf, images[name])
        return bytes(pdf.output())
    except ReportError:
        raise
    except Exception as err:  # fpdf2 raises many kinds (FPDFException, NotImplementedError, ValueError…)
        cause = " ".join(str(err).split())[:300] or type(err).__name__
        raise ReportError(f"the PDF could not be rendered: {type(err).__name__}: {cause}") from err


_PRE = re.compile(r"(<pre>(?:<code[^>]*>)?)(.*?)((?:</code>)?</pre>)", re.S | re.I)
WRAP_MARK = "↪ "  # starts a line that a code block's line was wrapped onto (the file itself has no such break)


def _cols(text: str) -> int:
    """How many monospace columns text takes: a wide (CJK) character drawn from the CJK font takes two."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def wrap_line(line: str, cols: int) -> list[str]:
    """One line of a code block cut to at most `cols` columns: at the last space that leaves a fair piece, else
    anywhere (a long path, a Chinese comment); each continuation keeps the line's indent and starts with WRAP_MARK."""
    cols = max(cols, 20)
    if _cols(line) <= cols:
        return [line]
    indent = " " * min(len(line) - len(line.lstrip(" ")), cols // 2)
    out, rest, prefix = [], line, ""
    while _cols(prefix + rest) > cols:
        room = cols - _cols(prefix)
        n, used = 0, 0
        while n < len(rest) and used + _cols(rest[n]) <= room:
            used += _cols(rest[n])
            n += 1
        cut = rest.rfind(" ", 0, n + 1)
        if cut <= len(rest) - len(rest.lstrip(" ")) or cut < n // 2:  # no space in the second half: cut anywhere
            cut = max(n, 1)
        out.append(prefix + rest[:cut].rstrip(" "))
        rest = rest[cut:].lstrip(" ")
        prefix = indent + WRAP_MARK
    return out + [prefix + rest]


def wrap_pre(body: str, cols: int) -> str:
    """Every <pre> block of the HTML with its lines cut to `cols` columns (fpdf2 would wrap them itself, at the
    left margin, so a wrapped line of a YAML file read as a new one)."""
    def one(m: re.Match) -> str:
        text = html.unescape(m.group(2))
        lines = [piece for line in text.split("\n") for piece in wrap_line(line, cols)]
        return m.group(1) + html.escape("\n".join(lines), quote=False) + m.group(3)

    return _PRE.sub(one, body)


def _mono_font() -> tuple[str, int] | None:
    for path, index in (("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf", 0),):
        if Path(path).is_file():
            return path, index
    return None


def _place_image(pdf, data: bytes) -> None:
    w_px, h_px = _png_size(data)
    w = min(pdf.epw, 180.0)
    h = w * h_px / w_px
    if h > pdf.eph:
        h = pdf.eph
        w = h * w_px / h_px
    if pdf.get_y() + h + CAPTION_MM > pdf.page_break_trigger:  # the caption under it stays on its page
        pdf.add_page()
    y = pdf.get_y() + 4  # clear of the caption above (the chart's own title is at the top of the picture)
    from PIL import Image

    img = Image.open(io.BytesIO(data))
    if img.mode in ("RGBA", "LA", "P"):  # charts are on white: flatten (a soft mask greys them in some viewers)
        flat = Image.new("RGB", img.size, "white")
        flat.paste(img.convert("RGBA"), mask=img.convert("RGBA").getchannel("A"))
        img = flat
    pdf.image(img, x=pdf.l_margin + (pdf.epw - w) / 2, y=y, w=w, h=h)
    pdf.set_xy(pdf.l_margin, y + h + 4)


def chart_figures(rec: Recommendation, results: list[ProbeResult], lang: str, checks: list | None = None,
                  names: dict[str, str] | None = None, run_ids: list[int] | None = None, sweeps: list | None = None,
                  ttft_target_ms: float | None = None) -> dict:
    """The report's charts as Plotly figures, by name (the same figures the browser shows)."""
    from advisor.report.charts import (concurrency_chart, latency_chart, memory_chart, ranking_chart, roofline_chart,
                                       serving_chart, throughput_chart)

    labels = run_labels(results, run_ids)
    ok = [(results[i], labels[i]) for i in _charted(results)]
    figs = {"ranking": ranking_chart(rec, lang)}
    if rec.plan is not None:
        names = names or {r.engine: r.name for r in [*rec.ranking, *rec.excluded]}
        figs.update(memory=memory_chart(rec.plan, names, lang), concurrency=concurrency_chart(rec.plan, names, lang),
                    roofline=roofline_chart(rec.plan, checks or [], names, lang))
        from advisor.report.serving import predicted

        if predicted(rec.plan):
            figs["serving"] = serving_chart(rec.plan, names, lang)
    if ok:
        rs, labs = [r for r, _ in ok], [lab for _, lab in ok]
        figs.update(ttft=latency_chart(rs, "ttft", lang, labels=labs), itl=latency_chart(rs, "itl", lang, labels=labs),
                    throughput=throughput_chart(rs, lang, labels=labs))
    if sweeps:
        from advisor.report.charts import sweep_charts

        names = names or {r.engine: r.name for r in [*rec.ranking, *rec.excluded]}
        sw = sweep_charts(sweeps, ttft_target_ms, sweeps[0].goodput_share, lang, names)
        figs.update({f"sweep_{k}": f for k, f in sw.items()})
    return figs


def chart_images(rec: Recommendation, results: list[ProbeResult], lang: str, checks: list | None = None,
                 names: dict[str, str] | None = None, run_ids: list[int] | None = None, sweeps: list | None = None,
                 ttft_target_ms: float | None = None) -> tuple[dict[str, ChartImage], dict[str, bytes]]:
    """The report's charts as PNG: ({name: ChartImage} for build_markdown, {file name: bytes} for the PDF).
    A chart that cannot be exported (no headless browser) is left out. run_ids: as for build_markdown."""
    from advisor.knowledge.load import load_knowledge
    from advisor.report.charts import axis_titles, to_pngs

    k = load_knowledge()
    images, files = {}, {}
    figs = chart_figures(rec, results, lang, checks, names, run_ids, sweeps, ttft_target_ms)
    pngs = to_pngs(figs)  # one browser for all of them
    for name, fig in figs.items():
        png = pngs.get(name)
        if png:
            x, y = (_TAG.sub(" ", t).strip() for t in axis_titles(fig))
            images[name] = ChartImage(f"{name}.png", k.s("chart_caption", lang, x=x or "–", y=y or "–"))
            files[f"{name}.png"] = png
    return images, files


def _figure(images: dict[str, ChartImage], key: str) -> list[str]:
    """A chart and, under it, its axis titles."""
    if key not in images:
        return []
    return [f"![{key}]({images[key].file})", "", f"*{_txt(images[key].caption)}*", ""]

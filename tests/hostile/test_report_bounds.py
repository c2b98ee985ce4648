"""Reports of hostile sizes: thousands of runs, a 63 MB sweep file, 178,000 levels, names made of zero-width and
combining characters. A report lists the first 200 runs and sums up the rest in one line, its charts draw a bounded
sample and say so, the sweep file is read without the per-request arrays no report draws, and the PDF's table
columns fit the page and every character in them.

The CLI cases run without a headless browser (BROWSER_PATH points nowhere, so no chart is exported): what is
bounded here is ours, not Chrome's start-up time."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from advisor.decide.rules import recommend
from advisor.inputs.answers import load_answers
from advisor.knowledge.load import load_knowledge
from advisor.report import charts
from advisor.report.document import (MAX_RUNS_CHARTED, MAX_RUNS_SHOWN, ChartImage, _column_widths, _font,
                                     _render_table, build_markdown, chart_figures)
from probes.result import Percentiles, ProbeResult, RequestRecord, SystemLoad
from probes.sweep_result import SweepLevel, SweepResult
from tests.hostile.kit import ROOT, bounded

K = load_knowledge()
ANSWERS = ROOT / "examples" / "startup-chat-api.yaml"
NO_BROWSER = {"BROWSER_PATH": "/nonexistent/chrome"}
ENGINES = ["vllm", "llama.cpp", "endpoint", "sglang"]


def _run(i: int, n_req: int = 8, n_tok: int = 32) -> ProbeResult:
    """Run i: ok but every seventh (an error), output tok/s 60 + i % 97, every thirteenth on a busy machine."""
    ok = i % 7 != 0
    reqs = [RequestRecord(index=k, prompt_tokens=100, output_tokens=n_tok, submitted_s=k * 0.1,
                          first_token_s=k * 0.1 + 0.2, finished_s=k * 0.1 + 1.2,
                          token_times_s=[k * 0.1 + 0.2 + j * 0.03 for j in range(n_tok)]) for k in range(n_req)]
    return ProbeResult(engine=ENGINES[i % len(ENGINES)], status="ok" if ok else "error",
                       reason=None if ok else "HTTP 500", serving="test", device="cpu",
                       ttft_ms=Percentiles(p50=200, p95=250, p99=300), itl_ms=Percentiles(p50=30, p95=31),
                       output_tps_total=60.0 + i % 97 if ok else None, goodput=1.0 if ok else None,
                       requests=reqs if ok else [], requests_total=n_req, requests_ok=n_req if ok else 0,
                       errors=0 if ok else n_req,
                       system_load=SystemLoad(busy=i % 13 == 0, other_processes_cpu_percent=40.0))


def _meas_rows(md: str, lang: str) -> int:
    head = "| " + " | ".join(K.s("report_meas_cols", lang).split("|")) + " |"
    rest = md[md.index(head):].splitlines()
    n = 0
    for line in rest[2:]:
        if not line.startswith("|"):
            break
        n += 1
    return n


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_report_lists_the_first_200_runs_and_sums_up_the_rest(lang):
    a = load_answers(ANSWERS)
    rec = recommend(a, None, K, lang=lang)
    results = [_run(i) for i in range(1, 1001)]
    md = build_markdown(a, None, rec, results, K, lang, images={"ttft": ChartImage("ttft.png", "x")})
    assert _meas_rows(md, lang) == MAX_RUNS_SHOWN
    assert "**#200 " in md and "**#201 " not in md  # one detail line per listed run only
    more = next(ln for ln in md.splitlines() if ln.startswith(("800 more runs", "另有 800 次运行")))
    # the rest in one line: engines with their counts, statuses, the range of total tok/s with its runs
    for engine in ENGINES:
        assert f"{engine} (200)" in more
    n_error = sum(i % 7 == 0 for i in range(201, 1001))
    assert f"{n_error:,} {K.s('status_error', lang)}" in more
    assert "60.0 tok/s" in more and "156.0 tok/s" in more and "#" in more
    busy = next(ln for ln in md.splitlines() if ln.startswith("> "))
    n_busy = sum(i % 13 == 0 for i in range(1, 1001))
    assert busy.count("#") == 20 and K.s("report_more_others", lang, n=str(n_busy - 20)) in busy
    n_ok = sum(i % 7 != 0 for i in range(1, 1001))
    assert K.s("report_charts_capped", lang, n=MAX_RUNS_CHARTED, total=f"{n_ok:,}") in md


def test_the_charts_draw_a_bounded_number_of_runs_and_values():
    a = load_answers(ANSWERS)
    rec = recommend(a, None, K)
    figs = chart_figures(rec, [_run(i) for i in range(1, 1001)], "en")
    for key in ("ttft", "itl"):
        assert len(figs[key].data) == MAX_RUNS_CHARTED
    assert len(figs["throughput"].data[0].x) == MAX_RUNS_CHARTED
    # one fat run: 2,000 requests of 300 tokens, 598,000 token gaps; its box draws an even sample
    fat = _run(1, n_req=2000, n_tok=300)
    itl = chart_figures(rec, [fat], "en")["itl"].data[0].x
    assert len(itl) == charts.CHART_VALUES
    thin = charts.sample_requests(fat, 20_000)
    assert sum(1 + len(q.token_times_s) for q in thin.requests) <= 20_000 and thin.requests[0].index == 0
    small = _run(1)
    assert charts.sample_requests(small, 20_000) is small  # a run of a usual size is drawn whole


def _sweep(engine: str, levels: int, capacity: int) -> SweepResult:
    lv = [SweepLevel(concurrency=c, status="ok", ttft_ms=Percentiles(p95=100.0 + c), goodput=1.0,
                     output_tps_total=float(c)) for c in range(1, levels + 1)]
    return SweepResult(engine=engine, status="ok", levels=lv, capacity=capacity, ttft_target_ms=800.0)


def test_sweep_charts_draw_at_most_16_sweeps_of_64_levels_with_their_capacity():
    sweeps = [_sweep(f"engine-{n}", 1000, capacity=777) for n in range(20)]
    figs = charts.sweep_charts(sweeps, 800.0, 0.9, "en")
    for fig in figs.values():
        assert len(fig.data) == charts.MAX_SWEEPS_CHARTED
        for trace in fig.data:
            xs = list(trace.x)
            assert len(xs) <= charts.MAX_LEVELS_CHARTED + 1 and xs[0] == 1 and xs[-1] == 1000 and 777 in xs
        assert len(fig.layout.xaxis.tickvals) <= charts.MAX_TICKS
    a = load_answers(ANSWERS)
    rec = recommend(a, None, K)
    md = build_markdown(a, None, rec, [], K, "en", sweeps=sweeps, cores=8,
                        images={"sweep_ttft": ChartImage("sweep_ttft.png", "x")})
    assert "The sweep charts draw the first 16 of 20 sweeps, each with at most 64 concurrency levels" in md
    md = build_markdown(a, None, rec, [], K, "zh", sweeps=sweeps[:1], cores=8,
                        images={"sweep_ttft": ChartImage("sweep_ttft.png", "x")})
    assert K.s("report_sweep_levels_capped", "zh", levels=64) in md


def test_column_widths_fit_the_page_and_every_character():
    epw = 180.0015555555555  # A4 less 15 mm margins, as fpdf2 has it
    cases = [([2.4] + [42.4] * 10, [2.4] + [70.0] * 10, [2.4] + [4.7] * 10),  # a column of marks that measure 0
             ([42.4] * 12, [300.0] * 12, [5.0] * 12), ([3.0, 4.0], [3.0, 4.0], [3.0, 4.0]),
             ([50.0] * 60, [60.0] * 60, [5.0] * 60)]  # more columns than fit at their floors: equal shares
    for need, want, floor in cases:
        w = _column_widths(need, want, floor, epw)
        assert sum(w) <= epw and all(0 < x <= epw for x in w)
        if sum(floor) <= epw:
            assert all(x >= f - 1e-9 for x, f in zip(w, floor)), (w, floor)


@pytest.mark.parametrize("cell", ["\u0301", "e\u0301" * 3, "\u200d", "\ufeff\u2060"])
def test_a_table_column_of_zero_width_or_combining_text_renders(cell):
    """Ten wide columns and one whose text measures 0 mm (or a missing-glyph box): shrunk to fit the page, that
    column fell below its padding and fpdf2 raised "Not enough horizontal space to render a single character"."""
    from fpdf import FPDF

    font, index = _font()
    pdf = FPDF(format="A4")
    pdf.set_margins(15, 15, 15)
    for style in ("", "B"):
        pdf.add_font("cjk", style=style, fname=font, collection_font_number=index)
    pdf.set_font("cjk", size=9.5)
    pdf.add_page()
    rows = [[("th", "", None)] + [("th", "W" * 30, None)] * 10, [("td", cell, None)] + [("td", "x", None)] * 10]
    _render_table(pdf, rows, "cjk")
    assert bytes(pdf.output()).startswith(b"%PDF")


INVISIBLE = "m\u200bo\u200dd\ufeffe\u2060l\u202e"
NAME = INVISIBLE + "e\u0301\u0301\u0301\u0301" * 120 + "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d" * 60


@pytest.mark.skipif(not shutil.which("pdftotext"), reason="pdftotext (poppler-utils) is not installed")
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_names_of_zero_width_and_combining_marks_make_a_pdf_with_its_table(lang, tmp_path):
    endpoint = _run(1).model_copy(update={"engine": "endpoint", "model": NAME, "top_cause": NAME, "errors": 1,
                                          "requests_total": 9, "backend_settings": {"url": "http://x/" + NAME}})
    named = _run(2).model_copy(update={"engine": NAME})
    files = []
    for n, r in enumerate((endpoint, named), 1):
        files += ["--probe", str(tmp_path / f"probe-{n}.json")]
        Path(files[-1]).write_text(r.model_dump_json(), encoding="utf-8")
    out = tmp_path / "r.pdf"
    res = bounded(["-m", "advisor", "report", "--answers", str(ANSWERS), *files, "--lang", lang, "--out", str(out)],
                  env=NO_BROWSER)
    assert res.rc == 0, res.err[-600:]
    assert "Traceback" not in res.err
    # the invisible characters are not drawn (each was a 1-em missing-glyph box, and fpdf2 said so on stderr)
    for ch in ("\\u200d", "\\ufeff", "\\u2060", "\\u202e"):
        assert ch not in res.err, res.err[-600:]
    text = subprocess.run(["pdftotext", "-enc", "UTF-8", str(out), "-"], capture_output=True, text=True,
                          timeout=60).stdout
    header = K.s("report_meas_cols", lang).split("|")
    assert header[0] in text and header[1] in text  # the measurement table's header
    assert "#1" in text and "#2" in text and "endpoint" in text and "“model" in text  # its rows, the cause readable
    assert not re.search("[\u200b-\u200f\u2060\ufeff\u202a-\u202e]", text)


def test_report_cli_of_2000_runs_is_bounded(tmp_path):
    files = []
    for i in range(1, 2001):
        p = tmp_path / f"probe-{i}.json"
        p.write_text(_run(i).model_dump_json(), encoding="utf-8")
        files += ["--probe", str(p)]
    out = tmp_path / "r.pdf"
    res = bounded(["-m", "advisor", "report", "--answers", str(ANSWERS), *files, "--out", str(out)],
                  hard_limit_s=120, env=NO_BROWSER)
    assert res.rc == 0, res.err[-600:]
    assert res.within_bounds(30, 800), (res.cpu_seconds, res.peak_rss_mb)
    text = subprocess.run(["pdftotext", "-enc", "UTF-8", str(out), "-"], capture_output=True, text=True,
                          timeout=60).stdout if shutil.which("pdftotext") else ""
    assert not text or "1,800 more runs" in text
    md = tmp_path / "r.md"
    res = bounded(["-m", "advisor", "report", "--answers", str(ANSWERS), *files, "--out", str(md)], env=NO_BROWSER)
    body = md.read_text(encoding="utf-8")
    assert res.rc == 0 and _meas_rows(body, "en") == MAX_RUNS_SHOWN and "1,800 more runs" in body
    # the reproduce line names every file, consecutive ones as one brace range (bash and zsh expand it)
    assert f"--probe={tmp_path}/probe-{{1..2000}}.json" in body


def _fat_sweep_file(path: Path, levels: int = 1024, target_bytes: int = 63 << 20) -> int:
    """A sweep file just under the CLI's 64 MB cap: 1,024 levels, each with its full result and as many requests
    (of 8 tokens) as fit. Written as text: building it through pydantic would take longer than the test."""
    level = SweepLevel.of(1, _run(1)).model_dump_json()
    req = _run(1, n_req=1).requests[0].model_dump_json()
    n_req = max(1, (target_bytes // levels - len(level) - 2000) // (len(req) + 1))
    result = _run(1, n_req=1).model_dump_json().replace(req, ",".join([req] * n_req))
    head = ('{"engine": "vllm", "status": "ok", "ttft_target_ms": 800, "capacity": %d, "levels": [' % levels)
    with path.open("w", encoding="utf-8") as f:
        f.write(head)
        f.write(",".join(level.replace('"concurrency":1,', f'"concurrency":{c},') for c in range(1, levels + 1)))
        f.write('], "results": [' + ",".join([result] * levels) + "]}")
    return path.stat().st_size


def test_report_cli_reads_a_63_mb_sweep_without_its_requests(tmp_path):
    sweep = tmp_path / "sweep.json"
    size = _fat_sweep_file(sweep)
    assert 60 << 20 < size < 64 << 20
    out = tmp_path / "r.md"
    res = bounded(["-m", "advisor", "report", "--answers", str(ANSWERS), "--sweep", str(sweep), "--out", str(out)],
                  env=NO_BROWSER)
    assert res.rc == 0, res.err[-600:]
    assert res.within_bounds(30, 700), (res.cpu_seconds, res.peak_rss_mb)  # was 1 GB
    md = out.read_text(encoding="utf-8")
    assert "## Measured capacity (concurrency sweep)" in md and "| vLLM | 1024 |" in md


def test_report_cli_refuses_178000_levels_in_one_line_before_building_them(tmp_path):
    level = SweepLevel.of(1, _run(1)).model_dump_json()
    sweep = tmp_path / "sweep.json"
    sweep.write_text('{"engine": "vllm", "status": "ok", "levels": [' + ",".join([level] * 178_000) + "]}",
                     encoding="utf-8")
    assert sweep.stat().st_size < 64 << 20
    res = bounded(["-m", "advisor", "report", "--answers", str(ANSWERS), "--sweep", str(sweep),
                   "--out", str(tmp_path / "r.md")], env=NO_BROWSER)
    line = res.one_line_error(rc=2)
    assert "1,024 levels" in line and "178,000" in line
    assert res.peak_rss_mb < 700, res.peak_rss_mb  # was 1.7 GB: every level built, then refused

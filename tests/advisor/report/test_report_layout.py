"""The report and its charts are readable in the browser and in the PDF (issue "every chart is readable").

Charts are images in the PDF, so their layout is checked on the Plotly figures (the same ones the PDF exports);
the PDF itself is checked through its text layer and its image list. No engine runs here.
"""
import io
import re
import shutil
import subprocess

import markdown
import pytest
from PIL import Image
from pypdf import PdfReader

from advisor.knowledge import ENGINE_IDS
from advisor.decide.rules import recommend
from advisor.evidence.probe_check import ProbeCheck
from advisor.inputs.answers import parse_answers
from advisor.knowledge.load import load_knowledge
from advisor.report.charts import axis_titles, latency_chart, throughput_chart
from advisor.report.document import ReportError, build_markdown, chart_figures, markdown_to_pdf
from advisor.report.plan import plan_markdown, plan_rows
from probes.result import Percentiles, ProbeResult, RequestRecord, SystemLoad

K = load_knowledge()
ANSWERS = {"concurrency": 8, "ttft_p95_ms": 800, "model": {"name": "llama-3-8b", "precision": "fp16"},
           "hardware": {"gpu_vendor": "nvidia", "gpu_model": "RTX 4090", "gpu_count": 1, "ram_gb": 64}}
BUSY_NOTE = ("other processes used 70% of this machine's CPU during the run; figures are likely slower than on an "
             "idle machine (a busy CPU measured up to 4× slower here)")
CJK = re.compile(r"[\u4e00-\u9fff]")


def _result(engine="llama.cpp", ttft=123.456789, status="ok", busy=False, **kw) -> ProbeResult:
    reqs = [RequestRecord(index=i, submitted_s=i * 0.1, first_token_s=i * 0.1 + ttft / 1000 * (1 + i / 10),
                          token_times_s=[i * 0.1 + ttft / 1000 + j * 0.03 for j in range(6)]) for i in range(4)]
    load = SystemLoad(busy=busy, other_processes_cpu_percent=70.0 if busy else 1.0, note=BUSY_NOTE if busy else None)
    base = dict(engine=engine, engine_version="0.3", status=status, serving="one at a time", device="cpu",
                ttft_ms=Percentiles(p50=ttft, p95=ttft * 1.5, p99=ttft * 2.0), itl_ms=Percentiles(p50=30.04, p95=40.6),
                decode_tps_per_request=Percentiles(p50=33.33333), output_tps_total=66.66666, goodput=0.875,
                peak_rss_mb=812.3456, load_time_s=1.23456, system_load=load,
                notes=[BUSY_NOTE] if busy else [], requests=reqs if status == "ok" else [],
                reason=None if status == "ok" else "it failed")
    base.update(kw)
    return ProbeResult(**base)


def _png(w=60, h=30) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (w, h), (40, 120, 200)).save(buf, format="PNG")
    return buf.getvalue()


def _check(rec, engine="llama.cpp", roof=180.0, measured=95.5) -> ProbeCheck:
    return ProbeCheck(engine=engine, model="m", device="cpu", predicted_memory_mib=1.0, measured_memory_mib=1.0,
                      memory_metric="rss", memory_error_pct=0.0, decode_tps_roofline=roof,
                      decode_tps_measured=measured, roofline_pct=measured / roof * 100, text="x",
                      plan=rec.plan.engines[engine])


def _pdf_text(pdf: bytes, tmp_path) -> list[str]:
    """Page texts by poppler's pdftotext (pypdf mixes up fpdf2's two CJK subsets, which share a subset tag)."""
    exe = shutil.which("pdftotext")
    if exe is None:
        pytest.skip("pdftotext (poppler-utils) is not installed; `make test` installs it")
    f = tmp_path / "r.pdf"
    f.write_bytes(pdf)
    return subprocess.run([exe, "-layout", str(f), "-"], capture_output=True, text=True, check=True,
                          timeout=60).stdout.split("\f")


def _pdf_images(pdf: bytes) -> int:
    return sum(len(p.images) for p in PdfReader(io.BytesIO(pdf)).pages)


# ---------------------------------------------------------------- charts

TITLES = {"ranking": "chart_ranking_title", "memory": "chart_memory_title", "concurrency": "chart_concurrency_title",
          "roofline": "chart_roofline_title", "ttft": "chart_ttft_title", "itl": "chart_itl_title",
          "throughput": "chart_throughput_title", "serving": "srv_chart_title"}


def _figures(lang):
    rec = recommend(parse_answers(ANSWERS), None, K, lang=lang)
    assert len(rec.plan.engines) == len(ENGINE_IDS)
    results = [_result("llama.cpp", 120.0), _result("llama.cpp", 140.0), _result("onnxruntime", 300.0),
               _result("vllm", status="error")]
    return chart_figures(rec, results, lang, [_check(rec), _check(rec, roof=170.0, measured=80.0)],
                         run_ids=[3, 4, 5, 6])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_chart_has_explicit_layout_titles_and_honest_axes(lang):
    figs = _figures(lang)
    assert set(figs) == set(TITLES)
    for name, fig in figs.items():
        lay = fig.layout
        assert lay.title.text == K.s(TITLES[name], lang), name
        assert all(v is not None for v in (lay.margin.l, lay.margin.r, lay.margin.t, lay.margin.b)), name
        assert 250 <= lay.height <= 1000 and lay.template.layout.to_plotly_json() == {}, name  # no template styling
        across = [a.text for a in lay.annotations if a.xref == "paper" and a.yanchor == "bottom"]
        for axis in (lay.xaxis, lay.yaxis):
            assert axis.automargin is True, name
            title = axis.title.text
            if axis is lay.yaxis and lang == "zh":
                # a Chinese y title reads across, above the axis, not turned on its side (its characters lay sideways)
                assert not title and len(across) == 1, (name, title, across)
                title = across[0]
                assert axis_titles(fig)[1] == title  # what the PDF's caption names
            assert title and (CJK.search(title) if lang == "zh" else not CJK.search(title)), (name, title)
            if axis.type == "log":
                assert ("log scale" if lang == "en" else "对数坐标") in title, (name, title)
            elif axis.type != "category":
                assert axis.rangemode == "tozero", (name, title)
                assert axis.range is None or axis.range[0] == 0, (name, axis.range)


def _style_of(trace) -> tuple:
    m = trace.marker
    colour = m.color if isinstance(m.color, str) else (trace.line.color if trace.line else None)
    shape = None
    if trace.type == "bar":
        shape = m.pattern.shape
    elif trace.type == "scatter":
        shape = (m.symbol, trace.line.dash if "lines" in (trace.mode or "") else None)
    elif trace.type == "box":
        shape = m.symbol
    return colour, shape


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_series_have_distinct_colours_and_markers(lang):
    for name, fig in _figures(lang).items():
        if len(fig.data) > 1:  # the series a legend names (a curve's band is shaded in its curve's colour)
            styles = [_style_of(t) for t in fig.data if t.showlegend is not False]
            colours, shapes = [c for c, _ in styles], [s for _, s in styles]
            assert None not in colours and len(set(colours)) == len(colours), (name, colours)
            assert len(set(map(str, shapes))) == len(shapes), (name, shapes)
        else:  # one trace, one bar per run/engine: a colour per bar (the ranking marks only its leader)
            colours = fig.data[0].marker.color
            assert isinstance(colours, (tuple, list)) and len(set(colours)) == (2 if name == "ranking" else len(colours))
    names = [t.name for t in _figures(lang)["roofline"].data]
    assert names == [K.s(k, lang) for k in ("chart_bound_plan", "chart_bound_probe", "chart_measured_tps")]
    assert not any("(tok/s)" in n for n in names)


def test_runs_of_one_engine_get_their_own_label():
    runs = [_result("llama.cpp", 100.0), _result("llama.cpp", 200.0)]
    assert [t.name for t in latency_chart(runs, "ttft", labels=["#7 llama.cpp", "#9 llama.cpp"]).data] == [
        "#7 llama.cpp", "#9 llama.cpp"]
    assert list(throughput_chart(runs, labels=["#7 llama.cpp", "#9 llama.cpp"]).data[0].x) == [
        "#7 llama.cpp", "#9 llama.cpp"]
    names = [t.name for t in latency_chart(runs, "itl").data]  # no labels: still two boxes, not one merged
    assert len(set(names)) == 2
    with pytest.raises(ValueError):
        latency_chart(runs, labels=["only one"])


# ---------------------------------------------------------------- tables

def test_plan_table_puts_the_deciding_columns_first():
    rec = recommend(parse_answers(ANSWERS), None, K)
    cols, rows = plan_rows(rec.plan, K, "en")
    assert cols[:4] == ["engine", "fits", "max conc.", "decode ≤ tok/s"] and cols[-1] == "how it runs"
    assert "weights GiB" in cols and all(len(r) == len(cols) for r in rows)
    zh_cols, _ = plan_rows(rec.plan, K, "zh")
    assert zh_cols[:2] == ["引擎", "放得下"] and all(CJK.search(c) or "GiB" in c or "KV" in c for c in zh_cols)
    md = plan_markdown(rec.plan, K, "en")
    assert not re.search(r"\d\.\d{3,}", md.split("**")[0])  # table and header lines: at most 2 decimals


def _md(lang, results=(), **kw):
    a = parse_answers(kw.pop("answers", ANSWERS))
    rec = recommend(a, None, K, lang=lang)
    return build_markdown(a, None, rec, list(results), K, lang, **kw)


def test_zh_report_tables_and_values_are_chinese():
    md = _md("zh", [_result("llama.cpp"), _result("vllm", status="error")], run_ids=[1, 2])
    header = "| " + " | ".join(K.s("report_meas_cols", "zh").split("|")) + " |"
    assert header in md and "TTFT p50/p95/p99" not in md and "| engine |" not in md
    assert "| #1 llama.cpp | 成功 |" in md and "| #2 vllm | 出错 |" in md
    assert "| 引擎 | 放得下 |" in md and "| engine | fits |" not in md
    assert "**不可能**" in md


def test_answers_hardware_and_model_read_like_prose():
    answers = {**ANSWERS, "hardware": {"gpu_vendor": "nvidia", "gpu_model": "L40S", "gpu_count": 2, "ram_gb": 64,
                                       "os": "linux"}}
    en, zh = _md("en", answers=answers), _md("zh", answers=answers)
    assert "2 × NVIDIA L40S (48 GiB), 64 GB RAM, linux" in en
    assert "2 × NVIDIA L40S (48 GiB)，内存 64 GB，linux" in zh
    assert "**Model:** llama-3-8b — fp16, 4,096 tokens of context" in en
    for md in (en, zh):
        assert "gpu_vendor=" not in md and "params_b=" not in md and "context_tokens=" not in md


def test_numbers_are_rounded_and_goodput_is_a_percentage():
    md = _md("en", [_result("llama.cpp", ttft=123.456789)])
    assert "123.5 / 185.2 / 246.9" in md and "123.456" not in md
    assert "| 88% |" in md and "0.875" not in md
    assert "| 812 |" in md and "812.3" not in md


def test_busy_machine_note_is_given_once():
    md = _md("en", [_result("llama.cpp", busy=True), _result("onnxruntime", busy=True)], run_ids=[4, 5])
    assert md.count("Measured on a busy machine") == 1 and "#4 llama.cpp, #5 onnxruntime" in md
    assert BUSY_NOTE not in md


def test_run_ids_label_runs_and_name_the_probe_files():
    rec = recommend(parse_answers(ANSWERS), None, K)
    runs = [_result("llama.cpp", 100.0), _result("llama.cpp", 200.0)]
    md = _md("en", runs, run_ids=[7, 9], answers_file="a.yaml")
    assert "| #7 llama.cpp |" in md and "| #9 llama.cpp |" in md
    assert "--answers a.yaml --probe probe-7.json --probe probe-9.json" in md
    figs = chart_figures(rec, runs, "en", run_ids=[7, 9])
    assert [t.name for t in figs["ttft"].data] == ["#7 llama.cpp", "#9 llama.cpp"]
    assert "--probe p1.json --probe p2.json" in _md("en", runs, probe_files=["p1.json", "p2.json"])  # the CLI's way


# ---------------------------------------------------------------- escaping and the PDF's inputs

EVIL_IMG = "<img src='/etc/passwd'>"


def test_user_and_model_strings_are_escaped():
    answers = {**ANSWERS, "model": {"path": EVIL_IMG, "params_b": 8},
               "hardware": {"gpu_vendor": "nvidia", "gpu_model": "<script>alert(1)</script>", "gpu_count": 1,
                            "gpu_memory_gb": 24}}
    bad = _result("llama.cpp", status="error", reason=EVIL_IMG + " | pipe", device="<b>cpu</b>",
                  engine_version="![v](http://127.0.0.1/v.png)", notes=["[click](javascript:alert(1))"],
                  backend_settings={"a|b": "<i>x</i>"})
    md = _md("en", [bad, _result("vllm", device="![x](http://127.0.0.1/x.png)")])
    assert "&lt;img src='/etc/passwd'&gt;" in md
    for raw in ("<img", "<script", "<b>cpu", "<i>x", "![x](", "![v](", "[click]("):
        assert raw not in md, raw
    assert "\\| pipe" in md and not re.search(r"[^\\]\| pipe", md)  # a pipe cannot end a table cell
    page = markdown.markdown(md, extensions=["tables", "fenced_code"])
    assert "<img" not in page and "<script" not in page
    sources = {c.source for t in K.support.engines.values() for axis in ("os", "accelerator", "precision",
               "kv_cache_dtype", "architecture", "serving") for c in getattr(t, axis).values() if c.source}
    cited = {p for p in K.sources.pages if p.startswith("http")} | {a.url for a in K.sources.seeds.values() if a.url}
    cited |= {a.source for a in K.architectures.engines.values()}  # the "architecture class" row's cells
    links = re.findall(r'<a href="([^"]*)"', page)
    assert links and set(links) <= sources | cited  # the knowledge's own sources, nothing from the user's strings


def test_pdf_holds_only_our_chart_images(tmp_path):
    secret = tmp_path / "secret.png"
    secret.write_bytes(_png(8, 8))
    md = (f"# t\n\n![ranking](ranking.png)\n\n![x]({secret})\n\n<img src=\"{secret}\">\n\ntext <img src='{secret}'>"
          f"\n\n| a | b |\n|---|---|\n| ![c]({secret}) | <img src=\"{secret}\"> |\n\n"
          "![d](data:image/png;base64,iVBORw0KGgo=)\n\n![e](http://127.0.0.1:9/x.png)\n")
    pdf = markdown_to_pdf(md, {"ranking.png": _png()})
    assert _pdf_images(pdf) == 1
    assert _pdf_images(markdown_to_pdf(md, {})) == 0


def test_huge_and_nested_cells_do_not_break_the_pdf():
    huge = "x" * 20_000
    nested = "<table><tr><td><b>deep</b> *em* `code` _u_</td></tr></table>" * 20
    r = _result("llama.cpp", status="error", reason=huge + " " + nested, notes=[nested, huge],
                backend_settings={"k": nested})
    answers = {**ANSWERS, "model": {"path": "/m/" + huge, "params_b": 8}}
    md = _md("en", [r, _result("vllm", serving=nested)], answers=answers)
    assert max(len(line) for line in md.splitlines() if line.startswith("|")) < 2_000
    pdf = markdown_to_pdf(md)
    assert pdf.startswith(b"%PDF")
    raw = f"| a | b |\n|---|---|\n| **bold** plain *em* `code` | {huge} |\n\n{huge}\n"
    assert markdown_to_pdf(raw).startswith(b"%PDF")


def test_pdf_failures_are_one_line_report_errors(monkeypatch):
    from fpdf import FPDF
    from fpdf.errors import FPDFException

    def boom(self, *a, **kw):
        raise FPDFException("row too high\nsecond line")

    monkeypatch.setattr(FPDF, "write_html", boom)
    with pytest.raises(ReportError) as err:
        markdown_to_pdf("# t\n\ntext\n")
    assert "row too high" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_pdf_text_layer_keeps_words_whole_and_the_title_once(lang, tmp_path):
    md = _md(lang, [_result("llama.cpp")], run_ids=[1])
    text = _pdf_text(markdown_to_pdf(md), tmp_path)
    everything = "\n".join(text)
    assert text[0].count(K.s("report_title", lang)) == 1
    assert "TensorRT-LLM" in everything and "TensorR T" not in everything
    assert K.s("plan_table_cols", lang).split("|")[1] in everything  # "fits" / "放得下"
    if lang == "zh":
        assert "成功" in everything and "不可能" in everything


def test_the_pdfs_support_table_links_each_cell_to_its_source():
    rec = recommend(parse_answers({**ANSWERS, "model": {"name": "llama-3-8b", "precision": "fp8"}}), None, K,
                    lang="en", with_flips=False)
    md = build_markdown(parse_answers(ANSWERS), None, rec, [], K, "en")
    reader = PdfReader(io.BytesIO(markdown_to_pdf(md, {})))
    uris = {a.get_object()["/A"]["/URI"] for p in reader.pages for a in p.get("/Annots", []) or []
            if "/A" in a.get_object() and "/URI" in a.get_object()["/A"]}
    sources = {c.source for t in K.support.engines.values() for axis in ("os", "accelerator", "precision",
               "kv_cache_dtype", "architecture", "serving") for c in getattr(t, axis).values() if c.source}
    assert len(uris & sources) >= 5  # one per engine at least: the table's cells are links
    assert uris <= sources | {u for u in uris if not u.startswith("file:")}
    assert not any(u.startswith(("file:", "/")) for u in uris)


def test_chinese_lines_in_a_list_and_a_paragraph_do_not_touch(tmp_path):
    """Chinese fills its em box: at fpdf2's line height (1.0 of the font size) a wrapped bullet's characters all but
    touched the next line's (the zh report's serving notes). Where the text holds Chinese, paragraphs and lists are
    set at CJK_LINE_HEIGHT (section by section, after the tables and images are split out); English keeps its own."""
    from advisor.report.document import BODY_PT, CJK_LINE_HEIGHT

    exe = shutil.which("pdftotext")
    if exe is None:
        pytest.skip("pdftotext (poppler-utils) is not installed; `make test` installs it")

    def pitches(md: str) -> list[float]:
        f = tmp_path / "r.pdf"
        f.write_bytes(markdown_to_pdf(md))
        box = subprocess.run([exe, "-bbox", str(f), "-"], capture_output=True, text=True, check=True,
                             timeout=60).stdout
        ys = sorted({float(y) for y, w in re.findall(r'yMin="([\d.]+)" xMax="[\d.]+" yMax="[\d.]+">([^<]*)<', box)
                     if w.startswith(("引擎", "擎的", "的选", "选择", "model"))})
        return [b - a for a, b in zip(ys, ys[1:])]

    zh = pitches("- " + "引擎的选择取决于硬件与负载" * 20 + "\n\n" + "引擎的选择" * 60 + "\n")
    assert len(zh) >= 4 and min(zh) >= CJK_LINE_HEIGHT * BODY_PT - 0.5, zh
    en = pitches("- " + "model " * 120 + "\n")
    assert en and max(en) < CJK_LINE_HEIGHT * BODY_PT - 0.5, en


def test_chinese_breaks_between_characters_and_english_words_stay_whole(tmp_path):
    """fpdf2 breaks at spaces only: a run of Chinese after an English word went whole to the next line, leaving the
    first line all but empty ("依据在该 / GPU、该引擎上实测的…"), and a run with no space was cut where it overflowed,
    inside an English word too ("仅支持N / VIDIA"). Chinese now breaks after any Chinese character and an English
    word never inside itself, even where the character that overflows is a comma."""
    run = "中" * 50 + "，" + "预测的首个词元延迟" * 30 + "，" + "服务" * 40
    mixed = "ONNX Runtime支持GPU/CPU/边缘设备，vLLM仅支持GPU（NVIDIA/AMD，AMD需ROCm环境），TensorRT-LLM仅支持NVIDIA GPU。"
    md = (f"# 标题\n\nvLLM {run}\n\n- 已过时 — “硬件兼容性：{mixed * 3}”\n\n"
          f"The engine aiconfigurator-core predicts {'throughput ' * 40}here.\n")
    lines = [ln.strip() for ln in _pdf_text(markdown_to_pdf(md), tmp_path)[0].splitlines() if ln.strip()]
    first = next(ln for ln in lines if ln.startswith("vLLM"))
    assert len(first) > 30, first  # filled with Chinese, not "vLLM" alone
    bullet = next(ln for ln in lines if "已过时" in ln)
    assert len(bullet) > 30, bullet  # not "已过时 — “硬件兼容性：ONNX" alone
    words = re.findall(r"[A-Za-z][A-Za-z-]*", " ".join(ln for ln in lines if "throughput" not in ln))
    assert set(words) <= {"vLLM", "ONNX", "Runtime", "GPU", "CPU", "NVIDIA", "AMD", "ROCm", "TensorRT-LLM"}, words
    english = [ln for ln in lines if "throughput" in ln or "aiconfigurator" in ln]
    assert all(w in ("The", "engine", "aiconfigurator-core", "predicts", "throughput", "here.")
               for ln in english for w in ln.split()), english  # no English word cut


def test_the_model_kind_line_says_a_model_attends_sparsely_where_its_config_does():
    """DeepSeek-V3.2's queries read only the 2,048 tokens its indexer picks (the KV read and the prompt's cost assume
    it), so the model line says so, in both languages; DeepSeek-V3, the same MLA without an indexer, does not."""
    from advisor.inputs.answers import ModelBlock
    from advisor.knowledge.load import load_knowledge
    from advisor.planner.spec import resolve_model
    from advisor.report.plan import model_kind_line

    k = load_knowledge()
    v32, v3 = (resolve_model(ModelBlock(name=n), k) for n in ("deepseek-v3.2", "deepseek-v3"))
    assert "2,048" in model_kind_line(v32, k, "en") and "sparse attention" in model_kind_line(v32, k, "en")
    assert "稀疏注意力" in model_kind_line(v32, k, "zh") and "2,048" in model_kind_line(v32, k, "zh")
    assert "sparse" not in model_kind_line(v3, k, "en") and "稀疏" not in model_kind_line(v3, k, "zh")

"""Strings a user, a model file or a server supplies, into the Markdown and the PDF: HTML, nested tags, 20,000
characters without a space, control characters, CJK and RTL. The report is built, the tags stay text, and
the PDF reads no file of this machine."""
from __future__ import annotations

import io
import time

import markdown
import pytest
from pypdf import PdfReader

from advisor.decide.rules import recommend
from advisor.inputs.answers import parse_answers
from advisor.knowledge.load import load_knowledge
from advisor.report.document import build_markdown, chart_images, markdown_to_pdf
from probes.result import Percentiles, ProbeResult, RequestRecord

K = load_knowledge()
HOSTILE = {
    "html": "<img src='/etc/passwd'><b><i>nested</b></i><script>alert(1)</script>",
    "table-breaker": "a | b | c\n| --- |\n<td>cell</td>",
    "long-word": "x" * 20_000,
    "long-words": ("word " * 4000).strip(),
    "markdown-link": "[click](javascript:alert(1)) ![img](/etc/passwd)",
    "control": "bell\x07 escape\x1b[31m nul\x00 end",
    "cjk-rtl-emoji": "模型 🚀 مرحبا שלום",
}


def _result(text: str) -> ProbeResult:
    reqs = [RequestRecord(index=i, submitted_s=i * 0.1, first_token_s=i * 0.1 + 0.2,
                          token_times_s=[i * 0.1 + 0.2 + j * 0.03 for j in range(5)]) for i in range(3)]
    reqs.append(RequestRecord(index=3, submitted_s=0.3, status="error", error=f"HTTP 500: {text}"))
    return ProbeResult(engine="endpoint", engine_version=text[:500], status="ok", serving=text, device=text,
                       model=text, backend_settings={"url": text, text[:40]: text}, notes=[text, text],
                       ttft_ms=Percentiles(p50=200, p95=210), itl_ms=Percentiles(p50=30, p95=31),
                       decode_tps_per_request=Percentiles(p50=33), output_tps_total=60, goodput=1.0, requests=reqs,
                       requests_total=4, requests_ok=3, errors=1, started_at=text[:60])


CASES = [(c, "en") for c in sorted(HOSTILE)] + [("html", "zh"), ("long-word", "zh"), ("cjk-rtl-emoji", "zh")]


@pytest.mark.parametrize("case,lang", CASES, ids=[f"{c}-{lang}" for c, lang in CASES])
def test_hostile_strings_into_markdown_and_pdf(case, lang):
    text = HOSTILE[case]
    answers = parse_answers({"concurrency": 2, "model": {"path": text[:4000], "params_b": 1.0},
                             "hardware": {"gpu_vendor": "nvidia", "gpu_model": text[:200], "gpu_count": 1,
                                          "gpu_memory_gb": 24}})
    rec = recommend(answers, None, K, lang=lang)
    results = [_result(text)]
    t0 = time.monotonic()
    # the charts (Chrome via kaleido, ~10 s) only where the text could reach them: once per language
    images, files = chart_images(rec, results, lang) if case == "html" else ({}, {})
    md = build_markdown(answers, None, rec, results, K, lang, images=images, answers_file=text[:300])
    html = markdown.markdown(md, extensions=["tables", "fenced_code"])  # what the PDF and the browser get
    assert "<script" not in html and "<b>" not in html and "<td>cell" not in html and "<i>" not in html
    assert html.count("<img") == len(images)  # our charts only: no tag from the text
    assert 'href="javascript' not in html and "passwd\"" not in html
    assert "\x1b" not in md and "\x00" not in md and "\x07" not in md
    fences = [ln for ln in md.splitlines() if ln.startswith("```")]
    assert len(fences) % 2 == 0 and md.rstrip().endswith("```")  # nothing broke out of the code block
    pdf = markdown_to_pdf(md, files)
    assert time.monotonic() - t0 < 60  # loose; the failure this guards against was an exception, not time
    reader = PdfReader(io.BytesIO(pdf))
    assert len(reader.pages) >= 2
    text_layer = "".join(p.extract_text() for p in reader.pages)
    assert "passwd" in text_layer or case not in ("html", "markdown-link")  # shown as text, not fetched
    n_images = sum(len(p.images) for p in reader.pages)
    assert n_images == len(files)  # our charts, and nothing else


def test_bidi_overrides_from_a_server_never_reach_the_report():
    """Audit (low): bidi overrides and isolates (U+202A-202E, U+2066-2069) in a server's model id reached the Markdown
    report, where they reorder what a reader sees."""
    from advisor.report.mdtext import md_escape

    for ch in ("\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200f"):
        out = md_escape(f"llama{ch}lanigiro")
        assert ch not in out and "llama" in out

"""Report builders as plain functions, and `python -m advisor report`."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.decide.rules import recommend
from advisor.evidence.verdict import revisit
from advisor.inputs.answers import load_answers
from advisor.knowledge.load import load_knowledge
from advisor.report.document import build_markdown, markdown_to_pdf
from probes.result import Percentiles, ProbeResult

ROOT = Path(__file__).resolve().parents[3]
K = load_knowledge()


def _result(engine, p95, goodput=1.0):
    return ProbeResult(engine=engine, status="ok", ttft_ms=Percentiles(p50=p95 / 2, p95=p95, p99=p95),
                       goodput=goodput, output_tps_total=10.0, serving="test")


@pytest.mark.parametrize("lang,title,section,verdict", [
    ("en", "# Inference-engine decision report", "## Ranking", "**impossible**"),
    ("zh", "# 推理引擎选型报告", "## 排名", "**不可能**")])
def test_markdown_has_every_section(lang, title, section, verdict):
    a = load_answers(ROOT / "examples" / "startup-chat-api.yaml")
    rec = recommend(a, None, K, lang=lang)
    md = build_markdown(a, None, rec, [_result("vllm", 300.0)], K, lang, answers_file="a.yaml",
                        probe_files=["p.json"])
    assert md.startswith(title) and section in md
    seed = K.cite("003_3107f110d92ff8c9.txt §8", lang)
    assert "vLLM" in md and f"{seed.title}" in md  # reasons carry sources, cited by title
    assert "003_3107f110d92ff8c9.txt" in md  # and the seed list names each article's file
    assert "--answers a.yaml --probe p.json" in md  # the CLI line that reproduces it
    assert verdict in md  # the seeds' impossible claims are flagged, in the report's language
    if lang == "zh":
        assert "impossible" not in md and "misleading" not in md


def test_verdict_changes_advice_when_top_misses_sla():
    a = load_answers(ROOT / "examples" / "startup-chat-api.yaml")
    rec = recommend(a, None, K)
    top, second = rec.ranking[0].engine, rec.ranking[1].engine
    v = revisit(rec, [_result(top, 5000.0, 0.1), _result(second, 200.0)], 800.0)
    assert v.changes_advice and second in v.summary
    v2 = revisit(rec, [_result(top, 200.0)], 800.0)
    assert not v2.changes_advice and "confirms" in v2.summary


def test_pdf_embeds_a_cjk_font():
    a = load_answers(ROOT / "examples" / "cpu-only-box.yaml")
    rec = recommend(a, None, K, lang="zh")
    pdf = markdown_to_pdf(build_markdown(a, None, rec, [], K, "zh"))
    from io import BytesIO

    from pypdf import PdfReader

    fonts = set()
    for page in PdfReader(BytesIO(pdf)).pages:
        for f in (page.get("/Resources", {}).get("/Font") or {}).values():
            fonts.add(str(f.get_object().get("/BaseFont")))
    assert any("CJK" in f or "WenQuanYi" in f for f in fonts), fonts


def test_report_cli_md_and_pdf(tmp_path):
    probe = tmp_path / "probe.json"
    probe.write_text(_result("llama.cpp", 400.0).model_dump_json())
    for out in ("r.md", "r.pdf"):
        p = subprocess.run([sys.executable, "-m", "advisor", "report", "--answers", "examples/cpu-only-box.yaml",
                            "--probe", str(probe), "--lang", "zh", "--out", str(tmp_path / out)],
                           capture_output=True, text=True, cwd=ROOT, timeout=300)
        assert p.returncode == 0, p.stderr
    assert "推理引擎选型报告" in (tmp_path / "r.md").read_text()
    assert (tmp_path / "r.pdf").read_bytes().startswith(b"%PDF")


@pytest.mark.parametrize("args", [["--out", "x.docx"], ["--probe", "missing.json", "--out", "x.md"]])
def test_report_cli_bad_input(args, tmp_path):
    p = subprocess.run([sys.executable, "-m", "advisor", "report", "--answers", "examples/cpu-only-box.yaml", *args],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1


def test_report_cli_garbage_probe(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"hello": 1}))
    p = subprocess.run([sys.executable, "-m", "advisor", "report", "--answers", "examples/cpu-only-box.yaml",
                        "--probe", str(bad), "--out", str(tmp_path / "r.md")], capture_output=True, text=True,
                       cwd=ROOT, timeout=120)
    assert p.returncode == 2 and "not a probe result" in p.stderr

"""The report's deployment appendix (the top-ranked engine's bundle, in en and zh, in the Markdown and the PDF), the
exact command beside a sweep of a server started from its bundle, the page's helpers (order, zip, escaping), and the
PDF's code blocks wrapped to the page."""
from __future__ import annotations

import io
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import markdown
import pytest

from advisor.decide import recommend
from advisor.inputs import load_answers
from advisor.inputs.answers import parse_answers
from advisor.knowledge import load_knowledge
from advisor.report import deploy as dep
from advisor.report.document import WRAP_MARK, build_markdown, markdown_to_pdf, wrap_line, wrap_pre
from probes.result import Percentiles
from probes.sweep_result import DeployedRun, SweepLevel, SweepResult

K = load_knowledge()
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "startup-chat-api.yaml"


def _report(lang: str, answers=None, **kw) -> tuple[str, object, list]:
    a = answers or load_answers(str(EXAMPLE))
    rec = recommend(a, None, K, lang=lang)
    return build_markdown(a, None, rec, [], K, lang, **kw), rec, dep.ranked_bundles(rec, a, K, lang)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_appendix_holds_the_top_engines_bundle_before_the_reproduce_line(lang):
    md, rec, bundles = _report(lang)
    top = bundles[0]
    assert top.engine == rec.top.engine == "vllm" and top.status == "ok"
    title = f"## {K.s('deploy_appendix_title', lang)}"
    assert title in md and md.index(title) < md.index(f"## {K.s('report_reproduce', lang)}")
    appendix = md[md.index(title):md.index(f"## {K.s('report_reproduce', lang)}")]
    assert dep.command_line(top) in appendix
    version = f"“{top.version}”" if lang == "zh" else top.version  # the knowledge's English label, quoted in zh
    assert f"### {K.s('deploy_title', lang, engine='vLLM', version=version)}" in appendix
    for name in ("launch.sh", "compose.yaml", "k8s.yaml", "kserve.yaml"):
        assert f"**`{name}`**" in appendix and top.files[name].rstrip("\n") in appendix
    assert "docker-run.sh" not in appendix.split("```")[0]  # the report shows the launch script, not docker run
    assert K.s("deploy_col_why", lang) in appendix
    assert "SGLang" not in appendix.split("\n### ")[0]  # only the top engine (it has a server)
    html = markdown.markdown(md, extensions=["tables", "fenced_code"])
    assert html.count('<code class="language-yaml">') >= 3 and "<script" not in html


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_pdf_renders_the_appendix_with_every_line_on_the_page(lang, tmp_path):
    exe = shutil.which("pdftotext")
    if exe is None:
        pytest.skip("pdftotext (poppler-utils) is not installed; `make test` installs it")
    md, _, bundles = _report(lang)
    f = tmp_path / "r.pdf"
    f.write_bytes(markdown_to_pdf(md))
    text = subprocess.run([exe, "-enc", "UTF-8", str(f), "-"], capture_output=True, text=True, check=True,
                          timeout=60).stdout
    assert K.s("deploy_appendix_title", lang) in text
    assert "vllm serve" in text and "--max-num-seqs" in text and "kind: InferenceService" in text.replace('"', "")
    assert WRAP_MARK.strip() in text  # the long comments were cut, with the mark, not run off the page
    boxes = subprocess.run([exe, "-bbox", str(f), "-"], capture_output=True, text=True, check=True,
                           timeout=60).stdout
    width = float(re.search(r'<page width="([\d.]+)"', boxes).group(1))
    right = max(float(x) for x in re.findall(r'xMax="([\d.]+)"', boxes))
    assert right <= width - 15 / 25.4 * 72 + 1.0, right  # nothing past the 15 mm right margin


def test_when_the_top_engine_has_no_server_the_next_one_with_a_server_follows():
    a = parse_answers({"concurrency": 1, "cross_platform": True, "non_llm_models": True, "deployment": "desktop",
                       "hardware": {"gpu_vendor": "none", "gpu_count": 0, "ram_gb": 32, "cpu_cores": 8},
                       "model": {"name": "llama-3.2-1b", "precision": "int4"}})
    rec = recommend(a, None, K, lang="en")
    bundles = dep.ranked_bundles(rec, a, K, "en")
    lines = dep.appendix_markdown(rec, a, K, "en")
    text = "\n".join(lines)
    if bundles[0].status == "ok":
        assert text.count("\n### ") == 1
    else:
        nxt = next(b for b in bundles if b.status == "ok")
        assert K.s("deploy_" + bundles[0].status, "en") in text
        assert dep.command_line(nxt) in text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_sweep_of_a_deployed_server_prints_the_command_that_ran(lang):
    cmd = "VLLM_CPU_KVCACHE_SPACE=4 vllm serve /tmp/m --host 127.0.0.1 --port 41234 --served-model-name 'a`b'"
    levels = [SweepLevel(concurrency=c, status="ok", ttft_ms=Percentiles(p95=100.0 * c), goodput=1.0,
                         output_tps_total=10.0 * c) for c in (1, 2, 4)]
    sw = SweepResult(engine="vllm", status="ok", device="cpu", ttft_target_ms=1000, levels=levels, capacity=4,
                     stop_reason="test", deployed=DeployedRun(engine="vllm", command_line=cmd, bundle_command="x",
                                                              substituted=["<b>port</b> 41234: a free one"],
                                                              ready_s=12.34))
    md, _, _ = _report(lang, sweeps=[sw, sw.model_copy(update={"deployed": None})])
    section = md[md.index(f"## {K.s('cap_title', lang)}"):]
    assert section.count(cmd) == 1
    assert K.s("deploy_sweep_ran", lang, ready="12.3") in section
    assert K.s("deploy_sweep_substituted", lang, what="&lt;b&gt;port&lt;/b&gt; 41234: a free one") in section
    html = markdown.markdown(md, extensions=["tables", "fenced_code"])
    assert "<b>port" not in html and "a`b" in html
    markdown_to_pdf(md)  # renders


def test_ranked_bundles_follow_the_ranking_and_cores_come_from_the_answers():
    a = load_answers(str(EXAMPLE))
    rec = recommend(a, None, K, lang="en")
    bundles = dep.ranked_bundles(rec, a, K, "en")
    assert [b.engine for b in bundles] == [r.engine for r in rec.ranking]
    assert dep.cpu_cores(a, None) == 16
    llama = next(b for b in bundles if b.engine == "llama.cpp")
    assert ("-t", "16") in {(x.flag, x.value) for x in llama.args}


def test_the_zip_holds_every_file_and_the_scripts_run():
    a = load_answers(str(EXAMPLE))
    b = dep.ranked_bundles(recommend(a, None, K, lang="en"), a, K, "en")[0]
    assert dep.file_names(b)[:5] == ["launch.sh", "docker-run.sh", "compose.yaml", "k8s.yaml", "kserve.yaml"]
    assert dep.zip_name(b) == "vllm-deploy.zip"
    assert dep.mime("k8s.yaml") == "application/yaml" and dep.mime("launch.sh") == "text/plain"
    with zipfile.ZipFile(io.BytesIO(dep.bundle_zip(b))) as z:
        assert z.namelist() == [f"vllm-deploy/{n}" for n in dep.file_names(b)]
        for n in dep.file_names(b):
            assert z.read(f"vllm-deploy/{n}").decode() == b.files[n]
        mode = z.getinfo("vllm-deploy/launch.sh").external_attr >> 16
        assert mode & 0o111 and not (z.getinfo("vllm-deploy/k8s.yaml").external_attr >> 16) & 0o111


def test_a_hostile_name_stays_text_in_the_table_and_cannot_close_a_fence():
    name = "<script>alert(1)</script> | ``` `"
    a = parse_answers({"concurrency": 4, "model": {"name": name, "params_b": 8},
                       "hardware": {"gpu_vendor": "nvidia", "gpu_model": "RTX 4090", "gpu_count": 1,
                                    "gpu_memory_gb": 24}})
    rec = recommend(a, None, K, lang="en")
    b = dep.ranked_bundles(rec, a, K, "en")[0]
    table = dep.arg_table(b, K, "en")
    # a name that is no model id is served as its safe form; the raw name is only in the files' comments
    row = next(r for r in table if "script-alert-1-script" in r)
    assert "<script>" not in row and row.replace("\\|", "").count("|") == 4
    md = "\n".join(dep.appendix_markdown(rec, a, K, "en"))
    html = markdown.markdown(md, extensions=["tables", "fenced_code"])
    assert "<script" not in html and "&lt;script" not in html and "‹script›alert(1)‹/script›" in html
    assert html.count("<pre>") == 2 + len([n for n in ("launch.sh", "compose.yaml", "k8s.yaml", "kserve.yaml")
                                           if n in b.files])  # the CLI line, the command, each file: none broken
    assert "--served-model-name script-alert-1-script" in html
    markdown_to_pdf(md)


def test_the_why_names_its_value_as_code_and_plain_values_stay_escaped():
    assert dep.md_value("auto") == "`auto`" and dep.md_value("a b|c") == "a b\\|c"
    assert dep._why("KV cache in f16 (planned 1.2 GiB)", "f16") == "KV cache in `f16` (planned 1.2 GiB)"
    assert dep._why("x &amp; amp", "amp") == "x &amp;amp; `amp`"
    assert dep._why("port 8000", "8000") == "port 8000"  # a bare number stays prose


def test_code_lines_are_cut_to_the_page_with_their_indent():
    line = "      - \"4096\"  # " + "word " * 40
    out = wrap_line(line, 60)
    assert len(out) > 1 and all(len(x) <= 60 for x in out)
    assert all(x.startswith("      " + WRAP_MARK) for x in out[1:])
    assert " ".join(x.replace(WRAP_MARK, "").strip() for x in out).split() == line.split()
    assert wrap_line("x" * 130, 60) == ["x" * 60, WRAP_MARK + "x" * 58, WRAP_MARK + "x" * 12]
    zh = wrap_line("# " + "中文注释" * 30, 40)
    assert all(sum(2 if "\u4e00" <= c <= "\u9fff" else 1 for c in x) <= 40 for x in zh)
    # no space in the second half of the line: cut at the width (a long path), entities decoded and kept
    assert wrap_pre("<pre><code>a &amp; " + "b" * 50 + "</code></pre>", 30) == \
        "<pre><code>a &amp; " + "b" * 26 + "\n" + WRAP_MARK + "b" * 24 + "</code></pre>"


@pytest.mark.parametrize("hardware", [{"gpu_vendor": "none", "gpu_count": 0, "ram_gb": 64},
                                      {"gpu_vendor": "nvidia", "gpu_model": "RTX 4090", "gpu_count": 1,
                                       "gpu_memory_gb": 24}], ids=["cpu", "gpu"])
def test_the_chinese_appendix_speaks_chinese_outside_its_code(hardware):
    from tests.app.test_deploy_page import DEPLOY_YAML_NAMES
    from tests.app.test_zh_coverage import _english_words

    a = parse_answers({"concurrency": 8, "hardware": hardware,
                       "model": {"name": "llama-3.1-8b", "params_b": 8.03, "precision": "q4_k_m"}})
    lines = dep.appendix_markdown(recommend(a, None, K, lang="zh"), a, K, "zh")
    prose, fence = [], None  # the lines outside the fenced blocks (a block ends at its own fence)
    for line in lines:
        m = re.match(r"`{3,}", line)
        if m and (fence is None or line == fence):
            fence = m.group(0) if fence is None else None
        elif fence is None:
            prose.append(line)
    assert any("附录" in x for x in prose) and any(x.startswith("| ") for x in prose)
    words = set().union(*(_english_words(x) for x in prose))
    assert not words - DEPLOY_YAML_NAMES, " ".join(sorted(words))


def test_what_a_served_run_changed_reads_in_chinese():
    """Walk-3 L3: "model: … (the bundle's path is the container's); address 127.0.0.1:39447 (…); llama-server: …" was
    English on the zh page and in the zh report."""
    from advisor.knowledge.load import load_knowledge
    from advisor.report.deploy import substituted
    from probes.sweep_result import DeployedRun

    k = load_knowledge()
    d = DeployedRun(engine="llama.cpp", substituted=[
        "model: /m/smollm2.gguf (the bundle's path is the container's)",
        "address 127.0.0.1:39447 (the bundle listens on 0.0.0.0:its port)",
        "llama-server: this project's build of the llama.cpp that llama-cpp-python vendors (llama.cpp-0.3.36-noamx)"])
    zh = substituted(d, k, "zh")
    assert zh[0] == "模型：/m/smollm2.gguf（部署包中的路径是容器内的）" and "127.0.0.1:39447" in zh[1]
    assert all("the bundle" not in x and "this project" not in x for x in zh)
    assert substituted(d, k, "en") == d.substituted

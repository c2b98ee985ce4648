"""Citations (issue "make the ranking reasons readable in full and their citations real"): every source in
knowledge/*.yaml has a title in knowledge/sources.yaml, a reason about one engine cites that engine's own doc, and a
source reaches Markdown as its title and link, escaped."""
import re
import shutil
from pathlib import Path

import markdown
import pytest
import yaml

from advisor.knowledge import ENGINE_IDS
from advisor.decide.rules import recommend
from advisor.inputs.answers import parse_answers
from advisor.knowledge.conditions import leaves
from advisor.knowledge.load import KNOWLEDGE_DIR, KnowledgeError, load_knowledge
from advisor.report.mdtext import cite, seed_lines

K = load_knowledge()
ROOT = Path(__file__).resolve().parents[3]


def _sources(directory: Path) -> dict[str, set[str]]:
    """Every source string in the knowledge files, with where it is: any key `source`, `*_source` or `evidence`, and
    the values of a rule's per-engine `sources` map."""
    found: dict[str, set[str]] = {}

    def walk(node, where: str, key: str | None = None) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "sources" and isinstance(v, dict):
                    for e, s in v.items():
                        found.setdefault(s, set()).add(f"{where}: sources.{e}")
                else:
                    walk(v, where, k)
        elif isinstance(node, list):
            for v in node:
                walk(v, where, key)
        elif isinstance(node, str) and key and (key in ("source", "origin", "evidence") or key.endswith("_source")):
            found.setdefault(node, set()).add(f"{where}: {key}")

    for path in sorted(directory.glob("*.yaml")):
        if path.name != "sources.yaml":
            walk(yaml.safe_load(path.read_text(encoding="utf-8")), path.name)
    return found


def _untitled(directory: Path) -> list[str]:
    k = load_knowledge(directory)
    return sorted(f"{s} ({', '.join(sorted(w))})" for s, w in _sources(directory).items()
                  if not all(k.cite(s, lang) and k.cite(s, lang).title.strip() for lang in ("en", "zh")))


def test_every_source_in_the_knowledge_has_a_title():
    assert len(_sources(KNOWLEDGE_DIR)) > 300  # the walk reached every file (models, GPUs, support cells, rules…)
    assert _untitled(KNOWLEDGE_DIR) == []


def test_an_unlisted_source_fails(tmp_path):
    d = tmp_path / "knowledge"
    shutil.copytree(KNOWLEDGE_DIR, d)
    rules = yaml.safe_load((d / "rules.yaml").read_text(encoding="utf-8"))
    rules["rules"][1]["source"] = "https://example.org/a-page-nobody-listed"
    rules["rules"][2]["origin"] = "003_3107f110d92ff8c9.txt §8"  # a listed seed, any section: titled
    (d / "rules.yaml").write_text(yaml.safe_dump(rules, allow_unicode=True), encoding="utf-8")
    sup = yaml.safe_load((d / "support.yaml").read_text(encoding="utf-8"))
    sup["engines"]["vllm"]["os"]["linux"]["source"] = "https://docs.vllm.ai/en/latest/not/in/the/catalogue/"
    (d / "support.yaml").write_text(yaml.safe_dump(sup, allow_unicode=True), encoding="utf-8")
    missing = _untitled(d)
    assert len(missing) == 2
    assert missing[0].startswith("https://docs.vllm.ai/en/latest/not/in/the/catalogue/ (support.yaml: source)")
    assert missing[1].startswith("https://example.org/a-page-nobody-listed (rules.yaml: source)")


def test_the_catalogue_rejects_a_bad_entry(tmp_path):
    d = tmp_path / "knowledge"
    shutil.copytree(KNOWLEDGE_DIR, d)
    path = d / "sources.yaml"
    good = path.read_text(encoding="utf-8")
    for bad, why in (("  https://example.org/only-english: {en: \"x\"}\n", "zh"),
                     ("  not a source: {en: \"x\", zh: \"x\"}\n", "source must be"),
                     ("  https://ONNXRUNTIME.ai/docs/install/: {en: \"x\", zh: \"x\"}\n", "same page")):
        path.write_text(good.replace("\npages:\n", "\npages:\n" + bad, 1), encoding="utf-8")
        with pytest.raises(KnowledgeError) as info:
            load_knowledge(d)
        assert str(info.value).startswith("sources.yaml:") and why in str(info.value), str(info.value)
    path.write_text(good.replace("title: {en: \"{repo} — config.json on Hugging Face\"",
                                 "title: {en: \"{model} — config.json on Hugging Face\"", 1), encoding="utf-8")
    with pytest.raises(KnowledgeError, match="does not capture"):
        load_knowledge(d)


SEEDS = next((p for p in (ROOT / "shared" / "seeds", ROOT.parent / "shared" / "seeds") if p.is_dir()), None)


def test_each_seed_article_is_catalogued_with_its_own_title():
    cited = {s.split(" §")[0] for s in _sources(KNOWLEDGE_DIR) if re.match(r"\d{3}_[0-9a-f]{16}\.txt", s)}
    assert cited <= set(K.sources.seeds)
    if SEEDS is None:
        pytest.skip("shared/seeds is not in this checkout")
    assert {p.name for p in SEEDS.glob("*.txt")} == set(K.sources.seeds)
    for name, seed in K.sources.seeds.items():
        first = (SEEDS / name).read_text(encoding="utf-8").splitlines()[0].strip()
        if first != "前言":  # 003 opens with its foreword: it has no title line, and sources.yaml says so
            assert seed.title.zh == first, name
        else:
            assert "no title" in seed.note.en
        assert "2024–25" in seed.note.en and "2024–25" in seed.note.zh


# each engine's own docs: where a reason about an engine cites a doc page, the page is that engine's
OWN_DOCS = {"vllm": ("vllm",), "sglang": ("sglang", "2312.07104"), "tensorrt-llm": ("TensorRT-LLM",), "llama.cpp": ("llama.cpp", "ggml"),
            "onnxruntime": ("onnxruntime",),
            "pytorch": ("pytorch.org", "huggingface.co/docs/transformers", "huggingface/transformers",
                        "huggingface.co/docs/accelerate")}


def test_a_reason_about_an_engine_cites_that_engines_own_docs():
    offloading = {e for e, cap in K.planner.engines.items() if cap.cpu_offload}
    assert offloading == {"llama.cpp"}
    checked = 0
    for rule in K.rules.rules:
        if not rule.source.startswith("http") and not rule.sources:
            continue  # a seed article speaks of every engine at once
        if rule.scope == "answers":
            engines = set(rule.deltas) | set(rule.exclude)
        elif any(x.fact == "plan_offload" and x.op == "eq" and x.operand is True for x in leaves(rule.when)):
            engines = offloading  # plan_offload is true only for an engine that offloads layers to RAM
        else:
            engines = set(OWN_DOCS)
        for e in engines:
            src = rule.source_for(e)
            assert re.match(r"\d{3}_", src) or any(m.lower() in src.lower() for m in OWN_DOCS[e]), (rule.id, e, src)
            checked += 1
    assert checked >= 25


def test_plan_kv_short_cites_each_engines_kv_cache_setting():
    rule = next(r for r in K.rules.rules if r.id == "plan-kv-short")
    assert rule.source_for("vllm") == "https://docs.vllm.ai/en/latest/configuration/engine_args.html"
    assert rule.source_for("llama.cpp") == "https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md"
    assert rule.source_for("tensorrt-llm") == "https://nvidia.github.io/TensorRT-LLM/features/kvcache.html"
    assert rule.source_for("onnxruntime") == "https://onnxruntime.ai/docs/genai/reference/config.html"
    assert rule.source_for("pytorch") == "https://huggingface.co/docs/transformers/kv_cache"
    # and a ranking's reasons carry them: 64 long sequences of an 8B model on one 24 GB GPU leave the KV short
    rec = recommend(parse_answers({"concurrency": 64, "prompt_mix": "long",
                                   "model": {"name": "llama-3.1-8b", "precision": "fp16", "context_tokens": 32768},
                                   "hardware": {"gpu_vendor": "nvidia", "gpu_model": "RTX 4090", "gpu_count": 1,
                                                "ram_gb": 64}}), None, K, with_flips=False)
    short = {r.engine: x.source for r in rec.ranking for x in r.reasons if x.rule == "plan-kv-short"}
    assert len(short) >= 2, [(r.engine, [x.rule for x in r.reasons]) for r in rec.ranking]
    assert all(src == rule.source_for(e) for e, src in short.items())


def test_per_engine_sources_must_name_an_engine_the_rule_scores(tmp_path):
    d = tmp_path / "knowledge"
    shutil.copytree(KNOWLEDGE_DIR, d)
    rules = yaml.safe_load((d / "rules.yaml").read_text(encoding="utf-8"))
    rule = next(r for r in rules["rules"] if r["id"] == "strong-cuda-experience")  # scores TensorRT-LLM only
    rule["sources"] = {"vllm": "https://docs.vllm.ai/en/latest/configuration/engine_args.html"}
    (d / "rules.yaml").write_text(yaml.safe_dump(rules, allow_unicode=True), encoding="utf-8")
    with pytest.raises(KnowledgeError, match="does not score or exclude: vllm"):
        load_knowledge(d)


# ---------------------------------------------------------------- rendering

def test_a_source_renders_as_its_title_and_link_in_each_language():
    page = "https://docs.vllm.ai/en/latest/design/paged_attention.html"
    assert cite(page, K, "en") == f"[vLLM docs — Paged Attention]({page})"
    assert cite(page, K, "zh") == f"[vLLM 文档：分页注意力（Paged Attention）]({page})"
    seed = "003_3107f110d92ff8c9.txt §8"
    assert cite(seed, K, "en") == "Choosing an inference stack: PyTorch, vLLM, TensorRT-LLM and ONNX Runtime (§8)"
    assert cite(seed, K, "zh") == "推理栈选型：PyTorch、vLLM、TensorRT-LLM 与 ONNX Runtime（§8）"
    linked = cite("001_e926865ca5c793e2.txt §四", K, "en")  # a seed whose text is found online links there
    assert linked.startswith("[LLM inference acceleration compared in depth") and linked.endswith(
        "](http://www.xdnf.cn/java/19789.html) (§四)")
    assert cite("https://ONNXRuntime.ai/docs/performance/transformers-optimization.html", K, "en").startswith(
        "[ONNX Runtime docs — ")  # the host is case-insensitive; the link keeps the source's own spelling
    assert cite("bench/planner_calibration.py", K, "en") == (
        "This project's planner calibration bench (bench/planner_calibration.py)")
    assert cite("", K, "en") == ""


def test_an_unknown_source_is_escaped_text_and_a_link_cannot_be_broken(tmp_path):
    evil = "https://example.org/x <img src=x> [click](javascript:alert(1)) | *b*"
    html = markdown.markdown(cite(evil, K, "en"))
    assert "<img" not in html and 'href="javascript' not in html and "<em>" not in html
    assert '<a href="https://example.org/x">' in html
    # a catalogue entry is ours, but a ")" in its URL or "[" in its title must still not end the link early
    d = tmp_path / "knowledge"
    shutil.copytree(KNOWLEDGE_DIR, d)
    path = d / "sources.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace(
        "\npages:\n", "\npages:\n  https://a.org/p_(1): {en: \"A [page] *here*\", zh: \"页\"}\n", 1), encoding="utf-8")
    out = markdown.markdown(cite("https://a.org/p_(1)", load_knowledge(d), "en"))
    assert out == '<p><a href="https://a.org/p_%281%29">A [page] *here*</a></p>'


def test_the_seed_list_says_what_each_article_is():
    en, zh = seed_lines(K, "en"), seed_lines(K, "zh")
    assert len(en) == len(zh) == len(K.sources.seeds) == 3
    assert "“推理引擎选择：" in en[0] and "蓝海资料掘金营" in en[0] and "`000_2f6ac63d07d6332f.txt`" in en[0]
    assert "[a republished copy](http://www.xdnf.cn/java/19789.html)" in en[1]
    assert zh[0].startswith("**推理引擎选择：") and "“推理引擎选择" not in zh[0]  # zh: the title is the original


def test_the_report_cites_titles_not_seed_file_names():
    a = parse_answers({"concurrency": 64, "hardware": {"gpu_vendor": "nvidia", "gpu_memory_gb": 80, "gpu_count": 1}})
    from advisor.report.document import build_markdown

    for lang in ("en", "zh"):
        rec = recommend(a, None, K, lang=lang, with_flips=False)
        md = build_markdown(a, None, rec, [], K, lang)
        body = md[md.index(K.s("report_reasons", lang)):md.index(K.s("report_reproduce", lang))]
        cited = re.findall(r"\d{3}_[0-9a-f]{16}\.txt §", body)
        assert cited == [], cited  # a seed is cited by its title; the file name is only in the seed list
        assert K.s("cite_seeds_intro", lang) in md
        assert "[vLLM docs — Paged Attention](https://docs.vllm.ai/" in md or lang == "zh"
        assert "(https://nvidia.github.io/TensorRT-LLM/features/paged-attention-ifb-scheduler.html)" in md


def test_the_recommendation_page_shows_reasons_in_full_with_titled_sources():
    """The page draws each engine's reasons as a Markdown table (it wraps; st.dataframe cut them mid-sentence)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.session_state["answers"] = {"concurrency": 64, "hardware": {"gpu_vendor": "nvidia", "gpu_memory_gb": 24}}
    at.switch_page("pages/3_Recommendation.py").run()
    assert not at.exception
    tables = [m.value for m in at.markdown if m.value.startswith("| Δ | reason | source | rule |")]
    ranked = recommend(parse_answers(at.session_state["answers"]), None, K, with_flips=False).ranking
    assert len(tables) == len(ranked) == len(ENGINE_IDS)  # one per ranked engine
    top = tables[0]
    assert "vLLM, SGLang and TensorRT-LLM schedule them with continuous (in-flight) batching" in top  # the whole sentence
    assert "[vLLM docs — Paged Attention](https://docs.vllm.ai/en/latest/design/paged_attention.html)" in top
    assert "Choosing an inference stack: PyTorch, vLLM, TensorRT-LLM and ONNX Runtime (§8)" in top
    everything = "\n".join(m.value for m in at.markdown)
    assert not re.search(r"\d{3}_[0-9a-f]{16}\.txt §", everything)  # no opaque seed file as a citation
    claims = next(m.value for m in at.markdown if m.value.startswith("| verdict | claim |"))
    assert claims.count("\n") == len(K.claims.claims) + 1 and "“" in claims
    assert not at.dataframe or all("reason" not in d.value.columns for d in at.dataframe)


def test_every_rule_resting_on_the_serving_fit_names_the_fit_in_use():
    """A prediction rule cites the fit its figures come from: after a refit, a reason quoting last week's fit date
    beside this week's would misdate the evidence."""
    k = load_knowledge()
    fitted = str(k.serving_fit.fitted)
    cited = [r for r in k.rules.rules if r.source == "bench/fit_serving.py"]
    assert cited
    for r in cited:
        assert r.version == f"serving model fit of {fitted}", r.id
        assert str(r.read) == fitted, r.id

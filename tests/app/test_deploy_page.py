"""The Recommendation page's Deploy section: one expander per ranked engine in rank order (the top one open) with the
server command, the flag / value / why table, each file with its download, and a zip of all of them; in English and in
Chinese; a model name a user typed shows as text."""
from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from advisor.decide import recommend
from advisor.inputs.answers import parse_answers
from advisor.knowledge import load_knowledge
from advisor.report import deploy as dep

K = load_knowledge()
GPU = {"gpu_vendor": "nvidia", "gpu_model": "RTX 4090", "gpu_count": 1, "gpu_memory_gb": 24, "ram_gb": 64,
       "cpu_cores": 16, "os": "linux"}
HOSTILE = "<script>alert(1)</script> | ``` `"
#: English words in knowledge/deploy.yaml's Chinese texts (product names, "flash attention", "/metrics", a JSON
#: key "model"), which test_zh_coverage's allow-list does not hold yet; everything this section writes itself is
#: checked in full
DEPLOY_YAML_NAMES = {"KServe", "Prometheus", "Web", "flash", "metrics", "model"}


def _page(answers: dict, lang: str = "en") -> AppTest:
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=120).run()
    at.session_state["lang"] = lang
    at.session_state["answers"] = answers
    at.switch_page("pages/3_Recommendation.py").run()
    assert not at.exception, at.exception
    return at


def _expected(answers: dict, lang: str):
    a = parse_answers(answers)
    rec = recommend(a, None, K, lang=lang)
    return rec, dep.ranked_bundles(rec, a, K, lang)


def _deploy_expanders(at: AppTest, lang: str) -> list:
    heads = tuple(K.s(f"deploy_expander_{st}", lang, i=0, engine="").split("0. ")[1] for st in
                  ("ok", "refused", "no_server"))
    return [e for e in at.expander if e.label.endswith(heads)]


def _check_section(at: AppTest, answers: dict, lang: str) -> list:
    rec, bundles = _expected(answers, lang)
    assert any(h.value == K.s("deploy_section_title", lang) for h in at.subheader)
    exps = _deploy_expanders(at, lang)
    names = {e.id: e.name for e in K.engines.values()}
    assert [e.label for e in exps] == [K.s(f"deploy_expander_{b.status}", lang, i=i, engine=names[b.engine])
                                       for i, b in enumerate(bundles, 1)]
    assert [b.engine for b in bundles] == [r.engine for r in rec.ranking]
    assert exps[0].proto.expanded and not any(e.proto.expanded for e in exps[1:])
    keys = {d.key for d in at.download_button}
    for exp, b in zip(exps, bundles):
        if b.status != "ok":
            shown = " ".join(x.value for x in [*exp.warning, *exp.info])
            assert K.s(f"deploy_{b.status}", lang) in shown
            assert not exp.code
            continue
        assert exp.code[0].value == dep.command_line(b) and exp.code[0].language == "bash"
        table = next(m.value for m in exp.markdown if m.value.startswith("| "))
        assert K.s("deploy_col_why", lang) in table and len(table.splitlines()) == 2 + len(b.args) + len(b.env)
        assert {c.value for c in exp.code[1:]} == {b.files[n].rstrip("\n") for n in dep.file_names(b)}
        assert [t.label for t in exp.tabs] == dep.file_names(b)
        for n in dep.file_names(b):
            assert f"dl_deploy_{b.engine}_{n}" in keys
        assert f"dl_deploy_zip_{b.engine}" in keys
        labels = {d.label for d in exp.download_button}
        assert K.s("deploy_download_zip", lang) in labels and K.s("deploy_download", lang, name="launch.sh") in labels
    return exps


def test_the_deploy_section_shows_each_ranked_engine_with_its_command_and_downloads():
    answers = {"concurrency": 64, "ttft_p95_ms": 800, "hardware": GPU,
               "model": {"name": "llama-3-8b", "params_b": 8, "precision": "fp16", "context_tokens": 4096}}
    at = _page(answers)
    exps = _check_section(at, answers, "en")
    assert exps[0].label == "1. vLLM: command and files"
    assert exps[0].code[0].value.startswith("vllm serve /models/llama-3-8b ")
    assert "--max-num-seqs" in exps[0].code[0].value
    assert any(e.label.endswith(": no server") for e in exps)  # ONNX Runtime: a library, said so
    assert at.expander[0].label.startswith("1. vLLM — ")  # the ranking's expanders stay first


def test_the_deploy_section_in_chinese():
    from tests.app.test_zh_coverage import _english_words

    answers = {"concurrency": 8, "model_update": "weekly", "hardware": {"gpu_vendor": "none", "gpu_count": 0,
                                                                      "ram_gb": 64, "cpu_cores": 8},
               "model": {"name": "llama-3.1-8b", "params_b": 8.03, "precision": "q4_k_m"}}
    at = _page(answers, "zh")
    exps = _check_section(at, answers, "zh")
    assert exps[0].label.startswith("1. ") and "：" in exps[0].label
    assert any(h.value == "部署" for h in at.subheader)
    assert any(c.value == K.s("deploy_section_caption", "zh") for c in at.caption)
    prose = [K.s("deploy_section_caption", "zh"), *(e.label for e in exps)]
    prose += [x.value for e in exps for x in [*e.markdown, *e.warning, *e.info, *e.caption]]
    words = set().union(*(_english_words(t) for t in prose))
    assert not words - DEPLOY_YAML_NAMES, " ".join(sorted(words))


def test_a_hostile_model_name_is_text_in_the_deploy_section():
    answers = {"concurrency": 4, "hardware": GPU, "model": {"name": HOSTILE, "params_b": 8}}
    at = _page(answers)
    exps = _check_section(at, answers, "en")
    ok = [e for e in exps if e.code]
    named = 0
    for exp in ok:
        table = next(m.value for m in exp.markdown if m.value.startswith("| "))
        assert "<script>" not in table
        if "script-alert-1-script" in table:  # the served-model-name / --alias row: a name that is no model id
            named += 1                          # is served as its safe form
            assert "script-alert-1-script" in exp.code[0].value and "<script>" not in exp.code[0].value
        for row in table.splitlines():  # the name's "|" did not open a cell
            assert row.replace("\\|", "").count("|") == 4, row
    assert named >= 3  # vLLM, SGLang, llama.cpp name the model
    shown = " ".join(x.value for e in exps for x in [*e.markdown, *e.warning, *e.info, *e.caption])
    assert "<script>" not in shown

"""Page logic with streamlit.testing.v1.AppTest: drive widgets, assert no exception and what renders."""
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from advisor.answers import parse_answers


def app():
    return AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=60)


def test_home_renders_and_starts_checklist():
    at = app().run()
    assert not at.exception
    assert at.title[0].value == "Inference-engine selection advisor"
    at.button(key="start").click().run()
    assert not at.exception


def test_language_switch_to_chinese():
    at = app().run()
    at.sidebar.radio(key="lang").set_value("zh").run()
    assert at.title[0].value == "推理引擎选型助手"


def test_checklist_walks_all_steps_and_keeps_answers():
    at = app().run()
    at.switch_page("pages/1_Checklist.py").run()
    assert not at.exception
    at.number_input(key="q_concurrency").set_value(64).run()
    at.button(key="next").click().run()
    for _ in range(7):
        assert not at.exception
        if at.radio and at.radio[0].key == "q_cuda_expertise":
            at.radio(key="q_cuda_expertise").set_value(2).run()
        at.button(key="next").click().run()
    assert at.session_state["wizard_step"] == 8
    a = parse_answers(at.session_state["answers"])
    assert a.concurrency == 64 and a.cuda_expertise == "strong"
    at.button(key="back").click().run()
    assert at.session_state["wizard_step"] == 7
    # answers survive a page switch
    at.switch_page("pages/3_Recommendation.py").run()
    assert parse_answers(at.session_state["answers"]).concurrency == 64


def test_recommendation_page_shows_chart_and_ranking():
    at = app().run()
    at.session_state["answers"] = {"concurrency": 64, "hardware": {"gpu_vendor": "nvidia", "gpu_memory_gb": 24}}
    at.switch_page("pages/3_Recommendation.py").run()
    assert not at.exception
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert "vLLM" in spec["data"][0]["y"]
    assert at.expander[0].label.startswith("1. vLLM")
    assert at.session_state["last_ranking"][0] == "vllm"


def test_recommendation_page_shows_the_capacity_plan_and_fixes():
    at = app().run()
    at.session_state["answers"] = {"concurrency": 4, "model": {"name": "llama-3-70b", "precision": "fp16"},
                                   "hardware": {"gpu_vendor": "nvidia", "gpu_model": "RTX 4090", "gpu_count": 1,
                                                "ram_gb": 192}}
    at.switch_page("pages/3_Recommendation.py").run()
    assert not at.exception
    assert any(h.value == "Capacity plan" for h in at.subheader)
    table = next(d.value for d in at.dataframe if "fits" in d.value.columns)
    assert "fits" in table.columns and len(table) == 5
    vllm = table[table["engine"] == "vLLM"].iloc[0]
    assert vllm["fits"] == "no" and vllm["weights GiB"] == "131.41"
    text = " ".join(m.value for m in at.markdown)
    assert "To make vLLM fit" in text and "RTX 4090" in text and "offload with llama.cpp" in text
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert any(d.get("name") == "KV cache" for sp in specs for d in sp["data"])
    assert at.session_state["last_ranking"][0] == "llama.cpp"


def test_unknown_model_name_is_an_error_not_a_crash():
    at = app().run()
    at.session_state["answers"] = {"model": {"name": "llama-9-70b", "params_b": 70}}
    at.switch_page("pages/3_Recommendation.py").run()
    assert not at.exception
    assert "did you mean" in at.error[0].value


def test_hardware_page_plans_for_other_hardware():
    at = app().run()
    at.switch_page("pages/2_Hardware.py").run()
    assert not at.exception
    at.radio(key="hw_mode").set_value("other").run()
    names = at.selectbox(key="hw_gpu").options
    h100 = next(n for n in names if "H100" in n)
    at.selectbox(key="hw_gpu").set_value(h100).run()
    hw = parse_answers(at.session_state["answers"]).hardware
    assert hw.gpu_vendor == "nvidia" and hw.gpu_memory_gb >= 80
    at.number_input(key="hw_ram").set_value(256).run()
    assert parse_answers(at.session_state["answers"]).hardware.ram_gb == 256


def test_probe_page_runs_llama_cpp_and_keeps_the_result():
    at = app().run()
    at.switch_page("pages/4_Probe.py").run()
    assert not at.exception
    at.multiselect(key="probe_engines").set_value(["llama.cpp"])
    at.number_input(key="probe_requests").set_value(2)
    at.number_input(key="probe_tokens").set_value(8)
    at.button(key="run_probe").click().run()
    job = at.session_state["probe_job"]
    assert job.finished.wait(180)
    at.run()
    at.run()
    assert not at.exception
    assert job.results[0].status == "ok", job.results[0].reason
    assert at.session_state["report_runs"]
    assert any("TTFT" in str(c) for c in at.dataframe[0].value.columns)
    # the plan rebuilt for what the probe ran, against what it measured
    assert any(h.value == "Predicted vs measured" for h in at.subheader)
    text = " ".join(m.value for m in at.markdown)
    assert "llama.cpp: predicted" in text and "memory-bandwidth limit" in text
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert any(d.get("name") == "measured (tok/s)" for sp in specs for d in sp["data"])


def test_report_page_offers_both_downloads():
    at = app().run()
    at.switch_page("pages/5_Report.py").run(timeout=120)
    assert not at.exception
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download report (.md)" in labels and "Download report (.pdf)" in labels

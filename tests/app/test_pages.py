"""Page logic with streamlit.testing.v1.AppTest: drive widgets, assert no exception and what renders."""
import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from advisor.inputs.answers import parse_answers


def app():
    return AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=60)


def test_home_renders_and_starts_checklist():
    at = app().run()
    assert not at.exception
    assert at.title[0].value == "Inference-engine selection advisor"
    at.button(key="start").click().run()
    assert not at.exception


def test_language_switch_to_chinese_and_it_stays_on_every_page():
    at = app().run()
    at.sidebar.radio(key="_lang_pick").set_value("zh").run()
    assert at.title[0].value == "推理引擎选型助手"
    for page, title in (("pages/1_Checklist.py", "选型清单"), ("pages/2_Hardware.py", "硬件"),
                        ("pages/3_Recommendation.py", "排名")):
        at.switch_page(page).run()
        assert not at.exception
        assert at.session_state["lang"] == "zh"
        assert at.title[0].value == title


def test_checklist_walks_all_steps_and_keeps_answers():
    at = app().run()
    at.switch_page("pages/1_Checklist.py").run()
    assert not at.exception
    at.number_input(key="q_concurrency").set_value(64).run()
    at.button(key="next").click().run()
    assert at.session_state["answers"]["concurrency"] == 64
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
    # the plan table is Markdown (it wraps at any width), in two parts: the verdict, then the memory figures
    vllm: dict = {}
    for table in (m.value for m in at.markdown if m.value.startswith("| engine |")):
        head = table.splitlines()[0].strip("| ").split(" | ")
        rows = {r.split(" | ")[0].strip("| "): r.split(" | ") for r in table.splitlines()[2:]}
        if "vLLM" in rows and ("fits" in head or "weights GiB" in head):
            assert len(rows) == 6  # every engine, SGLang included
            vllm.update(zip(head, [c.strip("| ") for c in rows["vLLM"]]))
    assert vllm["fits"] == "no" and vllm["weights GiB"] == "131.41"
    text = " ".join(m.value for m in at.markdown)
    assert "To make vLLM fit" in text and "RTX 4090" in text and "offload with llama.cpp" in text
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert any(d.get("name") == "KV cache" for sp in specs for d in sp["data"])
    assert at.session_state["last_ranking"][0] == "llama.cpp"


def test_recommendation_page_shows_the_predicted_serving_performance():
    at = app().run()
    at.session_state["answers"] = {"concurrency": 16, "ttft_p95_ms": 800,
                                   "hardware": {"gpu_vendor": "nvidia", "gpu_model": "L40S", "gpu_count": 1},
                                   "model": {"name": "llama-3.1-8b", "precision": "bf16", "input_tokens": 2000,
                                             "output_tokens": 300}}
    at.switch_page("pages/3_Recommendation.py").run()
    assert not at.exception
    assert any(h.value == "Predicted serving performance" for h in at.subheader)
    table = next(m.value for m in at.markdown if m.value.startswith("| engine | how it serves"))
    head = [c.strip() for c in table.splitlines()[0].strip("|").split("|")]
    vllm = dict(zip(head, (c.strip() for c in next(r for r in table.splitlines() if r.startswith("| vLLM |"))
                                                .strip("|").split("|"))))
    assert vllm["how it serves"] == "continuous batching" and vllm["fleet for 16 users"].endswith("GPU")
    assert vllm["prediction"]  # the label sits in the table a reader sees at any width (walk-3 M3)
    text = " ".join(m.value for m in [*at.markdown, *at.caption])
    assert "16 users of about 2,300 tokens fit" in text and "rough = thin evidence" in text
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert any(d.get("name") == "within p95 TTFT ≤ 800 ms (predicted)" for sp in specs for d in sp["data"])


def test_recommendation_page_says_a_capacity_is_kv_bound_in_its_serving_table():
    """Walk-3 L5: the page's serving table (the report's rows) names the KV pool instead of a falsely narrow band."""
    at = app().run()
    at.session_state["answers"] = {"concurrency": 50, "model": {"name": "qwen3-32b", "precision": "fp8"},
                                   "hardware": {"gpu_vendor": "nvidia", "gpu_model": "H100", "gpu_count": 1}}
    at.switch_page("pages/3_Recommendation.py").run()
    assert not at.exception
    table = next(m.value for m in at.markdown if m.value.startswith("| engine | how it serves"))
    head = [c.strip() for c in table.splitlines()[0].strip("|").split("|")]
    vllm = dict(zip(head, (c.strip() for c in next(r for r in table.splitlines() if r.startswith("| vLLM |"))
                                                .strip("|").split("|"))))
    assert re.fullmatch(r"[\d,]+ \(KV-bound: [\d,]+ run at once, the rest queue\)", vllm["users per replica"])


def test_unknown_model_name_plans_as_generic_with_a_note():
    at = app().run()
    at.session_state["answers"] = {"model": {"name": "llama-9-7b", "params_b": 7}}
    at.switch_page("pages/3_Recommendation.py").run()
    assert not at.exception and not at.error
    text = " ".join(x.value for x in [*at.markdown, *at.info, *at.warning, *at.caption])
    assert "is not in the catalogue" in text and "llama-2-7b" in text


def test_hardware_page_plans_for_other_hardware():
    at = app().run()
    at.switch_page("pages/2_Hardware.py").run()
    assert not at.exception
    at.radio(key="hw_mode").set_value("other").run()
    at.selectbox(key="hw_gpu").set_value("h100-sxm").run()
    hw = parse_answers(at.session_state["answers"]).hardware
    assert hw.gpu_vendor == "nvidia" and hw.gpu_memory_gb >= 80 and hw.gpu_model == "NVIDIA H100 SXM"
    at.number_input(key="hw_ram").set_value(256).run()
    assert parse_answers(at.session_state["answers"]).hardware.ram_gb == 256


def test_a_cpu_target_described_on_the_hardware_page_gets_its_prediction_once_its_figures_are_given():
    """A CPU server that is not this machine: the decode reads its memory and a prompt runs at its FLOPS, so
    without those figures it gets no prediction (and the plan says which field to fill); the page asks for them and
    the ISA, and keeps them when the GPU choice is changed and changed back."""
    at = app().run()
    at.session_state["answers"] = {"concurrency": 2, "ttft_p95_ms": 5000, "model": {
        "name": "llama-3.1-8b", "precision": "q4_k_m", "context_tokens": 4096}}
    at.switch_page("pages/2_Hardware.py").run()
    at.radio(key="hw_mode").set_value("other").run()
    at.selectbox(key="hw_gpu").set_value("none").run()
    at.number_input(key="hw_cores").set_value(32).run()
    at.number_input(key="hw_ram").set_value(128).run()
    at.switch_page("pages/3_Recommendation.py").run()
    assert not at.exception
    text = " ".join(m.value for m in [*at.markdown, *at.caption])
    assert "give hardware.cpu_bandwidth_gb_s" in text
    at.switch_page("pages/2_Hardware.py").run()
    at.selectbox(key="hw_arch").set_value("x86_64").run()
    at.number_input(key="hw_cpubw").set_value(200.0).run()
    at.switch_page("pages/3_Recommendation.py").run()
    text = " ".join(m.value for m in [*at.markdown, *at.caption])
    assert "Decode bound: 200.0 GB/s" in text and "give hardware.cpu_gflops" in text  # a bound, not a prediction
    assert "not predicted: no FLOPS figure for the CPU" in text
    at.switch_page("pages/2_Hardware.py").run()
    at.number_input(key="hw_cpuflops").set_value(2000.0).run()
    at.selectbox(key="hw_gpu").set_value("h100-sxm").run()
    at.selectbox(key="hw_gpu").set_value("none").run()
    hw = parse_answers(at.session_state["answers"]).hardware
    assert (hw.gpu_vendor, hw.cpu_bandwidth_gb_s, hw.cpu_gflops, hw.cpu_arch, hw.cpu_cores) == (
        "none", 200.0, 2000.0, "x86_64", 32)
    assert at.number_input(key="hw_cpubw").value == 200.0
    at.switch_page("pages/3_Recommendation.py").run()
    assert not at.exception
    text = " ".join(m.value for m in [*at.markdown, *at.caption])
    assert "give hardware.cpu_" not in text and "not predicted: no FLOPS figure" not in text
    assert "rough: tok/s" in text  # llama.cpp's prediction on the x86 CPU class, labelled rough


@pytest.mark.parametrize("lang,word", [("en", "Install"), ("zh", "安装")])
def test_hardware_page_shows_install_commands_whole(lang, word, monkeypatch):
    """Walk-3 L10: at 1300 px the table's "install with" column was cut ("pip install uv && uv pip insta…"). Each
    missing engine's command is a code block that wraps, with its copy button, and no table column holds it."""
    from advisor.inputs.hardware import EngineInstall

    import ui.planning

    real = ui.planning.hardware()
    long = ("pip install uv && uv pip install --prerelease=allow sglang  # Linux, CUDA 13 driver (R580+); brings "
            "sglang-kernel and flashinfer")
    engines = [e if e.engine != "sglang" else EngineInstall(engine="sglang", import_name="sglang",
                                                               distribution="sglang", installed=False,
                                                               install_hint=long) for e in real.engines]
    fake = real.model_copy(update={"engines": engines})
    monkeypatch.setattr(ui.planning, "hardware", lambda: fake)
    monkeypatch.setattr(ui, "hardware", lambda: fake)  # the page takes it from the room
    at = app()
    at.session_state["lang"] = lang
    at.run()
    at.switch_page("pages/2_Hardware.py").run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if len(d.value) == len(engines))
    assert not any(long in str(v) for v in table.to_numpy().ravel())
    blocks = {c.value: c for c in at.code}
    assert long in blocks and blocks[long].language == "bash" and blocks[long].proto.wrap_lines
    missing = [e for e in engines if not e.installed]
    assert len([c for c in at.code if c.language == "bash"]) >= len(missing)
    assert any(m.value.startswith(word) and "SGLang" in m.value for m in at.markdown)


def test_gpu_chosen_at_step_3_survives_the_hardware_page_and_back():
    at = app().run()
    at.switch_page("pages/1_Checklist.py").run()
    for _ in range(2):
        at.button(key="next").click().run()
    at.radio(key="q3_mode").set_value("other").run()
    at.selectbox(key="q3_gpu").set_value("rtx-4090" if "rtx-4090" in at.selectbox(key="q3_gpu").options
                                         else next(o for o in at.selectbox(key="q3_gpu").options if "4090" in o)).run()
    at.number_input(key="q3_count").set_value(2).run()
    want = at.session_state["answers"]["hardware"]
    assert want["gpu_count"] == 2 and "4090" in want["gpu_model"]
    at.switch_page("pages/2_Hardware.py").run()
    assert not at.exception
    assert at.session_state["answers"]["hardware"] == want
    assert at.radio(key="hw_mode").value == "other"
    at.switch_page("pages/1_Checklist.py").run()
    at.button(key="back").click().run()
    at.button(key="next").click().run()
    assert at.session_state["answers"]["hardware"] == want
    at.switch_page("pages/3_Recommendation.py").run()
    text = " ".join(m.value for m in at.markdown)
    assert "has no GPU" not in text and "none GPU" not in text


def test_known_model_fills_params_and_architecture_and_keeps_the_users_context():
    """The walk's H1: picking Llama-3.1-8B set the context to its 131,072-token maximum, and nothing fit."""
    at = app().run()
    at.session_state["wizard_step"] = 8
    at.switch_page("pages/1_Checklist.py").run()
    at.number_input(key="m_ctx").set_value(8192).run()
    at.selectbox(key="m_name").set_value("llama-3.1-8b").run()
    m = at.session_state["answers"]["model"]
    assert m["name"] == "llama-3.1-8b" and m["params_b"] == 8.03 and m["context_tokens"] == 8192
    assert at.number_input(key="m_params_known_llama-3.1-8b").value == 8.03  # the named model's own size
    assert at.number_input(key="m_ctx").value == 8192
    assert any("131,072" in c.value for c in at.caption)  # the maximum is said, as information
    at.number_input(key="m_ctx").set_value(200_000).run()
    at.selectbox(key="m_name").set_value("smollm2-135m").run()  # a context beyond the window is cut to it
    assert at.session_state["answers"]["model"]["context_tokens"] == 8192


def test_picking_a_model_stored_below_16_bits_plans_it_as_stored_unless_another_precision_was_chosen():
    """gpt-oss-120b's checkpoint is MXFP4 (one 80 GB GPU serves it); planned at the default fp16 it needs 218 GiB and
    fits nothing. A precision the user chose other than the default stays."""
    at = app().run()
    at.session_state["wizard_step"] = 8
    at.switch_page("pages/1_Checklist.py").run()
    at.selectbox(key="m_name").set_value("gpt-oss-120b").run()
    assert at.session_state["answers"]["model"]["precision"] == "fp4"
    assert at.selectbox(key="m_prec").value == "fp4"
    at.selectbox(key="m_name").set_value("deepseek-r1").run()  # the fp4 was the previous pick's, not a choice
    assert at.session_state["answers"]["model"]["precision"] == "fp8"
    at.selectbox(key="m_name").set_value("llama-3.1-8b").run()  # a 16-bit checkpoint: back to the default
    assert at.session_state["answers"]["model"]["precision"] == "fp16"
    at.selectbox(key="m_prec").set_value("bf16").run()
    at.selectbox(key="m_name").set_value("deepseek-r1").run()  # bf16 was chosen: kept
    assert at.session_state["answers"]["model"]["precision"] == "bf16"


def test_answers_replaced_as_a_whole_show_in_the_widgets():
    """What the upload callback stores (the callback itself runs in the browser journey: AppTest has no
    file_uploader) is what the checklist then shows, not the value the widget held before."""
    at = app().run()
    at.switch_page("pages/1_Checklist.py").run()
    at.number_input(key="q_concurrency").set_value(12).run()
    raw = (Path(__file__).resolve().parents[2] / "examples" / "startup-chat-api.yaml").read_bytes()
    from advisor.inputs.answers import answers_from_text

    a, n = answers_from_text(raw, "startup-chat-api.yaml")
    at.session_state["answers"] = a.model_dump(mode="json", exclude_none=True)  # what the upload callback stores
    at.run()
    assert at.number_input(key="q_concurrency").value == a.concurrency != 12
    assert n >= 5


def test_bad_answers_file_is_one_line_naming_every_unknown_key():
    from advisor.inputs.answers import AnswersError, answers_from_text

    with pytest.raises(AnswersError) as e:
        answers_from_text(b"concurency: 3\nttft: 200\n", "a.yaml")
    assert "'concurency'" in str(e.value) and "'ttft'" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(AnswersError) as e:
        answers_from_text(b"concurrency: [1\n", "a.yaml")
    assert str(e.value).startswith("a.yaml: not valid YAML at line") and "\n" not in str(e.value)
    with pytest.raises(AnswersError, match="duplicate key"):
        answers_from_text(b"concurrency: 1\nconcurrency: 2\n", "a.yaml")


def test_state_is_restored_from_the_url_after_a_reload():
    from ui import decode_answers, encode_answers

    data = {"concurrency": 32, "model": {"name": "llama-3.1-8b", "params_b": 8.03}}
    assert decode_answers(encode_answers(data)) == data
    assert decode_answers("not base64 !!") is None
    assert decode_answers("A" * 100_000) is None
    at = app()
    at.query_params["a"] = encode_answers(data)
    at.query_params["lang"] = "zh"
    at.query_params["runs"] = "3,7,x,99999999999"
    at.run()
    assert not at.exception
    assert at.session_state["answers"]["concurrency"] == 32 and at.session_state["lang"] == "zh"
    assert at.session_state["report_runs"] == [3, 7]


def test_probe_page_runs_llama_cpp_saves_and_selects_the_result():
    from advisor.evidence import history
    from ui import probe_board

    at = app().run()
    at.switch_page("pages/4_Probe.py").run()
    assert not at.exception
    at.multiselect(key="probe_engines").set_value(["llama.cpp"])
    at.number_input(key="probe_requests").set_value(2)
    at.number_input(key="probe_tokens").set_value(8)
    at.button(key="run_probe").click().run()
    assert not at.exception
    job = probe_board().get(at.session_state["watch_job"])
    assert job is not None and job.finished.wait(180)
    # the job saved its result itself, whatever the page did
    assert job.results[0].status == "ok", job.results[0].reason
    assert job.run_ids[0] in [rid for rid, _, _ in history.list_runs()]
    at.run()
    assert not at.exception
    assert at.session_state["report_runs"] == job.run_ids
    assert any("TTFT" in str(c) for c in at.dataframe[0].value.columns)
    assert f"#{job.run_ids[0]} llama.cpp" in at.dataframe[0].value.iloc[0].tolist()
    # the plan rebuilt for what the probe ran, against what it measured
    assert any(h.value == "Predicted vs measured" for h in at.subheader)
    text = " ".join(m.value for m in at.markdown)
    assert "llama.cpp: predicted" in text and "memory-bandwidth limit" in text
    assert any(b.proto.label.startswith(f"Result #{job.run_ids[0]} llama.cpp") for b in at.get("download_button"))


def test_probe_page_refuses_a_bad_endpoint_before_running():
    from ui import probe_board

    at = app().run()
    at.switch_page("pages/4_Probe.py").run()
    at.radio(key="probe_mode").set_value("endpoint").run()
    at.text_input(key="probe_endpoint").set_value("localhost:8000 oops").run()
    at.button(key="run_probe").click().run()
    assert not at.exception
    assert "http(s) URL" in at.error[0].value
    assert probe_board().current is None


def test_report_page_shows_markdown_at_once_and_builds_the_pdf_when_asked():
    at = app().run()
    at.switch_page("pages/5_Report.py").run(timeout=120)
    assert not at.exception
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download report (.md)" in labels and "Download report (.pdf)" not in labels
    assert any("# Inference-engine decision report" in m.value for m in at.markdown)
    at.button(key="build_pdf").click().run(timeout=180)
    assert not at.exception
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download report (.pdf)" in labels


def test_recommendation_page_shows_can_it_run_this_with_sources():
    at = app().run()
    at.session_state["answers"] = {"concurrency": 8, "model": {"params_b": 8, "precision": "int4"},
                                   "hardware": {"gpu_vendor": "nvidia", "gpu_model": "L4", "gpu_count": 1,
                                                "gpu_memory_gb": 24, "os": "windows"}}
    at.switch_page("pages/3_Recommendation.py").run()
    assert not at.exception
    assert "Can it run this? (the engines' own docs)" in [s.value for s in at.subheader]
    table = next(m.value for m in at.markdown if m.value.startswith("| your workload"))
    row = next(line for line in table.splitlines() if line.startswith("| OS: Windows (native)"))
    assert row.count(":red[●]\u00a0[unsupported](https://") == 3  # vLLM, SGLang and TensorRT-LLM, linked to the doc
    excluded = " ".join(m.value for m in at.markdown)
    assert "vLLM cannot run this as asked" in excluded


def test_hardware_page_says_what_each_engine_lacks_and_the_kv_dtype_is_an_answer():
    at = app().run()
    at.session_state["answers"] = {"hardware": {"gpu_vendor": "apple", "gpu_model": "M2 Ultra", "gpu_count": 1,
                                                "gpu_memory_gb": 192, "os": "macos", "cpu_arch": "arm64"}}
    at.switch_page("pages/2_Hardware.py").run()
    assert not at.exception
    lacks = [m.value for m in at.markdown if m.value.startswith("- **")]
    trt = next(x for x in lacks if x.startswith("- **TensorRT-LLM**"))
    assert "unsupported: macOS" in trt and "unsupported: Apple Metal" in trt
    assert next(x for x in lacks if x.startswith("- **llama.cpp**")).endswith("nothing on these axes")
    at.switch_page("pages/1_Checklist.py").run()
    at.session_state["wizard_step"] = 8  # the model step, after the 8 questions
    at.run()
    box = next(s for s in at.selectbox if s.label == "KV-cache precision")
    box.set_value("fp8").run()
    assert at.session_state["answers"]["model"]["kv_cache_dtype"] == "fp8"


@pytest.fixture
def h200_here(monkeypatch):
    """This machine with an NVIDIA H200 and a CPU-only llama-cpp-python build. Both are faked: no GPU exists here
    (NVML's answer is replaced by a detected Hardware holding the GPU, and the child-process check of the build)."""
    import streamlit as st

    import advisor.inputs
    import probes.cli

    real = advisor.inputs.detect

    def detect(knowledge):
        hw = real(knowledge)
        return hw.model_copy(update={"gpu_vendor": "nvidia", "gpus": [advisor.inputs.GpuInfo(
            index=0, vendor="nvidia", name="NVIDIA H200", memory_total_mb=143_771, compute_capability="9.0")]})

    monkeypatch.setattr(advisor.inputs, "detect", detect)
    monkeypatch.setattr(probes.cli, "llama_gpu_offload", lambda: False)
    st.cache_resource.clear()
    yield
    st.cache_resource.clear()  # the next test sees this machine again


def test_a_cpu_llama_build_on_a_gpu_machine_is_said_with_the_rebuild_command(h200_here):
    at = app().run()
    at.switch_page("pages/2_Hardware.py").run()
    assert not at.exception
    warning = " ".join(w.value for w in at.warning)
    assert "llama-cpp-python is a CPU build" in warning and 'CMAKE_ARGS="-DGGML_CUDA=on"' in warning


def test_the_probe_page_warns_before_a_cpu_run_for_a_gpu_target():
    at = app().run()
    at.session_state["answers"] = {"hardware": {"gpu_vendor": "nvidia", "gpu_model": "L40S", "gpu_count": 2,
                                                "gpu_memory_gb": 48}}
    at.switch_page("pages/4_Probe.py").run()
    assert not at.exception
    info = " ".join(i.value for i in at.info)
    assert "A probe here runs on this machine's CPU; your target is 2 × L40S" in info


def test_two_nodes_of_eight_gpus_plan_tensor_in_a_node_and_pipeline_across():
    at = app().run()
    at.switch_page("pages/2_Hardware.py").run()
    at.radio(key="hw_mode").set_value("other").run()
    at.selectbox(key="hw_gpu").set_value("h100-sxm").run()
    at.number_input(key="hw_count").set_value(8).run()
    at.number_input(key="hw_nodes").set_value(2).run()
    at.selectbox(key="hw_ic").set_value("infiniband").run()
    assert not at.exception
    hw = parse_answers(at.session_state["answers"]).hardware
    assert (hw.nodes, hw.gpus_per_node, hw.gpu_count, hw.interconnect) == (2, 8, 16, "infiniband")
    assert at.number_input(key="hw_count").label == "GPUs per node"
    at.session_state["answers"] = {**at.session_state["answers"],
                                   "model": {"name": "llama-3.1-405b", "precision": "bf16", "context_tokens": 8192}}
    at.switch_page("pages/3_Recommendation.py").run()
    assert not at.exception
    text = " ".join(c.value for c in at.caption)
    assert "Topology: 2 node(s) × 8 GPU(s) (InfiniBand)" in text
    cells = " ".join(m.value for m in at.markdown)  # the plan table is Markdown
    assert "pipeline parallel over 2 nodes" in cells


def test_a_named_model_shows_its_attention_and_an_unknown_name_is_kept_and_said():
    at = app().run()
    at.session_state["answers"] = {"model": {"name": "deepseek-ai/DeepSeek-V3", "params_b": 671}}
    at.session_state["wizard_step"] = 8
    at.switch_page("pages/1_Checklist.py").run()
    assert not at.exception
    assert at.selectbox(key="m_name").value == "deepseek-v3"
    assert "multi-head latent (MLA)" in " ".join(c.value for c in at.caption)
    at.session_state["answers"] = {"model": {"name": "my-own-finetune-13b", "params_b": 13}}
    at.switch_page("pages/3_Recommendation.py").run()
    at.switch_page("pages/1_Checklist.py").run()
    assert not at.exception
    assert "my-own-finetune-13b" in at.warning[0].value
    assert at.session_state["answers"]["model"]["name"] == "my-own-finetune-13b"  # kept, not overwritten


def test_a_pasted_config_json_plans_that_model_and_a_bad_one_keeps_the_answers(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERENCE_ADVISOR_CACHE", str(tmp_path))
    at = app().run()
    at.session_state["wizard_step"] = 8
    at.switch_page("pages/1_Checklist.py").run()
    cfg = {"model_type": "qwen3", "hidden_size": 4096, "num_hidden_layers": 36, "num_attention_heads": 32,
           "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 12288, "vocab_size": 151936,
           "max_position_embeddings": 40960, "tie_word_embeddings": False, "_name_or_path": "Qwen/Qwen3-8B"}
    at.text_area(key="m_config_text").set_value(json.dumps(cfg)).run()
    at.button(key="m_config_use").click().run()
    assert not at.exception
    path = at.session_state["answers"]["model"]["path"]
    assert Path(path).parent == tmp_path / "configs" and "name" not in at.session_state["answers"]["model"]
    assert any("Planned from model.path" in x.value for x in at.info)
    before = dict(at.session_state["answers"])
    at.text_area(key="m_config_text").set_value("[" * 50_000).run()
    at.button(key="m_config_use").click().run()
    assert not at.exception and at.session_state["answers"] == before
    assert "nested too deeply" in at.error[0].value
    at.switch_page("pages/3_Recommendation.py").run()
    assert not at.exception
    assert "Qwen/Qwen3-8B" in " ".join(c.value for c in at.caption)


NOVA_MOE = {"architectures": ["NovaMoeForCausalLM"], "model_type": "nova_moe", "hidden_size": 2048,
            "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
            "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8,
            "vocab_size": 151936, "max_position_embeddings": 40960, "tie_word_embeddings": False}


@pytest.mark.parametrize("lang,shape", [
    ("en", "The file gives 30.5 B parameters (3.35 B active), 48 layers, 128 experts (8 per token), 4 KV heads of 32 "
           "attention heads (architecture NovaMoeForCausalLM)."),
    ("zh", "文件给出：30.5 B 参数（激活 3.35 B），48 层，128 个专家（每 token 8 个），32 个注意力头、4 个 KV 头（架构 "
           "NovaMoeForCausalLM）。")])
def test_an_uploaded_config_json_echoes_its_shape_and_shows_its_own_size(lang, shape, tmp_path, monkeypatch):
    """Walk-3 L6: after the upload the step said only "Read nova-moe-config.json", and the parameter field still
    showed the previous model's 32.80. The shape read is echoed at the upload, and the size field shows the file's
    (greyed: the file decides), never the earlier model's; the answers' own params_b is not written over."""
    monkeypatch.setenv("INFERENCE_ADVISOR_CACHE", str(tmp_path))
    at = app()
    at.session_state["answers"] = {"model": {"name": "qwen3-32b", "params_b": 32.8}}
    at.session_state["lang"] = lang
    at.session_state["wizard_step"] = 8
    at.run()
    at.switch_page("pages/1_Checklist.py").run()
    assert at.selectbox(key="m_name").value == "qwen3-32b"
    at.file_uploader(key="m_config").set_value(("nova-moe-config.json", json.dumps(NOVA_MOE).encode(),
                                                 "application/json")).run()
    assert not at.exception
    model = at.session_state["answers"]["model"]
    assert Path(model["path"]).parent == tmp_path / "configs" and "name" not in model
    assert model["params_b"] == 32.8  # the answers keep what was there; the file wins in the plan
    assert shape in [c.value for c in at.caption]
    size = next(x for x in at.number_input if x.key.startswith("m_params_file_"))
    assert size.disabled and size.value == 30.53
    assert not any(x.key == "m_params" for x in at.number_input)  # the earlier model's 32.8 is not in view
    # a file that cannot be read leaves the field blank, and says why
    Path(model["path"]).write_text("{}", encoding="utf-8")
    at.run()
    assert not at.exception
    size = next(x for x in at.number_input if x.key.startswith("m_params_file_"))
    assert size.disabled and size.value is None and at.warning


def test_a_pasted_config_without_heads_names_the_file_once(tmp_path, monkeypatch):
    """Walk-3 L6: "config.json cannot be used: config.json: config.json gives no attention head count …"."""
    monkeypatch.setenv("INFERENCE_ADVISOR_CACHE", str(tmp_path))
    at = app()
    at.session_state["wizard_step"] = 8
    at.run()
    at.switch_page("pages/1_Checklist.py").run()
    bad = {k: v for k, v in NOVA_MOE.items() if k != "num_attention_heads"}
    at.text_area(key="m_config_text").set_value(json.dumps(bad)).run()
    at.button(key="m_config_use").click().run()
    text = at.error[0].value
    assert "config.json cannot be used: config.json gives no attention head count" in text
    assert text.count("config.json") == 2, text  # once as the file, once as what it lacks a count in
    assert "attention head" in text


def test_nothing_fits_leads_the_recommendation_page():
    at = app().run()
    at.session_state["answers"] = {"concurrency": 4, "model": {"name": "llama-3.1-70b", "precision": "fp16"},
                                   "hardware": {"gpu_vendor": "nvidia", "gpu_model": "RTX 4090", "gpu_count": 1}}
    at.switch_page("pages/3_Recommendation.py").run()
    assert not at.exception
    assert at.error[0].value.startswith("Nothing fits as asked on this hardware")
    assert "hardware.ram_gb" in at.error[0].value
    at.number_input(key="ask_ram").set_value(512).run()  # asked where it decides; the answer is the user's
    assert not at.exception and at.session_state["answers"]["hardware"]["ram_gb"] == 512
    assert not at.error or not at.error[0].value.startswith("Nothing fits as asked")


# ---------------------------------------------------------------- phones, uploads, the focus frame

def test_a_phone_has_a_language_switch_outside_the_sidebar():
    """On a phone the sidebar starts collapsed: a compact switch at the top of the main area sets the same
    `lang` as the sidebar's (and each is seeded from it, so they never disagree)."""
    at = app().run()
    top = at.segmented_control(key="_lang_top")
    assert top.value == "en" and top.options == ["English", "中文"] and top.label == at.sidebar.radio[0].label
    top.set_value("zh").run()
    assert not at.exception and at.session_state["lang"] == "zh" and at.title[0].value == "推理引擎选型助手"
    at.switch_page("pages/2_Hardware.py").run()
    assert at.title[0].value == "硬件" and at.session_state["lang"] == "zh"
    at = app()
    at.session_state["lang"] = "zh"  # set by either switch (or the URL): both show it
    at.run()
    assert at.segmented_control(key="_lang_top").value == "zh" and at.sidebar.radio(key="_lang_pick").value == "zh"


def test_next_moves_the_focus_with_st_iframe_and_no_deprecation_warning():
    """The focus script after Back/Next is an st.iframe (components.html is deprecated): no warning is logged
    or shown, and each step's frame is a new document (its script runs again)."""
    import logging

    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    loggers = [logging.getLogger(n) for n in ("streamlit.deprecation_util", "streamlit.elements.iframe")]
    for lg in loggers:
        lg.addHandler(handler)
    try:
        at = app().run()
        at.switch_page("pages/1_Checklist.py").run()
        at.button(key="next").click().run()
        frames = at.get("iframe")
        assert len(frames) == 1 and "focus(" in frames[0].proto.srcdoc and "step 1" in frames[0].proto.srcdoc
        at.button(key="next").click().run()
        assert "step 2" in at.get("iframe")[0].proto.srcdoc
        assert not at.exception and not at.warning and not [m for m in seen if "deprecat" in m.lower()], seen
    finally:
        for lg in loggers:
            lg.removeHandler(handler)
    assert "components.v1" not in (Path(__file__).resolve().parents[2] / "pages" / "1_Checklist.py").read_text()


def test_answers_upload_takes_json_and_states_one_limit():
    at = app()
    at.session_state["wizard_step"] = 8
    at.run()
    at.switch_page("pages/1_Checklist.py").run()
    up = at.file_uploader(key="upload")
    assert set(up.allowed_type) == {".yaml", ".yml", ".json"} and up.help
    assert any("256 KiB" in c.value for c in at.caption)  # the app's own limit, the only one stated
    assert not any("1MB" in c.value or "200MB" in c.value for c in at.caption)
    body = json.dumps({"concurrency": 12, "model": {"name": "llama-3.1-8b"}}, indent="\t").encode()
    up.set_value(("answers.json", body, "application/json")).run()
    assert not at.exception and at.session_state["answers"]["concurrency"] == 12
    assert at.success[0].value == "Loaded 2 answers from answers.json."
    at.session_state["lang"] = "zh"
    at.run()
    at.file_uploader(key="upload").set_value(("big.yaml", b"#" * (300 * 1024), "application/x-yaml")).run()
    assert at.session_state["answers"]["concurrency"] == 12  # refused: the answers before it are kept
    assert "big.yaml 大小为 300 KiB；答案文件最大 256 KiB。" in at.error[0].value


def test_charts_keep_their_legend_below_and_no_mode_bar():
    at = app().run()
    at.session_state["answers"] = {"concurrency": 4, "model": {"name": "llama-3-70b", "precision": "fp16"},
                                   "hardware": {"gpu_vendor": "nvidia", "gpu_model": "RTX 4090", "gpu_count": 1}}
    at.switch_page("pages/3_Recommendation.py").run()
    assert not at.exception
    charts = at.get("plotly_chart")
    assert len(charts) == 4
    for c in charts:
        assert json.loads(c.proto.config) == {"displayModeBar": False}
        layout = json.loads(c.proto.spec)["layout"]
        assert layout["height"] >= 320 and layout["margin"]["r"] <= 40
        if layout.get("showlegend"):
            lg = layout["legend"]
            assert lg["orientation"] == "h" and lg["y"] < 0 and lg["xanchor"] == "left"


def test_streamlit_upload_cap_is_the_one_the_uploaders_pass():
    import tomllib

    from ui import EVIDENCE_MAX_MB, UPLOAD_MAX_MB

    config = tomllib.loads((Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml").read_text())
    # the server's cap is the largest a widget passes (a benchmark file's); each widget passes its own
    assert config["server"]["maxUploadSize"] == max(UPLOAD_MAX_MB, EVIDENCE_MAX_MB) == EVIDENCE_MAX_MB
    assert UPLOAD_MAX_MB == 1

"""Every page in zh speaks Chinese: no ASCII-only word outside an allow-list of names, units and ids.

Walks each page with AppTest in zh (with a GPU target, a known model and one saved probe result, so the
tables, plans and verdicts are drawn) and collects what a reader sees: titles, text, captions, widget labels
and options, table headers and cells, alerts and buttons. URLs, file names and code are not prose.
"""
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ALLOW = {
    # engines, formats, products and vendors
    "vllm", "vllm-cpu", "sglang", "sgl-kernel", "radixattention", "tensorrt", "tensorrt-llm", "trt", "onnx", "onnxruntime", "onnxruntime-genai", "runtime",
    "generator",  # onnxruntime-genai's Generator API
    # products, APIs and projects named in the support matrix and the seeds' claims (proper nouns)
    "genai", "adreno", "ampere", "ada", "hopper", "blackwell", "volta", "turing", "llava", "llava-next", "migraphx",
    "mamba", "mistral3", "modelopt", "opencl", "optimum", "quark", "squeezellm", "torchao", "triton", "webgpu",
    "zendnn", "zdnn", "bitsandbytes", "vllm-metal", "silicon", "cc", "inference", "server", "whisper", "bart",
    "mbart", "t5", "flan-t5", "bert", "vila", "qwen2-vl", "gemma", "foundry", "local", "windows", "ml", "vs",
    "code", "ai", "toolkit", "marlin", "sycl", "hip", "kleidiai", "wsl", "wsl2", "sentence-transformers",
    "llama", "cpp", "llama.cpp", "pytorch", "transformers", "gguf", "ggml", "smollm2", "smollm", "instruct", "hf",
    "huggingface", "nvidia", "amd", "intel", "apple", "geforce", "rtx", "tesla", "instinct", "mi300x", "arc", "xpu",
    "rocm", "cuda", "cudnn", "metal", "vulkan", "openvino", "directml", "coreml", "epyc", "xeon", "arm", "arm64",
    "x86", "x86_64", "avx", "avx2", "avx512", "fma", "f16c", "amx", "neon", "sve", "linux", "windows", "macos", "wsl",
    "ubuntu", "debian", "python", "pip", "pip3", "openai", "api", "http", "https", "url", "json", "yaml", "pdf", "md",
    "csv", "github", "meta", "mistral", "qwen", "gemma", "phi", "deepseek", "mixtral", "glm", "chatglm", "t5",
    "bert", "whisper", "bart", "falcon", "yi", "moe", "gpu", "gpus", "cpu", "cpus", "npu", "ram", "vram", "hbm",
    "gddr", "os", "sla", "kv", "ttft", "itl", "tpot", "rss", "p50", "p95", "p99", "sxm", "pcie", "nvl", "max",
    "ultra", "pro", "lora", "awq", "gptq", "fp8", "fp16", "bf16", "fp32", "int8", "int4", "q4_k_m", "q4_0", "q8_0",
    "q5_k_m", "q6_k", "q4_1", "q2_k", "q3_k_m", "iq4_xs", "q4_k_s", "q5_k_s", "ort_int4", "gguf_f16", "mha", "gqa",
    "nvml", "tflops", "flops", "llm", "llms", "ci", "ngl", "ubatch", "batch", "ctx", "kernel", "seed", "decoder",
    "encoder", "decoder-only", "encoder-decoder", "encoder-only", "cnn", "transformer", "id", "ids", "b", "m2",
    "m3", "m4", "a10", "a100", "h100", "h200", "l4", "l40s", "t4", "rtx3090", "mac", "paged", "attention",
    "pagedattention", "tensor", "tok", "ms", "gib", "gb", "mb", "kib", "mib", "tb", "s", "x", "ok", "token",
    "cache", "hugging", "face", "bit", "silu", "swiglu", "gelu", "venv", "base", "matmulnbits",  # technical terms kept in zh prose
    "torch", "endpoint",  # the endpoint probe's engine id ("#12 endpoint")
    "avx512f", "avx512bw", "avx512vl", "avx512cd", "avx512dq", "llama-2", "qwen2",  # CPU flags, model families
    "guidellm", "aiperf", "bench", "llm-d", "jsonl",  # the benchmark tools and formats the Probe page reads
    "docker", "rank", "sub-numa", "generate", "np", "serve",  # a product, a parallelism term, a CPU mode, APIs (generate(), transformers serve), -np
}
PROSE_EXCLUDE = re.compile(
    r"https?://[^\s)（）“”]+|<https?://[^>]+>|`[^`]*`|“[^”]*”|\b[\w.-]+\.(txt|py|yaml|yml|json|gguf|md|pdf)\b"  # links, code, quotes
    r"|\b[\w-]+/[\w./-]+|\d+_[0-9a-f]{16}\S*|§\S*|--[\w-]+|&\w+;"  # paths, seed files, flags, entities
    r"|\b\w+_\w+\b|\d+(\.\d+)?e\d+|\bv\d+(\.[\dx]+)*\b"  # identifiers (config keys), 70e9, versions
    r"|\b\d+(\.\d+)+(rc|post|a|b)\d+\b|\bb\d{4,}\b"  # pre-release versions (1.4.0rc1), llama.cpp builds (b12464)
    r"|:[a-z]+(-background)?\["  # Streamlit colour directives (:green[●])
    r"|\b[A-Za-z][\w]*(-[\w.]+)*-\d+(\.\d+)?[BbMm]\b(-[A-Za-z]+)?"  # model names: Llama-3.1-8B, SmolLM2-135M
    r"|\b[a-z0-9]+(-[a-z0-9.]+)+\b"  # ids: rule ids, model ids, engine ids, commands (trtllm-build)
    r"|\b[A-Z][A-Za-z0-9_]*(For[A-Z][A-Za-z]+|Model)\b")  # architecture classes (LlamaForCausalLM, BertModel)
LANGUAGE_SWITCHES = ("_lang_pick", "_lang_top")
WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.+-]*[A-Za-z0-9]|[A-Za-z]")


def _texts(at) -> list[str]:
    out = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "info", "success", "warning", "error",
                 "exception"):
        out += [getattr(e, "value", "") or "" for e in getattr(at, kind)]
    for kind in ("button", "radio", "selectbox", "multiselect", "number_input", "text_input", "checkbox",
                 "segmented_control", "file_uploader"):
        for e in getattr(at, kind):
            if getattr(e, "key", None) in LANGUAGE_SWITCHES:  # names each language in its own: "English", "中文"
                continue
            out += [e.label, getattr(e, "help", "") or "", getattr(e, "placeholder", "") or ""]
            out += [str(o) for o in getattr(e, "options", []) or []]
    for d in at.dataframe:
        df = d.value
        df = df.drop(columns=[c for c in df.columns if c in ("原文", "最常见原因")])  # verbatim: seeds', engines' words
        out += [str(c) for c in df.columns]
        cells = [str(v) for v in df.astype(str).values.ravel().tolist()]
        out += [c for c in cells if c not in ("None", "nan")  # an empty cell, as pandas writes it
                and not c.startswith(("pip", "apt", "make", "CMAKE", "python"))]  # commands
    return out


def _english_words(text: str, machine_names: tuple[str, ...] = ()) -> set[str]:
    for name in machine_names:  # what this machine calls its CPU ("Intel(R) Xeon(R) Processor") is not our prose
        text = text.replace(name, " ")
    text = PROSE_EXCLUDE.sub(" ", text)
    return {w for w in WORD.findall(text) if w.lower() not in ALLOW and not w.isupper()}


def _machine_names(k, hw) -> tuple[str, ...]:
    """Product names are not prose: this machine's CPU/GPU, and the accelerator catalogue the GPU picker lists."""
    return tuple(sorted({n for n in (hw.cpu.model, *(g.name for g in hw.gpus), *(g.name for g in k.gpus.gpus)) if n},
                        key=len, reverse=True))


def test_every_page_in_chinese_has_no_english_prose(tmp_path):
    from advisor.evidence import history
    from advisor.inputs import detect
    from advisor.knowledge import load_knowledge
    from probes.result import Percentiles, ProbeResult, RequestRecord

    k = load_knowledge()
    hw = detect(k)
    machine_names = _machine_names(k, hw)

    res = ProbeResult(engine="llama.cpp", status="ok", requests_total=2, requests_ok=2, device="cpu",
                      ttft_ms=Percentiles(p50=50.0, p95=60.0, p99=61.0), itl_ms=Percentiles(p50=10.0, p95=12.0),
                      decode_tps_per_request=Percentiles(p50=90.0), output_tps_total=88.0, goodput=1.0,
                      ttft_target_ms=1000.0, requests=[RequestRecord(index=0, submitted_s=0.0, first_token_s=0.05,
                                                                     token_times_s=[0.05, 0.06], finished_s=0.06)])
    rid = history.save(res)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=120)
    at.session_state["lang"] = "zh"
    at.session_state["answers"] = {"concurrency": 8, "model_update": "weekly",
                                   "hardware": {"gpu_vendor": "none", "gpu_count": 0, "ram_gb": 64},
                                   "model": {"name": "llama-3.1-8b", "params_b": 8.03, "precision": "q4_k_m"}}
    at.session_state["report_runs"] = [rid]
    at.run()
    found: dict[str, set[str]] = {}
    for page in ("pages/0_Home.py", "pages/1_Checklist.py", "pages/2_Hardware.py", "pages/3_Recommendation.py",
                 "pages/4_Probe.py", "pages/5_Report.py"):
        at.switch_page(page).run()
        assert not at.exception, page
        words = set().union(*(_english_words(t, machine_names) for t in _texts(at)))
        if words:
            found[page] = words
    assert not found, "; ".join(f"{p}: {' '.join(sorted(w))}" for p, w in found.items())


@pytest.fixture
def detection_fails(monkeypatch):
    """Hardware detection as on a machine where NVML fails: `fail(code, detail)` sets what it finds; the app's
    cached detection is cleared before and after, so no other test sees the simulated machine."""
    import ui
    from advisor.inputs import hardware as hwmod

    monkeypatch.setattr(hwmod, "_rocm", lambda: [])
    monkeypatch.setattr(hwmod, "_xpu", lambda: [])
    monkeypatch.setattr(hwmod.platform, "system", lambda: "Linux")  # no Apple GPU stands in for the missing one

    def fail(code: str, detail: str | None) -> None:
        monkeypatch.setattr(hwmod, "_nvml", lambda: ([], None, None, hwmod.DetectionError(code=code, detail=detail)))
        ui.hardware.clear()

    yield fail
    ui.hardware.clear()


@pytest.mark.parametrize("code, detail", [("nvml_unavailable", "NVML Shared Library Not Found"),
                                          ("nvml_not_installed", None), ("nvml_failed", "Unknown Error")])
def test_hardware_page_says_why_no_gpu_was_found_in_chinese(detection_fails, code, detail):
    """Every message detection can send to the Hardware page is ours, in Chinese; the library's own words are
    only a detail, as code, in full-width parentheses; colons in the prose are full-width."""
    from advisor.inputs import detect
    from advisor.knowledge import load_knowledge

    detection_fails(code, detail)
    k = load_knowledge()
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=120)
    at.session_state["lang"] = "zh"
    at.run()
    at.switch_page("pages/2_Hardware.py").run()
    assert not at.exception
    why = next(i.value for i in at.info if i.value.startswith("未检测到 GPU"))
    assert why == k.s("hw_no_gpu", "zh", why=k.s("hw_err_detail", "zh", msg=k.s(f"hw_err_{code}", "zh"),
                                                 detail=f"`{detail}`") if detail else k.s(f"hw_err_{code}", "zh"))
    assert ":" not in PROSE_EXCLUDE.sub(" ", why) and "NVML unavailable" not in why
    words = set().union(*(_english_words(t, _machine_names(k, detect(k))) for t in _texts(at)))
    assert not words, " ".join(sorted(words))
    lacks = [m.value for m in at.markdown if m.value.startswith("- **")]
    assert lacks and all("**：" in line for line in lacks), lacks


def test_the_probe_page_after_a_run_and_a_sweep_speaks_chinese():
    """After runs that failed, were cancelled and were served by llama-server, and after a sweep with an
    inconclusive level and a busy one: serving lines, causes, stop reasons and verdicts in Chinese (the engines'
    own words stay, quoted)."""
    from advisor.evidence import history
    from advisor.inputs import detect
    from advisor.knowledge import load_knowledge
    from probes.result import Percentiles, ProbeResult, ProbeSettings, RequestRecord, SystemLoad
    from probes.sweep_result import SweepLevel, SweepResult

    k = load_knowledge()
    machine_names = _machine_names(k, detect(k))
    rec = [RequestRecord(index=0, submitted_s=0.0, first_token_s=0.05, token_times_s=[0.05, 0.06], finished_s=0.06)]
    served = ProbeResult(engine="llama.cpp", status="ok", requests_total=8, requests_ok=8, device="cpu",
                         serving_mode="llama-server", serving="llama-server: 4 parallel slots with continuous batching",
                         backend_settings={"parallel_slots": 4}, settings=ProbeSettings(engine="llama.cpp", concurrency=4),
                         ttft_ms=Percentiles(p50=50.0, p95=900.0), ttft_p95_ci_ms=[700.0, 1300.0], goodput=0.9,
                         ttft_target_ms=800.0, requests=rec, system_load=SystemLoad(busy=True,
                                                                                   other_processes_cpu_percent=33.0))
    failed = ProbeResult(engine="endpoint", status="partial", requests_total=8, requests_ok=2, errors=6,
                         top_cause="HTTP 500: boom!", reason="not measured: 6 of 8 requests failed: HTTP 500: boom!",
                         serving_mode="endpoint", ttft_target_ms=1000.0, requests=rec)
    cancelled = ProbeResult(engine="llama.cpp", status="cancelled", requests_total=5, requests_ok=5,
                            reason="cancelled by the user after 5 of 40 requests", serving_mode="in-process",
                            ttft_ms=Percentiles(p50=50.0, p95=60.0), requests=rec)
    ids = [history.save(r) for r in (served, failed, cancelled)]
    levels = [SweepLevel(concurrency=1, status="ok", requests_total=20, requests_ok=20, goodput=1.0, outcome="meets",
                         ttft_ms=Percentiles(p95=300.0), ttft_p95_ci_ms=[250.0, 350.0], output_tps_total=50.0),
              SweepLevel(concurrency=2, status="ok", requests_total=20, requests_ok=20, goodput=0.9,
                         outcome="inconclusive", ttft_ms=Percentiles(p95=950.0), ttft_p95_ci_ms=[800.0, 1200.0],
                         output_tps_total=80.0, busy=True, other_cpu_percent=30.0)]
    sweep = SweepResult(engine="llama.cpp", status="ok", device="cpu", ttft_target_ms=1000.0, levels=levels, capacity=1,
                        inconclusive_at=2, busy=True, stop={"key": "ttft", "c": 4, "p95": 1500, "target": 1000.0},
                        stop_reason="at concurrency 4, TTFT p95 1500 ms > the 1000 ms target")
    history.save_sweep(sweep, "job-77-1764590000")
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=120)
    at.session_state["lang"] = "zh"
    at.session_state["answers"] = {"concurrency": 4, "model": {"name": "smollm2-135m", "precision": "q8_0"}}
    at.session_state["report_runs"] = ids
    at.session_state["report_sweeps"] = ["job-77-1764590000"]
    at.run()
    at.switch_page("pages/4_Probe.py").run()
    assert not at.exception
    shown = " ".join(_texts(at))
    assert "llama-server，并行槽与连续批处理" in shown and "未测成：8 个请求中有 6 个失败" in shown
    assert "无法定论" in shown and "不改变建议" in shown
    words = set().union(*(_english_words(t, machine_names) for t in _texts(at)))
    assert not words, " ".join(sorted(words))
    at.switch_page("pages/5_Report.py").run()
    assert not at.exception
    words = set().union(*(_english_words(t, machine_names) for t in _texts(at)))
    assert not words, " ".join(sorted(words))

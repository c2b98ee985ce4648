"""The support matrix (knowledge/support.yaml) as the rules read it: every `unsupported` cell a workload can reach
excludes its engine with the cell's reason, `experimental` costs points, the GPU's compute capability moves a cell,
and a serving feature the workload needs is charged where it is missing."""
from __future__ import annotations

import pytest

from advisor.decide.rules import recommend
from advisor.inputs.answers import parse_answers
from advisor.knowledge import schema as ks
from advisor.knowledge.load import load_knowledge
from advisor.knowledge.support import precision_key

K = load_knowledge()
GPU = {"nvidia_cuda": {"gpu_vendor": "nvidia", "gpu_model": "A100 80GB", "gpu_count": 1, "gpu_memory_gb": 80},
       "amd_rocm": {"gpu_vendor": "amd", "gpu_model": "Instinct MI300X", "gpu_count": 1, "gpu_memory_gb": 192},
       "intel_xpu": {"gpu_vendor": "intel", "gpu_model": "Data Center GPU Max 1550", "gpu_count": 1,
                     "gpu_memory_gb": 128},
       "apple_metal": {"gpu_vendor": "apple", "gpu_model": "M2 Ultra", "gpu_count": 1, "gpu_memory_gb": 192,
                       "os": "macos", "cpu_arch": "arm64"},
       "cpu_x86": {"gpu_vendor": "none", "cpu_arch": "x86_64", "ram_gb": 256, "cpu_cores": 64},
       "cpu_arm": {"gpu_vendor": "none", "cpu_arch": "arm64", "ram_gb": 256, "cpu_cores": 64},
       "intel_gaudi": {"gpu_vendor": "intel", "gpu_model": "Gaudi 3", "gpu_count": 8},
       "npu_qualcomm": {"gpu_vendor": "qualcomm", "gpu_model": "Snapdragon X Elite", "os": "windows",
                        "cpu_arch": "arm64"},
       "npu_intel": {"gpu_vendor": "intel", "accelerator": "npu", "gpu_model": "Core Ultra 200V NPU", "os": "windows"},
       "npu_amd": {"gpu_vendor": "amd", "accelerator": "npu", "gpu_model": "Ryzen AI 300 NPU", "os": "windows"},
       "google_tpu": {"gpu_vendor": "google", "gpu_model": "TPU v6e", "gpu_count": 8, "ram_gb": 512, "os": "linux"},
       "npu_ascend": {"gpu_vendor": "huawei", "gpu_model": "Ascend 910B", "gpu_count": 8, "ram_gb": 1024,
                      "os": "linux"}}
OS_ANSWER = {"linux": "linux", "windows_native": "windows", "windows_wsl": "windows-wsl", "macos": "macos"}
MODALITY_ANSWER = {"vision_language": "qwen2.5-vl-7b", "speech": "whisper-large-v3", "embedding": "bge-large-en-v1.5"}
ARCH_ANSWER = {"decoder_only": {"architecture": "decoder-only"}, "encoder_decoder": {"architecture": "encoder-decoder"},
               "encoder_only": {"architecture": "encoder"}, "moe": {"name": "mixtral-8x7b"}}


def _answers_for(engine: str, axis: str, key: str) -> dict | None:
    """Answers whose row on `axis` is `key` for `engine`; None when no answer can reach that cell."""
    base = {"concurrency": 1, "hardware": {**GPU["nvidia_cuda"], "os": "linux"},
            "model": {"params_b": 7, "precision": "fp16"}}
    if axis == "os":
        if key not in OS_ANSWER:
            return None  # WSL is not an answer: Windows is planned as native
        hw = GPU["apple_metal"] if key == "macos" else {**GPU["nvidia_cuda"], "os": OS_ANSWER[key]}
        return {**base, "hardware": hw}
    if axis == "accelerator":
        return {**base, "hardware": {"os": "linux", **GPU[key]}} if key in GPU else None
    if axis == "precision":
        for asked in ("fp32", "fp16", "bf16", "fp8", "fp4", "int8", "int4", "q4_k_m", "q8_0"):
            mapped = K.planner.engines[engine].precision_map.get(asked, asked)
            if precision_key(mapped) == key:
                return {**base, "hardware": {**GPU["nvidia_cuda"], "gpu_model": "H100 SXM", "os": "linux"},
                        "model": {"params_b": 7, "precision": asked}}
        return None
    if axis == "kv_cache_dtype":
        return {**base, "hardware": {**GPU["nvidia_cuda"], "gpu_model": "H100 SXM", "os": "linux"},
                "model": {"params_b": 7, "kv_cache_dtype": key}}
    if axis == "architecture":
        return {**base, "model": {"params_b": 7, **ARCH_ANSWER[key]}}
    if axis == "modality":
        return {**base, "model": {"name": MODALITY_ANSWER[key]}}
    return None


UNSUPPORTED = [(e, axis, key) for e, t in K.support.engines.items() for axis in ks.CAN_RUN_AXES
               for key, cell in getattr(t, axis).items() if cell.status == "unsupported"]


@pytest.mark.parametrize("engine,axis,key", UNSUPPORTED, ids=[f"{e}-{a}-{k}" for e, a, k in UNSUPPORTED])
def test_every_reachable_unsupported_cell_excludes_its_engine(engine, axis, key):
    answers = _answers_for(engine, axis, key)
    if answers is None:
        pytest.skip(f"no answer reaches {axis}={key} for {engine} (the planner maps it to another precision)")
    rec = recommend(parse_answers(answers), None, K, with_flips=False)
    excluded = {x.engine: x for x in rec.excluded}
    assert engine in excluded, f"{engine} ranked with {axis}={key} unsupported"
    reason = next(r for r in excluded[engine].reasons if r.rule == f"support/{axis}/{key}")
    assert reason.source == getattr(K.support.engines[engine], axis)[key].source
    assert "\n" not in reason.text and K.engines[engine].name in reason.text


def test_an_unreachable_unsupported_cell_is_one_the_planner_maps_around():
    """A cell no answer reaches is either an axis the answers have no value for (Vulkan) or a precision the
    engine's planner maps to one it runs (llama.cpp runs "int4" as Q4_K_M GGUF): the way it avoids exclusion."""
    for e, axis, key in UNSUPPORTED:
        if _answers_for(e, axis, key) is None:
            assert key == "vulkan" or axis == "precision", (e, axis, key)
    assert sum(_answers_for(*c) is not None for c in UNSUPPORTED) >= 10


def _rec(answers: dict):
    return recommend(parse_answers(answers), None, K, with_flips=False)


def _contribution(rec, engine: str, rule: str) -> float | None:
    r = next((r for r in rec.ranking if r.engine == engine), None)
    return next((x.delta for x in r.reasons if x.rule == rule), None) if r else None


def test_fp8_on_ampere_excludes_tensorrt_llm_and_vllm_runs_it_weight_only():
    rec = _rec({"concurrency": 16, "hardware": {**GPU["nvidia_cuda"], "os": "linux"},
                "model": {"params_b": 8, "precision": "fp8"}})
    trt = next(x for x in rec.excluded if x.engine == "tensorrt-llm")
    assert any(r.rule == "support/precision/fp8" and "Ampere" in r.text for r in trt.reasons)
    # vLLM's docs of the pinned version list weight-only FP8 (Marlin) on Turing/Ampere as supported; SGLang's list no
    # FP8 path below SM89 (its code auto-enables the same kernel): experimental, and never above vLLM on a close call
    assert _contribution(rec, "vllm", "support/precision/fp8") is None
    assert _contribution(rec, "sglang", "support/precision/fp8") == K.support.scoring.experimental
    assert rec.top.engine == "vllm"


def test_fp8_on_hopper_is_native_in_both():
    rec = _rec({"concurrency": 16, "hardware": {**GPU["nvidia_cuda"], "gpu_model": "H100 SXM", "os": "linux"},
                "model": {"params_b": 8, "precision": "fp8"}})
    assert "tensorrt-llm" not in {x.engine for x in rec.excluded}
    assert _contribution(rec, "vllm", "support/precision/fp8") is None


def test_a_gpu_below_an_engines_compute_capability_excludes_it():
    rec = _rec({"concurrency": 8, "hardware": {"gpu_vendor": "nvidia", "gpu_model": "T4", "gpu_count": 1,
                                               "gpu_memory_gb": 16, "os": "linux"}, "model": {"params_b": 3}})
    trt = next(x for x in rec.excluded if x.engine == "tensorrt-llm")
    assert any(r.rule == "support/accelerator/nvidia_cuda" for r in trt.reasons)
    assert "vllm" in {r.engine for r in rec.ranking}  # vLLM's floor is 7.5: a T4 is in


def test_experimental_costs_points_with_the_docs_reason():
    rec = _rec({"concurrency": 1, "hardware": GPU["apple_metal"], "model": {"params_b": 7}})
    assert _contribution(rec, "vllm", "support/os/macos") == K.support.scoring.experimental
    reason = next(x for x in next(r for r in rec.ranking if r.engine == "vllm").reasons
                  if x.rule == "support/os/macos")
    assert reason.source.startswith("https://") and "experimental" in reason.text


def test_a_needed_serving_feature_the_engine_lacks_costs_points():
    rec = _rec({"concurrency": 64, "hardware": {**GPU["cpu_x86"], "os": "linux"}, "model": {"params_b": 7}})
    assert _contribution(rec, "llama.cpp", "support/serving/paged_kv") == K.support.scoring.feature_missing
    assert _contribution(rec, "vllm", "support/serving/paged_kv") is None
    low = _rec({"concurrency": 1, "hardware": {**GPU["cpu_x86"], "os": "linux"}, "model": {"params_b": 7}})
    assert _contribution(low, "llama.cpp", "support/serving/paged_kv") is None


def test_native_windows_with_an_nvidia_gpu():
    rec = _rec({"concurrency": 8, "hardware": {**GPU["nvidia_cuda"], "gpu_model": "L4", "os": "windows"},
                "model": {"params_b": 8, "precision": "int4"}})
    assert {"vllm", "tensorrt-llm"} <= {x.engine for x in rec.excluded}
    assert rec.top.engine in ("onnxruntime", "llama.cpp")


def test_t5_with_vllm_is_excluded_and_an_intel_gpu_gets_vllm():
    t5 = _rec({"concurrency": 8, "hardware": {**GPU["nvidia_cuda"], "os": "linux"},
               "model": {"name": "t5-large"}})
    assert "vllm" in {x.engine for x in t5.excluded}
    intel = _rec({"concurrency": 16, "hardware": {**GPU["intel_xpu"], "os": "linux"}, "model": {"params_b": 7}})
    assert intel.top.engine == "vllm" and "tensorrt-llm" in {x.engine for x in intel.excluded}


def test_no_gpu_written_with_zeros_is_valid():
    a = parse_answers({"hardware": {"gpu_vendor": "none", "gpu_count": 0, "gpu_memory_gb": 0}})
    assert a.hardware.gpu_memory_gb is None and a.hardware.gpu_count == 0
    assert _rec({"hardware": {"gpu_vendor": "none", "gpu_count": 0, "gpu_memory_gb": 0}}).top.engine == "llama.cpp"


def test_every_cell_is_sourced_and_dated_unless_unknown():
    for e, t in K.support.engines.items():
        for axis in ks.SUPPORT_AXES:
            for key, cell in getattr(t, axis).items():
                if cell.status != "unknown":
                    assert cell.source and cell.read, (e, axis, key)
                if cell.status not in ("supported", "unknown"):
                    assert cell.note and cell.note.en and cell.note.zh, (e, axis, key)


def test_the_planners_gpu_vendors_agree_with_the_matrix():
    """An engine the matrix says runs on a vendor's GPU is planned on that GPU, and vice versa."""
    vendor_key = {"nvidia": "nvidia_cuda", "amd": "amd_rocm", "intel": "intel_xpu", "apple": "apple_metal",
                  "google": "google_tpu", "huawei": "npu_ascend"}
    for e, cap in K.planner.engines.items():
        for vendor, key in vendor_key.items():
            status = K.support.engines[e].accelerator[key].status
            if status == "supported":
                assert vendor in cap.gpu_vendors, f"{e}: the matrix supports {key}, the planner has no {vendor}"
            if status == "unsupported":
                assert vendor not in cap.gpu_vendors, f"{e}: {key} unsupported, yet planned on {vendor}"

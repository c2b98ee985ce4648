"""The backends use a GPU when they have one. This machine has none, so what cannot exist here is faked, and
only that: NVML (a fake `pynvml` module: a GPU holding the probe's processes, 80 % busy) and llama.cpp's
`llama_supports_gpu_offload` / system info (a CUDA build). The engine itself is real: the bundled model is loaded
by the CPU build of llama-cpp-python, which accepts n_gpu_layers and keeps the layers on the CPU."""
from __future__ import annotations

import sys
import types

import psutil
import pytest

from advisor.evidence.probe_check import check_probe
from advisor.knowledge.load import load_knowledge
from probes.backends.llama_cpp import LlamaCppBackend, gpu_settings
from probes.result import Percentiles, ProbeResult, ProbeSettings, RequestRecord

CUDA_INFO = "CPU : SSE3 = 1 | AVX2 = 1 | CUDA : ARCHS = 900 | USE_GRAPHS = 1 | PEER_MAX_BATCH_SIZE = 128 |"


@pytest.mark.parametrize("supports,info,extra,layers,backend", [
    (True, CUDA_INFO, {}, -1, "CUDA"),
    (True, "CPU : AVX2 = 1 | Metal : EMBED_LIBRARY = 1 |", {}, -1, "Metal"),
    (True, CUDA_INFO, {"device": "cpu"}, 0, "CUDA"),
    (False, "CPU : AVX2 = 1 |", {}, 0, "CPU"),
])
def test_llama_cpp_offloads_every_layer_when_the_build_can(supports, info, extra, layers, backend):
    s = gpu_settings(supports, info, extra)
    assert (s["n_gpu_layers"], s["build_backend"], s["gpu_offload_supported"]) == (layers, backend, supports)


def test_llama_cpp_backend_asks_for_every_layer_and_records_the_device(monkeypatch, gguf):
    import llama_cpp

    seen = {}
    real = llama_cpp.Llama

    def spy(*a, **kw):
        seen.update(kw)
        return real(*a, **kw)

    monkeypatch.setattr(llama_cpp, "Llama", spy)
    monkeypatch.setattr(llama_cpp, "llama_supports_gpu_offload", lambda: True)  # faked: a CUDA build
    monkeypatch.setattr(llama_cpp, "llama_print_system_info", lambda: CUDA_INFO.encode())
    monkeypatch.setattr("probes.gpu.nvml_name", lambda index=0: "NVIDIA H200")  # faked: NVML
    b = LlamaCppBackend()
    b.load(gguf, "gguf", ProbeSettings(engine="llama.cpp"))
    assert seen["n_gpu_layers"] == -1
    assert b.backend_settings["layers_offloaded"] == 31  # SmolLM2-135M: 30 blocks + the output layer
    assert b.backend_settings["build_backend"] == "CUDA" and b.device == "cuda:0 NVIDIA H200"


def test_a_cpu_build_says_how_to_rebuild_for_the_gpu_only_where_there_is_one(gguf, monkeypatch):
    from probes.backends import llama_cpp

    monkeypatch.setattr(llama_cpp, "_nvidia_gpu_here", lambda: True)  # no NVIDIA GPU exists on this machine
    b = LlamaCppBackend()
    b.load(gguf, "gguf", ProbeSettings(engine="llama.cpp"))
    assert b.device == "cpu" and b.backend_settings["n_gpu_layers"] == 0
    assert any("CMAKE_ARGS=-DGGML_CUDA=on" in n for n in b.notes)
    monkeypatch.setattr(llama_cpp, "_nvidia_gpu_here", lambda: False)  # the walk's L5: said on every CPU machine
    b = LlamaCppBackend()
    b.load(gguf, "gguf", ProbeSettings(engine="llama.cpp"))
    assert not any("CMAKE_ARGS" in n for n in b.notes)


def _fake_pynvml(mib_per_process: float, busy: float):
    """NVML as the parent's sampler calls it: every process of the probe's tree holds `mib_per_process`."""
    me = psutil.Process()

    class NVMLError(Exception):
        pass

    def procs(_handle):
        return [types.SimpleNamespace(pid=p.pid, usedGpuMemory=int(mib_per_process * 2**20))
                for p in me.children(recursive=True)]

    return types.SimpleNamespace(NVMLError=NVMLError, nvmlDeviceGetComputeRunningProcesses=procs,
                                 nvmlDeviceGetUtilizationRates=lambda h: types.SimpleNamespace(gpu=busy))


@pytest.mark.slow
def test_the_runner_records_gpu_memory_and_utilisation_from_nvml(monkeypatch):
    from probes import runner

    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml(500.0, 80.0))
    monkeypatch.setattr(runner, "_nvml_handles", lambda: [object()])
    res = runner.run_probe(ProbeSettings(engine="llama.cpp", requests=2, max_tokens=16, warmup=0, timeout_s=300))
    assert res.status == "ok", res.reason
    assert res.peak_gpu_mb is not None and res.peak_gpu_mb >= 500.0
    assert res.gpu_util_percent == 80.0


def test_gpu_memory_is_what_a_gpu_result_is_checked_against():
    """A recorded result from an H200 (as a probe there writes it), read on this CPU machine: the check plans for
    the H200 it names and compares GPU memory, and decode stays under the H200's bandwidth roofline."""
    from probes.models import default_model

    k = load_knowledge()
    reqs = [RequestRecord(index=i, prompt_tokens=40, submitted_s=0.0, first_token_s=0.01,
                          token_times_s=[0.01 + j * 0.004 for j in range(32)], finished_s=0.2) for i in range(4)]
    res = ProbeResult(engine="llama.cpp", status="ok", model=str(default_model()), device="cuda:0 NVIDIA H200",
                      settings=ProbeSettings(engine="llama.cpp", max_tokens=32),
                      backend_settings={"n_ctx": 2048, "n_gpu_layers": -1}, requests=reqs,
                      decode_tps_per_request=Percentiles(p50=250.0), ttft_ms=Percentiles(p50=10.0, p95=10.0),
                      peak_gpu_mb=420.0, peak_rss_mb=900.0)
    c = check_probe(res, k, None, None)
    assert c is not None and c.memory_metric == "peak_gpu_mb" and c.measured_memory_mib == 420.0
    assert c.plan.device == "gpu" and c.roofline_pct is not None and c.roofline_pct < 100
    assert any("NVIDIA H200" in n for n in c.notes)


def test_onnxruntime_exports_for_cuda_when_its_cuda_build_answers(monkeypatch, tmp_path):
    import onnxruntime_genai as og

    from probes.backends.onnxruntime_genai import OnnxRuntimeBackend

    seen = {}
    monkeypatch.setattr(og, "is_cuda_available", lambda: True)  # faked: onnxruntime-genai-cuda on a GPU
    monkeypatch.setattr("probes.models.hf_to_onnx",
                        lambda hf, precision, progress, ep="cpu": seen.update(ep=ep, precision=precision) or tmp_path)
    hf = tmp_path / "hf"
    hf.mkdir()
    b = OnnxRuntimeBackend()
    out, fmt = b.prepare(hf, "hf", ProbeSettings(engine="onnxruntime"), lambda *a: None)
    assert seen == {"ep": "cuda", "precision": "int4"} and fmt == "onnx"
    b.prepare(hf, "hf", ProbeSettings(engine="onnxruntime", extra={"device": "cpu"}), lambda *a: None)
    assert seen["ep"] == "cpu"

"""A bundle file that is not written says the real reason (audit, low: "no official image" for vLLM-CPU's
kserve.yaml). KServe's docs (0.19, text generation, read 2026-12-05) serve vLLM on a CPU with the Hugging Face
runtime's CPU image, which KServe picks for a predictor asking for no GPU: the CPU bundle now has its kserve.yaml.
An engine KServe has no runtime for says that, and a file missing for want of an image says that, in the language
asked, one line, never a traceback."""
from __future__ import annotations

import pytest
import yaml

from tests.hostile.kit import bounded

CPU = "examples/cpu-only-box.yaml"  # vLLM, llama.cpp and transformers on a CPU, none measured here


def _deploy(*args: str):
    return bounded(["-m", "advisor", "deploy", "--answers", CPU, *args], hard_limit_s=120)


def test_vllm_on_a_cpu_gets_kserve_with_the_cpu_image_and_its_kv_space():
    o = _deploy("--engine", "vllm", "--format", "kserve")
    assert o.rc == 0 and "Traceback" not in o.err, (o.rc, o.err[-1500:])
    isvc = yaml.safe_load(o.out)
    model = isvc["spec"]["predictor"]["model"]
    assert isvc["kind"] == "InferenceService" and model["modelFormat"]["name"] == "huggingface"
    res = model["resources"]
    assert not any("gpu" in k for part in res.values() for k in part), res  # no GPU asked: KServe's CPU image
    assert any(e["name"] == "VLLM_CPU_KVCACHE_SPACE" for e in model["env"])
    assert "--backend=vllm" in model["args"] and any(a.startswith("--max-model-len=") for a in model["args"])
    assert "generative-inference/tasks/text-generation" in o.out  # the page that says so


@pytest.mark.parametrize("engine,fmt,lang,said", [
    ("llama.cpp", "kserve", "en", "KServe has no serving runtime for llama.cpp"),
    ("llama.cpp", "kserve", "zh", "没有 llama.cpp 的服务运行时"),
    ("pytorch", "compose", "en", "no official image"),
])
def test_a_file_not_written_says_why(engine, fmt, lang, said):
    o = _deploy("--engine", engine, "--format", fmt, "--lang", lang)
    line = o.one_line_error(rc=1)
    assert said in line, line
    if fmt == "kserve":
        assert "official image" not in line and "官方镜像" not in line, line

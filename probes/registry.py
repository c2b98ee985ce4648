"""Backends by engine id. Modules are imported only when a backend is asked for."""
from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

BACKENDS: dict[str, str] = {
    "llama.cpp": "probes.backends.llama_cpp:LlamaCppBackend",
    "onnxruntime": "probes.backends.onnxruntime_genai:OnnxRuntimeBackend",
    "pytorch": "probes.backends.pytorch_hf:PyTorchBackend",
    "vllm": "probes.backends.vllm_engine:VllmBackend",
    "sglang": "probes.backends.sglang_server:SGLangBackend",
    "tensorrt-llm": "probes.backends.tensorrt_llm:TensorRTLLMBackend",
    "endpoint": "probes.backends.endpoint:EndpointBackend",
}


class UnknownBackend(KeyError):
    def __str__(self) -> str:
        return f"unknown engine {self.args[0]!r}; known: {', '.join(BACKENDS)}"


def get_backend(name: str):
    try:
        target = BACKENDS[name]
    except KeyError:
        raise UnknownBackend(name) from None
    module, cls = target.split(":")
    return getattr(importlib.import_module(module), cls)


def python_for(engine: str) -> str:
    """The interpreter a backend's child runs under: vLLM, SGLang (`make sglang`) and TensorRT-LLM (`make trtllm`)
    have their own venvs where their pins clash with the app's (SGLang 0.5.23 pins torch 2.14.1 and transformers
    5.19.0)."""
    own = {"vllm": ("PROBES_VLLM_PYTHON", ".venv-vllm"), "sglang": ("PROBES_SGLANG_PYTHON", ".venv-sglang"),
           "tensorrt-llm": ("PROBES_TRTLLM_PYTHON", ".venv-trtllm")}
    if engine in own:
        var, venv_dir = own[engine]
        env = os.environ.get(var)
        if env:
            return env
        venv = ROOT / venv_dir / "bin" / "python"
        if venv.exists():
            return str(venv)
    return sys.executable

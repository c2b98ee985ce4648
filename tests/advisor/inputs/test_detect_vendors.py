"""Detection beyond NVML: rocm-smi and xpu-smi are read when they are on PATH (bounded in time and output), WSL2 is
told from its kernel release, and a detected GPU the catalogue does not list is planned from what the driver says,
with a note. The vendor tools are fakes written here: this machine has no AMD or Intel GPU (the reason to mock)."""
import os
import stat

import pytest

from advisor.inputs import hardware as hw_mod
from advisor.inputs.answers import parse_answers
from advisor.knowledge.load import load_knowledge
from advisor.planner import find_gpu, make_plan

K = load_knowledge()


def _tool(tmp_path, name, body):
    p = tmp_path / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return p


def test_rocm_smi_cards_map_onto_the_catalogue(tmp_path, monkeypatch):
    _tool(tmp_path, "rocm-smi", """cat <<'X'
{"card0": {"Card Series": "AMD Instinct MI300X", "VRAM Total Memory (B)": "206141652992"},
 "card1": {"Card Series": "AMD Instinct MI300X", "VRAM Total Memory (B)": "206141652992"}, "system": {}}
X
""")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    gpus = hw_mod._rocm()
    assert [g.name for g in gpus] == ["AMD Instinct MI300X"] * 2
    assert gpus[0].memory_total_mb == pytest.approx(196_592, rel=1e-3)
    assert find_gpu(gpus[0].name, K).id == "mi300x"


def test_xpu_smi_devices_map_onto_the_catalogue(tmp_path, monkeypatch):
    _tool(tmp_path, "xpu-smi", """echo '{"device_list": [{"device_id": 0, "device_name": "Intel(R) Arc(TM) A770 Graphics", "memory_physical_size_byte": "17179869184"}]}'\n""")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    (g,) = hw_mod._xpu()
    assert g.memory_total_mb == 16384 and find_gpu(g.name, K).id == "arc-a770-16gb"


@pytest.mark.parametrize("body", ["echo 'not json'\n", "sleep 30\n", "head -c 3000000 /dev/zero\n", "exit 3\n"])
def test_a_broken_or_hanging_vendor_tool_is_no_gpu(tmp_path, monkeypatch, body):
    _tool(tmp_path, "rocm-smi", body)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(hw_mod, "SMI_TIMEOUT_S", 1)
    assert hw_mod._rocm() == []


def test_wsl2_is_told_by_its_kernel_release():
    assert hw_mod._os_name("Linux", "5.15.167.4-microsoft-standard-WSL2") == "windows-wsl"
    assert hw_mod._os_name("Linux", "6.8.0-48-generic") == "linux" and hw_mod._os_name("Darwin", "24.1") == "macos"


def test_a_gpu_not_in_the_catalogue_plans_from_its_memory_with_a_note():
    a = parse_answers({"model": {"name": "llama-3.1-8b"},
                       "hardware": {"gpu_vendor": "nvidia", "gpu_model": "NVIDIA Quantum QX-9000", "gpu_memory_gb": 48}})
    plan = make_plan(a, None, K)
    assert plan.target.gpu_id is None and plan.engines["vllm"].available_gib == pytest.approx(48 * 0.9)
    assert any("not in the accelerator catalogue" in n for n in plan.notes)
    assert plan.engines["vllm"].decode_tps_upper_bound is None

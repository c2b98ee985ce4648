"""The target hardware as numbers: from the answers' hardware block, else from what was detected."""
from __future__ import annotations

import re

from advisor.inputs.answers import Answers
from advisor.inputs.hardware import Hardware
from advisor.knowledge.load import Knowledge
from advisor.planner.machine_bench import MachineBench
from advisor.planner.types import Target

_FOUND: dict[tuple[int, str], object] = {}


def find_gpu(name: str | None, knowledge: Knowledge):
    """gpus.yaml entry for a name as a person or NVML writes it ("NVIDIA GeForce RTX 4090"), or None."""
    if not name:
        return None
    key = (id(knowledge.gpus), name)
    if key not in _FOUND:
        _FOUND[key] = _find_gpu(name, knowledge)
    return _FOUND[key]


_SPLIT = re.compile(r"[\s_/-]+")
_MEMORY = re.compile(r"^(\d{1,4})g(?:b|ib)?$")
_SIZE_APART = re.compile(r"(\d)\s+(gb|gib)\b")  # "A100 80 GB" (the llama.cpp scoreboard's spelling) is "80gb"
# words that make another card of the same number: an "RTX 4070 Ti SUPER" (672 GB/s) is not the RTX 4070 (504), an
# "RTX 4090 Laptop GPU" (16 GB, 576 GB/s) not the desktop RTX 4090 (24 GB, 1,008 GB/s)
_VARIANTS = frozenset({"ti", "super", "laptop", "mobile", "max", "q"})


def _tokens(name: str) -> set[str]:
    return {t for t in _SPLIT.split(_SIZE_APART.sub(r"\1\2", name.lower())) if t and t != "nvidia"}


def _find_gpu(name: str, knowledge: Knowledge):
    """An exact id, name or alias; else the known name with the most words all found in the given one ("NVIDIA
    GeForce RTX 4090 D" -> rtx-4090, "A100 SXM 80GB" -> a100-80gb, never the bare "A100" alias of the 40 GB card): a
    memory size the given name states ("80GB", "80 GB") puts a card of that size first; a name with a variant word
    ("Ti", "SUPER", "Laptop", "Mobile", "Max-Q") never falls back to a card without it (none: the plan says the card
    is not in the catalogue)."""
    want = name.strip().lower()
    have = _tokens(want)
    sizes = {int(m.group(1)) for t in have if (m := _MEMORY.match(t))}
    variants = have & _VARIANTS
    best, best_score = None, (0, 0, 0)
    for g in knowledge.gpus.gpus:
        names = [g.id, g.name, *g.aliases]
        if want in (n.lower() for n in names):
            return g
        size_ok = int(not sizes or any(abs(g.memory_gb - x) <= 0.1 * x for x in sizes))
        for n in names:
            toks = _tokens(n)
            score = (size_ok, len(toks), len(n))
            if len(n) >= 3 and toks and toks <= have and score > best_score and variants <= toks:
                best, best_score = g, score
    return best


def _gib(mem_gb: float, unit: str) -> float:
    return mem_gb if unit == "GiB" else mem_gb * 1e9 / 2**30


def _figures(g) -> dict:
    """The catalogue's per-GPU figures, or None for each when the GPU is not listed."""
    return dict(gpu_bandwidth_gb_s=g.bandwidth_gb_s if g else None, gpu_fp16_tflops=g.fp16_tflops_dense if g else None,
                gpu_fp8_tflops=g.fp8_tflops_dense if g else None, gpu_int8_tops=g.int8_tops_dense if g else None,
                gpu_fp4_tflops=g.fp4_tflops_dense if g else None, gpu_arch=g.arch if g else None,
                gpu_compute_capability=g.compute_capability if g else None)


def _accelerator(asked: str, g) -> str:
    """What a plan's "gpu" device is: an NPU (Snapdragon, Intel/AMD NPUs, Ascend), a Google TPU, or a GPU."""
    kind = g.kind if g else None
    if asked == "tpu" or kind == "tpu":
        return "tpu"
    return "npu" if asked == "npu" or kind == "npu" else "gpu"


def build_target(answers: Answers, hardware: Hardware | None, knowledge: Knowledge,
                 machine: MachineBench | None) -> Target:
    t = answers.hardware
    if t is not None:
        g = find_gpu(t.gpu_model, knowledge) if t.gpu_vendor != "none" else None
        mem = t.gpu_memory_gb if t.gpu_memory_gb else (_gib(g.memory_gb, g.memory_unit) if g else None)
        unified = t.unified_memory if t.unified_memory is not None else (
            bool(g.unified_memory) if g else t.gpu_vendor == "apple" or t.accelerator == "npu")
        return Target(source="answers", gpu_vendor=t.gpu_vendor, gpu_name=t.gpu_model or (g.name if g else None),
                      gpu_id=g.id if g else None, gpu_count=t.gpu_count, gpu_memory_gib=mem,
                      **_figures(g), accelerator=_accelerator(t.accelerator, g),
                      nodes=t.nodes, gpus_per_node=t.gpus_per_node,
                      interconnect=t.interconnect or (g.interconnect if g else None),
                      interconnect_gb_s=g.interconnect_gb_s if g else None,
                      unified_memory=unified, ram_gib=t.ram_gb or (mem if unified else None), cpu_arch=t.cpu_arch,
                      cpu_bandwidth_gb_s=t.cpu_bandwidth_gb_s, cpu_gflops=t.cpu_gflops, cpu_amx=bool(t.cpu_amx))
    if hardware is None:
        return Target(source="answers")
    first = hardware.gpus[0] if hardware.gpus else None
    g = find_gpu(first.name, knowledge) if first else None
    mem = first.memory_total_mb / 1024 if first and first.memory_total_mb else None
    if mem is None and g is not None:
        mem = _gib(g.memory_gb, g.memory_unit)
    ram = hardware.ram_total_mb / 1024
    return Target(source="detected", gpu_vendor=hardware.gpu_vendor, gpu_name=first.name if first else None,
                  gpu_id=g.id if g else None, gpu_count=len(hardware.gpus), gpu_memory_gib=mem,
                  **{**_figures(g), "gpu_compute_capability": (first.compute_capability if first else None) or (
                      g.compute_capability if g else None)},
                  interconnect=g.interconnect if g else None, interconnect_gb_s=g.interconnect_gb_s if g else None,
                  unified_memory=hardware.apple_silicon or bool(g and g.unified_memory), ram_gib=ram,
                  cpu_bandwidth_gb_s=machine.memory_bandwidth_gb_s if machine else None,
                  cpu_gflops=machine.fp32_gflops if machine else None, cpu_measured=machine is not None,
                  cpu_amx=any(f.startswith("amx") for f in hardware.cpu.flags), cpu_arch=hardware.cpu.arch,
                  cpu_model=machine.cpu_model if machine else hardware.cpu.model)

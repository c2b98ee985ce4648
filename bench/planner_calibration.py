"""Calibrate and check the capacity planner on this machine.

1. Runtime baselines (knowledge/planner.yaml `cpu_runtime_gib`): the resident memory of a fresh Python
   process after importing the probe harness and one engine, before any model is loaded. That is the part of
   a probe's peak RSS that no formula of weights, KV and activations covers.
2. Predicted vs measured: for each probe result JSON given, the plan rebuilt for what the probe ran, next
   to its peak memory and decode rate (the roofline %).

Run: `.venv/bin/python bench/planner_calibration.py [RESULT.json ...]`
(results from `python -m probes run --engine E --format json > E.json`).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

IMPORTS = {
    "llama.cpp": "import llama_cpp",
    "onnxruntime": "import onnxruntime_genai",
    "pytorch": "import torch, transformers; from transformers import AutoModelForCausalLM",
    "vllm": "import vllm; from vllm.v1.engine.async_llm import AsyncLLM",
}
# current RSS, not ru_maxrss: after fork+exec ru_maxrss keeps the parent's high-water mark
PROBE = ("import json, psutil; import probes.child, probes.result, probes.workload; {imp}; "
         "print(json.dumps(psutil.Process().memory_info().rss / 2**20))")


def baseline_mib(engine: str) -> float | None:
    from probes.registry import python_for

    py = python_for(engine)
    try:
        out = subprocess.run([py, "-c", PROBE.format(imp=IMPORTS[engine])], capture_output=True, text=True,
                             timeout=600, cwd=ROOT)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return float(out.stdout.strip().splitlines()[-1])


ORT_LOAD = ("import json, sys, psutil, onnxruntime_genai as og; p = psutil.Process(); a = p.memory_info().rss; "
            "m = og.Model(sys.argv[1]); print(json.dumps((p.memory_info().rss - a) / 2**20))")


def ort_weight_copies() -> str:
    """RSS added by loading the cached ONNX int4 export, over the size of its weight files."""
    from probes.models import cache_dir

    dirs = sorted((cache_dir() / "onnx").glob("*-int4"))
    if not dirs:
        return "no ONNX export in the cache yet (run the onnxruntime probe once)"
    d = dirs[0]
    size = sum(f.stat().st_size for f in d.iterdir() if f.name.endswith((".onnx", ".onnx.data"))) / 2**20
    out = subprocess.run([sys.executable, "-c", ORT_LOAD, str(d)], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        return "onnxruntime-genai unavailable"
    added = float(out.stdout.strip().splitlines()[-1])
    return f"load adds {added:.0f} MiB for {size:.0f} MiB of weight files = {added / size:.2f} copies"


def main() -> None:
    from advisor.evidence.probe_check import check_probe
    from advisor.inputs.hardware import detect
    from advisor.knowledge.load import load_knowledge
    from advisor.planner import machine_bench
    from probes.result import ProbeResult

    k = load_knowledge()
    bench = machine_bench.get()
    print(f"machine: {bench.cpu_model}, {bench.threads} threads: memory bandwidth {bench.memory_bandwidth_gb_s} GB/s, "
          f"fp32 matmul {bench.fp32_gflops} GFLOPS (cached at {machine_bench.cache_path().name})")
    print("\nruntime baselines (python + probe harness + engine import, before loading a model):")
    for engine in IMPORTS:
        mib = baseline_mib(engine)
        yaml_gib = k.planner.engines[engine].cpu_runtime_gib
        shown = f"{mib:7.0f} MiB = {mib / 1024:.3f} GiB" if mib else "   unavailable"
        print(f"  {engine:12} {shown}   (planner.yaml: {yaml_gib} GiB)")
    print(f"  onnxruntime weight copies at load: {ort_weight_copies()} "
          f"(planner.yaml: {k.planner.engines['onnxruntime'].cpu_weight_copies})")
    files = sys.argv[1:]
    if not files:
        return
    hw = detect(k)
    print("\npredicted vs measured:")
    for f in files:
        res = ProbeResult.model_validate_json(Path(f).read_text(encoding="utf-8"))
        c = check_probe(res, k, hw, bench)
        if c is None:
            print(f"  {f}: nothing to compare ({res.status}: {res.reason or res.engine})")
            continue
        print(f"  {c.text}")
        p = c.plan
        print(f"      weights {p.weights_gib * 1024:.0f} + KV {p.kv_gib * 1024:.0f} + overhead "
              f"{p.overhead_gib * 1024:.0f} MiB; {json.dumps({'memory_error_pct': c.memory_error_pct, 'roofline_pct': c.roofline_pct})}")


if __name__ == "__main__":
    main()

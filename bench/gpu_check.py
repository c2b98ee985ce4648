"""One line per engine on this machine's GPU: device, decode tok/s, TTFT p50, peak GPU MiB, predicted vs measured
memory, and % of the bandwidth roofline. Run by bench/gpu_check.sh (under 8 minutes on one GPU).

Each engine that can run here is probed on the bundled model through the same CLI a user runs
(`python -m probes run`), then checked against the planner (advisor.evidence.probe_check) on this machine.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ENGINES = ("pytorch", "llama.cpp", "onnxruntime", "vllm", "tensorrt-llm")


def main() -> int:
    from advisor.evidence.probe_check import check_probe
    from advisor.inputs.hardware import detect
    from advisor.knowledge.load import load_knowledge
    from advisor.planner import machine_bench
    from probes.cache import cache_dir
    from probes.cli import availability
    from probes.result import ProbeResult

    k = load_knowledge()
    hw = detect(k)
    machine = machine_bench.get()  # this CPU's bandwidth, for CPU runs' roofline
    gpu = hw.gpus[0].name if hw.gpus else None
    print(f"machine: {gpu or 'no GPU'} (NVML: {hw.nvml_error or 'ok'}), driver {hw.driver_version}, "
          f"CUDA {hw.cuda_version}", flush=True)
    budget_end = time.monotonic() + 7.5 * 60
    for engine in ENGINES:
        why = availability(engine)
        if why:
            print(f"{engine:12} unavailable: {why}", flush=True)
            continue
        left = budget_end - time.monotonic()
        if left < 60:
            print(f"{engine:12} skipped: the 8-minute budget is spent", flush=True)
            continue
        cmd = [sys.executable, "-m", "probes", "run", "--engine", engine, "--requests", "8", "--max-tokens", "64",
               "--prompt-mix", "short", "--timeout", str(int(min(300, left - 30)))]
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        try:
            res = ProbeResult.model_validate_json(p.stdout)
        except ValueError:
            print(f"{engine:12} no result (exit {p.returncode}): {p.stderr.strip().splitlines()[-1:]}", flush=True)
            continue
        if res.status != "ok":
            print(f"{engine:12} {res.status}: {res.reason}", flush=True)
            continue
        c = check_probe(res, k, hw, machine)
        mem = (f"GPU {res.peak_gpu_mb:.0f} MiB" if res.peak_gpu_mb else f"RSS {res.peak_rss_mb or 0:.0f} MiB")
        pred = (f"predicted {c.predicted_memory_mib:.0f} vs measured {c.measured_memory_mib or 0:.0f} MiB "
                f"({c.memory_error_pct:+.0f}%)" if c and c.memory_error_pct is not None else "no prediction")
        roof = f"{c.roofline_pct:.0f}% of roofline {c.decode_tps_roofline:.0f}" if c and c.roofline_pct else "–"
        print(f"{engine:12} {res.device}: decode {res.decode_tps_per_request.p50 or 0:.1f} tok/s, TTFT p50 "
              f"{res.ttft_ms.p50 or 0:.1f} ms, {mem}, util {res.gpu_util_percent or 0:.0f}%; {pred}; {roof}",
              flush=True)
        out = cache_dir() / "gpu_check"
        out.mkdir(exist_ok=True)
        (out / f"{engine}.json").write_text(res.model_dump_json(indent=2))  # the raw result, for the report
    return 0


if __name__ == "__main__":
    sys.exit(main())

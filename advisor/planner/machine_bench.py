"""This machine's CPU memory bandwidth and matmul throughput, measured once and cached.

A CPU's roofline depends on its memory channels and DIMMs, which no spec lookup knows; a two-second
measurement does. Bandwidth: STREAM-style copy over arrays far larger than the caches, one thread per usable
core, counting bytes read plus bytes written. Compute: an fp32 matrix product through numpy's BLAS.
"""
from __future__ import annotations

import json
import os
import platform
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel

COPY_MIB = 256  # per array; far beyond any L3
REPEATS = 5
MATMUL_N = 1024


class MachineBench(BaseModel):
    cpu_model: str
    threads: int
    memory_bandwidth_gb_s: float  # decimal GB/s
    fp32_gflops: float
    measured_at: str
    method: str = f"numpy copy of {COPY_MIB} MiB per thread (read + write counted), best of {REPEATS}; " \
                  f"fp32 {MATMUL_N}x{MATMUL_N} matmul, best of {REPEATS}"


def cache_path() -> Path:
    env = os.environ.get("INFERENCE_ADVISOR_CACHE")
    if env:
        base = Path(env)
    else:
        try:
            from platformdirs import user_cache_dir

            base = Path(user_cache_dir("inference-advisor"))
        except ImportError:
            base = Path.home() / ".cache" / "inference-advisor"
    return base / "machine_bench.json"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def measure() -> MachineBench:
    import numpy as np

    n_threads = min(_threads(), 32)
    n = COPY_MIB * 2**20 // 8
    src = [np.ones(n) for _ in range(n_threads)]
    dst = [np.empty(n) for _ in range(n_threads)]
    for s, d in zip(src, dst):
        np.copyto(d, s)  # touch every page once before timing

    def copy(i: int, barrier: threading.Barrier) -> None:
        barrier.wait()
        np.copyto(dst[i], src[i])

    best = float("inf")
    for _ in range(REPEATS):
        barrier = threading.Barrier(n_threads + 1)
        workers = [threading.Thread(target=copy, args=(i, barrier)) for i in range(n_threads)]
        for w in workers:
            w.start()
        barrier.wait()
        t0 = time.perf_counter()
        for w in workers:
            w.join()
        best = min(best, time.perf_counter() - t0)
    bandwidth = 2 * n * 8 * n_threads / best / 1e9
    del src, dst

    a = np.random.default_rng(0).random((MATMUL_N, MATMUL_N), dtype=np.float32)
    a @ a
    best_mm = float("inf")
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        a @ a
        best_mm = min(best_mm, time.perf_counter() - t0)
    gflops = 2 * MATMUL_N**3 / best_mm / 1e9
    return MachineBench(cpu_model=_cpu_model(), threads=n_threads, memory_bandwidth_gb_s=round(bandwidth, 2),
                        fp32_gflops=round(gflops, 1), measured_at=datetime.now(timezone.utc).isoformat(
                            timespec="seconds"))


def cached() -> MachineBench | None:
    """The cached figures for this CPU, or None (never measures)."""
    p = cache_path()
    try:
        bench = MachineBench.model_validate_json(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if bench.cpu_model != _cpu_model() or bench.threads != min(_threads(), 32):
        return None
    return bench


def get(measure_if_missing: bool = True) -> MachineBench | None:
    bench = cached()
    if bench is None and measure_if_missing:
        bench = measure()
        p = cache_path()
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(json.dumps(bench.model_dump(), indent=2), encoding="utf-8")
        except OSError:
            pass  # a read-only cache dir costs a re-measure next time, nothing else
    return bench

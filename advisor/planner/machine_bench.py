"""This machine's CPU memory bandwidth and matmul throughput, measured once and cached.

A CPU's roofline depends on its memory channels and DIMMs, which no spec lookup knows; a few seconds of
measurement do. Bandwidth: read-only, as decoding is (a BLAS dot product of two arrays far larger than the
caches, one per thread, bytes read counted). Compute: an fp32 matrix product through numpy's BLAS.
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

ARRAY_MIB = 256  # per array; beyond most L3 caches
REPEATS = 5
MATMUL_N = 2048
RAM_SHARE = 0.1  # never take more than this share of RAM for the arrays


class MachineBench(BaseModel):
    cpu_model: str
    threads: int
    memory_bandwidth_gb_s: float  # decimal GB/s
    fp32_gflops: float
    measured_at: str
    method: str = f"numpy dot of two {ARRAY_MIB} MiB arrays per thread (bytes read), best of {REPEATS}; " \
                  f"fp32 {MATMUL_N}x{MATMUL_N} matmul, best of 3"


def cache_path() -> Path:
    from probes.cache import cache_dir  # the probes' cache dir (ONNX exports, HF folders): one place for both

    return cache_dir() / "machine_bench.json"


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


def _ram_bytes() -> int:
    try:
        import psutil

        return int(psutil.virtual_memory().total)
    except Exception:
        return 8 * 2**30


def measure() -> MachineBench:
    import numpy as np

    n = ARRAY_MIB * 2**20 // 8
    n_threads = max(1, min(_threads(), 32, int(RAM_SHARE * _ram_bytes() // (2 * n * 8))))
    xs = [np.ones(n) for _ in range(n_threads)]
    ys = [np.ones(n) for _ in range(n_threads)]

    def read(i: int, barrier: threading.Barrier) -> None:
        barrier.wait()
        np.dot(xs[i], ys[i])

    best = float("inf")
    for _ in range(REPEATS):
        barrier = threading.Barrier(n_threads + 1)
        workers = [threading.Thread(target=read, args=(i, barrier)) for i in range(n_threads)]
        for w in workers:
            w.start()
        barrier.wait()
        t0 = time.perf_counter()
        for w in workers:
            w.join()
        best = min(best, time.perf_counter() - t0)
    bandwidth = 2 * n * 8 * n_threads / best / 1e9
    del xs, ys

    a = np.random.default_rng(0).random((MATMUL_N, MATMUL_N), dtype=np.float32)
    a @ a
    best_mm = float("inf")
    for _ in range(3):
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
    if bench.cpu_model != _cpu_model() or bench.method != MachineBench.model_fields["method"].default:
        return None  # another CPU, or figures from an older method
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

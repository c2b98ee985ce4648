"""This machine's CPU memory bandwidth and matmul throughput, measured once and cached.

A CPU's roofline depends on its memory channels and DIMMs, which no spec lookup knows; a few seconds of
measurement do. Bandwidth: read-only, as decoding is (a BLAS dot product of two arrays far larger than the
caches, one per thread, bytes read counted). Compute: an fp32 matrix product through numpy's BLAS.

The cached file is an input like any other (anyone may have put a FIFO, a link to /dev/zero or a NaN there): it is
read only when it is a small regular file with finite, positive figures; otherwise it is measured again and replaced.
"""
from __future__ import annotations

import json
import os
import platform
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

ARRAY_MIB = 128  # per thread, read as two halves: beyond the L3 one core reaches (96 MiB on the largest), and small
# because first touching the pages is most of the cost (4.7 s for the 1 GiB two 256 MiB arrays per thread took here)
REPEATS = 5
MATMUL_N = 2048
RAM_SHARE = 0.1  # never take more than this share of RAM for the arrays
MAX_FILE_BYTES = 64 << 10  # the file is ~400 bytes; anything far larger is not ours


class MachineBench(BaseModel):
    cpu_model: str = Field(max_length=512)
    threads: int = Field(gt=0)
    # decimal GB/s; a NaN, 0 or negative figure would flow into every CPU bound and the JSON output
    memory_bandwidth_gb_s: float = Field(gt=0, allow_inf_nan=False)
    fp32_gflops: float = Field(gt=0, allow_inf_nan=False)
    measured_at: str = Field(max_length=64)
    method: str = f"numpy dot of the two halves of one {ARRAY_MIB} MiB array per thread (bytes read), best of {REPEATS}; " \
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
    n_threads = max(1, min(_threads(), 32, int(RAM_SHARE * _ram_bytes() // (n * 8))))
    arrays = [np.ones(n) for _ in range(n_threads)]
    half = n // 2

    def read(i: int, barrier: threading.Barrier) -> None:
        barrier.wait()
        np.dot(arrays[i][:half], arrays[i][half:2 * half])

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
    best = max(best, 1e-9)  # a clock that did not move must not give an infinite bandwidth
    bandwidth = 2 * half * 8 * n_threads / best / 1e9
    del arrays

    a = np.random.default_rng(0).random((MATMUL_N, MATMUL_N), dtype=np.float32)
    a @ a
    best_mm = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        a @ a
        best_mm = min(best_mm, time.perf_counter() - t0)
    best_mm = max(best_mm, 1e-9)
    gflops = 2 * MATMUL_N**3 / best_mm / 1e9
    return MachineBench(cpu_model=_cpu_model(), threads=n_threads, memory_bandwidth_gb_s=round(bandwidth, 2),
                        fp32_gflops=round(gflops, 1), measured_at=datetime.now(timezone.utc).isoformat(
                            timespec="seconds"))


def cached() -> MachineBench | None:
    """The cached figures for this CPU, or None (never measures): also None for a file that is not a small regular
    one (never opened), or whose figures are not finite and positive. Raises CacheDirError (one line) when the
    cache dir is a file."""
    from probes.cache import read_cache_file

    raw = read_cache_file(cache_path(), MAX_FILE_BYTES)
    if raw is None:
        return None
    try:
        bench = MachineBench.model_validate_json(raw)
    except (ValidationError, ValueError, RecursionError):
        return None
    if bench.cpu_model != _cpu_model() or bench.method != MachineBench.model_fields["method"].default:
        return None  # another CPU, or figures from an older method
    return bench


def get(measure_if_missing: bool = True) -> MachineBench | None:
    """The cached figures, else (by default) measured now and cached. A refused file is replaced, not opened."""
    from probes.cache import write_cache_file

    bench = cached()
    if bench is None and measure_if_missing:
        bench = measure()
        try:
            write_cache_file(cache_path(), json.dumps(bench.model_dump(), indent=2).encode("utf-8"))
        except OSError:
            pass  # a read-only cache dir (or a folder standing at the file's name) costs a re-measure next time
    return bench

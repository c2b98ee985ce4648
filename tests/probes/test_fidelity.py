"""Loose bound on harness overhead (the precise figures come from bench/llama_fidelity.py).

This host is shared: one bare loop can run 30% slower than the next. So the bare loop runs before and
after the probe, and the bound only catches a gross harness cost (a per-token round trip, a sleep), which
would push the probe below 0.6× the faster bare run; it must also not beat the slower one by 1.6×, which
would mean the probe counts tokens or time differently from the bare loop. Noise is transient and a harness
cost is not, so an attempt out of bounds is measured again (up to three times) before the test fails. On a
machine that other processes load (a build beside the suite, a CPU hog) the probe's figures may fall far below
the bare loop's; the product's duty then is to say so: such an attempt counts only if the probe marked its own
result busy, which keeps it from changing the advice.
"""
import importlib.util
import os
from pathlib import Path

from probes.models import default_model
from probes.result import ProbeSettings
from probes.runner import run_probe
from probes.workload import build_prompts

spec = importlib.util.spec_from_file_location("fid", Path(__file__).resolve().parents[2] / "bench" / "llama_fidelity.py")
fid = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fid)


def _attempt(n: int, tokens: int) -> tuple[bool, tuple]:
    settings = ProbeSettings(engine="llama.cpp", requests=n, max_tokens=tokens, prompt_mix="short", seed=1234)
    prompts = build_prompts(n, "short", 1234)
    before = fid.bare_loop(default_model(), prompts, tokens, len(os.sched_getaffinity(0)), 512)["decode_tps"]
    res = run_probe(settings)
    assert res.ok, res.reason
    assert res.output_tokens_total == n * tokens
    after = fid.bare_loop(default_model(), prompts, tokens, res.backend_settings["n_threads"],
                          res.backend_settings["n_batch"])["decode_tps"]
    probe = res.decode_tps_per_request.p50
    ok = 0.6 * max(before, after) < probe < 1.6 * min(before, after)
    if not ok and probe < 0.6 * max(before, after) and res.system_load.busy:
        ok = True  # slower under someone else's load, and the result says it was busy
    return ok, (probe, before, after, res.system_load.busy)


def test_probe_decode_speed_close_to_bare_loop():
    tries = []
    for _ in range(3):
        ok, figures = _attempt(3, 32)
        tries.append(figures)
        if ok:
            return
    raise AssertionError(f"probe decode tok/s vs bare loop before/after, 3 attempts: {tries}")

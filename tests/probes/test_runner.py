"""The isolated child process: real llama.cpp runs, concurrency, crash, cancel, timeout, bad models."""
import os
import signal
import struct
import threading

import pytest

from probes.metrics import percentile
from probes.result import ProbeSettings
from probes.runner import run_probe


def _settings(**kw):
    base = dict(engine="llama.cpp", requests=4, concurrency=1, max_tokens=16, prompt_mix="short", timeout_s=300)
    base.update(kw)
    return ProbeSettings(**base)


@pytest.fixture(scope="module")
def concurrent_run():
    events = []
    s = _settings(requests=6, concurrency=3, prompt_mix="mixed")
    s.extra["serving"] = "in-process"  # the in-process loop under concurrent clients (llama-server has its tests)
    res = run_probe(s, on_event=events.append)
    return res, events


def test_real_llama_cpp_run(concurrent_run):
    res, events = concurrent_run
    assert res.status == "ok", res.reason
    assert res.requests_ok == 6 and res.errors == 0 and res.output_tokens_total == 6 * 16
    assert res.engine_version and res.load_time_s > 0
    assert res.ttft_ms.p50 > 0 and res.itl_ms.p50 > 0 and res.decode_tps_per_request.p50 > 0
    assert res.peak_rss_mb and res.peak_rss_mb > 100  # the GGUF is ~94 MB
    assert "one at a time" in res.serving
    phases = [e.get("phase") for e in events]
    assert {"check", "load", "warmup", "run"} <= set(phases)
    runs = [e for e in events if e.get("phase") == "run"]
    assert runs[-1]["done"] == runs[-1]["total"] == 6
    assert res.system_load.cpu_count and res.system_load.other_processes_cpu_percent is not None


def test_percentiles_recompute_from_raw_timestamps(concurrent_run):
    res, _ = concurrent_run
    ttft = [(r.first_token_s - r.submitted_s) * 1000 for r in res.requests]
    itl = [(b - a) * 1000 for r in res.requests for a, b in zip(r.token_times_s, r.token_times_s[1:])]
    for q, field in ((50, "p50"), (95, "p95"), (99, "p99")):
        assert getattr(res.ttft_ms, field) == pytest.approx(percentile(ttft, q), abs=1e-3)
        assert getattr(res.itl_ms, field) == pytest.approx(percentile(itl, q), abs=1e-3)
    # with 3 clients and one sequence at a time, later requests wait: TTFT spreads
    assert max(ttft) > 2 * min(ttft)
    assert all(len(r.token_times_s) == r.output_tokens == 16 for r in res.requests)


def test_kill_mid_run_is_an_error_not_a_crash():
    pid = {}

    def on(ev):
        if ev.get("type") == "started":
            pid["p"] = ev["pid"]
        if ev.get("phase") == "run" and ev.get("done") == 1:
            os.kill(pid["p"], signal.SIGKILL)  # what the OOM killer does

    res = run_probe(_settings(requests=6, max_tokens=32), on_event=on)
    assert res.status == "error" and "SIGKILL" in res.reason and "memory" in res.reason


def test_cancel():
    cancel = threading.Event()

    def on(ev):
        if ev.get("phase") == "run":
            cancel.set()

    res = run_probe(_settings(requests=20, max_tokens=64), on_event=on, cancel=cancel)
    assert res.status == "cancelled" and "cancelled" in res.reason and res.started_at and res.duration_s > 0


def test_timeout_kills_the_engine():
    res = run_probe(_settings(requests=200, max_tokens=64, timeout_s=4))
    # killed in loading, it is an error; stopped while measuring, it keeps what finished and is partial, never ok
    assert res.status in ("error", "partial") and "timed out after 4 s" in res.reason
    if res.status == "partial":
        assert 0 < res.requests_total < 200 and "that finished ok are kept" in res.reason


def test_missing_model(tmp_path):
    res = run_probe(_settings(model=str(tmp_path / "none.gguf")))
    assert res.status == "error" and "not found" in res.reason


def test_corrupt_model(tmp_path):
    f = tmp_path / "bad.gguf"
    f.write_bytes(b"\x00" * 4096)
    res = run_probe(_settings(model=str(f)))
    assert res.status == "error" and "not a GGUF" in res.reason


def test_model_too_large_for_free_memory(tmp_path):
    f = tmp_path / "huge.gguf"
    with open(f, "wb") as fh:  # a valid header, then a sparse 4 TiB file: takes no disk
        fh.write(b"GGUF" + struct.pack("<IQQ", 3, 291, 30))
        fh.truncate(4 * 2**40)
    res = run_probe(_settings(model=str(f)))
    assert res.status == "error" and res.reason.startswith("refused") and "MB" in res.reason


def test_unknown_engine_lists_known():
    from probes.registry import UnknownBackend

    with pytest.raises(UnknownBackend, match="known: "):
        run_probe(_settings(engine="mlc-llm"))


def test_a_run_beside_two_cpu_hogs_is_held_with_why():
    """Two busy loops started and stopped here (not children of the probe, as other engines' processes are not):
    the run is marked busy with the share other processes used, whatever the machine-wide counters say."""
    import subprocess
    import sys

    hogs = [subprocess.Popen([sys.executable, "-c", "import time; t = time.time() + 120\nwhile time.time() < t: pass"])
            for _ in range(2)]  # each ends by itself, should the test be killed
    try:
        res = run_probe(_settings(requests=2, max_tokens=4, warmup=0, threads=1))
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    load = res.system_load
    assert res.status == "ok"
    assert load.busy and load.other_processes_cpu_percent > 25, load
    assert "other processes used" in load.note

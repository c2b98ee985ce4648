"""llama.cpp is measured the way it serves: llama-server's parallel slots above concurrency 1, in-process at 1; a
cancelled run keeps the requests that finished. Real engines on the bundled model."""
import threading

import pytest

from probes.backends.llama_cpp import llama_server_binary
from probes.result import ProbeSettings
from probes.runner import run_probe


def _s(**kw):
    base = dict(engine="llama.cpp", requests=8, concurrency=4, max_tokens=16, prompt_mix="short", timeout_s=300,
                warmup=1, threads=2)
    base.update(kw)
    return ProbeSettings(**base)


def test_llama_server_is_built_by_make_install():
    assert llama_server_binary() is not None, "make llama-server builds it (part of make install / make test)"


def test_concurrency_4_is_measured_through_llama_server_parallel_slots():
    res = run_probe(_s())
    assert res.status == "ok", res.reason
    assert res.serving_mode == "llama-server"
    assert res.backend_settings["parallel_slots"] == 4 and res.backend_settings["cont_batching"] is True
    assert res.requests_ok == 8 and res.device == "cpu"
    # continuous batching: while one request streams, another's tokens arrive too (in-process, they never overlap)
    spans = sorted((r.first_token_s, r.token_times_s[-1]) for r in res.requests)
    assert any(b0 < a1 for (_, a1), (b0, _) in zip(spans, spans[1:]))
    assert res.peak_rss_mb and res.peak_rss_mb > 50  # the server's memory is the probe's (its process tree)


def test_concurrency_1_stays_in_process():
    res = run_probe(_s(concurrency=1, requests=3))
    assert res.status == "ok" and res.serving_mode == "in-process"


def test_without_llama_server_it_says_what_it_measured_instead(monkeypatch):
    monkeypatch.setenv("INFERENCE_ADVISOR_LLAMA_SERVER", "/nonexistent/llama-server")
    res = run_probe(_s(requests=4))
    assert res.status == "ok" and res.serving_mode == "in-process"
    assert any("llama-server is not built here" in n for n in res.notes)


@pytest.mark.parametrize("concurrency", [1, 2])
def test_a_cancelled_run_keeps_the_requests_that_finished(concurrency):
    cancel = threading.Event()

    def on_event(ev):
        if ev.get("phase") == "run" and ev.get("done", 0) >= 4:
            cancel.set()

    res = run_probe(_s(concurrency=concurrency, requests=40, max_tokens=24), on_event=on_event, cancel=cancel)
    assert res.status == "cancelled"
    assert 4 <= res.requests_total < 40 and res.requests_ok >= 4
    assert res.ttft_ms.p50 is not None and len(res.requests) == res.requests_total
    assert "cancelled by the user after" in res.reason

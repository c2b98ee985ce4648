"""The concurrency sweep: its stopping rules and SLA capacity on recorded per-level results, and a real sweep of
llama.cpp on the bundled model."""
import pytest

from probes.result import Percentiles, ProbeResult, ProbeSettings
from probes.sweep import levels_for, run_sweep


def _recorded(table, busy=(), ci=None):
    """A runner that returns, per concurrency, the result a probe recorded at that level."""
    from probes.result import SystemLoad

    calls = []

    def runner(s, on_event=None, cancel=None):
        calls.append(s)
        p95, goodput = table[s.concurrency]
        load = SystemLoad(busy=s.concurrency in busy, other_processes_cpu_percent=40.0 if s.concurrency in busy else 2)
        return ProbeResult(engine=s.engine, status="ok", ttft_ms=Percentiles(p50=p95 / 2, p95=p95), goodput=goodput,
                           requests_total=s.requests, requests_ok=s.requests, device="cpu", system_load=load,
                           ttft_p95_ci_ms=(ci or {}).get(s.concurrency))
    return runner, calls


BASE = ProbeSettings(engine="llama.cpp", ttft_target_ms=1000, requests=8, max_tokens=16)


def test_it_stops_at_the_ttft_target_and_names_the_capacity():
    runner, calls = _recorded({1: (300, 1.0), 2: (600, 1.0), 4: (1400, 0.5), 8: (3000, 0.1)})
    r = run_sweep(BASE, [1, 2, 4, 8], runner=runner)
    assert r.capacity == 2 and [lv.concurrency for lv in r.levels] == [1, 2, 4]
    assert "TTFT p95 1400 ms > the 1000 ms target" in r.stop_reason
    assert [s.requests for s in calls] == [20, 20, 20]  # at least max(20, 2 x concurrency): a p95 of 8 is the slowest
    assert all(s.warmup >= 1 for s in calls)


def test_goodput_below_the_share_stops_it_even_under_the_p95_target():
    runner, _ = _recorded({1: (200, 1.0), 2: (900, 0.8), 4: (950, 0.95)})
    r = run_sweep(BASE, [1, 2, 4], runner=runner, goodput_share=0.9)
    assert r.capacity == 1 and "goodput 80% < 90%" in r.stop_reason


def test_the_plan_maximum_bounds_the_levels_and_stops_the_sweep():
    assert levels_for(None, plan_max=6) == [1, 2, 4]
    assert levels_for("16,1,4", None) == [1, 4, 16]
    runner, _ = _recorded({1: (100, 1.0), 2: (100, 1.0), 4: (100, 1.0)})
    r = run_sweep(BASE, [1, 2, 4], runner=runner, plan_max=2)
    assert r.capacity == 2 and "memory-bound maximum" in r.stop_reason


def test_a_failing_first_level_is_the_sweeps_failure():
    def runner(s, on_event=None, cancel=None):
        return ProbeResult(engine=s.engine, status="unavailable", reason="not installed")
    r = run_sweep(BASE, [1, 2], runner=runner)
    assert r.status == "unavailable" and r.capacity is None and len(r.levels) == 1


@pytest.mark.slow
def test_a_real_llama_cpp_sweep():
    r = run_sweep(BASE.model_copy(update={"requests": 4, "max_tokens": 8, "ttft_target_ms": 60_000}), [1, 2])
    assert r.status == "ok", r.reason
    assert [lv.concurrency for lv in r.levels] == [1, 2] and r.capacity == 2
    assert all(lv.requests_ok >= 8 for lv in r.levels) and r.levels[0].ttft_ms.p95 > 0
    assert len(r.results) == 2 and r.results[1].settings.concurrency == 2


def _cli(*args, timeout=600):
    import subprocess
    import sys
    from pathlib import Path

    return subprocess.run([sys.executable, "-m", "probes", "sweep", *args], cwd=Path(__file__).resolve().parents[2],
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("args,fragment", [
    (["--concurrency", "1,x"], "comma-separated"),
    (["--concurrency", "0,2"], "between 1 and 1024"),
    (["--goodput-share", "1.5"], "share between 0 and 1"),
    (["--input-tokens", "abc"], "input tokens must be"),
])
def test_bad_sweep_arguments_are_one_line_exit_2(args, fragment):
    p = _cli("--engine", "llama.cpp", *args, timeout=60)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and fragment in p.stderr, p.stderr


@pytest.mark.slow
def test_the_cli_sweeps_llama_cpp_until_the_sla_and_names_a_capacity():
    import json

    p = _cli("--engine", "llama.cpp", "--until-sla", "--ttft-target-ms", "1000", "--input-tokens", "64",
             "--output-tokens", "8", "--max-concurrency", "2")  # the smallest sweep with a level to stop at
    assert p.returncode == 0, p.stderr[-500:]
    r = json.loads(p.stdout)
    assert r["levels"][0]["concurrency"] == 1 and r["stop_reason"]
    # one request at a time here: at some level the queue pushes p95 TTFT over the target, or every level ran
    assert r["capacity"] is None or r["capacity"] >= 1
    for lv, res in zip(r["levels"], r["results"]):
        assert all(q["prompt_tokens"] in (63, 64, 65) and q["output_tokens"] == 8 for q in res["requests"]
                   if q["status"] == "ok")


@pytest.mark.slow
def test_a_sweep_of_a_local_server_through_the_endpoint(llama_server):
    import json

    p = _cli("--engine", "endpoint", "--endpoint", llama_server, "--concurrency", "1,2", "--requests", "4",
             "--output-tokens", "8", "--input-tokens", "32", "--ttft-target-ms", "60000")
    assert p.returncode == 0, p.stderr[-500:]
    r = json.loads(p.stdout)
    assert [lv["concurrency"] for lv in r["levels"]] == [1, 2] and r["capacity"] == 2
    assert all(lv["requests_ok"] >= 8 for lv in r["levels"])


def test_a_sweep_cancelled_after_its_first_level_is_cancelled():
    def runner(s, on_event=None, cancel=None):
        status = "ok" if s.concurrency == 1 else "cancelled"
        return ProbeResult(engine=s.engine, status=status, goodput=1.0, ttft_ms=Percentiles(p95=10.0),
                           reason=None if status == "ok" else "cancelled by the user")
    r = run_sweep(BASE, [1, 2, 4], runner=runner)
    assert r.status == "cancelled" and r.capacity == 1 and len(r.levels) == 2


def test_a_batching_engines_request_that_fails_after_a_token_is_an_error():
    """The shared driver of vLLM and TensorRT-LLM (no engine: the token stream is a plain async generator)."""
    import asyncio

    from probes.backends._async import drive

    async def start(i, prompt):
        yield 1
        if i == 1:
            raise RuntimeError("engine died")

    recs = asyncio.run(drive(["a", "b"], BASE, start, lambda n: None, lambda p: 3))
    assert [r.status for r in recs] == ["ok", "error"] and recs[1].error == "RuntimeError: engine died"


def test_a_level_whose_interval_straddles_the_target_is_inconclusive_not_a_miss():
    runner, _ = _recorded({1: (400, 1.0), 2: (980, 0.9), 4: (1500, 0.4)}, ci={1: [300, 500], 2: [700, 1300],
                                                                             4: [1200, 1900]})
    r = run_sweep(BASE, [1, 2, 4], runner=runner)
    assert [lv.outcome for lv in r.levels] == ["meets", "inconclusive", "misses"]
    assert r.capacity == 1 and r.inconclusive_at == 2  # not 2: its p95 could be above the target on a rerun
    assert r.stop == {"key": "ttft", "c": 4, "p95": 1500, "target": 1000}


def test_capacity_is_the_highest_meet_with_no_clear_miss_below():
    runner, _ = _recorded({1: (400, 1.0), 2: (1400, 0.5), 4: (500, 1.0)})
    r = run_sweep(BASE, [1, 2, 4], runner=runner, until_sla=False)
    assert r.capacity == 1  # level 4's luck above a clear miss at 2 is not capacity
    runner, _ = _recorded({1: (990, 0.9), 2: (600, 1.0), 4: (1500, 0.4)}, ci={1: [400, 1300], 2: [500, 700]})
    r = run_sweep(BASE, [1, 2, 4], runner=runner)
    assert r.capacity == 2 and r.inconclusive_at == 1  # one slow request at 1 does not hide a clear meet at 2


def test_a_busy_level_marks_the_sweep_and_cannot_change_the_advice():
    from advisor.evidence import check_capacity
    from advisor.knowledge import load_knowledge

    runner, _ = _recorded({1: (100, 1.0), 2: (200, 1.0), 4: (300, 1.0)}, busy=(2,))
    r = run_sweep(BASE.model_copy(update={"engine": "onnxruntime"}), [1, 2, 4], runner=runner)
    assert r.busy and r.levels[1].busy and r.capacity == 4
    v = check_capacity([r], 4, "llama.cpp", load_knowledge(), "en")
    assert not v.changes_advice and v.better is None
    assert "cannot change the advice" in " ".join(v.lines)
    quiet, _ = _recorded({1: (100, 1.0), 2: (200, 1.0), 4: (300, 1.0)})
    v2 = check_capacity([run_sweep(BASE.model_copy(update={"engine": "onnxruntime"}), [1, 2, 4], runner=quiet)], 4,
                        "llama.cpp", load_knowledge(), "en")
    assert v2.changes_advice and v2.better == "onnxruntime"  # the same figures on a quiet machine do


def test_a_sweep_for_other_answers_or_another_device_cannot_change_the_advice():
    from advisor.evidence import TargetDevice, check_capacity
    from advisor.knowledge import load_knowledge

    runner, _ = _recorded({1: (100, 1.0), 2: (200, 1.0), 4: (300, 1.0)})
    sw = run_sweep(BASE.model_copy(update={"engine": "onnxruntime", "answers_id": "aaaa"}), [1, 2, 4], runner=runner)
    k = load_knowledge()
    assert not check_capacity([sw], 4, "llama.cpp", k, "en", answers_id="bbbb").changes_advice
    gpu = TargetDevice(kind="gpu", gpu_name="NVIDIA L40S", gpu_id="l40s", label="1 × NVIDIA L40S")
    v = check_capacity([sw], 4, "llama.cpp", k, "zh", target=gpu)
    assert not v.changes_advice and "不改变建议" in " ".join(v.lines)


def test_a_sweep_cancelled_during_level_2_keeps_level_1_in_the_pages_words():
    """Walk-3 M6: cancelled during level 2, the page said "the sweep did not run (cancelled by the user after 14 of
    20 requests ...)" in English on the zh page, though level 1 finished and was plotted."""
    from advisor.evidence import check_capacity
    from advisor.knowledge.load import load_knowledge

    def runner(s, on_event=None, cancel=None):
        status = "ok" if s.concurrency == 1 else "cancelled"
        return ProbeResult(engine=s.engine, status=status, goodput=1.0, ttft_ms=Percentiles(p95=10.0),
                           requests_total=20 if status == "ok" else 14, requests_ok=20 if status == "ok" else 14,
                           reason=None if status == "ok" else "cancelled by the user after 14 of 20 requests")
    sw = run_sweep(BASE, [1, 2, 4], runner=runner)
    k = load_knowledge()
    for lang, words in (("en", ["cancelled by you during level 2", "14 of its requests", "concurrency 1",
                                "meets p95 TTFT"]), ("zh", ["第 2 级", "已完成 14 个请求", "并发 1"])):
        text = " ".join(check_capacity([sw], 4, None, k, lang).lines)
        assert all(w in text for w in words), text
        assert "did not run" not in text and "cancelled by the user after" not in text


def test_a_sweep_that_measured_nothing_does_not_print_a_capacity():
    """Audit (low): an errored served sweep printed "SLA capacity none (not even 1)" as if it had measured."""
    from probes.cli import _sweep_text
    from probes.sweep_result import SweepResult

    text = _sweep_text(SweepResult(engine="llama.cpp", status="error", reason="the server exited", levels=[]))
    assert "not measured" in text and "not even 1" not in text


def _flaky(device):
    """Walk-3 L13's flaky endpoint: level 1 ran 20 requests and 15 failed, while other processes here used 63 %."""
    from probes.result import SystemLoad

    def runner(s, on_event=None, cancel=None):
        return ProbeResult(engine="endpoint", status="partial", device=device, requests_total=20, requests_ok=5,
                           errors=15, top_cause="HTTP 500: upstream crashed",
                           reason="not measured: 15 of 20 requests failed or ended early: HTTP 500: upstream crashed",
                           system_load=SystemLoad(busy=True, other_processes_cpu_percent=63.0))
    return run_sweep(BASE.model_copy(update={"engine": "endpoint", "endpoint": "http://10.0.0.2:8000"}), [1, 2],
                     runner=runner)


@pytest.mark.parametrize("lang,ran,cpu", [
    ("en", "endpoint: the sweep ran; at concurrency 1, 15 of 20 requests failed: “HTTP 500: upstream crashed”", "CPU"),
    ("zh", "endpoint：扫描已运行；在并发 1 时 20 个请求中有 15 个失败：“HTTP 500: upstream crashed”", "CPU")])
def test_a_failed_endpoint_sweep_says_it_ran_and_never_blames_this_machines_cpu(lang, ran, cpu):
    """Walk-3 L13: "the sweep did not run (not measured: 15 of 20 requests failed …)" and "other processes used up to
    63% of the CPU during it", for a server on another machine."""
    from advisor.evidence import check_capacity
    from advisor.knowledge.load import load_knowledge

    k = load_knowledge()
    sw = _flaky("remote vLLM 0.11.0 server 10.0.0.2:8000")
    line = check_capacity([sw], 4, None, k, lang).lines[0]
    assert line.startswith(ran) and cpu not in line and "did not run" not in line and "未能运行" not in line
    # the same failures from a server on this machine: its CPU could slow it, so the caveat stays
    here = check_capacity([_flaky("remote server 127.0.0.1:8000")], 4, None, k, lang).lines[0]
    assert here.startswith(ran) and cpu in here
    # a sweep whose engine never answered did not run, and says so
    from probes.sweep_result import SweepResult

    none = SweepResult(engine="endpoint", status="error", reason="connection refused", levels=[])
    assert "connection refused" in check_capacity([none], 4, None, k, lang).lines[0]


def test_an_endpoint_run_on_another_machine_is_never_busy_for_this_ones_cpu():
    from advisor.evidence.verdict import busy_here
    from probes.result import SystemLoad, on_another_machine
    from probes.runner import _remote_server

    for url, remote in (("http://10.0.0.2:8000/v1", True), ("https://api.example.com", True),
                        ("http://127.0.0.1:8080", False), ("http://localhost:8080", False),
                        ("http://[::1]:8080", False)):
        assert _remote_server(ProbeSettings(engine="endpoint", endpoint=url)) is remote, url
    assert not _remote_server(ProbeSettings(engine="llama.cpp"))
    busy = SystemLoad(busy=True, other_processes_cpu_percent=63.0)
    far = ProbeResult(engine="endpoint", status="ok", device="remote server 10.0.0.2:8000", system_load=busy,
                      ttft_ms=Percentiles(p50=100.0, p95=200.0), goodput=1.0, requests_total=8, requests_ok=8)
    near = far.model_copy(update={"device": "remote server 127.0.0.1:8000"})
    local = far.model_copy(update={"engine": "llama.cpp", "device": "cpu"})
    assert on_another_machine(far) and not busy_here(far)
    assert not on_another_machine(near) and busy_here(near) and busy_here(local)

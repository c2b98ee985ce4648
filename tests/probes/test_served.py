"""Run what you would deploy (probes/served.py): the bundle's llama-server command starts here on the bundled model,
is swept through the endpoint probe and stopped; cancel and a killed parent leave no process behind; only the model,
address and port of the bundle's command change, and what changed is recorded.

llama-server is the engine these tests start (seconds to load); vLLM's server takes minutes to compile on this CPU,
so it is checked by its own parser in tests/advisor/deploy/test_deploy_parsers.py and measured by
`python -m probes serve` (the issue's closing note gives its figures)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest

from probes.backends.llama_cpp import llama_server_binary
from probes.result import ProbeSettings
from probes.served import ServeSpec, local_command, run_served, served_availability

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "this-machine-smollm2.yaml")
needs_server = pytest.mark.skipif(llama_server_binary() is None, reason="llama-server is not built (make llama-server)")


def _bundle(engine: str = "llama.cpp") -> dict:
    p = subprocess.run([sys.executable, "-m", "advisor", "deploy", "--answers", EXAMPLE, "--engine", engine,
                        "--format", "json"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.fixture(scope="module")
def spec() -> ServeSpec:
    b = _bundle()
    return ServeSpec(engine="llama.cpp", program=b["program"], args=b["template_args"], health=b["health"],
                     bundle_command=b["command"], start_s=120)


def _base(**kw) -> ProbeSettings:
    kw = {"requests": 4, **kw}
    return ProbeSettings(engine="endpoint", endpoint="http://127.0.0.1:1", concurrency=1, input_tokens=64,
                         output_tokens=8, ttft_target_ms=5000, timeout_s=300, warmup=1, **kw)


def _servers() -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["name", "cmdline"]):
        try:
            if "llama-server" in " ".join(p.info["cmdline"] or [])[:300] and "--kv-unified" in (p.info["cmdline"] or []):
                out.append(p)
        except psutil.Error:
            continue
    return out


def test_only_the_model_address_and_port_change(spec):
    cmd, notes = local_command(spec, "/tmp/m.gguf", 4567)
    bundle = spec.bundle_command.split()
    assert cmd[0] == str(llama_server_binary()) and bundle[0] == "llama-server"
    # every other token is the bundle's, in order
    mapped = {"/models/smollm2-135m.gguf": "/tmp/m.gguf", "0.0.0.0": "127.0.0.1", "8080": "4567"}
    assert cmd[1:] == [mapped.get(t, t) for t in bundle[1:]]
    assert any("model" in n for n in notes) and any("127.0.0.1:4567" in n for n in notes)


def test_a_command_that_is_not_the_engines_own_is_refused(spec):
    with pytest.raises(ValueError):
        local_command(spec.model_copy(update={"program": ["sh", "-c"]}), "/tmp/m.gguf", 1)
    with pytest.raises(ValueError):
        local_command(ServeSpec(engine="sglang", program=["python3"], args=[]), "/tmp/m", 1)
    assert "cannot be started here" in (served_availability("sglang") or "")


def test_an_engine_that_cannot_start_here_is_unavailable_not_an_error():
    res = run_served(ServeSpec(engine="tensorrt-llm", program=["trtllm-serve"], args=[]), _base(), [1])
    assert res.status == "unavailable" and res.reason and res.deployed is not None


@needs_server
def test_the_bundle_runs_is_measured_and_stopped(spec):
    res = run_served(spec, _base(), [1])
    assert res.status == "ok", res.reason
    d = res.deployed
    assert d.stopped is True and d.ready_s is not None and d.ready_s < 120
    assert d.bundle_command == spec.bundle_command and "--kv-unified" in d.command_line
    assert "127.0.0.1" in d.command_line and "0.0.0.0" not in d.command_line
    lv = res.levels[0]
    assert lv.requests_ok == lv.requests_total and lv.requests_total >= 20  # a sweep level's minimum, all served
    assert lv.ttft_ms.p50 and lv.itl_ms.p50 and lv.output_tps_total
    assert res.first_server_kind == "llama-server"  # the endpoint probe recognised the server it measured
    assert not _servers()


@needs_server
def test_a_failing_server_says_why_from_its_log(spec):
    bad = spec.model_copy(update={"args": [*spec.args, "--no-such-flag"]})
    res = run_served(bad, _base(), [1])
    assert res.status == "error" and "exited" in (res.reason or "")
    assert res.deployed.log_tail and res.deployed.stopped is True
    assert not _servers()


@needs_server
def test_cancel_stops_the_server(spec):
    cancel = threading.Event()
    phases: list[str] = []

    def on_event(ev: dict) -> None:
        phases.append(ev.get("phase") or ev.get("type") or "")
        if ev.get("phase") == "warmup" or ev.get("phase") == "run":
            cancel.set()

    res = run_served(spec, _base(requests=200), [1, 2], on_event=on_event, cancel=cancel)
    assert res.status == "cancelled", (res.status, res.reason, phases[-5:])
    assert res.deployed.stopped is True
    assert not _servers()


HOLDER = (
    "import sys, json\n"
    "from probes.served import ServeSpec, run_served\n"
    "from probes.result import ProbeSettings\n"
    "spec = ServeSpec.model_validate_json(sys.argv[1])\n"
    "base = ProbeSettings(engine='endpoint', endpoint='http://127.0.0.1:1', requests=400, input_tokens=64,"
    " output_tokens=64, ttft_target_ms=5000, timeout_s=300)\n"
    "run_served(spec, base, [1, 2, 4])\n")


@needs_server
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_parent_leaves_no_server(spec, sig):
    parent = subprocess.Popen([sys.executable, "-c", HOLDER, spec.model_dump_json()], cwd=ROOT,
                              env=dict(os.environ, PYTHONPATH=ROOT), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    end = time.monotonic() + 120
    while not _servers() and time.monotonic() < end:
        assert parent.poll() is None, "the holder exited before its server started"
        time.sleep(0.2)
    assert _servers(), "the server never started"
    time.sleep(2)  # requests under way
    parent.send_signal(sig)
    parent.wait(timeout=30)
    end = time.monotonic() + 30
    while _servers() and time.monotonic() < end:
        time.sleep(0.2)
    left = _servers()
    for p in left:
        p.kill()
    assert not left, f"{len(left)} llama-server process(es) outlived a parent killed by {sig.name}"


def test_the_cli_refuses_bad_input_with_one_line():
    def run(*args):
        return subprocess.run([sys.executable, "-m", "probes", "serve", *args], capture_output=True, text=True,
                              cwd=ROOT, timeout=300)

    p = run("--engine", "llama.cpp", "--from-plan", "/no/such/answers.yaml")
    assert p.returncode == 2 and "no such file" in p.stderr and "Traceback" not in p.stderr
    p = run("--engine", "llama.cpp", "--from-plan", EXAMPLE, "--concurrency", "x")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    p = run("--engine", "sglang", "--from-plan", EXAMPLE)  # no GPU here: SGLang's bundle is refused
    assert p.returncode == 1 and "sglang" in p.stderr and "Traceback" not in p.stderr


def test_each_level_of_a_served_sweep_draws_its_own_prompts():
    """One server serves every level: the same prompts again would be served from its prompt cache (llama-server
    keeps idle slots' prompts; vLLM caches prefixes) and the TTFT would measure the cache, not the prefill."""
    from probes import metrics
    from probes.result import ProbeResult, RequestRecord
    from probes.sweep import run_sweep

    seen: list[int] = []

    def runner(s, on_event=None, cancel=None):
        seen.append(s.seed)
        rec = RequestRecord(index=0, prompt_tokens=64, output_tokens=8, submitted_s=0.0, first_token_s=0.1,
                            token_times_s=[0.1 + 0.01 * i for i in range(8)], finished_s=0.2)
        return ProbeResult(engine="endpoint", status="ok", settings=s, requests=[rec],
                           **metrics.compute([rec], s.ttft_target_ms))

    run_sweep(_base(), [1, 2, 4], until_sla=False, runner=runner, seed_each_level=True)
    assert len(seen) == 3 and len(set(seen)) == 3
    seen.clear()
    run_sweep(_base(), [1, 2, 4], until_sla=False, runner=runner)  # the probe's own: a fresh engine per level
    assert len(seen) == 3 and len(set(seen)) == 1


def test_only_the_engines_own_settings_reach_the_server_environment(spec):
    from pydantic import ValidationError

    ServeSpec(engine="vllm", program=["vllm", "serve"], args=[], env={"VLLM_CPU_KVCACHE_SPACE": "2"})
    for env in ({"LD_PRELOAD": "/tmp/x.so"}, {"PATH": "/tmp"}, {"VLLM_X": "a\nb"}):
        with pytest.raises(ValidationError):
            ServeSpec(engine="vllm", program=["vllm", "serve"], args=[], env=env)


@needs_server
def test_a_served_job_is_saved_as_running_from_its_start(spec):
    """Audit (medium): a served sweep SIGKILLed mid-run left no trace in the history (it was saved once, at its end).
    Like a plain sweep it is now saved as running when it starts and as each level starts, then done."""
    from probes.jobs import JobBoard

    calls: list[tuple[str, str, int]] = []

    def on_sweep(sw, group, status="done"):
        calls.append((status, sw.status, len(sw.levels)))
        return len(calls)

    board = JobBoard()
    job = board.start([_base(requests=2)], sweep={"levels": [1]}, on_sweep=on_sweep, served=spec)
    assert job is not None and job.finished.wait(240)
    statuses = [c[0] for c in calls]
    assert statuses[0] == "running" and statuses[-1] == "done" and statuses.count("running") >= 2  # start + level
    assert calls[0][1] == "running" and calls[-1][1] == "ok"


@needs_server
def test_a_served_sweep_gets_its_prediction_beside_it(spec):
    """Walk-3 M5: "Measure what you'd deploy" showed no prediction ("an endpoint whose hardware the answers do not
    name"), though the server ran here, on this CPU, on a model file it names. It is now predicted like a local run."""
    from advisor.evidence.sweep_check import check_sweep
    from advisor.inputs import detect
    from advisor.knowledge.load import load_knowledge
    from advisor.planner.machine_bench import MachineBench

    sw = run_served(spec, _base(requests=2), [1])
    assert sw.status == "ok" and sw.deployed and sw.deployed.model
    k = load_knowledge()
    machine = MachineBench(cpu_model="this", threads=2, memory_bandwidth_gb_s=25.0, fp32_gflops=100.0,
                           measured_at="2026-12-05")
    c = check_sweep(sw, k, detect(k), machine)
    assert c is not None and c.engine == "llama.cpp" and c.hw_class.endswith("cpu")
    lv = c.levels[0]
    assert lv.predicted_ttft_ms_p95 and lv.measured_ttft_ms_p95 and lv.predicted_output_tps

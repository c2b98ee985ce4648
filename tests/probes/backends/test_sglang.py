"""The SGLang probe end to end against a stand-in server, and what `probes list` says about SGLang here.

A real SGLang server cannot run on this machine, though its CPU qualifies (Intel AMX): SGLang 0.5.23's CPU engine
(SGLANG_USE_CPU_ENGINE=1) imports CPU kernels from sgl_kernel at start-up, and those are built from SGLang's sources
(sgl-kernel/pyproject_cpu.toml, `sglang-kernel-cpu`), with torch and torchvision from PyTorch's CPU index
(https://docs.sglang.io/platforms/cpu_server.html); neither is on PyPI, the only index reachable here (PyPI's
sglang-kernel and torchvision are CUDA builds: "libnvrtc.so.12: cannot open shared object file").

So the probe runs for real — its child, the server process it starts, the endpoint client that measures it — against
tests/probes/fake_sglang: a `sglang` package whose `python -m sglang.launch_server` parses SGLang's flags (an unknown
flag exits 2) and serves SGLang's routes and answer shapes. The runner sets the child's PYTHONPATH itself, so the fake
is put first on it by a wrapper interpreter named by PROBES_SGLANG_PYTHON (the venv's own python underneath).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from probes.backends import sglang_server as sg
from probes.result import ProbeSettings
from probes.runner import run_probe

ROOT = Path(__file__).resolve().parents[3]
FAKE = ROOT / "tests" / "probes" / "fake_sglang"
AMX = "flags\t\t: fpu sse2 avx avx2 avx512f avx512bw avx512_bf16 amx_bf16 amx_tile amx_int8\n"
AVX2 = "flags\t\t: fpu sse2 avx avx2 fma\n"


@pytest.fixture
def stub(tmp_path, monkeypatch):
    """The environment that makes `sglang` the fake one, for this process (run_probe) and for CLI subprocesses."""
    wrapper = tmp_path / "python"
    wrapper.write_text(f'#!/bin/sh\nexport PYTHONPATH="{FAKE}${{PYTHONPATH:+:$PYTHONPATH}}"\n'
                       f'exec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(AMX)  # the CPU the docs name, wherever the test runs
    record = tmp_path / "server.json"
    env = {"PROBES_SGLANG_PYTHON": str(wrapper), "PROBES_CPUINFO": str(cpuinfo), "FAKE_SGLANG_RECORD": str(record)}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("FAKE_SGLANG_MODE", raising=False)
    return {"env": {**os.environ, **env}, "record": record, "cpuinfo": cpuinfo}


def probe(*args, env, timeout=60):
    return subprocess.run([sys.executable, "-m", "probes", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout, env=env)


def _gone(pid: int) -> bool:
    """Not running (a zombie awaiting its reaper counts as gone: it holds nothing)."""
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _wait_gone(*pids: int, within_s: float = 5.0) -> bool:
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        if all(_gone(p) for p in pids):
            return True
        time.sleep(0.1)
    return all(_gone(p) for p in pids)


def test_run_through_sglangs_server(stub):
    p = probe("run", "--engine", "sglang", "--requests", "4", "--concurrency", "2", "--max-tokens", "8",
              "--format", "json", env=stub["env"])
    assert p.returncode == 0, p.stderr[-2000:]
    res = json.loads(p.stdout)
    assert res["status"] == "ok" and res["engine_version"] == "0.0.0+stub"
    assert res["requests_ok"] == 4 and res["output_tokens_total"] == 4 * 8  # ignore_eos and min_tokens were asked
    assert all(r["status"] == "ok" and r["output_tokens"] == 8 and r["prompt_tokens"] for r in res["requests"])
    assert res["serving_mode"] == "sglang-server" and "SGLang's server" in res["serving"]
    bs = res["backend_settings"]
    device = sg.device_for({})
    assert bs["server_version"] == "0.0.0+stub" and bs["max_running_requests"] == 2 and bs["device"] == device
    assert bs["model_info"]["is_generation"] is True and bs["model_info"]["architectures"] == ["LlamaForCausalLM"]
    assert bs["server_info"]["max_total_num_tokens"] > 0 and "launch_command" not in bs["server_info"]
    assert "off (--disable-radix-cache)" in bs["radix_cache"] and "no reuse between its requests" in bs["radix_cache"]
    cmd = bs["command"]
    assert cmd.startswith("python -m sglang.launch_server --model-path ") and "--host 127.0.0.1" in cmd
    assert f"--device {device}" in cmd and "--max-running-requests 2" in cmd and "--disable-radix-cache" in cmd
    assert "--trust-remote-code" not in cmd and "--api-key" not in cmd and str(stub["record"]) not in cmd
    # the server the probe started: SGLang's flags only (the fake parses them as SGLang does), nothing from a hub
    rec = json.loads(stub["record"].read_text())
    assert rec["argv"][0] == "--model-path" and Path(rec["argv"][1], "config.json").is_file()  # the HF conversion
    assert rec["env"]["HF_HUB_OFFLINE"] == "1" and rec["env"]["TRANSFORMERS_OFFLINE"] == "1"
    assert rec["env"]["PROBE_EVENT_FD"] is None
    assert rec["env"]["SGLANG_USE_CPU_ENGINE"] == ("1" if device == "cpu" else None)
    assert _wait_gone(rec["pid"], rec["worker_pid"]), "the server or its worker outlived the probe"


def test_sweep_through_sglangs_server(stub):
    p = probe("sweep", "--engine", "sglang", "--concurrency", "1,2", "--requests", "4", "--input-tokens", "40",
              "--output-tokens", "6", "--format", "json", env=stub["env"], timeout=90)
    assert p.returncode == 0, p.stderr[-2000:]
    res = json.loads(p.stdout)
    assert res["status"] == "ok" and [lv["concurrency"] for lv in res["levels"]] == [1, 2]
    assert all(lv["status"] == "ok" and lv["errors"] == 0 for lv in res["levels"])
    for level in res["results"]:  # one server per level, sized to it, its prompts counted by its own /tokenize
        assert level["serving_mode"] == "sglang-server"
        assert level["backend_settings"]["max_running_requests"] == level["settings"]["concurrency"]
        assert all(r["prompt_tokens"] in (39, 40, 41) and r["output_tokens"] == 6 for r in level["requests"])
        assert any("counted in the engine's own tokenizer" in n for n in level["notes"])
    assert _wait_gone(json.loads(stub["record"].read_text())["pid"])


def _settings(**extra):
    return ProbeSettings(engine="sglang", requests=2, concurrency=1, max_tokens=4, prompt_mix="short",
                         timeout_s=60, warmup=0, extra=extra)


def test_a_server_that_exits_at_start_says_why(stub, monkeypatch):
    monkeypatch.setenv("FAKE_SGLANG_MODE", "exit")
    t0 = time.monotonic()
    res = run_probe(_settings())
    assert res.status == "error" and time.monotonic() - t0 < 20
    assert "SGLang's server exited with code 1 while starting" in res.reason
    assert "No module named 'sgl_kernel'" in res.reason  # the log's tail: the real cause
    assert len(res.reason) < 800 and res.ttft_ms.p50 is None


def test_a_server_that_never_answers_health_is_cut_at_server_start_s(stub, monkeypatch):
    monkeypatch.setenv("FAKE_SGLANG_MODE", "hang")
    t0 = time.monotonic()
    res = run_probe(_settings(server_start_s=2))
    took = time.monotonic() - t0
    assert res.status == "error" and "did not answer /health within 2 s" in res.reason, res.reason
    assert took < 15, f"took {took:.1f} s"
    rec = json.loads(stub["record"].read_text())
    assert _wait_gone(rec["pid"], rec["worker_pid"]), "a server that never came up outlived the probe"


def test_the_start_wait_leaves_the_run_part_of_the_probes_timeout(stub, monkeypatch):
    monkeypatch.setenv("FAKE_SGLANG_MODE", "hang")
    res = run_probe(_settings().model_copy(update={"timeout_s": 8}))
    assert res.status == "error" and "the probe's timeout of 8 s leaves no more" in res.reason, res.reason


def test_every_flag_the_probe_passes_is_one_sglang_parses(tmp_path):
    """The command for each option the probe has, fed to the fake's parser. That parser was written from SGLang
    0.5.23's `launch_server --help` (read once, from the real wheel): this catches a flag the probe invents, not a
    flag a later SGLang renames (the install is pinned to 0.5.23 for that reason)."""
    sys.path.insert(0, str(FAKE))
    try:
        from sglang.launch_server import parser
    finally:
        sys.path.remove(str(FAKE))
        sys.modules.pop("sglang.launch_server", None)
        sys.modules.pop("sglang", None)
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"max_position_embeddings": 8192, "dtype": "float32"}))
    for extra in ({}, {"device": "cpu"}, {"device": "cuda", "mem_fraction_static": 0.8, "tp_size": 2},
                  {"prefix_cache": True, "dtype": "bfloat16", "context_length": 4096, "max_total_tokens": 9000}):
        cmd, how = sg.SGLangBackend()._command(model, _settings(**extra), 31000)
        assert cmd[1:3] == ["-m", "sglang.launch_server"]
        args = parser().parse_args(cmd[3:])
        assert args.host == "127.0.0.1" and args.port == 31000 and args.trust_remote_code is False
        assert args.disable_radix_cache is not bool(extra.get("prefix_cache"))
        assert (how["env"].get("SGLANG_USE_CPU_ENGINE") == "1") == (args.device == "cpu")
        assert how["env"]["HF_HUB_OFFLINE"] == "1"
    with pytest.raises(SystemExit) as bad:
        parser().parse_args(["--model-path", "m", "--no-such-flag"])  # as SGLang's own argparse does
    assert bad.value.code == 2


def test_cpu_support_follows_sglangs_cpu_page():
    assert sg.cpu_reason({"avx2", "avx512f", "amx_tile", "amx_bf16"}, "x86_64") is None
    no_amx = sg.cpu_reason({"avx2", "avx512f"}, "x86_64")
    assert "needs Intel AMX" in no_amx and "AVX-512 and no AMX" in no_amx and sg.CPU_DOC in no_amx
    assert "AVX2 and no AMX" in sg.cpu_reason({"avx", "avx2"}, "x86_64")
    assert "this CPU is aarch64" in sg.cpu_reason({"asimd"}, "aarch64")


def test_availability_with_the_package_asks_for_the_cpu_kernels(monkeypatch, tmp_path):
    """On a CPU the package alone is not enough: the CPU kernels must be there too (no import of either)."""
    monkeypatch.setattr(sg, "nvidia_gpu", lambda: False)
    monkeypatch.setattr(sg, "amd_gpu", lambda: False)
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(AMX)
    monkeypatch.setenv("PROBES_CPUINFO", str(cpuinfo))
    pkg = tmp_path / "site"
    (pkg / "sglang").mkdir(parents=True)
    (pkg / "sglang" / "__init__.py").write_text("raise SystemExit('imported')\n")
    monkeypatch.syspath_prepend(str(pkg))
    reason = sg.SGLangBackend.availability()
    assert reason and "sglang-kernel-cpu" in reason and "not installed" in reason
    monkeypatch.syspath_prepend(str(FAKE))  # its dist-info stands for the kernels
    assert sg.SGLangBackend.availability() is None  # and nothing was imported: that package exits on import


def test_list_names_sglang_and_why_here(stub, tmp_path):
    """This machine as it is (no SGLang installed), and a CPU without AMX, say why in `probes list`."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PROBES_SGLANG_PYTHON", "PROBES_CPUINFO", "FAKE_SGLANG_RECORD")}
    p = probe("list", "--format", "json", env=env)
    assert p.returncode == 0, p.stderr
    row = next(r for r in json.loads(p.stdout) if r["engine"] == "sglang")
    if not row["available"]:
        assert row["reason"] and "make sglang" in row["install"] and sg.CPU_DOC in row["install"]
    assert "sglang.launch_server" in row["serving"]
    if sg.device_for({}) == "cpu":
        old = tmp_path / "avx2"
        old.write_text(AVX2)
        p = probe("list", env={**env, "PROBES_CPUINFO": str(old)})
        line = next(ln for ln in p.stdout.splitlines() if ln.startswith("sglang"))
        assert "unavailable: SGLang's CPU backend needs Intel AMX" in line and "this CPU has AVX2 and no AMX" in line
    p = probe("list", env=stub["env"])  # the stand-in installed, on an AMX CPU
    assert any(ln.startswith("sglang") and ln.endswith("ready") for ln in p.stdout.splitlines()), p.stdout

"""Every engine on the bundled model, for real, through the CLI contract (exit codes, JSON on stdout)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def probe(*args, timeout=900):
    return subprocess.run([sys.executable, "-m", "probes", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout)


def _ok(p):
    assert p.returncode == 0, p.stderr[-2000:] + p.stdout[-2000:]
    res = json.loads(p.stdout)  # the JSON result alone on stdout
    assert res["status"] == "ok"
    assert res["requests_ok"] == res["requests_total"] and res["ttft_ms"]["p50"] > 0
    assert res["output_tokens_total"] == res["requests_total"] * res["settings"]["max_tokens"]
    return res


def test_llama_cpp_cli_json():
    p = probe("run", "--engine", "llama.cpp", "--requests", "3", "--max-tokens", "8", "--format", "json")
    res = _ok(p)
    assert "requests" in p.stderr  # the progress bar goes to stderr
    assert res["backend_settings"]["n_threads"] >= 1


def test_pytorch_on_the_bundled_model():
    res = _ok(probe("run", "--engine", "pytorch", "--requests", "2", "--max-tokens", "8"))
    assert res["backend_settings"]["dtype"] in ("float32", "bfloat16")


def test_onnxruntime_on_the_bundled_model():
    res = _ok(probe("run", "--engine", "onnxruntime", "--requests", "2", "--max-tokens", "8"))
    assert res["backend_settings"]["execution_provider"] == ["cpu"]


def test_vllm_for_real(vllm_run):
    row, run = vllm_run  # one vLLM start for the session (tests/probes/conftest.py)
    if run is None:
        pytest.fail(f"vLLM should be installed by `make test` (.venv-vllm): {row['reason']}")
    res = _ok(run)
    assert res["engine_version"] and "continuous batching" in res["serving"]
    assert res["peak_rss_mb"] > 500  # summed over the engine's worker processes


def test_tensorrt_llm_unavailable_exit_3():
    p = probe("run", "--engine", "tensorrt-llm")
    assert p.returncode == 3
    res = json.loads(p.stdout)
    assert res["status"] == "unavailable" and res["reason"] and "pypi.nvidia.com" in res["install_hint"]
    assert res["ttft_ms"]["p50"] is None  # no invented numbers


def test_list():
    p = probe("list")
    assert p.returncode == 0
    for name in ("llama.cpp", "onnxruntime", "pytorch", "vllm", "sglang", "tensorrt-llm", "endpoint"):
        assert name in p.stdout


@pytest.mark.parametrize("args", [
    ["run"], ["run", "--engine", "mlc-llm"], ["run", "--engine", "llama.cpp", "--requests", "0"],
    ["run", "--engine", "llama.cpp", "--concurrency", "x"], ["run", "--engine", "endpoint"],
    ["run", "--engine", "endpoint", "--endpoint", "ftp://x"], ["run", "--engine", "llama.cpp", "--prompt-mix", "huge"],
    ["frob"],
])
def test_bad_arguments_exit_2(args):
    p = probe(*args)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr


def test_model_error_exit_1(tmp_path):
    bad = tmp_path / "x.gguf"
    bad.write_bytes(b"junk" * 10)
    p = probe("run", "--engine", "llama.cpp", "--model", str(bad))
    assert p.returncode == 1 and json.loads(p.stdout)["status"] == "error"

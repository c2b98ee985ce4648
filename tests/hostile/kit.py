"""Shared tools for the hostile-input suite: every case runs as the user would run it, and is measured.

`bounded` runs a command in a child process and returns its exit code, output, wall time and the child's
own peak RSS (from wait4, per process), killing it at a hard limit so a regression fails fast instead of
eating the machine. The contract each test then asserts: the exit code, one line of error, and the bounds.
"""
from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TIME_LIMIT_S = 10.0  # the bound for every hostile case
RSS_LIMIT_MB = 1024.0


@dataclass
class Outcome:
    rc: int
    out: str
    err: str
    seconds: float
    peak_rss_mb: float

    @property
    def error_lines(self) -> list[str]:
        return [ln for ln in self.err.splitlines() if ln.strip()]

    def one_line_error(self, rc: int = 2) -> str:
        assert self.rc == rc, f"exit {self.rc}, wanted {rc}: {self.err[-600:]}"
        assert len(self.error_lines) == 1, f"not one line: {self.err[-600:]}"
        assert "Traceback" not in self.err
        assert self.seconds < TIME_LIMIT_S, f"took {self.seconds:.1f} s"
        assert self.peak_rss_mb < RSS_LIMIT_MB, f"peak RSS {self.peak_rss_mb:.0f} MB"
        return self.error_lines[0]


def bounded(args: list[str], hard_limit_s: float = 60.0, env: dict | None = None) -> Outcome:
    with open(os.devnull, "rb") as devnull:
        import tempfile

        out_f, err_f = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        t0 = time.monotonic()
        proc = subprocess.Popen([sys.executable, *args], cwd=str(ROOT), stdin=devnull, stdout=out_f, stderr=err_f,
                                env={**os.environ, **(env or {})}, start_new_session=True)
        killer = threading.Timer(hard_limit_s, lambda: _killpg(proc.pid))
        killer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            killer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - t0
        _killpg(proc.pid)  # nothing of the command may outlive it
        out_f.seek(0), err_f.seek(0)
        return Outcome(proc.returncode, out_f.read().decode("utf-8", "replace"),
                       err_f.read().decode("utf-8", "replace"), seconds, usage.ru_maxrss / 1024)


def _killpg(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


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

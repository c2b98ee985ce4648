"""A server an engine backend starts inside the probe's child (llama.cpp's llama-server, SGLang's launch_server), and
measures through the endpoint client: one way to start it on a free loopback port, wait for it, say why it failed and
stop it, so both servers are handled alike.

It is started with the parent-death signal (it dies with the probe's child however that ends), its output goes to a
temporary file whose last lines explain a failure, and stopping it also ends the processes it started (SGLang's
scheduler and detokenizer)."""
from __future__ import annotations

import os
import subprocess
import tempfile
import time

LOG_TAIL_CHARS = 500


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """`name` says the server in errors ("llama-server", "SGLang's server"); `starting` what it does until healthy."""

    def __init__(self, name: str, cmd: list[str], env: dict | None = None, starting: str = "starting") -> None:
        from probes.backends.base import dies_with_this_process

        self.name, self.starting = name, starting
        self.log = tempfile.TemporaryFile(mode="w+b")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=env, preexec_fn=dies_with_this_process())  # noqa: PLW1509 (prctl only)

    def wait_healthy(self, url: str, start_s: float, capped: str = "", request_s: float = 2.0,
                     poll_s: float = 0.2) -> None:
        """Until GET /health answers 200; ModelError (with the log's last lines) when it exits or start_s passes."""
        import httpx

        from probes.models import ModelError

        end = time.monotonic() + start_s
        while True:
            if self.proc.poll() is not None:
                raise ModelError(f"{self.name} exited with code {self.proc.returncode} while {self.starting}: "
                                 f"{self.log_tail()}")
            try:
                if httpx.get(f"{url}/health", timeout=request_s, trust_env=False).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > end:
                raise ModelError(f"{self.name} did not answer /health within {start_s:g} s{capped}: "
                                 f"{self.log_tail()}")
            time.sleep(poll_s)

    def log_tail(self) -> str:
        """The log's last lines, bounded (a traceback's last line says why)."""
        try:
            self.log.seek(0, os.SEEK_END)
            self.log.seek(max(0, self.log.tell() - 8000))
            lines = [ln.strip() for ln in self.log.read().decode("utf-8", "replace").splitlines() if ln.strip()]
            return " | ".join(lines[-3:])[:LOG_TAIL_CHARS] or "no output"
        except (OSError, ValueError):
            return "no output"

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after grace_s; the processes it started are killed too. Never raises: a finished
        run's records must not be lost to a slow tear-down (the parent-death signal and the probe's group remain)."""
        if self.proc.poll() is None:
            try:
                import psutil

                started = psutil.Process(self.proc.pid).children(recursive=True)
            except Exception:  # noqa: BLE001 (no psutil: the server's own clean-up and the probe's group remain)
                started = []
            self.proc.terminate()
            try:
                self.proc.wait(timeout=grace_s)
            except Exception:  # noqa: BLE001
                try:
                    self.proc.kill()
                    self.proc.wait(timeout=5)
                except Exception:  # noqa: BLE001
                    pass
            for p in started:
                try:
                    p.kill()
                except Exception:  # noqa: BLE001 (already gone)
                    pass
        try:
            self.log.close()
        except OSError:
            pass

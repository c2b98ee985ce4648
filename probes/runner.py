"""Run one probe in an isolated child process: hard timeout, cancel, progress events, one result.

The parent samples the memory of the child's whole process tree (vLLM keeps its weights in worker
processes) and the machine's CPU use by other processes, so a busy machine is reported as such.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from typing import Callable

from probes import redact
from probes.registry import ROOT, get_backend, python_for
from probes.result import ProbeResult, ProbeSettings, SystemLoad

Event = dict
BUSY_OTHER_CPU_PERCENT = 25.0


class _Sampler(threading.Thread):
    def __init__(self, pid: int, interval: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.peak_rss_mb: float | None = None
        self.peak_gpu_mb: float | None = None
        self.phase = "start"
        self.gpu_util: list[float] = []  # % busy of the GPUs the tree uses, sampled while requests run
        self.stop = threading.Event()
        self.tree_cpu_s = 0.0
        self._seen_cpu: dict[int, float] = {}

    def reset(self) -> None:
        self.peak_rss_mb = None
        self.peak_gpu_mb = None

    def run(self) -> None:
        import psutil

        nvml = _nvml_handles()
        try:
            root = psutil.Process(self.pid)
        except psutil.Error:
            return
        while not self.stop.is_set():
            try:
                procs = [root, *root.children(recursive=True)]
            except psutil.Error:
                break
            rss = 0
            pids = set()
            for p in procs:
                try:
                    rss += p.memory_info().rss
                    t = p.cpu_times()
                    self._seen_cpu[p.pid] = t.user + t.system + t.children_user + t.children_system
                    pids.add(p.pid)
                except psutil.Error:
                    continue
            mb = rss / 2**20
            self.peak_rss_mb = max(self.peak_rss_mb or 0.0, mb)
            if nvml:
                used, util = _gpu_sample(nvml, pids)
                if used:
                    self.peak_gpu_mb = max(self.peak_gpu_mb or 0.0, used)
                if util is not None and self.phase == "run":
                    self.gpu_util.append(util)
            self.stop.wait(self.interval)
        self.tree_cpu_s = sum(self._seen_cpu.values())


def _nvml_handles():
    try:
        import pynvml

        pynvml.nvmlInit()
        return [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
    except Exception:  # no driver: no GPU memory to sample
        return []


def _gpu_sample(handles, pids: set[int]) -> tuple[float, float | None]:
    """GPU memory (MiB) held by the probe's processes, summed over GPUs, and the busiest of those GPUs' %."""
    import pynvml

    total, util = 0, None
    for h in handles:
        try:
            procs = pynvml.nvmlDeviceGetComputeRunningProcesses(h)
        except pynvml.NVMLError:
            continue
        mine = [p for p in procs if p.pid in pids]
        total += sum((p.usedGpuMemory or 0) for p in mine)
        if mine:
            try:
                u = float(pynvml.nvmlDeviceGetUtilizationRates(h).gpu)
                util = u if util is None else max(util, u)
            except pynvml.NVMLError:
                pass
    return total / 2**20, util


def _local_server(settings: ProbeSettings) -> list:
    """The processes (and their children) of a server under test on this machine (a loopback endpoint), so the
    CPU it spends serving the probe is not counted as "other processes" that make the run busy."""
    if settings.engine != "endpoint" or not settings.endpoint:
        return []
    from urllib.parse import urlparse

    import psutil

    u = urlparse(settings.endpoint)
    if u.hostname not in ("127.0.0.1", "localhost", "::1"):
        return []
    port = u.port or (443 if u.scheme == "https" else 80)
    try:
        pids = {c.pid for c in psutil.net_connections(kind="tcp")
                if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid}
        procs = []
        for pid in pids:
            p = psutil.Process(pid)
            procs += [p, *p.children(recursive=True)]
        return procs
    except (psutil.Error, OSError):
        return []


def _remote_server(settings: ProbeSettings) -> bool:
    """An endpoint run against a server on another machine (its host is not this machine's loopback)."""
    if settings.engine != "endpoint" or not settings.endpoint:
        return False
    from urllib.parse import urlsplit

    from probes.result import is_loopback

    try:
        return not is_loopback(urlsplit(settings.endpoint).hostname)
    except ValueError:
        return True


def _tree_cpu_s(procs: list) -> float:
    import psutil

    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            continue
    return total


def _processes_cpu() -> dict[tuple[int, float], float]:
    """Every process's CPU seconds so far, keyed by (pid, start time) so a reused pid is not mistaken for the same
    process. Bounded: at most MAX_PROCESSES are read (a machine with more is busy by any measure)."""
    import psutil

    from probes.reaper import MAX_PROCESSES

    out: dict[tuple[int, float], float] = {}
    for p in psutil.process_iter(["create_time", "cpu_times"]):
        t = p.info.get("cpu_times")
        if t is not None:
            out[(p.pid, p.info.get("create_time") or 0.0)] = t.user + t.system
        if len(out) >= MAX_PROCESSES:
            break
    return out


def _others_cpu_s(before: dict[tuple[int, float], float], after: dict[tuple[int, float], float],
                  mine: set[int]) -> float:
    """CPU seconds that processes outside the probe's tree (and the server under test) used between the two
    snapshots: other engines, other probes' children and their servers included, whoever their parent is. It counts
    what the processes themselves report, so it holds where the machine-wide counters miss time (a VM's steal)."""
    return sum(max(0.0, cpu - before.get(key, 0.0)) for key, cpu in after.items() if key[0] not in mine)


def _machine_cpu_s() -> float:
    import psutil

    t = psutil.cpu_times()
    return t.user + t.system + getattr(t, "nice", 0) + getattr(t, "irq", 0) + getattr(t, "softirq", 0)


def _kill_tree(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


STOP_GRACE_S = 5.0


def _stop(proc: subprocess.Popen, sig: int, phase: str, result: dict) -> None:
    """During the measured requests, ask the child for the requests that finished (it sends them as its result and
    exits); otherwise, or when it does not answer within STOP_GRACE_S, kill its whole group."""
    if phase == "run":
        try:
            os.kill(proc.pid, sig)
            end = time.monotonic() + STOP_GRACE_S
            while proc.poll() is None and time.monotonic() < end:
                time.sleep(0.05)
            t_end = time.monotonic() + 2  # the reader thread may still be parsing the result line
            while "r" not in result and time.monotonic() < t_end and proc.poll() is not None:
                time.sleep(0.05)
        except (ProcessLookupError, PermissionError):
            pass
    _kill_tree(proc)


def _describe_exit(code: int) -> str:
    if code < 0:
        name = signal.Signals(-code).name
        hint = " — SIGKILL usually means the kernel ran out of memory" if code == -signal.SIGKILL else ""
        return f"the engine process was killed by {name}{hint}"
    return f"the engine process exited with code {code}"


def run_probe(settings: ProbeSettings, on_event: Callable[[Event], None] | None = None,
              cancel: threading.Event | None = None) -> ProbeResult:
    """Run a probe; always returns exactly one ProbeResult, never raises for an engine failure."""
    get_backend(settings.engine)  # unknown engine: raises UnknownBackend listing the known ones
    on_event = on_event or (lambda e: None)
    cancel = cancel or threading.Event()
    if settings.model is None and settings.engine != "endpoint":
        from probes.models import ModelError, default_model

        try:  # resolved here: a backend's own venv (vLLM) need not carry the bundled model package
            settings = settings.model_copy(update={"model": str(default_model())})
        except ModelError:
            pass  # the child reports it
    from probes.validation import preflight_error

    refused = preflight_error(settings)  # a workload beyond the model's context: refused before any allocation
    if refused:
        cls = get_backend(settings.engine)
        return ProbeResult(engine=settings.engine, engine_version=cls.version(), status="error", reason=refused,
                           settings=settings, install_hint=cls.install_hint, model=settings.model,
                           ttft_target_ms=settings.ttft_target_ms, started_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    read_fd, write_fd = os.pipe()
    stderr = tempfile.TemporaryFile(mode="w+b")
    env = dict(os.environ, PROBE_EVENT_FD=str(write_fd), PROBE_PARENT_PID=str(os.getpid()), PYTHONPATH=str(ROOT),
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1", TOKENIZERS_PARALLELISM="false")
    # credentials reach the child through its environment (this user's only), never its argv (probes/redact.py)
    env.pop(redact.ENV_URL, None)
    env.pop(redact.ENV_KEY, None)
    if settings.endpoint_url != settings.endpoint:
        env[redact.ENV_URL] = settings.endpoint_url
    if settings.api_key:
        env[redact.ENV_KEY] = settings.api_key
    import psutil

    server = _local_server(settings)
    server_cpu_before = _tree_cpu_s(server)
    load_before = os.getloadavg()[0]
    started_at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    procs_before = _processes_cpu()
    cpu_before, wall_before = _machine_cpu_s(), time.monotonic()
    from probes.backends.base import dies_with_this_process

    # the parent-death signal is asked for between fork and exec, so it holds before the child's first instruction: a
    # child stopped (SIGSTOP) before its own code could ask still dies with this process
    proc = subprocess.Popen([python_for(settings.engine), "-m", "probes.child", settings.model_dump_json()],
                            cwd=str(ROOT), env=env, pass_fds=(write_fd,), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True,
                            preexec_fn=dies_with_this_process())  # noqa: PLW1509 (prctl only)
    os.close(write_fd)
    on_event({"type": "started", "pid": proc.pid, "phase": "start"})
    sampler = _Sampler(proc.pid)
    sampler.start()
    result: dict = {}
    phase = {"name": "start"}
    secrets = settings.secrets()

    def reader() -> None:
        with os.fdopen(read_fd, "r", encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    ev = json.loads(line)
                except (ValueError, RecursionError):  # not an event line
                    continue
                if secrets:  # what the child says never holds the key, even where a server echoed it: masked in
                    # the parsed values (a key that is also a word of the line's JSON would break the line as text)
                    ev = redact.redact_data(ev, secrets, keys=False)
                if ev.get("type") == "result":
                    result["r"] = ev["result"]
                else:
                    new = ev.get("phase", phase["name"])
                    if new == "load" and phase["name"] != "load":
                        sampler.reset()  # peak memory covers load + run, not a one-off conversion
                    phase["name"] = sampler.phase = new
                    on_event(ev)

    rt = threading.Thread(target=reader, daemon=True)
    rt.start()
    deadline = time.monotonic() + settings.timeout_s
    failure = None
    try:
        while proc.poll() is None:
            if cancel.is_set():
                failure = f"cancelled by the user during '{phase['name']}'"
                _stop(proc, signal.SIGUSR1, phase["name"], result)
                break
            if time.monotonic() > deadline:
                failure = f"timed out after {settings.timeout_s:g} s during '{phase['name']}'; the engine was killed"
                _stop(proc, signal.SIGUSR2, phase["name"], result)
                break
            time.sleep(0.1)
    except BaseException:  # Ctrl-C or SIGTERM in the caller: the engine must not outlive it
        _kill_tree(proc)
        sampler.stop.set()
        stderr.close()
        raise
    try:  # the child may leave workers behind (vLLM's engine core): end the whole group
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    rt.join(timeout=5)
    sampler.stop.set()
    sampler.join(timeout=2)
    wall = max(1e-6, time.monotonic() - wall_before)
    ncpu = psutil.cpu_count() or 1
    served_s = max(0.0, _tree_cpu_s(server) - server_cpu_before) if server else 0.0
    other = max(0.0, (_machine_cpu_s() - cpu_before - sampler.tree_cpu_s - served_s) / (wall * ncpu) * 100)
    mine = set(sampler._seen_cpu) | {proc.pid, os.getpid()} | {p.pid for p in server}
    other = max(other, _others_cpu_s(procs_before, _processes_cpu(), mine) / (wall * ncpu) * 100)
    load = SystemLoad(loadavg_1m_before=round(load_before, 2), loadavg_1m_after=round(os.getloadavg()[0], 2),
                      cpu_count=ncpu, other_processes_cpu_percent=round(other, 1))
    # a server on another machine is not slowed by this one's CPU: its run is never busy for it (walk-3 L13)
    load.busy = other > BUSY_OTHER_CPU_PERCENT and not _remote_server(settings)
    if load.busy:
        load.note = (f"other processes used {other:.0f}% of this machine's CPU during the run; figures are "
                     "likely slower than on an idle machine (a busy CPU measured up to 4× slower here)")
    if "r" in result and (failure is None or result["r"].get("requests")):  # a stopped run keeps what finished
        res = ProbeResult.model_validate(result["r"])
    else:
        if failure is None:
            code = proc.returncode if proc.returncode is not None else -9
            stderr.seek(0)
            tail = redact.redact_text(stderr.read().decode("utf-8", "replace"), secrets).strip().splitlines()[-3:]
            failure = _describe_exit(code) + (f" during '{phase['name']}'" ) + (
                f": {' | '.join(tail)}" if tail else "")
        cls = get_backend(settings.engine)
        res = ProbeResult(engine=settings.engine, engine_version=cls.version(),
                          status="cancelled" if cancel.is_set() else "error", reason=failure,
                          settings=settings, install_hint=cls.install_hint, model=settings.model or settings.endpoint,
                          ttft_target_ms=settings.ttft_target_ms, started_at=started_at,
                          duration_s=round(wall, 3))
    stderr.close()
    res.peak_rss_mb = round(sampler.peak_rss_mb, 1) if sampler.peak_rss_mb else None
    res.peak_gpu_mb = round(sampler.peak_gpu_mb, 1) if sampler.peak_gpu_mb else res.peak_gpu_mb
    if sampler.gpu_util:
        res.gpu_util_percent = round(sum(sampler.gpu_util) / len(sampler.gpu_util), 1)
    res.system_load = load
    if load.note:
        res.notes.append(load.note)
    if server:
        res.notes.append(f"the server under test runs on this machine (pid {server[0].pid}): its {served_s:.1f} s of "
                         "CPU serving this probe are not counted as other processes")
    return res

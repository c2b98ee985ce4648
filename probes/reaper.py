"""What a served run starts must not outlive it, however the run ends: every process of it carries one token in its
environment (TOKEN_ENV, inherited by whatever the server forks, detached or not), so the processes of a run are
found by what they carry, not by who their parent now is; and a sentinel, a separate small process in its own
session, kills them all when the process that started the run is gone (SIGKILLed, or its supervisor stopped with
SIGSTOP and never scheduled again).

    python -m probes.reaper WATCH_PID WATCH_START TOKEN
"""
from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time

TOKEN_ENV = "INFERENCE_ADVISOR_RUN_TOKEN"
POLL_S = 0.5
MAX_PROCESSES = 20_000


def new_token() -> str:
    return secrets.token_hex(12)


def marked(token: str) -> list:
    """The processes (of this user) whose environment carries the token: a run's, wherever they were reparented."""
    import psutil

    out = []
    for i, p in enumerate(psutil.process_iter()):
        if i >= MAX_PROCESSES:
            break
        if p.pid == os.getpid():
            continue
        try:
            if p.environ().get(TOKEN_ENV) == token:
                out.append(p)
        except (psutil.Error, OSError):
            continue
    return out


def kill_all(procs: list) -> int:
    """SIGKILL each process (a stopped one too: SIGKILL needs no scheduling) and wait for them. How many there were."""
    import psutil

    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=5)
    return len(procs)


def kill_marked(token: str) -> int:
    """Kill every process of the run, wherever it was reparented. How many were left."""
    return kill_all(marked(token))


def start_sentinel(watch_pid: int, token: str) -> subprocess.Popen:
    """The sentinel for one run: it outlives neither the run nor its own watch."""
    import psutil

    start = psutil.Process(watch_pid).create_time()
    env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV}
    return subprocess.Popen([sys.executable, "-m", "probes.reaper", str(watch_pid), repr(start), token], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def _alive(pid: int, start: float) -> bool:
    import psutil

    try:
        p = psutil.Process(pid)
        return abs(p.create_time() - start) < 0.01 and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def main(argv: list[str]) -> int:
    watch, start, token = int(argv[0]), float(argv[1]), argv[2]
    seen = False
    while True:
        if not _alive(watch, start):
            kill_marked(token)
            return 0
        now = bool(marked(token))
        if seen and not now:
            return 0  # the run ended and took its processes with it
        seen = seen or now
        time.sleep(POLL_S)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

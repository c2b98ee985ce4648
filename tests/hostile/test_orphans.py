"""No engine outlives its parent: the probe CLI killed with SIGINT, SIGTERM or SIGKILL mid-run, and a process
holding a JobBoard (as the Streamlit server does) killed the same ways, leave no `probes.child` behind."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from tests.hostile.kit import ROOT

pytestmark = pytest.mark.slow


def _children_of(parent_pid: int) -> list[psutil.Process]:
    """Probe children started by that parent (they carry its pid in PROBE_PARENT_PID), wherever they now live."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if "probes.child" in " ".join(p.info["cmdline"] or []) and \
                    p.environ().get("PROBE_PARENT_PID") == str(parent_pid):
                out.append(p)
        except psutil.Error:
            continue
    return out


def _wait_for_child(parent: subprocess.Popen, limit_s: float = 60) -> psutil.Process:
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        kids = _children_of(parent.pid)
        if kids:
            return kids[0]
        assert parent.poll() is None, f"the parent exited early ({parent.returncode})"
        time.sleep(0.1)
    raise AssertionError("the probe child never started")


def _gone(pid: int, limit_s: float) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        if not _children_of(pid):
            return time.monotonic() - t0
        time.sleep(0.05)
    left = _children_of(pid)
    for p in left:
        p.kill()
    raise AssertionError(f"{len(left)} probe process(es) outlived their parent by {limit_s} s")


CLI = [sys.executable, "-m", "probes", "run", "--engine", "llama.cpp", "--requests", "500", "--max-tokens", "64",
       "--format", "text"]
BOARD = [sys.executable, "-c", (
    "import time\n"
    "from probes.jobs import JobBoard\n"
    "from probes.result import ProbeSettings\n"
    "JobBoard().start([ProbeSettings(engine='llama.cpp', requests=500, max_tokens=64)], lambda r: None)\n"
    "time.sleep(600)\n")]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
@pytest.mark.parametrize("who", ["cli", "job-board"])
def test_the_engine_dies_with_its_parent(sig, who, tmp_path):
    err = open(tmp_path / "stderr", "w+")
    # SIGINT as at a terminal: a suite started in the background by a shell without job control inherits SIGINT
    # ignored (POSIX), and Python keeps an inherited SIG_IGN, so the parent would rightly never see the Ctrl-C (the
    # census caught it: both SIGINT cases timed out only when the suite ran as a background job)
    parent = subprocess.Popen(CLI if who == "cli" else BOARD, cwd=str(ROOT), stdout=subprocess.DEVNULL, stderr=err,
                              stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONUNBUFFERED": "1"},
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        child = _wait_for_child(parent)
        time.sleep(1.0)  # well inside load or generation
        assert child.is_running()
        parent.send_signal(sig)
        rc = parent.wait(timeout=10)
        took = _gone(parent.pid, 5.0)
        assert took < 5.0
        if who == "cli" and sig in (signal.SIGINT, signal.SIGTERM):
            err.seek(0)
            lines = [ln for ln in err.read().splitlines() if ln.strip()]
            assert rc == 130, lines[-3:]
            assert lines[-1] == "error: interrupted; the engine process was stopped"
            assert "Traceback" not in "\n".join(lines)
    finally:
        if parent.poll() is None:
            parent.kill()
        for p in _children_of(parent.pid):
            p.kill()
        err.close()

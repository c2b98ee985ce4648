"""A probe child stopped before its own code runs still dies with its parent (audit, low: a child stopped (SIGSTOP)
before it asked for its parent-death signal survived its parent for good).

The parent-death signal is asked for between fork and exec (Popen's preexec_fn), so it holds before the child's first
instruction. The test makes the child stop itself first thing: its interpreter is a small script that sends itself
SIGSTOP and only then execs Python, so nothing of the probe child ever runs. Its parent (a process calling
run_probe, as the CLI and the Streamlit server do) is then SIGKILLed: the stopped child must be gone within seconds.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil

from tests.hostile.kit import ROOT

PARENT = """
import sys
import probes.runner as runner
from probes.result import ProbeSettings

runner.python_for = lambda engine: sys.argv[1]  # the child's interpreter: the script that stops itself first
runner.run_probe(ProbeSettings(engine="endpoint", endpoint="http://127.0.0.1:9/v1", requests=1, timeout_s=300))
"""


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE  # a zombie is dead, only not yet reaped
    except psutil.Error:
        return False


def test_a_child_stopped_before_its_code_runs_dies_with_its_parent(tmp_path):
    stops_first = tmp_path / "stops-first.sh"
    stops_first.write_text(f'#!/bin/sh\nkill -STOP $$\nexec {sys.executable} "$@"\n')
    stops_first.chmod(0o755)
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(stops_first)], cwd=str(ROOT),
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    child = None
    try:
        end = time.monotonic() + 60
        while child is None and time.monotonic() < end:
            assert parent.poll() is None, f"the parent exited early ({parent.returncode})"
            for p in psutil.Process(parent.pid).children():
                try:
                    if str(stops_first) in " ".join(p.cmdline()) and p.status() == psutil.STATUS_STOPPED:
                        child = p
                except psutil.Error:
                    continue
            time.sleep(0.05)
        assert child is not None, "the child never started (or never stopped)"
        parent.kill()
        parent.wait(timeout=10)
        end = time.monotonic() + 5
        while _alive(child) and time.monotonic() < end:
            time.sleep(0.05)
        assert not _alive(child), "the stopped probe child outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if child is not None and _alive(child):
            try:
                os.kill(child.pid, signal.SIGKILL)  # it started stopped: only SIGKILL (or SIGCONT) moves it
            except ProcessLookupError:
                pass

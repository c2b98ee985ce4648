"""A served sweep (`python -m probes serve`) leaves nothing behind, however it ends: its supervisor stopped with
SIGSTOP and its CLI SIGKILLed (audit finding 2: the stopped supervisor, the server and the probe child stayed for
good), a server that detaches (finding 3: setsid + double fork outlived a stop that reported `stopped: true`), and a
server that prints without end (finding 4: its output went to an unlinked temp file, 2 GiB in 4 s)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from probes.backends.llama_cpp import llama_server_binary
from probes.reaper import TOKEN_ENV, kill_marked, marked, new_token
from tests.hostile.kit import ROOT

EXAMPLE = str(ROOT / "examples" / "this-machine-smollm2.yaml")


def _carrying(pid: int) -> str | None:
    try:
        return psutil.Process(pid).environ().get(TOKEN_ENV)
    except psutil.Error:
        return None


@pytest.mark.skipif(llama_server_binary() is None, reason="llama-server is not built (make llama-server)")
def test_a_stopped_supervisor_and_a_killed_cli_leave_no_process(tmp_path):
    cli = subprocess.Popen([sys.executable, "-m", "probes", "serve", "--engine", "llama.cpp", "--from-plan", EXAMPLE,
                            "--concurrency", "1", "--requests", "200", "--output-tokens", "64", "--input-tokens", "64",
                            "--ttft-target-ms", "60000", "--format", "json"], cwd=ROOT, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, start_new_session=True)
    token = supervisor = None
    try:
        end = time.monotonic() + 120
        while time.monotonic() < end and supervisor is None:  # wait for the server to answer and requests to run
            for p in psutil.process_iter(["cmdline"]):
                cmd = " ".join(p.info["cmdline"] or [])
                if "probes.served" in cmd and p.ppid() == cli.pid:
                    token = _carrying(p.pid)
                    if token and any("probes.child" in " ".join(q.cmdline()) for q in marked(token)
                                     if q.is_running()):
                        supervisor = p
            assert cli.poll() is None, "the CLI ended before its server ran"
            time.sleep(0.5)
        assert supervisor is not None and token, "no supervisor with a running probe"
        run = marked(token)
        assert any("llama-server" in " ".join(p.cmdline()) for p in run)
        supervisor.send_signal(signal.SIGSTOP)
        cli.kill()
        cli.wait(timeout=10)
        end = time.monotonic() + 20
        while time.monotonic() < end and marked(token):
            time.sleep(0.25)
        left = [" ".join(p.cmdline())[:80] for p in marked(token) if p.is_running()]
        assert not left, left
    finally:
        cli.kill()
        if token:
            kill_marked(token)


def test_a_detached_process_of_a_run_is_found_by_its_token_and_killed(tmp_path):
    """What a server forks and detaches is reparented to init (or a subreaper): the run's token, which every process
    of it inherits, still names it."""
    token = new_token()
    ready = tmp_path / "pid"
    code = ("import os, sys, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n"
            "        open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid())); os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
            "        time.sleep(120)\n"
            "    os._exit(0)\n"
            "os._exit(0)\n")
    subprocess.run([sys.executable, "-c", code, str(ready)], env={**os.environ, TOKEN_ENV: token}, timeout=30)
    end = time.monotonic() + 30
    while time.monotonic() < end and not ready.exists():
        time.sleep(0.1)
    pid = int(ready.read_text())
    found = marked(token)
    assert [p.pid for p in found] == [pid] and psutil.Process(pid).ppid() != os.getpid()  # detached
    assert kill_marked(token) == len(found)
    assert not [p for p in marked(token) if p.is_running()]


def test_a_server_that_prints_without_end_fills_neither_disk_nor_memory():
    from probes.served import _RingLog

    log = _RingLog()
    code = "import sys\nline = 'x' * 1023 + '\\n'\nfor i in range(300_000): sys.stdout.write(line)\nprint('LAST LINE')\n"
    p = subprocess.Popen([sys.executable, "-c", code], stdout=log.write_fd, stderr=subprocess.STDOUT)
    log.start()
    p.wait(timeout=120)
    log.thread.join(timeout=30)
    assert log.total >= 300_000 * 1024  # 300 MB went through
    assert len(log.buf) <= 2 * _RingLog.KEEP  # and at most 128 KiB was ever held
    assert log.tail().endswith("LAST LINE")
    log.close()

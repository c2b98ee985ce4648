"""The source build beside the app (probes/builds.py): its states as the pages and `probes list` read them, one
build at a time, a failure with its log's tail, and the libraries put where llama-cpp-python loads them.

The real build runs in `make test` itself (before the suite: the llama.cpp tests need it, and
tests/probes/backends/test_serving_modes.py checks llama-server is there). Here the build script is replaced by a
few lines that print the same step lines and write the same files, so each state is reached in a second and in a
temporary cache dir; that stand-in is the only thing mocked.
"""
import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from probes import builds

ROOT = Path(__file__).resolve().parents[2]

OK_SCRIPT = """#!/bin/sh
set -eu
echo ">>> [1/4] fetching"
echo ">>> [2/4] configuring"
echo ">>> [3/4] compiling"
echo "[ 10%] Building C object a.o"
echo "[ 57%] Building C object b.o"
echo ">>> [4/4] installing into $2"
mkdir -p "$2"
printf '#!/bin/sh\\necho llama-server\\n' > "$2/llama-server"; chmod +x "$2/llama-server"
echo lib > "$2/libllama.so.0.5.0"; ln -sf libllama.so.0.5.0 "$2/libllama.so"
echo lib > "$2/libmtmd.so"
"""
FAIL_SCRIPT = """#!/bin/sh
echo ">>> [1/4] fetching"
echo ">>> [3/4] compiling"
echo "[ 12%] Building C object a.o"
echo "ggml.c:1: error: boom"
exit 2
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERENCE_ADVISOR_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _script(tmp_path, monkeypatch, text):
    p = tmp_path / "build.sh"
    p.write_text(text)
    monkeypatch.setattr(builds, "SCRIPT", p)


def _hold_lock():
    _, log, lock, meta = builds._paths()
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd, log, meta


def test_not_built_says_how_to_build(cache):
    s = builds.status()
    assert s.state == "absent" and s.percent is None and s.eta_s is None
    assert "make llama-cpp" in s.line()


def test_a_running_build_shows_its_step_per_cent_and_an_estimate(cache):
    fd, log, meta = _hold_lock()
    try:
        log.write_text(">>> [1/4] fetching\n>>> [3/4] compiling ggml\n[  8%] x\n[ 40%] Building CXX object y\n")
        meta.write_text(json.dumps({"state": "building", "started_at": __import__("time").time() - 120}))
        s = builds.status()
        assert s.state == "building"
        assert s.step.startswith("[3/4]") and s.percent == 40.0
        assert s.eta_s is not None and s.eta_s > 0 and 100 <= s.elapsed_s < 200
        assert "40 %" in s.line() and "min left" in s.line()
    finally:
        os.close(fd)
    assert builds.status().state == "absent"  # the builder's death drops the lock: it is no longer "building"


def test_a_long_compile_keeps_its_step_when_the_log_tail_is_all_compile_lines(cache):
    """A real compile log outgrows the tail that is read (1.3 MB on this machine): the step comes from the builder's
    record, not "starting"."""
    fd, log, meta = _hold_lock()
    try:
        log.write_text(">>> [3/4] compiling ggml\n" + "".join(f"[ {i % 90:2d}%] Building CXX object o{i}.o\n"
                                                             for i in range(20_000)))
        meta.write_text(json.dumps({"state": "building", "started_at": __import__("time").time() - 60,
                                    "step": "[3/4] compiling ggml"}))
        s = builds.status()
        assert s.step == "[3/4] compiling ggml" and s.percent is not None
        assert "starting" not in s.line() and "compiling" in s.line()
    finally:
        os.close(fd)


def test_the_builder_records_each_step_and_leaves_make_chatter_out_of_the_log(cache, tmp_path, monkeypatch):
    _script(tmp_path, monkeypatch, OK_SCRIPT.replace('echo ">>> [3/4] compiling"',
                                                     'echo ">>> [3/4] compiling"\n'
                                                     'echo "gmake[4]: Entering directory \'/x\'"'))
    monkeypatch.setattr(builds, "link_into_package", lambda: None)
    assert builds.build(wait=True, background=False, quiet=True) == 0
    _, log, _, meta = builds._paths()
    text = log.read_text()
    assert "[3/4] compiling" in text and "[ 57%]" in text and "Entering directory" not in text
    assert json.loads(meta.read_text())["step"].startswith("[4/4]")


def test_a_second_start_while_one_builds_starts_nothing(cache, monkeypatch, capsys):
    started = []
    monkeypatch.setattr(builds.subprocess, "Popen", lambda *a, **k: started.append(a))
    fd, _, _ = _hold_lock()
    try:
        assert builds.build(wait=False, background=True) == 0
    finally:
        os.close(fd)
    assert started == [] and "already building" in capsys.readouterr().out
    assert builds.build(wait=False, background=True) == 0  # no builder now: one is started
    assert len(started) == 1


def test_a_build_ends_ready_and_the_next_start_does_nothing(cache, tmp_path, monkeypatch):
    _script(tmp_path, monkeypatch, OK_SCRIPT)
    monkeypatch.setattr(builds, "link_into_package", lambda: None)
    assert builds.build(wait=True, background=False, quiet=True) == 0
    s = builds.status()
    assert s.state == "ready" and s.build_s is not None and builds.llama_dir() is not None
    monkeypatch.setattr(builds.subprocess, "Popen", lambda *a, **k: pytest.fail("a second build started"))
    assert builds.build(wait=False, background=True, quiet=True) == 0


def test_a_failed_build_says_so_with_its_log_tail_and_the_retry(cache, tmp_path, monkeypatch):
    _script(tmp_path, monkeypatch, FAIL_SCRIPT)
    assert builds.build(wait=True, background=False, quiet=True) == 1
    s = builds.status()
    assert s.state == "failed" and s.log_tail[-1] == "ggml.c:1: error: boom"
    assert "error: boom" in s.line() and "make llama-cpp" in s.line()


def test_the_libraries_go_where_llama_cpp_loads_them_but_never_over_a_wheels_own(cache, tmp_path, monkeypatch):
    real_link = builds.link_into_package
    _script(tmp_path, monkeypatch, OK_SCRIPT)
    monkeypatch.setattr(builds, "link_into_package", lambda: None)  # the build's own call: this venv stays as it is
    assert builds.build(wait=True, background=False, quiet=True) == 0
    lib = tmp_path / "site" / "llama_cpp" / "lib"
    monkeypatch.setattr(builds, "package_lib_dir", lambda: lib)
    assert real_link() is None
    assert (lib / "libllama.so").is_symlink() and (lib / "libllama.so.0.5.0").read_text() == "lib\n"
    assert (lib / "libmtmd.so").exists()
    other = tmp_path / "wheel" / "llama_cpp" / "lib"  # a wheel with its own libllama (the GPU stack's CUDA build)
    other.mkdir(parents=True)
    (other / "libllama.so").write_text("cuda build")
    monkeypatch.setattr(builds, "package_lib_dir", lambda: other)
    assert real_link() is None and (other / "libllama.so").read_text() == "cuda build"
    assert not (other / "libmtmd.so").exists()


def test_probes_list_says_building_with_its_progress(cache):
    fd, log, meta = _hold_lock()
    try:
        log.write_text(">>> [3/4] compiling\n[ 62%] y\n")
        p = subprocess.run([sys.executable, "-m", "probes", "list", "--format", "json"], cwd=ROOT, capture_output=True,
                           text=True, timeout=300, env={**os.environ})
    finally:
        os.close(fd)
    row = next(r for r in json.loads(p.stdout) if r["engine"] == "llama.cpp")
    assert row["build"]["state"] == "building" and row["build"]["percent"] == 62.0
    if not row["available"]:  # this venv's llama_cpp/lib has the real build's libraries when make test built them
        assert "building from source" in row["reason"] and "no restart" in row["install"]

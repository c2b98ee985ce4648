"""The engines still building from source, as the Hardware and Probe pages show them (ui/builds.py): progress
while a build runs, in both languages; the log's tail and the retry command when it failed; nothing once built.

A build is "running" here because the test holds the builder's lock in a temporary cache dir and writes its log
(the real build runs in `make test` before the suite; tests/probes/test_builds.py drives the builder itself)."""
import fcntl
import json
import os
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERENCE_ADVISOR_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _app():
    return AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=60)


def _building(percent: int):
    from probes import builds

    _, log, lock, meta = builds._paths()
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    log.write_text(f">>> [1/4] fetching\n>>> [3/4] compiling\n[ {percent}%] Building CXX object x.o\n")
    meta.write_text(json.dumps({"state": "building", "started_at": time.time() - 60}))
    return fd


def _texts(at) -> str:
    return "\n".join(str(e.value) for e in [*at.info, *at.error, *at.warning, *at.markdown, *at.code])


@pytest.mark.parametrize("lang,words", [("en", ["is building from source", "step 3 of 4: compiling", "45 %",
                                                 "without a restart"]),
                                        ("zh", ["正在从源码构建", "第 3/4 步：编译", "45 %", "无需重启"])])
def test_the_hardware_page_shows_a_running_build_with_its_progress(cache, lang, words):
    fd = _building(45)
    try:
        at = _app()
        at.session_state["lang"] = lang
        at.run()
        at.switch_page("pages/2_Hardware.py").run()
        assert not at.exception
        text = _texts(at)
        for w in words:
            assert w in text, (w, text[:2000])
        bars = at.get("progress")
        assert bars and bars[0].proto.value == 45, [b.proto for b in bars]
    finally:
        os.close(fd)


def test_a_failed_build_shows_its_log_tail_and_the_retry_on_the_probe_page(cache):
    from probes import builds

    _, log, lock, meta = builds._paths()
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(">>> [3/4] compiling\n[ 12%] x\nggml.c:1:1: error: <b>boom</b>\n")
    meta.write_text(json.dumps({"state": "failed", "rc": 2}))
    at = _app().run()
    at.switch_page("pages/4_Probe.py").run()
    at.session_state["probe_engines"] = ["llama.cpp"]
    at.run()
    assert not at.exception
    assert any("build failed" in str(e.value) and "make llama-cpp" in str(e.value) for e in at.error)
    assert any("error: <b>boom</b>" in str(c.value) for c in at.code)  # the log verbatim, as code, never as markup


def test_nothing_is_shown_once_built(cache):
    from probes import builds

    dest = builds._paths()[0]
    dest.mkdir(parents=True)
    (dest / "llama-server").write_text("#!/bin/sh\n")
    (dest / "llama-server").chmod(0o755)
    (dest / "libllama.so").write_text("")
    at = _app().run()
    at.switch_page("pages/2_Hardware.py").run()
    assert not at.exception
    assert "building" not in _texts(at) and "not built yet" not in _texts(at)

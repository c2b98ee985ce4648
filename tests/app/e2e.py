"""What the browser journeys share (tests/app/test_e2e_browser.py, tests/app/test_e2e_pages.py): Debian's chromium
driven by Playwright against the app served the way `make run` serves it (`streamlit run app.py`, settings from
.streamlit/config.toml), on loopback, one server and one browser per module.

A module imports the fixtures it uses (server, browser, page) and sets `pytestmark = MARKS`.
"""
import contextlib
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic",
        "--no-first-run", "--disable-component-update", "--disable-sync"]

MARKS = [pytest.mark.e2e,
         pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (make test installs it)")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _serve(data_dir):
    """The app started like `make run` (serve.py; the committed config sets address, watcher, usage stats and
    toolbar), once its health check answers."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "serve.py", "--server.port", str(port)], cwd=ROOT,
                            env=dict(os.environ, INFERENCE_ADVISOR_DATA=str(data_dir)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if urllib.request.urlopen(url + "/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.2)
        yield url, proc
    finally:
        proc.terminate()
        proc.wait(timeout=20)


DATA: dict = {}  # the module server's data dir, so a journey can put another session's evidence in its history


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    DATA["dir"] = tmp_path_factory.mktemp("data")
    with _serve(DATA["dir"]) as s:
        yield s


@pytest.fixture(scope="module")
def browser(server):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    from playwright.sync_api import expect

    expect.set_options(timeout=30_000)  # a page with tables and charts takes seconds on 2 busy cores
    ctx = browser.new_context(accept_downloads=True, viewport={"width": 1300, "height": 1000})
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    ctx.close()


def _settle(page, ms: int = 300) -> None:
    """Wait until Streamlit has finished the current run (the running indicator is gone), then `ms` for the browser to
    draw what it sent; what a step then reads is waited for by Playwright's own expect/locators."""
    page.wait_for_timeout(250)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=60_000)
    page.wait_for_timeout(ms)


def _nav(page, title: str) -> None:
    page.locator('[data-testid="stSidebarNav"]').get_by_text(title, exact=True).click()
    _settle(page)


def _select(page, label: str, option: str) -> None:
    page.get_by_label(label).click()
    page.get_by_role("option", name=re.compile(re.escape(option))).first.click()
    _settle(page)


def _to_step(page, url: str, step: int) -> None:
    page.goto(url + "/checklist")
    _settle(page)
    for _ in range(step - 1):
        page.get_by_role("button", name="Next").click()
        _settle(page, 300)
    page.get_by_text(f"Step {step} of 9").wait_for()

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
    ctx.add_init_script(RUN_LOG)
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    ctx.close()


# Each page the `page` fixture opens records when Streamlit's script-run state last changed (the stApp element's
# data-test-script-state: running, notRunning), so a step can wait for the app to have been idle a while, not just
# for a moment: on a busy machine the rerun a click asks for can start after the first idle check has passed.
RUN_LOG = """
window.__stRuns = {last: performance.now()};
new MutationObserver(() => { window.__stRuns.last = performance.now(); })
  .observe(document, {attributes: true, subtree: true, attributeFilter: ['data-test-script-state']});
"""
IDLE = """(quiet) => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.dataset.testScriptState !== 'notRunning') return false;
  if (document.querySelector('[data-testid="stStatusWidget"]')) return false;
  const runs = window.__stRuns;
  return !runs || performance.now() - runs.last >= quiet;
}"""


def _settle(page, ms: int = 300) -> None:
    """Wait until Streamlit has finished its runs: the script-run state idle for at least `ms` (never less than
    0.3 s: the time the browser gets to draw what the last run sent) and the running indicator gone; on a page
    without the run log (one a test opened itself), idle once and then `ms`. What a step then reads is waited for
    by Playwright's own expect/locators."""
    page.wait_for_timeout(250)
    page.wait_for_function(IDLE, arg=max(ms, 300), timeout=120_000)
    if not page.evaluate("() => !!window.__stRuns"):
        page.wait_for_timeout(ms)


def _nav(page, title: str) -> None:
    page.locator('[data-testid="stSidebarNav"]').get_by_text(title, exact=True).click()
    _settle(page)


def _select(page, label: str, option: str) -> None:
    """Pick `option` in the select box `label`, and check it was taken: a pick that lands while the page redraws
    is lost (the list closes under the click), so it is made again, at most twice more."""
    from playwright.sync_api import expect

    box, want = page.get_by_label(label), re.compile(re.escape(option))
    for attempt in range(3):
        box.click()
        page.get_by_role("option", name=want).first.click()
        _settle(page)
        try:
            expect(box).to_have_value(want, timeout=5_000 if attempt < 2 else 30_000)
            return
        except AssertionError:
            if attempt == 2:
                raise


def _to_step(page, url: str, step: int) -> None:
    page.goto(url + "/checklist")
    _settle(page)
    for _ in range(step - 1):
        page.get_by_role("button", name="Next").click()
        _settle(page, 300)
    page.get_by_text(f"Step {step} of 9").wait_for()

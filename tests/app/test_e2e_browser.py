"""End to end in a real browser: Debian's chromium driven by Playwright against `streamlit run` on loopback."""
import os
import shutil
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

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (make test installs it)")]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, INFERENCE_ADVISOR_DATA=str(tmp_path_factory.mktemp("data")))
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                             "--server.address", "127.0.0.1", "--server.port", str(port),
                             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            if urllib.request.urlopen(url + "/_stcore/health", timeout=1).read() == b"ok":
                break
        except OSError:
            time.sleep(0.2)
    yield url
    proc.terminate()
    proc.wait(timeout=20)


@pytest.fixture(scope="module")
def page(server):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        ctx = browser.new_context(accept_downloads=True, viewport={"width": 1300, "height": 1000})
        pg = ctx.new_page()
        pg.set_default_timeout(60_000)
        yield pg
        browser.close()


def test_full_path(page, server, tmp_path):
    from playwright.sync_api import expect

    page.goto(server)
    expect(page.get_by_role("heading", name="Inference-engine selection advisor")).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "01-home.png"))
    page.get_by_role("button", name="Start the checklist").click()
    expect(page.get_by_text("Step 1 of 9")).to_be_visible()
    box = page.get_by_label("peak concurrency")
    box.fill("2")
    box.press("Enter")
    page.get_by_role("button", name="Next").click()
    for i in range(2, 10):
        expect(page.get_by_text(f"Step {i} of 9")).to_be_visible()
        if i < 9:
            page.get_by_role("button", name="Next").click()
    page.screenshot(path=str(ARTIFACTS / "02-checklist-model.png"))
    page.get_by_role("button", name="See the recommendation").click()
    expect(page.get_by_role("heading", name="Ranking")).to_be_visible()
    expect(page.locator(".js-plotly-plot").first).to_be_visible()
    page.wait_for_timeout(500)
    page.screenshot(path=str(ARTIFACTS / "03-ranking.png"), full_page=True)
    plan = page.get_by_role("heading", name="Capacity plan")
    plan.scroll_into_view_if_needed()
    expect(plan).to_be_visible()
    expect(page.get_by_text("Memory per engine (GiB)")).to_be_visible(timeout=30_000)
    page.wait_for_timeout(500)
    page.screenshot(path=str(ARTIFACTS / "03b-plan.png"))
    page.get_by_role("button", name="Run the live probe").click()
    expect(page.get_by_role("heading", name="Run the live probe")).to_be_visible()
    for label, value in (("Requests", "2"), ("Output tokens per request", "8"), ("Concurrency", "1")):
        f = page.get_by_label(label)
        f.fill(value)
        f.press("Enter")
        page.wait_for_timeout(300)
    expect(page.get_by_text("llama.cpp").first).to_be_visible()  # the recommended engine is preselected
    page.get_by_role("button", name="Run the live probe").click()
    expect(page.get_by_text("Verdict")).to_be_visible(timeout=240_000)
    expect(page.get_by_text("llama.cpp ok").first).to_be_visible()
    page.wait_for_timeout(800)
    page.screenshot(path=str(ARTIFACTS / "04-probe.png"), full_page=True)
    check = page.get_by_role("heading", name="Predicted vs measured")
    check.scroll_into_view_if_needed()
    expect(page.get_by_text("memory-bandwidth limit").first).to_be_visible()
    page.wait_for_timeout(500)
    page.screenshot(path=str(ARTIFACTS / "04b-predicted-vs-measured.png"))
    page.get_by_role("button", name="Download report (.md)").click()
    expect(page.get_by_role("button", name="Download report (.pdf)")).to_be_visible(timeout=120_000)
    with page.expect_download() as d:
        page.get_by_role("button", name="Download report (.md)").click()
    md = Path(d.value.path()).read_text(encoding="utf-8")
    assert "# Inference-engine decision report" in md and "llama.cpp" in md and "TTFT" in md
    with page.expect_download() as d:
        page.get_by_role("button", name="Download report (.pdf)").click()
    pdf = Path(d.value.path()).read_bytes()
    assert pdf.startswith(b"%PDF")
    shutil.copy(d.value.path(), ARTIFACTS / "report-en.pdf")
    # switch language: the same report in Chinese
    page.get_by_text("简体中文").click()
    expect(page.get_by_role("heading", name="推理引擎选型报告").first).to_be_visible()
    expect(page.get_by_role("button", name="下载报告（.pdf）")).to_be_visible(timeout=120_000)
    with page.expect_download() as d:
        page.get_by_role("button", name="下载报告（.md）").click()
    zh = Path(d.value.path()).read_text(encoding="utf-8")
    assert "推理引擎选型报告" in zh and "实测结果" in zh
    with page.expect_download() as d:
        page.get_by_role("button", name="下载报告（.pdf）").click()
    shutil.copy(d.value.path(), ARTIFACTS / "report-zh.pdf")
    from pypdf import PdfReader

    fonts = set()
    for pg in PdfReader(ARTIFACTS / "report-zh.pdf").pages:
        for f in (pg.get("/Resources", {}).get("/Font") or {}).values():
            fonts.add(str(f.get_object().get("/BaseFont")))
    assert any("CJK" in f or "WenQuanYi" in f or "Micro" in f for f in fonts), fonts
    page.screenshot(path=str(ARTIFACTS / "05-report-zh.png"), full_page=True)

"""End to end in a real browser, the journeys that run a real engine (a probe, a sweep, the deployed server) or
measure this machine (an idle tab's CPU). The journeys that run no engine are in tests/app/test_e2e_pages.py; what
both share is tests/app/e2e.py.

Each journey is a test a person would take: probe and reload mid-probe, cancel, sweep two engines, download the
reports, deploy the bundle and measure it.
"""
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.app.e2e import ARTIFACTS, MARKS, _select, _settle, browser, page, server  # noqa: F401 (fixtures)

pytestmark = MARKS


def _start_probe(page, url: str, requests: int, tokens: int) -> None:
    page.goto(url + "/probe")
    _settle(page)
    for label, value in (("Requests", str(requests)), ("Output tokens per request", str(tokens)), ("Concurrency", "1")):
        f = page.get_by_label(label, exact=True)
        f.fill(value)
        f.press("Enter")
        _settle(page, 200)
    page.get_by_role("button", name="Run the live probe").click()


def test_probe_results_show_when_it_ends_and_the_report_has_them(page, server):
    from playwright.sync_api import expect

    url, _ = server
    _start_probe(page, url, 2, 8)
    expect(page.get_by_text("Verdict")).to_be_visible(timeout=240_000)
    expect(page.get_by_text(re.compile(r"#\d+ llama\.cpp")).first).to_be_visible()
    page.wait_for_timeout(800)
    page.screenshot(path=str(ARTIFACTS / "j6-probe.png"), full_page=True)
    page.get_by_role("button", name="Go to the report").click()
    _settle(page)
    expect(page.get_by_role("heading", name="Live measurements")).to_be_visible()
    with page.expect_download() as d:
        page.get_by_role("button", name="Download report (.md)").click()
    md = Path(d.value.path()).read_text(encoding="utf-8")
    assert "# Inference-engine decision report" in md and re.search(r"#\d+ llama\.cpp", md)
    assert md.count("# Inference-engine decision report") == 1
    _build_pdf(page, "Build the PDF", "Download report (.pdf)")
    with page.expect_download() as d:
        page.get_by_role("button", name="Download report (.pdf)").click()
    shutil.copy(d.value.path(), ARTIFACTS / "report-en.pdf")
    _check_pdf(ARTIFACTS / "report-en.pdf", ["context tokens", "TTFT"])
    page.get_by_text("简体中文").click()
    _settle(page, 1500)
    expect(page.get_by_role("heading", name="推理引擎选型报告").first).to_be_visible()
    expect(page.get_by_role("button", name="生成 PDF")).to_be_visible()  # the zh PDF: tests/advisor/report/test_report.py
    page.screenshot(path=str(ARTIFACTS / "j6-report-zh.png"), full_page=True)


def _build_pdf(page, build: str, download: str) -> None:
    """Ask for the PDF; a click that lands while the page is still redrawing is lost, so ask once more then."""
    from playwright.sync_api import expect

    page.get_by_role("button", name=build).click()
    try:
        expect(page.get_by_role("button", name=download)).to_be_visible(timeout=90_000)
    except AssertionError:
        page.get_by_role("button", name=build).click()
        expect(page.get_by_role("button", name=download)).to_be_visible(timeout=120_000)


def _check_pdf(path: Path, words: list[str]) -> None:
    """The charts are embedded as images, and each carries its axis titles in the text layer (a caption under
    it), so a reader, a screen reader and this test can check what the axes say."""
    from pypdf import PdfReader

    text = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True,
                          check=True).stdout
    for w in words:
        assert w in text, w
    images = sum(len(p.images) for p in PdfReader(path).pages)
    assert images >= 4, images


def test_reload_mid_probe_reconnects_and_the_result_is_saved(page, server):
    from playwright.sync_api import expect

    url, _ = server
    _start_probe(page, url, 8, 24)
    expect(page.get_by_role("button", name="Cancel")).to_be_visible(timeout=60_000)
    page.reload()
    # the job is found again: still running (its Cancel and progress), or, on a machine fast enough to finish it
    # during the reload, already saved with its verdict; both are what the page must do, whatever the speed
    running = page.get_by_role("button", name="Cancel")
    expect(running.or_(page.get_by_text("Verdict"))).to_be_visible(timeout=30_000)
    if running.is_visible():
        expect(page.get_by_text(re.compile(r"engine 1 of 1")).or_(page.get_by_text("Verdict"))).to_be_visible()
    expect(page.get_by_text("Verdict")).to_be_visible(timeout=300_000)
    expect(page.get_by_text(re.compile(r"#\d+ llama\.cpp · ok")).first).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "j7-reloaded.png"), full_page=True)


def test_cancel_is_stored_as_cancelled(page, server):
    from playwright.sync_api import expect

    url, _ = server
    _start_probe(page, url, 40, 64)
    cancel = page.get_by_role("button", name="Cancel")
    expect(cancel).to_be_visible(timeout=60_000)
    page.wait_for_timeout(1500)
    cancel.click()
    expect(page.get_by_text(re.compile(r"#\d+ llama\.cpp · cancelled")).first).to_be_visible(timeout=60_000)


def test_an_open_tab_on_every_page_costs_no_cpu(browser, server):
    """The server idles with a tab open on each page: under 5% of one core over 4 s."""
    import psutil

    url, proc = server
    ctx = browser.new_context(viewport={"width": 1300, "height": 1000})
    tabs = []
    for path in ("", "/checklist", "/hardware", "/recommendation", "/probe", "/report"):
        tab = ctx.new_page()
        tab.set_default_timeout(120_000)
        tab.goto(url + path)
        _settle(tab, 200)
        tabs.append(tab)
    time.sleep(1)
    p = psutil.Process(proc.pid)
    before = p.cpu_times()
    time.sleep(4)
    after = p.cpu_times()
    used = (after.user - before.user) + (after.system - before.system)
    ctx.close()
    assert used / 4 < 0.05, f"the idle server used {used / 4:.1%} of a core with {len(tabs)} tabs open"


def test_a_two_engine_sweep_side_by_side_and_in_the_report(page, server):
    """Two engines swept side by side (one level, concurrency 2, 8 output tokens: the smallest sweep that still
    batches two requests; the suite's time budget): the side-by-side charts, the capacity against Q1, and the
    report's sweep section in the downloaded Markdown."""
    from playwright.sync_api import expect

    url, _ = server
    page.goto(url + "/probe")
    _settle(page)
    box = page.get_by_role("combobox", name="Engines to measure")
    for engine in ("llama.cpp", "onnxruntime"):
        box.click()
        page.wait_for_timeout(500)
        option = page.get_by_role("option", name=engine, exact=True)
        if option.count():  # not yet chosen (a chosen engine is no longer offered)
            option.first.click()
            _settle(page, 300)
        page.keyboard.press("Escape")
    for label, value in (("Output tokens per request", "8"),):
        f = page.get_by_label(label, exact=True)
        f.fill(value)
        f.press("Enter")
        _settle(page, 200)
    page.get_by_text("Sweep concurrency up to the SLA").click()
    _settle(page, 300)
    levels = page.get_by_label("Concurrency levels")
    levels.fill("2")
    levels.press("Enter")
    _settle(page, 300)
    page.get_by_role("button", name="Run the live probe").click()
    expect(page.get_by_role("heading", name="Measured capacity (concurrency sweep)")).to_be_visible(timeout=480_000)
    outcomes = {}
    for name in ("llama.cpp", "ONNX Runtime"):  # each engine gets one of its stated outcomes, whatever this machine's speed
        line = page.get_by_text(_outcome_re(name)).first
        expect(line).to_be_visible()
        outcomes[name] = _outcome_re(name).search(line.inner_text()).group(1)
    page.wait_for_timeout(800)
    page.screenshot(path=str(ARTIFACTS / "j9-sweep.png"), full_page=True)
    page.get_by_role("button", name="Go to the report").click()
    _settle(page)
    with page.expect_download() as d:
        page.get_by_role("button", name="Download report (.md)").click()
    md = Path(d.value.path()).read_text(encoding="utf-8")
    assert "## Measured capacity (concurrency sweep)" in md
    assert "| llama.cpp |" in md and "| ONNX Runtime |" in md
    for name, outcome in outcomes.items():  # the report draws the same conclusion as the page
        found = _outcome_re(name).search(md)
        assert found and found.group(1) == outcome, (name, outcome, found and found.group(0))


def _outcome_re(engine: str) -> re.Pattern:
    """The sweep's stated outcomes for one engine (strings.yaml cap_line*): meets up to N, does not meet at one,
    inconclusive at a level (the target inside the p95's interval), did not run, or no capacity (interrupted)."""
    return re.compile(re.escape(engine) + r"( meets p95| does not meet|: at concurrency \d+ the target"
                      r"|: the sweep did not run|: the sweep has no capacity)")


# ---------------------------------------------------------------- the walk's high findings (issue 18), as journeys

def test_llama_cpp_at_concurrency_4_is_measured_with_parallel_slots(page, server):
    """The walk's M9: the one-click probe ran llama-cpp-python in-process at concurrency 4 (one at a time), then
    told the user to revisit the hardware for the engine it had just recommended."""
    from playwright.sync_api import expect

    url, _ = server
    page.goto(url + "/probe")
    _settle(page)
    box = page.get_by_role("combobox", name="Engines to measure")
    box.click()
    page.wait_for_timeout(500)
    option = page.get_by_role("option", name="llama.cpp", exact=True)
    if option.count():
        option.first.click()
        _settle(page, 300)
    page.keyboard.press("Escape")
    for label, value in (("Requests", "8"), ("Output tokens per request", "8"), ("Concurrency", "4")):
        f = page.get_by_label(label, exact=True)
        f.fill(value)
        f.press("Enter")
        _settle(page, 200)
    page.get_by_role("button", name="Run the live probe").click()
    expect(page.get_by_text("Verdict")).to_be_visible(timeout=240_000)
    expect(page.get_by_text(re.compile(r"#\d+ llama\.cpp: llama-server, parallel slots with continuous batching "
                                       r"\(4 slots\) · c=4")).first).to_be_visible()
    page.reload()  # F5 right after the run keeps it picked (the URL was written when it was picked)
    _settle(page, 1500)
    expect(page.get_by_text(re.compile(r"#\d+ llama\.cpp: llama-server")).first).to_be_visible()


def test_the_deploy_bundle_downloads_and_what_you_deploy_is_measured(page, server):
    """The Recommendation page's Deploy section gives the top engine's launch script and a zip of its files; the
    Probe page starts that engine's bundled server, measures it once and shows the command that ran beside the
    bundle's (the real llama-server, on the bundled model)."""
    import zipfile

    from playwright.sync_api import expect

    from probes.backends.llama_cpp import llama_server_binary

    url, _ = server
    page.goto(url + "/recommendation")
    _settle(page)
    expect(page.get_by_role("heading", name="Deploy", exact=True)).to_be_visible()
    with page.expect_download() as d:
        page.get_by_role("button", name="Download launch.sh").first.click()
    script = Path(d.value.path()).read_text(encoding="utf-8")
    assert script.startswith("#!/bin/sh") and 'exec ' in script and 'set -- "$@"' in script
    with page.expect_download() as d:
        page.get_by_role("button", name="Download all files (.zip)").first.click()
    names = zipfile.ZipFile(d.value.path()).namelist()
    assert any(n.endswith("/launch.sh") for n in names) and any(n.endswith(".yaml") for n in names)
    page.screenshot(path=str(ARTIFACTS / "j20-deploy.png"), full_page=True)
    if llama_server_binary() is None:
        pytest.skip("llama-server is not built (make llama-server)")
    page.goto(url + "/probe")
    _settle(page)
    _select(page, "Engine (its bundle from the plan)", "llama.cpp")
    expect(page.get_by_text(re.compile(r"^llama-server -m /models/")).first).to_be_visible()
    for label, value in (("Requests", "2"), ("Output tokens per request", "8"),
                         ("Concurrent requests per level", "1")):
        f = page.get_by_label(label, exact=True)
        f.fill(value)
        f.press("Enter")
        _settle(page, 200)
    page.get_by_role("button", name="Start this server and measure it").click()
    expect(page.get_by_text("Ran here").first).to_be_visible(timeout=300_000)
    expect(page.get_by_text(re.compile(r"llama-server -m \S+ --host 127\.0\.0\.1")).first).to_be_visible()
    page.wait_for_timeout(800)
    page.screenshot(path=str(ARTIFACTS / "j20-served.png"), full_page=True)

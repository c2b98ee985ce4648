"""End to end in a real browser, the journeys that run no engine: pick a GPU and go back, switch language and move
around, upload answers, reload, refuse a bad endpoint, probe a failing or a key-guarded stand-in server, another
session's sweeps. The journeys that run a real engine or measure this machine are in tests/app/test_e2e_browser.py;
both run in the suite's serial half (a server and a browser beside the parallel half's other worker cost it more
than they saved).
"""
import re
from pathlib import Path

from tests.app.e2e import (ARTIFACTS, DATA, MARKS, ROOT, _nav, _select, _serve, _settle, _to_step,  # noqa: F401
                           browser, page, server)
from tests.probes.backends.test_endpoint import fake_server  # noqa: F401 (its stand-in OpenAI server, as a fixture)

pytestmark = MARKS


def test_a_deep_link_to_a_fresh_server_opens_its_page(browser, tmp_path):
    """A reload on /recommendation right after `make run` (the server's first session) opens that page, with no
    "Page not found" dialog (Streamlit's legacy pages/ wrapper would run that first session; serve.py turns it
    off before the server starts)."""
    with _serve(tmp_path) as (url, _):
        pg = browser.new_page()
        pg.goto(url + "/recommendation")
        pg.get_by_role("heading", name="Ranking").wait_for(timeout=120_000)
        _settle(pg)
        assert pg.get_by_text("Page not found").count() == 0
        pg.close()


def test_gpu_chosen_at_step_3_survives_hardware_and_back(page, server):
    from playwright.sync_api import expect

    url, _ = server
    _to_step(page, url, 3)
    page.get_by_text("other target hardware").click()
    _settle(page)
    _select(page, "GPU model", "NVIDIA L40S")
    count = page.get_by_label("number of GPUs")
    count.fill("2")
    count.press("Enter")
    _settle(page)
    page.screenshot(path=str(ARTIFACTS / "j1-step3.png"), full_page=True)
    _nav(page, "Hardware")
    expect(page.get_by_role("combobox", name="GPU model")).to_have_value("NVIDIA L40S (48 GB)")
    expect(page.get_by_label("number of GPUs")).to_have_value("2")
    page.screenshot(path=str(ARTIFACTS / "j1-hardware.png"), full_page=True)
    _nav(page, "Checklist")
    expect(page.get_by_text("Step 3 of 9")).to_be_visible()
    page.get_by_role("button", name="Back").click()
    _settle(page)
    page.get_by_role("button", name="Next").click()
    _settle(page)
    expect(page.get_by_role("combobox", name="GPU model")).to_have_value("NVIDIA L40S (48 GB)")
    expect(page.get_by_label("number of GPUs")).to_have_value("2")
    _nav(page, "Recommendation")
    expect(page.get_by_text("2 × NVIDIA L40S").first).to_be_visible(timeout=60_000)
    assert "none GPU" not in page.content() and "has no GPU" not in page.content()


def test_chinese_survives_navigation(page, server):
    from playwright.sync_api import expect

    url, _ = server
    page.goto(url)
    _settle(page)
    page.get_by_text("简体中文").click()
    _settle(page)
    expect(page.get_by_role("heading", name="推理引擎选型助手")).to_be_visible()
    for title, heading in (("选型清单", "选型清单"), ("硬件", "硬件"), ("推荐", "排名"), ("实测", "实测"),
                           ("报告", "推理引擎选型报告")):
        _nav(page, title)
        expect(page.get_by_role("heading", name=heading).first).to_be_visible()
        assert page.locator('[data-testid="stSidebarNav"]').get_by_text("Checklist", exact=True).count() == 0
        assert page.get_by_text("简体中文").first.is_visible()
        page.screenshot(path=str(ARTIFACTS / f"j2-zh-{title}.png"), full_page=True)
    assert "lang=zh" in page.url
    page.reload()
    _settle(page)
    expect(page.get_by_role("heading", name="推理引擎选型报告").first).to_be_visible()


def test_upload_applies(page, server):
    from playwright.sync_api import expect

    url, _ = server
    _to_step(page, url, 1)
    box = page.get_by_label("peak concurrency")
    box.fill("12")
    box.press("Enter")
    _settle(page)
    page.get_by_text("Load an answers file (YAML)").click()
    page.locator('input[type="file"]').set_input_files(str(ROOT / "examples" / "startup-chat-api.yaml"))
    _settle(page, 1000)
    expect(page.get_by_text("Loaded 19 answers from startup-chat-api.yaml.").first).to_be_visible()
    expect(page.get_by_label("peak concurrency")).to_have_value("64")
    page.wait_for_timeout(1500)  # the confirmation stays
    expect(page.get_by_text("Loaded 19 answers from startup-chat-api.yaml.").first).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "j3-upload.png"), full_page=True)


def test_model_name_fills_params_and_f5_keeps_the_answers(page, server):
    from playwright.sync_api import expect

    url, _ = server
    _to_step(page, url, 9)
    _select(page, "Known model (fills its size, architecture and context)", "llama-3.1-8b")
    expect(page.get_by_label("Parameters, billions")).to_have_value("8.03")
    expect(page.get_by_label("Context per request, tokens")).to_have_value("4096")  # the user's, not the maximum
    page.reload()
    _settle(page)
    expect(page.get_by_text("Step 9 of 9")).to_be_visible()
    expect(page.get_by_label("Parameters, billions")).to_have_value("8.03")
    # the expander opened and its button drawn before the download is awaited: on a busy machine the rerun that
    # draws it can take longer than a download's wait (one CI-speed run timed out at 60 s with the click queued)
    page.get_by_text("Load an answers file (YAML)").click()
    button = page.get_by_role("button", name="Download answers (YAML)")
    expect(button).to_be_visible(timeout=120_000)
    with page.expect_download(timeout=120_000) as d:
        button.click()
    saved = Path(d.value.path()).read_text(encoding="utf-8")
    assert "params_b: 8.03" in saved and "name: llama-3.1-8b" in saved


def test_bad_endpoint_is_refused_before_the_run(page, server):
    from playwright.sync_api import expect

    url, _ = server
    _endpoint_mode(page, url)
    box = page.get_by_label("…or an OpenAI-compatible endpoint URL")
    box.fill("localhost:8000")
    box.press("Enter")
    _settle(page)
    page.get_by_role("button", name="Run the live probe").click()
    _settle(page)
    expect(page.get_by_text("the endpoint must be an http(s) URL").first).to_be_visible()
    expect(page.get_by_role("button", name="Cancel")).to_have_count(0)


def _fake_sweep(engine: str, capacity: int, busy: bool = False, answers_id: str | None = None):
    from probes.result import Percentiles
    from probes.sweep_result import SweepLevel, SweepResult

    levels = [SweepLevel(concurrency=c, status="ok", requests_total=20, requests_ok=20, goodput=1.0, outcome="meets",
                         ttft_ms=Percentiles(p50=100.0 * c, p95=150.0 * c), output_tps_total=40.0 * c, busy=busy,
                         other_cpu_percent=45.0 if busy else 2.0) for c in (1, 2, 4)]
    return SweepResult(engine=engine, status="ok", device="cpu", ttft_target_ms=1000, levels=levels, capacity=capacity,
                       busy=busy, stop={"key": "all"}, stop_reason="every level ran", answers_id=answers_id)


def _save_sweep(sweep, group: str) -> None:
    from advisor.evidence import history

    history.save_sweep(sweep, group, path=DATA["dir"] / "probes.sqlite3")


def test_a_fresh_session_sees_no_foreign_sweep(browser, server):
    """The walk's H3: a session that never swept was told to "revisit the hardware" from another session's sweep,
    and merely visiting the Probe page attached it to the report."""
    from playwright.sync_api import expect

    url, _ = server
    _save_sweep(_fake_sweep("llama.cpp", 1), "job-9001-1764590000")
    ctx = browser.new_context(accept_downloads=True, viewport={"width": 1300, "height": 1000})
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    pg.goto(url + "/probe?lang=zh")
    _settle(pg, 1500)
    expect(pg.get_by_text(re.compile("次扫描来自其他会话或其他答案"))).to_be_visible()
    assert pg.get_by_text(re.compile("重新考虑硬件")).count() == 0
    assert pg.get_by_text(re.compile("在本机最多")).count() == 0
    pg.goto(url + "/report?lang=zh")
    _settle(pg, 1500)
    with pg.expect_download() as d:
        pg.get_by_role("button", name="下载报告（.md）").click()
    assert "实测容量" not in Path(d.value.path()).read_text(encoding="utf-8")
    ctx.close()


def test_a_busy_sweep_is_shown_but_does_not_change_the_advice(page, server):
    """The walk's H4: a sweep the UI itself slowed down concluded "the sweep changes the advice"."""
    from playwright.sync_api import expect

    url, _ = server
    _save_sweep(_fake_sweep("onnxruntime", 4, busy=True), "job-9002-1764590100")
    page.goto(url + "/probe?sw=job-9002-1764590100")  # picked by hand (a link holds the pick)
    _settle(page, 1500)
    expect(page.get_by_role("heading", name="Measured capacity (concurrency sweep)")).to_be_visible()
    expect(page.get_by_text(re.compile("Shown, but it cannot change the advice: other processes used")).first
           ).to_be_visible()
    assert page.get_by_text(re.compile("The sweep changes the advice")).count() == 0


def _endpoint_mode(page, app_url: str) -> None:
    """The Probe page with its "a running server" mode chosen, as a user picks it."""
    page.goto(app_url + "/probe")
    _settle(page)
    page.get_by_text("a running server (OpenAI-compatible URL)").click()
    _settle(page)


def _run_endpoint(page, app_url: str, endpoint: str, requests: int, api_key: str | None = None) -> None:
    """Start an endpoint probe from the Probe page as a user does: the mode, the URL, the key, the counts, Run."""
    _endpoint_mode(page, app_url)
    fields = [(page.get_by_label("…or an OpenAI-compatible endpoint URL"), endpoint)]
    if api_key:
        fields.append((page.get_by_role("textbox", name="API key (if the server was started with --api-key)"),
                       api_key))
    fields += [(page.get_by_label(label, exact=True), value)
               for label, value in (("Requests", str(requests)), ("Concurrency", "1"))]
    for box, value in fields:
        box.fill(value)
        box.press("Enter")
        _settle(page, 300)
    page.get_by_role("button", name="Run the live probe").click()


def test_a_failing_endpoint_run_is_not_ok(page, server, fake_server):
    """The walk's H2: 7 of 8 requests failed, the run was stored as ok and the verdict said "meets the SLA". The
    stand-in streams its first 3 completions (the warm-up takes one), as a llama-cpp-python server does when it
    interrupts one request for the next, then answers HTTP 500."""
    from playwright.sync_api import expect

    url, _ = server
    _run_endpoint(page, url, fake_server("ok-then-500:3"), requests=8)
    expect(page.get_by_text(re.compile(r"not measured: 6 of 8 requests failed: “HTTP 500")).first
           ).to_be_visible(timeout=120_000)
    expect(page.get_by_text(re.compile(r"#\d+ endpoint · partial")).first).to_be_visible()
    assert page.get_by_text(re.compile("meets the SLA")).count() == 0
    page.screenshot(path=str(ARTIFACTS / "j10-failing-endpoint.png"), full_page=True)


def test_nothing_fits_says_so_first(page, server):
    """The walk's H5: Llama-3.1-70B at FP16 on one RTX 4090, target RAM not given."""
    from playwright.sync_api import expect

    from ui import encode_answers

    url, _ = server
    a = {"concurrency": 16, "hardware": {"gpu_vendor": "nvidia", "gpu_model": "NVIDIA GeForce RTX 4090", "gpu_count": 1,
                                         "os": "linux"},
         "model": {"name": "llama-3.1-70b", "precision": "fp16", "context_tokens": 8192}}
    page.goto(url + "/recommendation?a=" + encode_answers(a))
    _settle(page, 1500)
    expect(page.get_by_text(re.compile("Nothing fits as asked on this hardware")).first).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "j11-nothing-fits.png"), full_page=False)


def test_the_reasons_are_readable_in_full_at_1300_px(page, server):
    """The walk's H6: reason cells were cut mid-sentence, the top engine's fix included."""
    from ui import encode_answers

    url, _ = server
    a = {"concurrency": 16, "ttft_p95_ms": 800, "hardware": {"gpu_vendor": "nvidia", "gpu_model": "NVIDIA L40S",
                                                             "gpu_count": 1, "os": "linux"},
         # the issue-21 example: with memory planned on the typical request vLLM now fits, and the longest reason of the
         # top engine is its serving prediction, with every figure and the band
         "model": {"name": "llama-3.1-8b", "precision": "bf16", "context_tokens": 131072}}
    page.goto(url + "/recommendation?a=" + encode_answers(a))
    _settle(page, 1500)
    # fitted or rough, as the held-out bands of the day say: either way the longest reason, every figure and the band
    reason = page.locator("td:visible", has_text=re.compile(
        r"Predicted(, roughly)?: 16 users on one replica at p95 TTFT [\d,]+ ms .*±\d+%(\.|, .*rely on it\.)")).first
    reason.wait_for()
    box = reason.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= 1300  # on screen, whole
    assert reason.evaluate("e => e.scrollWidth <= e.clientWidth + 1")  # nothing cut off inside it


def test_an_api_key_and_url_secrets_never_reach_the_page_the_link_or_the_report(page, server):
    """Issue 19, High 1: a server that wants a bearer key; the key goes in the password field, a password and a
    token in the URL. After the run, the rendered Probe page, its link, the Report page's HTML and the downloaded
    Markdown hold none of them (the URL box itself shows what the user typed)."""
    import http.server
    import threading

    from playwright.sync_api import expect

    from tests.hostile.test_secrets import KEY, PASSWORD, QUERY_TOKEN, _Auth

    url, _ = server
    handler = type("H", (_Auth,), {"seen": []})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    secrets = (KEY, PASSWORD, QUERY_TOKEN)
    try:
        _run_endpoint(page, url, f"http://bob:{PASSWORD}@127.0.0.1:{srv.server_address[1]}/v1?api_key={QUERY_TOKEN}",
                      requests=3, api_key=KEY)
        expect(page.get_by_text(re.compile(r"#\d+ endpoint · ok")).first).to_be_visible(timeout=120_000)
        assert handler.seen and all(s["auth"] == f"Bearer {KEY}" for s in handler.seen)
        shown = page.inner_text("body")
        assert not [s for s in secrets if s in shown + page.url]
        page.get_by_role("button", name="Go to the report").click()
        _settle(page)
        expect(page.get_by_role("heading", name="Live measurements")).to_be_visible()
        html = page.content()
        assert "127.0.0.1" in html and not [s for s in secrets if s in html + page.url]
        with page.expect_download() as d:
            page.get_by_role("button", name="Download report (.md)").click()
        md = Path(d.value.path()).read_text(encoding="utf-8")
        assert not [s for s in secrets if s in md]
        page.screenshot(path=str(ARTIFACTS / "j11-api-key-redacted.png"), full_page=True)
    finally:
        srv.shutdown()


def test_the_probe_mode_stays_chosen_across_a_language_switch(page, server):
    """The radio's labels change with the language, so it is drawn anew: it showed no option chosen in zh."""
    url, _ = server
    _endpoint_mode(page, url)
    page.get_by_text("简体中文").first.click()
    _settle(page, 1000)
    assert page.get_by_role("radio", name=re.compile("正在运行的服务")).is_checked()
    assert not page.get_by_role("radio", name=re.compile("本机上的引擎")).is_checked()

"""The Probe page's "measure what you'd deploy": the bundle's command for this machine's plan is shown; one click
starts that server as a job, sweeps it and stops it; the sweep's section then puts the command that ran beside the
bundle's. Bad levels are refused before anything starts. (The real llama-server, on the bundled model.)"""
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from probes.backends.llama_cpp import llama_server_binary


def app():
    return AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=90)


def _probe_page(lang: str = "en"):
    at = app()
    if lang == "zh":
        at.query_params["lang"] = "zh"
    at.run()
    at.switch_page("pages/4_Probe.py").run()
    assert not at.exception
    return at


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_bundle_command_is_shown_for_this_machine(lang):
    at = _probe_page(lang)
    title = "Measure what you'd deploy" if lang == "en" else "实测你将部署的服务"
    assert title in [h.value for h in at.subheader]
    at.selectbox(key="served_engine").set_value("llama.cpp").run()
    assert not at.exception
    codes = [c.value for c in at.code]
    assert any(c.startswith("llama-server -m /models/") and "--kv-unified" in c for c in codes)


def test_bad_levels_are_refused_before_anything_starts():
    from ui import probe_board

    at = _probe_page()
    at.selectbox(key="served_engine").set_value("llama.cpp").run()
    at.text_input(key="served_levels").set_value("1,x").run()
    at.button(key="run_served").click().run()
    assert not at.exception
    assert any("1,x" in e.value for e in at.error)
    assert probe_board().current is None


@pytest.mark.skipif(llama_server_binary() is None, reason="llama-server is not built (make llama-server)")
def test_one_click_runs_the_bundle_measures_and_stops_it():
    from advisor.evidence import history
    from ui import probe_board

    at = _probe_page()
    at.selectbox(key="served_engine").set_value("llama.cpp").run()
    at.text_input(key="served_levels").set_value("1").run()
    at.number_input(key="probe_tokens").set_value(8)
    at.button(key="run_served").click().run()
    assert not at.exception
    job = probe_board().get(at.session_state["watch_job"])
    assert job is not None and job.served is not None
    # the job ends by itself: measured, or stopped at the served server's own start deadline (start_s) on a machine
    # too busy to start it; it must end either way, and leave nothing running for the tests after this one
    assert job.finished.wait(job.served.start_s + 300), "the served sweep never ended"
    sw = job.sweeps[0]
    assert sw.deployed is not None and sw.deployed.stopped is True and "127.0.0.1" in sw.deployed.command_line
    assert any(g == job.group for _, g, _ in history.list_sweeps())
    at.run()
    assert not at.exception
    codes = [c.value for c in at.code]
    assert sw.deployed.command_line in codes and sw.deployed.bundle_command in codes
    assert sw.status == "ok" or (sw.status == "error" and sw.reason), (sw.status, sw.reason)

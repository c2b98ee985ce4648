"""The Probe page's benchmark files: a GuideLLM report (made by GuideLLM here) is shown with what it does not say;
said once below it (engine, GPU, same model), it is predicted per level, recalibrates the answers' engine on that GPU,
and the Recommendation page and the report name it; a bad file is one line and nothing kept; in en and zh.
(AppTest cannot drive st.file_uploader: the upload is handed to the uploader's own callback.)"""
from pathlib import Path

from streamlit.testing.v1 import AppTest

EVIDENCE = Path(__file__).resolve().parents[1] / "probes" / "data" / "evidence"
H100 = {"hardware": {"gpu_vendor": "nvidia", "gpu_model": "h100-sxm", "gpu_count": 1},
        "model": {"name": "llama-3.1-8b", "precision": "fp8"}, "concurrency": 16, "ttft_p95_ms": 2000}


class _Upload:
    def __init__(self, path: Path | None = None, data: bytes | None = None, name: str | None = None):
        self._data = data if data is not None else path.read_bytes()
        self.name = name or path.name
        self.size = len(self._data)

    def getvalue(self) -> bytes:
        return self._data


def app():
    return AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=90)


def _give(at, up) -> None:
    """The upload handed to the uploader's own callback (ui.evidence.take_upload), on a stand-in for the session's
    state, and what it kept (or the line it left) written into the app's session state."""
    import types

    import ui.evidence as ev_ui

    state = {"evidence_upload": up}
    if "evidence_files" in at.session_state:
        state["evidence_files"] = at.session_state["evidence_files"]
    real = ev_ui.st
    ev_ui.st = types.SimpleNamespace(session_state=state)
    try:
        ev_ui.take_upload("evidence_upload")
    finally:
        ev_ui.st = real
    for key in ("evidence_files", "evidence_error"):
        if key in state:
            at.session_state[key] = state[key]


def test_a_guidellm_file_said_once_recalibrates_and_is_named_everywhere():
    at = app().run()
    at.session_state["answers"] = H100
    f = sorted(EVIDENCE.glob("guidellm-*.json"))[-1]
    _give(at, _Upload(f))
    at.switch_page("pages/4_Probe.py").run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "Your benchmark file: guidellm-0.8.1.json" in text and "does not say its engine, GPU" in text
    key = [s.key for s in at.selectbox if s.key and s.key.startswith("ev_") and s.key.endswith("_engine")][0][:-7]
    at.selectbox(key=key + "_engine").set_value("vllm").run()
    at.selectbox(key=key + "_gpu").set_value("NVIDIA H100 SXM").run()
    at.checkbox(key=key + "_same").check().run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "Calibrated on your measurement (guidellm-0.8.1.json" in text
    at.switch_page("pages/3_Recommendation.py").run()
    assert not at.exception
    page = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    assert "calibrated on your measurement (guidellm-0.8.1.json" in page
    at.switch_page("pages/5_Report.py").run()  # its Markdown carries the section (tests/advisor/evidence: the CLI)
    assert not at.exception
    at.session_state["lang"] = "zh"
    at.switch_page("pages/4_Probe.py").run()
    assert not at.exception
    zh = " ".join(m.value for m in at.markdown)
    assert "已按你的测量校准" in zh


def test_a_bad_file_is_one_line_and_nothing_is_kept():
    at = app().run()
    _give(at, _Upload(data=b'{"mean_ttft_ms": NaN, "model_id": "m", "num_prompts": 2}', name="x.json"))
    at.switch_page("pages/4_Probe.py").run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any("NaN where a figure should be" in e for e in errors)
    assert "evidence_files" not in at.session_state or not at.session_state["evidence_files"]

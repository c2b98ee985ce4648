"""The pages meet the same hostile inputs as the CLI: crafted model files, broken history databases, a PDF step
that fails. None may crash; each says what is wrong, and the user's answers stay as they were."""
from __future__ import annotations

import copy
import json
import os
import sqlite3
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.hostile.kit import STRING, gguf_file, gstr, kv, llama_kvs, tensor

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGES = ["pages/2_Hardware.py", "pages/3_Recommendation.py", "pages/4_Probe.py", "pages/5_Report.py"]


@pytest.fixture(autouse=True)
def _isolated_data(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERENCE_ADVISOR_DATA", str(tmp_path / "data"))


def _deep_config(t):
    (t / "hf").mkdir()
    (t / "hf" / "config.json").write_bytes(b"[" * 100_000 + b"]" * 100_000)
    return t / "hf"


MODELS = {
    "gguf-200k-dims": lambda t: gguf_file(t / "m.gguf", tensors=[tensor("w", [2] * 200_000)]),
    "dev-zero": lambda t: Path("/dev/zero"),
    "fifo": lambda t: os.mkfifo(t / "fifo") or t / "fifo",
    "deep-config": _deep_config,
}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.split("_", 1)[1][:-3])
@pytest.mark.parametrize("case", sorted(MODELS))
def test_a_hostile_model_path_is_a_message_on_every_page(tmp_path, case, page):
    path = str(MODELS[case](tmp_path))
    answers = {"model": {"path": path, "params_b": 1.0}, "concurrency": 2,
               "hardware": {"gpu_vendor": "nvidia", "gpu_model": "RTX 4090", "gpu_count": 1, "gpu_memory_gb": 24}}
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.session_state["answers"] = copy.deepcopy(answers)
    t0 = time.monotonic()
    at.switch_page(page).run(timeout=120)
    assert not at.exception, at.exception
    assert time.monotonic() - t0 < 30  # loose: the bound that matters is "not hours" (it was, for 200k dims)
    if page in ("pages/3_Recommendation.py", "pages/5_Report.py"):  # the pages that plan from the file
        assert any("model.path" in e.value for e in at.error), [e.value for e in at.error]
    assert at.session_state["answers"] == answers  # nothing the user typed is lost


def test_an_html_model_name_is_text_on_the_report_page(tmp_path):
    name = "<img src='/etc/passwd'><script>alert(1)</script>"
    model = gguf_file(tmp_path / "m.gguf", kvs=llama_kvs(**{"general.name": kv("general.name", STRING, gstr(name))}))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.session_state["answers"] = {"model": {"path": str(model)},
                                   "hardware": {"gpu_vendor": "nvidia", "gpu_model": "RTX 4090", "gpu_count": 1,
                                                "gpu_memory_gb": 24}}
    at.switch_page("pages/5_Report.py").run(timeout=120)
    assert not at.exception
    shown = "\n".join(m.value for m in at.markdown)
    assert "alert(1)" in shown and "<script>" not in shown and "<img" not in shown


def _corrupt(db: Path):
    db.write_bytes(b"this is not a database" * 100)


def _foreign(db: Path):
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE runs (name TEXT, value BLOB)")
        c.execute("INSERT INTO runs VALUES ('x', 'y')")


def _wrong_rows(db: Path):
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL, engine TEXT, status TEXT, "
                  "result TEXT)")
        c.execute("INSERT INTO runs (created, engine, status, result) VALUES (1, 'x', 'ok', '{\"not\": 1}')")
        c.execute("INSERT INTO runs (created, engine, status, result) VALUES ('x', NULL, NULL, X'00ff')")


def _a_directory(db: Path):
    db.mkdir()


DATABASES = {"corrupt": _corrupt, "foreign-schema": _foreign, "rows-of-another-version": _wrong_rows,
             "path-is-a-directory": _a_directory}


@pytest.mark.parametrize("page", ["pages/4_Probe.py", "pages/5_Report.py"], ids=["probe", "report"])
@pytest.mark.parametrize("case", sorted(DATABASES))
def test_a_broken_history_database_never_crashes_a_page(tmp_path, case, page):
    data = tmp_path / "data"
    data.mkdir()
    DATABASES[case](data / "probes.sqlite3")
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page(page).run(timeout=120)
    assert not at.exception, at.exception
    if case in ("corrupt", "foreign-schema"):
        notes = " ".join(w.value for w in [*at.warning, *at.info, *at.error])
        assert "moved to" in notes, notes
        assert any(p.name.startswith("probes.sqlite3.broken-") for p in data.iterdir())


def test_the_markdown_stays_when_the_pdf_step_fails(tmp_path, monkeypatch):
    import advisor.report

    def broken(*a, **kw):
        raise MemoryError("simulated: the PDF renderer ran out of memory")

    monkeypatch.setattr(advisor.report, "markdown_to_pdf", broken)
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/5_Report.py").run(timeout=120)
    at.button(key="build_pdf").click().run(timeout=180)
    assert not at.exception
    assert any("simulated" in e.value for e in at.error)
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download report (.md)" in labels
    assert any("# Inference-engine decision report" in m.value for m in at.markdown)
    json.dumps(labels)


@pytest.mark.parametrize("runs", ["²", "1,²,3", "٣", "99999999999999999999", "1" * 5000, "-1,abc"])
def test_a_mangled_runs_link_crashes_no_page(runs):
    """`?runs=²`: str.isdigit() accepts superscripts and other scripts' digits, int() does not (issue 19, High 4)."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["runs"] = runs
    at.run()
    assert not at.exception, at.exception
    for page in PAGES:
        at.switch_page(page).run(timeout=60)
        assert not at.exception, (page, at.exception)

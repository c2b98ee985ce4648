"""A model.path in a shared link is not opened until the user acts on it (issue 19, medium).

Someone else's link may name any file of this machine. Before, every page read it on load and its error echoed the
first bytes (`b'root'` for /etc/shadow). Now the pages plan from params_b, say the path is unread, and read it only
when the button is pressed; no error echoes a file's bytes.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ui import encode_answers

APP = str(Path(__file__).resolve().parents[2] / "app.py")
SECRET = "root:$6$SECRETHASH:19000:0:99999:7:::"


@pytest.fixture(autouse=True)
def _isolated_data(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERENCE_ADVISOR_DATA", str(tmp_path / "data"))


def _texts(at) -> str:
    out = []
    for kind in ("error", "warning", "info", "markdown", "caption", "success", "code", "text"):
        out += [str(getattr(e, "value", "")) for e in getattr(at, kind)]
    return "\n".join(out)


@pytest.mark.parametrize("page", ["pages/3_Recommendation.py", "pages/5_Report.py"])
def test_a_linked_path_is_not_read_until_asked(tmp_path, page):
    secret = tmp_path / "shadow"
    secret.write_text(SECRET + "\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # were it opened on load, the page would hang
    for path in (secret, fifo):
        answers = {"model": {"path": str(path), "params_b": 1.0}, "concurrency": 2}
        at = AppTest.from_file(APP, default_timeout=60)
        at.query_params["a"] = encode_answers(answers)
        at.run()
        at.switch_page(page).run(timeout=60)
        assert not at.exception, at.exception
        said = _texts(at).replace(str(tmp_path), "")
        assert "has not been read" in said and "root" not in said and "SECRETHASH" not in said
        if path == secret:  # the user asks: the file is read, and refused without echoing a byte of it
            at.button(key="read_link_path").click().run(timeout=60)
            said = _texts(at).replace(str(tmp_path), "")
            assert "has not been read" not in said
            assert any("model.path" in e.value and "neither" in e.value for e in at.error), said[:500]
            assert "root" not in said and "SECRETHASH" not in said


def test_a_path_the_user_types_is_read_at_once(tmp_path):
    secret = tmp_path / "notamodel.bin"
    secret.write_bytes(b"root" * 10)
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.session_state["answers"] = {"model": {"path": str(secret), "params_b": 1.0}, "concurrency": 2}
    at.switch_page("pages/3_Recommendation.py").run(timeout=60)
    assert any("neither" in e.value for e in at.error)
    assert "has not been read" not in _texts(at)

import pytest


@pytest.fixture(autouse=True)
def _isolated_data(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERENCE_ADVISOR_DATA", str(tmp_path / "data"))

"""The whole suite's own folder for the measured-silicon predictor's answers (advisor.planner.aic): every CLI and app
process the tests start shares it, so the library's tables are read once per run, and nothing goes into the user's
cache dir."""
import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def _aic_store(tmp_path_factory):
    from advisor.planner.aic import STORE_ENV

    old = os.environ.get(STORE_ENV)
    os.environ[STORE_ENV] = str(tmp_path_factory.mktemp("aic-store"))
    yield
    if old is None:
        os.environ.pop(STORE_ENV, None)
    else:
        os.environ[STORE_ENV] = old

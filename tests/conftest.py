"""The whole suite's own folders, which every CLI and app process the tests start inherits: one for the
measured-silicon predictor's answers (advisor.planner.aic: the library's tables are read once per run, nothing goes
into the user's cache dir), and one user data dir, so no test's probe, sweep or recalibration reaches the user's
history or changes the user's predictions (a test that needs its own data dir sets INFERENCE_ADVISOR_DATA itself).
The cache dir stays the user's: the engines' builds and exports there are what the real-engine tests run."""
import pytest


@pytest.fixture(scope="session", autouse=True)
def _own_folders(tmp_path_factory):
    from advisor.planner.aic import STORE_ENV
    from probes.cache import DATA_ENV

    with pytest.MonkeyPatch.context() as mp:  # restored as they were when the session ends
        mp.setenv(STORE_ENV, str(tmp_path_factory.mktemp("aic-store")))
        mp.setenv(DATA_ENV, str(tmp_path_factory.mktemp("user-data")))
        yield

"""Path and date arguments this system cannot hold end in one line and exit 2, never a traceback (audit: a
300-character or 5,000-character --out, --out '~nosuchuser/x', knowledge --today 0001-01-01)."""
from __future__ import annotations

import pytest

from tests.hostile.kit import bounded

ANSWERS = "examples/cpu-only-box.yaml"
CASES = {
    "deploy-out-300-chars": ["deploy", "--answers", ANSWERS, "--out", "x" * 300],
    "deploy-out-5000-chars": ["deploy", "--answers", ANSWERS, "--out", "y/" * 2500],
    "deploy-out-no-such-user": ["deploy", "--answers", ANSWERS, "--out", "~nosuchuser-of-this-test/x"],
    "report-out-300-chars": ["report", "--answers", ANSWERS, "--out", "z" * 300 + ".md"],
    "report-out-no-such-user": ["report", "--answers", ANSWERS, "--out", "~nosuchuser-of-this-test/r.md"],
    "knowledge-today-year-1": ["knowledge", "--check", "--today", "0001-01-01"],
    "deploy-out-empty": ["deploy", "--answers", ANSWERS, "--out", ""],  # '' silently wrote into the current folder
}


def _one_line_exit_2(o) -> str:
    assert o.rc == 2, (o.rc, o.err[-1500:])
    lines = o.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in o.err, o.err[-1500:]
    return lines[0]


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_path_or_day_this_system_cannot_hold_is_one_line(case):
    assert len(_one_line_exit_2(bounded(["-m", "advisor", *CASES[case]], hard_limit_s=60))) < 300


SERVE = {
    "serve-from-plan-no-such-user": ["serve", "--engine", "llama.cpp", "--from-plan", "~nosuchuser-of-this-test/a.yaml"],
    "serve-from-plan-5000-chars": ["serve", "--engine", "llama.cpp", "--from-plan", "a" * 5000],
    "serve-model-no-such-user": ["serve", "--engine", "llama.cpp", "--from-plan", ANSWERS, "--model",
                                 "~nosuchuser-of-this-test/m.gguf"],
}


@pytest.mark.parametrize("case", sorted(SERVE))
def test_a_served_runs_path_this_system_cannot_hold_is_one_line(case):
    _one_line_exit_2(bounded(["-m", "probes", *SERVE[case]], hard_limit_s=120))


def test_a_non_ascii_api_key_is_refused_once_not_failed_per_request():
    """Audit (low): a non-ASCII key in --api-key-env failed every request instead of being refused."""
    o = bounded(["-m", "probes", "run", "--engine", "endpoint", "--endpoint", "http://127.0.0.1:9",
                 "--api-key-env", "TEST_NON_ASCII_KEY"], hard_limit_s=60, env={"TEST_NON_ASCII_KEY": "ключ-12345"})
    assert o.rc == 2 and "non-ASCII" in o.err and "ключ" not in o.err and "Traceback" not in o.err

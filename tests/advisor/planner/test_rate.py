"""An open-loop request rate (answers load.request_rate_rps, `plan --rate`): predicted beside Q1's closed loop, by
each predictor, and a rate one replica cannot serve said so."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from advisor.inputs.answers import AnswersError, parse_answers
from advisor.knowledge.load import load_knowledge
from advisor.planner import make_plan
from advisor.report.serving import rate_lines

ROOT = Path(__file__).resolve().parents[3]
K = load_knowledge()
A100 = {"concurrency": 16, "ttft_p95_ms": 2000,
        "hardware": {"gpu_vendor": "nvidia", "gpu_model": "a100-80gb", "gpu_count": 1},
        "model": {"name": "llama-3.1-8b", "precision": "bf16", "context_tokens": 4096, "input_tokens": 220,
                  "output_tokens": 190}}


def _plan(rate: float):
    return make_plan(parse_answers({**A100, "load": {"request_rate_rps": rate}}), None, K)


@pytest.mark.parametrize("engine", ["vllm", "llama.cpp"])
def test_a_rate_is_served_at_about_that_rate_with_littles_law_in_flight(engine):
    sv = _plan(4).engines[engine].serving
    lv = sv.at_rate
    assert sv.request_rate_rps == 4 and lv is not None and not sv.at_rate_saturated
    # what completes is what arrives: 4 requests/s x 190 tokens, within the rounding of the requests in flight
    assert lv.output_tps == pytest.approx(4 * 190, rel=0.15)
    # requests in flight = rate x time in the system (Little's law; the level gives p50 TTFT, and a queue makes the
    # mean wait, which the law takes, longer than the median: within 15 % or 1.5 requests)
    time_s = (lv.ttft_ms_p50 + lv.itl_ms_p50 * 189) / 1000
    assert lv.concurrency == pytest.approx(4 * time_s, rel=0.15, abs=1.5)
    # a higher rate holds more in flight and waits no less
    hi = _plan(8).engines[engine].serving.at_rate
    assert hi.concurrency > lv.concurrency and hi.ttft_ms_p95 >= lv.ttft_ms_p95 * 0.95


def test_a_rate_one_replica_cannot_serve_is_said_in_both_languages():
    plan = _plan(4)
    assert plan.engines["pytorch"].serving.at_rate_saturated  # one request at a time: ~0.5 requests/s at most
    assert any("cannot keep up" in x and "PyTorch" in x for x in rate_lines(plan, K, "en"))
    assert any("跟不上" in x for x in rate_lines(plan, K, "zh"))
    assert _plan(10_000).engines["vllm"].serving.at_rate_saturated


def test_no_rate_no_line():
    plan = make_plan(parse_answers(A100), None, K)
    assert rate_lines(plan, K, "en") == [] and plan.engines["vllm"].serving.at_rate is None


@pytest.mark.parametrize("bad", [0, -1, 1e9])
def test_a_bad_rate_in_the_answers_is_refused(bad):
    with pytest.raises(AnswersError):
        parse_answers({**A100, "load": {"request_rate_rps": bad}})


@pytest.mark.parametrize("flag", ["-1", "0", "nan", "inf", "fast", "1e6"])
def test_a_bad_rate_flag_exits_2_with_one_line(tmp_path, flag):
    f = tmp_path / "a.yaml"
    f.write_text(yaml.safe_dump(A100))
    p = subprocess.run([sys.executable, "-m", "advisor", "plan", "--answers", str(f), f"--rate={flag}"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "--rate" in p.stderr

"""Prefill/decode disaggregation, planned (advisor.planner.disagg and the serving plan's `disaggregation`): each side
meets what it claims to meet, the split is weighed against the aggregated fleet on GPUs, and the verdict follows the
band's slow end as well as its centre."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from advisor.inputs.answers import AnswersError, load_answers, parse_answers
from advisor.planner import disagg, make_plan
from advisor.planner.serving import Eff, Hw, decode_step_s, predict, Load
from tests.advisor.deploy.test_multinode import _k

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "llama-70b-long-prompts-pd.yaml"
# a 70B-class FP8 replica on 4 H100-class GPUs, the terms written out (bytes/s, FLOP/s, bytes)
HW = Hw(bandwidth=4 * 3.35e12, flops=4 * 989e12, weights_read=70e9, kv_per_token=327_680 / 4 * 4, matmul_params=70e9,
        chunk_tokens=8192, max_running=200)
EFF = Eff(bw_eff=0.6, flops_eff=0.5, step_ms=1.0, request_ms=20.0)


def test_the_decode_batch_is_the_last_within_the_itl_target():
    held = 8250
    for target in (0.02, 0.03, 0.05):
        b = disagg.decode_batch_within(HW, EFF, held, target, 10_000)
        assert b >= 1 and decode_step_s(b, HW, EFF, held) <= target < decode_step_s(b + 1, HW, EFF, held)
    assert disagg.decode_batch_within(HW, EFF, held, 0.001, 10_000) == 0  # not even one sequence
    assert disagg.decode_batch_within(HW, EFF, held, 10.0, 50) == 50  # the KV pool's / engine's cap holds


def test_a_split_meets_both_targets_it_is_planned_for():
    for itl in (0.025, 0.04):
        s = disagg.split(HW, EFF, 64, 8000, 500, 0.0, 2.0, itl, 327_680, 450e9)
        assert s is not None and s.ttft_ms_p95 <= 2000 and s.itl_ms <= itl * 1000
        assert s.kv_transfer_ms == pytest.approx(8000 * 327_680 / 450e9 * 1000)
    tight, loose = (disagg.split(HW, EFF, 64, 8000, 500, 0.0, 2.0, x, 327_680, 450e9) for x in (0.025, 0.04))
    assert tight.decode_workers >= loose.decode_workers  # a tighter ITL needs smaller decode batches
    # a slower link adds its transfer to every TTFT
    slow = disagg.split(HW, EFF, 64, 8000, 500, 0.0, 2.0, 0.04, 327_680, 12.5e9)
    assert slow.kv_transfer_ms == pytest.approx(36 * loose.kv_transfer_ms) and slow.ttft_ms_p95 > loose.ttft_ms_p95
    assert disagg.split(HW, EFF, 64, 8000, 500, 0.0, 2.0, 0.0001, 327_680, 450e9) is None


def test_the_aggregated_fleet_meets_both_targets_per_replica():
    r, pt = disagg.aggregated_replicas("continuous", HW, EFF, 64, 8000, 500, 0.0, 2000, 40)
    assert pt.ttft_ms_p95 <= 2000 and pt.itl_ms_p95 <= 40
    if r > 1:  # one replica fewer would put more users on each than the targets allow
        more = predict("continuous", HW, EFF, Load(8000, 500, 0.0, concurrency=-(-64 // (r - 1))))
        assert more.ttft_ms_p95 > 2000 or more.itl_ms_p95 > 40


@pytest.fixture(scope="module")
def example_plan():
    return make_plan(load_answers(EXAMPLE), None, _k(), lang="en")


def test_the_example_weighs_the_split_with_its_numbers(example_plan):
    for e in ("vllm", "sglang"):
        sv = example_plan.engines[e].serving
        d = sv.disaggregation
        assert d is not None and d.itl_target_ms == 30
        assert d.verdict in ("pays", "no_gain", "band", "aggregated_misses", "split_misses", "both_miss")
        if d.gpus is not None:
            assert d.gpus == (d.prefill_workers + d.decode_workers) * d.gpus_per_worker
            assert d.ttft_ms_p95 <= 2000 and d.itl_ms <= 30
        if d.aggregated_gpus is not None:
            assert d.aggregated_gpus == d.aggregated_replicas * d.aggregated_gpus_per_replica
            assert d.aggregated_ttft_ms_p95 <= 2000 and d.aggregated_itl_ms_p95 <= 30
        assert d.recommended == (d.verdict in ("pays", "aggregated_misses") and d.slow_gpus is not None)
        if d.verdict == "no_gain":
            assert d.gpus >= d.aggregated_gpus
        if d.recommended and d.aggregated_gpus is not None:
            assert d.gpus < d.aggregated_gpus and d.slow_gpus < d.slow_aggregated_gpus
    # engines without a documented split, and plans without an ITL target, weigh none
    assert example_plan.engines["llama.cpp"].serving.disaggregation is None
    no_itl = make_plan(parse_answers({**load_answers(EXAMPLE).model_dump(exclude_none=True), "itl_p95_ms": None}),
                       None, _k())
    assert no_itl.engines["vllm"].serving.disaggregation is None


def test_the_verdict_is_said_in_both_languages(example_plan):
    from advisor.report.serving import pd_lines

    en = pd_lines(example_plan, _k(), "en")
    d = example_plan.engines["vllm"].serving.disaggregation
    line = next(x for x in en if x.startswith("vLLM:"))
    assert "disaggregation" in line and f"{d.gpus:,}" in line and "±" in line and "±±" not in line
    zh = pd_lines(make_plan(load_answers(EXAMPLE), None, _k(), lang="zh"), _k(), "zh")
    assert any("预填充/解码分离" in x for x in zh)


def test_an_itl_target_out_of_bounds_is_one_line(tmp_path):
    with pytest.raises(AnswersError):
        parse_answers({"itl_p95_ms": 0})
    bad = tmp_path / "a.yaml"
    bad.write_text("itl_p95_ms: -3\n")
    r = subprocess.run([sys.executable, "-m", "advisor", "plan", "--answers", str(bad)], capture_output=True,
                       text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2 and "itl_p95_ms" in r.stderr and "Traceback" not in r.stderr

"""The serving model (advisor/planner/serving.py, perf.py): its terms behave as queueing says, a plan carries the
prediction with its band, memory is planned for the typical request, and the ranking reads the prediction."""
from __future__ import annotations

import json

import pytest

from advisor.decide import recommend
from advisor.inputs.answers import parse_answers
from advisor.knowledge.load import load_knowledge
from advisor.planner import make_plan
from advisor.planner.serving import Eff, Hw, Load, capacity, decode_step_s, predict, prefill_s, with_band

K = load_knowledge()
# Llama-3.1-8B in BF16 on one H100-like GPU: 15 GB of weights, 128 KiB of KV per token
HW = Hw(bandwidth=3.35e12, flops=989e12, weights_read=15e9, kv_per_token=131072, matmul_params=7e9,
        chunk_tokens=2048, max_running=200)
EFF = Eff(0.8, 0.6, 3.0)


def test_one_user_is_one_prefill_then_one_step_per_token():
    p = predict("continuous", HW, EFF, Load(1000, 200, concurrency=1))
    assert p.ttft_ms_p50 == pytest.approx(prefill_s(1000, HW, EFF) * 1000)
    assert p.itl_ms_p50 == pytest.approx(decode_step_s(1, HW, EFF, 1100) * 1000)
    # the same single user on an engine that serves one at a time sees the same
    q = predict("sequential", HW, EFF, Load(1000, 200, concurrency=1))
    assert q.ttft_ms_p50 == pytest.approx(p.ttft_ms_p50) and q.itl_ms_p50 == pytest.approx(p.itl_ms_p50)


def test_batching_trades_latency_for_throughput_until_the_pool_is_full():
    pts = [predict("continuous", HW, EFF, Load(1000, 200, concurrency=c)) for c in (1, 8, 64, 200, 400)]
    tps = [p.output_tps for p in pts]
    assert tps == sorted(tps) and tps[2] > 10 * tps[0]  # a memory-bound step serves many sequences for one read
    itl = [p.itl_ms_p50 for p in pts]
    assert itl == sorted(itl)
    # beyond the KV pool (200) users wait for a place: TTFT jumps, throughput barely moves
    assert pts[4].ttft_ms_p50 > 5 * pts[3].ttft_ms_p50
    assert pts[4].output_tps < 1.2 * pts[3].output_tps


def test_one_at_a_time_queues_every_user_behind_the_others():
    one = predict("sequential", HW, EFF, Load(1000, 200, concurrency=1))
    four = predict("sequential", HW, EFF, Load(1000, 200, concurrency=4))
    service = one.ttft_ms_p50 + 199 * one.itl_ms_p50
    assert four.ttft_ms_p50 == pytest.approx(3 * service + one.ttft_ms_p50, rel=1e-6)
    assert four.output_tps == pytest.approx(one.output_tps)  # no batching: the same tokens/s for any load


def test_open_loop_saturates_and_says_so():
    low = predict("continuous", HW, EFF, Load(1000, 200, request_rate=1.0))
    assert not low.saturated and low.output_tps == pytest.approx(200.0)
    high = predict("sequential", HW, EFF, Load(1000, 200, request_rate=50.0))
    assert high.saturated and high.ttft_ms_p95 is None


def test_p95_reads_the_prompt_spread():
    flat = predict("continuous", HW, EFF, Load(1000, 200, 0, concurrency=16))
    spread = predict("continuous", HW, EFF, Load(1000, 200, 500, concurrency=16))
    assert spread.ttft_ms_p95 > flat.ttft_ms_p95
    assert spread.ttft_ms_p50 == pytest.approx(flat.ttft_ms_p50)


def test_capacity_follows_the_target_and_the_band():
    caps = [capacity("continuous", HW, EFF, 2000, 300, 0, t) for t in (30, 200, 2000)]
    assert caps == sorted(caps) and caps[0] == 0 < caps[1]
    slow, fast = with_band(EFF, 0.3)
    assert capacity("continuous", HW, slow, 2000, 300, 0, 200) <= caps[1] <= capacity("continuous", HW, fast, 2000,
                                                                                      300, 0, 200)


L40S = {"concurrency": 16, "ttft_p95_ms": 800, "hardware": {"gpu_vendor": "nvidia", "gpu_model": "L40S"},
        "model": {"name": "llama-3.1-8b", "precision": "bf16", "context_tokens": 131072, "input_tokens": 2000,
                  "output_tokens": 300}}


def test_l40s_serves_16_users_of_the_typical_request_and_predicts_capacity():
    """The issue's example: Llama-3.1-8B at its full 131,072 context on one L40S, 16 users of about 2,300 tokens."""
    plan = make_plan(parse_answers(L40S), None, K)
    v = plan.engines["vllm"]
    assert v.fits and v.loads and v.typical_tokens == 2300
    assert v.max_concurrency >= 16 and v.max_context_tokens == 131072  # one request may still use the whole window
    for e in ("vllm", "sglang", "tensorrt-llm"):
        sv = plan.engines[e].serving
        assert sv is not None and sv.capacity and sv.capacity >= 16, e
        assert sv.capacity_low <= sv.capacity <= sv.capacity_high
        assert sv.replicas == 1 and sv.at_users.meets
        assert sv.band > 0 and sv.label in ("fitted", "rough", "silicon")
    # transformers serves one request at a time: 16 users of 2,000-token prompts wait for each other
    pt = plan.engines["pytorch"].serving
    assert pt.mode == "sequential" and pt.capacity < 16 and (pt.replicas or 0) > 1


def test_a_named_model_sets_the_context_not_the_typical_length():
    a = parse_answers({**L40S, "model": {"name": "llama-3.1-8b", "precision": "bf16", "context_tokens": 131072}})
    v = make_plan(a, None, K).engines["vllm"]
    # no token counts given: the prompt mix's (mixed: 1,024 in, 256 out)
    assert v.typical_tokens == 1024 + 256 and v.fits


def test_more_users_than_one_replica_holds_are_a_fleet_with_a_price():
    plan = make_plan(parse_answers({**L40S, "concurrency": 2000}), None, K)
    sv = plan.engines["vllm"].serving
    assert sv.replicas and sv.replicas > 1 and sv.fleet_gpus == sv.replicas * sv.gpus_per_replica
    assert sv.fleet_usd_per_hour and sv.usd_per_m_output_tokens  # prices.yaml has the L40S
    assert sv.replicas_high is None or sv.replicas_high >= sv.replicas


def test_a_target_no_engine_can_meet_is_said_and_ranks_nothing_up():
    a = parse_answers({**L40S, "ttft_p95_ms": 10, "model": {**L40S["model"], "input_tokens": 8000}})
    rec = recommend(a, None, K, with_flips=False)
    for r in rec.ranking:
        ids = [x.rule for x in r.reasons]
        if r.plan.serving is not None:
            assert not any(i in ids for i in ("predicted-meets", "predicted-meets-rough")), r.engine
            assert any(i.startswith("predicted-misses") for i in ids), (r.engine, ids)


def test_the_ranking_states_the_prediction_and_its_band():
    rec = recommend(parse_answers(L40S), None, K, with_flips=False)
    top = rec.ranking[0]
    assert top.engine in ("vllm", "sglang", "tensorrt-llm")
    reason = next(x for x in top.reasons if x.rule.startswith("predicted-"))
    # the source is the validation of the predictor whose TTFT the capacity rests on (an L40S: the library's)
    silicon = top.plan.serving.ttft_fixed_ms is not None
    assert "±" in reason.text and "16" in reason.text
    assert reason.source == ("bench/predict_vs_measured.py" if silicon else "bench/fit_serving.py")
    zh = recommend(parse_answers(L40S), None, K, lang="zh", with_flips=False)
    assert any("预测" in x.text for x in zh.ranking[0].reasons)
    # no hand-set concurrency or first-token delta applies where a prediction exists: the mechanism rules are a
    # fallback for targets the model cannot predict
    mech = [x for x in top.reasons if x.rule.endswith("-unpredicted")]
    assert not mech
    for r in K.rules.rules:
        if r.id.endswith("-unpredicted"):
            assert {"fact": "serving_predicted", "eq": False} in r.when.model_dump(exclude_none=True)["all"], r.id


def test_a_gpu_without_figures_falls_back_on_the_documented_mechanism():
    a = parse_answers({"concurrency": 64, "hardware": {"gpu_vendor": "nvidia", "gpu_memory_gb": 24}})
    rec = recommend(a, None, K, with_flips=False)
    assert all(r.plan.serving is None for r in rec.ranking)
    assert rec.ranking[0].engine in ("vllm", "sglang")
    assert any(x.rule == "high-concurrency-needs-batching-unpredicted" for x in rec.ranking[0].reasons)


def test_plan_json_carries_the_prediction(tmp_path, capsys):
    from advisor.cli import main

    f = tmp_path / "a.yaml"
    f.write_text(json.dumps(L40S), encoding="utf-8")
    assert main(["plan", "--answers", str(f), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    sv = data["engines"]["vllm"]["serving"]
    assert sv["capacity"] >= 16 and sv["levels"] and sv["levels"][0]["concurrency"] == 1


def test_a_cpu_target_with_its_measured_figures_gets_a_rough_prediction_and_without_them_none():
    base = {"concurrency": 1, "ttft_p95_ms": 5000,
            "hardware": {"gpu_vendor": "none", "cpu_cores": 32, "cpu_arch": "x86_64", "ram_gb": 256},
            "model": {"name": "llama-3.1-8b", "precision": "q4_k_m", "input_tokens": 512, "output_tokens": 256}}
    bare = make_plan(parse_answers(base), None, K)
    assert bare.engines["llama.cpp"].serving is None  # no bandwidth known: nothing to predict from
    # a bandwidth alone bounds the decode but cannot time a prompt: its compute would be free (a 512-token prompt of
    # an 8B "77 ms" on a Mac mini's CPU), so no prediction, and the table says which figure is missing
    from advisor.report.serving import why_not
    bw_only = make_plan(parse_answers(dict(base, hardware={**base["hardware"], "cpu_bandwidth_gb_s": 100})), None, K)
    p = bw_only.engines["llama.cpp"]
    assert p.decode_tps_upper_bound and p.serving is None
    assert why_not(p, bw_only, K, "en") == "not predicted: no FLOPS figure for the CPU"
    assert any("give hardware.cpu_gflops" in a for a in p.assumptions)
    given = dict(base, hardware={**base["hardware"], "cpu_bandwidth_gb_s": 100, "cpu_gflops": 2000})
    sv = make_plan(parse_answers(given), None, K).engines["llama.cpp"].serving
    assert sv is not None and sv.hw_class == "x86-cpu" and sv.label == "rough" and sv.band > K.serving.rough_above
    # one user's decode reads the weights at the given bandwidth: twice the bandwidth, about twice the tokens/s
    fast = dict(base, hardware={**given["hardware"], "cpu_bandwidth_gb_s": 200})
    sv2 = make_plan(parse_answers(fast), None, K).engines["llama.cpp"].serving
    assert 1.5 < sv.at_users.itl_ms_p50 / sv2.at_users.itl_ms_p50 < 2.1


# ---------------------------------------------------------------- a burst: every request submitted at once

def test_a_burst_of_equal_requests_through_enough_places_is_one_wave():
    from advisor.planner.serving import burst

    b = burst(lambda n: 0.01 + 0.001 * n, [100] * 8, slots=8, prompt_tokens=10, prefill_token_s=0.001)
    # the 8 prompts of 10 tokens in one step (80 ms, the first tokens), then 99 steps of 18 ms with 8 decoding
    assert b.makespan_s == pytest.approx(0.08 + 99 * 0.018)
    assert b.output_tps == pytest.approx(800 / b.makespan_s)
    assert b.ttft_ms_mean == pytest.approx(80)
    assert b.tpot_ms_mean == pytest.approx(18)


def test_a_burst_waits_for_places_and_its_ttft_is_that_wait():
    from advisor.planner.serving import burst

    b = burst(lambda n: 0.01, [10] * 8, slots=4)  # two waves of 9 decode steps of 10 ms
    assert b.makespan_s == pytest.approx(0.18)
    assert b.ttft_ms_mean == pytest.approx((4 * 0 + 4 * 90) / 8)  # the second wave waits for the first
    assert b.running_mean == pytest.approx(4 * 18 / 20)  # (the two prefill steps decode nothing)


def test_a_burst_prefills_within_the_steps_token_budget():
    from advisor.planner.serving import burst

    # 4 prompts of 100 tokens, 100 tokens a step: the prompts come in one a step, the first tokens 0.1 s apart
    b = burst(lambda n: 0.0, [1] * 4, slots=4, prompt_tokens=100, prefill_token_s=0.001, step_tokens=100)
    assert b.ttft_ms_mean == pytest.approx((100 + 200 + 300 + 400) / 4, rel=0.02)


def test_spread_lengths_keep_the_mean_and_a_chat_datasets_long_tail():
    from advisor.planner.serving import spread_lengths

    assert spread_lengths(200, 5, 2048, "") == [200] * 5
    xs = spread_lengths(201.4, 1000, 2048 - 217, "sharegpt")
    assert len(xs) == 1000 and sum(xs) / 1000 == pytest.approx(201.4, rel=0.01)
    assert max(xs) <= 2048 - 217 and max(xs) > 5 * 201.4 and sorted(xs)[500] < 201.4  # long tail, median below mean
    assert xs[:4] != sorted(xs[:4])  # mixed through the run, not sorted


def test_a_spread_burst_ends_later_than_the_steady_state_says():
    """The long requests at the end run on in small steps: a burst of a chat dataset's outputs completes fewer tokens
    a second than the same requests all alike (the GPUStack 1,000-prompt runs were over-predicted 100-1,100 % as a
    steady state)."""
    from advisor.planner.serving import burst, spread_lengths

    def step(n):
        return 0.02 + 0.0002 * n

    alike = burst(step, spread_lengths(200, 1000, 1800, ""), slots=1000)
    spread = burst(step, spread_lengths(200, 1000, 1800, "sharegpt"), slots=1000)
    assert alike.output_tps == pytest.approx(1000 * 200 / (199 * step(1000)))  # all in flight, all alike: steady
    assert spread.output_tps < 0.7 * alike.output_tps  # 2,876 against 4,545 tok/s
    assert spread.makespan_s > 1.5 * alike.makespan_s and spread.running_mean < 0.5 * 1000


def test_step_curve_reads_between_the_batches_it_asked():
    from advisor.planner.serving import step_curve

    asked = []

    def at(n):
        asked.append(n)
        return float(n)

    f = step_curve(at, 1000)
    assert len(asked) < 40 and 1 in asked and 1000 in asked
    assert f(1) == 1.0 and f(1000) == 1000.0 and f(500) == pytest.approx(500.0) and f(5000) == 1000.0


def test_a_burst_admits_what_the_kv_pool_holds_and_preempts_when_it_grows_past():
    from advisor.planner.serving import burst

    # 4 requests of a 10-token prompt and 10 outputs, a pool of 50 tokens: 4 fit at first (4 x 11 = 44), but they
    # grow to 80 tokens, so the last admitted go back to the queue and are served after; every token still comes
    b = burst(lambda n: 0.01, [10] * 4, slots=8, prompt_tokens=10, kv_tokens=50)
    free = burst(lambda n: 0.01, [10] * 4, slots=8, prompt_tokens=10)
    assert free.makespan_s == pytest.approx(0.09) and free.running_mean == pytest.approx(3.6)
    assert b.makespan_s > free.makespan_s and b.running_mean < 4
    assert b.output_tps == pytest.approx(40 / b.makespan_s)


def test_host_work_per_sequence_slows_a_step_in_proportion_to_the_batch():
    """seq_ms: what a step of hundreds of sequences costs beyond its kernels (scheduling, sampling, streaming each
    token), so a wide step is slower than the roofline says and throughput stops growing with the users."""
    with_seq = Eff(0.8, 0.6, 3.0, seq_ms=0.1)
    for b in (1, 64, 512):
        extra = decode_step_s(b, HW, with_seq, 1100) - decode_step_s(b, HW, EFF, 1100)
        assert extra == pytest.approx(b * 0.1e-3)
    a = predict("continuous", HW, EFF, Load(200, 200, concurrency=200))
    b = predict("continuous", HW, with_seq, Load(200, 200, concurrency=200))
    assert b.itl_ms_p50 > a.itl_ms_p50 + 200 * 0.1 * 0.9 and b.output_tps < a.output_tps


def test_a_long_prompt_pays_its_attention_beside_the_weights():
    """A prompt of n tokens costs 2 x params x n of matrix work and attn_flops x n^2 of attention: at 32k tokens of an
    8B Llama (32 layers x 4,096) the attention is about half again the weights' work, at 128 tokens nothing."""
    attn = Hw(**{**HW.__dict__, "attn_flops": 2.0 * 32 * 4096})
    short = prefill_s(128, attn, EFF) / prefill_s(128, HW, EFF)
    long = prefill_s(32768, attn, EFF) / prefill_s(32768, HW, EFF)
    assert short < 1.01 and 1.5 < long < 2.1


def test_a_lone_prompt_under_data_parallel_attention_runs_on_one_gpu_but_its_routed_experts_on_all():
    """Data-parallel attention over 8 ranks: a request is one rank's, so its attention and non-routed weights
    multiply its prompt on one GPU (an eighth of the replica's FLOPS) and only its routed experts' share spreads over
    all 8. A compute-bound prompt with 57 % of its matmul work in routed experts (DeepSeek-V3) takes 0.43 x 8 + 0.57
    = 4.0 times what the whole replica's FLOPS would; a dense model (no routed share) takes all 8 times, and so does
    any prompt's attention."""
    big = Hw(**{**HW.__dict__, "chunk_tokens": 0, "flops": 8 * 989e12})
    n = 8000
    whole = prefill_s(n, big, EFF)
    moe = Hw(**{**big.__dict__, "dp_ranks": 8, "routed_share": 0.57})
    dense = Hw(**{**big.__dict__, "dp_ranks": 8})
    fixed = EFF.step_ms / 1000
    assert (prefill_s(n, moe, EFF) - fixed) / (whole - fixed) == pytest.approx(0.43 * 8 + 0.57, rel=0.02)
    assert (prefill_s(n, dense, EFF) - fixed) / (whole - fixed) == pytest.approx(8, rel=0.02)
    attn = {"attn_flops": 2.0 * 32 * 4096}
    with_attn = prefill_s(n, Hw(**{**moe.__dict__, **attn}), EFF) - prefill_s(n, moe, EFF)
    assert with_attn == pytest.approx(8 * (prefill_s(n, Hw(**{**big.__dict__, **attn}), EFF) - whole), rel=0.02)
    # beside other requests' decodes the prompt's step is slower than alone, and still slower than without DP
    from advisor.planner.serving import prefill_mixed_s

    assert prefill_mixed_s(n, 64, moe, EFF, 1000) > prefill_s(n, moe, EFF)
    assert prefill_mixed_s(n, 64, moe, EFF, 1000) > prefill_mixed_s(n, 64, big, EFF, 1000)


def test_data_parallel_attention_keeps_the_ttft_rising_with_the_users():
    """The fixed point writes prefill_mixed_s out (its own arithmetic, for speed): a prompt beside other requests'
    decodes is served there as prefill_s serves it alone, on its one rank, so the TTFT rises with the users instead of
    dropping to the tensor split's the moment a second user decodes beside it."""
    dp = Hw(**{**HW.__dict__, "flops": 8 * 989e12, "bandwidth": 8 * 3.35e12, "max_running": 400, "dp_ranks": 8,
               "routed_share": 0.57})
    ttft = [predict("continuous", dp, EFF, Load(4000, 500, concurrency=c)).ttft_ms_p50 for c in (1, 2, 4, 8, 16, 32)]
    assert ttft == sorted(ttft), ttft
    tp = Hw(**{**dp.__dict__, "dp_ranks": 1, "routed_share": 0.0})
    assert predict("continuous", dp, EFF, Load(4000, 500, concurrency=2)).ttft_ms_p50 > \
        2 * predict("continuous", tp, EFF, Load(4000, 500, concurrency=2)).ttft_ms_p50


def test_a_sparse_attention_prompt_attends_to_its_picks_after_scoring_every_pair():
    """DeepSeek Sparse Attention in a prompt: each query attends to at most kv_topk earlier tokens (the sum over
    positions of min(position, 2,048)), after the indexer scored every pair (index_attn_flops x n^2). A prompt of up to
    2,048 tokens costs what a dense one costs plus those scores; at 100,000 tokens its attention is a fifth of the dense
    one's, most of it the scores."""
    dense = Hw(**{**HW.__dict__, "attn_flops": 2.0 * 61 * 128 * 192})
    dsa = Hw(**{**dense.__dict__, "kv_topk": 2048, "index_attn_flops": 61.0 * 64 * 128})
    assert dsa.prompt_attn_flops(2000) == pytest.approx(dense.prompt_attn_flops(2000) + 61 * 64 * 128 * 2000 ** 2)
    n = 100_000
    assert dsa.prompt_attn_flops(n) == pytest.approx(dense.attn_flops * (2 * n * 2048 - 2048 ** 2)
                                                     + 61 * 64 * 128 * n ** 2)
    assert dsa.prompt_attn_flops(n) < dense.prompt_attn_flops(n) / 4
    assert prefill_s(n, dsa, EFF) < prefill_s(n, dense, EFF) / 3
    assert HW.prompt_attn_flops(n) == 0.0  # no attention term given, none added


def test_the_axis_first_search_finds_the_grids_best_point():
    from advisor.planner.serving import fit_grid

    grids = ([0.2, 0.4, 0.6, 0.8], [0.1, 0.3, 0.5], [0.0, 1.0, 2.0, 4.0], [0.0, 5.0, 10.0], [0.0, 0.05, 0.1])
    want = Eff(0.6, 0.3, 2.0, 5.0, 0.05)

    def loss(e: Eff) -> float:
        return sum((a - b) ** 2 for a, b in zip((e.bw_eff, e.flops_eff, e.step_ms / 4, e.request_ms / 10, e.seq_ms * 10),
                                                 (want.bw_eff, want.flops_eff, 0.5, 0.5, 0.5)))
    assert fit_grid(loss, grids, (2, 2, 2, 2, 2), axis_first=True) == want
    assert fit_grid(loss, grids, (2, 2, 2, 2, 2), start=Eff(0.2, 0.1, 0.0, 0.0, 0.0), axis_first=True) == want


def test_a_prompts_compute_share_is_its_own_and_a_decode_steps_is_not_moved():
    """prefill_x (issue 32, 2026-12-06): a prompt's matmuls run at flops_eff x prefill_x, a decode step's at flops_eff;
    a band's ends scale both alike, and knowledge's fit groups carry it into a plan."""
    from dataclasses import replace

    from advisor.planner.perf import _eff

    long = 16_000  # compute-bound: 2 x 7e9 x 16k FLOPs take far longer than one read of the weights
    fast = replace(EFF, prefill_x=2.0)
    assert fast.prefill_eff == pytest.approx(2 * EFF.flops_eff)
    step = EFF.step_ms / 1000 * 8  # eight chunks of 2,048 tokens, each with its step's fixed cost
    assert prefill_s(long, HW, fast) - step == pytest.approx((prefill_s(long, HW, EFF) - step) / 2, rel=1e-6)
    assert decode_step_s(2000, HW, fast, 1) == decode_step_s(2000, HW, EFF, 1)  # a compute-bound decode step
    assert predict("continuous", HW, fast, Load(8000, 100, concurrency=8)).ttft_ms_p50 < \
        predict("continuous", HW, EFF, Load(8000, 100, concurrency=8)).ttft_ms_p50
    slow, quick = with_band(fast, 0.5)
    assert slow.prefill_x == quick.prefill_x == 2.0
    assert quick.prefill_eff == pytest.approx(fast.prefill_eff * 1.5)  # no cap at the band's fast end
    sg = K.serving_fit.groups["sglang/datacenter-nvidia"]
    assert _eff(sg).prefill_x == sg.prefill_x and sg.flops_eff * sg.prefill_x <= 0.9


def test_a_benchmark_run_in_the_engines_own_process_pays_no_requests_fixed_cost():
    """trtllm-bench, LLM.generate, gptSessionBenchmark (published_as) never pass an API server: the fit predicts them
    without request_ms, while a served row's TTFT carries it."""
    import yaml

    from pathlib import Path

    from advisor.planner.published import batch1_obs, served, serving_obs

    data = Path(__file__).resolve().parents[1] / "data"
    rows = yaml.safe_load((data / "published_serving.yaml").read_text(encoding="utf-8"))["rows"]
    srv = next(r for r in rows if served(r) and (r.get("ttft_ms") or {}).get("p50") is not None
               and (r.get("load") or {}).get("concurrency"))
    inproc = {**srv, "published_as": "TensorRT-LLM 1.0 trtllm-bench throughput"}  # the same run, in-process
    assert not served(inproc)
    e0, e1 = Eff(0.6, 0.4, 4.0, 0.0), Eff(0.6, 0.4, 4.0, 50.0)
    t_in = next(o for o in serving_obs(inproc, {}, K) if o.kind == "ttft_p50")
    t_srv = next(o for o in serving_obs(srv, {}, K) if o.kind == "ttft_p50")
    assert t_in.predict(e1) == pytest.approx(t_in.predict(e0))
    assert t_srv.predict(e1) > t_srv.predict(e0) + 40
    b1 = yaml.safe_load((data / "published_measurements.yaml").read_text(encoding="utf-8"))["rows"]
    row = next(r for r in b1 if r.get("ttft_ms") and r.get("prompt_tokens"))  # TensorRT-LLM v0.5, in-process
    o = next(o for o in batch1_obs(row, {}, K) if o.kind == "ttft1")
    assert o.predict(e1) == pytest.approx(o.predict(e0))


def test_a_layer_split_is_predicted_at_one_gpus_speed_and_a_tensor_split_is_not():
    """llama.cpp's default -sm layer and transformers' device_map="auto" (what the deployment bundle emits) run each
    GPU's layers one after another every step: a second GPU adds memory, not speed (XiongjieDai's 8 x RTX 4090 ran
    Llama-3-70B F16 at 6.47 tok/s, 91 % of one 4090's bandwidth over the 141 GB). vLLM's tensor parallel does add it."""
    def at(engine: str, gpus: int):
        a = parse_answers({"concurrency": 1, "ttft_p95_ms": 5000,
                           "hardware": {"gpu_vendor": "nvidia", "gpu_model": "rtx-3090", "gpu_count": gpus},
                           "model": {"name": "llama-3.1-8b", "precision": "fp16", "context_tokens": 4096,
                                     "input_tokens": 512, "output_tokens": 128}})
        return make_plan(a, None, K).engines[engine].serving.at_users
    for engine in ("llama.cpp", "pytorch"):
        one, two = at(engine, 1), at(engine, 2)
        assert two.itl_ms_p50 == pytest.approx(one.itl_ms_p50, rel=0.02), engine
        assert two.ttft_ms_p50 == pytest.approx(one.ttft_ms_p50, rel=0.02), engine
    a = parse_answers({"concurrency": 1, "ttft_p95_ms": 5000,
                       "hardware": {"gpu_vendor": "nvidia", "gpu_model": "rtx-3090", "gpu_count": 2},
                       "model": {"name": "llama-3.1-8b", "precision": "fp16", "context_tokens": 4096}})
    for lang in ("en", "zh"):  # the plan says which split its figures are for
        said = K.s("plan_a_layer_predicted", lang, n=2)
        assert said in make_plan(a, None, K, lang=lang).engines["llama.cpp"].assumptions
    one, two = at("vllm", 1), at("vllm", 2)
    assert two.itl_ms_p50 < 0.75 * one.itl_ms_p50  # tensor parallel: each rank reads half the weights


def test_a_published_tensor_parallel_run_of_a_layer_split_engine_keeps_its_split():
    """gpt-fast ran PyTorch tensor-parallel (its rows say parallel: tensor): the fit predicts that run as it was."""
    from advisor.planner.published import _calc

    row = {"engine": "gpt-fast", "plan_engine": "pytorch", "model": "llama-2-7b", "precision": "bf16",
           "hardware": {"gpu_vendor": "nvidia", "gpu_model": "a100-sxm-80gb", "gpu_count": 8}}
    _, layers = _calc(row, {}, K, 512, 128, 1)
    _, tensor = _calc({**row, "parallel": "tensor"}, {}, K, 512, 128, 1)
    assert tensor.serving_hw().bandwidth == pytest.approx(8 * layers.serving_hw().bandwidth)


def test_a_layer_split_replica_that_fits_on_fewer_gpus_is_offered_as_the_leaner_fleet_without_a_tp_label():
    """Two RTX 3090s, an 8B Q4_K_M model that fits on one: llama.cpp's two-GPU replica is no faster than one GPU, so
    one-GPU replicas serve the same users on fewer GPUs, said aside (the bundle keeps the planned layout), never "TP"."""
    from advisor.report.serving import leaner_lines

    a = parse_answers({"concurrency": 32, "ttft_p95_ms": 3000,
                       "hardware": {"gpu_vendor": "nvidia", "gpu_model": "rtx-3090", "gpu_count": 2},
                       "model": {"name": "llama-3.1-8b", "precision": "q4_k_m", "context_tokens": 8192,
                                 "input_tokens": 1000, "output_tokens": 300}})
    plan = make_plan(a, None, K)
    sv = plan.engines["llama.cpp"].serving
    assert sv.gpus_per_replica == 2 and sv.tensor_parallel == 1
    assert sv.leaner is not None and sv.leaner.gpus_per_replica == 1 and sv.leaner.tensor_parallel == 1
    assert sv.leaner.fleet_gpus < sv.fleet_gpus
    line = next(x for x in leaner_lines(plan, K, "en") if x.startswith("llama.cpp"))
    assert "× 1 GPU" in line and "TP" not in line


# ---------------------------------------------------------------- a burst as each engine's scheduler serves it

def test_a_prefill_first_engine_holds_its_decodes_while_the_queue_is_prefilled():
    """SGLang runs a new prefill batch whenever one can be admitted ("Run prefill first if possible"): the first
    request's tokens wait through every later prompt, where vLLM mixes the prompts into its decode steps."""
    from advisor.planner.serving import Schedule, burst

    def run(sch):
        return burst(lambda n: 0.01, [10] * 4, slots=4, prompt_tokens=100, prefill_token_s=0.001, step_tokens=100,
                     schedule=sch)

    first = run(Schedule(prefill_first=True))
    # the 4 prompts one a step (0.1 s each), then 9 decode steps of 10 ms for all four together
    assert first.ttft_ms_mean == pytest.approx(250)
    assert first.makespan_s == pytest.approx(0.49)
    assert first.tpot_ms_mean == pytest.approx(1000 * (0.39 + 0.29 + 0.19 + 0.09) / 9 / 4)
    mixed = run(Schedule())
    assert mixed.tpot_ms_mean < first.tpot_ms_mean and mixed.ttft_ms_mean > first.ttft_ms_mean


def test_an_engine_that_reserves_whole_requests_admits_fewer_and_never_preempts():
    """TensorRT-LLM's GUARANTEED_NO_EVICT admits a request only while its prompt and all its outputs fit beside the
    others' reservations; vLLM admits what fits now and preempts when the pool overflows."""
    from advisor.planner.serving import Schedule, burst

    # 4 requests of a 10-token prompt and 10 outputs, a pool of 50 tokens: 2 reservations of 20 fit, not 3
    full = burst(lambda n: 0.01, [10] * 4, slots=8, prompt_tokens=10, kv_tokens=50, schedule=Schedule(admit="reserve_full"))
    assert full.makespan_s == pytest.approx(0.18)  # two waves of 9 decode steps
    assert full.ttft_ms_mean == pytest.approx((0 + 0 + 90 + 90) / 4)  # the second wave waits for the first
    held = burst(lambda n: 0.01, [10] * 4, slots=8, prompt_tokens=10, kv_tokens=50)
    assert held.ttft_ms_mean == 0  # all four admitted at once, the last ones preempted later
    assert held.makespan_s < full.makespan_s


def test_a_ratio_reserving_engine_admits_more_as_its_ratio_decays():
    """SGLang reserves the running requests' remaining outputs times new_token_ratio, which falls with each decode
    step, so the requests that waited are admitted before the first ones end (a whole reservation would hold them)."""
    from advisor.planner.serving import Schedule, burst

    def run(sch):
        return burst(lambda n: 0.01, [40] * 4, slots=8, prompt_tokens=10, kv_tokens=100, schedule=sch)

    ratio = run(Schedule(admit="reserve_ratio", ratio_init=0.5, ratio_min=0.1, ratio_decay_steps=10))
    full = run(Schedule(admit="reserve_full"))
    assert full.ttft_ms_mean == pytest.approx((0 + 0 + 390 + 390) / 4)  # 2 of 50 tokens at a time
    assert ratio.ttft_ms_mean < full.ttft_ms_mean
    assert run(Schedule(admit="reserve_ratio", ratio_decay_steps=10**6)).ttft_ms_mean == pytest.approx(
        full.ttft_ms_mean)  # at a ratio of 0.7 that never falls, no third request fits before the first two end


def test_whole_prompts_wait_for_a_step_with_room_and_a_prompt_past_the_budget_is_chunked():
    from advisor.planner.serving import Schedule, burst

    whole = Schedule(whole_prompts=True)
    b = burst(lambda n: 0.01, [2] * 3, slots=8, prompt_tokens=60, prefill_token_s=0.001, step_tokens=100,
              schedule=whole)
    # one 60-token prompt a step (the second does not fit the 40 left): first tokens at 60, 130 and 200 ms
    assert b.ttft_ms_mean == pytest.approx((60 + 130 + 200) / 3)
    chunked = burst(lambda n: 0.01, [2] * 3, slots=8, prompt_tokens=60, prefill_token_s=0.001, step_tokens=100)
    assert chunked.ttft_ms_mean == pytest.approx((100 + 190 + 190) / 3)  # the second prompt split over two steps
    long = burst(lambda n: 0.01, [2], slots=8, prompt_tokens=150, prefill_token_s=0.001, step_tokens=100,
                 schedule=whole)
    assert long.ttft_ms_mean == pytest.approx(150)  # 100 tokens, then 50: never stuck


def test_each_engines_burst_schedule_is_read_from_the_knowledge():
    from advisor.planner.published import schedule_of

    sg, trt, vl = schedule_of(K, "sglang"), schedule_of(K, "tensorrt-llm"), schedule_of(K, "vllm")
    assert sg.prefill_first and sg.admit == "reserve_ratio" and sg.ratio_init == 0.7 and sg.ratio_decay_steps == 600
    assert trt.admit == "reserve_full" and trt.whole_prompts and not trt.prefill_first
    assert vl.admit == "held" and not vl.prefill_first and not vl.whole_prompts
    assert schedule_of(K, "llama.cpp") == schedule_of(K, "vllm")  # no schedule of its own: vLLM's
    for engine in ("vllm", "sglang", "tensorrt-llm"):
        sch = K.serving.modes[engine].scheduling
        assert sch is not None and sch.source.startswith("https://github.com/") and sch.read


def test_a_trtllm_bench_burst_takes_the_token_budget_that_tool_sets():
    """trtllm-bench sets max_num_tokens from the dataset (its tuning.py): the pool's requests x (1 + ISL/OSL), at
    least 2,048, at most 32,768; a served row keeps the engine's default budget."""
    from advisor.planner.published import burst_budget
    from advisor.planner.serving import Hw

    hw = Hw(bandwidth=1.0, flops=1.0, weights_read=1.0, kv_per_token=1.0, matmul_params=1.0, chunk_tokens=8192)
    bench = {"published_as": "TensorRT-LLM performance overview (PyTorch backend, trtllm-bench throughput)"}
    assert burst_budget(bench, hw, 130 * 4096, 2048, 2048) == 2048  # 130 x 2 = 260 tokens: the floor
    assert burst_budget(bench, hw, 500 * 1100, 1000, 100) == 5632  # 500 x 11 = 5,500, up to a multiple of 512
    assert burst_budget(bench, hw, 4000 * 20_000, 19_000, 1000) == 32768  # the ceiling
    assert burst_budget({"published_as": "TensorRT-LLM trtllm-serve v1.2.0rc1"}, hw, 500 * 1100, 1000, 100) == 8192


def test_a_cpu_engine_on_unified_memory_is_bounded_by_that_memory():
    """vLLM on a Mac runs on its CPU, which reads the same unified memory the GPU does: a Mac mini M4's 120 GB/s
    bounds its decode (said as the unified memory's, which the CPU cores reach less of), where it had none."""
    plan = make_plan(parse_answers({"concurrency": 1, "model": {"name": "llama-3.1-8b", "precision": "q4_k_m"},
                                    "hardware": {"gpu_vendor": "apple", "gpu_model": "M4", "gpu_count": 1}}), None, K)
    p = plan.engines["vllm"]
    assert p.device == "cpu" and p.decode_tps_upper_bound is not None
    assert 120e9 / 6e9 < p.decode_tps_upper_bound < 120e9 / 4e9  # 120 GB/s over the ~4.9 GB a token reads
    assert any("the unified memory's, as printed" in a for a in p.assumptions)


def test_a_served_engines_host_floor_sets_the_step_once_the_sequences_outgrow_the_gpu():
    """A served engine's API server streams every running sequence's token each step beside the GPU's work
    (host_s_per_seq, knowledge/aiconfigurator.yaml host_ms_per_seq): at a few users it costs nothing, at a thousand it
    sets the step, so ITL grows with the sequences and a closed loop's requests cycle slower (output tok/s stops
    growing), while TTFT, which no decode step is part of, is left as it was."""
    served = Hw(**{**HW.__dict__, "host_s_per_seq": 0.18e-3, "max_running": None})
    bare = Hw(**{**HW.__dict__, "max_running": None})
    few, many = Load(200, 200, concurrency=4), Load(200, 200, concurrency=1000)
    assert predict("continuous", served, EFF, few) == predict("continuous", bare, EFF, few)  # 0.7 ms floor: under
    s, b = predict("continuous", served, EFF, many), predict("continuous", bare, EFF, many)
    assert b.itl_ms_p50 < 180 and s.itl_ms_p50 == pytest.approx(0.18 * s.running)
    assert s.output_tps < b.output_tps and s.output_tps == pytest.approx(1000 / (1000 / b.requests_per_s + 199 * (
        s.itl_ms_p50 - 1000 / b.output_tps_per_user) / 1000) * 200, rel=1e-6)
    assert s.ttft_ms_p50 == b.ttft_ms_p50


def test_the_capacity_search_waits_at_the_served_host_floors_pace_as_the_prediction_does():
    """Users beyond the running cap wait for a finished request, and under the host floor requests finish slower: the
    capacity search sums TTFT as predict() does (until 2026-12-07 it queued them at the GPU's pace, so a host-bound
    plan's users per replica were more than its own TTFT at those users allowed); the point says it is host-bound."""
    served = Hw(**{**HW.__dict__, "host_s_per_seq": 0.18e-3, "max_running": 128})
    p = predict("continuous", served, EFF, Load(200, 200, concurrency=400))
    assert p.host_bound and not predict("continuous", HW, EFF, Load(200, 200, concurrency=400)).host_bound
    for target in (3000, 8000):
        c = capacity("continuous", served, EFF, 200, 200, 0, target)
        assert c > 128  # in the queue beyond the cap
        at = [predict("continuous", served, EFF, Load(200, 200, concurrency=n)).ttft_ms_p95 for n in (c, c + 1)]
        assert at[0] <= target < at[1]


def test_an_open_loop_past_what_the_served_host_streams_saturates():
    """At a request rate the floor binds, more requests are in flight (Little's law on the slower step), each adding
    to it: below 1 / host_s_per_seq output tokens a second the step settles at the floor times them; at or past it
    the host never keeps up and the point is saturated, however fast the GPU."""
    served = Hw(**{**HW.__dict__, "host_s_per_seq": 0.18e-3, "max_running": None, "flops": 100 * 989e12,
                   "bandwidth": 100 * 3.35e12})
    fast = Eff(0.8, 0.6, 0.0)  # no fixed cost a step: the GPU's step is well under the floor
    ok = predict("continuous", served, fast, Load(20000, 200, request_rate=27.5))  # 5,473 tok/s: under 5,556
    n = 27.5 * (ok.ttft_ms_p50 / 1000 + 199 * ok.itl_ms_p50 / 1000)  # in flight, by Little's law
    gpu = predict("continuous", Hw(**{**served.__dict__, "host_s_per_seq": 0.0}), fast, Load(20000, 200,
                                                                                                request_rate=27.5))
    assert not ok.saturated and ok.itl_ms_p50 == pytest.approx(0.18 * n, rel=0.02) and ok.itl_ms_p50 > gpu.itl_ms_p50
    assert predict("continuous", served, fast, Load(20000, 200, request_rate=28.0)).saturated  # 5,572 tok/s: over
    assert not predict("continuous", served, EFF, Load(200, 200, request_rate=20.0)).saturated  # a GPU-bound step


def test_the_served_host_floor_applies_where_it_was_earned():
    """vLLM, SGLang and TensorRT-LLM on NVIDIA GPUs (their served runs earned it); llama.cpp's server on any GPU, as a
    lower bound (it samples and streams every slot's token on the host); not a CPU, not the batching engines on AMD
    (vLLM's published served runs on 8 x MI300X exceed what it would allow one server), not transformers."""
    from advisor.planner import resolve_model, workload_for
    from advisor.planner.capacity import _Calc
    from advisor.planner.target import build_target

    def floor(engine: str, vendor: str, gpu: str) -> float:
        a = parse_answers({"concurrency": 64, "hardware": {"gpu_vendor": vendor, "gpu_model": gpu, "gpu_count": 1},
                           "model": {"name": "llama-3.1-8b", "precision": "bf16", "context_tokens": 4096}})
        c = _Calc(engine, resolve_model(a.model, K, read_files=False), build_target(a, None, K, None),
                  workload_for(a, K), K, "en")
        return c.serving_hw().host_s_per_seq

    h = K.aiconfigurator.host_ms_per_seq / 1000
    assert [floor(e, "nvidia", "H100 SXM") for e in ("vllm", "sglang", "tensorrt-llm", "llama.cpp", "pytorch")] == \
        [h, h, h, h, 0.0]
    assert floor("vllm", "amd", "MI300X") == 0.0 and floor("llama.cpp", "amd", "MI300X") == h


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_llama_cpp_serving_thousands_of_slots_is_host_bound_and_says_whose_floor_it_borrows(lang):
    """Llama-3.1-8B FP8, 2,048 users of 128/128 on one H100: without a floor llama.cpp's parallel slots out-served
    every batching engine (8,613 output tok/s against vLLM's host-bound 5,343); with it the step is at least the floor
    times the slots running, and the plan says the floor is borrowed from the batching engines' served runs."""
    from advisor.report.serving import predictor_lines

    a = parse_answers({"concurrency": 2048, "ttft_p95_ms": 60000,
                       "hardware": {"gpu_vendor": "nvidia", "gpu_model": "h100-sxm", "gpu_count": 1},
                       "model": {"name": "llama-3.1-8b", "precision": "fp8", "context_tokens": 2048,
                                 "input_tokens": 128, "output_tokens": 128}})
    plan = make_plan(a, None, K, lang=lang)
    sv = plan.engines["llama.cpp"].serving
    h = K.aiconfigurator.host_ms_per_seq
    assert sv.host_bound and sv.at_users.itl_ms_p50 >= h * 2048 * 0.999
    # at most one token per floor per slot, whatever the GPU (each request's first token comes with its prompt)
    assert sv.at_users.output_tps <= 1000 / h * 128 / 127 * 1.001
    line = next(x for x in predictor_lines(plan, K, lang) if x.startswith("llama.cpp"))
    assert ("vLLM" in line and "2,048" in line) and ("llama-server" in line)
    other = next(x for x in predictor_lines(plan, K, lang) if x.startswith("vLLM"))
    assert "llama-server" not in other

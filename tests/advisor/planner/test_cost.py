"""Cost per hour and per million output tokens: prices from knowledge/prices.yaml (sourced, dated) or the user's."""
import pytest

from advisor.decide.rules import recommend
from advisor.inputs.answers import parse_answers
from advisor.knowledge.load import load_knowledge
from advisor.planner.cost import usd_per_million_tokens

K = load_knowledge()
H100x8 = {"gpu_vendor": "nvidia", "gpu_model": "H100 SXM", "gpu_count": 8, "gpu_memory_gb": 80, "os": "linux"}


def test_a_million_tokens_at_a_rate():
    assert usd_per_million_tokens(1.0, 1000.0) == pytest.approx(1 / 3.6)
    assert usd_per_million_tokens(None, 1000.0) is None and usd_per_million_tokens(1.0, 0) is None


def test_every_price_is_sourced_and_every_gpu_id_is_known():
    ids = {g.id for g in K.gpus.gpus}
    assert set(K.prices.gpus) <= ids
    for gid, p in K.prices.gpus.items():
        if p.usd_per_hour is not None:
            assert p.source.startswith("https://") and p.read and p.what, gid
    assert K.prices.cpu_core_hour.usd_per_hour > 0


def test_the_plan_prices_the_gpus_it_uses_and_the_cost_is_a_lower_bound():
    rec = recommend(parse_answers({"concurrency": 16, "hardware": H100x8, "model": {"name": "llama-3-8b"}}), None, K,
                    with_flips=False)
    vllm = rec.plan.engines["vllm"]
    per_gpu = K.prices.gpus["h100-sxm"].usd_per_hour
    assert vllm.usd_per_hour == pytest.approx(per_gpu * vllm.gpus_used)
    assert vllm.usd_per_m_tokens_at_least == pytest.approx(
        usd_per_million_tokens(vllm.usd_per_hour, vllm.decode_tps_total_upper_bound), rel=1e-3)
    assert "read" in vllm.cost_basis


def test_the_users_own_prices_win():
    a = parse_answers({"concurrency": 4, "hardware": {**H100x8, "gpu_count": 1}, "gpu_usd_per_hour": 2.0,
                       "model": {"name": "llama-3-8b"}})
    p = recommend(a, None, K, with_flips=False).plan.engines["vllm"]
    assert p.usd_per_hour == 2.0 and p.cost_basis.startswith("your price")
    cpu = parse_answers({"hardware": {"gpu_vendor": "none", "cpu_cores": 32, "ram_gb": 128},
                         "cpu_core_usd_per_hour": 0.01, "model": {"params_b": 1}})
    assert recommend(cpu, None, K, with_flips=False).plan.engines["llama.cpp"].usd_per_hour == pytest.approx(0.32)


def test_a_bought_machine_has_no_rental_price_and_says_why():
    a = parse_answers({"hardware": {"gpu_vendor": "apple", "gpu_model": "M2 Ultra", "gpu_count": 1,
                                    "gpu_memory_gb": 192, "os": "macos", "cpu_arch": "arm64"},
                       "model": {"params_b": 7}})
    p = recommend(a, None, K, with_flips=False).plan.engines["llama.cpp"]
    assert p.usd_per_hour is None and "no on-demand price" in p.cost_basis


def test_the_typical_input_length_drives_the_ttft_bound():
    base = {"concurrency": 1, "hardware": {**H100x8, "gpu_count": 1}, "model": {"name": "llama-3-8b"}}
    short = recommend(parse_answers({**base, "model": {"name": "llama-3-8b", "input_tokens": 256}}), None, K,
                      with_flips=False).plan.engines["vllm"]
    long = recommend(parse_answers({**base, "model": {"name": "llama-3-8b", "input_tokens": 4096}}), None, K,
                     with_flips=False).plan.engines["vllm"]
    assert short.prompt_tokens == 256 and long.prompt_tokens == 4096
    assert long.ttft_ms_lower_bound > short.ttft_ms_lower_bound


def test_the_rows_fleet_is_the_deployment_the_bundle_makes_and_a_leaner_one_is_said_apart():
    """Qwen3-32B FP8, 50 users, 2 x H100 (walk-3 H3): the row once priced one GPU beside TP-2 latencies while the
    bundle deployed two. The row, its cost and the bundle now describe one deployment; one GPU meeting the target
    too is its own line."""
    from advisor.cli import deploy_bundles
    from advisor.decide import recommend
    from advisor.inputs.answers import parse_answers
    from advisor.knowledge.load import load_knowledge
    from advisor.report.serving import _name, leaner_lines

    k = load_knowledge()
    a = parse_answers({"concurrency": 50, "ttft_p95_ms": 1000,
                       "hardware": {"gpu_vendor": "nvidia", "gpu_model": "h100-sxm", "gpu_count": 2},
                       "model": {"name": "qwen3-32b", "precision": "fp8"}})
    rec = recommend(a, None, k, with_flips=False)
    bundles, _ = deploy_bundles(a, k, "en")
    by = {b.engine: b for b in bundles}
    for e in ("vllm", "sglang", "tensorrt-llm"):
        p = rec.plan.engines[e]
        sv, b = p.serving, by[e]
        assert b.status == "ok"
        assert sv.fleet_gpus == b.gpus_per_replica * b.replicas, e
        assert sv.gpus_per_replica == b.gpus_per_replica and sv.tensor_parallel == p.tensor_parallel
        assert abs(sv.fleet_usd_per_hour - p.usd_per_hour / p.gpus_used * b.gpus_per_replica * b.replicas) < 0.01
    lines = leaner_lines(rec.plan, k, "en")
    # (every engine's: a layer-split one on one GPU of the two too: llama.cpp's 32B Q8_0 GGUF fits one H100)
    leaner = [e for e, p in rec.plan.engines.items() if p.serving is not None and p.serving.leaner is not None]
    assert "llama.cpp" in leaner and rec.plan.engines["llama.cpp"].serving.leaner.gpus_per_replica == 1
    assert [x.split(":")[0] for x in lines] == [_name(k, e) for e in leaner]
    for e in leaner:
        f = rec.plan.engines[e].serving.leaner
        assert f.fleet_gpus < rec.plan.engines[e].serving.fleet_gpus and f.fleet_usd_per_hour is not None


def test_a_tie_the_prediction_separates_says_by_how_much_and_against_which_band():
    """Walk-3 M2: vLLM and SGLang tied at the top "with nothing to separate them" while the same page predicted SGLang
    cheaper per token. The tie stays (the difference is inside the band), and the note says so, en and zh."""
    from advisor.decide import recommend
    from advisor.inputs.answers import parse_answers
    from advisor.knowledge.load import load_knowledge

    k = load_knowledge()
    a = parse_answers({"concurrency": 50, "ttft_p95_ms": 1000,
                       "hardware": {"gpu_vendor": "nvidia", "gpu_model": "h100-sxm", "gpu_count": 2},
                       "model": {"name": "qwen3-32b", "precision": "fp8"}})
    for lang, words in (("en", ("cheaper per output token than", "band")), ("zh", ("便宜", "误差带"))):
        rec = recommend(a, None, k, lang=lang)
        assert rec.ranking[0].score == rec.ranking[1].score
        assert all(w in rec.flip_note for w in words), rec.flip_note

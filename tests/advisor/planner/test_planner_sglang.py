"""SGLang's memory plan: --mem-fraction-static computed from the GPU the way SGLang v0.5.23 computes it, the KV pool
that fraction leaves, and published start-up logs to hold both against.

SGLang keeps weights + KV pool in `mem_fraction_static` of the memory free before loading; activations and CUDA graphs
live outside it (unlike vLLM's gpu_memory_utilization, which caps everything). Left unset, the fraction is
round((gpu_mem - reserved_mem) / gpu_mem, 3) with reserved_mem (MiB) = 512 + max(chunk, 2048) x 1.5 + tp x pp / 8 x 1024
+ decode cuda-graph max_bs x 2 + prefill graphs (CUDA: 8 per captured size), at least 10 GiB above 60 GiB
(python/sglang/srt/arg_groups/memory_hook.py). The expected figures below are written out by hand from that code.
"""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from advisor.inputs.answers import parse_answers
from advisor.knowledge import age
from advisor.knowledge import schema as ks
from advisor.knowledge.load import load_knowledge
from advisor.planner import capacity as cap
from advisor.planner import make_plan

K = load_knowledge()
GIB, MIB = 2**30, 2**20
R = K.planner.engines["sglang"].static_reserve
RUNTIME = K.planner.engines["sglang"].gpu_runtime_gib  # resident before loading, per GPU at TP 1


def plan(name, hw, ctx=4096, precision="bf16", engine="sglang"):
    a = parse_answers({"concurrency": 1, "model": {"name": name, "precision": precision, "context_tokens": ctx},
                       "hardware": hw})
    return make_plan(a, None, K).engines[engine]


def kv_room_gib(p) -> float:
    """What the plan leaves for the KV pool: the budget less weights and overhead."""
    return p.available_gib - p.weights_gib - p.overhead_gib


def fraction(gpu_mib, tp=1, vendor="nvidia", mla=False) -> float:
    reserve, _ = cap.static_reserve_mib(gpu_mib, tp, 1, mla, vendor, R)
    return cap.static_fraction(gpu_mib, reserve, R.decimals)


# 58 prefill capture sizes up to 8192 tokens: 4..32/4 (8), 48..256/16 (14), 288..512/32 (8), 576..1024/64 (8),
# 1280..4096/256 (12), 4608..8192/512 (8)
PREFILL_8K = 8 + 14 + 8 + 8 + 12 + 8


def test_prefill_capture_sizes_up_to_8k():
    assert cap.prefill_capture_count(8192, R.prefill_graph_steps) == PREFILL_8K == 58


@pytest.mark.parametrize("gpu_mib,want", [
    (80 * 1024, 0.830),   # H100 80 GB as planned (80 GiB): (81920 - 13904) / 81920 = 0.8303
    (81559, 0.830),       # H100 as nvidia-smi reports it: 0.8295
    (141 * 1024, 0.904),  # H200 as planned (141 GiB): (144384 - 13904) / 144384 = 0.9037
    (143771, 0.903),      # H200 as nvidia-smi reports it: 0.9033
])
def test_default_fraction_follows_the_server_args_formula(gpu_mib, want):
    """Both GPUs fall in the 8k-chunk tiers (60-90 and 90-160 GiB): chunk 8192, decode max_bs 256 at TP 1."""
    reserve = 512 + 8192 * 1.5 + 1 * 1 / 8 * 1024 + 256 * 2 + PREFILL_8K * 8  # 13,904 MiB (above the 10 GiB floor)
    assert cap.static_reserve_mib(gpu_mib, 1, 1, False, "nvidia", R) == (reserve, 8192)
    assert fraction(gpu_mib) == want == round((gpu_mib - reserve) / gpu_mib, 3)


def test_small_gpus_take_their_own_tier():
    """RTX 4090 (24 GiB): chunk 4096, decode max_bs 48, 50 prefill sizes up to 4096, no 10 GiB floor:
    512 + 6144 + 128 + 96 + 400 = 7,280 MiB -> 0.704; A100 40 GB: chunk 4096, max_bs 32."""
    assert cap.prefill_capture_count(4096, R.prefill_graph_steps) == 50
    assert cap.static_reserve_mib(24 * 1024, 1, 1, False, "nvidia", R) == (512 + 6144 + 128 + 96 + 400, 4096)
    assert fraction(24 * 1024) == round((24576 - 7280) / 24576, 3) == 0.704
    assert cap.static_reserve_mib(40 * 1024, 1, 1, False, "nvidia", R)[1] == 4096


@pytest.mark.parametrize("gpu,gib", [("H100", 80), ("H200", 141)])
def test_kv_budget_is_the_static_fraction_less_the_weights(gpu, gib):
    """KV pool = fraction x (memory free before loading) - weights; here free = GPU memory - the runtime resident then.
    The planner budgets the whole GPU and counts the rest (activations, CUDA graphs, runtime) as overhead."""
    p = plan("llama-3.1-8b", {"gpu_vendor": "nvidia", "gpu_model": gpu, "gpu_count": 1})
    f = fraction(gib * 1024)
    weights = 8.03e9 * 2 / GIB                                      # 14.957 GiB
    assert p.available_gib == pytest.approx(gib, abs=1e-3)           # memory_budget_fraction 1: the whole GPU
    assert p.weights_gib == pytest.approx(weights, abs=1e-3)
    assert kv_room_gib(p) == pytest.approx(f * (gib - RUNTIME) - weights, abs=0.01)
    assert p.overhead_gib > (1 - f) * gib                            # the reserve outside the fraction, and more
    assert p.fits and p.loads and p.max_concurrency > 100            # 128k-token KV at 131,072 B per token


def test_sglang_leaves_more_kv_than_vllm_on_an_h200_but_less_than_nothing_reserved():
    """H200: SGLang's fraction (0.904 x 140.2 GiB) against vLLM's 0.9 x 141 less its own 1 GiB+ runtime and activations.
    Only the order is asserted: both engines' KV rooms lie between 85 % and 100 % of what the weights leave."""
    hw = {"gpu_vendor": "nvidia", "gpu_model": "H200", "gpu_count": 1}
    s, v = plan("llama-3.1-8b", hw), plan("llama-3.1-8b", hw, engine="vllm")
    bare = 141 - s.weights_gib
    assert 0.85 * bare < kv_room_gib(s) < bare and 0.85 * bare < kv_room_gib(v) < bare


def test_tensor_parallel_reserve_grows_with_the_ranks():
    """tp >= 4: decode max_bs 512 (x 2 MiB) and tp / 8 x 1 GiB: H100 TP 8 = 512 + 12288 + 1024 + 1024 + 464 = 15312."""
    assert cap.static_reserve_mib(80 * 1024, 8, 1, False, "nvidia", R)[0] == 512 + 12288 + 1024 + 1024 + 464
    assert fraction(80 * 1024, tp=8) == round((81920 - 15312) / 81920, 3) == 0.813


def test_mla_models_reserve_a_flat_prefill_graph_figure():
    """use_mla_backend: the prefill-graph reserve is 1.5 GiB instead of 8 MiB per captured size."""
    assert cap.static_reserve_mib(141 * 1024, 8, 1, True, "nvidia", R)[0] == 512 + 12288 + 1024 + 1024 + 1536


# ---------------------------------------------------------------- published figures

def test_h100_qwen3_32b_default_fraction_from_a_user_report():
    """sgl-project/sglang#29092 (2026-06-23): 'I found the value to be 0.828 for H100 with Qwen3 32 B model' (the
    docs then said 0.9; PR #29135 fixed them). The report names no TP size: TP 2 gives exactly 0.828 on an 81,559 MiB
    H100 (tp / 8 x 1 GiB = 256 MiB), TP 1 gives 0.830. Band: 0.002."""
    assert fraction(81559, tp=2) == 0.828
    assert round(abs(fraction(81559, tp=1) - 0.828), 3) <= 0.002
    assert round(abs(fraction(80 * 1024, tp=2) - 0.828), 3) <= 0.002  # the planner's 80 GiB H100


def test_mi355x_qwen3_30b_a3b_fraction_and_kv_budget_from_a_start_up_log():
    """sgl-project/sglang#18263 (2026-07-15), MI355X, Qwen3-30B-A3B-Instruct-2507 BF16, TP 1, with that PR's build
    (which drops the aiter x0.85): 'Load weight end ... avail mem=230.20 GB, mem usage=56.98 GB',
    'mem_fraction_static 0.911', 'initial available_bytes 219721119039 / 204.63 GB' (the KV budget before the PR's
    own attention-workspace cut). AMD: no prefill graphs, chunk 16384, decode max_bs 512:
    512 + 24576 + 128 + 1024 = 26,240 MiB -> (294912 - 26240) / 294912 = 0.911.
    The planner, at a context <= 8192 (no aiter factor): 0.911 x (288 - 0.8) - 56.81 GiB = 204.83 GiB, +0.1 %
    (its weights are 0.17 GiB lighter than the log's, its runtime 0.02 GiB heavier). Band: 1 %."""
    assert fraction(288 * 1024, vendor="amd") == 0.911
    p = plan("qwen3-30b-a3b-2507", {"gpu_vendor": "amd", "gpu_model": "MI355X", "gpu_count": 1}, ctx=8192)
    assert kv_room_gib(p) == pytest.approx(204.63, rel=0.01)
    assert 0.911 * (230.20 + 56.98) - 56.98 == pytest.approx(219721119039 / GIB, abs=0.02)  # the log's own arithmetic


def test_mi355x_kv_cache_is_allocated_line_with_the_aiter_long_context_factor():
    """sgl-project/sglang#18262 (2026-02-04, ROCm dev image v0.5.7, MI355X, a 5-layer Qwen3-30B-A3B test checkpoint
    with its 262,144 context): 'Load weight begin. avail mem=287.20 GB', 'mem usage=12.79 GB', 'KV Cache is allocated.
    #tokens: 21985288, K size: 104.83 GB, V size: 104.83 GB'. The aiter backend scales the fraction by 0.85 above an
    8192 context: 0.911 x 0.85 x 287.20 - 12.79 = 209.60 GiB of KV, against 21,985,288 x 5 layers x 4 KV heads x
    128 x 2 x 2 B = 209.66 GiB logged: -0.03 %. Band: 0.5 % (that run passed --disable-cuda-graph, which v0.5.23 would
    answer with a 1 GiB smaller reserve, +0.3 %)."""
    f = fraction(288 * 1024, vendor="amd") * R.long_context_factor
    logged = 21_985_288 * 5 * 4 * 128 * 2 * 2 / GIB
    assert logged == pytest.approx(2 * 104.83, abs=0.01)
    assert f * 287.20 - 12.79 == pytest.approx(logged, rel=0.005)
    assert 288 - 287.20 == pytest.approx(RUNTIME, abs=0.05)           # the runtime resident before loading, TP 1
    long, short = (plan("qwen3-30b-a3b-2507", {"gpu_vendor": "amd", "gpu_model": "MI355X", "gpu_count": 1}, ctx=c)
                   for c in (32768, 8192))
    assert kv_room_gib(long) == pytest.approx(0.911 * 0.85 * (288 - RUNTIME) - long.weights_gib, abs=0.01)
    assert kv_room_gib(long) < kv_room_gib(short)


def test_h200_tp8_runtime_before_loading():
    """SemiAnalysisAI/InferenceX#2128 (SGLang, 8x H200, TP 8): 'Load weight end ... avail mem=12.25 GB, mem
    usage=125.65 GB', i.e. 137.90 of the 140.40 GiB (143,771 MiB) free before loading: 2.50 GiB per GPU, which the
    planner's 0.8 GiB + 7/8 x 1.94 GiB per extra rank reproduces. SGLang's 'minimum viable' 0.9113 is its
    1 - available / pre-load free, here 1 - 12.25 / 137.90 from the log's rounded, one-rank figures."""
    per_gpu = cap.gpu_runtime_gib(RUNTIME, 0.0, 141, 8, K.planner.engines["sglang"].per_extra_gpu_gib) / 8
    assert per_gpu == pytest.approx(143771 / 1024 - (12.25 + 125.65), abs=0.01)
    assert 1 - 12.25 / (12.25 + 125.65) == pytest.approx(0.9113, abs=5e-4)


# ---------------------------------------------------------------- engine releases (engines.yaml)

def test_every_engine_states_the_release_its_facts_describe():
    """The line the Recommendation page shows (advisor.knowledge.age.as_of) reads Engine.release."""
    for e in K.engines.values():
        assert e.release.version and e.release.read and e.release.source.startswith("https://")
        assert e.release.date is None or e.release.date <= e.release.read
    asof = age.as_of(K)
    assert {e.engine: e.version for e in asof.engines}["sglang"] == "0.5.23"
    assert asof.date == max(e.release.read for e in K.engines.values())


@pytest.mark.parametrize("bad", [
    {"version": "1.0", "source": "https://pypi.org/project/x/1.0/", "read": "2026-12-01"},   # no date and no note
    {"version": "1.0", "date": "2026-12-02", "source": "https://pypi.org/project/x/", "read": "2026-12-01"},
    {"version": "1.0", "date": "2026-02-30", "source": "https://pypi.org/project/x/", "read": "2026-12-01"},
    {"version": "1.0", "date": "1/2/2026", "source": "https://pypi.org/project/x/", "read": "2026-12-01"},
    {"version": "1.0", "date": "2026-01-02", "source": "a blog", "read": "2026-12-01"},
])
def test_a_release_needs_a_real_date_or_a_reason(bad):
    with pytest.raises(ValidationError):
        ks.Release.model_validate(bad)
    ks.Release.model_validate({"version": "1.0", "source": "https://pypi.org/project/x/", "read": "2026-12-01",
                               "note": {"en": "not found", "zh": "未找到"}})

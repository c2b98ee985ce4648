"""Property tests over random valid answers (hypothesis)."""
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.decide.rules import recommend
from advisor.inputs.answers import Answers, parse_answers
from advisor.knowledge.load import load_knowledge
from advisor.knowledge.schema import ENGINE_IDS

KNOWLEDGE = load_knowledge()

hardware = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {"gpu_vendor": st.sampled_from(["nvidia", "amd", "intel", "apple"])},
        optional={
            "gpu_count": st.integers(1, 16),
            "gpu_memory_gb": st.floats(1, 256, allow_nan=False),
            "ram_gb": st.floats(1, 2048, allow_nan=False),
            "cpu_cores": st.integers(1, 256),
            "cpu_arch": st.sampled_from(["x86_64", "arm64"]),
            "os": st.sampled_from(["linux", "windows", "macos"]),
        }),
    st.fixed_dictionaries({"gpu_vendor": st.just("none")},
                          optional={"ram_gb": st.floats(1, 2048, allow_nan=False),
                                    "os": st.sampled_from(["linux", "windows", "macos"])}),
)

answers = st.fixed_dictionaries({}, optional={
    "concurrency": st.integers(1, 100_000),
    "ttft_p95_ms": st.integers(10, 600_000),
    "hardware": hardware,
    "cross_platform": st.booleans(),
    "cuda_expertise": st.sampled_from(["none", "some", "strong"]),
    "model_update": st.sampled_from(["rarely", "monthly", "weekly", "daily"]),
    "non_llm_models": st.booleans(),
    "strict_sla": st.booleans(),
    "deployment": st.sampled_from(["server", "edge", "desktop", "batch"]),
    "prompt_mix": st.sampled_from(["short", "long", "mixed"]),
    "model": st.fixed_dictionaries({}, optional={
        "params_b": st.floats(0.01, 2000, allow_nan=False),
        "architecture": st.sampled_from(["decoder-only", "encoder-decoder", "encoder", "cnn"]),
        "precision": st.sampled_from(["fp32", "bf16", "fp16", "fp8", "int8", "int4", "q4_1", "q4_k_m", "q8_0"]),
        "context_tokens": st.integers(128, 1_048_576),
    }),
})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(answers)
def test_recommendation_invariants(data):
    a = parse_answers(data)
    rec = recommend(a, None, KNOWLEDGE)
    ranked = [r.engine for r in rec.ranking]
    excluded = [x.engine for x in rec.excluded]
    # every engine exactly once
    assert sorted(ranked + excluded) == sorted(ENGINE_IDS)
    # contributions sum to the score, scores in range, best first
    for r in rec.ranking:
        assert abs(sum(x.delta for x in r.reasons) - r.score) < 1e-6
        assert 0 <= r.score <= 100
    assert [r.score for r in rec.ranking] == sorted((r.score for r in rec.ranking), reverse=True)
    for x in rec.excluded:
        assert x.reasons and all(y.source for y in x.reasons)
    # TensorRT-LLM is never ranked without an NVIDIA GPU
    if (a.hardware.gpu_vendor if a.hardware else "none") != "nvidia":
        assert "tensorrt-llm" not in ranked
    # deterministic
    again = recommend(parse_answers(data), None, KNOWLEDGE)
    assert again.model_dump() == rec.model_dump()


@settings(max_examples=100, deadline=None, derandomize=True)
@given(answers)
def test_zh_and_en_rank_alike(data):
    a = parse_answers(data)
    en = recommend(a, None, KNOWLEDGE, lang="en")
    zh = recommend(a, None, KNOWLEDGE, lang="zh")
    assert [(r.engine, r.score) for r in en.ranking] == [(r.engine, r.score) for r in zh.ranking]
    assert all(x.text for r in zh.ranking for x in r.reasons)


def test_defaults_are_documented_values():
    a = Answers()
    assert (a.concurrency, a.ttft_p95_ms, a.hardware, a.cuda_expertise, a.model_update) == (1, 1000, None, "none", "monthly")

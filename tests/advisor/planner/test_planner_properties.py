"""Planner invariants over random models, precisions, workloads and GPUs (hypothesis)."""
from typing import get_args

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from advisor.inputs.answers import Precision, parse_answers
from advisor.knowledge.load import load_knowledge
from advisor.planner import make_plan

K = load_knowledge()
GPUS = [g for g in K.gpus.gpus if g.vendor != "apple"]

model = st.one_of(
    st.fixed_dictionaries({"name": st.sampled_from([m.id for m in K.models.models if m.architecture != "encoder"])}),
    st.fixed_dictionaries({"params_b": st.floats(0.05, 500, allow_nan=False)}),
).flatmap(lambda m: st.fixed_dictionaries({
    **{k: st.just(v) for k, v in m.items()},
    "precision": st.sampled_from(get_args(Precision)),
    "context_tokens": st.integers(128, 131_072),
}))
hardware = st.one_of(
    st.builds(lambda g, n, ram: {"gpu_vendor": g.vendor, "gpu_model": g.name, "gpu_count": n, "ram_gb": ram},
              st.sampled_from(GPUS), st.integers(1, 16), st.integers(8, 2048)),
    st.builds(lambda ram: {"gpu_vendor": "none", "ram_gb": ram}, st.integers(4, 4096)),
)
answers = st.fixed_dictionaries({"model": model, "hardware": hardware, "concurrency": st.integers(1, 512),
                                 "prompt_mix": st.sampled_from(["short", "long", "mixed"])})


def plan(data: dict):
    return make_plan(parse_answers(data), None, K)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(answers)
def test_plan_arithmetic_is_consistent(data):
    pl = plan(data)
    ctx, mix = data["model"]["context_tokens"], data["prompt_mix"]
    # the typical request: the prompt mix's prompt + output tokens, at most the context
    typical = min(min(K.planner.prompt_tokens[mix], ctx) + K.serving.output_tokens[mix], ctx)
    for e, p in pl.engines.items():
        assert abs(p.total_gib - (p.weights_gib + p.kv_gib + p.overhead_gib)) < 5e-3, e
        assert p.typical_tokens == typical, e
        # sequences held at once: one on an engine that serves one request at a time, else every user
        running = 1 if K.serving.modes[e].mode == "sequential" else p.concurrency
        if p.kv_bytes_per_token and p.device != "none":
            # KV pool = max(running x one typical sequence, one sequence of the whole context), TP copies included
            # (a sliding-window layer holds at most its window)
            def seq(tokens):
                held = min(tokens, p.kv_window_tokens) if p.kv_window_tokens else tokens
                return (p.kv_full_bytes_per_token * tokens + p.kv_window_bytes_per_token * held) / 2**30
            want = max(running * seq(typical), seq(ctx))
            assert abs(p.kv_gib - want) <= 2e-3 + 1e-3 * want, (e, p.kv_gib, want)
        if p.device == "none":
            assert p.fits is False and p.decode_tps_upper_bound is None
            continue
        assert p.available_gib is not None  # every generated target has its memory known
        assert abs(p.headroom_gib - (p.available_gib - p.total_gib)) < 5e-3
        if p.device != "gpu+cpu":
            assert p.fits == (p.total_gib <= p.available_gib + 5e-3) or abs(p.headroom_gib) < 5e-3
            if p.fits and p.kv_bytes_per_token:
                # the pool holds `running` typical sequences, and one of the whole context
                assert p.max_concurrency >= running >= 1, e  # (a batching engine: every user)
                # the one request may hold at least the typical request (the others holding theirs) and, on an
                # engine that serves one at a time, the whole context (at most the model's window; -1: int rounding)
                longest = min(typical if running > 1 else ctx, pl.model.max_context)
                assert p.max_context_tokens >= longest - 1, (e, p.max_context_tokens, longest)
        if p.loads is False:  # an engine that cannot start cannot fit either
            assert p.fits is False
        for o in p.options:
            if o.kind in ("quantize", "add_gpus"):
                assert o.total_gib <= o.available_gib + 5e-3, (e, o)
        for bound in (p.decode_tps_upper_bound, p.ttft_ms_lower_bound):
            assert bound is None or bound > 0


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(answers)
@example({"model": {"name": "mixtral-8x22b", "precision": "fp8", "context_tokens": 128},  # found by a run: 266 users
          "hardware": {"gpu_vendor": "nvidia", "gpu_model": "NVIDIA T4", "gpu_count": 16, "ram_gb": 8},  # turn vLLM
          "concurrency": 133, "prompt_mix": "long"})  # to data-parallel attention + EP 16 (more weights per GPU)
@example({"model": {"name": "deepseek-v2-lite", "precision": "fp32", "context_tokens": 256},  # and: 634 users turn
          "hardware": {"gpu_vendor": "nvidia", "gpu_model": "NVIDIA L4", "gpu_count": 8, "ram_gb": 8},  # SGLang to DP
          "concurrency": 317, "prompt_mix": "short"})  # attention + EP 8 (182.82 -> 182.77 GiB in all: the KV held once)
def test_more_load_never_needs_less_memory_and_more_gpus_never_offer_less(data):
    base = plan(data)
    busier = plan({**data, "concurrency": data["concurrency"] * 2})
    for e in base.engines:
        a, b = base.engines[e], busier.engines[e]
        if (a.attention_dp, a.expert_parallel) == (b.attention_dp, b.expert_parallel):
            assert b.total_gib >= a.total_gib - 1e-9
            assert b.weights_gib == a.weights_gib
        else:  # an MoE plan that turns to data-parallel attention + EP for more users: another layout, which holds the
            # dense part on every GPU and the KV once (so its total may be less)
            assert b.attention_dp > a.attention_dp and b.weights_gib > a.weights_gib
    if data["hardware"]["gpu_vendor"] != "none":
        bigger = plan({**data, "hardware": {**data["hardware"], "gpu_count": data["hardware"]["gpu_count"] * 2}})
        for e in ("vllm", "pytorch", "llama.cpp"):
            a, b = base.engines[e], bigger.engines[e]
            if a.device == b.device == "gpu":
                assert b.available_gib >= a.available_gib - 1e-9, e

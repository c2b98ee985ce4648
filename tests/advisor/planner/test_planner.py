"""Capacity planner: hand-checked figures (the arithmetic is written out), fits/fixes, and the rules using them.

GiB = 2**30. Constants come from knowledge/models.yaml, gpus.yaml and planner.yaml; each is restated here so
a silent change of the knowledge files (or the formulas) fails a test.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from advisor.decide.rules import recommend
from advisor.inputs.answers import parse_answers
from advisor.knowledge.load import load_knowledge
from advisor.planner import make_plan
from advisor.planner.spec import resolve_model

K = load_knowledge()
GIB = 2**30


def plan_for(engine: str, model: dict, hardware: dict | None, concurrency: int = 1, prompt_mix: str = "mixed"):
    a = parse_answers({"concurrency": concurrency, "prompt_mix": prompt_mix, "model": model,
                       **({"hardware": hardware} if hardware else {})})
    spec = resolve_model(a.model, K) if a.model.path else None  # (the planner reads no file; its callers do)
    return make_plan(a, None, K, spec=spec).engines[engine]


def approx(x: float, rel: float = 2e-3):
    return pytest.approx(x, rel=rel)


# ---------------------------------------------------------------- hand-checked pairs

def test_llama31_8b_fp16_on_a100_40gb_vllm():
    p = plan_for("vllm", {"name": "llama-3.1-8b", "precision": "fp16", "context_tokens": 4096},
                 {"gpu_vendor": "nvidia", "gpu_model": "A100 40GB", "gpu_count": 1})
    weights = 8.03e9 * 16 / 8 / GIB                       # 14.957 GiB
    kv_tok = 2 * 32 * 8 * 128 * 2                         # 131,072 B: GQA, 8 KV heads (not 32)
    # memory for serving: the typical request is the mixed prompt (1024) + its output (256) = 1280 tokens; the pool
    # holds 1 x 1280 of them, and room for one request of the whole 4096-token context: max(1 x 1280, 4096) tokens
    typical = 1024 + 256
    kv = kv_tok * max(1 * typical, 1 * 4096) / GIB        # 0.5 GiB: the one full-context request dominates
    act = 2048 * (4096 + 14336) * 2 * 4 / GIB             # 2048-token chunk (max_num_batched_tokens)
    overhead = max(1.0, 0.02 * 40) + act                  # 1.281 GiB
    available = 40 * 0.9                                  # gpu_memory_utilization 0.9 -> 36 GiB
    assert p.kv_bytes_per_token == kv_tok == 131_072
    assert p.typical_tokens == typical == 1280
    assert p.weights_gib == approx(weights)
    assert p.kv_gib == approx(kv) == approx(0.5)
    assert p.overhead_gib == approx(overhead)
    assert p.total_gib == approx(weights + kv + overhead)
    assert p.available_gib == approx(available)
    assert p.fits is True and p.headroom_gib == approx(available - weights - kv - overhead)
    free = available - weights - overhead                 # 19.762 GiB for the KV cache
    # max concurrency counts typical sequences (1280 tokens, 0.15625 GiB each), not full-context ones (0.5 GiB: 39)
    assert p.max_concurrency == int(free // (kv_tok * typical / GIB)) == 126
    # one request alone (vLLM here serves 1 user, so no other sequence holds tokens) may hold free / KV per token
    # = 161,887 tokens, capped at Llama 3.1's 131,072-token window
    assert int(free * GIB // kv_tok) == 161_887 and p.max_context_tokens == 131_072
    # roofline: 1555 GB/s / bytes read per token = weights, less the input embedding table (a one-row lookup;
    # the LM head is a separate matrix in Llama 3), plus the KV of the 1024-token prompt held ~ 103 tok/s.
    # anchors §5 row 7: vLLM measured 75 tok/s on this pair, 73% of the bound
    read = 8.03e9 * 2 - 128256 * 4096 * 2 + kv_tok * 1024
    assert p.decode_tps_upper_bound == approx(1555e9 / read, 1e-3)
    assert 95 < p.decode_tps_upper_bound < 110
    # TTFT: 2 x (8.03e9 - 128256 x 4096 embedding lookups) x 1024 tokens / 312 TFLOPS ~ 49 ms > one weight read
    assert p.ttft_ms_lower_bound == approx(2 * (8.03e9 - 128256 * 4096) * 1024 / 312e12 * 1000)


def test_llama2_7b_mha_kv_is_4x_llama3_and_limits_concurrency_on_rtx4090():
    model = {"name": "llama-2-7b", "precision": "fp16", "context_tokens": 4096}
    rtx = {"gpu_vendor": "nvidia", "gpu_model": "RTX 4090", "gpu_count": 1}
    kv_tok = 2 * 32 * 32 * 128 * 2                        # 524,288 B: MHA, 32 KV heads (4x Llama 3's 131,072)
    weights = 6.74e9 * 2 / GIB                            # 12.554 GiB
    overhead = 1.0 + 2048 * (4096 + 11008) * 2 * 4 / GIB  # 1.2305 GiB
    available = 24 * 0.9                                  # 21.6 GiB
    free = available - weights - overhead                 # 7.815 GiB for the KV cache

    # the mixed prompt mix: 8 users at a typical 1024 + 256 = 1280 tokens, 0.625 GiB each -> 5 GiB, which fits,
    # but MHA leaves room for only 12 such sequences (Llama 3's GQA would hold 4x as many)
    p = plan_for("vllm", model, rtx, concurrency=8)
    assert p.kv_bytes_per_token == kv_tok and p.typical_tokens == 1280
    assert p.kv_gib == approx(max(8 * 1280, 4096) * kv_tok / GIB) == approx(5.0)
    assert p.loads is True and p.fits is True
    assert p.max_concurrency == int(free // (1280 * kv_tok / GIB)) == 12
    # one request while the other 7 hold 1280 tokens each: (7.815 - 4.375) GiB / 0.5 MiB = 7,045, capped at 4,096
    assert int((free - 7 * 1280 * kv_tok / GIB) * GIB // kv_tok) == 7045 and p.max_context_tokens == 4096
    assert p.options == []

    # longer requests: 1792 in + 256 out = 2048 tokens, 1 GiB of MHA KV each: 8 x 2048 tokens (8 GiB) do not fit
    p = plan_for("vllm", {**model, "input_tokens": 1792, "output_tokens": 256}, rtx, concurrency=8)
    assert p.typical_tokens == 2048
    assert p.kv_gib == approx(max(8 * 2048, 4096) * kv_tok / GIB) == approx(8.0)
    assert p.loads is True and p.fits is False            # loads (one 4096-token sequence fits), but 8 x 2048 do not
    assert p.max_concurrency == int(free // (2048 * kv_tok / GIB)) == 7
    # one long request while the other 7 hold 2048 tokens would get (7.815 - 7) GiB / 0.5 MiB = 1,669, below the
    # typical length, so the others shrink with it: all 8 at 7.815 GiB / (8 x 0.5 MiB) = 2,000 tokens
    assert int((free - 7 * 2048 * kv_tok / GIB) * GIB // kv_tok) == 1669
    assert p.max_context_tokens == int(free * GIB // (8 * kv_tok)) == 2000
    kinds = {o.kind for o in p.options}
    assert {"reduce_context", "quantize", "add_gpus"} <= kinds
    (cut,) = [o for o in p.options if o.kind == "reduce_context"]
    assert (cut.context_tokens, cut.concurrency) == (2000, 7)


def test_mixtral_moe_on_two_h100_reads_only_active_experts():
    p = plan_for("vllm", {"name": "mixtral-8x7b", "precision": "fp16", "context_tokens": 8192},
                 {"gpu_vendor": "nvidia", "gpu_model": "H100 SXM", "gpu_count": 2}, concurrency=32)
    weights_b = 46.7e9 * 2                                 # every expert resident: 93.4 GB
    runtime = max(1.0, 0.02 * 80) * 2 + 0.25 * (2 - 1)    # per GPU, plus NCCL for the second rank
    # activations for vLLM's max_num_batched_tokens on an H100: 8192 (get_batch_defaults, >= 70 GiB, not an A100)
    overhead = runtime + 8192 * (4096 + 14336) * 2 * 4 / GIB
    # 32 users at the typical 1024 + 256 = 1280 tokens (40,960 tokens), room for one 8192-token request: 5 GiB
    # (TP 2 splits the 8 KV heads, no copies)
    kv = 131_072 * max(32 * 1280, 1 * 8192) / GIB
    assert p.typical_tokens == 1280 and p.kv_gib == approx(kv) == approx(5.0)
    assert p.gpus_used == 2 and "tensor" in p.parallelism
    assert p.weights_gib == approx(weights_b / GIB)
    assert p.total_gib == approx(weights_b / GIB + kv + overhead)
    assert p.available_gib == approx(2 * 80 * 0.9)        # 144 GiB
    assert p.fits is True
    free = 2 * 80 * 0.9 - weights_b / GIB - overhead
    assert p.max_concurrency == int(free // (131_072 * 1280 / GIB))  # typical sequences the free memory holds
    active_b = weights_b * 12.9 / 46.7 - 32000 * 4096 * 2  # 2 of 8 experts per token, less the embedding lookup
    assert p.decode_tps_upper_bound == approx(2 * 3350e9 / (active_b + 131_072 * 1024), 1e-3)  # ~261 tok/s


def test_llama31_8b_q4_k_m_on_apple_m2_max_llama_cpp_unified_memory():
    p = plan_for("llama.cpp", {"name": "llama-3.1-8b", "precision": "q4_k_m", "context_tokens": 4096},
                 {"gpu_vendor": "apple", "gpu_model": "Apple M2 Max", "gpu_count": 1, "os": "macos"})
    weights_b = 8.03e9 * 4.8944 / 8                       # llama.cpp's own Q4_K_M whole-file bpw
    assert p.precision == "q4_k_m" and p.device == "gpu"
    assert p.weights_gib == approx(weights_b / GIB)       # 4.575 GiB
    assert p.available_gib == approx(96 * 0.75)           # the GPU may wire ~75% of unified memory
    assert p.kv_gib == approx(131_072 * 4096 / GIB)       # llama.cpp: f16 KV for the whole n_ctx
    # 512-token ubatch: the compute buffer holds fp32 logits for every token of it
    assert p.overhead_gib == approx(0.3 + 512 * 128256 * 4 / GIB)
    # the embedding table at its own type: llama.cpp writes token_embd.weight of a Q4_K_M file as Q4_K (4.5 bits).
    # (Changed on purpose, issue 10: GGUF weights per tensor kind; it was the file's average width, 4.8944 bits.)
    lookup = 128256 * 4096 * 4.5 / 8
    assert p.decode_tps_upper_bound == approx(400e9 / (weights_b - lookup + 131_072 * 1024), 1e-3)  # ~85 tok/s


def test_mistral_7b_fp16_on_t4_pytorch_is_tight():
    p = plan_for("pytorch", {"name": "mistral-7b", "precision": "fp16", "context_tokens": 4096},
                 {"gpu_vendor": "nvidia", "gpu_model": "T4", "gpu_count": 1})
    weights = 7.24e9 * 2 / GIB                            # 13.486 GiB
    overhead = 0.63 + 1024 * (4096 + 14336) * 2 * 4 / GIB  # CUDA context + one 1024-token prompt
    kv = 131_072 * 4096 / GIB                             # 0.5 GiB, grows on demand
    assert p.total_gib == approx(weights + overhead + kv)
    assert p.available_gib == approx(16.0)                # no reservation: the whole card
    assert p.fits is True and p.headroom_gib / p.available_gib < 0.1
    rec = recommend(parse_answers({"model": {"name": "mistral-7b", "precision": "fp16"},
                                   "hardware": {"gpu_vendor": "nvidia", "gpu_model": "T4", "gpu_count": 1}}), None, K)
    pt = next(r for r in rec.ranking if r.engine == "pytorch")
    assert any(x.rule == "plan-tight-headroom" for x in pt.reasons)


def test_qwen25_72b_int4_on_two_a100_80gb_tensorrt_llm():
    p = plan_for("tensorrt-llm", {"name": "qwen2.5-72b", "precision": "int4", "context_tokens": 8192},
                 {"gpu_vendor": "nvidia", "gpu_model": "A100 80GB", "gpu_count": 2}, concurrency=16)
    m = next(x for x in K.models.models if x.id == "qwen2.5-72b")
    emb = 152064 * 8192 * 2                               # embedding table + untied LM head, kept in 16 bits
    assert (m.vocab_size, m.hidden_size, m.tied_embeddings) == (152064, 8192, False)
    weights = ((m.params_b * 1e9 - emb) * 4.25 + emb * 16) / 8 / GIB  # AWQ/GPTQ group 128: 4 + 32/128 bits
    kv_tok = 2 * m.layers * m.kv_heads * m.head_dim * 2
    assert (m.layers, m.kv_heads, m.head_dim) == (80, 8, 128) and kv_tok == 327_680
    overhead = (max(1.0, 0.02 * 80) * 2 + 0.25) + 8192 * (m.hidden_size + m.intermediate_size) * 2 * 4 / GIB
    base = weights + overhead
    # TensorRT-LLM: free_gpu_memory_fraction 0.9 of what is free after loading goes to the KV cache
    assert p.available_gib == approx(base + 0.9 * (160 - base))
    # 16 users at the typical 1024 + 256 = 1280 tokens (20,480), room for one 8192-token request: 6.25 GiB
    # (TP 2 splits the 8 KV heads: no copies)
    assert p.typical_tokens == 1280
    assert p.kv_gib == approx(kv_tok * max(16 * 1280, 8192) / GIB) == approx(6.25)
    assert p.fits is True


def test_params_only_falls_back_to_the_generic_architecture_and_says_so():
    a = parse_answers({"model": {"params_b": 13, "precision": "fp16"}})
    plan = make_plan(a, None, K)
    assert plan.model.approximate
    g = K.models.generic.large
    assert plan.model.layers == round(g.layers_coef * 13 ** g.layers_exp)
    assert (plan.model.kv_heads, plan.model.head_dim) == (8, 128) and plan.model.attention_heads % 8 == 0
    assert plan.notes and "approximat" in plan.notes[0]
    zh = make_plan(a, None, K, lang="zh")
    assert "近似" in zh.notes[0]


# ---------------------------------------------------------------- does not fit -> options -> ranking changes

def test_70b_fp16_on_one_24gb_gpu_does_not_fit_and_the_advice_changes():
    hw = {"gpu_vendor": "nvidia", "gpu_model": "RTX 4090", "gpu_count": 1, "ram_gb": 192}
    big = parse_answers({"concurrency": 4, "model": {"name": "llama-3-70b", "precision": "fp16"}, "hardware": hw})
    small = parse_answers({"concurrency": 4, "model": {"name": "llama-3-8b", "precision": "fp16"}, "hardware": hw})
    plan = make_plan(big, None, K)
    v = plan.engines["vllm"]
    assert v.fits is False and v.loads is False
    assert v.weights_gib == approx(70.55e9 * 2 / GIB)     # 131.4 GiB against 21.6 usable
    kinds = [o.kind for o in v.options]
    assert "add_gpus" in kinds and "offload" in kinds
    # INT4 on 2 x RTX 4090 (TP 2 splits the 8 KV heads: no copies), planned for 4 users at the typical
    # 1024 + 256 = 1280 tokens: weights (AWQ/GPTQ 4.25 bits, embedding + untied LM head in 16 bits)
    # + KV max(4 x 1280, 4096) x 327,680 B + runtime (2 x max(1, 0.02 x 24) + 0.25) + a 2048-token chunk
    emb = 128256 * 8192 * 2
    int4 = ((70.55e9 - emb) * 4.25 + emb * 16) / 8 / GIB                      # 37.78 GiB
    act = 2048 * (8192 + 28672) * 2 * 4 / GIB                                 # 0.5625 GiB
    on2 = int4 + 327_680 * max(4 * 1280, 4096) / GIB + (2 * 1.0 + 0.25) + act  # 42.16 GiB
    assert on2 <= 2 * 24 * 0.9
    (two,) = [o for o in v.options if o.kind == "add_gpus" and o.precision == "int4"]
    assert two.gpu_count == 2 and two.total_gib == approx(on2) and two.available_gib == approx(2 * 24 * 0.9)
    # the worst case (every user at the whole 4096-token context: 3840 in + 256 out) needs 4 GPUs: on 2, the KV
    # would be 4 x 4096 x 327,680 B = 5 GiB and 37.78 + 5 + 2.81 = 45.6 GiB > 43.2
    worst = parse_answers({"concurrency": 4, "hardware": hw, "model": {
        "name": "llama-3-70b", "precision": "fp16", "input_tokens": 3840, "output_tokens": 256}})
    wv = make_plan(worst, None, K).engines["vllm"]
    assert wv.typical_tokens == 4096 and int4 + 327_680 * 4 * 4096 / GIB + 2.25 + act > 2 * 24 * 0.9
    (four,) = [o for o in wv.options if o.kind == "add_gpus" and o.precision == "int4"]
    assert four.gpu_count == 4 and four.total_gib == approx(int4 + 5.0 + (4 * 1.0 + 0.25 * 3) + act)
    lc = plan.engines["llama.cpp"]
    assert lc.device == "gpu+cpu" and lc.fits is True and 0 < lc.offload_layers < 80

    rec_big, rec_small = recommend(big, None, K), recommend(small, None, K)
    assert rec_small.top.engine == "vllm"
    assert rec_big.top.engine == "llama.cpp"
    vr = next(r for r in rec_big.ranking if r.engine == "vllm")
    text = next(x.text for x in vr.reasons if x.rule == "plan-does-not-load")
    assert "131.4" in text and "21.6" in text and "RTX 4090" in text  # the numbers and the fix
    assert any(x.rule == "plan-fits-only-with-offload" for x in rec_big.top.reasons)


def test_unknown_target_memory_gives_no_verdict_not_a_guess():
    p = plan_for("llama.cpp", {"name": "llama-3-8b"}, {"gpu_vendor": "none"})
    assert p.device == "cpu" and p.available_gib is None and p.fits is None and p.max_concurrency is None
    assert any("ram_gb" in a for a in p.assumptions)


def test_tensorrt_llm_without_nvidia_has_no_device():
    p = plan_for("tensorrt-llm", {"name": "llama-3-8b"}, {"gpu_vendor": "amd", "gpu_model": "MI300X"})
    assert p.device == "none" and p.fits is False


def test_every_recommend_entry_carries_a_consistent_plan():
    rec = recommend(parse_answers({"hardware": {"gpu_vendor": "none", "ram_gb": 32}}), None, K)
    assert {e.engine for e in [*rec.ranking, *rec.excluded]} == set(rec.plan.engines)
    for entry in [*rec.ranking, *rec.excluded]:
        p = entry.plan
        assert p is rec.plan.engines[entry.engine]
        assert p.total_gib == pytest.approx(p.weights_gib + p.kv_gib + p.overhead_gib, abs=2e-3)
        if p.available_gib:
            assert p.headroom_gib == pytest.approx(p.available_gib - p.total_gib, abs=2e-3)
        assert p.assumptions and all(isinstance(a, str) and a for a in p.assumptions)


def test_unified_memory_never_offloads_to_itself():
    p = plan_for("llama.cpp", {"name": "llama-3-70b", "precision": "fp16"},
                 {"gpu_vendor": "apple", "gpu_model": "Apple M2 Max", "os": "macos"})
    assert p.device == "gpu" and p.offload_layers is None
    assert p.fits is False                                # 131 GiB of weights against 72 GiB usable of 96
    # Q8_0: 70.55e9 x 8.5008 / 8 = 69.8 GiB + KV + overhead = 71.6 GiB of 72; no "add a second Mac" fix
    assert [o.kind for o in p.options] == ["quantize"] and p.options[0].precision == "q8_0"


def test_offload_rule_only_when_offload_really_fits():
    a = parse_answers({"model": {"name": "llama-3-70b", "precision": "fp16"},
                       "hardware": {"gpu_vendor": "nvidia", "gpu_model": "RTX 4090", "ram_gb": 64}})
    rec = recommend(a, None, K)
    lc = next(r for r in [*rec.ranking, *rec.excluded] if r.engine == "llama.cpp")
    assert lc.plan.device == "gpu+cpu" and lc.plan.fits is False  # 110 GiB would have to sit in 57.6 GiB
    rules = {x.rule for x in lc.reasons}
    assert "plan-does-not-load" in rules and "plan-fits-only-with-offload" not in rules


def test_compute_capabilities_compare_as_numbers_and_gate_fp8():
    from advisor.planner.capacity import cc_at_least

    assert cc_at_least("12.0", "8.9") and cc_at_least("9.0", "8.9") and not cc_at_least("8.0", "8.9")
    assert not cc_at_least(None, "8.9")
    # TensorRT-LLM cannot run FP8 on an A100 (8.0): the quantize fix must not offer it there
    p = plan_for("tensorrt-llm", {"name": "llama-3-70b", "precision": "fp16"},
                 {"gpu_vendor": "nvidia", "gpu_model": "A100 80GB", "gpu_count": 1})
    assert p.fits is False and all(o.precision != "fp8" for o in p.options)
    h = plan_for("tensorrt-llm", {"name": "llama-3-70b", "precision": "fp16"},
                 {"gpu_vendor": "nvidia", "gpu_model": "H100 SXM", "gpu_count": 1})
    assert any(o.kind == "quantize" and o.precision == "fp8" for o in h.options)


def test_concurrency_curve_and_total_decode_bound():
    from advisor.planner.capacity import concurrency_curve

    p = plan_for("vllm", {"name": "llama-3.1-8b", "precision": "fp16", "context_tokens": 4096},
                 {"gpu_vendor": "nvidia", "gpu_model": "A100 40GB"}, concurrency=8)
    free = (p.available_gib - p.weights_gib - p.overhead_gib) * GIB
    curve = dict(concurrency_curve(p, 131072))
    # the curve counts sequences that each hold the whole context of that point
    assert curve[512] == int(free // (131_072 * 512)) and curve[4096] == int(free // (131_072 * 4096)) == 39
    assert list(curve.values()) == sorted(curve.values(), reverse=True)
    # max concurrency counts typical requests (1024 + 256 = 1280 tokens), more than full-context ones
    assert p.typical_tokens == 1280 and p.max_concurrency == int(free // (131_072 * 1280)) == 126
    # ...and the curve's point at the context when the typical request is the whole context (3840 in + 256 out)
    worst = plan_for("vllm", {"name": "llama-3.1-8b", "precision": "fp16", "context_tokens": 4096,
                              "input_tokens": 3840, "output_tokens": 256},
                     {"gpu_vendor": "nvidia", "gpu_model": "A100 40GB"}, concurrency=8)
    assert worst.typical_tokens == 4096 and worst.max_concurrency == curve[4096]
    # and at a power-of-two typical request (768 in + 256 out = 1024), the curve's 1024-token point
    at1k = plan_for("vllm", {"name": "llama-3.1-8b", "precision": "fp16", "context_tokens": 4096,
                             "input_tokens": 768, "output_tokens": 256},
                    {"gpu_vendor": "nvidia", "gpu_model": "A100 40GB"}, concurrency=8)
    assert at1k.typical_tokens == 1024 and at1k.max_concurrency == curve[1024]
    # 8 sequences share one read of the weights: 8 x 1555 GB/s / (weights - lookup + 8 x KV of 1024 tokens),
    # unless compute caps it: 312 TFLOPS / (2 x matmul params)
    read = 8.03e9 * 2 - 128256 * 4096 * 2
    mem_bound = 8 * 1555e9 / (read + 8 * 131_072 * 1024)
    compute_bound = 312e12 / (2 * (8.03e9 - 128256 * 4096))
    assert p.decode_tps_total_upper_bound == approx(min(mem_bound, compute_bound), 1e-3)


def test_encoder_models_have_no_kv_cache_or_decode_bound():
    p = plan_for("onnxruntime", {"params_b": 0.35, "architecture": "encoder", "precision": "fp32"},
                 {"gpu_vendor": "nvidia", "gpu_model": "T4"})
    assert p.kv_bytes_per_token == 0 and p.kv_gib == 0 and p.decode_tps_upper_bound is None
    assert p.ttft_ms_lower_bound is not None


def test_context_beyond_the_model_window_is_said_at_the_top():
    plan = make_plan(parse_answers({"model": {"name": "llama-2-7b", "context_tokens": 32768}}), None, K)
    assert any("4,096" in n and "32,768" in n for n in plan.notes)


# ---------------------------------------------------------------- KV-cache dtype (answers model.kv_cache_dtype)

def test_fp8_kv_cache_halves_kv_per_token_where_the_engine_and_gpu_run_it():
    model = {"name": "llama-3.1-8b", "precision": "fp16", "context_tokens": 8192}
    h100 = {"gpu_vendor": "nvidia", "gpu_model": "H100 SXM", "gpu_count": 1}
    auto = plan_for("vllm", model, h100, concurrency=16)
    fp8 = plan_for("vllm", {**model, "kv_cache_dtype": "fp8"}, h100, concurrency=16)
    assert (auto.kv_cache_dtype, auto.kv_bytes_per_token) == ("fp16", 2 * 32 * 8 * 128 * 2)
    assert (fp8.kv_cache_dtype, fp8.kv_bytes_per_token) == ("fp8", 2 * 32 * 8 * 128 * 1)  # 65,536 B: half
    assert fp8.kv_gib == approx(auto.kv_gib / 2) and fp8.max_concurrency >= 2 * auto.max_concurrency - 1
    assert fp8.decode_tps_upper_bound > auto.decode_tps_upper_bound  # less KV read per token
    assert any("fp8 as asked" in a for a in fp8.assumptions)


def test_fp8_kv_cache_is_refused_with_the_reason_where_the_engine_does_not_run_it():
    model = {"name": "llama-3.1-8b", "precision": "fp16", "context_tokens": 8192, "kv_cache_dtype": "fp8"}
    h100 = {"gpu_vendor": "nvidia", "gpu_model": "H100 SXM", "gpu_count": 1}
    lc = plan_for("llama.cpp", model, h100)
    assert (lc.kv_cache_dtype, lc.kv_bytes_per_token) == ("fp16", 131_072)  # its default f16 KV, kept
    refusal = next(a for a in lc.assumptions if "cannot keep the KV cache in fp8" in a)
    assert "--cache-type-k" in refusal                                      # the support matrix's note
    zh = make_plan(parse_answers({"model": model, "hardware": h100}), None, K, lang="zh").engines["llama.cpp"]
    assert any("fp8" in a and "无法" in a for a in zh.assumptions)
    # TensorRT-LLM documents an FP8 KV cache from compute capability 8.0: refused on a T4 (7.5)
    t4 = plan_for("tensorrt-llm", model, {"gpu_vendor": "nvidia", "gpu_model": "T4", "gpu_count": 1})
    assert t4.kv_cache_dtype == "fp16" and any("cannot keep the KV cache in fp8" in a for a in t4.assumptions)
    assert plan_for("tensorrt-llm", model, h100).kv_cache_dtype == "fp8"


def _fp8_config(tmp_path, kv_algo: str | None):
    """A Llama-3.1-8B-shaped config.json as NVIDIA's ModelOpt exports it (quant_method modelopt, quant_algo FP8),
    declaring FP8 KV (kv_cache_quant_algo) or not."""
    import json
    quant = {"quant_method": "modelopt", "quant_algo": "FP8", **({"kv_cache_quant_algo": kv_algo} if kv_algo else {})}
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
           "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
           "max_position_embeddings": 131072, "torch_dtype": "bfloat16", "quantization_config": quant}
    p = tmp_path / f"kv-{kv_algo}" / "config.json"
    p.parent.mkdir()
    p.write_text(json.dumps(cfg))
    return str(p)


def test_an_fp8_checkpoint_gets_the_kv_dtype_the_engines_auto_takes(tmp_path):
    """kv_cache_dtype auto: vLLM, SGLang and TensorRT-LLM take the FP8 KV a ModelOpt checkpoint declares; without a
    config.json TensorRT-LLM (served from ModelOpt checkpoints, FP8 KV by default) plans FP8 KV, vLLM and SGLang
    the model's 16 bits; a checkpoint that declares none keeps 16 bits everywhere; an asked dtype wins."""
    h100 = {"gpu_vendor": "nvidia", "gpu_model": "H100 SXM", "gpu_count": 1}
    per_tok16, per_tok8 = 2 * 32 * 8 * 128 * 2, 2 * 32 * 8 * 128
    model = {"name": "llama-3.1-8b", "precision": "fp8", "context_tokens": 8192}
    assert plan_for("tensorrt-llm", model, h100).kv_bytes_per_token == per_tok8
    t = plan_for("tensorrt-llm", model, h100)
    assert any("ModelOpt" in a and "FP8" in a for a in t.assumptions)
    for e in ("vllm", "sglang"):
        assert plan_for(e, model, h100).kv_bytes_per_token == per_tok16
    declared = {"path": _fp8_config(tmp_path, "FP8"), "precision": "fp8", "context_tokens": 8192}
    plain = {"path": _fp8_config(tmp_path, None), "precision": "fp8", "context_tokens": 8192}
    for e in ("vllm", "sglang", "tensorrt-llm"):
        d = plan_for(e, declared, h100, concurrency=16)
        assert d.kv_cache_dtype == "fp8" and d.kv_bytes_per_token == per_tok8, e
        assert any("kv_cache_quant_algo" in a for a in d.assumptions), e
        assert plan_for(e, plain, h100).kv_bytes_per_token == per_tok16, e
        assert plan_for(e, {**declared, "kv_cache_dtype": "fp16"}, h100).kv_bytes_per_token == per_tok16, e
    # a config.json that is not the FP8 checkpoint (a bf16 one, planned at fp8) says nothing of the FP8 one's KV
    bf16 = tmp_path / "bf16" / "config.json"
    bf16.parent.mkdir()
    bf16.write_text(Path(declared["path"]).read_text().replace('"quantization_config"', '"unused_config"'))
    other = {"path": str(bf16), "precision": "fp8", "context_tokens": 8192}
    assert plan_for("tensorrt-llm", other, h100).kv_bytes_per_token == per_tok8   # its usual ModelOpt checkpoint
    assert plan_for("vllm", other, h100).kv_bytes_per_token == per_tok16
    # an engine that keeps its own KV type whatever the checkpoint says (llama.cpp: f16) is not moved
    assert plan_for("llama.cpp", declared, h100).kv_cache_dtype == "fp16"
    # FP8 KV where the GPU cannot hold it: the model's dtype, with no refusal (nothing was asked)
    t4 = plan_for("tensorrt-llm", model, {"gpu_vendor": "nvidia", "gpu_model": "T4", "gpu_count": 1})
    assert t4.kv_cache_dtype in ("fp16", "bf16") and not any("cannot keep the KV" in a for a in t4.assumptions)


def test_int8_kv_cache_uses_llama_cpps_q8_0_block_size():
    p = plan_for("llama.cpp", {"name": "llama-3.1-8b", "precision": "q4_k_m", "kv_cache_dtype": "int8"},
                 {"gpu_vendor": "nvidia", "gpu_model": "RTX 4090", "gpu_count": 1})
    assert p.kv_cache_dtype == "int8" and p.kv_bytes_per_token == 2 * 32 * 8 * 128 * 34 // 32  # 69,632 B
    v = plan_for("vllm", {"name": "llama-3.1-8b", "kv_cache_dtype": "int8"},
                 {"gpu_vendor": "nvidia", "gpu_model": "H100 SXM", "gpu_count": 1})
    assert v.kv_cache_dtype == "fp16" and any("does not document" in a for a in v.assumptions)  # unknown cell


# ---------------------------------------------------------------- speed bounds on several GPUs

def test_pytorch_bounds_assume_tensor_parallel_while_memory_stays_layer_split():
    # gpt-fast: Llama-2-70B bf16, tensor parallel on 8 A100-80GB, 62.5 tok/s at batch 1 (its README). The layer
    # split alone (device_map="auto": one GPU reads at a time) gives 2039 GB/s / 137.4 GB = 14.8 tok/s, which
    # that measurement beats 4x; the bound adds the 8 GPUs' bandwidth. (Changed on purpose, issue 10.)
    p = plan_for("pytorch", {"name": "llama-2-70b", "precision": "bf16", "context_tokens": 4096},
                 {"gpu_vendor": "nvidia", "gpu_model": "A100 80GB", "gpu_count": 8}, prompt_mix="short")
    read = 68.98e9 * 2 - 32000 * 8192 * 2 + 2 * 80 * 8 * 128 * 2 * 128     # weights - lookup + KV of 128 tokens
    assert p.decode_tps_upper_bound == approx(8 * 2039e9 / read, 1e-3)    # 118.5 tok/s
    assert 62.5 <= p.decode_tps_upper_bound
    assert p.gpus_used == 8 and p.available_gib == approx(8 * 80)          # memory: whole layers on each GPU
    assert "layers" in p.parallelism and "tensor" in p.parallelism
    layer = next(a for a in p.assumptions if a.startswith("Speed bounds"))
    assert f"{2039e9 / read:,.1f} tok/s" in layer                          # the layer-split figure, 14.8
    # TTFT: 8 GPUs' FLOPS too: 2 x matmul params x 128 / (8 x 312 TFLOPS), or one read over 8 GPUs' bandwidth
    matmul = (68.98e9 - 32000 * 8192)
    assert p.ttft_ms_lower_bound == approx(max(2 * matmul * 128 / (8 * 312e12), (read - 2 * 80 * 8 * 128 * 2 * 128)
                                               / (8 * 2039e9)) * 1000, 1e-3)
    # one GPU: nothing to split, same bound as before
    one = plan_for("pytorch", {"name": "llama-2-7b", "precision": "bf16"},
                   {"gpu_vendor": "nvidia", "gpu_model": "A100 80GB", "gpu_count": 1})
    assert one.parallelism is None and not any(a.startswith("Speed bounds") for a in one.assumptions)

"""The model and accelerator catalogues: big enough, each entry planned from its real architecture, and the
formulas for KV per token by attention kind checked against the architecture arithmetic the issue names.

Published start-up figures (vLLM / llama.cpp KV-cache log lines) are checked in test_published_kv.py."""
import json
import statistics

import pytest

from advisor.inputs.answers import ModelBlock, parse_answers
from advisor.knowledge.load import load_knowledge
from advisor.knowledge.shapes import params
from advisor.planner import find_gpu, make_plan
from advisor.planner.spec import generic, known_spec, resolve_model

K = load_knowledge()
MODELS = K.models.models


def test_the_catalogues_cover_what_people_deploy():
    assert len(MODELS) >= 120 and len(K.gpus.gpus) >= 45
    ids = {m.id for m in MODELS}
    for want in ("llama-3.1-405b", "llama-3.2-3b", "llama-3.3-70b", "qwen3-235b-a22b", "qwen2.5-vl-7b", "deepseek-v3",
                 "deepseek-r1", "gpt-oss-20b", "gpt-oss-120b", "phi-3.5-mini", "phi-4", "gemma-3-27b", "kimi-k2",
                 "whisper-large-v3", "bge-large-en-v1.5", "resnet-50", "flan-t5-xxl", "mixtral-8x22b"):
        assert want in ids, want
    modalities = {m.modality for m in MODELS}
    assert modalities == {"text", "vision-language", "speech", "embedding", "vision"}
    gpus = {g.id for g in K.gpus.gpus}
    for want in ("v100-sxm2-32gb", "b200", "gh200", "rtx-3060", "dgx-spark", "jetson-agx-orin-64gb", "rx-7900-xtx",
                 "mi355x", "gaudi3", "arc-b580", "snapdragon-x-elite"):
        assert any(g.startswith(want) for g in gpus), want


@pytest.mark.parametrize("name", ["deepseek-v3", "qwen3-235b-a22b", "llama-3.1-405b", "gpt-oss-120b", "phi-3.5-mini",
                                  "qwen2.5-vl-7b", "whisper-large-v3", "bge-large-en-v1.5", "llama-3.2-3b",
                                  "Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B-Instruct"])
def test_the_names_refused_before_resolve_now(name):
    spec = resolve_model(ModelBlock(name=name), K)
    assert spec.id is not None and not spec.approximate


@pytest.mark.parametrize("m", MODELS, ids=[m.id for m in MODELS])
def test_every_catalogue_entry_loads_and_plans(m):
    p = params(m)
    if m.architecture != "cnn":
        assert abs(p.total / 1e9 - m.params_b) <= 0.03 * m.params_b
    a = parse_answers({"model": {"name": m.id, "context_tokens": min(4096, m.max_context) if m.max_context >= 128
                                 else 128},
                       "hardware": {"gpu_vendor": "nvidia", "gpu_model": "H100 SXM", "gpu_count": 8}})
    plan = make_plan(a, None, K)
    assert plan.model.id == m.id and plan.model.modality == m.modality
    for e, ep in plan.engines.items():
        assert ep.weights_gib > 0, e
        if m.architecture in ("encoder", "cnn"):
            assert ep.kv_bytes_per_token == 0
        else:
            assert ep.kv_bytes_per_token > 0, e


def _dense():
    return [m for m in MODELS if m.architecture == "decoder-only" and not m.moe_experts and not m.kv_lora_rank
            and m.modality == "text"]


def test_the_generic_sketch_on_the_catalogues_dense_models():
    """Parameters within 5 % on every dense text decoder; KV per token within 2x on most GQA ones (the rest have
    2-4 KV heads where the sketch assumes 8, or head_dim 256); an MHA model holds several times more than the sketch."""
    rows = []
    for m in _dense():
        g, real = generic(m.params_b, "decoder-only", K), known_spec(m)
        rows.append((m.id, params(g).total / 1e9 / m.params_b, g.kv_elements_per_token / real.kv_elements_per_token,
                     m.kv_heads == m.attention_heads))
        assert g.attention_heads % g.kv_heads == 0 and g.hidden_size == g.attention_heads * g.head_dim
        if m.params_b >= 7:
            assert (g.kv_heads, g.head_dim) == (8, 128) and g.attention_heads % 8 == 0, m.id
    assert len(rows) >= 50
    assert all(abs(r[1] - 1) < 0.05 for r in rows)
    gqa = [max(r[2], 1 / r[2]) for r in rows if not r[3]]
    assert statistics.median(gqa) <= 1.3
    assert sum(x <= 2 for x in gqa) >= 0.8 * len(gqa)
    assert max(gqa) <= 4.5


def test_a_405b_model_splits_over_two_nodes_in_vllm_and_tensorrt_llm():
    a = parse_answers({"concurrency": 16, "model": {"name": "llama-3.1-405b", "precision": "bf16",
                                                    "context_tokens": 8192},
                       "hardware": {"gpu_vendor": "nvidia", "gpu_model": "H100 SXM", "nodes": 2, "gpus_per_node": 8,
                                    "interconnect": "infiniband"}})
    plan = make_plan(a, None, K)
    for e in ("vllm", "tensorrt-llm"):
        p = plan.engines[e]
        assert p.loads and p.fits, e
        assert (p.tensor_parallel, p.pipeline_parallel, p.gpus_used) == (8, 2, 16)
        assert "pipeline parallel over 2 nodes" in p.parallelism
        assert abs(p.kv_bytes_per_token - 2 * 126 * 8 * 128 * 2) <= 0.02 * 2 * 126 * 8 * 128 * 2
    # an engine that cannot span nodes plans on one node and says so
    assert plan.engines["llama.cpp"].gpus_used == 8
    assert any("does not span nodes" in x for x in plan.engines["pytorch"].assumptions)


def _plan(name, engine, ctx=32768, **hw):
    hw = hw or {"gpu_vendor": "nvidia", "gpu_model": "H200", "gpu_count": 8}
    a = parse_answers({"model": {"name": name, "precision": "bf16", "context_tokens": ctx}, "hardware": hw})
    return make_plan(a, None, K).engines[engine]


def test_mla_is_a_latent_where_the_engine_runs_it_and_expanded_where_not():
    v, t = _plan("deepseek-v3", "vllm"), _plan("deepseek-v3", "pytorch")
    assert (v.kv_attention, v.kv_bytes_per_token) == ("mla", 61 * (512 + 64) * 2)        # 70,272 B
    assert (t.kv_attention, t.kv_bytes_per_token) == ("mla-expanded", 61 * 128 * (128 + 64 + 128) * 2)
    assert t.kv_bytes_per_token / v.kv_bytes_per_token > 50
    # tensor parallel keeps the latent on every rank: 8 copies on TP 8
    assert v.kv_gib == pytest.approx(70_272 * 8 * 32768 / 2**30, abs=1e-3)
    assert any("held 8×" in x for x in v.assumptions)


def test_sliding_window_layers_hold_at_most_their_window():
    g = _plan("gemma-3-27b", "vllm", ctx=65536, gpu_vendor="nvidia", gpu_model="H100 SXM", gpu_count=1)
    full, window = 2 * 16 * 128 * 2, 1024  # per layer per token: 16 KV heads x 128 x K,V x 2 B
    assert g.kv_bytes_per_token == int((10 * full * 65536 + 52 * full * window) / 65536)
    assert g.kv_window_tokens == 1024
    o = _plan("gpt-oss-120b", "vllm", ctx=131072, gpu_vendor="nvidia", gpu_model="H100 SXM", gpu_count=1)
    per = 2 * 8 * 64 * 2
    assert o.kv_bytes_per_token == int((18 * per * 131072 + 18 * per * 128) / 131072)
    # an engine whose docs do not settle it counts the windowed layers in full
    assert _plan("gemma-3-27b", "onnxruntime", ctx=65536).kv_bytes_per_token >= g.kv_bytes_per_token


def _deepseek_config(m, architecture: str, model_type: str, **extra) -> dict:
    """A DeepSeek-shaped (MLA, MoE) config.json written from a catalogue entry's shapes."""
    return {"architectures": [architecture], "model_type": model_type, "hidden_size": m.hidden_size,
            "num_hidden_layers": m.layers, "num_attention_heads": m.attention_heads,
            "num_key_value_heads": m.kv_heads, "intermediate_size": m.intermediate_size,
            "moe_intermediate_size": m.moe_intermediate_size, "n_routed_experts": m.moe_experts,
            "n_shared_experts": m.moe_shared_experts, "num_experts_per_tok": m.moe_active_experts,
            "first_k_dense_replace": m.layers - m.moe_layers, "kv_lora_rank": m.kv_lora_rank,
            "q_lora_rank": m.q_lora_rank, "qk_rope_head_dim": m.qk_rope_head_dim,
            "qk_nope_head_dim": m.qk_nope_head_dim, "v_head_dim": m.v_head_dim, "vocab_size": m.vocab_size,
            "max_position_embeddings": m.max_context, "tie_word_embeddings": False, **extra}


def test_a_config_json_alone_plans_the_same_model_as_the_catalogue(tmp_path):
    m = next(x for x in MODELS if x.id == "deepseek-v3")
    cfg = _deepseek_config(m, "DeepseekV3ForCausalLM", "deepseek_v3", torch_dtype="bfloat16")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    spec = resolve_model(ModelBlock(path=str(path)), K)
    assert spec.params_b == pytest.approx(m.params_b, rel=0.01)
    assert spec.active_params_b == pytest.approx(m.active_params_b, rel=0.05)
    assert spec.kv_lora_rank == 512 and spec.moe_layers == m.moe_layers and not spec.approximate


def test_every_accelerator_is_found_by_its_names():
    for g in K.gpus.gpus:
        for name in (g.id, g.name, *g.aliases):
            assert find_gpu(name, K).id == g.id, (name, g.id)
        assert (g.compute_capability is not None) == (g.vendor == "nvidia")
    assert find_gpu("Tesla V100-SXM2-32GB", K).compute_capability == "7.0"
    assert find_gpu("NVIDIA GB10", K).unified_memory


def _p(answers):
    return make_plan(parse_answers(answers), None, K)


def test_adding_gpus_on_one_node_stays_tensor_parallel():
    plan = _p({"model": {"name": "llama-3.1-70b", "precision": "fp16"},
               "hardware": {"gpu_vendor": "nvidia", "gpu_model": "RTX 4090", "gpu_count": 1, "ram_gb": 64}})
    opts = [o for o in plan.engines["vllm"].options if o.kind == "add_gpus"]
    assert opts and all("pipeline" not in o.text for o in opts)
    assert any(o.kind == "add_gpus" for o in plan.engines["pytorch"].options)  # a layer split finds its GPU count


def test_tensor_parallel_keeps_kv_heads_whole():
    """vLLM's QKVParallelLinear needs kv_heads % tp == 0 or tp % kv_heads == 0: Phi-4 (40 heads, 10 KV) is TP 2."""
    p = _p({"model": {"name": "phi-4"}, "hardware": {"gpu_vendor": "nvidia", "gpu_model": "H100 SXM", "gpu_count": 8}})
    assert p.engines["vllm"].tensor_parallel == 2 and p.engines["llama.cpp"].tensor_parallel == 1


def test_no_more_than_4096_gpus_in_all():
    from advisor.inputs.answers import AnswersError

    with pytest.raises(AnswersError, match="at most 4096"):
        parse_answers({"hardware": {"gpu_vendor": "nvidia", "nodes": 100, "gpus_per_node": 64}})


def test_the_shorter_context_offered_for_a_sliding_window_model_really_fits():
    # Mistral 7B v0.1: every layer keeps a 4096-token window, 131,072 B per token. 14 users whose typical request
    # (7936 in + 256 out = 8192 tokens) fills its window hold 0.5 GiB each: 14 x 0.5 = 7 GiB against the 6.83 GiB
    # left after weights (13.486) and overhead (1.281) of 21.6, so it does not fit. One long request beside 13 at
    # their window would get (6.833 - 6.5) GiB / 131,072 B = 2,729 tokens, below the typical length, so all 14 are cut
    # alike: 6.833 GiB / 14 / 131,072 B = 3,998 tokens each, below the window (every layer grows).
    a = {"concurrency": 14, "model": {"name": "mistral-7b", "precision": "fp16", "context_tokens": 32768,
                                      "input_tokens": 7936, "output_tokens": 256},
         "hardware": {"gpu_vendor": "nvidia", "gpu_model": "RTX 4090", "gpu_count": 1}}
    p = _p(a).engines["vllm"]
    assert p.fits is False and p.typical_tokens == 8192 and p.kv_window_tokens == 4096
    free = 24 * 0.9 - 7.24e9 * 2 / 2**30 - (1.0 + 2048 * (4096 + 14336) * 2 * 4 / 2**30)  # 6.833 GiB
    assert p.available_gib - p.weights_gib - p.overhead_gib == pytest.approx(free, abs=2e-3)
    assert p.kv_gib == pytest.approx(14 * 4096 * 131_072 / 2**30, abs=2e-3)  # each sequence held at its window
    assert p.max_concurrency == int(free // 0.5) == 13
    (opt,) = [o for o in p.options if o.kind == "reduce_context"]
    assert opt.context_tokens == int(free * 2**30 / 14 // 131_072) == 3998
    # the offer is "cut the context to 3,998 tokens at 14 concurrent": at that context each request is cut to it
    a["model"]["context_tokens"] = opt.context_tokens
    assert _p(a).engines["vllm"].fits
    a["concurrency"] = opt.concurrency
    assert _p(a).engines["vllm"].fits


def test_the_concurrency_curve_counts_tp_copies_and_windows():
    from advisor.planner.capacity import concurrency_curve

    # The curve counts full-context sequences at each power of two; max concurrency counts typical requests. They
    # agree where the typical request is the curve's context: the whole context (its input = context - 256, plus
    # 256 out), or 1024 tokens (768 in + 256 out). DeepSeek-V3: the MLA latent sits on each of the 8 TP ranks.
    # Gemma 3: 5 of 6 layers keep a 1024-token window.
    for answers, top in (
            ({"concurrency": 32, "model": {"name": "deepseek-v3", "precision": "fp8", "context_tokens": 32768},
              "hardware": {"gpu_vendor": "amd", "gpu_model": "MI300X", "gpu_count": 8}}, 163840),
            ({"concurrency": 4, "model": {"name": "gemma-3-27b", "context_tokens": 65536},
              "hardware": {"gpu_vendor": "nvidia", "gpu_model": "H100 SXM", "gpu_count": 1}}, 131072)):
        ctx = answers["model"]["context_tokens"]
        whole = _p({**answers, "model": {**answers["model"], "input_tokens": ctx - 256, "output_tokens": 256}})
        short = _p({**answers, "model": {**answers["model"], "input_tokens": 768, "output_tokens": 256}})
        w, s = whole.engines["vllm"], short.engines["vllm"]
        assert (w.typical_tokens, s.typical_tokens) == (ctx, 1024)
        assert dict(concurrency_curve(w, top))[ctx] == w.max_concurrency
        assert dict(concurrency_curve(s, top))[1024] == s.max_concurrency
    p = _p({"concurrency": 32, "model": {"name": "deepseek-v3", "precision": "fp8", "context_tokens": 32768},
            "hardware": {"gpu_vendor": "amd", "gpu_model": "MI300X", "gpu_count": 8}}).engines["vllm"]
    # the mixed prompt mix (1024 + 256 = 1280 tokens): latent (512 + 64) x 61 layers x 2 B (the engine's 16-bit KV),
    # one copy on each of the 8 ranks, per token
    per_tok = (512 + 64) * 61 * 2 * 8
    assert p.kv_full_bytes_per_token == per_tok == 562_176 and p.kv_bytes_per_token == per_tok // 8
    free = (p.available_gib - p.weights_gib - p.overhead_gib) * 2**30
    assert p.typical_tokens == 1280 and p.max_concurrency == int(free // (per_tok * 1280))
    assert dict(concurrency_curve(p, 163840))[32768] == int(free // (per_tok * 32768)) < p.max_concurrency


@pytest.mark.parametrize("extra,needle", [
    ({"num_local_experts": 4, "num_experts_per_tok": 64}, "num_experts_per_tok"),
    ({"sliding_window": 4096, "layer_types": ["sliding_attention"] * 20000}, "layer_types"),
])
def test_impossible_config_values_are_one_line(tmp_path, extra, needle):
    from advisor.planner.spec import ModelSpecError

    cfg = {"hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 16, "vocab_size": 32000, **extra}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelSpecError, match=needle):
        resolve_model(ModelBlock(path=str(tmp_path / "config.json")), K)


def test_all_dense_layers_is_not_moe(tmp_path):
    cfg = {"hidden_size": 2048, "num_hidden_layers": 4, "num_attention_heads": 16, "vocab_size": 32000,
           "n_routed_experts": 8, "num_experts_per_tok": 2, "first_k_dense_replace": 4}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert resolve_model(ModelBlock(path=str(tmp_path / "config.json")), K).moe_experts is None


def test_a_config_name_cannot_carry_control_characters(tmp_path):
    cfg = {"hidden_size": 2048, "num_hidden_layers": 4, "num_attention_heads": 16, "vocab_size": 32000,
           "_name_or_path": "evil\x1b[2J\x1b]0;pwned\x07\nFAKE"}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    name = resolve_model(ModelBlock(path=str(tmp_path / "config.json")), K).name
    assert name.isprintable() and "\n" not in name and "FAKE" in name


# (catalogue id, the config.json aiconfigurator-core ships for it): the late-2026 MoE models people deploy
SHIPPED_CONFIGS = [("deepseek-v3.2", "deepseek-ai--DeepSeek-V3.2"), ("kimi-k2.5", "moonshotai--Kimi-K2.5"),
                   ("minimax-m2.5", "MiniMaxAI--MiniMax-M2.5")]


@pytest.mark.parametrize("mid,config", SHIPPED_CONFIGS, ids=[m for m, _ in SHIPPED_CONFIGS])
def test_an_entry_read_from_a_shipped_config_json_matches_that_file(mid, config):
    """The entry's shapes are the ones its config.json states (the copy the installed aiconfigurator-core ships,
    which the entry names as read): a mistyped width, head or expert count fails here, not in a user's plan."""
    import importlib.util
    from pathlib import Path

    found = importlib.util.find_spec("aiconfigurator_core")
    if found is None:  # (it is in requirements.txt; a trimmed install lacks it)
        pytest.skip("aiconfigurator-core is not installed")
    path = Path(found.origin).parent / "model_configs" / f"{config}_config.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    cfg = raw.get("text_config") or raw
    m = next(x for x in MODELS if x.id == mid)
    assert m.hf_architecture == raw["architectures"][0]
    assert (m.layers, m.hidden_size, m.attention_heads, m.kv_heads) == (
        cfg["num_hidden_layers"], cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"])
    assert m.moe_experts == (cfg.get("n_routed_experts") or cfg.get("num_local_experts"))
    assert m.moe_active_experts == cfg["num_experts_per_tok"]
    assert m.moe_intermediate_size == cfg.get("moe_intermediate_size", cfg["intermediate_size"])
    assert m.moe_shared_experts == cfg.get("n_shared_experts", 0)
    assert m.moe_layers in (None, cfg["num_hidden_layers"] - cfg.get("first_k_dense_replace", 0))
    assert (m.vocab_size, m.max_context, m.tied_embeddings) == (
        cfg["vocab_size"], cfg["max_position_embeddings"], cfg.get("tie_word_embeddings", False))
    if m.kv_lora_rank:
        assert (m.kv_lora_rank, m.q_lora_rank, m.qk_rope_head_dim, m.qk_nope_head_dim, m.v_head_dim) == (
            cfg["kv_lora_rank"], cfg["q_lora_rank"], cfg["qk_rope_head_dim"], cfg["qk_nope_head_dim"],
            cfg["v_head_dim"])
    else:
        assert m.head_dim == cfg["head_dim"]
    assert m.index_head_dim == cfg.get("index_head_dim")  # DeepSeek Sparse Attention's indexer (its own key cache)
    assert (m.index_topk, m.index_n_heads) == (cfg.get("index_topk"), cfg.get("index_n_heads"))  # its picks, heads
    # and the names people paste resolve to it, not to a generic stand-in
    for name in m.aliases:
        spec = resolve_model(ModelBlock(name=name), K)
        assert spec.id == mid and not spec.approximate, name


def test_a_sparse_attention_indexers_key_cache_is_counted_in_the_kv(tmp_path):
    """DeepSeek-V3.2: each of the 61 layers keeps, beside MLA's 576-element latent, its indexer's key of 128 FP8
    elements with one FP32 scale (132 B, vLLM's DeepseekV32IndexerCache), whatever the KV dtype: 61 x (576 x 2 + 132)
    bytes per token at 16 bits, 61 x (576 + 132) at FP8; DeepSeek-V3, without an indexer, holds the latent alone.
    Its config.json alone plans the same KV."""
    def kv(name: str, dtype: str = "auto") -> int:
        a = parse_answers({"model": {"name": name, "precision": "fp8", "context_tokens": 32768,
                                     "kv_cache_dtype": dtype},
                           "hardware": {"gpu_vendor": "nvidia", "gpu_model": "H200", "gpu_count": 8}})
        return make_plan(a, None, K).engines["vllm"].kv_bytes_per_token

    assert kv("deepseek-v3.2") == 61 * (576 * 2 + 132)  # 78,324 B
    assert kv("deepseek-v3.2", "fp8") == 61 * (576 + 132)
    assert kv("deepseek-v3") == 61 * 576 * 2
    m = next(x for x in MODELS if x.id == "deepseek-v3.2")
    cfg = _deepseek_config(m, "DeepseekV32ForCausalLM", "deepseek_v32", index_head_dim=128, index_n_heads=64,
                           index_topk=2048)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    read = resolve_model(ModelBlock(path=str(path)), K)
    assert (read.index_head_dim, read.index_topk, read.index_n_heads) == (128, 2048, 64)


def test_sparse_attention_reads_the_indexers_keys_of_every_token_and_the_latent_of_its_picks_only():
    """A decoding DeepSeek-V3.2 query reads its indexer's keys (132 B per layer) for every token held and MLA's
    latent for the 2,048 tokens the indexer picks: at 100,000 tokens held, 8,052 + 70,272 x 2,048 / 100,000 B per
    token held, an eighth of the whole cache; at 2,048 or fewer, all of it. DeepSeek-V3 reads all of it."""
    def hw(name: str):
        from advisor.planner import resolve_model, workload_for
        from advisor.planner.capacity import _Calc
        from advisor.planner.target import build_target

        a = parse_answers({"concurrency": 128, "model": {"name": name, "precision": "fp8", "context_tokens": 131072},
                           "hardware": {"gpu_vendor": "nvidia", "gpu_model": "H200", "gpu_count": 8}})
        spec = resolve_model(a.model, K, read_files=False)
        c = _Calc("vllm", spec, build_target(a, None, K, None), workload_for(a, K), K, "en")
        return c.serving_hw(), c.kv_copies

    v32, copies = hw("deepseek-v3.2")
    idx, whole = 61 * 132 * copies, 61 * (576 * 2 + 132) * copies
    assert (v32.kv_topk, v32.kv_index_per_token, v32.kv_per_token) == (2048, idx, whole)
    assert v32.index_attn_flops == 61 * 64 * 128  # the indexer's scores of a prompt's pairs
    assert v32.kv_read_per_token(2048) == v32.kv_read_per_token(1000) == whole
    assert v32.kv_read_per_token(100_000) == pytest.approx(idx + (whole - idx) * 2048 / 100_000)
    assert v32.kv_read_per_token(100_000) < whole / 8
    v3, _ = hw("deepseek-v3")
    assert (v3.kv_topk, v3.kv_read_per_token(100_000), v3.index_attn_flops) == (0, v3.kv_per_token, 0.0)
    for lang in ("en", "zh"):  # and the KV assumption says so
        a = parse_answers({"model": {"name": "deepseek-v3.2", "precision": "fp8", "context_tokens": 32768},
                           "hardware": {"gpu_vendor": "nvidia", "gpu_model": "H200", "gpu_count": 8}})
        text = " ".join(make_plan(a, None, K, lang=lang).engines["vllm"].assumptions)
        assert K.s("plan_a_kv_sparse_read", lang, topk="2,048") in text

"""KV cache per token by attention kind, against published figures: the DeepSeek-V3 paper's table, an SGLang and
an ik_llama.cpp allocation line for the 61-layer MLA models, a vLLM "needed" line for DeepSeek-V2-Lite, and llama.cpp
allocations for sliding-window models (gpt-oss-120b, Gemma-3-270M).

Not used, and why: vLLM's "GPU KV cache size: N tokens" for hybrid (sliding-window) models counts every token as if
all layers held it up to v0.19 and is max_concurrency x max_model_len later (vllm#40691, vllm#51041), so dividing
the two log numbers does not give bytes per token; the Gemma 3 report's Table 3 (18.7 GB of KV for 27B at 32k)
matches all layers at full length, not its own 5:1 sliding layout."""
import pytest

from advisor.inputs.answers import parse_answers
from advisor.knowledge.load import load_knowledge
from advisor.planner import make_plan

K = load_knowledge()
GIB, MIB = 2**30, 2**20


def plan(name, engine, ctx=4096, conc=1, kv="auto", hw=None):
    hw = hw or {"gpu_vendor": "nvidia", "gpu_model": "H200", "gpu_count": 8}
    a = parse_answers({"concurrency": conc, "model": {"name": name, "precision": "bf16", "context_tokens": ctx,
                                                      "kv_cache_dtype": kv}, "hardware": hw})
    return make_plan(a, None, K).engines[engine]


@pytest.mark.parametrize("name,published", [
    ("deepseek-v3", 70_272), ("qwen2.5-72b", 327_680), ("llama-3.1-405b", 516_096)])
def test_the_deepseek_v3_papers_kv_table(name, published):
    """arXiv 2505.09343 (ISCA '25) Table 1, KV cache per token in BF16: 70.272 / 327.680 / 516.096 KB."""
    assert plan(name, "vllm").kv_bytes_per_token == published


def test_sglang_allocates_the_mla_latent_on_every_tp_rank():
    """Kimi-K2.5 (the DeepSeek-V3 MLA shape), SGLang TP 8 on MI355X: 'KV Cache is allocated. #tokens: 2454421,
    KV size: 160.63 GB' on each rank (github.com/ajith-sirra-amd/Issues, Kimi-K2.5-MI355X-SGLANG-ERROR.md)."""
    p = plan("kimi-k2", "vllm", hw={"gpu_vendor": "amd", "gpu_model": "MI355X", "gpu_count": 8})
    assert p.kv_attention == "mla"
    assert p.kv_bytes_per_token * 2_454_422 / GIB == pytest.approx(160.63, abs=0.01)
    assert any("held 8×" in x for x in p.assumptions)  # one copy per rank, as the log shows on TP0..TP7


def test_llama_cpp_q8_0_latent_for_deepseek_671b():
    """ik_llama.cpp PR #259: 'KV self size = 1166.62 MiB, c^KV (q8_0)' at n_ctx_slot 32768 (61 layers x 576 x 34/32 B)."""
    p = plan("deepseek-r1", "llama.cpp", ctx=32768, kv="int8")
    assert p.kv_cache_dtype == "int8" and p.kv_attention == "mla"
    assert p.kv_bytes_per_token * 32768 / MIB == pytest.approx(1166.62, abs=0.05)


def test_vllm_needs_the_latent_for_one_deepseek_v2_lite_sequence():
    """vllm#15871: 'To serve at least one request with the models's max seq len (32768), (0.95 GiB KV cache is needed'."""
    p = plan("deepseek-v2-lite", "vllm", ctx=32768, hw={"gpu_vendor": "nvidia", "gpu_model": "L4", "gpu_count": 1})
    assert p.kv_bytes_per_token == 27 * 576 * 2
    assert p.kv_gib == pytest.approx(0.95, abs=0.005)


def test_llama_cpp_sizes_gpt_oss_sliding_layers_at_window_plus_ubatch():
    """intel/AI-Playground#325, llama.cpp n_ctx 2000: non-SWA cache 70.88 MiB (2016 cells, 18 layers) and SWA cache
    22.50 MiB (640 cells = 128 window + 512 ubatch, 18 layers)."""
    p = plan("gpt-oss-120b", "llama.cpp", ctx=2016, hw={"gpu_vendor": "nvidia", "gpu_model": "H100 SXM", "gpu_count": 1})
    assert p.kv_window_tokens == 640
    assert p.kv_bytes_per_token * 2016 / MIB == pytest.approx(70.88 + 22.50, abs=0.05)


@pytest.mark.parametrize("conc,ctx,mib", [(1, 4096, 27.0), (2, 2048, 42.0), (1, 8192, 39.0)])
def test_llama_server_gemma3_270m_sliding_cache(conc, ctx, mib):
    """unsloth PR #5225: llama-server's own KV allocation for Gemma-3-270m, 27 / 42 / 39 MiB at (parallel 1, -c 4096),
    (parallel 2, -c 4096 = 2048 per slot), (parallel 1, -c 8192): 3 full layers grow with the context, 15 sliding
    layers hold 512 + 512 cells per sequence."""
    p = plan("gemma-3-270m", "llama.cpp", ctx=ctx, conc=conc,
             hw={"gpu_vendor": "nvidia", "gpu_model": "RTX 4090", "gpu_count": 1})
    assert p.kv_bytes_per_token * conc * ctx / MIB == pytest.approx(mib, abs=0.05)

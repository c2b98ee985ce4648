"""Each formula of README § "Capacity planner", alone, with numbers worked out by hand (GiB = 2**30).

The functions in advisor/planner/capacity.py take plain numbers; these tests need no knowledge files, except the
last ones, which check that the GGUF tables in knowledge/planner.yaml reproduce llama.cpp's own figures.
"""
from __future__ import annotations

import pytest

from advisor.planner import capacity as cap

GIB = 2**30


def approx(x: float, rel: float = 1e-9):
    return pytest.approx(x, rel=rel)


# ---------------------------------------------------------------- weights

def test_weights_bytes_is_params_times_bits_over_8():
    assert cap.weights_bytes(8.03e9, 16) == approx(16.06e9)                 # Llama-3.1-8B in BF16
    assert cap.weights_bytes(6.74e9, 8.5) == approx(7.16125e9)              # Llama-2-7B at Q8_0's 8.5 bits


def test_weights_bytes_keeps_the_embeddings_wide_when_asked():
    # AWQ int4 Llama-3.1-8B: 7.0e9 linear weights at 4.25 bits + 2 x 128256 x 4096 = 1.0507e9 embedding / LM head
    # weights at 16 bits = 3.7189e9 + 2.1014e9
    emb = 2 * 128256 * 4096
    assert cap.weights_bytes(8.03e9, 4.25, emb, 16) == approx((8.03e9 - emb) * 4.25 / 8 + emb * 2)
    # never more than half the model counted as embeddings
    assert cap.weights_bytes(1e9, 4, 3e9, 16) == approx(0.5e9 * 4 / 8 + 0.5e9 * 2)


def test_gguf_weights_per_tensor_kind():
    # SmolLM2-135M Q4_1 (tied): token_embd 49152 x 576 = 28,311,552 weights in Q8_0 (8.5 bits), the other
    # 106,203,456 in Q4_1 (5 bits): 30,081,024 + 66,377,160 = 96,458,184 B
    assert cap.gguf_weights_bytes(134_515_008, 28_311_552, 0, 5.0, 8.5, 6.5625) == 96_458_184
    # Llama-2-7B Q4_0 (untied): token_embd Q4_0, output Q6_K, 6.74e9 - 2 x 131,072,000 at 4.5 bits
    t = 32000 * 4096
    assert cap.gguf_weights_bytes(6.74e9, t, t, 4.5, 4.5, 6.5625) == approx(
        (6.74e9 - 2 * t) * 4.5 / 8 + t * 4.5 / 8 + t * 6.5625 / 8)               # 3.8253e9 B


def test_gguf_body_bits_from_the_whole_file_figure():
    # llama.cpp's table: Llama-3.1-8B Q4_K_M is 4.8944 bits per weight over 8.03e9 weights = 39.302e9 bits; less
    # token_embd (525,336,576 x 4.5 Q4_K) and output (x 6.5625 Q6_K) leaves 33.491e9 bits on 6.979e9 weights
    t = 128256 * 4096
    body = cap.gguf_body_bits(4.8944, 8.03e9, t, t, 4.5, 6.5625)
    assert body == approx((8.03e9 * 4.8944 - t * 4.5 - t * 6.5625) / (8.03e9 - 2 * t))
    assert 4.79 < body < 4.81
    # and the weights rebuilt from it are the whole-file figure again
    assert cap.gguf_weights_bytes(8.03e9, t, t, body, 4.5, 6.5625) == approx(8.03e9 * 4.8944 / 8)


def test_gguf_types_of_the_embedding_and_output_tensors():
    from advisor.knowledge.load import load_knowledge

    pl = load_knowledge().planner
    types, fb = pl.gguf_types, pl.gguf_fallback
    # Llama (width 4096): Q4_K_M writes token_embd Q4_K and output Q6_K
    assert cap.gguf_kind_types("q4_k", "q4_k", "q6_k", 4096, False, types, fb) == ("q4_k", "q6_k")
    # a Q8_0 file keeps its output in Q8_0
    assert cap.gguf_kind_types("q8_0", "q8_0", "q8_0", 4096, False, types, fb) == ("q8_0", "q8_0")
    # SmolLM2 (width 576, tied): Q6_K does not divide 576 -> Q8_0, and the tied embedding is the output
    assert cap.gguf_kind_types("q4_1", "q4_1", "q6_k", 576, True, types, fb) == ("q8_0", "q8_0")
    # width 576 with a k-quant base: 576 % 256 != 0 -> the output goes Q8_0, token_embd Q4_K -> Q5_0
    assert cap.gguf_kind_types("q4_k", "q4_k", "q6_k", 576, False, types, fb) == ("q5_0", "q8_0")
    # a row no fallback divides (width 100) is written in F16
    assert cap.gguf_fit("q4_k", 100, types, fb) == "f16"


def test_active_weight_bytes_reads_only_active_experts_less_the_lookup():
    # Mixtral: 93.4e9 B resident, 12.9 / 46.7 active, less the 32000 x 4096 x 2 B embedding lookup
    assert cap.active_weight_bytes(93.4e9, 12.9 / 46.7, 32000 * 4096 * 2) == approx(
        93.4e9 * 12.9 / 46.7 - 262_144_000)
    # never below 5 % of the weights
    assert cap.active_weight_bytes(1e9, 0.01, 0) == approx(0.05e9)


# ---------------------------------------------------------------- KV cache

def test_kv_bytes_per_token():
    assert cap.kv_bytes_per_token(32, 8, 128, 2) == 131_072       # Llama-3-8B, GQA 8 KV heads, fp16
    assert cap.kv_bytes_per_token(32, 8, 128, 1) == 65_536        # FP8: half
    assert cap.kv_bytes_per_token(32, 8, 128, 1.0625) == 69_632   # llama.cpp q8_0: 34 bytes per 32 values
    assert cap.kv_bytes_per_token(32, 32, 128, 2) == 524_288      # Llama-2-7B, MHA


def test_kv_gib():
    assert cap.kv_gib(131_072, 32, 8192) == 32.0                  # 131,072 x 32 x 8192 / 2^30


# ---------------------------------------------------------------- overhead

def test_gpu_runtime_gib():
    # vLLM on 2 H100 80GB: max(1, 0.02 x 80) per GPU + 0.25 for the second rank
    assert cap.gpu_runtime_gib(1.0, 0.02, 80, 2, 0.25) == approx(1.6 * 2 + 0.25)
    assert cap.gpu_runtime_gib(1.0, 0.02, None, 1, 0.25) == 1.0  # memory unknown: the fixed part


def test_cpu_runtime_gib():
    assert cap.cpu_runtime_gib(0.04, 2, 1.5) == approx(1.54)      # ORT GenAI keeps a second copy of the weights
    assert cap.cpu_runtime_gib(0.25, 1, 10) == 0.25


def test_activation_and_overhead_gib():
    # vLLM, Llama-3.1-8B: a 2048-token chunk, 1 logit row: 2048 x (4096 + 14336) x 2 x 4 B = 0.28125 GiB
    assert cap.activation_gib(2048, 1, 128256, 4096, 14336) == approx(2048 * 18432 * 2 * 4 / GIB)
    # llama.cpp: fp32 logits for all 512 ubatch tokens win: 512 x 128256 x 4 B
    assert cap.activation_gib(512, 512, 128256, 4096, 14336) == approx(512 * 128256 * 4 / GIB)
    assert cap.overhead_gib(0.3, 512, 512, 128256, 4096, 14336) == approx(0.3 + 512 * 128256 * 4 / GIB)


# ---------------------------------------------------------------- available, offload, concurrency

def test_available_gib():
    assert cap.available_gib(40, 0.9) == 36.0                     # vLLM gpu_memory_utilization
    assert cap.available_gib(160, 0.9, "free_after_load", 40) == approx(40 + 0.9 * 120)  # TensorRT-LLM
    assert cap.available_gib(30, 0.9, "free_after_load", 40) == 30  # weights alone do not fit


def test_layers_in_ram():
    # 20 GiB of room, 1.7 GiB per layer: 11 layers on the GPU, 69 of 80 in RAM
    assert cap.layers_in_ram(20, 1.7, 80) == 69
    assert cap.layers_in_ram(-1, 1.7, 80) == 80
    assert cap.layers_in_ram(500, 1.7, 80) == 0


def test_tensor_parallel_size():
    assert cap.tensor_parallel_size(8, 64, [1, 2, 4, 8, 16]) == 8
    assert cap.tensor_parallel_size(6, 64, [1, 2, 4, 8, 16]) == 4
    assert cap.tensor_parallel_size(8, 14, [1, 2, 4, 8, 16]) == 2   # 14 heads: 4 and 8 do not divide


def test_max_sequences_and_context():
    # 20 GiB free, 131,072 B per token: 20 // 0.5 GiB per 4096-token sequence = 40
    assert cap.max_sequences(20, 131_072, 4096) == 40
    assert cap.max_sequences(-1, 131_072, 4096) == 0
    assert cap.max_sequences(20, 0, 4096) is None                  # no KV (an encoder)
    assert cap.max_context_tokens(1, 131_072, 2, 131_072) == 4096  # 1 GiB / (2 x 131,072 B)
    assert cap.max_context_tokens(100, 131_072, 1, 8192) == 8192   # capped at the model's window


# ---------------------------------------------------------------- bounds

def test_bytes_read_per_token_and_decode_bound():
    b = cap.bytes_read_per_token(15.01e9, 131_072, 1024)
    assert b == approx(15.01e9 + 134_217_728)
    assert cap.decode_bound(1555e9, b) == approx(1555e9 / b)       # ~102.7 tok/s


def test_offload_decode_bound():
    # 10 GB per token, a quarter of it in RAM at 50 GB/s, the rest at 1000 GB/s: 1 / (7.5 ms + 50 ms)
    assert cap.offload_decode_bound(10e9, 1000e9, 50e9, 0.25) == approx(1 / (0.0075 + 0.05))


def test_decode_total_bound_is_memory_or_compute_bound():
    # 8 sequences share one read of 15e9 B of weights; each reads its own 134 MB of KV
    mem = 8 * 1555e9 / (15e9 + 8 * 131_072 * 1024)
    assert cap.decode_total_bound(8, 1555e9, 15e9, 131_072, 1024, None, 7.5e9) == approx(mem)
    # 312 TFLOPS / (2 x 7.5e9) = 20,800 tok/s caps a batch of 1000
    assert cap.decode_total_bound(1000, 1555e9, 15e9, 0, 0, 312e12, 7.5e9) == approx(20_800)


def test_ttft_bound_is_compute_or_one_weight_read():
    # 2 x 7.5e9 x 1024 / 312e12 = 49.2 ms > 15e9 B / 1555e9 B/s = 9.6 ms
    assert cap.ttft_bound(7.5e9, 1024, 312e12, 15e9, 1555e9) == approx(2 * 7.5e9 * 1024 / 312e12 * 1000)
    # a 5-token prompt is a weight read: 15e9 / 1555e9 s
    assert cap.ttft_bound(7.5e9, 5, 312e12, 15e9, 1555e9) == approx(15e9 / 1555e9 * 1000)
    assert cap.ttft_bound(7.5e9, 5, 312e12, 15e9, None) == approx(2 * 7.5e9 * 5 / 312e12 * 1000)

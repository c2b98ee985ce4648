"""What the planner reads at the edge: model files, the model table, this CPU; and the probe comparison.

The last test runs the real llama.cpp probe on the bundled model and holds the planner to it: memory within
15% of the measured peak RSS, and the measured decode rate below the bandwidth roofline.
"""
from __future__ import annotations

import json
import math
import struct

import pytest

from advisor.answers import ModelBlock
from advisor.hardware import detect
from advisor.knowledge import load_knowledge
from advisor.planner import machine_bench
from advisor.planner.probe_check import check_probe
from advisor.planner.spec import ModelSpecError, read_model_path, resolve_model
from probes.models import default_model
from probes.result import ProbeSettings
from probes.runner import run_probe

K = load_knowledge()


def test_bundled_gguf_header_gives_the_exact_architecture():
    spec = resolve_model(ModelBlock(path=str(default_model())), K)
    # SmolLM2-135M config.json: 30 layers, hidden 576, 9 heads, 3 KV heads, head_dim 64, vocab 49152
    assert (spec.layers, spec.hidden_size, spec.attention_heads, spec.kv_heads, spec.head_dim, spec.vocab_size) == (
        30, 576, 9, 3, 64, 49152)
    assert spec.params_b * 1e9 == 134_515_008            # summed tensor shapes, not a formula
    assert spec.file_precision == "q4_1" and spec.weights_bytes == default_model().stat().st_size
    assert spec.kv_elements_per_token * 2 == 23_040        # 2 x 30 x 3 x 64 x 2 B


def test_names_and_aliases_resolve_and_unknown_names_list_choices():
    assert resolve_model(ModelBlock(name="meta-llama/Meta-Llama-3-8B-Instruct"), K).id == "llama-3-8b"
    assert resolve_model(ModelBlock(name="Qwen2.5-7B"), K).kv_heads == 4
    with pytest.raises(ModelSpecError) as err:
        resolve_model(ModelBlock(name="llama-9-70b"), K)
    assert "llama-3-70b" in str(err.value) and "\n" not in str(err.value)


def _safetensors(path, tensors: dict[str, list[int]]):
    """A valid safetensors file (the reader checks shapes against byte offsets); the data is a sparse hole."""
    header, at = {}, 0
    for k, v in tensors.items():
        n = 2 * math.prod(v)
        header[k] = {"dtype": "F16", "shape": v, "data_offsets": [at, at + n]}
        at += n
    blob = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)) + blob)
        f.truncate(8 + len(blob) + at)


def test_hf_directory_reads_config_and_counts_safetensors_params(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({
        "num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 8, "num_key_value_heads": 2,
        "intermediate_size": 512, "vocab_size": 1000, "max_position_embeddings": 2048, "torch_dtype": "bfloat16"}))
    _safetensors(tmp_path / "model.safetensors", {"embed": [1000, 256], "w": [256, 512]})
    spec = read_model_path(tmp_path)
    assert spec.params_b * 1e9 == 1000 * 256 + 256 * 512
    assert (spec.layers, spec.kv_heads, spec.head_dim, spec.file_precision) == (4, 2, 32, "bf16")


def test_bad_model_paths_are_one_line_errors(tmp_path):
    (tmp_path / "x.gguf").write_bytes(b"NOPE" + b"\0" * 32)
    (tmp_path / "empty").mkdir()
    for p in (tmp_path / "missing.gguf", tmp_path / "x.gguf", tmp_path / "empty"):
        with pytest.raises(ModelSpecError) as err:
            read_model_path(p)
        assert "\n" not in str(err.value)
    trunc = tmp_path / "t.gguf"
    trunc.write_bytes(default_model().read_bytes()[:5000])  # header cut inside the vocabulary
    with pytest.raises(ModelSpecError, match="file ends inside the GGUF header"):
        read_model_path(trunc)


def test_machine_bench_measures_once_then_reads_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERENCE_ADVISOR_CACHE", str(tmp_path))
    assert machine_bench.cached() is None
    first = machine_bench.get()
    assert first.memory_bandwidth_gb_s > 0.5 and first.fp32_gflops > 0.5
    assert machine_bench.cache_path().is_file()
    monkeypatch.setattr(machine_bench, "measure", lambda: pytest.fail("measured twice"))
    assert machine_bench.get() == first


def test_llama_cpp_plan_matches_a_real_probe_on_the_bundled_model():
    res = run_probe(ProbeSettings(engine="llama.cpp", requests=4, max_tokens=16, prompt_mix="mixed"))
    assert res.ok, res.reason
    check = check_probe(res, K, detect(K), machine_bench.get())
    assert check is not None and check.memory_metric == "peak_rss_mb"
    # weights (the GGUF file) + KV for n_ctx=2048 + compute buffer touched by the longest prompt + runtime
    assert abs(check.memory_error_pct) <= 15, check.text
    assert check.decode_tps_measured < check.decode_tps_roofline, check.text
    assert 0 < check.roofline_pct < 100
    assert "%" in check.text and "tok/s" in check.text


def test_gguf_of_an_unlisted_type_plans_with_the_file_size(tmp_path):
    data = bytearray(default_model().read_bytes())
    key = b"general.file_type"
    at = data.index(key) + len(key)
    assert struct.unpack_from("<I", data, at)[0] == 4  # u32 value type
    struct.pack_into("<I", data, at + 4, 99)           # a file type the planner does not list
    f = tmp_path / "odd.gguf"
    f.write_bytes(bytes(data))
    spec = read_model_path(f)
    assert spec.file_precision == "gguf_file" and spec.tied_embeddings  # SmolLM2 has no output.weight
    from advisor.answers import parse_answers
    from advisor.planner import make_plan

    plan = make_plan(parse_answers({"model": {"path": str(f), "precision": "fp16"},
                                    "hardware": {"gpu_vendor": "none", "ram_gb": 16}}), None, K, spec=spec)
    lc = plan.engines["llama.cpp"]
    assert lc.precision == "gguf_file" and lc.weights_gib == pytest.approx(f.stat().st_size / 2**30, abs=1e-3)
    assert plan.engines["vllm"].precision == "fp16"  # the others convert to what was asked


def test_quantized_hf_directory_is_read_as_int4(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({
        "num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 8, "num_key_value_heads": 2,
        "intermediate_size": 512, "vocab_size": 1000, "tie_word_embeddings": False,
        "quantization_config": {"quant_method": "awq", "bits": 4}}))
    _safetensors(tmp_path / "model.safetensors", {"qweight": [256, 64]})  # packed int32: 8 weights each
    spec = read_model_path(tmp_path)
    assert spec.file_precision == "int4" and not spec.tied_embeddings
    assert spec.params_b * 1e9 > 256 * 64 * 8  # from the config, not the packed tensor shapes
    assert any("quantized checkpoint" in n for n in spec.notes)

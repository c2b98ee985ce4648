"""What the planner reads at the edge: model files, the model table, this CPU; and the probe comparison.

The last test runs the real llama.cpp probe on the bundled model and holds the planner to it: memory within
15% of the measured peak RSS, and the measured decode rate below the bandwidth roofline.
"""
from __future__ import annotations

import json
import os
import math
import struct
from pathlib import Path

import pytest

from advisor.evidence.probe_check import check_probe
from advisor.inputs.answers import ModelBlock
from advisor.inputs.hardware import detect
from advisor.knowledge.load import load_knowledge
from advisor.planner import machine_bench
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
    spec = resolve_model(ModelBlock(name="llama-9-70b", params_b=70), K)
    assert spec.unknown_name and spec.approximate and spec.params_b == 70 and "llama-3-70b" in spec.suggestions
    assert spec.name == "llama-9-70b" and spec.attention_heads % 8 == 0


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
    from advisor.inputs.answers import parse_answers
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


# ---------------------------------------------------------------- a GGUF planned by name (no file)

def _by_name(name: str, precision: str):
    from advisor.inputs.answers import parse_answers
    from advisor.planner import make_plan

    a = parse_answers({"model": {"name": name, "precision": precision}, "hardware": {"gpu_vendor": "none",
                                                                                    "ram_gb": 64}})
    return make_plan(a, None, K).engines["llama.cpp"]


def test_gguf_by_name_matches_the_tensor_types_of_the_bundled_file():
    """SmolLM2-135M Q4_1 planned from models.yaml, per tensor kind, against the bundled file llama.cpp wrote.

    llama-quant.cpp gives the tied token_embd.weight the output's type: Q6_K, whose 256-weight blocks do not divide
    the 576-wide rows, so it falls back to Q8_0; every other matrix is Q4_1; the norms stay F32."""
    from probes.gguf_meta import GGML_TYPES, read_gguf

    meta = read_gguf(default_model())
    assert {k: GGML_TYPES[v] for k, v in meta["__kind_types__"].items()} == {"token_embd.weight": "q8_0"}
    bits = {t: K.planner.gguf_types[t].bits for t in ("q8_0", "q4_1", "f32")}
    tensors = sum(n * bits[GGML_TYPES[t]] / 8 for t, n in meta["__type_elements__"].items())
    assert tensors == 96_576_768                         # 28.3 M in Q8_0 + 106.2 M in Q4_1 + 35 k norms in F32
    p = _by_name("smollm2-135m", "q4_1")
    assert p.precision == "q4_1"
    planned = p.weights_gib * 2**30
    # planned 96,458,184 B = 0.0898 GiB (the norms counted at 5 bits instead of 32); the file is 98,362,432 B =
    # 0.0916 GiB, the rest being the header's 49,152-token vocabulary. Before issue 10: 0.105 GiB (5 bits for all).
    assert abs(planned - tensors) / tensors < 0.002
    assert abs(planned - default_model().stat().st_size) / default_model().stat().st_size < 0.02
    assert any("tied to the output, in Q8_0" in a for a in p.assumptions)


@pytest.mark.parametrize("name, precision, published", [
    # TheBloke/Llama-2-7B-GGUF (llama.cpp bd33e5a): llama-2-7b.Q4_K_M.gguf 4.08 GB, Q4_0 3.83 GB
    # https://huggingface.co/TheBloke/Llama-2-7B-GGUF/tree/4407fb24384711513820563c90dc113e30fc682e
    ("llama-2-7b", "q4_k_m", 4.08e9),
    ("llama-2-7b", "q4_0", 3.83e9),
    # tensorblock/llama-2-7b-GGUF (llama.cpp b4242): Q8_0 7.161 GB, Q6_K 5.529 GB, Q5_K_M 4.783 GB
    # https://huggingface.co/tensorblock/llama-2-7b-GGUF
    ("llama-2-7b", "q8_0", 7.161e9),
    ("llama-2-7b", "q6_k", 5.529e9),
    ("llama-2-7b", "q5_k_m", 4.783e9),
    # bartowski/Meta-Llama-3.1-8B-Instruct-GGUF: Q4_K_M 4.92 GB, Q5_K_M 5.73 GB, Q6_K 6.6 GB
    # https://huggingface.co/bartowski/Meta-Llama-3.1-8B-Instruct-GGUF/tree/4c506ee36f8097e80414dd2ed2dcf7055cae89e5
    ("llama-3.1-8b", "q4_k_m", 4.92e9),
    ("llama-3.1-8b", "q5_k_m", 5.73e9),
    ("llama-3.1-8b", "q6_k", 6.6e9),
])
def test_gguf_by_name_matches_published_file_sizes(name, precision, published):
    """Within 0.5 % of the file sizes Hugging Face lists (decimal GB, rounded), header included in theirs."""
    planned = _by_name(name, precision).weights_gib * 2**30
    assert abs(planned - published) / published < 0.005, (planned, published)



def test_a_recalibration_is_kept_in_the_data_dir_never_the_cache(tmp_path, monkeypatch):
    """This machine's recalibration is the user's own measurement: it lives beside the probe history in
    $INFERENCE_ADVISOR_DATA (which the suite points at its own folder for every process it starts), not in the cache
    dir (the suite's own too: tests/conftest.py)."""
    from platformdirs import user_data_dir

    from advisor.planner import calibration
    from advisor.planner.types import Calibrated
    from probes.cache import DATA_ENV, ENV

    assert Path(os.environ[DATA_ENV]) != Path(user_data_dir("inference-advisor"))  # the suite's own, not the user's
    data, cache = tmp_path / "data" / "nested", tmp_path / "cache"
    monkeypatch.setenv(DATA_ENV, str(data))
    monkeypatch.setenv(ENV, str(cache))
    cal = Calibrated(engine="llama.cpp", cpu_model="a CPU", bw_eff=0.3, flops_eff=0.2, step_ms=1.0, band=0.3,
                     sweep_at="2026-12-04T00:00:00+0000", levels=2)
    calibration.save(cal)
    assert (data / "serving_calibration.json").is_file() and not list(cache.glob("**/*calibration*"))
    assert calibration.load() == {"llama.cpp": cal}


def test_a_measured_label_names_the_sweep_that_made_it():
    """Walk-3 M7: "measured ±24 %" for an engine the user never swept, with nothing naming the sweep. The line
    beside the table now names the sweep's date and levels, in both languages."""
    from advisor.decide import recommend
    from advisor.inputs import detect
    from advisor.inputs.answers import parse_answers
    from advisor.knowledge.load import load_knowledge
    from advisor.planner.machine_bench import MachineBench
    from advisor.planner.types import Calibrated
    from advisor.report.serving import predictor_lines

    k = load_knowledge()
    hw = detect(k)
    machine = MachineBench(cpu_model=hw.cpu.model, threads=2, memory_bandwidth_gb_s=25.0, fp32_gflops=100.0,
                           measured_at="2026-12-05")
    cal = {"llama.cpp": Calibrated(engine="llama.cpp", cpu_model=hw.cpu.model, bw_eff=0.3, flops_eff=0.2, step_ms=1.0,
                                   band=0.3, sweep_at="2026-12-04T10:00:00+0000", levels=3, change_tps=1.4)}
    a = parse_answers({"concurrency": 4, "ttft_p95_ms": 60000, "model": {"name": "smollm2-135m"}})
    rec = recommend(a, hw, k, with_flips=False, machine=machine, calibration=cal)
    assert rec.plan.engines["llama.cpp"].serving.label == "measured"
    en = next(x for x in predictor_lines(rec.plan, k, "en") if x.startswith("llama.cpp"))
    assert "2026-12-04T10:00:00" in en and "3 levels" in en and "tok/s x1.40" in en
    zh = next(x for x in predictor_lines(rec.plan, k, "zh") if x.startswith("llama.cpp"))
    assert "2026-12-04T10:00:00" in zh and "3 个级别" in zh
    others = [x for x in predictor_lines(rec.plan, k, "en") if not x.startswith("llama.cpp")]
    assert not any("calibrated on this machine" in x for x in others)  # only the engine that was swept


@pytest.mark.parametrize("name, gpu_id", [
    ("A100 SXM 80GB", "a100-80gb"),  # the size the name states, not the bare "A100" alias of the 40 GB card
    ("a100-sxm-80gb", "a100-80gb"),
    ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
    ("A100 SXM", "a100-40gb"),
    ("NVIDIA GeForce RTX 4090 D", "rtx-4090"),
    ("GH200 480GB", "gh200-96gb"),  # a size that is not the GPU's memory (its CPU's) finds the card all the same
    ("H100 PCIe", "h100-pcie"),
    ("A100 80 GB", "a100-80gb"),  # the size apart from its unit (llama.cpp's scoreboard) is still the 80 GB card
    ("V100 32 GB", "v100-sxm2-32gb"),
    ("NVIDIA GeForce RTX 4080 SUPER", "rtx-4080"),  # aliased: within a few % of the 4080
    ("RTX 4070 Ti", "rtx-4070-ti"),
    ("RTX 4060 Ti 8GB", "rtx-4060-ti-8gb"),  # the size the name states, among the Ti cards
    ("NVIDIA GeForce RTX 4070 SUPER", "rtx-4070"),  # aliased: the same memory and bandwidth
    ("RTX 4070 Ti SUPER", "rtx-4070-ti-super"), ("NVIDIA GeForce RTX 3080 Ti", "rtx-3080-ti"),
    ("M4", "apple-m4"), ("Mac mini M4 Pro", "apple-m4-pro"), ("RTX 5060 Ti 8GB", "rtx-5060-ti-8gb"),
    # NVML's name for a laptop card, and as people write it: the laptop chip, never the desktop card of its number
    ("NVIDIA GeForce RTX 4090 Laptop GPU", "rtx-4090-laptop"), ("RTX 4060 Laptop", "rtx-4060-laptop"),
    ("RTX 5070 Ti Mobile", "rtx-5070-ti-laptop"), ("NVIDIA GeForce RTX 4090", "rtx-4090"),
])
def test_a_gpu_name_as_people_write_it_finds_its_card(name, gpu_id):
    from advisor.knowledge.load import load_knowledge
    from advisor.planner.target import find_gpu

    g = find_gpu(name, load_knowledge())
    assert g is not None and g.id == gpu_id


@pytest.mark.parametrize("name", ["RTX 3070 Ti", "NVIDIA GeForce RTX 3060 Ti", "NVIDIA GeForce RTX 3080 Laptop GPU",
                                  "RTX 4080 Max-Q"])
def test_a_variant_the_catalogue_lacks_is_not_planned_as_its_base_card(name):
    """An RTX 3070 Ti (608 GB/s) planned as the RTX 3070 (448 GB/s) would be a quarter too slow, an RTX 3060 Ti
    (448 GB/s, 8 GB) as the 3060 12GB (360 GB/s), an RTX 3080 Laptop GPU (8 or 16 GB, 384-448 GB/s) as the desktop
    3080 (10 GB, 760 GB/s), and silently: the plan says the card is not in the catalogue. (The RTX 4070 Ti SUPER and
    3080 Ti, once the examples here, are now catalogued: found as themselves, above.)"""
    from advisor.inputs.answers import parse_answers
    from advisor.knowledge.load import load_knowledge
    from advisor.planner import make_plan
    from advisor.planner.target import find_gpu

    k = load_knowledge()
    assert find_gpu(name, k) is None
    plan = make_plan(parse_answers({"model": {"name": "llama-3.1-8b"}, "hardware": {
        "gpu_vendor": "nvidia", "gpu_model": name, "gpu_count": 1}}), None, k)
    assert plan.target.gpu_id is None and plan.target.gpu_bandwidth_gb_s is None
    assert any("not in the accelerator catalogue" in n for n in plan.notes)

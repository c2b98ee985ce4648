"""Can this engine load this model's architecture: judged from the lists the engines' own code holds
(knowledge/architectures.yaml, bench/read_architectures.py), never from the model's kind alone."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.cli import deploy_bundles
from advisor.decide import recommend
from advisor.inputs.answers import ModelBlock, parse_answers
from advisor.knowledge.load import load_knowledge
from advisor.knowledge.support import class_cell
from advisor.planner.spec import ModelSpecError, find_known, read_model_path, resolve_model

ROOT = Path(__file__).resolve().parents[3]
K = load_knowledge()
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
NOVA = {"architectures": ["NovaMoeForCausalLM"], "model_type": "nova_moe", "hidden_size": 2048,
        "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
        "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8,
        "vocab_size": 151936, "max_position_embeddings": 32768, "torch_dtype": "bfloat16"}


def _read_architectures():
    spec = importlib.util.spec_from_file_location("read_architectures", ROOT / "bench" / "read_architectures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _answers(tmp_path: Path, model: dict, **extra) -> object:
    return parse_answers({"concurrency": 16, "ttft_p95_ms": 2000,
                          "hardware": {"gpu_vendor": "nvidia", "gpu_model": "h100-sxm", "gpu_count": 1},
                          "model": model, **extra})


def test_a_class_no_engine_implements_excludes_them_and_no_bundle_is_offered(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(NOVA))
    a = _answers(tmp_path, {"path": str(tmp_path / "config.json")})
    spec = read_model_path(tmp_path / "config.json")
    assert spec.hf_architectures == ["NovaMoeForCausalLM"] and spec.model_type == "nova_moe"
    rec = recommend(a, None, K, with_flips=False, spec=spec)
    why = {x.engine: " ".join(r.text for r in x.reasons) for x in rec.excluded}
    for e, package in (("vllm", "vLLM 0.32.0"), ("sglang", "SGLang 0.5.23"), ("tensorrt-llm", "TensorRT-LLM 1.2.1")):
        assert e in why, e
        assert f"not implemented in {package} (architecture NovaMoeForCausalLM)" in why[e]
    # transformers knows neither the class nor the model type, and this tool never runs a model's own code
    assert "trust_remote_code" in why["pytorch"]
    bundles, _ = deploy_bundles(a, K, "en")
    for b in bundles:
        assert b.status == "refused" and not b.files, b.engine
        assert "NovaMoeForCausalLM" in (b.reason or "")


@pytest.mark.parametrize("model,engines", [
    ("llama-3.1-8b", ("vllm", "sglang", "tensorrt-llm", "onnxruntime", "llama.cpp", "pytorch")),
    ("qwen3-8b", ("vllm", "sglang", "tensorrt-llm", "onnxruntime", "llama.cpp", "pytorch")),
    ("qwen3-30b-a3b", ("vllm", "sglang", "tensorrt-llm", "llama.cpp", "pytorch")),
    ("deepseek-v3", ("vllm", "sglang", "tensorrt-llm", "llama.cpp", "pytorch")),
    ("gemma-3-27b", ("vllm", "sglang", "tensorrt-llm", "onnxruntime", "llama.cpp", "pytorch")),
    ("flan-t5-xl", ("pytorch", "llama.cpp")),
])
def test_the_registries_support_the_models_people_serve(model, engines):
    m = find_known(model, K)
    for e in engines:
        cell = class_cell(e, (m.hf_architecture,), None, None, K, m.architecture)
        assert cell.status == "supported", (model, e, cell.note)


def test_what_only_loads_through_a_fallback_or_a_later_release_says_so():
    t5 = ("T5ForConditionalGeneration",)
    assert class_cell("vllm", t5, "t5", None, K, "encoder-decoder").status == "unsupported"  # no enc-dec fallback
    later = class_cell("tensorrt-llm", t5, "t5", None, K, "encoder-decoder")
    assert later.status == "experimental" and "13919" in later.note.en and "1.2.1" in later.note.en
    routed = class_cell("vllm", ("SmolLM3ForCausalLM",), "smollm3", None, K, "decoder-only")
    assert routed.status == "experimental" and "Transformers backend" in routed.note.en
    removed = class_cell("vllm", ("MllamaForConditionalGeneration",), "mllama", None, K, "decoder-only")
    assert removed.status == "unsupported" and "0.10.2" in removed.note.en
    gguf = class_cell("llama.cpp", (), None, "nova_moe", K, "decoder-only")
    assert gguf.status == "unsupported" and "nova_moe" in gguf.note.en
    assert class_cell("llama.cpp", (), None, "llama", K, "decoder-only").status == "supported"
    assert class_cell("vllm", (), None, None, K, "decoder-only").status == "unknown"  # nothing to judge by


def test_every_catalogue_llm_names_its_class():
    llms = [m for m in K.models.models if m.architecture != "cnn"]
    assert all(m.hf_architecture for m in llms), [m.id for m in llms if not m.hf_architecture]


@pytest.mark.skipif(not VLLM_PYTHON.exists(), reason="vLLM is not installed here (.venv-vllm): nothing to read")
def test_the_vllm_list_is_what_the_installed_registry_says():
    """The YAML is regenerated from the code, not kept by hand: the installed vLLM's registry, parsed again, gives
    the same lists."""
    read = _read_architectures().vllm(str(VLLM_PYTHON))
    a = K.architectures.engines["vllm"]
    assert read["version"] == a.version
    assert read["native"] == a.native and read["via_transformers"] == a.via_transformers
    assert read["removed"] == a.removed


def test_the_transformers_list_is_what_the_installed_package_says():
    read = _read_architectures().transformers(sys.executable)
    a = K.architectures.engines["pytorch"]
    assert read["version"] == a.version and read["native"] == a.native and read["model_types"] == a.model_types


@pytest.mark.parametrize("typed,expected", [
    ("Mixtral-8x7B-v0.1", "mixtral-8x7b"),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1-AWQ", "mixtral-8x7b"),
    ("llama3.1:8b-instruct-q4_K_M", "llama-3.1-8b"),
    ("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "qwen2.5-7b"),
    ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b"),
    ("Mistral-7B-Instruct-v0.3", "mistral-7b-v0.3"),
    ("gemma2:9b", "gemma-2-9b"),
    ("Qwen3-30B-A3B-GGUF", "qwen3-30b-a3b"),
    ("Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", "llama-3.1-8b"),  # a GGUF file's name as downloaded
    ("RedHatAI/Meta-Llama-3.1-70B-Instruct-quantized.w4a16", "llama-3.1-70b"),  # a tag after a dot
    ("https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),
])
def test_names_as_people_type_them_resolve_to_the_catalogue(typed, expected):
    spec = resolve_model(ModelBlock(name=typed), K)
    assert spec.id == expected and not spec.unknown_name


def test_the_name_says_the_precision_unless_the_answers_do():
    assert ModelBlock(name="mistralai/Mixtral-8x7B-Instruct-v0.1-AWQ").precision == "int4"
    assert ModelBlock(name="llama3.1:8b-instruct-q4_K_M").precision == "q4_k_m"
    assert ModelBlock(name="Qwen3-8B-FP8").precision == "fp8"
    assert ModelBlock(name="Qwen3-8B-FP8", precision="bf16").precision == "bf16"  # what was asked wins


def test_an_unknown_name_without_a_size_is_asked_for_one(tmp_path):
    with pytest.raises(ModelSpecError, match="params_b"):
        resolve_model(ModelBlock(name="NovaMoe-Chat"), K)
    spec = resolve_model(ModelBlock(name="NovaMoe-13B-Chat"), K)  # the name says its size
    assert spec.unknown_name and abs(spec.params_b - 13) < 0.5
    spec = resolve_model(ModelBlock(name="NovaMoe-Chat", params_b=3), K)
    assert abs(spec.params_b - 3) < 0.2
    f = tmp_path / "a.yaml"
    f.write_text("model: {name: NovaMoe-Chat}\n")
    r = subprocess.run([sys.executable, "-m", "advisor", "plan", "--answers", str(f)], capture_output=True,
                       text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2 and "params_b" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1

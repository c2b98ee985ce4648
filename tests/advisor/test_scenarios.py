"""Named scenarios that reproduce the seeds' selection advice: top engine and exclusions."""
from pathlib import Path

import pytest
import yaml

from advisor.decide.rules import recommend
from advisor.inputs.answers import load_answers, parse_answers
from advisor.knowledge.load import load_knowledge

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

NVIDIA_4090 = {"gpu_vendor": "nvidia", "gpu_model": "RTX 4090", "gpu_count": 1, "gpu_memory_gb": 24, "os": "linux"}
H100 = {"gpu_vendor": "nvidia", "gpu_model": "H100 SXM", "gpu_count": 1, "gpu_memory_gb": 80, "os": "linux"}
CPU_ONLY = {"gpu_vendor": "none", "ram_gb": 64, "cpu_cores": 16, "os": "linux"}

SCENARIOS = {
    # name: (answers, expected top, engines that must be excluded)
    "cpu-only-box (seed 000: no GPU -> llama.cpp)": (
        {"concurrency": 1, "hardware": CPU_ONLY, "model": {"params_b": 13, "precision": "q4_k_m"}},
        "llama.cpp", {"tensorrt-llm"}),
    "nvidia-high-concurrency (seed 003 §8: 1/2/3 under pressure -> vLLM)": (
        {"concurrency": 200, "ttft_p95_ms": 800, "hardware": H100, "cuda_expertise": "some",
         "model_update": "monthly"},
        "vllm", set()),
    "team-without-cuda (seed 000: don't touch TensorRT)": (
        {"concurrency": 64, "ttft_p95_ms": 300, "hardware": H100, "cuda_expertise": "none", "strict_sla": True},
        "vllm", set()),
    "cross-platform (seed 003 §8: 4 strong -> ORT)": (
        {"concurrency": 4, "cross_platform": True, "hardware": {"gpu_vendor": "none", "os": "windows"},
         "model": {"params_b": 1.5}},
        "onnxruntime", {"tensorrt-llm", "vllm"}),
    "amd-gpu (seed 001 §四: vLLM on ROCm; no TensorRT)": (
        {"concurrency": 64, "hardware": {"gpu_vendor": "amd", "gpu_model": "MI300X", "gpu_memory_gb": 192,
                                         "os": "linux"}},
        "vllm", {"tensorrt-llm"}),
    "apple-silicon (seed 000: llama.cpp was born on the Mac)": (
        {"concurrency": 1, "deployment": "desktop",
         "hardware": {"gpu_vendor": "apple", "gpu_memory_gb": 64, "os": "macos", "cpu_arch": "arm64"}},
        "llama.cpp", {"tensorrt-llm"}),
    "encoder-decoder (seed 000: vLLM weak on T5; its docs now: removed)": (
        {"concurrency": 16, "hardware": NVIDIA_4090,
         "model": {"params_b": 0.77, "architecture": "encoder-decoder", "precision": "fp16"}},
        ("tensorrt-llm", "pytorch"), {"vllm"}),  # TensorRT-LLM's PyTorch backend now serves T5 with in-flight
    # batching (support.yaml tensorrt-llm architecture.encoder_decoder); onnxruntime-genai has no T5 path
    "edge-device (seed 000: llama.cpp on small devices, 1-3B models)": (
        {"concurrency": 1, "deployment": "edge", "cross_platform": False,
         "hardware": {"gpu_vendor": "none", "ram_gb": 8, "cpu_cores": 4, "cpu_arch": "arm64", "os": "linux"},
         "model": {"params_b": 1.5, "precision": "q4_k_m"}},
        "llama.cpp", {"tensorrt-llm"}),
    "research-iteration (seed 003 §2.1: new models land in PyTorch first)": (
        {"concurrency": 1, "ttft_p95_ms": 3000, "hardware": NVIDIA_4090, "model_update": "daily",
         "cuda_expertise": "some"},
        "pytorch", set()),
    "mixed-llm-and-cv-platform (seed 003 §5.3: ORT unified platform)": (
        {"concurrency": 8, "non_llm_models": True, "hardware": NVIDIA_4090, "cuda_expertise": "some"},
        "onnxruntime", set()),
    "finance-strict-sla (seed 001 §适用场景 2: TensorRT-LLM)": (
        {"concurrency": 256, "ttft_p95_ms": 300, "strict_sla": True, "cuda_expertise": "strong",
         "model_update": "rarely", "hardware": {**H100, "gpu_count": 8}, "model": {"params_b": 70, "precision": "fp8"}},
        "tensorrt-llm", set()),
    "cnn-on-nvidia (seed 001 §三: not an LLM engine's job)": (
        {"concurrency": 32, "hardware": NVIDIA_4090, "model": {"params_b": 0.05, "architecture": "cnn"}},
        "onnxruntime", {"vllm", "llama.cpp", "tensorrt-llm"}),
}


@pytest.fixture(scope="module")
def knowledge():
    return load_knowledge()


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario(name, knowledge):
    data, top, must_exclude = SCENARIOS[name]
    rec = recommend(parse_answers(data), None, knowledge)
    assert rec.top.engine in ((top,) if isinstance(top, str) else top), [(r.engine, r.score) for r in rec.ranking]
    excluded = {x.engine for x in rec.excluded}
    assert must_exclude <= excluded
    assert top not in excluded


EXAMPLE_TOPS = {
    "cpu-only-box.yaml": "llama.cpp",
    "startup-chat-api.yaml": "vllm",
    "nvidia-strict-sla.yaml": "tensorrt-llm",
    "cross-platform-platform.yaml": "onnxruntime",
    "research-iteration.yaml": "pytorch",
    "llama3-70b-on-one-rtx4090.yaml": "llama.cpp",  # vLLM cannot load 131 GiB of FP16 weights on 24 GiB
}


@pytest.mark.parametrize("name", list(EXAMPLE_TOPS))
def test_examples_read_as_their_archetype(name, knowledge):
    rec = recommend(load_answers(EXAMPLES / name), None, knowledge)
    assert rec.top.engine == EXAMPLE_TOPS[name]


def test_every_example_is_valid():
    files = sorted(EXAMPLES.glob("*.yaml"))
    assert len(files) >= 4
    for f in files:
        load_answers(f)  # raises on any schema problem
        assert yaml.safe_load(f.read_text()) is not None


def test_flip_names_a_change_that_really_flips(knowledge):
    answers = parse_answers(SCENARIOS["nvidia-high-concurrency (seed 003 §8: 1/2/3 under pressure -> vLLM)"][0])
    rec = recommend(answers, None, knowledge)
    assert rec.flips, rec.flip_note
    top = rec.ranking[0].engine
    tied = [r.engine for r in rec.ranking[1:] if r.score == rec.ranking[0].score]
    if tied:  # vLLM and SGLang tie here: said, and each flip lifts the next engine above both
        assert rec.flip_note and all(knowledge.engines[e].name in rec.flip_note for e in [top, *tied])
    for flip in rec.flips:
        second = next(e for e in flip.scores if e != top)
        assert second not in tied
        changed = answers.model_copy(update={k: (parse_answers({k: v}).hardware if k == "hardware" else v)
                                             for k, v in flip.changes.items()})
        again = recommend(changed, None, knowledge, with_flips=False)
        order = [r.engine for r in again.ranking]
        assert top in {x.engine for x in again.excluded} or order.index(second) < order.index(top)
        assert all(order.index(second) < order.index(t) for t in tied if t in order)


def test_a_tie_at_the_top_is_said_and_flips_lift_the_next_engine_above_it(knowledge):
    """vLLM and SGLang share their mechanisms on 8 x TPU v6e: they tie, which is said, in both languages."""
    a = {"concurrency": 32, "hardware": {"gpu_vendor": "google", "gpu_model": "TPU v6e", "gpu_count": 8, "ram_gb": 512,
                                         "os": "linux"}, "model": {"name": "llama-3.1-8b", "precision": "bf16"}}
    for lang, word in (("en", " tie at "), ("zh", "同为")):
        rec = recommend(parse_answers(a), None, knowledge, lang=lang)
        assert rec.ranking[0].score == rec.ranking[1].score, [(r.engine, r.score) for r in rec.ranking]
        assert rec.flip_note and word in rec.flip_note and "vLLM" in rec.flip_note and "SGLang" in rec.flip_note
        for flip in rec.flips:
            assert not {"vllm", "sglang"} & (set(flip.scores) - {rec.ranking[0].engine})


def test_flips_are_changes_to_the_users_own_answers_never_a_leader_at_zero(knowledge):
    """The walk's M16: "→ Apple M3 Max", "→ Intel Arc A770 … llama.cpp would lead (0.0)"."""
    from pathlib import Path

    for f in sorted(Path("examples").glob("*.yaml")):
        a = load_answers(f)
        rec = recommend(a, None, knowledge)
        for flip in rec.flips:
            if "hardware" in flip.changes:  # only ever the user's own vendor: more of their GPUs, or a faster part
                assert a.hardware is not None and flip.changes["hardware"]["gpu_vendor"] == a.hardware.gpu_vendor, (
                    f.name, flip.text)
            second = [v for e, v in flip.scores.items() if e != rec.ranking[0].engine]
            assert all(v is not None and v > 0 for v in second), (f.name, flip.text)

"""The precisions people write in an answers file: the quantization's name (AWQ, GPTQ, MXFP4), PyTorch's dtype
(bfloat16) or vLLM's KV flag value (fp8_e4m3) is read as the precision it is; anything else is still refused."""
import pytest

from advisor.inputs.answers import ModelBlock, parse_answers


@pytest.mark.parametrize("written, read", [
    ("awq", "int4"), ("AWQ", "int4"), ("GPTQ", "int4"), ("gptq-int8", "int8"), ("w4a16", "int4"), ("W8A8", "int8"),
    ("w8a16", "int8"), ("e5m2", "fp8"), ("float8_e4m3fn", "fp8"),
    ("mxfp4", "fp4"), ("NVFP4", "fp4"), ("bfloat16", "bf16"), ("float16", "fp16"), ("fp8_e4m3", "fp8"),
    ("Q4_K_M", "q4_k_m"), (" FP16 ", "fp16"), ("int4", "int4"),
])
def test_a_precision_is_read_as_people_write_it(written, read):
    assert ModelBlock(precision=written).precision == read


def test_vllms_kv_cache_dtype_values_are_read_as_fp8():
    assert ModelBlock(kv_cache_dtype="fp8_e4m3").kv_cache_dtype == "fp8"
    assert ModelBlock(kv_cache_dtype="FP8").kv_cache_dtype == "fp8"
    assert ModelBlock(kv_cache_dtype="e4m3").kv_cache_dtype == "fp8"


def test_an_unknown_precision_is_still_refused_with_the_values_it_takes():
    with pytest.raises(ValueError) as e:
        parse_answers({"model": {"name": "llama-3.1-8b", "precision": "banana"}})
    assert "banana" in str(e.value) and "int4" in str(e.value)
    for junk in ("banana-awq", "fp16-awq", "x" * 10_000):  # read whole, never as a name's parts
        with pytest.raises(ValueError):
            ModelBlock(precision=junk)


def test_a_catalogue_model_stored_below_16_bits_is_planned_as_stored_when_no_precision_is_given():
    """gpt-oss's checkpoint is MXFP4 and DeepSeek-R1's block FP8 (their config.json quantization_config): planned at
    the fp16 default, gpt-oss-120b needs 218 GiB of weights and fits no single GPU, where its checkpoint serves from
    one 80 GB card. A precision given, or one the name says, wins; a 16-bit checkpoint keeps the default."""
    from advisor.inputs.answers import checkpoint_precision

    assert ModelBlock(name="openai/gpt-oss-120b").precision == "fp4"
    assert ModelBlock(name="unsloth/gpt-oss-20b-BF16").precision == "fp16"  # the name says how its copy is stored
    assert ModelBlock(name="unsloth/DeepSeek-V3-0324-GGUF").precision == "fp16"
    assert ModelBlock(name="deepseek-r1:671b").precision == "fp16"  # an Ollama tag: its own GGUF, not the FP8 release
    assert ModelBlock(name="deepseek-ai/DeepSeek-R1").precision == "fp8"
    assert ModelBlock(name="openai/gpt-oss-120b", precision="bf16").precision == "bf16"
    assert ModelBlock(name="llama-3.1-8b").precision == "fp16" and checkpoint_precision("llama-3.1-8b") is None
    assert ModelBlock(name="not-in-the-catalogue-7b").precision == "fp16"
    a = parse_answers({"model": {"name": "openai/gpt-oss-120b"}})
    assert a.model.precision == "fp4" and "precision" not in a.model.model_fields_set


def test_gpt_oss_120b_named_alone_fits_one_h100():
    from advisor.knowledge.load import load_knowledge
    from advisor.planner import make_plan

    a = parse_answers({"concurrency": 8, "model": {"name": "openai/gpt-oss-120b"},
                       "hardware": {"gpu_vendor": "nvidia", "gpu_model": "H100", "gpu_count": 1}})
    k = load_knowledge()
    plan = make_plan(a, None, k, detail=False)
    assert {e for e, p in plan.engines.items() if p.fits} >= {"vllm", "tensorrt-llm"}
    assert any("Planned in fp4, the precision gpt-oss-120b's published checkpoint" in n for n in plan.notes)  # said
    assert any("检查点的存储精度" in n for n in make_plan(a, None, k, detail=False, lang="zh").notes)
    other = parse_answers({"model": {"name": "openai/gpt-oss-120b", "precision": "bf16"},
                           "hardware": {"gpu_vendor": "nvidia", "gpu_model": "H100", "gpu_count": 1}})
    assert not any("published checkpoint" in n for n in make_plan(other, None, k, detail=False).notes)

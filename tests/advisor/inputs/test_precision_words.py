"""The precisions people write in an answers file: the quantization's name (AWQ, GPTQ, MXFP4), PyTorch's dtype
(bfloat16) or vLLM's KV flag value (fp8_e4m3) is read as the precision it is; anything else is still refused."""
import pytest

from advisor.inputs.answers import ModelBlock, parse_answers


@pytest.mark.parametrize("written, read", [
    ("awq", "int4"), ("AWQ", "int4"), ("GPTQ", "int4"), ("gptq-int8", "int8"), ("w4a16", "int4"), ("W8A8", "int8"),
    ("mxfp4", "fp4"), ("NVFP4", "fp4"), ("bfloat16", "bf16"), ("float16", "fp16"), ("fp8_e4m3", "fp8"),
    ("Q4_K_M", "q4_k_m"), (" FP16 ", "fp16"), ("int4", "int4"),
])
def test_a_precision_is_read_as_people_write_it(written, read):
    assert ModelBlock(precision=written).precision == read


def test_vllms_kv_cache_dtype_values_are_read_as_fp8():
    assert ModelBlock(kv_cache_dtype="fp8_e4m3").kv_cache_dtype == "fp8"
    assert ModelBlock(kv_cache_dtype="FP8").kv_cache_dtype == "fp8"


def test_an_unknown_precision_is_still_refused_with_the_values_it_takes():
    with pytest.raises(ValueError) as e:
        parse_answers({"model": {"name": "llama-3.1-8b", "precision": "banana"}})
    assert "banana" in str(e.value) and "int4" in str(e.value)
    with pytest.raises(ValueError):
        ModelBlock(precision="x" * 10_000)  # not read as a word: too long to be one

"""Fuzz the model-header readers: whatever the bytes, the answer is a ModelSpec or one line of ModelSpecError.

Mutations start from valid headers (a crafted GGUF and a safetensors shard) so that most examples get deep
into the parsers rather than failing at the magic number.
"""
from __future__ import annotations

import itertools
import json
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.planner.spec import ModelSpec, ModelSpecError, read_model_path
from tests.hostile.kit import gguf_file

_n = itertools.count()
# derandomize: the same 150 inputs every run, so the suite is steady (a random find would fail one CI run in many)
FUZZ = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _check(path) -> None:
    try:
        spec = read_model_path(path)
    except ModelSpecError as err:
        text = str(err)
        assert "\n" not in text and len(text) < 1000, text
        return
    assert isinstance(spec, ModelSpec)
    assert spec.params_b > 0 and spec.layers >= 1 and spec.kv_elements_per_token > 0


def _mutate(data: bytes, edits: list[tuple[int, int]], cut: int | None) -> bytes:
    b = bytearray(data)
    for pos, val in edits:
        b[pos % len(b)] = val
    return bytes(b[:cut] if cut is not None else b)


@FUZZ
@given(edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=12),
       cut=st.none() | st.integers(0, 600))
def test_mutated_gguf_headers(tmp_path, edits, cut):
    base = gguf_file(tmp_path / "base.gguf").read_bytes()
    p = tmp_path / f"m{next(_n)}.gguf"
    p.write_bytes(_mutate(base, edits, cut))
    _check(p)


@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes_after_the_gguf_magic(tmp_path, tail):
    p = tmp_path / f"r{next(_n)}.gguf"
    p.write_bytes(b"GGUF" + tail)
    _check(p)


def _valid_shard() -> bytes:
    header = json.dumps({"__metadata__": {"format": "pt"},
                         "embed": {"dtype": "F16", "shape": [100, 16], "data_offsets": [0, 3200]},
                         "w": {"dtype": "F32", "shape": [16, 16], "data_offsets": [3200, 4224]}}).encode()
    return struct.pack("<Q", len(header)) + header + b"\0" * 4224


CONFIG = {"num_hidden_layers": 2, "hidden_size": 16, "num_attention_heads": 2, "intermediate_size": 32,
          "vocab_size": 100, "model_type": "llama"}


@FUZZ
@given(edits=st.lists(st.tuples(st.integers(0, 300), st.integers(0, 255)), max_size=8),
       cut=st.none() | st.integers(0, 400))
def test_mutated_safetensors_headers(tmp_path, edits, cut):
    d = tmp_path / f"hf{next(_n)}"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(CONFIG))
    (d / "model.safetensors").write_bytes(_mutate(_valid_shard(), edits, cut))
    _check(d)


json_values = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                         max_size=3), max_leaves=12)


@FUZZ
@given(overrides=st.dictionaries(st.sampled_from(sorted(CONFIG) + ["text_config", "quantization_config",
                                                                  "num_key_value_heads", "head_dim",
                                                                  "num_local_experts", "num_experts_per_tok",
                                                                  "max_position_embeddings"]),
                                 json_values, max_size=4))
def test_configs_with_any_json_values(tmp_path, overrides):
    d = tmp_path / f"cfg{next(_n)}"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({**CONFIG, **overrides}))
    _check(d)

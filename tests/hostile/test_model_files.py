"""Crafted model files and paths given as model.path: `python -m advisor plan` exits 2 with one line, fast.

Each file is generated here (nothing large is committed): a GGUF header that claims 200k dimensions or 2^63
tensors, a safetensors header that claims 2^40 bytes, a config.json nested 100k deep, a FIFO, /dev/zero.
"""
from __future__ import annotations

import json
import os
import struct

import pytest

from tests.hostile.kit import (ARRAY, F32, F64, I32, STRING, U32, U64, answers_with_path, bounded, gguf_file, gstr, kv,
                               llama_kvs, tensor, u32)


def _safetensors(path, header: bytes | dict, claim: int | None = None, data: int = 0):
    blob = header if isinstance(header, bytes) else json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob) if claim is None else claim) + blob)
        f.truncate(8 + len(blob) + data)
    return path


def _w(path, data: bytes):
    path.write_bytes(data)
    return path


def _hf(tmp, config, raw: bytes | None = None):
    d = tmp / "hf"
    d.mkdir(exist_ok=True)
    (d / "config.json").write_bytes(raw if raw is not None else json.dumps(config).encode())
    return d


GOOD_CONFIG = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128,
               "vocab_size": 1000, "model_type": "llama"}


def _with(**kw):
    return {**GOOD_CONFIG, **kw}


def _st_dir(tmp, header, claim=None, data=0):
    d = _hf(tmp, GOOD_CONFIG)
    _safetensors(d / "model.safetensors", header, claim, data)
    return d


def _onnx(tmp, cfg):
    d = tmp / "onnx"
    d.mkdir()
    (d / "genai_config.json").write_text(json.dumps(cfg))
    return d


DECODER = {"num_attention_heads": 4, "num_key_value_heads": 4, "hidden_size": 64, "num_hidden_layers": 2,
           "head_size": 16}

# (case id, builder(tmp) -> model path, a fragment the one-line error must contain)
CASES = [
    # ---- GGUF headers
    ("gguf-200k-dims", lambda t: gguf_file(t / "m.gguf", tensors=[tensor("w", [2] * 200_000)]), "dimensions"),
    ("gguf-2^63-tensors", lambda t: gguf_file(t / "m.gguf", n_tensors=1 << 63), "corrupt GGUF header"),
    ("gguf-2^40-kvs", lambda t: gguf_file(t / "m.gguf", n_kv=1 << 40), "corrupt GGUF header"),
    ("gguf-string-2^60", lambda t: gguf_file(t / "m.gguf", kvs=[struct.pack("<Q", 1 << 60) + b"x"]), "string"),
    ("gguf-array-2^40-strings", lambda t: gguf_file(t / "m.gguf", kvs=llama_kvs(**{"tokenizer.ggml.tokens": kv(
        "tokenizer.ggml.tokens", ARRAY, struct.pack("<IQ", STRING, 1 << 40))})), "array"),
    ("gguf-nested-arrays", lambda t: gguf_file(t / "m.gguf", kvs=llama_kvs(**{"x": kv(
        "x", ARRAY, struct.pack("<IQ", ARRAY, 1) + struct.pack("<IQ", ARRAY, 1) + struct.pack("<IQ", U32, 1)
        + struct.pack("<I", 1))})), "nested"),
    ("gguf-zero-dims", lambda t: gguf_file(t / "m.gguf", tensors=[tensor("w", [0, 64]), tensor("v", [64, 0])]),
     "not a model"),
    ("gguf-huge-dim", lambda t: gguf_file(t / "m.gguf", tensors=[tensor("w", [1 << 62, 2])]), "implausible"),
    ("gguf-params-overflow", lambda t: gguf_file(t / "m.gguf", tensors=[tensor(f"w{i}", [1 << 40, 1 << 10])
                                                                       for i in range(4)]), "implausible"),
    ("gguf-layers-inf", lambda t: gguf_file(t / "m.gguf", kvs=llama_kvs(**{"llama.block_count": kv(
        "llama.block_count", F32, struct.pack("<f", float("inf")))})), "whole number"),
    ("gguf-layers-nan", lambda t: gguf_file(t / "m.gguf", kvs=llama_kvs(**{"llama.block_count": kv(
        "llama.block_count", F64, struct.pack("<d", float("nan")))})), "whole number"),
    ("gguf-layers-1.5", lambda t: gguf_file(t / "m.gguf", kvs=llama_kvs(**{"llama.block_count": kv(
        "llama.block_count", F32, struct.pack("<f", 1.5))})), "whole number"),
    ("gguf-layers-negative", lambda t: gguf_file(t / "m.gguf", kvs=llama_kvs(**{"llama.block_count": kv(
        "llama.block_count", I32, struct.pack("<i", -1))})), "outside the plausible range"),
    ("gguf-heads-zero", lambda t: gguf_file(t / "m.gguf", kvs=llama_kvs(**{
        "llama.attention.head_count": u32("llama.attention.head_count", 0)})), "outside the plausible range"),
    ("gguf-width-2^62", lambda t: gguf_file(t / "m.gguf", kvs=llama_kvs(**{"llama.embedding_length": kv(
        "llama.embedding_length", U64, struct.pack("<Q", 1 << 62))})), "outside the plausible range"),
    ("gguf-layers-string", lambda t: gguf_file(t / "m.gguf", kvs=llama_kvs(**{"llama.block_count": kv(
        "llama.block_count", STRING, gstr("many"))})), "whole number"),
    ("gguf-no-architecture", lambda t: gguf_file(t / "m.gguf", kvs=llama_kvs(**{"general.architecture": b""})),
     "general.architecture"),
    ("gguf-architecture-int", lambda t: gguf_file(t / "m.gguf", kvs=llama_kvs(**{
        "general.architecture": u32("general.architecture", 7)})), "general.architecture"),
    ("gguf-no-block-count", lambda t: gguf_file(t / "m.gguf", kvs=llama_kvs(**{"llama.block_count": b""})),
     "block_count"),
    ("gguf-kv-heads-empty-list", lambda t: gguf_file(t / "m.gguf", kvs=llama_kvs(**{
        "llama.attention.head_count_kv": kv("llama.attention.head_count_kv", ARRAY, struct.pack("<IQ", U32, 0))})),
     "head_count_kv"),
    ("gguf-unknown-value-type", lambda t: gguf_file(t / "m.gguf", kvs=llama_kvs(**{"x": kv("x", 99, b"")})),
     "unknown GGUF value type"),
    ("gguf-version-1", lambda t: gguf_file(t / "m.gguf", version=1), "version"),
    ("gguf-version-99", lambda t: gguf_file(t / "m.gguf", version=99), "version"),
    ("gguf-truncated-in-kv", lambda t: _w(t / "m.gguf", gguf_file(t / "x.gguf").read_bytes()[:60]), "ends inside"),
    ("gguf-magic-only", lambda t: _w(t / "m.gguf", b"GGUF"), "ends inside"),
    ("not-gguf", lambda t: _w(t / "m.bin", b"PK\x03\x04" + b"\0" * 100), "must be GGUF"),
    ("empty-file", lambda t: _w(t / "m.gguf", b""), "must be GGUF"),
    # ---- Hugging Face config.json
    ("config-list", lambda t: _hf(t, [1, 2]), "JSON object"),
    ("config-deep-100k", lambda t: _hf(t, None, b"[" * 100_000 + b"]" * 100_000), "nested too deeply"),
    ("config-deep-objects", lambda t: _hf(t, None, b'{"a":' * 50_000 + b"1" + b"}" * 50_000), "nested too deeply"),
    ("config-5MB", lambda t: _hf(t, None, b'{"pad": "' + b"x" * (5 << 20) + b'"}'), "MB"),
    ("config-not-utf8", lambda t: _hf(t, None, b'{"a": "\xff\xfe"}'), "UTF-8"),
    ("config-not-json", lambda t: _hf(t, None, b"{num_hidden_layers: 2"), "not valid JSON"),
    ("config-layers-1e400", lambda t: _hf(t, None, json.dumps(GOOD_CONFIG).replace('"num_hidden_layers": 2',
                                                                                   '"num_hidden_layers": 1e400')
                                          .encode()), "whole number"),
    ("config-layers-string", lambda t: _hf(t, _with(num_hidden_layers="12")), "whole number"),
    ("config-layers-list", lambda t: _hf(t, _with(num_hidden_layers=[12])), "whole number"),
    ("config-hidden-zero", lambda t: _hf(t, _with(hidden_size=0)), "outside the plausible range"),
    ("config-heads-2^70", lambda t: _hf(t, _with(num_attention_heads=1 << 70)), "outside the plausible range"),
    ("config-no-heads", lambda t: _hf(t, {k: v for k, v in GOOD_CONFIG.items() if k != "num_attention_heads"}),
     "attention head count"),
    ("config-text-config-list", lambda t: _hf(t, {"text_config": [1]}), "text_config"),
    ("config-quant-string", lambda t: _hf(t, _with(quantization_config="x")), "quantization_config"),
    ("config-experts-inf", lambda t: _hf(t, None, json.dumps(_with(num_experts_per_tok=2)).replace(
        '"num_experts_per_tok": 2', '"num_experts_per_tok": 2, "num_local_experts": 1e999').encode()),
     "whole number"),
    # ---- safetensors
    ("st-claims-2^40", lambda t: _st_dir(t, {"w": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}},
                                         claim=1 << 40, data=4), "safetensors"),
    ("st-truncated-header", lambda t: _st_dir(t, b'{"w": {"dtype"', claim=4000), "safetensors"),
    ("st-header-not-json", lambda t: _st_dir(t, b"not json at all"), "safetensors"),
    ("st-header-deep", lambda t: _st_dir(t, b"[" * 100_000 + b"]" * 100_000), "safetensors"),
    ("st-shape-overflow", lambda t: _st_dir(t, {"w": {"dtype": "F32", "shape": [1 << 40, 1 << 40],
                                                      "data_offsets": [0, 16]}}, data=16), "safetensors"),
    ("st-shape-lies", lambda t: _st_dir(t, {"w": {"dtype": "F32", "shape": [1000, 1000],
                                                  "data_offsets": [0, 16]}}, data=16), "safetensors"),
    ("st-200k-dims", lambda t: _st_dir(t, {"w": {"dtype": "F32", "shape": [1] * 200_000, "data_offsets": [0, 4]}},
                                       data=4), "dimensions"),
    ("st-empty-file", lambda t: _w(_hf(t, GOOD_CONFIG) / "model.safetensors", b"").parent, "safetensors"),
    ("st-index-list", lambda t: _w(_st_dir(t, {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, data=8)
                                   / "model.safetensors.index.json", b'{"weight_map": [1]}').parent, "weight_map"),
    # ---- ONNX Runtime GenAI genai_config.json
    ("genai-no-model", lambda t: _onnx(t, {"search": {}}), "no num_attention_heads"),
    ("genai-decoder-list", lambda t: _onnx(t, {"model": {"decoder": [1]}}), "decoder"),
    ("genai-layers-negative", lambda t: _onnx(t, {"model": {"decoder": {**DECODER, "num_hidden_layers": -5}}}),
     "outside the plausible range"),
    ("genai-list", lambda t: _onnx(t, [1]), "JSON object"),
    # ---- paths that are not model files at all
    ("path-dev-zero", lambda t: "/dev/zero", "device"),
    ("path-dev-null", lambda t: "/dev/null", "device"),
    ("path-fifo", lambda t: os.mkfifo(t / "fifo") or t / "fifo", "FIFO"),
    ("path-missing", lambda t: t / "nope.gguf", "not found"),
    ("path-empty-dir", lambda t: (t / "d").mkdir() or t / "d", "expected a GGUF file"),
    ("path-config-is-fifo", lambda t: ((t / "d").mkdir(), os.mkfifo(t / "d" / "config.json")) and t / "d",
     "expected a GGUF file"),
]


@pytest.mark.parametrize("builder,fragment", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hostile_model_path_is_one_line_exit_2(tmp_path, builder, fragment):
    model = builder(tmp_path)
    res = bounded(["-m", "advisor", "plan", "--answers",
                                          str(answers_with_path(tmp_path, model))])
    line = res.one_line_error(2)
    assert line.startswith("error: model.path"), line
    assert fragment in line, line
    assert len(line) < 400


def test_a_fifo_among_the_shards_is_skipped_not_opened(tmp_path):
    d = _st_dir(tmp_path, {"w": {"dtype": "F32", "shape": [1000, 64], "data_offsets": [0, 256_000]}},
                data=256_000)
    os.mkfifo(d / "model-00002.safetensors")
    res = bounded(["-m", "advisor", "plan", "--answers", str(answers_with_path(tmp_path, d)),
                                          "--format", "json"])
    assert res.rc == 0, res.err
    assert json.loads(res.out)["model"]["params_b"] == pytest.approx(64_000 / 1e9)
    assert res.within_bounds(10, float('inf')), res.cpu_seconds


def test_a_million_vocabulary_strings_read_within_bounds(tmp_path):
    """A legal but large header (2^20 empty token strings, 8 MB) is read, not refused, within the bounds."""
    tokens = kv("tokenizer.ggml.tokens", ARRAY, struct.pack("<IQ", STRING, 1 << 20) + b"\0" * (8 << 20))
    model = gguf_file(tmp_path / "m.gguf", kvs=llama_kvs(**{"tokenizer.ggml.tokens": tokens}))
    res = bounded(["-m", "advisor", "plan", "--answers", str(answers_with_path(tmp_path, model)), "--format", "json"])
    assert res.rc == 0, res.err
    assert json.loads(res.out)["model"]["vocab_size"] == 1 << 20
    assert res.within_bounds(10, 1024), (res.cpu_seconds, res.peak_rss_mb)


# ---------------------------------------------------------------- a config.json given on the model step

_CFG = {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
        "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 8192, "vocab_size": 128256,
        "max_position_embeddings": 131072, "tie_word_embeddings": True}


def test_a_given_config_is_kept_by_its_hash_and_plans(tmp_path):
    import json

    from advisor.inputs.answers import ModelBlock
    from advisor.knowledge.load import load_knowledge
    from advisor.planner.spec import keep_config, resolve_model

    raw = json.dumps(_CFG).encode()
    p = keep_config(raw, tmp_path, "config.json")
    assert p.parent == tmp_path and p.read_bytes() == raw and keep_config(raw, tmp_path) == p
    spec = resolve_model(ModelBlock(path=str(p)), load_knowledge())
    assert spec.params_b == pytest.approx(1.236, rel=0.01) and (spec.layers, spec.kv_heads) == (16, 8)  # Llama-3.2-1B


@pytest.mark.parametrize("raw,needle", [
    (b"x" * (5 << 20), "at most 4 MB"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (b"\xff\xfe", "not UTF-8"),
    (b"[1, 2]", "must hold a JSON object"),
    (b'{"hidden_size": 1e300, "num_hidden_layers": 2, "num_attention_heads": 2}', "config.json"),
    (b'{"hidden_size": 64}', "config.json"),
])
def test_a_hostile_config_is_one_line_and_nothing_is_kept(tmp_path, raw, needle):
    from advisor.planner.spec import ModelSpecError, keep_config

    with pytest.raises(ModelSpecError) as err:
        keep_config(raw, tmp_path, "config.json")
    assert needle in str(err.value) and "\n" not in str(err.value)
    assert not list(tmp_path.glob("config-*"))


def test_kept_configs_are_bounded(tmp_path):
    import json

    from advisor.planner.spec import MAX_KEPT_CONFIGS, keep_config

    for i in range(MAX_KEPT_CONFIGS + 8):
        keep_config(json.dumps({**_CFG, "num_hidden_layers": 2 + i}).encode(), tmp_path)
    assert len(list(tmp_path.glob("config-*.json"))) == MAX_KEPT_CONFIGS

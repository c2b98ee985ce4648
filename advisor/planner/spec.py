"""Which model is being planned: from knowledge/models.yaml, from the user's own files, or approximated.

Reading a user's files is I/O, so it happens here at the edge (CLI, UI), never inside the rules engine:
`resolve_model(..., read_files=False)` is the pure variant the rules engine may call.
"""
from __future__ import annotations

import difflib
import functools
import json
import math
import struct
from pathlib import Path

from typing import Literal

from pydantic import BaseModel, Field

from advisor.answers import ModelBlock
from advisor.knowledge import Knowledge


class ModelSpecError(ValueError):
    """The model named in the answers cannot be resolved; one line, with the choices."""


class ModelSpec(BaseModel):
    id: str | None = None
    name: str
    params_b: float = Field(gt=0)
    active_params_b: float = Field(gt=0)
    architecture: str
    layers: int = Field(ge=1)
    hidden_size: int = Field(ge=1)
    attention_heads: int = Field(ge=1)
    kv_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    intermediate_size: int = Field(ge=1)
    vocab_size: int = Field(ge=1)
    max_context: int = Field(ge=1)
    tied_embeddings: bool = False
    source: str  # where the numbers come from: a models.yaml URL, the user's file, or "generic"
    approximate: bool = False
    weights_bytes: int | None = None  # exact size of the user's weights on disk, when known
    file_precision: str | None = None  # the precision those bytes are in (planner precision id)
    file_format: Literal["gguf", "hf", "onnx"] | None = None
    notes: list[str] = Field(default_factory=list)

    @property
    def embedding_params_b(self) -> float:
        """The token embedding table, plus an LM head of the same size unless the two are tied."""
        return self.vocab_size * self.hidden_size * (1 if self.tied_embeddings else 2) / 1e9

    @property
    def matmul_params_b(self) -> float:
        """Active parameters a prompt token multiplies through: the embedding table is a lookup, not a matmul."""
        return max(self.active_params_b - self.vocab_size * self.hidden_size / 1e9, self.active_params_b / 2)

    @property
    def kv_elements_per_token(self) -> int:
        """K and V for every layer: 2 x layers x kv_heads x head_dim (GQA-aware)."""
        return 2 * self.layers * self.kv_heads * self.head_dim


def find_known(name: str, knowledge: Knowledge):
    want = name.strip().lower()
    for m in knowledge.models.models:
        if want == m.id or want in (a.lower() for a in m.aliases) or want == m.name.lower():
            return m
    return None


def _from_known(m) -> ModelSpec:
    inter = m.intermediate_size or int(m.hidden_size * 8 / 3)
    return ModelSpec(id=m.id, name=m.name, params_b=m.params_b, active_params_b=m.active_params_b or m.params_b,
                     architecture=m.architecture, layers=m.layers, hidden_size=m.hidden_size,
                     attention_heads=m.attention_heads, kv_heads=m.kv_heads, head_dim=m.head_dim,
                     intermediate_size=inter, vocab_size=m.vocab_size, max_context=m.max_context, source=m.source,
                     tied_embeddings=m.tied_embeddings)


def generic(params_b: float, architecture: str, knowledge: Knowledge) -> ModelSpec:
    g = knowledge.models.generic
    root = math.sqrt(params_b)
    layers = max(1, round(g.layers_per_sqrt_b * root))
    heads = max(1, round(g.hidden_per_sqrt_b * root / g.head_dim))
    hidden = heads * g.head_dim
    kv = max(1, round(heads * g.kv_heads_ratio))
    return ModelSpec(name=f"generic {params_b:g}B", params_b=params_b, active_params_b=params_b,
                     architecture=architecture, layers=layers, hidden_size=hidden, attention_heads=heads,
                     kv_heads=kv, head_dim=g.head_dim, intermediate_size=int(hidden * g.intermediate_ratio),
                     vocab_size=g.vocab_size, max_context=g.max_context, source=g.source, approximate=True)


def resolve_model(block: ModelBlock, knowledge: Knowledge, read_files: bool = True) -> ModelSpec:
    if block.path and read_files:
        return read_model_path(Path(block.path).expanduser(), block.architecture)
    if block.name:
        known = find_known(block.name, knowledge)
        if known is None:
            ids = [m.id for m in knowledge.models.models]
            close = difflib.get_close_matches(block.name.lower(), ids, n=3, cutoff=0.5)
            hint = f"did you mean {', '.join(close)}? " if close else ""
            raise ModelSpecError(f"model.name {block.name!r} is not in knowledge/models.yaml; {hint}"
                                 f"known: {', '.join(ids)} (or give model.path, or only params_b)")
        return _from_known(known)
    spec = generic(block.params_b, block.architecture, knowledge)
    if block.path:
        spec.notes.append(f"model.path {block.path} was not read here; approximated from params_b")
    return spec


# ---------------------------------------------------------------- the user's own files

def read_model_path(path: Path, architecture: str = "decoder-only") -> ModelSpec:
    """Read once per file version: the UI re-runs its pages, and every probe check reads the same model."""
    if not path.exists():
        raise ModelSpecError(f"model.path not found: {path}")
    files = [path] if path.is_file() else sorted(p for p in path.iterdir() if p.is_file())
    version = tuple((f.name, f.stat().st_mtime_ns, f.stat().st_size) for f in files)
    return _read_model_path(str(path), version, architecture).model_copy(deep=True)


@functools.lru_cache(maxsize=32)
def _read_model_path(name: str, _version: tuple, architecture: str) -> ModelSpec:
    from advisor.planner.gguf_meta import GgufError

    path = Path(name)
    try:
        if path.is_file():
            with open(path, "rb") as f:
                magic = f.read(4)
            if magic != b"GGUF":
                raise ModelSpecError(f"model.path {path}: a file must be GGUF (bad magic {magic!r})")
            return _from_gguf(path, architecture)
        if (path / "genai_config.json").is_file():
            return _from_onnx_dir(path, architecture)
        if (path / "config.json").is_file():
            return _from_hf_dir(path, architecture)
    except (GgufError, OSError, KeyError, ValueError, TypeError, json.JSONDecodeError) as err:
        if isinstance(err, ModelSpecError):
            raise
        raise ModelSpecError(f"model.path {path}: cannot read its metadata ({type(err).__name__}: {err})") from None
    raise ModelSpecError(f"model.path {path}: expected a GGUF file, an HF directory with config.json, "
                         "or an ONNX Runtime GenAI directory with genai_config.json")


def _from_gguf(path: Path, architecture: str) -> ModelSpec:
    from advisor.planner.gguf_meta import FILE_TYPES, read_gguf

    m = read_gguf(path)
    a = m["general.architecture"]

    def get(key: str, default=None):
        return m.get(f"{a}.{key}", default)

    heads = int(get("attention.head_count"))
    hidden = int(get("embedding_length"))
    kv = get("attention.head_count_kv", heads)
    kv = int(max(kv) if isinstance(kv, list) and kv else kv)
    vocab = get("vocab_size") or len(m.get("tokenizer.ggml.tokens", [])) or 32000
    params = m["__params__"]
    experts, used = get("expert_count"), get("expert_used_count")
    active = params / 1e9
    notes = []
    if experts and used:
        ff = int(get("expert_feed_forward_length") or get("feed_forward_length") or 0)
        layers = int(get("block_count"))
        idle = (experts - used) * 3 * hidden * ff * layers
        active = (params - idle) / 1e9
        notes.append(f"MoE: {used} of {experts} experts active per token")
    return ModelSpec(
        name=str(m.get("general.name") or path.stem), params_b=params / 1e9, active_params_b=active,
        architecture=architecture, layers=int(get("block_count")), hidden_size=hidden, attention_heads=heads,
        kv_heads=kv, head_dim=int(get("attention.key_length") or hidden // heads),
        intermediate_size=int(get("feed_forward_length") or hidden * 4), vocab_size=int(vocab),
        max_context=int(get("context_length") or 4096), source=str(path), weights_bytes=path.stat().st_size,
        file_precision=FILE_TYPES.get(m.get("general.file_type"), "gguf_file"), file_format="gguf",
        tied_embeddings=bool(m["__tied__"]), notes=notes)


def _safetensors_params(files: list[Path]) -> int:
    total = 0
    for f in files:
        with open(f, "rb") as fh:
            n = struct.unpack("<Q", fh.read(8))[0]
            header = json.loads(fh.read(n))
        for k, v in header.items():
            if k != "__metadata__":
                total += math.prod(v["shape"])
    return total


def _from_hf_dir(path: Path, architecture: str) -> ModelSpec:
    c = json.loads((path / "config.json").read_text(encoding="utf-8"))
    c = {**c.get("text_config", {}), **c} if "num_hidden_layers" not in c else c
    heads = int(c.get("num_attention_heads") or c.get("num_heads") or c.get("n_head"))
    hidden = int(c.get("hidden_size") or c.get("d_model") or c.get("n_embd"))
    layers = int(c.get("num_hidden_layers") or c.get("num_layers") or c.get("n_layer"))
    kv = int(c.get("num_key_value_heads") or c.get("multi_query_group_num") or heads)
    head_dim = int(c.get("head_dim") or c.get("d_kv") or c.get("kv_channels") or hidden // heads)
    inter = int(c.get("intermediate_size") or c.get("d_ff") or c.get("ffn_hidden_size") or hidden * 4)
    vocab = int(c.get("vocab_size") or c.get("padded_vocab_size") or 32000)
    files = sorted(path.glob("*.safetensors"))
    index = path / "model.safetensors.index.json"
    if index.is_file():  # count only the shards the index names (not a consolidated copy beside them)
        named = set(json.loads(index.read_text(encoding="utf-8")).get("weight_map", {}).values())
        files = [f for f in files if f.name in named] or files
    notes = []
    quant = c.get("quantization_config")
    if files and not quant:
        params = _safetensors_params(files)
        weights = sum(f.stat().st_size for f in files)
    else:
        params = _estimate_params(layers, hidden, heads, kv, head_dim, inter, vocab)
        weights = sum(f.stat().st_size for f in files) if files else None
        notes.append("quantized checkpoint: parameter count estimated from config.json; weights from file sizes"
                     if quant else "no .safetensors files: parameter count estimated from config.json")
    dtype = str(c.get("torch_dtype") or c.get("dtype") or "")
    prec = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}.get(dtype)
    if quant:
        bits = quant.get("bits") or quant.get("w_bit")
        prec = "fp8" if quant.get("quant_method") == "fp8" else {4: "int4", 8: "int8"}.get(bits)
    experts = c.get("num_local_experts") or c.get("num_experts") or c.get("n_routed_experts")
    used = c.get("num_experts_per_tok")
    active = params
    if experts and used:
        ff = int(c.get("moe_intermediate_size") or inter)
        active = max(params - (experts - used) * 3 * hidden * ff * layers, params / experts)
        notes.append(f"MoE: {used} of {experts} experts active per token")
    return ModelSpec(name=path.name, params_b=params / 1e9, active_params_b=active / 1e9, architecture=architecture,
                     layers=layers, hidden_size=hidden, attention_heads=heads, kv_heads=kv, head_dim=head_dim,
                     intermediate_size=inter, vocab_size=vocab,
                     max_context=int(c.get("max_position_embeddings") or c.get("seq_length") or 4096),
                     source=str(path / "config.json"), weights_bytes=weights, file_precision=prec, file_format="hf",
                     tied_embeddings=bool(c.get("tie_word_embeddings", True)), notes=notes)


def _from_onnx_dir(path: Path, architecture: str) -> ModelSpec:
    c = json.loads((path / "genai_config.json").read_text(encoding="utf-8"))["model"]
    d = c["decoder"]
    heads, kv = int(d["num_attention_heads"]), int(d["num_key_value_heads"])
    hidden, layers, head_dim = int(d["hidden_size"]), int(d["num_hidden_layers"]), int(d["head_size"])
    vocab = int(c.get("vocab_size") or 32000)
    inter = hidden * 4
    weights = sum(f.stat().st_size for f in path.iterdir() if f.suffix in (".onnx", ".data") or f.name.endswith(
        ".onnx.data"))
    params = _estimate_params(layers, hidden, heads, kv, head_dim, inter, vocab)
    return ModelSpec(name=path.name, params_b=params / 1e9, active_params_b=params / 1e9, architecture=architecture,
                     layers=layers, hidden_size=hidden, attention_heads=heads, kv_heads=kv, head_dim=head_dim,
                     intermediate_size=inter, vocab_size=vocab, max_context=int(c.get("context_length") or 4096),
                     source=str(path / "genai_config.json"), weights_bytes=weights, file_precision="ort_int4"
                     if "int4" in path.name else None, file_format="onnx",
                     notes=["ONNX export: parameter count estimated from genai_config.json; weights from file sizes"])


def _estimate_params(layers: int, hidden: int, heads: int, kv: int, head_dim: int, inter: int, vocab: int) -> int:
    attn = hidden * heads * head_dim * 2 + hidden * kv * head_dim * 2
    mlp = 3 * hidden * inter
    return layers * (attn + mlp) + vocab * hidden

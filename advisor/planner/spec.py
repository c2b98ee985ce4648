"""Which model is being planned: from knowledge/models.yaml, from the user's own files, or approximated.

Reading a user's files is I/O, so it happens here at the edge (CLI, UI), never inside the rules engine:
`resolve_model(..., read_files=False)` is the pure variant the rules engine may call.
"""
from __future__ import annotations

import difflib
import functools
import math
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from advisor.inputs.answers import ModelBlock
from advisor.knowledge.load import Knowledge
from advisor.knowledge.names import find_known, name_forms  # noqa: F401 - the planner's callers import them from here


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
    modality: str = "text"
    gated_mlp: bool = True
    decoder_layers: int | None = None
    moe_experts: int | None = None
    moe_active_experts: int | None = None
    moe_shared_experts: int = 0
    moe_intermediate_size: int | None = None
    shared_expert_intermediate_size: int | None = None
    moe_layers: int | None = None
    kv_lora_rank: int | None = None  # MLA: the compressed KV latent (DeepSeek-V2/V3, Kimi K2)
    q_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    qk_nope_head_dim: int | None = None
    v_head_dim: int | None = None
    index_head_dim: int | None = None  # DeepSeek Sparse Attention: the indexer's key width (its own key cache)
    index_topk: int | None = None  # ... and the earlier tokens it picks for each query to attend to
    index_n_heads: int | None = None  # ... with this many heads scoring every pair of tokens
    sliding_window: int | None = None  # tokens a sliding-window layer attends to
    sliding_layers: int = 0  # how many of the layers use that window
    extra_params_b: float = 0.0
    source: str  # where the numbers come from: a models.yaml URL, the user's file, or "generic"
    approximate: bool = False
    weights_bytes: int | None = None  # exact size of the user's weights on disk, when known
    file_precision: str | None = None  # the precision those bytes are in (planner precision id)
    file_format: Literal["gguf", "hf", "onnx"] | None = None
    # the KV cache dtype the checkpoint's quantization_config declares ("fp8"), "none" when its config.json was read
    # and declares none, None when no config.json was given (the engine's usual checkpoint is assumed)
    file_kv_dtype: Literal["fp8", "none"] | None = None
    notes: list[str] = Field(default_factory=list)
    unknown_name: bool = False  # model.name was not in the catalogue: planned as a generic model of params_b
    suggestions: list[str] = Field(default_factory=list)  # catalogue ids close to that name
    # what the engines' registries are keyed by: config.json `architectures` (or the catalogue's), its model_type,
    # and a GGUF file's general.architecture (advisor.knowledge.support.class_cell)
    hf_architectures: list[str] = Field(default_factory=list)
    model_type: str | None = None
    gguf_architecture: str | None = None

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
        """K and V for every layer at full length: 2 x layers x kv_heads x head_dim (GQA-aware), or the MLA latent."""
        from advisor.knowledge.shapes import kv_layout

        lay = kv_layout(self, windowed_native=False)
        return lay.full + lay.windowed

    @property
    def attention_kind(self) -> str:
        if self.kv_lora_rank:
            return "mla"
        return "mha" if self.kv_heads == self.attention_heads else ("mqa" if self.kv_heads == 1 else "gqa")


_SHAPE_FIELDS = ("gated_mlp", "decoder_layers", "moe_experts", "moe_active_experts", "moe_shared_experts",
                 "moe_intermediate_size", "shared_expert_intermediate_size", "moe_layers", "kv_lora_rank",
                 "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "index_head_dim", "index_topk",
                 "index_n_heads", "sliding_window", "sliding_layers", "extra_params_b", "modality", "tied_embeddings")


def known_spec(m) -> ModelSpec:
    """The planner's ModelSpec for a catalogue entry (knowledge/models.yaml)."""
    inter = m.intermediate_size or int(m.hidden_size * 8 / 3)
    return ModelSpec(id=m.id, name=m.name, params_b=m.params_b, active_params_b=m.active_params_b or m.params_b,
                     architecture=m.architecture, layers=m.layers, hidden_size=m.hidden_size,
                     attention_heads=m.attention_heads, kv_heads=m.kv_heads, head_dim=m.head_dim,
                     intermediate_size=inter, vocab_size=m.vocab_size, max_context=m.max_context, source=m.source,
                     hf_architectures=[m.hf_architecture] if m.hf_architecture else [],
                     **{f: getattr(m, f) for f in _SHAPE_FIELDS})


def generic(params_b: float, architecture: str, knowledge: Knowledge, name: str | None = None) -> ModelSpec:
    """A decoder shaped like the catalogue's dense GQA models: width and depth from power laws fitted on them
    (models.yaml `generic`), head_dim 128 with 8 KV heads from 7B up (a query-head count that is a multiple of 8, so
    a tensor-parallel split of 2, 4 or 8 always exists), and the MLP width solved so that the parameters come out
    at params_b."""
    g = knowledge.models.generic
    p = params_b * 1e9
    big = params_b >= g.gqa_from_b
    head_dim = g.head_dim if params_b >= g.small_below_b else g.small_head_dim
    step = head_dim * (8 if params_b >= g.small_below_b else g.small_q_per_kv)  # whole (TP-divisible) head groups
    fit = g.large if big else g.small
    hidden = max(step, round(fit.hidden_coef * params_b ** fit.hidden_exp / step) * step)
    layers = max(2, round(fit.layers_coef * params_b ** fit.layers_exp))
    heads = hidden // head_dim
    kv = g.kv_heads if big else (g.small_kv_heads or max(1, heads // g.small_q_per_kv))
    while heads % kv:
        kv -= 1
    vocab = g.vocab_size if params_b >= g.small_below_b else g.small_vocab_size
    tied = params_b < g.small_below_b
    emb = vocab * hidden * (1 if tied else 2)
    attn = 2 * hidden * heads * head_dim + 2 * hidden * kv * head_dim
    inter = max(hidden, round((p - emb - layers * attn) / (3 * layers * hidden)))
    return ModelSpec(name=name or f"generic {params_b:g}B", params_b=params_b, active_params_b=params_b,
                     architecture=architecture, layers=layers, hidden_size=hidden, attention_heads=heads,
                     kv_heads=kv, head_dim=head_dim, intermediate_size=inter, vocab_size=vocab,
                     max_context=g.max_context, tied_embeddings=tied, source=g.source, approximate=True,
                     modality="vision" if architecture == "cnn" else "text")


def resolve_model(block: ModelBlock, knowledge: Knowledge, read_files: bool = True) -> ModelSpec:
    if block.path and read_files:
        return _with_modality(read_model_path(Path(block.path).expanduser(), block.architecture), block)
    if block.name:
        known = find_known(block.name, knowledge)
        if known is not None:
            return _with_modality(known_spec(known), block)
        if not block.size_known:  # neither the answers nor the name give a size: ask, never plan 7 B unasked
            close = suggestions(block.name, knowledge)
            raise ModelSpecError(
                f"model.name {printable(block.name, 80)!r} is not in the catalogue and its size is not known: give "
                "model.params_b (billions) or model.path (its config.json)"
                + (f"; did you mean: {', '.join(close)}?" if close else ""))
        spec = generic(block.params_b, block.architecture, knowledge, name=block.name.strip()[:200])
        spec.unknown_name = True  # make_plan says so, in the page's language
        spec.suggestions = suggestions(block.name, knowledge)
        return _with_modality(spec, block)
    spec = generic(block.params_b, block.architecture, knowledge)
    if block.path:
        spec.notes.append(f"model.path {block.path} was not read here; approximated from params_b")
    return _with_modality(spec, block)


def _with_modality(spec: ModelSpec, block: ModelBlock) -> ModelSpec:
    if block.modality:
        spec.modality = block.modality
    return spec


def suggestions(name: str, knowledge: Knowledge, n: int = 3) -> list[str]:
    """Catalogue ids close to a name the catalogue does not hold (ids, names and aliases are all compared)."""
    want = name.strip().lower()
    names: dict[str, str] = {}
    for m in knowledge.models.models:
        for x in (m.id, m.name, *m.aliases):
            names.setdefault(x.lower(), m.id)
    tail = want.rsplit("/", 1)[-1]
    out: list[str] = []
    for hit in difflib.get_close_matches(tail, list(names), n=12, cutoff=0.6):
        if names[hit] not in out:
            out.append(names[hit])
    return out[:n]


# ---------------------------------------------------------------- the user's own files

def read_model_path(path: Path, architecture: str = "decoder-only") -> ModelSpec:
    """Read once per file version: the UI re-runs its pages, and every probe check reads the same model.

    Every failure, however the file is broken, is a ModelSpecError of one line."""
    from advisor.planner import model_files as mf

    try:
        what = mf.kind(path)
        files = [path] if what == "file" else mf.regular_files(path)
        version = tuple((f.name, f.stat().st_mtime_ns, f.stat().st_size) for f in files)
    except mf.ModelFileError as err:
        raise ModelSpecError(f"model.path {err}") from None
    except OSError as err:
        raise ModelSpecError(f"model.path {path}: cannot read ({err.strerror or type(err).__name__})") from None
    return _read_model_path(str(path), version, architecture).model_copy(deep=True)


@functools.lru_cache(maxsize=32)
def _read_model_path(name: str, _version: tuple, architecture: str) -> ModelSpec:
    from pydantic import ValidationError

    from probes.gguf_meta import GgufError
    from advisor.planner.model_files import Budget, ModelFileError, clip

    path = Path(name)
    try:
        if path.is_file():
            with open(path, "rb") as f:
                magic = f.read(4)
            if magic == b"GGUF":
                return _from_gguf(path, architecture)
            if path.suffix.lower() == ".json":  # a config.json alone: the shape without the weights
                return _from_config_file(path, architecture)
            # the bytes read are never echoed: a path from a shared link may name a file the reader must not see
            raise ModelSpecError(f"model.path {path}: a file must be GGUF or a config.json (it is neither)")
        if (path / "genai_config.json").is_file():
            return _from_onnx_dir(path, architecture)
        if (path / "config.json").is_file():
            return _from_hf_dir(path, architecture, Budget())
    except ModelSpecError:
        raise
    except (GgufError, ModelFileError) as err:
        raise ModelSpecError(f"model.path {path}: {err}") from None
    except ValidationError as err:
        e = err.errors()[0]
        field = ".".join(str(x) for x in e["loc"])
        raise ModelSpecError(f"model.path {path}: {field} {e['msg'].lower()}") from None
    except OSError as err:
        raise ModelSpecError(f"model.path {path}: cannot read ({err.strerror or type(err).__name__})") from None
    except Exception as err:  # a crafted header: one line, never a traceback
        raise ModelSpecError(f"model.path {path}: cannot read its metadata "
                             f"({type(err).__name__}: {clip(str(err), 100)})") from None
    raise ModelSpecError(f"model.path {path}: expected a GGUF file, an HF directory with config.json, "
                         "or an ONNX Runtime GenAI directory with genai_config.json")


# Plausible ranges for a model's shape: wide enough for any published model, narrow enough that a crafted
# header cannot overflow the planner's arithmetic.
_LAYERS, _WIDTH, _HEADS, _VOCAB, _CONTEXT = 10_000, 1 << 20, 1 << 16, 1 << 27, 1 << 31


def _from_gguf(path: Path, architecture: str) -> ModelSpec:
    from probes.gguf_meta import FILE_TYPES, read_gguf
    from advisor.planner.model_files import ModelFileError, clip, count

    m = read_gguf(path)
    a = m.get("general.architecture")
    if not isinstance(a, str) or not a:
        raise ModelFileError("the GGUF header has no general.architecture")

    def get(key: str, default=None):
        return m.get(f"{a}.{key}", default)

    def need(key: str, hi: int, default=None) -> int:
        v = get(key, default)
        if v is None:
            raise ModelFileError(f"the GGUF header has no {clip(a)}.{key}")
        if isinstance(v, list):  # per-layer values (e.g. head_count_kv): plan with the largest
            v = max(v) if len(v) and len(v) <= 64 else None
        return count(v, f"{clip(a)}.{key}", 1, hi)

    heads = need("attention.head_count", _HEADS)
    hidden = need("embedding_length", _WIDTH)
    kv = need("attention.head_count_kv", _HEADS, heads)
    layers = need("block_count", _LAYERS)
    tokens = m.get("tokenizer.ggml.tokens")
    vocab = get("vocab_size") or (len(tokens) if isinstance(tokens, list) else 0) or 32000
    vocab = count(vocab, "vocab_size", 1, _VOCAB)
    params = m["__params__"]
    if params < 1000:
        raise ModelFileError(f"the GGUF tensors hold {params:,} weights; not a model")
    head_dim = need("attention.key_length", _WIDTH, max(1, hidden // heads))
    inter = need("feed_forward_length", 1 << 24, hidden * 4)
    experts, used = get("expert_count"), get("expert_used_count")
    active = params / 1e9
    notes = []
    if experts and used:
        experts, used = count(experts, "expert_count", 1, _HEADS), count(used, "expert_used_count", 1, _HEADS)
        ff = need("expert_feed_forward_length", 1 << 24, inter)
        idle = max(0, experts - used) * 3 * hidden * ff * layers
        active = max(params - idle, params / experts) / 1e9
        notes.append(f"MoE: {used} of {experts} experts active per token")
    name = m.get("general.name")
    return ModelSpec(
        name=printable(name) if isinstance(name, str) and printable(name) else path.stem[:200], params_b=params / 1e9,
        active_params_b=active, architecture=architecture, layers=layers, hidden_size=hidden,
        attention_heads=heads, kv_heads=kv, head_dim=head_dim, intermediate_size=inter, vocab_size=vocab,
        max_context=need("context_length", _CONTEXT, 4096), source=str(path), weights_bytes=path.stat().st_size,
        file_precision=FILE_TYPES.get(m.get("general.file_type"), "gguf_file"), file_format="gguf",
        gguf_architecture=class_name(a, 60),
        tied_embeddings=bool(m["__tied__"]), notes=notes)


def _pick(c: dict, keys: tuple[str, ...], what: str, hi: int, default: int | None = None) -> int:
    from advisor.planner.model_files import ModelFileError, count

    for k in keys:
        if c.get(k) is not None:
            return count(c[k], f"config.json {k}", 1, hi)
    if default is None:
        raise ModelFileError(f"config.json gives no {what} ({' / '.join(keys)})")
    return default


_PLAIN_MLP = ("bert", "roberta", "xlm-roberta", "nomic_bert", "mpnet", "whisper", "bart", "mbart", "vit", "clip",
              "clip_vision_model", "gpt2", "distilbert", "electra")


def printable(name: str, limit: int = 200) -> str:
    """A name from a model's own files (config.json _name_or_path, GGUF general.name): control characters become
    spaces, so that it cannot rewrite a terminal or break a line of the report."""
    return "".join(ch if ch.isprintable() else " " for ch in name).strip()[:limit]


def class_name(value: str, limit: int = 100) -> str:
    """An architecture class or type name from a model's own files, kept to the characters such names use (letters,
    digits, `_`, `-`, `.`), so that it can be shown and looked up without escaping surprises."""
    return "".join(ch for ch in value[:limit * 2] if ch.isascii() and (ch.isalnum() or ch in "_-."))[:limit]


def config_shape(c: dict, architecture: str) -> dict:
    """ModelSpec fields from a Hugging Face config.json object: the transformer's shape, MoE, MLA, sliding-window
    layers and the modality. Every number is checked (finite, whole, in a plausible range) and every failure is one
    ModelFileError line."""
    from advisor.planner import model_files as mf

    model_type = str(c.get("model_type") or "")[:40]
    archs = c.get("architectures") if isinstance(c.get("architectures"), list) else []
    archs = [n for n in (class_name(a) for a in archs[:8] if isinstance(a, str)) if n]
    vision = isinstance(c.get("vision_config"), dict)
    if "num_hidden_layers" not in c and "encoder_layers" not in c:
        c = {**mf.section(c, "text_config", "config.json"), **c}
    heads = _pick(c, ("num_attention_heads", "num_heads", "n_head", "encoder_attention_heads"), "attention head count",
                  _HEADS)
    hidden = _pick(c, ("hidden_size", "d_model", "n_embd"), "hidden size", _WIDTH)
    layers = _pick(c, ("num_hidden_layers", "num_layers", "n_layer", "encoder_layers"), "layer count", _LAYERS)
    kv = _pick(c, ("num_key_value_heads", "multi_query_group_num"), "KV heads", _HEADS, heads)
    inter = _pick(c, ("intermediate_size", "d_ff", "ffn_hidden_size", "encoder_ffn_dim"), "MLP width", 1 << 24, hidden * 4)
    vocab = _pick(c, ("vocab_size", "padded_vocab_size"), "vocabulary", _VOCAB, 32000)
    out: dict = dict(hf_architectures=archs, model_type=class_name(model_type, 40) or None, layers=layers,
                     hidden_size=hidden, attention_heads=heads, kv_heads=kv, intermediate_size=inter, vocab_size=vocab, tied_embeddings=bool(c.get("tie_word_embeddings", True)),
                     max_context=_pick(c, ("max_position_embeddings", "seq_length", "n_positions",
                                           "max_target_positions"), "context", _CONTEXT, 4096))
    if c.get("kv_lora_rank") is not None:  # MLA
        for key in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
            out[key] = _pick(c, (key,), key, _WIDTH)
        out["q_lora_rank"] = _pick(c, ("q_lora_rank",), "q_lora_rank", _WIDTH) if c.get("q_lora_rank") else None
        out["head_dim"] = out["qk_nope_head_dim"] + out["qk_rope_head_dim"]
        if c.get("index_head_dim") is not None:  # DeepSeek Sparse Attention's indexer keeps a key cache of its own
            out["index_head_dim"] = _pick(c, ("index_head_dim",), "index_head_dim", _WIDTH)
            for key, hi in (("index_topk", 1 << 22), ("index_n_heads", _HEADS)):
                if c.get(key) is not None:
                    out[key] = _pick(c, (key,), key, hi)
    else:
        out["head_dim"] = _pick(c, ("head_dim", "d_kv", "kv_channels"), "head size", _WIDTH, max(1, hidden // heads))
    experts = next((c[k] for k in ("n_routed_experts", "num_local_experts", "num_experts") if c.get(k)), None)
    dense = c.get("first_k_dense_replace") or 0
    dense = mf.count(dense, "config.json first_k_dense_replace", 0, layers) if dense else 0
    if experts and c.get("num_experts_per_tok") and dense < layers:
        out["moe_experts"] = mf.count(experts, "config.json num_experts", 2, _HEADS)
        out["moe_active_experts"] = mf.count(c["num_experts_per_tok"], "config.json num_experts_per_tok", 1,
                                             out["moe_experts"])
        out["moe_intermediate_size"] = _pick(c, ("moe_intermediate_size", "intermediate_size"), "MoE width", 1 << 24)
        shared = c.get("n_shared_experts") or (1 if c.get("shared_expert_intermediate_size") else 0)
        out["moe_shared_experts"] = mf.count(shared, "config.json n_shared_experts", 0, _HEADS) if shared else 0
        if c.get("shared_expert_intermediate_size"):
            out["shared_expert_intermediate_size"] = _pick(c, ("shared_expert_intermediate_size",), "shared width",
                                                           1 << 24)
        step = c.get("interleave_moe_layer_step") or c.get("decoder_sparse_step") or 1
        step = mf.count(step, "config.json interleave_moe_layer_step", 1, layers)
        out["moe_layers"] = max(1, (layers - dense) // step)
    window = c.get("sliding_window")
    if window and c.get("use_sliding_window", True) is not False:
        window = mf.count(window, "config.json sliding_window", 1, _CONTEXT)
        types = c.get("layer_types")
        pattern = c.get("sliding_window_pattern")
        if types is not None:  # the per-layer list, when given, is the truth; a malformed one is an error, not a guess
            if not isinstance(types, list) or len(types) != layers:
                raise mf.ModelFileError(f"config.json layer_types must list one type per layer ({layers})")
            n = sum(1 for t in types if t == "sliding_attention")
        elif pattern:
            pattern = mf.count(pattern, "config.json sliding_window_pattern", 1, layers)
            n = layers - layers // pattern
        elif model_type == "gemma2":
            n = layers // 2
        else:
            n = layers
        if n and window < out["max_context"]:
            out["sliding_window"], out["sliding_layers"] = window, min(n, layers)
    if c.get("is_encoder_decoder") or model_type in ("whisper", "t5", "bart", "mbart"):
        architecture = "encoder-decoder"
        if c.get("decoder_layers") and c.get("decoder_layers") != layers:
            out["decoder_layers"] = mf.count(c["decoder_layers"], "config.json decoder_layers", 1, _LAYERS)
    ff = str(c.get("feed_forward_proj") or "")
    out["gated_mlp"] = ff.startswith("gated") if ff else model_type not in _PLAIN_MLP
    out["architecture"] = architecture
    if model_type == "whisper" or any("Speech" in a or "Whisper" in a for a in archs):
        out["modality"] = "speech"
    elif vision or any("VL" in a or "Vision" in a or "ImageText" in a for a in archs):
        out["modality"] = "vision-language"
    elif model_type in ("bert", "roberta", "xlm-roberta", "nomic_bert", "mpnet") or any(
            a.endswith(("Model", "ForSentenceEmbedding")) and "CausalLM" not in a for a in archs):
        out["modality"] = "embedding"
    return out


def _quant_precision(c: dict, quant: dict) -> str | None:
    dtype = str(c.get("torch_dtype") or c.get("dtype") or "")
    prec = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}.get(dtype)
    if quant:
        bits = quant.get("bits") or quant.get("w_bit")
        method = str(quant.get("quant_method") or "")
        inner = _quant_inner(quant)
        algo = str(inner.get("quant_algo") or quant.get("quant_algo") or "").upper()  # ModelOpt: FP8 / NVFP4 ...
        prec = ("fp8" if method == "fp8" or (method.startswith("modelopt") and algo.startswith("FP8")) else
                "fp4" if method in ("mxfp4", "nvfp4", "modelopt_fp4") or algo in ("NVFP4", "MXFP4") else
                {4: "int4", 8: "int8"}.get(bits))
    return prec


def _quant_inner(quant: dict) -> dict:
    """ModelOpt's nested form ({"quantization": {...}}) or the flat one: the dict its algorithms are named in."""
    return quant.get("quantization") if isinstance(quant.get("quantization"), dict) else quant


def _kv_declared(quant: dict) -> Literal["fp8", "none"]:
    """What KV dtype a config.json's quantization_config declares, read as vLLM's get_kv_cache_quant_algo_string and
    SGLang's configure_kv_cache_dtype read it: a ModelOpt checkpoint's kv_cache_quant_algo (or kv_cache_scheme of
    8-bit floats). Anything else declares none (the engines' auto then keeps the model's dtype)."""
    if not quant or not str(quant.get("quant_method") or "").startswith("modelopt"):
        return "none"
    inner = _quant_inner(quant)
    kv = (inner.get("kv_cache_scheme") or quant.get("kv_cache_scheme") or inner.get("kv_cache_quant_algo")
          or quant.get("kv_cache_quant_algo"))
    if isinstance(kv, dict):
        kv = "fp8" if kv.get("dynamic") is False and kv.get("num_bits") == 8 and kv.get("type") == "float" else None
    return "fp8" if isinstance(kv, str) and kv.lower() == "fp8" else "none"  # (vLLM maps "fp8" alone)


def spec_from_config(c: dict, source: str, architecture: str = "decoder-only", name: str | None = None) -> ModelSpec:
    """A model known by its config.json alone (no weights): its parameters follow from the shapes."""
    from advisor.knowledge.shapes import params

    shape = config_shape(c, architecture)
    spec = ModelSpec(name=(name or source)[:200], params_b=1, active_params_b=1, source=source, **shape)
    p = params(spec)
    if p.total < 1000:
        from advisor.planner.model_files import ModelFileError
        raise ModelFileError("config.json describes a model of under 1,000 weights; not a model")
    spec.params_b, spec.active_params_b = p.total / 1e9, p.active / 1e9
    quant = c.get("quantization_config") if isinstance(c.get("quantization_config"), dict) else {}
    spec.file_precision = _quant_precision(c, quant)
    spec.file_kv_dtype = _kv_declared(quant)
    spec.notes.append("parameter count computed from config.json's shapes (no weights read)")
    if spec.moe_experts:
        spec.notes.append(f"MoE: {spec.moe_active_experts} of {spec.moe_experts} experts active per token")
    return spec


MAX_KEPT_CONFIGS = 32  # pasted / uploaded config.json files kept in the user cache dir; older ones are removed


def keep_config(raw: bytes, directory: Path, name: str = "config.json") -> Path:
    """Check a config.json given as bytes (a paste or an upload) as model.path would read it, then keep it in
    `directory` under its content hash, so that the answers can point model.path at it (and a reload, a link or the
    CLI finds the same file). The newest MAX_KEPT_CONFIGS are kept. Raises ModelSpecError (one line)."""
    import hashlib

    from advisor.planner import model_files as mf

    try:
        data = mf.parse_json(raw, name)
    except mf.ModelFileError as err:
        raise ModelSpecError(str(err)) from None
    if not isinstance(data, dict):
        raise ModelSpecError(f"{name} must hold a JSON object, not a {type(data).__name__}")
    try:
        spec_from_config(data, name)
    except mf.ModelFileError as err:
        raise ModelSpecError(f"{name}: {err}") from None
    except Exception as err:  # a crafted config: one line, never a traceback
        raise ModelSpecError(f"{name}: cannot read it ({type(err).__name__}: {mf.clip(str(err), 100)})") from None
    import os

    from probes.cache import write_cache_file

    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"config-{hashlib.sha256(raw).hexdigest()[:16]}.json"
    if path.is_file() and not path.is_symlink():
        try:
            os.utime(path)  # kept again: the newest, so a later save's pruning keeps it
        except OSError:
            pass
    else:
        # a temp file of its own beside the kept one, then a rename: sessions saving the same file at once (one
        # temp name per hash took one session's temp away from another's rename) all succeed, each whole
        write_cache_file(path, raw)
    kept = []
    for f in directory.glob("config-*.json"):
        try:  # another session may remove a file between the listing and this look
            if f.is_file() and not f.is_symlink():
                kept.append((f.stat().st_mtime, f.name, f))
        except OSError:
            continue
    for _, _, old in sorted(kept, reverse=True)[MAX_KEPT_CONFIGS:]:
        if old != path:
            old.unlink(missing_ok=True)
    return path


def _from_config_file(path: Path, architecture: str) -> ModelSpec:
    from advisor.planner import model_files as mf

    c = mf.read_object(path)
    named = c.get("_name_or_path")
    name = printable(named) if isinstance(named, str) and printable(named) else (
        path.parent.name if path.name == "config.json" else path.stem)
    spec = spec_from_config(c, str(path), architecture, name=name)
    spec.file_format = "hf"
    return spec


def _from_hf_dir(path: Path, architecture: str, budget) -> ModelSpec:
    from advisor.knowledge.shapes import params as shape_params
    from advisor.planner import model_files as mf

    c = mf.read_object(path / "config.json")
    shape = config_shape(c, architecture)
    files = [f for f in mf.regular_files(path) if f.suffix == ".safetensors"]
    index = path / "model.safetensors.index.json"
    if index.is_file():  # count only the shards the index names (not a consolidated copy beside them)
        wmap = mf.section(mf.read_object(index, mf.MAX_INDEX_BYTES), "weight_map", index.name)
        named = {v for v in wmap.values() if isinstance(v, str)}
        files = [f for f in files if f.name in named] or files
    notes = []
    quant = mf.section(c, "quantization_config", "config.json")
    spec = ModelSpec(name=path.name, params_b=1, active_params_b=1, source=str(path / "config.json"),
                     file_format="hf", file_precision=_quant_precision(c, quant),
                     file_kv_dtype=_kv_declared(quant), **shape)
    implied = shape_params(spec)
    if files and not quant:
        params = mf.safetensors_params(files, budget)
        if params < 1000:
            raise mf.ModelFileError(f"the safetensors files hold {params:,} weights; not a model")
        weights = sum(f.stat().st_size for f in files)
        active = params * implied.active / implied.total if implied.total else params
    else:
        params, active = implied.total, implied.active
        weights = sum(f.stat().st_size for f in files) if files else None
        notes.append("quantized checkpoint: parameter count estimated from config.json; weights from file sizes"
                     if quant else "no .safetensors files: parameter count estimated from config.json")
    if spec.moe_experts:
        notes.append(f"MoE: {spec.moe_active_experts} of {spec.moe_experts} experts active per token")
    spec.params_b, spec.active_params_b = params / 1e9, active / 1e9
    spec.weights_bytes, spec.notes = weights, notes
    return spec


def _from_onnx_dir(path: Path, architecture: str) -> ModelSpec:
    from advisor.planner import model_files as mf

    root = mf.read_object(path / "genai_config.json")
    c = mf.section(root, "model", "genai_config.json")
    d = mf.section(c, "decoder", "genai_config.json model")

    def n(src: dict, key: str, hi: int, default: int | None = None) -> int:
        if src.get(key) is None:
            if default is None:
                raise mf.ModelFileError(f"genai_config.json gives no {key}")
            return default
        return mf.count(src[key], f"genai_config.json {key}", 1, hi)

    heads, kv = n(d, "num_attention_heads", _HEADS), n(d, "num_key_value_heads", _HEADS)
    hidden, layers, head_dim = n(d, "hidden_size", _WIDTH), n(d, "num_hidden_layers", _LAYERS), n(d, "head_size", _WIDTH)
    vocab = n(c, "vocab_size", _VOCAB, 32000)
    inter = hidden * 4
    weights = sum(f.stat().st_size for f in mf.regular_files(path)
                  if f.suffix in (".onnx", ".data") or f.name.endswith(".onnx.data"))
    params = _estimate_params(layers, hidden, heads, kv, head_dim, inter, vocab)
    return ModelSpec(name=path.name, params_b=params / 1e9, active_params_b=params / 1e9, architecture=architecture,
                     layers=layers, hidden_size=hidden, attention_heads=heads, kv_heads=kv, head_dim=head_dim,
                     intermediate_size=inter, vocab_size=vocab, max_context=n(c, "context_length", _CONTEXT, 4096),
                     source=str(path / "genai_config.json"), weights_bytes=weights, file_precision="ort_int4"
                     if "int4" in path.name else None, file_format="onnx",
                     notes=["ONNX export: parameter count estimated from genai_config.json; weights from file sizes"])


def _estimate_params(layers: int, hidden: int, heads: int, kv: int, head_dim: int, inter: int, vocab: int) -> int:
    attn = hidden * heads * head_dim * 2 + hidden * kv * head_dim * 2
    mlp = 3 * hidden * inter
    return layers * (attn + mlp) + vocab * hidden

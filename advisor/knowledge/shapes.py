"""What a model's config implies: its parameter count from the tensor shapes, and its KV cache per token by
attention kind. Pure arithmetic on numbers, so that the catalogue's schema (each entry's shapes must add up to its
own `params_b`), the planner and the tests share one formula.

Biases and norms are left out (under 0.1 % of any catalogue model). A gated MLP (SwiGLU / GeGLU) has three
matrices, a plain one (GELU / ReLU: BERT, T5 v1.0, BART, Whisper, ViT) two.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class Shape(Protocol):
    """The fields of a catalogue entry (or the planner's ModelSpec) that the formulas read."""

    architecture: str
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    intermediate_size: int | None
    vocab_size: int
    tied_embeddings: bool
    gated_mlp: bool
    decoder_layers: int | None
    moe_experts: int | None
    moe_active_experts: int | None
    moe_shared_experts: int
    moe_intermediate_size: int | None
    shared_expert_intermediate_size: int | None
    moe_layers: int | None
    kv_lora_rank: int | None
    q_lora_rank: int | None
    qk_rope_head_dim: int | None
    qk_nope_head_dim: int | None
    v_head_dim: int | None
    extra_params_b: float


def _attention(s: Shape) -> int:
    h = s.hidden_size
    if s.kv_lora_rank:  # multi-head latent attention (DeepSeek-V2/V3, Kimi K2)
        qk = (s.qk_nope_head_dim or 0) + (s.qk_rope_head_dim or 0)
        q = h * s.q_lora_rank + s.q_lora_rank * s.attention_heads * qk if s.q_lora_rank else h * s.attention_heads * qk
        kv = h * (s.kv_lora_rank + (s.qk_rope_head_dim or 0)) + s.kv_lora_rank * s.attention_heads * (
            (s.qk_nope_head_dim or 0) + (s.v_head_dim or 0))
        return q + kv + s.attention_heads * (s.v_head_dim or 0) * h
    return 2 * h * s.attention_heads * s.head_dim + 2 * h * s.kv_heads * s.head_dim


def _mlp(s: Shape, width: int) -> int:
    return (3 if s.gated_mlp else 2) * s.hidden_size * width


@dataclass(frozen=True)
class Params:
    total: float  # parameters
    active: float  # parameters one token passes through (MoE: the routed experts it uses)
    routed_active: float = 0.0  # of those, the routed experts' (0 for a dense model)


def params(s: Shape) -> Params:
    """Parameters implied by the shapes (embedding table and LM head included; extra_params_b added as is)."""
    h, inter = s.hidden_size, s.intermediate_size or s.hidden_size * 4
    attn, dense = _attention(s), _mlp(s, inter)
    emb = s.vocab_size * h * (1 if s.tied_embeddings else 2)
    extra = s.extra_params_b * 1e9
    if s.architecture == "encoder-decoder":
        dec = s.decoder_layers or s.layers
        total = s.layers * (attn + dense) + dec * (2 * attn + dense) + emb + extra
        return Params(total, total)
    if not s.moe_experts:
        total = s.layers * (attn + dense) + emb + extra
        return Params(total, total)
    moe_layers = s.moe_layers if s.moe_layers is not None else s.layers
    expert = _mlp(s, s.moe_intermediate_size or inter)
    shared = s.moe_shared_experts * _mlp(s, s.shared_expert_intermediate_size or s.moe_intermediate_size or inter)
    router = h * s.moe_experts
    per_moe = s.moe_experts * expert + shared + router
    per_moe_active = (s.moe_active_experts or 1) * expert + shared + router
    base = s.layers * attn + (s.layers - moe_layers) * dense + emb + extra
    return Params(base + moe_layers * per_moe, base + moe_layers * per_moe_active,
                  moe_layers * (s.moe_active_experts or 1) * expert)


@dataclass(frozen=True)
class KvLayout:
    """KV cache elements per token, split by how long each kind of layer keeps a token."""

    full: int  # elements per token in layers that keep every token of the context
    windowed: int  # elements per token in sliding-window layers, which keep at most `window` tokens
    window: int | None
    kind: str  # "mha" | "gqa" | "mqa" | "mla" | "mla-expanded"

    def elements(self, context: int) -> float:
        """Elements one sequence of `context` tokens holds."""
        held = min(context, self.window) if self.window else context
        return self.full * context + self.windowed * held

    def per_token(self, context: int) -> float:
        """Elements per token at that context (sliding-window layers amortised over the context)."""
        return self.elements(context) / context if context > 0 else float(self.full + self.windowed)


def kv_layout(s: Shape, mla_native: bool = True, windowed_native: bool = True,
              sliding_window: int | None = None, sliding_layers: int = 0) -> KvLayout:
    """MHA/GQA: 2 x kv_heads x head_dim per layer. MLA run natively: one latent of kv_lora_rank + qk_rope_head_dim
    per layer (no separate K and V). MLA on an engine without it: the expanded K (nope + rope) and V per head.
    Sliding-window layers hold at most their window when the engine sizes them so; otherwise they count in full."""
    if s.architecture in ("encoder", "cnn"):
        return KvLayout(0, 0, None, "none")
    layers = s.decoder_layers or s.layers if s.architecture == "encoder-decoder" else s.layers
    if s.kv_lora_rank:
        if mla_native:
            per_layer, kind = s.kv_lora_rank + (s.qk_rope_head_dim or 0), "mla"
        else:
            per_layer = s.attention_heads * ((s.qk_nope_head_dim or 0) + (s.qk_rope_head_dim or 0) + (s.v_head_dim or 0))
            kind = "mla-expanded"
    else:
        per_layer = 2 * s.kv_heads * s.head_dim
        kind = "mha" if s.kv_heads == s.attention_heads else ("mqa" if s.kv_heads == 1 else "gqa")
    win = sliding_layers if sliding_window and sliding_layers and windowed_native else 0
    return KvLayout(full=(layers - win) * per_layer, windowed=win * per_layer,
                    window=sliding_window if win else None, kind=kind)

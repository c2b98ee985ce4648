"""The capacity formulas: memory per engine and precision, what fits, and the roofline bounds. Pure.

Each formula of README § "Capacity planner" is one small function below (plain numbers in, a number out);
`_Calc` only picks the inputs for one engine, precision and target and assembles them.

memory  = weights + KV cache + overhead          (GiB = 2^30 B)
  weights  = params x bits_per_weight / 8         (or the model file's own size, when that is what loads)
  KV       = 2 x layers x kv_heads x head_dim x kv_bytes  per token, x concurrency x context
  overhead = engine runtime (CUDA context, ...) + activations for one prefill chunk
             (SGLang: what lies outside its --mem-fraction-static pool, which SGLang computes from the GPU's memory)
decode tok/s per sequence <= bandwidth / (active weight bytes + KV bytes of the resident tokens)
TTFT >= max(2 x active params x prompt tokens / peak FLOPS, one read of the weights / bandwidth)
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from advisor.knowledge import schema as ks
from advisor.knowledge import shapes
from advisor.knowledge.load import Knowledge
from advisor.planner.spec import ModelSpec
from advisor.planner.types import EnginePlan, PlanOption, Target

GIB = 2**30


@dataclass(frozen=True)
class Workload:
    precision: str  # as asked (answers' precision)
    context_tokens: int
    concurrency: int
    prompt_tokens: int
    resident_tokens: float | None = None  # mean tokens held per sequence while decoding; None = the prompt
    gpu_count: int | None = None  # override the target's count (the "add GPUs" search)
    kv_reserved_gib: float | None = None  # a fixed KV pool the engine was given (vLLM CPU's KVCACHE_SPACE)
    kv_cache_dtype: str = "auto"  # answers model.kv_cache_dtype: auto (the engine's default) | fp16 | bf16 | fp8 | int8
    # serving, not the worst case: each running sequence holds about this many tokens (input + output); None = the
    # whole context (the old worst case). The context is then the most one request may hold (max-model-len).
    typical_tokens: int | None = None
    output_tokens: int = 256
    input_sd: float = 0.0  # the prompts' spread (tokens), for the p95 TTFT
    ttft_target_ms: float | None = None  # Q2, for the SLA capacity
    request_rate: float | None = None  # answers load.request_rate_rps: open-loop arrivals, predicted beside Q1
    max_batch: int | None = None  # answers load.max_batch: the engine's batch cap the deployment sets
    itl_target_ms: float | None = None  # answers itl_p95_ms: weighs prefill/decode disaggregation


def _sig3(x: float | None) -> float | None:
    """Three significant digits: a bound of 0.004 ms stays above 0 (two decimals would print it as 0.0)."""
    return None if x is None else float(f"{x:.3g}")


def _r(x: float | None, nd: int = 2) -> float | None:
    return None if x is None else round(x, nd)


def cc_at_least(cc: str | None, want: str) -> bool:
    """Compute capabilities compare as numbers ("12.0" > "8.9"), not as strings."""
    def parse(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in v.split(".") if x.isdigit())
    return cc is not None and parse(cc) >= parse(want)


NO_DECODE = ("encoder", "cnn")  # no autoregressive decoding, so no KV cache and no decode bound
# modalities whose requests are not a prompt of tokens the serving model could time: speech-to-text (Whisper) takes 30 s
# of audio through an encoder; no published serving run of one is in bench/fit_serving.py's data, so none is predicted
NO_SERVING_FIT = ("speech",)


# ---------------------------------------------------------------- the formulas (README § "Capacity planner")

def weights_bytes(params: float, bits_per_weight: float, embedding_params: float = 0.0,
                  embedding_bits: float | None = None) -> float:
    """Weights = params x bits per weight / 8, the embedding table and LM head at embedding_bits when given."""
    if embedding_bits is None:
        return params * bits_per_weight / 8
    emb = min(embedding_params, params / 2)
    return (params - emb) * bits_per_weight / 8 + emb * embedding_bits / 8


def gguf_fit(tensor_type: str, row: int, types: dict[str, ks.GgufType], fallback: dict[str, str]) -> str:
    """GGUF: llama.cpp's tensor_type_fallback, a type whose block does not divide the row length falls back."""
    if row % types[tensor_type].block == 0:
        return tensor_type
    alt = fallback.get(tensor_type)
    return alt if alt is not None and row % types[alt].block == 0 else "f16"


def gguf_kind_types(base: str, token_embd: str, output: str, row: int, tied: bool, types: dict[str, ks.GgufType],
                    fallback: dict[str, str]) -> tuple[str, str]:
    """GGUF: the (token_embd, output) types llama_tensor_get_type writes (output Q8_0 if the base block misfits)."""
    if types[base].block > 1 and row % types[base].block:
        output = "q8_0"
    output = gguf_fit(output, row, types, fallback)
    return (output if tied else gguf_fit(token_embd, row, types, fallback)), output


def gguf_body_bits(whole_file_bits: float, params: float, embd_params: float, output_params: float,
                   embd_bits: float, output_bits: float) -> float:
    """GGUF: bits per weight outside token_embd / output, from llama.cpp's whole-file bits on its reference model."""
    rest = params - embd_params - output_params
    return (params * whole_file_bits - embd_params * embd_bits - output_params * output_bits) / rest


def gguf_weights_bytes(params: float, embd_params: float, output_params: float, body_bits: float, embd_bits: float,
                       output_bits: float) -> float:
    """GGUF weights per tensor kind = (token_embd x its bits + output x its bits + the rest x body bits) / 8."""
    rest = max(params - embd_params - output_params, 0.0)
    return (rest * body_bits + embd_params * embd_bits + output_params * output_bits) / 8


def active_weight_bytes(weights: float, active_share: float, lookup_bytes: float) -> float:
    """Weights read per decoded token = the active share (MoE) less the input embedding lookup (>= 5 %)."""
    return max(weights * active_share - lookup_bytes, weights * 0.05)


def kv_bytes_per_token(layers: int, kv_heads: int, head_dim: int, bytes_per_element: float) -> int:
    """KV cache per token = 2 x layers x KV heads x head_dim x bytes (GQA-aware)."""
    return int(2 * layers * kv_heads * head_dim * bytes_per_element)


def kv_gib(kv_per_token: float, sequences: int, context_tokens: int) -> float:
    """KV cache = KV per token x concurrency x context, in GiB."""
    return kv_per_token * sequences * context_tokens / GIB


def gpu_runtime_gib(fixed_gib: float, fraction: float, gpu_memory_gib: float | None, gpus: int,
                    per_extra_gpu_gib: float) -> float:
    """Runtime on GPUs = max(fixed, fraction x each GPU's memory) per GPU + a fixed share per extra rank."""
    return max(fixed_gib, fraction * (gpu_memory_gib or 0)) * gpus + per_extra_gpu_gib * (gpus - 1)


def cpu_runtime_gib(baseline_gib: float, weight_copies: float, weights_gib: float) -> float:
    """Runtime on CPU = the measured process baseline + any extra copies of the weights made at load."""
    return baseline_gib + (weight_copies - 1) * weights_gib


def activation_gib(tokens: int, logit_rows: int, vocab: int, hidden: int, intermediate: int) -> float:
    """Activations of one prefill chunk = max(fp32 logits of its rows, 2 x (hidden + MLP) per token) x 4 B."""
    return max(logit_rows * vocab, tokens * (hidden + intermediate) * 2) * 4 / GIB


def overhead_gib(runtime: float, tokens: int, logit_rows: int, vocab: int, hidden: int, intermediate: int) -> float:
    """Overhead = the engine's runtime + the activations of one prefill chunk."""
    return runtime + activation_gib(tokens, logit_rows, vocab, hidden, intermediate)


def prefill_capture_count(limit: int, steps: list[tuple[int, int | None, int]]) -> int:
    """SGLang: how many prefill CUDA-graph sizes it captures up to `limit` tokens (runs of first, last, step)."""
    n = 0
    for first, last, step in steps:
        top = limit if last is None else min(last, limit)
        if top >= first:
            n += (top - first) // step + 1
    return n


def static_reserve_mib(gpu_mib: float, tp: int, pp: int, mla: bool, vendor: str,
                       r: ks.StaticReserve) -> tuple[float, int]:
    """SGLang: the room (MiB per GPU) its --mem-fraction-static default keeps outside weights + KV for activations and
    CUDA graphs, and the chunked-prefill size it picks for a GPU of this size."""
    tier = next(t for t in r.tiers if t.below_gib is None or gpu_mib < t.below_gib * 1024)
    chunk = tier.chunk_tokens
    reserve = r.base_mib + max(chunk, r.min_tokens) * r.per_token_mib + tp * pp / 8 * r.per_8_ranks_mib
    if vendor in r.decode_graph_vendors:
        reserve += (tier.graph_bs if tp < 4 else tier.graph_bs_tp4) * r.per_graph_bs_mib
    if vendor in r.prefill_graph_vendors:
        reserve += r.prefill_graph_mla_mib if mla else prefill_capture_count(chunk, r.prefill_graph_steps) * \
            r.prefill_graph_mib
    if gpu_mib > r.floor_above_gib * 1024:
        reserve = max(reserve, r.floor_mib)
    return reserve + r.vendor_extra_mib.get(vendor, 0.0), chunk


def static_fraction(gpu_mib: float, reserve_mib: float, decimals: int = 3) -> float:
    """SGLang: --mem-fraction-static default = (GPU memory - reserve) / GPU memory, rounded as it rounds it."""
    return round((gpu_mib - reserve_mib) / gpu_mib, decimals)


def static_overhead_gib(memory_gib: float, fraction: float, runtime_gib: float, gpus: int) -> float:
    """SGLang: what lies outside its static pool on `gpus` GPUs. The pool (weights + KV) is `fraction` of the memory
    free before the weights load, so each GPU keeps (1 - fraction) of its memory and the runtime already resident then
    (CUDA context, NCCL buffers) costs the pool fraction x itself."""
    return gpus * memory_gib * (1 - fraction) + fraction * runtime_gib


def available_gib(memory_gib: float, fraction: float, budget_of: str = "total", loaded_gib: float = 0.0) -> float:
    """Available = fraction x memory, or (free_after_load) what loaded + fraction x what is free after loading."""
    if budget_of == "free_after_load":
        return loaded_gib + fraction * (memory_gib - loaded_gib) if memory_gib > loaded_gib else memory_gib
    return memory_gib * fraction


def layers_in_ram(gpu_room_gib: float, per_layer_gib: float, layers: int) -> int:
    """llama.cpp offload: the layers (weights + their KV) that do not fit in the GPU's room stay in RAM."""
    on_gpu = max(0, min(layers, int(gpu_room_gib // per_layer_gib))) if per_layer_gib > 0 else 0
    return layers - on_gpu


def tensor_parallel_size(gpus: int, attention_heads: int, sizes: list[int], kv_heads: int | None = None) -> int:
    """Tensor parallelism: the largest allowed size <= the GPU count that divides the attention heads and whose KV
    heads split or replicate evenly (vLLM's QKVParallelLinear: kv % tp == 0 or tp % kv == 0)."""
    fit = [n for n in sizes if n <= gpus and attention_heads % n == 0
           and (kv_heads is None or kv_heads % n == 0 or n % kv_heads == 0)]
    return max(fit) if fit else 1


def max_sequences(free_gib: float, kv_per_token: float, context_tokens: int) -> int | None:
    """Max concurrency = the memory left after weights and overhead / the KV of one full-context sequence."""
    per_seq = kv_per_token * context_tokens / GIB
    return max(0, int(free_gib // per_seq)) if per_seq > 0 else None


def max_context_tokens(free_gib: float, kv_per_token: float, sequences: int, model_max: int) -> int | None:
    """Max context = the memory left / the KV per token of all sequences, at most the model's window."""
    per_tok = kv_per_token * sequences / GIB
    return max(0, min(model_max, int(free_gib // per_tok))) if per_tok > 0 else None


def bytes_read_per_token(active_weights: float, kv_per_token: float, resident_tokens: float) -> float:
    """Bytes read per decoded token = active weights + the KV of the tokens held."""
    return active_weights + kv_per_token * resident_tokens


def decode_bound(bandwidth: float, bytes_per_token: float) -> float:
    """Decode tok/s per sequence <= memory bandwidth / bytes read per token."""
    return bandwidth / bytes_per_token


def offload_decode_bound(bytes_per_token: float, gpu_bandwidth: float, cpu_bandwidth: float, ram_share: float) -> float:
    """Decode with layers in RAM <= 1 / (the GPU share read at GPU bandwidth + the RAM share at RAM bandwidth)."""
    return 1 / (bytes_per_token * (1 - ram_share) / gpu_bandwidth + bytes_per_token * ram_share / cpu_bandwidth)


def decode_total_bound(batch: int, bandwidth: float, active_weights: float, kv_per_token: float, resident: float,
                       flops: float | None, matmul_params: float) -> float:
    """All sequences <= min(b x bandwidth / (weights + b x KV), peak FLOPS / (2 x matmul params))."""
    memory = batch * bandwidth / (active_weights + batch * kv_per_token * resident)
    return min(memory, flops / (2 * matmul_params)) if flops else memory


def ttft_bound(matmul_params: float, prompt_tokens: int, flops: float, active_weights: float,
               bandwidth: float | None) -> float:
    """TTFT (ms) >= max(2 x matmul params x prompt tokens / peak FLOPS, one read of the weights / bandwidth)."""
    compute = 2 * matmul_params * prompt_tokens / flops
    read = active_weights / bandwidth if bandwidth else 0.0
    return max(compute, read) * 1000


# ---------------------------------------------------------------- one engine, one precision, one target

class _Calc:
    """One engine, one precision, one target: picks each formula's inputs and keeps what the plan and its text need."""

    def __init__(self, engine: str, spec: ModelSpec, target: Target, wl: Workload, k: Knowledge, lang: str,
                 precision: str | None = None, layout: str = "auto"):
        self.k, self.lang, self.engine, self.spec, self.target, self.wl = k, lang, engine, spec, target, wl
        self.layout_asked = layout  # auto: data-parallel attention + EP where _expert_layout's rule holds; tensor
        self.cap: ks.EngineCapacity = k.planner.engines[engine]
        self.asked = wl.precision
        self._precision(precision)
        cap, pl = self.cap, k.planner
        gpus = wl.gpu_count if wl.gpu_count is not None else target.gpu_count
        self.gpu_ok = ("gpu" in cap.devices and target.gpu_vendor in cap.gpu_vendors and gpus > 0)
        self.device = "gpu" if self.gpu_ok else ("cpu" if "cpu" in cap.devices else "none")
        self.tp, self.pp = self._split(gpus) if self.device == "gpu" else (0, 1)
        self.attn_dp = self.ep = 1  # data-parallel attention ranks and expert-parallel ranks (1: neither)
        self.ep_nodes = 1
        self.ep_candidate = False  # the rule holds: plan_engine weighs this layout against tensor parallelism
        self.ep_skipped: str | None = None  # why an MoE plan over nodes keeps the pipeline split (said in the text)
        if self.device == "gpu":
            self._expert_layout()
        self.n = self.tp * self.pp
        # the speed bounds assume the most favourable split: tensor parallel where the engine can run it
        self.bound_tensor = cap.multi_gpu == "tensor" or cap.bound_multi_gpu == "tensor"
        # what a prediction's step runs as: the split the deployment emits (a published run that split tensors with an
        # engine whose default splits layers, gpt-fast's, says so itself: published._calc)
        self.serving_tensor = cap.multi_gpu == "tensor"

        self._weights()
        self.dp_extra_b = self._replicated_bytes()  # data-parallel attention: the attention and dense layers per rank
        self.decodes = spec.architecture not in NO_DECODE
        self.kv_dtype, self.kv_bytes, self.kv_status = self._kv_dtype()
        self.layout = self._kv_layout()
        # per token at the asked context (sliding-window layers hold at most their window), and the copies that
        # tensor parallelism keeps: a rank holds at least one KV head (MLA's latent is one "head", on every rank)
        self.kv_tok = int(self.layout.per_token(wl.context_tokens) * self.kv_bytes) if self.decodes else 0
        self.kv_copies = self._kv_copies()

        if self.device == "gpu":
            self.runtime_gib = gpu_runtime_gib(cap.gpu_runtime_gib, cap.gpu_runtime_fraction, self.gpu_mem_each,
                                               self.n, cap.per_extra_gpu_gib)
        else:  # the process baseline, and any second copy of the weights the engine makes at load
            self.runtime_gib = cpu_runtime_gib(cap.cpu_runtime_gib, cap.cpu_weight_copies, self.weights_b / GIB)
        self.gpu_default = self._gpu_default()
        chunk, prompt = self.chunk_tokens, wl.prompt_tokens
        if chunk == 0:
            self.act_tokens = prompt
        elif self.device == "gpu":
            self.act_tokens = chunk  # reserved whole at start-up
        else:
            self.act_tokens = min(chunk, prompt)  # CPU pages count only once touched
        rows = self.act_tokens if cap.logits_for_chunk else min(self.act_tokens, wl.concurrency)
        self.act_gib = activation_gib(self.act_tokens, rows, spec.vocab_size, spec.hidden_size, spec.intermediate_size)
        self.overhead_gib = overhead_gib(self.runtime_gib, self.act_tokens, rows, spec.vocab_size, spec.hidden_size,
                                         spec.intermediate_size)
        self.mem_fraction_static: float | None = None  # SGLang's computed default on this target
        if cap.static_reserve and self.device == "gpu" and self.gpu_mem_each is not None:
            self._static_pool(cap.static_reserve)

        self.weights_gib = (self.weights_b + self.dp_extra_b) / GIB
        self.mode = k.serving.modes[engine].mode
        # sequences held at once: every user on a batching engine, one on an engine that serves one at a time
        self.running = 1 if self.mode == "sequential" else wl.concurrency
        self.typical = min(wl.typical_tokens or wl.context_tokens, wl.context_tokens)
        self.kv_typ = int(self.layout.per_token(self.typical) * self.kv_bytes) if self.decodes else 0
        self.kv_gib = (wl.kv_reserved_gib if wl.kv_reserved_gib is not None
                       else self.kv_pool_gib(self.running))
        self.total_gib = self.weights_gib + self.kv_gib + self.overhead_gib
        self.available_gib = self._available()
        self.offload_layers: int | None = None
        self.offload_ram_gib: float | None = None
        self.fits = None if self.available_gib is None else self.total_gib <= self.available_gib
        self.ram_avail = (target.ram_gib * pl.cpu_ram_fraction) if target.ram_gib else None
        if self.device == "gpu" and self.fits is False and cap.cpu_offload and not target.unified_memory:
            self._offload()  # (unified memory: RAM and GPU memory are one pool, nothing to offload to)

    # -------------------------------------------------------------- inputs
    def _precision(self, precision: str | None) -> None:
        cap, k, spec = self.cap, self.k, self.spec
        self.prec = precision or cap.precision_map.get(self.wl.precision, self.wl.precision)
        self.gguf_file = self.engine == "llama.cpp" and spec.file_format == "gguf" and precision is None
        if self.gguf_file:  # llama.cpp runs the user's GGUF as it is, whatever precision was asked
            self.prec = spec.file_precision or "gguf_file"
        if self.prec not in k.planner.precisions:  # e.g. a GGUF-only id on an engine without a mapping
            self.prec = "fp16"
        self.pspec = k.planner.precisions[self.prec]

    def _weights(self) -> None:
        """weights_b (bytes), and per_emb: the bytes of one embedding weight (for the lookup a token skips)."""
        spec, ps, pl = self.spec, self.pspec, self.k.planner
        exact = spec.weights_bytes if spec.weights_bytes and (
            spec.file_precision == self.prec or (self.gguf_file and self.prec == "gguf_file")) else None
        self.exact_weights = exact is not None
        self.gguf_types: tuple[str, str] | None = None
        params = spec.params_b * 1e9
        table = spec.vocab_size * spec.hidden_size
        if exact:
            self.weights_b = float(exact)
            per_emb = self.weights_b / params
        elif ps.gguf:
            g, types, fb, ref = ps.gguf, pl.gguf_types, pl.gguf_fallback, pl.gguf_reference
            embd, out = gguf_kind_types(g.base, g.token_embd, g.output, spec.hidden_size, spec.tied_embeddings,
                                        types, fb)
            self.gguf_types = (embd, out)
            self.gguf_body = self._gguf_body_bits(g, ref)
            if gguf_fit(g.base, spec.hidden_size, types, fb) != g.base:  # the body's rows fall back too (approx.)
                self.gguf_body += types[gguf_fit(g.base, spec.hidden_size, types, fb)].bits - types[g.base].bits
            self.weights_b = gguf_weights_bytes(params, table, 0 if spec.tied_embeddings else table, self.gguf_body,
                                                types[embd].bits, types[out].bits)
            per_emb = types[embd].bits / 8
        else:
            self.weights_b = weights_bytes(params, ps.bits_per_weight, spec.embedding_params_b * 1e9,
                                           ps.embedding_bits)
            per_emb = ps.embedding_bits / 8 if ps.embedding_bits else self.weights_b / params
        # read per decoded token: the active weights, less the input embedding table (a one-row lookup) when the
        # LM head is a separate matrix
        lookup = 0.0 if spec.tied_embeddings else table * per_emb
        self.active_b = active_weight_bytes(self.weights_b, spec.active_params_b / spec.params_b, lookup)

    def _gguf_body_bits(self, g: ks.GgufMix, ref: ks.GgufReference) -> float:
        types = self.k.planner.gguf_types
        if not g.whole_file:
            return types[g.base].bits
        embd, out = gguf_kind_types(g.base, g.token_embd, g.output, ref.hidden_size, ref.tied_embeddings, types,
                                    self.k.planner.gguf_fallback)
        table = ref.vocab_size * ref.hidden_size
        return gguf_body_bits(self.pspec.bits_per_weight, ref.params_b * 1e9, table,
                              0 if ref.tied_embeddings else table, types[embd].bits, types[out].bits)

    def _default_kv(self) -> tuple[str, float]:
        """The engine's own KV dtype (answers kv_cache_dtype: auto): fp32 / fp16, or the model's bf16."""
        cap = self.cap
        b = cap.kv_bytes or (cap.cpu_kv_bytes if self.device == "cpu" else None) or (4 if self.prec == "fp32" else 2)
        if b == 4:
            return "fp32", b
        return ("bf16" if self.prec == "bf16" and not cap.kv_bytes else "fp16"), b

    def _kv_dtype(self) -> tuple[str, float, str | None]:
        """(dtype, bytes per element, support status) for the KV cache: the asked dtype where the support matrix
        says the engine runs it on this target (supported or experimental), else the engine's default; a refusal
        is kept in self.kv_refused (asked, status, note) for the assumptions."""
        from advisor.knowledge.support import cc_value, effective

        self.kv_refused: tuple[str, str, ks.Text | None] | None = None
        self.kv_source = ""
        name, b = self._default_kv()
        asked, t = self.wl.kv_cache_dtype, self.target
        self.kv_from_checkpoint = False
        if asked == "auto" and self._checkpoint_kv_fp8():
            asked = "fp8"  # the engine's auto takes the checkpoint's declared FP8 KV (checked below like an asked one)
            self.kv_from_checkpoint = True
        if asked == "auto" or self.device == "none" or not self.decodes:
            return name, b, None
        cell = self.k.support.engines[self.engine].kv_cache_dtype[asked]
        status, note = effective(cell, cc_value(t.gpu_compute_capability) if t.gpu_vendor == "nvidia" else None)
        if status in ("supported", "experimental"):
            self.kv_source = cell.source or ""
            if asked in self.cap.kv_dtype_bytes:  # the engine's own layout (e.g. llama.cpp q8_0 blocks)
                self.kv_source += f"; {self.cap.kv_dtype_source}"
            if self.kv_from_checkpoint:
                self.kv_source = self.cap.fp8_kv_source or ""
            return asked, self.cap.kv_dtype_bytes.get(asked, self.k.planner.kv_cache_bytes[asked]), status
        if self.kv_from_checkpoint:  # the engine cannot hold FP8 KV here: it keeps the model's dtype, nothing refused
            self.kv_from_checkpoint = False
            return name, b, None
        self.kv_refused = (asked, status, note)
        return name, b, None

    def _checkpoint_kv_fp8(self) -> bool:
        """kv_cache_dtype auto on an FP8 checkpoint: the engines that take the KV dtype the checkpoint declares do so
        (a config.json that was read says which; without one, the checkpoint this engine is usually served from)."""
        cap, spec = self.cap, self.spec
        if self.prec != "fp8" or not cap.fp8_kv_from_checkpoint or self.device != "gpu" or not self.decodes:
            return False
        if spec.file_kv_dtype is not None and spec.file_precision == "fp8":  # the FP8 checkpoint itself was read
            return spec.file_kv_dtype == "fp8"
        return cap.fp8_kv_unknown_checkpoint

    @property
    def gpu_mem_each(self) -> float | None:
        m = self.target.gpu_memory_gib
        if m is None:
            return None
        return m * self.k.planner.unified_memory_gpu_fraction if self.target.unified_memory else m

    def _split(self, count: int) -> tuple[int, int]:
        """(tensor-parallel ranks, pipeline stages): tensor parallel within a node, pipeline parallel across nodes,
        as vLLM and TensorRT-LLM document; an engine that cannot span nodes uses one node's GPUs."""
        t, mode = self.target, self.cap.multi_gpu
        per_node = t.gpus_per_node if t.nodes > 1 and t.gpus_per_node else count
        if self.wl.gpu_count is not None and t.nodes > 1 and t.gpus_per_node:  # "add GPUs": whole nodes of this size
            per_node = min(t.gpus_per_node, count)
        nodes = max(1, -(-count // per_node))
        if mode == "none":
            return 1, 1
        if mode == "layer":
            return max(1, min(per_node, self.spec.layers)), 1
        tp = tensor_parallel_size(per_node, self.spec.attention_heads, self.k.planner.tensor_parallel_sizes,
                                  None if self.spec.kv_lora_rank else self.spec.kv_heads)
        pp = min(nodes, self.spec.layers) if self.cap.multi_node == "pipeline" else 1
        return tp, pp

    def _kv_layout(self):
        """The engine's KV layout for this model: MLA as its latent where the engine runs MLA natively, sliding-window
        layers at their window where the engine sizes them so (support.yaml serving.mla_native /
        serving.sliding_window_kv; an unknown cell counts the larger cache)."""
        serving = self.k.support.engines[self.engine].serving
        native = {key: serving[key].status in ("supported", "experimental") for key in ("mla_native", "sliding_window_kv")}
        self.kv_native = native
        window = self.spec.sliding_window + self.cap.swa_extra_tokens if self.spec.sliding_window else None
        lay = shapes.kv_layout(self.spec, native["mla_native"], native["sliding_window_kv"], window,
                               self.spec.sliding_layers)
        # DeepSeek Sparse Attention: each layer's indexer keeps its own FP8 key cache beside the latent, whatever the
        # KV dtype; counted as the KV elements of this dtype that hold as many bytes (bytes per token, all layers)
        self.indexer_b = self.spec.layers * self.k.planner.indexer_cache.bytes_per_token(self.spec.index_head_dim) \
            if self.spec.index_head_dim and lay.kind != "none" else 0.0
        return replace(lay, full=lay.full + self.indexer_b / self.kv_bytes) if self.indexer_b else lay

    def _static_pool(self, r: ks.StaticReserve) -> None:
        """SGLang: weights + KV get the --mem-fraction-static share of each GPU, computed at start-up from the GPU's
        memory; activations, CUDA graphs and the runtime take the rest, so that rest is this engine's overhead (the
        budget is then the whole memory). The activation part is shown apart: max(chunk, min_tokens) x per_token."""
        mem, vendor, mla = self.gpu_mem_each or 0.0, self.target.gpu_vendor, self.layout.kind == "mla"
        reserve, chunk = static_reserve_mib(mem * 1024, self.tp, self.pp, mla, vendor, r)
        f = static_fraction(mem * 1024, reserve, r.decimals)
        if self.spec.modality == "vision-language":
            f *= r.vlm_factor
        if vendor in r.long_context_vendors and not mla and self.wl.context_tokens > r.long_context_above_tokens:
            f *= r.long_context_factor
        self.mem_fraction_static = f = max(0.0, f)  # a GPU smaller than the reserve leaves no pool at all
        self.act_tokens = chunk
        self.act_gib = self.n * max(chunk, r.min_tokens) * r.per_token_mib / 1024
        self.overhead_gib = static_overhead_gib(mem, f, self.runtime_gib, self.n)
        self.runtime_gib = self.overhead_gib - self.act_gib

    def _kv_copies(self) -> float:
        if self.device != "gpu" or self.tp <= 1 or self.cap.multi_gpu != "tensor" or not self.decodes or self.attn_dp > 1:
            return 1.0
        heads = 1 if self.layout.kind == "mla" else self.spec.kv_heads
        return max(1.0, self.tp / heads)

    def _available(self) -> float | None:
        cap = self.cap
        if self.device == "none":
            return 0.0
        if self.device == "cpu":
            r = self.target.ram_gib
            return available_gib(r, self.k.planner.cpu_ram_fraction) if r else None
        mem = self.gpu_mem_each
        if mem is None:
            return None
        return available_gib(mem * self.n, cap.memory_budget_fraction, cap.budget_of,
                             self.weights_gib + self.overhead_gib)

    def _offload(self) -> None:
        """llama.cpp -ngl: as many layers (weights + their KV) on the GPU as fit, the rest in RAM."""
        per_layer = (self.weights_gib + self.kv_gib) / self.spec.layers
        in_ram = layers_in_ram(self.available_gib - self.overhead_gib, per_layer, self.spec.layers)
        self.offload_layers = in_ram
        self.offload_ram_gib = in_ram * per_layer
        self.device = "gpu+cpu"
        if self.ram_avail is None:
            self.fits = None
            return
        self.available_gib = self.available_gib + self.ram_avail
        self.fits = in_ram * per_layer <= self.ram_avail

    # -------------------------------------------------------------- outputs
    def kv_pool_gib(self, sequences: int) -> float:
        """KV for `sequences` running at the typical length, and room for one request at the whole context."""
        typical = kv_gib(self.kv_typ * self.kv_copies, sequences, self.typical)
        return max(typical, kv_gib(self.kv_tok * self.kv_copies, 1, self.wl.context_tokens))

    def free_for_kv(self) -> float | None:
        if self.available_gib is None:
            return None
        return self.available_gib - self.weights_gib - self.overhead_gib

    def loads(self) -> bool | None:
        """Whether the engine starts at all: vLLM / TensorRT-LLM refuse to unless one sequence of the full context
        fits; llama.cpp allocates the KV of its whole n_ctx at load; the others grow KV on demand."""
        if self.device == "gpu+cpu" or self.fits is None or self.cap.kv_allocation == "full_context":
            return self.fits
        need = self.weights_gib + self.overhead_gib
        if self.cap.kv_allocation == "budget":
            need += kv_gib(self.kv_tok * self.kv_copies, 1, self.wl.context_tokens)
        return need <= self.available_gib

    def max_concurrency(self) -> int | None:
        free = self.free_for_kv()
        if free is None:
            return None
        if self.decodes and free < kv_gib(self.kv_tok * self.kv_copies, 1, self.wl.context_tokens):
            return 0  # not even one request at the whole context
        return max_sequences(free, self.kv_typ * self.kv_copies, self.typical)

    def max_context(self) -> int | None:
        """The most one request may hold while the other running sequences hold their typical tokens."""
        free = self.free_for_kv()
        if free is None:
            return None
        if self.wl.typical_tokens is not None:
            one = self._max_context_of(free - kv_gib(self.kv_typ * self.kv_copies, self.running - 1, self.typical), 1)
            if one is not None and one >= self.typical:
                return one
            # below the typical length the others shrink with it: every running sequence at that length
            return self._max_context_of(free, self.running)
        return self._max_context_of(free, self.wl.concurrency)

    def _max_context_of(self, free: float, sequences: int) -> int | None:
        lay, b = self.layout, self.kv_bytes * self.kv_copies
        if lay.window and self.decodes:  # the windowed layers' share stops growing at the window
            per_seq = max(0.0, free) * GIB / sequences / b  # elements one sequence may hold
            if per_seq < lay.elements(lay.window):  # below the window every layer grows with the context
                return max(0, min(self.spec.max_context, int(per_seq / (lay.full + lay.windowed))))
            if not lay.full:  # every layer is windowed and the window fits: the model's own limit
                return self.spec.max_context
            return max(0, min(self.spec.max_context, int((per_seq - lay.windowed * lay.window) / lay.full)))
        per_tok = lay.per_token(self.wl.context_tokens) * b
        return max_context_tokens(free, per_tok, sequences, self.spec.max_context)

    def _expert_layout(self) -> None:
        """Data-parallel attention with expert parallelism for an MoE model, the layout vLLM, SGLang and TensorRT-LLM
        document for DeepSeek-style models (planner.yaml expert_parallel): each GPU runs attention for its own
        sequences and holds their KV cache once, the routed experts spread over all the replica's GPUs. Chosen where
        tensor parallelism would hold the KV cache more than once (an MLA latent is one head on every rank; fewer KV
        heads than ranks) and the users fill every rank; across nodes only where the engine spans them so and the
        nodes talk over InfiniBand or RoCE (an all-to-all per MoE layer over Ethernet costs more than it saves: the
        pipeline split stays)."""
        ep, spec, t = self.cap.expert_parallel, self.spec, self.target
        n = self.tp * self.pp
        e, k = spec.moe_experts, spec.moe_active_experts
        if ep is None or not e or not k or k >= e or n < 2 or self.cap.multi_gpu != "tensor":
            return
        if self.pp > 1 and (not ep.across_nodes or (t.interconnect or "") not in ("infiniband", "roce")):
            link = t.interconnect or ""
            self.ep_skipped = ("one_node" if not ep.across_nodes else
                               "slow_link" if link == "ethernet" else "link_unknown")
            return
        if self.tp <= self.kv_heads_held() or self.wl.concurrency < n:
            return
        self.ep_candidate = True
        if self.layout_asked == "tensor":
            return
        self.ep_nodes = self.pp
        self.tp, self.pp, self.attn_dp, self.ep = n, 1, n, n

    def kv_heads_held(self) -> int:
        """KV heads a tensor-parallel split can spread over: an MLA latent the engine keeps whole is one head."""
        native = self.k.support.engines[self.engine].serving["mla_native"].status in ("supported", "experimental")
        return 1 if self.spec.kv_lora_rank and native else max(1, self.spec.kv_heads)

    def _routed_bytes(self) -> float:
        """The routed experts' weights: total - active = routed x (1 - k/E)."""
        e, k = self.spec.moe_experts, self.spec.moe_active_experts
        if not e or not k or k >= e:
            return 0.0
        return max(0.0, (self.weights_b - self.active_b) / (1 - k / e))

    def _routed_share(self) -> float:
        """The routed experts' share of the weights a token multiplies through: their active parameters (from the
        shapes, advisor.knowledge.shapes.params) over matmul_params_b; 0 for a dense model."""
        return min(0.95, shapes.params(self.spec).routed_active / 1e9 / self.spec.matmul_params_b)

    def _replicated_bytes(self) -> float:
        """With data-parallel attention every rank holds its own copy of what is not a routed expert (attention,
        dense layers, shared experts, embeddings): the copies beyond the first."""
        if self.attn_dp <= 1:
            return 0.0
        return max(0.0, self.weights_b - self._routed_bytes()) * (self.attn_dp - 1)

    def alltoall_step_s(self) -> float:
        """Expert parallelism's all-to-all latency per step (or prefill chunk): dispatch + combine in every MoE layer."""
        if self.ep <= 1:
            return 0.0
        return 2 * (self.spec.moe_layers or self.spec.layers) * self.k.serving.alltoall_us / 1e6

    def alltoall_s_per_token(self) -> float:
        """Expert parallelism's all-to-all per token a step carries: its hidden state to its k experts' ranks and back
        (dispatch + combine) in every MoE layer, the share that leaves the GPU over the link it crosses (NVLink within
        a node, the node link beyond); the latency is per step (alltoall_step_s)."""
        if self.ep <= 1:
            return 0.0
        sv, spec, t, n = self.k.serving, self.spec, self.target, self.ep
        layers = spec.moe_layers or spec.layers
        per_node = n // max(1, self.ep_nodes)
        nv = (t.interconnect_gb_s or 0.0) / 2 * 1e9  # the catalogue's figure is both directions
        nic = sv.node_link_gb_s.get(t.interconnect or "", 0.0) * 1e9
        token = spec.moe_active_experts * spec.hidden_size * sv.alltoall_bytes
        t_tok = 0.0
        if per_node > 1 and nv:
            t_tok += token * (per_node - 1) / n / nv
        if self.ep_nodes > 1 and nic:
            t_tok += token * (n - per_node) / n / nic
        return 2 * layers * t_tok / n

    def step_batch(self) -> int:
        """The sequences a step carries at the asked users (at most what the pool and the engine's cap hold)."""
        return max(1, min(self.wl.concurrency, self._max_running() or self.wl.concurrency))

    def resident(self) -> float:
        """Tokens held per sequence while decoding; an upper bound on speed assumes the fewest: the prompt."""
        return self.wl.resident_tokens if self.wl.resident_tokens is not None else self.wl.prompt_tokens

    def ranks(self) -> int:
        """GPUs whose bandwidth and FLOPS a one-sequence bound adds: the tensor-parallel ranks when the engine can
        split tensors (pipeline stages run one after another for one sequence, so they add none)."""
        return self.tp if self.device == "gpu" and self.bound_tensor else 1

    def bandwidth(self, ranks: int | None = None) -> tuple[float | None, str]:
        """Effective bytes/s for one token's reads, and where the figure comes from."""
        t = self.target
        if self.device == "none":
            return None, ""
        if self.device == "cpu":
            if t.cpu_bandwidth_gb_s is None:
                # one memory for the CPU and the GPU (Apple silicon, GB10, Jetson): its printed bandwidth bounds what
                # the CPU cores read too (they reach less of it than the GPU: the fitted CPU share scales it)
                if t.unified_memory and t.gpu_bandwidth_gb_s:
                    return t.gpu_bandwidth_gb_s * 1e9, "unified"
                return None, ""
            return t.cpu_bandwidth_gb_s * 1e9, "measured" if t.cpu_measured else "given"
        if t.gpu_bandwidth_gb_s is None:
            return None, ""
        # tensor parallel: each rank reads its own shard at the same time
        return t.gpu_bandwidth_gb_s * 1e9 * (self.ranks() if ranks is None else ranks), "spec"

    def kv_tok_at(self, tokens: float) -> float:
        """KV bytes per token when each sequence holds `tokens` (sliding-window layers hold at most their window)."""
        return self.layout.per_token(max(1, int(tokens))) * self.kv_bytes if self.decodes else 0.0

    def bytes_per_token(self) -> float:
        """Every TP rank reads its own copy of the KV it holds (an MLA latent is on every rank)."""
        copies = self.kv_copies if self.device == "gpu" else 1.0
        return bytes_read_per_token(self.active_b, self.kv_tok_at(self.resident()) * copies, self.resident())

    def decode_bound(self, ranks: int | None = None) -> float | None:
        if not self.decodes:
            return None
        if self.device == "gpu+cpu":
            t = self.target
            if t.gpu_bandwidth_gb_s is None or t.cpu_bandwidth_gb_s is None:
                return None
            return offload_decode_bound(self.bytes_per_token(), t.gpu_bandwidth_gb_s * 1e9,
                                        t.cpu_bandwidth_gb_s * 1e9, self.offload_layers / self.spec.layers)
        bw, _ = self.bandwidth(ranks)
        return None if bw is None else decode_bound(bw, self.bytes_per_token())

    def flops(self) -> float | None:
        t, pl = self.target, self.k.planner
        if self.device == "none":
            return None
        if self.device == "cpu":
            if not t.cpu_gflops:
                return None
            # measured fp32; int8/bf16 dot-product instructions (VNNI, AMX) can run several times faster,
            # and a lower bound must assume the fastest
            factor = 1 if self.prec == "fp32" else (pl.cpu_amx_flops_factor if t.cpu_amx else pl.cpu_lowp_flops_factor)
            return t.cpu_gflops * 1e9 * factor
        if t.gpu_fp16_tflops is None:
            return None
        f = t.gpu_fp16_tflops * 1e12
        # the card's own low-precision rate where its sheet prints one (a lower bound credits the fastest unit the
        # precision can use), else the generic factor for INT8 / FP8 tensor cores
        own = {"fp8": t.gpu_fp8_tflops, "int8": t.gpu_int8_tops,
               "fp4": t.gpu_fp4_tflops or t.gpu_fp8_tflops}.get(self.prec)
        if own:
            f = max(f, own * 1e12)
        elif self.pspec.bits_per_weight < 16:
            f *= pl.gpu_lowp_flops_factor
        return f * self.ranks()

    def serving_ranks(self) -> int:
        """GPUs whose bandwidth and FLOPS one step of the deployment as emitted adds: the tensor-parallel ranks where
        the engine splits tensors; 1 where it splits layers (llama.cpp's default -sm layer, transformers'
        device_map="auto"), whose GPUs run their layers one after another for every step, so more GPUs add memory
        and no speed (XiongjieDai's 8 x RTX 4090: Llama-3-8B Q4_K_M at 118 tok/s, one 4090 at 131). The speed
        bounds (ranks()) still credit an engine's tensor split, the fastest it could be run."""
        if self.device != "gpu":
            return 1
        return self.tp if self.serving_tensor else 1

    def serving_flops(self) -> float | None:
        """The rate a step's matrix work really runs at, for a prediction (flops() is a bound's most generous one):
        FP8 / FP4 on the card's own FP8 / FP4 units where its sheet prints them, INT8 weights and activations on its
        INT8 units; every other quantized checkpoint (FP8 on Ampere through Marlin, AWQ / GPTQ / GGUF) multiplies in
        16 bits after dequantizing its weights, at the FP16 rate."""
        t = self.target
        if self.device != "gpu" or t.gpu_fp16_tflops is None:
            return None
        own = {"fp8": t.gpu_fp8_tflops, "fp4": t.gpu_fp4_tflops, "int8": t.gpu_int8_tops}.get(self.prec)
        return max(t.gpu_fp16_tflops, own or 0.0) * 1e12 * self.serving_ranks()

    def serving_hw(self):
        """What one replica's step reads and computes, for the serving model; None where a figure is missing."""
        from advisor.planner.serving import Hw

        if not self.decodes or self.device in ("none", "gpu+cpu"):
            return None  # (offloaded layers: the model does not predict a GPU+RAM split)
        if self.spec.modality in NO_SERVING_FIT:
            return None  # audio in, not a prompt of tokens: nothing the serving model was fitted on speaks for it
        bw, _ = self.bandwidth(self.serving_ranks())
        if not bw:
            return None
        copies = self.kv_copies if self.device == "gpu" else 1.0
        chunk = self.chunk_tokens
        if self.mem_fraction_static is not None:  # SGLang picks its chunk by the GPU's memory
            chunk = self.act_tokens
        ar = 0.0
        if self.device == "gpu" and self.serving_ranks() > 1 and self.attn_dp <= 1:
            ar = 2 * self.spec.layers * self.k.serving.allreduce_us / 1e6
        elif self.attn_dp > 1:  # no tensor-parallel all-reduce: the experts' all-to-all instead, per step
            ar = self.alltoall_step_s()
        # a prediction takes the CPU's measured fp32 rate as its peak (the bound's low-precision factor is the most
        # VNNI / AMX could give, not what a step reaches); the fitted flops_eff scales it
        flops = self.serving_flops() if self.device == "gpu" else (
            self.target.cpu_gflops * 1e9 if self.target.cpu_gflops else None)
        e, k = self.spec.moe_experts, self.spec.moe_active_experts
        share = k / e if e and k and k < e else 0.0
        routed = self._routed_bytes()
        # data-parallel attention: every rank reads its own copy of what is not a routed expert each step
        read = self.active_b + (self.dp_extra_b if self.attn_dp > 1 else 0.0)
        sp = self.spec
        full_layers = max(0, sp.layers - sp.sliding_layers)  # (windowed layers: left out)
        return Hw(bandwidth=bw, flops=flops, weights_read=read, moe_routed_bytes=routed, moe_share=share,
                  kv_per_token=self.kv_typ * copies, matmul_params=self.spec.matmul_params_b * 1e9,
                  chunk_tokens=int(chunk or 0), max_running=self._max_running(), allreduce_s=ar,
                  a2a_s_per_token=self.alltoall_s_per_token(),
                  attn_flops=2.0 * full_layers * sp.attention_heads * sp.head_dim,
                  dp_ranks=max(1, self.attn_dp), routed_share=self._routed_share() if self.attn_dp > 1 else 0.0,
                  kv_topk=(self.spec.index_topk or 0) if self.indexer_b else 0,
                  kv_index_per_token=self.indexer_b * copies if self.indexer_b else 0.0,
                  index_attn_flops=float(full_layers * (sp.index_n_heads or 0) * (sp.index_head_dim or 0)),
                  host_s_per_seq=self._host_floor_s())

    def _host_floor_s(self) -> float:
        """The served host floor per running sequence (knowledge/aiconfigurator.yaml host_ms_per_seq: earned on the
        served runs of vLLM, SGLang and TensorRT-LLM on NVIDIA GPUs, held out by source) for those engines there,
        which a plan always serves through their API servers. Not those engines on other GPUs: AMD's published
        served runs exceed it (vLLM on 8 x MI300X, the ROCm blog: 15,100 output tok/s, nearly three
        times the 5,556 a 0.18 ms floor allows one server; held out by publisher, AMD's tok/s went 13 -> 16 % with it).
        llama.cpp's server on any GPU takes the same floor as a lower bound (knowledge/aiconfigurator.yaml
        host_basis): llama-server samples, detokenizes and streams every generating slot's token on the host in its
        one server loop, and without it a plan put llama.cpp at 2,048 users on one H100 above every batching engine
        (8,613 output tok/s against vLLM's host-bound 5,343); no published llama.cpp run served hundreds of slots."""
        a = self.k.aiconfigurator
        on = self.device == "gpu" and (self.engine == "llama.cpp" or
                                       (self.engine in a.backends and self.target.gpu_vendor == "nvidia"))
        return a.host_ms_per_seq / 1000 if on else 0.0

    def _gpu_default(self):
        """The engine's target-dependent defaults (vLLM's max_num_seqs / max_num_batched_tokens by device and GPU
        memory), or None where it has none. A GPU of unknown memory takes the entries' 0 GiB floor: vLLM's own
        defaults where it cannot read the memory (the planner cannot either)."""
        t = self.target
        if self.device not in ("gpu", "cpu"):
            return None
        mem = (t.gpu_memory_gib or 0) if self.device == "gpu" else 0
        gid = f"{t.gpu_id or ''} {t.gpu_name or ''}".lower() if self.device == "gpu" else ""
        return next((d for d in self.k.serving.modes[self.engine].target_defaults
                     if d.device == self.device and mem >= d.min_gpu_gib
                     and not any(x in gid for x in d.not_ids_with)), None)

    @property
    def chunk_tokens(self) -> int:
        """The tokens one step prefills by default: the engine's GPU-dependent default, else its fixed one."""
        g = self.gpu_default
        return g.batched_tokens if g is not None and g.batched_tokens else self.cap.prefill_chunk_tokens

    def batch_cap(self) -> int | None:
        """The engine's cap on sequences per step: the answers' load.max_batch where the deployment sets one, else
        the engine's default on this target."""
        g = self.gpu_default
        cap = self.wl.max_batch or (g.max_running if g is not None else self.k.serving.modes[self.engine].max_running)
        ep = self.cap.expert_parallel
        if cap is not None and self.attn_dp > 1 and ep is not None and ep.cap_per_rank and not self.wl.max_batch:
            return cap * self.attn_dp  # one scheduler per data-parallel rank, each with the engine's own cap
        return cap

    def _max_running(self) -> int | None:
        """Sequences one step may hold: what the KV pool holds at the typical length, at most the engine's batch cap."""
        pool = self.max_concurrency()
        cap = self.batch_cap()
        return pool if cap is None or pool is None else min(pool, cap)

    def decode_total_bound(self, one: float | None) -> float | None:
        bw = self.bandwidth()[0] if self.device != "gpu+cpu" else None
        mc = self.max_concurrency()
        b = max(1, min(self.wl.concurrency, mc)) if mc else 1
        if bw is None or b == 1:
            return one
        f = self.flops()
        stages = self.pp if self.device == "gpu" else 1  # pipeline stages work on different sequences at once
        copies = self.kv_copies if self.device == "gpu" else 1.0
        return stages * decode_total_bound(b, bw, self.active_b, self.kv_tok_at(self.resident()) * copies,
                                           self.resident(), f, self.spec.matmul_params_b * 1e9)

    def ttft_bound(self) -> float | None:
        f = self.flops()
        if f is None:
            return None
        bw, _ = self.bandwidth()
        return ttft_bound(self.spec.matmul_params_b * 1e9, self.wl.prompt_tokens, f, self.active_b, bw)

    def parallelism(self) -> str | None:
        s = self.k.s
        if self.device == "gpu+cpu":
            return s("plan_par_offload", self.lang, ram=self.offload_layers, layers=self.spec.layers)
        if self.device != "gpu" or self.n <= 1:
            return None
        if self.attn_dp > 1:
            return s("plan_par_dp_ep", self.lang, n=self.n, nodes=self.ep_nodes)
        if self.cap.multi_gpu == "tensor" and self.pp > 1:
            return s("plan_par_tensor_pipeline", self.lang, tp=self.tp, pp=self.pp)
        if self.cap.multi_gpu == "tensor":
            return s("plan_par_tensor", self.lang, n=self.n)
        if self.bound_tensor:
            return s("plan_par_layers_tp", self.lang, n=self.n)
        return s("plan_par_layers", self.lang, n=self.n)


# ---------------------------------------------------------------- assembling a plan

def _assumptions(c: _Calc) -> list[str]:
    s, lang, spec, wl = c.k.s, c.lang, c.spec, c.wl
    out = []
    if c.device == "none":
        return [s("plan_a_no_device", lang, engine=c.k.engines[c.engine].name)]
    if c.prec != c.asked:
        out.append(s("plan_a_mapped", lang, engine=c.k.engines[c.engine].name, asked=c.asked, label=c.pspec.label))
    if c.exact_weights:
        out.append(s("plan_a_weights_file", lang, gib=round(c.weights_gib, 3)))
    elif c.gguf_types:
        embd, outp = c.gguf_types
        out.append(s("plan_a_weights_gguf_tied" if spec.tied_embeddings else "plan_a_weights_gguf", lang,
                     params=f"{spec.params_b:g}", label=c.pspec.label, embd=embd.upper(), out=outp.upper(),
                     bits=f"{c.gguf_body:.3f}", gib=round(c.weights_gib, 3), source=c.k.planner.gguf_source))
    else:
        out.append(s("plan_a_weights", lang, params=f"{spec.params_b:g}", bpw=c.pspec.bits_per_weight,
                     label=c.pspec.label, gib=round(c.weights_gib, 2), source=c.pspec.source))
    if c.decodes:
        out.append(_kv_text(c))
    if c.ep_skipped:
        out.append(s(f"plan_a_ep_{c.ep_skipped}", lang, engine=c.k.engines[c.engine].name, nodes=c.pp,
                     link=c.target.interconnect or "—"))
    if c.attn_dp > 1:
        a2a = (c.alltoall_step_s() + c.alltoall_s_per_token() * c.step_batch()) * 1000
        per_node_tp = c.n // max(1, c.ep_nodes)  # the tensor-parallel alternative splits within a node
        out.append(s("plan_a_dp_ep", lang, engine=c.k.engines[c.engine].name, n=c.n,
                     dense=round((c.weights_b - c._routed_bytes()) / GIB, 2),
                     experts=round(c._routed_bytes() / c.ep / GIB, 2), extra=round(c.dp_extra_b / GIB, 2),
                     x=f"{max(1.0, per_node_tp / c.kv_heads_held()):g}",
                     a2a=f"{a2a:.2f}", source=c.cap.expert_parallel.source))
    if c.target.nodes > 1 and c.device == "gpu" and c.pp == 1 and c.ep_nodes == 1 and c.cap.multi_gpu != "none":
        out.append(s("plan_a_one_node", lang, engine=c.k.engines[c.engine].name, n=c.n, nodes=c.target.nodes))
    name = c.k.engines[c.engine].name
    if c.kv_refused:
        asked, status, note = c.kv_refused
        out.append(s(f"plan_a_kv_refused_{'unknown' if status == 'unknown' else 'unsupported'}", lang, engine=name,
                     asked=asked, note=note.get(lang) if note else "", dtype=c.kv_dtype))
    elif c.kv_from_checkpoint:
        declared = c.spec.file_kv_dtype == "fp8"
        out.append(s("plan_a_kv_checkpoint" if declared else "plan_a_kv_checkpoint_assumed", lang, engine=name,
                     kvb=f"{c.kv_bytes:g}", source=c.kv_source))
    elif c.kv_status == "experimental":
        out.append(s("plan_a_kv_dtype_experimental", lang, engine=name, dtype=c.kv_dtype, kvb=f"{c.kv_bytes:g}"))
    elif c.kv_status:
        out.append(s("plan_a_kv_dtype", lang, engine=name, dtype=c.kv_dtype, kvb=f"{c.kv_bytes:g}",
                     source=c.kv_source))
    out.append(s("plan_a_overhead", lang, runtime=round(c.runtime_gib, 2), act=round(c.act_gib, 3),
                 tokens=c.act_tokens, source=c.cap.source if c.device != "cpu" else c.cap.cpu_source))
    if c.mem_fraction_static is not None:
        out.append(s("plan_a_budget_static", lang, engine=name, f=f"{c.mem_fraction_static:.3f}",
                     source=c.cap.static_reserve.source if c.cap.static_reserve else c.cap.source))
    if c.device == "cpu" and c.cap.cpu_weight_copies > 1:
        out.append(s("plan_a_weight_copies", lang, engine=c.k.engines[c.engine].name, x=f"{c.cap.cpu_weight_copies:g}",
                     source=c.cap.cpu_source))
    if c.device in ("gpu", "gpu+cpu"):
        if c.cap.budget_of == "free_after_load" and c.cap.memory_budget_fraction < 1:
            out.append(s("plan_a_budget_free", lang, f=c.cap.memory_budget_fraction))
        elif c.cap.memory_budget_fraction < 1:
            out.append(s("plan_a_budget_total", lang, f=c.cap.memory_budget_fraction))
        if c.target.unified_memory:
            out.append(s("plan_a_unified", lang, f=c.k.planner.unified_memory_gpu_fraction))
        if c.target.gpu_memory_gib is None:
            out.append(s("plan_a_gpu_unknown", lang))
    if c.device in ("cpu", "gpu+cpu"):
        if c.target.ram_gib is None:
            out.append(s("plan_a_ram_unknown", lang))
        else:
            out.append(s("plan_a_ram", lang, f=c.k.planner.cpu_ram_fraction, ram=round(c.target.ram_gib, 1)))
    bw, src = c.bandwidth()
    if c.decode_bound() is None:
        # what to give for one: a CPU's bandwidth (the answers' field), a GPU the catalogue names
        out.append(s("plan_a_no_bw_cpu" if c.device == "cpu" else "plan_a_no_bw", lang))
    else:
        shown = bw / 1e9 if bw else c.target.cpu_bandwidth_gb_s
        b = c.bytes_per_token()
        out.append(s("plan_a_bw", lang, bw=round(shown, 1), src=s(f"plan_bw_{src or 'spec'}", lang),
                     read=f"{b / 1e9:.2f} GB" if b >= 1e9 else f"{b / 1e6:.1f} MB", resident=round(c.resident())))
    if c.device == "gpu" and c.n > 1 and c.cap.multi_gpu != "tensor" and c.bound_tensor and c.decodes:
        layer = c.decode_bound(ranks=1)
        out.append(s("plan_a_bound_tensor", lang, engine=c.k.engines[c.engine].name, n=c.n, source=c.cap.bound_source,
                     tps=f"{layer:,.1f}" if layer else "—"))
        if not c.serving_tensor and c.serving_hw() is not None:  # (a prediction exists: it runs as deployed)
            out.append(s("plan_a_layer_predicted", lang, n=c.n))
    from advisor.planner.perf import cpu_without_flops

    if cpu_without_flops(c.device, c.target) and c.decode_bound() is not None:
        out.append(s("plan_a_no_flops_cpu", lang))  # a decode bound, but nothing to time a prompt with
    if c.flops() is not None:
        f = c.flops()
        out.append(s("plan_a_ttft", lang, prompt=wl.prompt_tokens, params=f"{spec.matmul_params_b:.4g}",
                     peak=f"{f / 1e12:,.1f} TFLOPS" if f >= 1e12 else f"{f / 1e9:,.0f} GFLOPS",
                     cpu=s("plan_a_cpu_lowp", lang, x=f"{c.k.planner.cpu_lowp_flops_factor:g}")
                     if c.device == "cpu" and c.prec != "fp32" else ""))
    if wl.context_tokens > spec.max_context:
        out.append(s("plan_a_ctx_beyond", lang, ctx=f"{wl.context_tokens:,}", max=f"{spec.max_context:,}"))
    return out


def _kv_text(c: _Calc) -> str:
    """How the KV per token was counted: by attention kind, with the sliding-window share and the TP copies."""
    s, lang, spec, wl, lay = c.k.s, c.lang, c.spec, c.wl, c.layout
    layers = spec.decoder_layers or spec.layers if spec.architecture == "encoder-decoder" else spec.layers
    typical = wl.typical_tokens is not None
    per_tok = (lay.full + lay.windowed) * c.kv_bytes  # (the indexer's key cache: in the layout, told apart here)
    common = dict(kvb=f"{c.kv_bytes:g}", per_tok=f"{int(round(per_tok - c.indexer_b)):,}",
                  conc=c.running if typical else wl.concurrency,
                  ctx=f"{c.typical:,}" if typical else f"{wl.context_tokens:,}",
                  layers=layers, engine=c.k.engines[c.engine].name)
    if lay.kind == "mla":
        text = s("plan_a_kv_mla", lang, rank=spec.kv_lora_rank, rope=spec.qk_rope_head_dim, **common)
    elif lay.kind == "mla-expanded":
        text = s("plan_a_kv_mla_expanded", lang, heads=spec.attention_heads,
                 dims=(spec.qk_nope_head_dim or 0) + (spec.qk_rope_head_dim or 0) + (spec.v_head_dim or 0), **common)
    else:
        text = s("plan_a_kv", lang, kv_heads=spec.kv_heads, head_dim=spec.head_dim, **common)
    if spec.sliding_layers and spec.sliding_window:
        key = "plan_a_kv_window" if lay.window else "plan_a_kv_window_full"
        text += " " + s(key, lang, n=spec.sliding_layers, layers=layers, window=f"{spec.sliding_window:,}",
                        engine=common["engine"], per_tok=f"{c.kv_tok:,}", ctx=common["ctx"])
    if c.indexer_b:
        text += " " + s("plan_a_kv_indexer", lang, dim=spec.index_head_dim, layers=layers,
                        b=f"{c.indexer_b / spec.layers:g}", all=f"{int(round(c.indexer_b)):,}",
                        total=f"{int(round(per_tok)):,}")
        if spec.index_topk:
            text += " " + s("plan_a_kv_sparse_read", lang, topk=f"{spec.index_topk:,}")
    if c.kv_copies > 1:
        text += " " + s("plan_a_kv_copies", lang, tp=c.tp, x=f"{c.kv_copies:g}")
    if typical:
        key = "plan_a_kv_typical_one" if c.running == 1 and wl.concurrency > 1 else "plan_a_kv_typical"
        text += " " + s(key, lang, ctx=f"{wl.context_tokens:,}", users=wl.concurrency)
    return text


def _plan(c: _Calc, options: list[PlanOption], detail: bool = True) -> EnginePlan:
    one = c.decode_bound()
    return EnginePlan(
        engine=c.engine, precision=c.prec, precision_label=c.pspec.label, device=c.device, gpus_used=c.n,
        accelerator=c.target.accelerator,
        parallelism=c.parallelism(), tensor_parallel=max(1, c.tp) if c.cap.multi_gpu == "tensor" else 1,
        pipeline_parallel=c.pp, attention_dp=c.attn_dp, expert_parallel=c.ep, kv_attention=c.layout.kind, kv_window_tokens=c.layout.window,
        kv_full_bytes_per_token=int(c.layout.full * c.kv_bytes * c.kv_copies) if c.decodes else 0,
        kv_window_bytes_per_token=int(c.layout.windowed * c.kv_bytes * c.kv_copies) if c.decodes else 0, context_tokens=c.wl.context_tokens, concurrency=c.wl.concurrency,
        weights_gib=_r(c.weights_gib, 3), kv_bytes_per_token=c.kv_tok, kv_cache_dtype=c.kv_dtype,
        kv_from_checkpoint=c.kv_from_checkpoint,
        kv_gib=_r(c.kv_gib, 3),
        overhead_gib=_r(c.overhead_gib, 3), total_gib=_r(c.total_gib, 3), available_gib=_r(c.available_gib, 3),
        fits=c.fits, loads=c.loads(), headroom_gib=None if c.available_gib is None else _r(c.available_gib - c.total_gib, 3),
        max_concurrency=c.max_concurrency(), max_context_tokens=c.max_context(), offload_layers=c.offload_layers,
        offload_ram_gib=_r(c.offload_ram_gib, 2),
        decode_tps_upper_bound=_r(one, 1), decode_tps_total_upper_bound=_r(c.decode_total_bound(one), 1),
        ttft_ms_lower_bound=_sig3(c.ttft_bound()), prompt_tokens=c.wl.prompt_tokens, options=options,
        typical_tokens=c.typical if c.wl.typical_tokens is not None else None,
        max_running=c._max_running() if c.decodes and c.mode != "sequential" else (1 if c.decodes else None),
        prefill_chunk_tokens=c.act_tokens if c.mem_fraction_static is not None else c.chunk_tokens,
        batch_cap=c.batch_cap() if c.decodes and c.mode != "sequential" else None,
        mem_fraction_static=None if c.mem_fraction_static is None else round(c.mem_fraction_static, 3),
        assumptions=_assumptions(c) if detail else [])


def _options(c: _Calc) -> list[PlanOption]:
    if c.fits is not False or c.device == "none":
        return []
    s, lang, k = c.k.s, c.lang, c.k
    out: list[PlanOption] = []
    # ranked by effect: a smaller KV cache first (it halves what usually overflows), where the matrix allows it
    if c.kv_dtype not in ("fp8", "int8") and c.device in ("gpu", "gpu+cpu", "cpu"):
        for dtype in ("fp8", "int8"):
            alt = _Calc(c.engine, c.spec, c.target, replace(c.wl, kv_cache_dtype=dtype), k, lang, c.prec)
            if alt.kv_dtype == dtype and alt.fits:
                out.append(PlanOption(kind="kv_dtype", kv_cache_dtype=dtype, total_gib=_r(alt.total_gib),
                                      available_gib=_r(alt.available_gib),
                                      text=s("plan_fix_kv_dtype", lang, dtype=dtype.upper(),
                                             total=round(alt.total_gib, 1), avail=round(alt.available_gib, 1))))
                break
    mc, mx = c.max_concurrency(), c.max_context()
    if mx and mx >= 128 and c.device != "gpu+cpu":
        key = "plan_fix_reduce" if mc else "plan_fix_reduce_ctx"
        out.append(PlanOption(kind="reduce_context", context_tokens=mx, concurrency=mc or None,
                              text=s(key, lang, ctx=f"{mx:,}", conc=c.wl.concurrency, n=mc,
                                     asked=f"{c.wl.context_tokens:,}")))
    here = c.pspec.bits_per_weight
    seen = {c.prec}
    for p in k.planner.quantize_ladder:
        q = c.cap.precision_map.get(p, p)
        if q in seen or k.planner.precisions[q].bits_per_weight >= here:
            continue
        need = c.cap.fp8_min_compute_capability
        if q == "fp8" and need and c.device != "cpu" and not cc_at_least(c.target.gpu_compute_capability, need):
            continue
        seen.add(q)
        alt = _Calc(c.engine, c.spec, c.target, c.wl, k, lang, precision=q)
        if alt.fits:
            how = (" " + s("plan_par_offload", lang, ram=alt.offload_layers, layers=c.spec.layers)
                   if alt.device == "gpu+cpu" else "")
            out.append(PlanOption(kind="quantize", precision=q, total_gib=_r(alt.total_gib), available_gib=_r(
                alt.available_gib), text=s("plan_fix_quantize", lang, label=alt.pspec.label + how,
                                           total=round(alt.total_gib, 1), avail=round(alt.available_gib, 1))))
            break
    compact = sorted(seen, key=lambda q: k.planner.precisions[q].bits_per_weight)[0]
    if c.device in ("gpu", "gpu+cpu") and c.cap.multi_gpu != "none" and not c.target.unified_memory:
        tries = [c.prec] + ([compact] if compact != c.prec and not any(o.kind == "quantize" for o in out) else [])
        for prec in tries:
            opt = _more_gpus(c, prec)
            if opt:
                out.append(opt)
    if c.device == "cpu":
        out.append(PlanOption(kind="more_memory", total_gib=_r(c.total_gib), available_gib=_r(c.available_gib),
                              text=s("plan_fix_ram", lang, total=round(c.total_gib, 1),
                                     avail=round(c.available_gib or 0, 1))))
    return out


def _more_gpus(c: _Calc, prec: str) -> PlanOption | None:
    k = c.k
    sizes = k.planner.tensor_parallel_sizes if c.cap.multi_gpu == "tensor" else range(max(c.n, 1) + 1, 17)
    for n in sizes:
        if n <= max(c.n, c.target.gpu_count):
            continue
        alt = _Calc(c.engine, c.spec, c.target, replace(c.wl, gpu_count=n), k, c.lang, precision=prec)
        if alt.n == n and alt.fits and alt.device == "gpu":
            return PlanOption(kind="add_gpus", gpu_count=n, precision=prec, total_gib=_r(alt.total_gib),
                              available_gib=_r(alt.available_gib),
                              text=k.s("plan_fix_gpus", c.lang, n=n, gpu=c.target.gpu_name or "GPU",
                                       label=alt.pspec.label, total=round(alt.total_gib, 1),
                                       avail=round(alt.available_gib, 1), how=alt.parallelism() or ""))
    return None


def plan_engine(engine: str, spec: ModelSpec, target: Target, wl: Workload, k: Knowledge, lang: str = "en",
                precision: str | None = None, detail: bool = True, calibration=None,
                serving_skip: frozenset[str] = frozenset(), reuse: dict | None = None) -> EnginePlan:
    """detail=False skips the fixes and the assumption texts: the flip search needs only the verdicts (serving_skip:
    advisor.planner.perf.serving_plan's skip).

    reuse (with detail=False): a dict kept across plans for this target and model (advisor.planner.make_plan); the
    memory plan, and those of the replicas the fleet may use instead, are the same whatever the TTFT target (only the
    serving plan reads it), so a plan that differs from one made before only in that target takes them from there."""
    from advisor.planner.perf import serving_plan

    reuse = None if detail else reuse

    def calc_layout(w: Workload, prec: str | None, layout: str = "auto") -> _Calc:
        if reuse is None:
            return _Calc(engine, spec, target, w, k, lang, prec, layout=layout)
        key = (engine, id(spec), replace(w, ttft_target_ms=None), lang, prec, layout)
        if key not in reuse:
            reuse[key] = _Calc(engine, spec, target, w, k, lang, prec, layout=layout)
        return reuse[key]

    def choose(w: Workload, prec: str | None) -> tuple[_Calc, str | None]:
        """The plan's calculator, with the layout the prediction picks where an MoE plan could take DP + EP (the
        same choice for the plan, the flip search and the fleet's smaller replicas; at this workload's own target)."""
        a = calc_layout(w, prec)
        if not a.ep_candidate:
            return a, None
        return _pick_layout(a, calc_layout(w, prec, "tensor"), w.ttft_target_ms)

    c, note = choose(wl, precision)
    layout = "dp_ep" if c.attn_dp > 1 else "tensor"
    if reuse is None:
        p = _plan(c, _options(c) if detail else [], detail)
    else:
        key = ("plan", engine, id(spec), replace(wl, ttft_target_ms=None), lang, precision, layout)
        if key not in reuse:
            reuse[key] = _plan(c, [], detail)
        p = reuse[key].model_copy()  # (the copy gets its own serving plan and prices)
    if note is not None:
        p.layout_note = note
        if detail:
            p.assumptions = [*p.assumptions, note]
    p.serving = serving_plan(c, lambda n: choose(replace(wl, gpu_count=n), c.prec)[0], calibration, detail,
                             serving_skip, wl=wl)
    return p


def _layout_figures(c: _Calc):
    """One layout at the answers' users (the same in the plan and in the flip search, and cheap: memoised points, no
    capacity search): our serving model's point, and the measured-silicon predictor's output tok/s there with its
    name where it predicts this layout (else None); None where our model does not predict."""
    from advisor.planner.aic import predictor_name
    from advisor.planner.perf import _silicon, efficiency, hw_class
    from advisor.planner.serving import Load, predict

    hw = c.serving_hw()
    if hw is None or c.loads() is False:
        return None
    eff = efficiency(c.engine, hw_class(c.target, c.device, c.k), c.k, None, batching=c.wl.concurrency > 1)[0]
    wl = c.wl
    pt = predict(c.mode, hw, eff, Load(wl.prompt_tokens, wl.output_tokens, wl.input_sd, concurrency=wl.concurrency))
    si, _ = _silicon(c, c.mode, hw, eff, wl, c.k)
    f = si.figures(wl.concurrency) if si is not None else None
    return pt, ((f[4], predictor_name(si.key, c.k)) if f else None)


def _pick_layout(dp: _Calc, tp: _Calc, goal: float | None) -> tuple[_Calc, str]:
    """Data-parallel attention + EP or tensor parallelism on the same GPUs, whichever serves the answers' users
    better: it loads; its p95 TTFT (our serving model's: the plan keeps ours on a data-parallel layout) meets the
    target at those users; then more output tok/s, the measured-silicon predictor's where it predicts both layouts
    (the figures the plan then shows: our model, blind to how small each rank's share of a tensor split's attention
    and experts runs, prefers that split where the library's measured kernels do not), else our model's; within
    knowledge/serving.yaml layout_tps_margin of each other, the lower p95 TTFT.
    Returns the chosen plan's calculator (its layout fixed) and the sentence that says why, with both layouts'
    figures. goal: the workload's own TTFT target (a calculator shared across targets keeps the first it saw)."""
    a, sa = _layout_figures(dp) or (None, None)
    b, sb = _layout_figures(tp) or (None, None)
    both = sa is not None and sb is not None

    def score(c: _Calc, pt, si) -> tuple:
        meets = pt is not None and pt.ttft_ms_p95 is not None and (goal is None or pt.ttft_ms_p95 <= goal)
        tps = si[0] if both else (pt.output_tps if pt is not None else None)
        return (c.loads() is not False and pt is not None, meets, round(tps or 0.0),
                -(pt.ttft_ms_p95 or float("inf")) if pt is not None else float("-inf"))

    da, db = score(dp, a, sa), score(tp, b, sb)
    if da[:2] == db[:2] and abs(da[2] - db[2]) <= dp.k.serving.layout_tps_margin * max(da[2], db[2]):
        dp_first = da[3] > db[3]  # a tie on output: the lower p95 TTFT
    else:
        dp_first = da > db
    keep, kp, op, ks_, os_ = (dp, a, b, sa, sb) if dp_first else (tp, b, a, sb, sa)

    def fig(pt, key: str, nd: int = 0) -> str:
        v = getattr(pt, key, None) if pt is not None else None
        return "—" if v is None else f"{v:,.{nd}f}"
    k = dp.k
    key = "plan_layout_dp_ep" if keep is dp else "plan_layout_tp"
    if both:
        text = k.s(key + "_si", dp.lang, n=dp.n, users=f"{dp.wl.concurrency:,}", predictor=ks_[1],
                   tps=f"{ks_[0]:,.0f}", otps=f"{os_[0]:,.0f}", ttft=fig(kp, "ttft_ms_p95"), ottft=fig(op, "ttft_ms_p95"),
                   margin=f"{k.serving.layout_tps_margin:.0%}")
    else:
        text = k.s(key, dp.lang, n=dp.n, users=f"{dp.wl.concurrency:,}", tps=fig(kp, "output_tps"),
                   ttft=fig(kp, "ttft_ms_p95"), otps=fig(op, "output_tps"), ottft=fig(op, "ttft_ms_p95"))
    return keep, text


def add_offload_option(plans: dict[str, EnginePlan], k: Knowledge, lang: str) -> None:
    """Point engines that do not fit at llama.cpp's GPU+RAM split, when that is what makes it fit."""
    lc = plans.get("llama.cpp")
    if lc is None or lc.device != "gpu+cpu" or not lc.fits:
        return
    key = "plan_fix_offload" if lc.decode_tps_upper_bound else "plan_fix_offload_nobound"
    text = k.s(key, lang, ram=lc.offload_layers, tps=lc.decode_tps_upper_bound,
               label=lc.precision_label)
    for e, p in plans.items():
        if e != "llama.cpp" and p.fits is False:
            p.options.append(PlanOption(kind="offload", precision=lc.precision, total_gib=lc.total_gib,
                                        available_gib=lc.available_gib, text=text))



def concurrency_curve(p: EnginePlan, max_context: int) -> list[tuple[int, int]]:
    """(context, max concurrent sequences) at powers of two up to the model's window, from the plan's numbers."""
    if p.available_gib is None or p.device == "none" or p.kv_bytes_per_token <= 0:
        return []
    free = (p.available_gib - p.weights_gib - p.overhead_gib) * GIB
    out, ctx = [], 512
    while ctx <= max_context:
        # one sequence of ctx tokens: full layers grow with it, sliding-window layers stop at their window; TP copies
        # are in both figures (a plan made before these fields has only kv_bytes_per_token)
        held = min(ctx, p.kv_window_tokens) if p.kv_window_tokens else ctx
        per_seq = (p.kv_full_bytes_per_token * ctx + p.kv_window_bytes_per_token * held
                   if p.kv_full_bytes_per_token or p.kv_window_bytes_per_token else p.kv_bytes_per_token * ctx)
        n = int(free // per_seq) if per_seq > 0 else 0
        if n < 1:
            break
        out.append((ctx, n))
        ctx *= 2
    return out

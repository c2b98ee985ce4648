"""The capacity formulas: memory per engine and precision, what fits, and the roofline bounds. Pure.

memory  = weights + KV cache + overhead          (GiB = 2^30 B)
  weights  = params x bits_per_weight / 8         (or the model file's own size, when that is what loads)
  KV       = 2 x layers x kv_heads x head_dim x kv_bytes  per token, x concurrency x context
  overhead = engine runtime (CUDA context, ...) + activations for one prefill chunk
decode tok/s per sequence <= bandwidth / (active weight bytes + KV bytes of the resident tokens)
TTFT >= max(2 x active params x prompt tokens / peak FLOPS, one read of the weights / bandwidth)
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from advisor import kschema as ks
from advisor.knowledge import Knowledge
from advisor.planner.spec import ModelSpec
from advisor.planner.types import EnginePlan, PlanOption, Target

GIB = 2**30


@dataclass(frozen=True)
class Workload:
    precision: str  # as asked (answers' precision)
    context_tokens: int
    concurrency: int
    prompt_tokens: int
    resident_tokens: float | None = None  # mean tokens held per sequence while decoding; None = context / 2
    gpu_count: int | None = None  # override the target's count (the "add GPUs" search)
    kv_reserved_gib: float | None = None  # a fixed KV pool the engine was given (vLLM CPU's KVCACHE_SPACE)


def _r(x: float | None, nd: int = 2) -> float | None:
    return None if x is None else round(x, nd)


def cc_at_least(cc: str | None, want: str) -> bool:
    """Compute capabilities compare as numbers ("12.0" > "8.9"), not as strings."""
    def parse(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in v.split(".") if x.isdigit())
    return cc is not None and parse(cc) >= parse(want)


NO_DECODE = ("encoder", "cnn")  # no autoregressive decoding, so no KV cache and no decode bound


class _Calc:
    """One engine, one precision, one target: every intermediate the plan and its text need."""

    def __init__(self, engine: str, spec: ModelSpec, target: Target, wl: Workload, k: Knowledge, lang: str,
                 precision: str | None = None):
        self.k, self.lang, self.engine, self.spec, self.target, self.wl = k, lang, engine, spec, target, wl
        self.cap: ks.EngineCapacity = k.planner.engines[engine]
        cap = self.cap
        self.asked = wl.precision
        self.prec = precision or cap.precision_map.get(wl.precision, wl.precision)
        gguf_file = engine == "llama.cpp" and spec.file_format == "gguf" and precision is None
        if gguf_file:  # llama.cpp runs the user's GGUF as it is, whatever precision was asked
            self.prec = spec.file_precision or "gguf_file"
        if self.prec not in k.planner.precisions:  # e.g. a GGUF-only id on an engine without a mapping
            self.prec = "fp16"
        self.pspec = k.planner.precisions[self.prec]
        gpus = wl.gpu_count if wl.gpu_count is not None else target.gpu_count
        self.gpu_ok = ("gpu" in cap.devices and target.gpu_vendor in cap.gpu_vendors and gpus > 0)
        self.device = "gpu" if self.gpu_ok else ("cpu" if "cpu" in cap.devices else "none")
        self.n = self._gpus_used(gpus) if self.device == "gpu" else 0

        exact = spec.weights_bytes if spec.weights_bytes and (
            spec.file_precision == self.prec or (gguf_file and self.prec == "gguf_file")) else None
        self.exact_weights = exact is not None
        params = spec.params_b * 1e9
        if exact:
            self.weights_b = float(exact)
        elif self.pspec.embedding_bits:  # quantized linear layers, embeddings / LM head kept wide
            emb = min(spec.embedding_params_b * 1e9, params / 2)
            self.weights_b = (params - emb) * self.pspec.bits_per_weight / 8 + emb * self.pspec.embedding_bits / 8
        else:
            self.weights_b = params * self.pspec.bits_per_weight / 8
        # read per decoded token: the active weights, less the input embedding table (a one-row lookup) when the
        # LM head is a separate matrix
        per_emb = (self.pspec.embedding_bits / 8 if self.pspec.embedding_bits and not exact else self.weights_b / params)
        lookup = 0.0 if spec.tied_embeddings else spec.vocab_size * spec.hidden_size * per_emb
        self.active_b = max(self.weights_b * (spec.active_params_b / spec.params_b) - lookup, self.weights_b * 0.05)
        self.kv_bytes = (cap.kv_bytes or (cap.cpu_kv_bytes if self.device == "cpu" else None)
                         or (4 if self.prec == "fp32" else 2))
        self.decodes = spec.architecture not in NO_DECODE
        self.kv_tok = int(spec.kv_elements_per_token * self.kv_bytes) if self.decodes else 0

        # overhead: runtime + activations of one prefill chunk
        if self.device == "gpu":
            mem = self.gpu_mem_each
            self.runtime_gib = (max(cap.gpu_runtime_gib, cap.gpu_runtime_fraction * (mem or 0)) * self.n
                                + cap.per_extra_gpu_gib * (self.n - 1))
        else:  # the process baseline, and any second copy of the weights the engine makes at load
            self.runtime_gib = cap.cpu_runtime_gib + (cap.cpu_weight_copies - 1) * self.weights_b / GIB
        chunk = cap.prefill_chunk_tokens
        prompt = wl.prompt_tokens
        if chunk == 0:
            self.act_tokens = prompt
        elif self.device == "gpu":
            self.act_tokens = chunk  # reserved whole at start-up
        else:
            self.act_tokens = min(chunk, prompt)  # CPU pages count only once touched
        rows = self.act_tokens if cap.logits_for_chunk else min(self.act_tokens, wl.concurrency)
        act = max(rows * spec.vocab_size, self.act_tokens * (spec.hidden_size + spec.intermediate_size) * 2) * 4
        self.act_gib = act / GIB
        self.overhead_gib = self.runtime_gib + self.act_gib

        self.weights_gib = self.weights_b / GIB
        self.kv_gib = (wl.kv_reserved_gib if wl.kv_reserved_gib is not None
                       else self.kv_tok * wl.concurrency * wl.context_tokens / GIB)
        self.total_gib = self.weights_gib + self.kv_gib + self.overhead_gib
        self.available_gib = self._available()
        self.offload_layers: int | None = None
        self.fits = None if self.available_gib is None else self.total_gib <= self.available_gib
        self.ram_avail = (target.ram_gib * k.planner.cpu_ram_fraction) if target.ram_gib else None
        if self.device == "gpu" and self.fits is False and cap.cpu_offload and not target.unified_memory:
            self._offload()  # (unified memory: RAM and GPU memory are one pool, nothing to offload to)

    # -------------------------------------------------------------- pieces
    @property
    def gpu_mem_each(self) -> float | None:
        m = self.target.gpu_memory_gib
        if m is None:
            return None
        return m * self.k.planner.unified_memory_gpu_fraction if self.target.unified_memory else m

    def _gpus_used(self, count: int) -> int:
        mode = self.cap.multi_gpu
        if mode == "none":
            return 1
        if mode == "layer":
            return max(1, min(count, self.spec.layers))
        sizes = [s for s in self.k.planner.tensor_parallel_sizes
                 if s <= count and self.spec.attention_heads % s == 0]
        return max(sizes) if sizes else 1

    def _available(self) -> float | None:
        cap = self.cap
        if self.device == "none":
            return 0.0
        if self.device == "cpu":
            r = self.target.ram_gib
            return r * self.k.planner.cpu_ram_fraction if r else None
        mem = self.gpu_mem_each
        if mem is None:
            return None
        total = mem * self.n
        f = cap.memory_budget_fraction
        if cap.budget_of == "free_after_load":
            base = self.weights_gib + self.overhead_gib
            return base + f * max(0.0, total - base) if total > base else total
        return total * f

    def _offload(self) -> None:
        """llama.cpp -ngl: as many layers (weights + their KV) on the GPU as fit, the rest in RAM."""
        gpu_room = self.available_gib - self.overhead_gib
        per_layer = (self.weights_gib + self.kv_gib) / self.spec.layers
        on_gpu = max(0, min(self.spec.layers, int(gpu_room // per_layer))) if per_layer > 0 else 0
        in_ram = self.spec.layers - on_gpu
        self.offload_layers = in_ram
        self.device = "gpu+cpu"
        need_ram = in_ram * per_layer
        if self.ram_avail is None:
            self.fits = None
            return
        self.available_gib = self.available_gib + self.ram_avail
        self.fits = need_ram <= self.ram_avail

    # -------------------------------------------------------------- outputs
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
            need += self.kv_tok * self.wl.context_tokens / GIB
        return need <= self.available_gib

    def max_concurrency(self) -> int | None:
        free = self.free_for_kv()
        if free is None:
            return None
        per_seq = self.kv_tok * self.wl.context_tokens / GIB
        return max(0, int(free // per_seq)) if per_seq > 0 else None

    def max_context(self) -> int | None:
        free = self.free_for_kv()
        if free is None:
            return None
        per_tok = self.kv_tok * self.wl.concurrency / GIB
        if per_tok <= 0:
            return None
        return max(0, min(self.spec.max_context, int(free // per_tok)))

    def resident(self) -> float:
        """Tokens held per sequence while decoding; an upper bound on speed assumes the fewest: the prompt."""
        return self.wl.resident_tokens if self.wl.resident_tokens is not None else self.wl.prompt_tokens

    def bandwidth(self) -> tuple[float | None, str]:
        """Effective bytes/s for one token's reads, and where the figure comes from."""
        t = self.target
        if self.device == "none":
            return None, ""
        if self.device == "cpu":
            if t.cpu_bandwidth_gb_s is None:
                return None, ""
            return t.cpu_bandwidth_gb_s * 1e9, "measured" if t.cpu_measured else "given"
        if t.gpu_bandwidth_gb_s is None:
            return None, ""
        bw = t.gpu_bandwidth_gb_s * 1e9
        if self.device == "gpu" and self.cap.multi_gpu == "tensor":
            bw *= self.n  # each rank reads its own shard at the same time
        return bw, "spec"

    def bytes_per_token(self) -> float:
        return self.active_b + self.kv_tok * self.resident()

    def decode_bound(self) -> float | None:
        if not self.decodes:
            return None
        bw, _ = self.bandwidth()
        if self.device == "gpu+cpu":
            t = self.target
            if t.gpu_bandwidth_gb_s is None or t.cpu_bandwidth_gb_s is None:
                return None
            share = self.offload_layers / self.spec.layers
            b = self.bytes_per_token()
            secs = b * (1 - share) / (t.gpu_bandwidth_gb_s * 1e9) + b * share / (t.cpu_bandwidth_gb_s * 1e9)
            return 1 / secs
        if bw is None:
            return None
        return bw / self.bytes_per_token()

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
        if self.pspec.bits_per_weight < 16:  # INT8 / FP8 tensor cores; a lower bound credits every quantized model
            f *= pl.gpu_lowp_flops_factor
        if self.device == "gpu" and self.cap.multi_gpu == "tensor":
            f *= self.n
        return f

    def decode_total_bound(self, one: float | None) -> float | None:
        bw = self.bandwidth()[0] if self.device != "gpu+cpu" else None
        mc = self.max_concurrency()
        b = max(1, min(self.wl.concurrency, mc)) if mc else 1
        if bw is None or b == 1:
            return one
        mem_bound = b * bw / (self.active_b + b * self.kv_tok * self.resident())
        f = self.flops()
        compute_bound = f / (2 * self.spec.matmul_params_b * 1e9) if f else None
        return min(mem_bound, compute_bound) if compute_bound else mem_bound

    def ttft_bound(self) -> float | None:
        f = self.flops()
        if f is None:
            return None
        compute = 2 * self.spec.matmul_params_b * 1e9 * self.wl.prompt_tokens / f
        bw, _ = self.bandwidth()
        read = self.active_b / bw if bw else 0.0
        return max(compute, read) * 1000

    def parallelism(self) -> str | None:
        s = self.k.s
        if self.device == "gpu+cpu":
            return s("plan_par_offload", self.lang, ram=self.offload_layers, layers=self.spec.layers)
        if self.device != "gpu" or self.n <= 1:
            return None
        if self.cap.multi_gpu == "tensor":
            return s("plan_par_tensor", self.lang, n=self.n)
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
    else:
        out.append(s("plan_a_weights", lang, params=f"{spec.params_b:g}", bpw=c.pspec.bits_per_weight,
                     label=c.pspec.label, gib=round(c.weights_gib, 2), source=c.pspec.source))
    out.append(s("plan_a_kv", lang, layers=spec.layers, kv_heads=spec.kv_heads, head_dim=spec.head_dim,
                 kvb=f"{c.kv_bytes:g}", per_tok=f"{c.kv_tok:,}", conc=wl.concurrency, ctx=f"{wl.context_tokens:,}"))
    out.append(s("plan_a_overhead", lang, runtime=round(c.runtime_gib, 2), act=round(c.act_gib, 3),
                 tokens=c.act_tokens, source=c.cap.source if c.device != "cpu" else c.cap.cpu_source))
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
        out.append(s("plan_a_no_bw", lang))
    else:
        shown = bw / 1e9 if bw else c.target.cpu_bandwidth_gb_s
        b = c.bytes_per_token()
        out.append(s("plan_a_bw", lang, bw=round(shown, 1), src=s(f"plan_bw_{src or 'spec'}", lang),
                     read=f"{b / 1e9:.2f} GB" if b >= 1e9 else f"{b / 1e6:.1f} MB", resident=round(c.resident())))
    if c.flops() is not None:
        f = c.flops()
        out.append(s("plan_a_ttft", lang, prompt=wl.prompt_tokens, params=f"{spec.matmul_params_b:.4g}",
                     peak=f"{f / 1e12:,.1f} TFLOPS" if f >= 1e12 else f"{f / 1e9:,.0f} GFLOPS",
                     cpu=s("plan_a_cpu_lowp", lang, x=f"{c.k.planner.cpu_lowp_flops_factor:g}")
                     if c.device == "cpu" and c.prec != "fp32" else ""))
    if wl.context_tokens > spec.max_context:
        out.append(s("plan_a_ctx_beyond", lang, ctx=wl.context_tokens, max=spec.max_context))
    return out


def _plan(c: _Calc, options: list[PlanOption], detail: bool = True) -> EnginePlan:
    one = c.decode_bound()
    return EnginePlan(
        engine=c.engine, precision=c.prec, precision_label=c.pspec.label, device=c.device, gpus_used=c.n,
        parallelism=c.parallelism(), context_tokens=c.wl.context_tokens, concurrency=c.wl.concurrency,
        weights_gib=_r(c.weights_gib, 3), kv_bytes_per_token=c.kv_tok, kv_gib=_r(c.kv_gib, 3),
        overhead_gib=_r(c.overhead_gib, 3), total_gib=_r(c.total_gib, 3), available_gib=_r(c.available_gib, 3),
        fits=c.fits, loads=c.loads(), headroom_gib=None if c.available_gib is None else _r(c.available_gib - c.total_gib, 3),
        max_concurrency=c.max_concurrency(), max_context_tokens=c.max_context(), offload_layers=c.offload_layers,
        decode_tps_upper_bound=_r(one, 1), decode_tps_total_upper_bound=_r(c.decode_total_bound(one), 1),
        ttft_ms_lower_bound=_r(c.ttft_bound(), 2), prompt_tokens=c.wl.prompt_tokens, options=options,
        assumptions=_assumptions(c) if detail else [])


def _options(c: _Calc) -> list[PlanOption]:
    if c.fits is not False or c.device == "none":
        return []
    s, lang, k = c.k.s, c.lang, c.k
    out: list[PlanOption] = []
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
                precision: str | None = None, detail: bool = True) -> EnginePlan:
    """detail=False skips the fixes and the assumption texts: the flip search needs only the verdicts."""
    c = _Calc(engine, spec, target, wl, k, lang, precision)
    return _plan(c, _options(c) if detail else [], detail)


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
        n = int(free // (p.kv_bytes_per_token * ctx))
        if n < 1:
            break
        out.append((ctx, n))
        ctx *= 2
    return out

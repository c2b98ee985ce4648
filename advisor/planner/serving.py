"""The serving model: TTFT, ITL and output tok/s at a concurrency (or a request rate), per engine. Pure.

A small analytical model with named terms (README § "Serving model"), not a simulator:

  decode step at batch b   = max(bytes read / (bandwidth x bw_eff), 2 x params x b / (FLOPS x flops_eff))
                             + step_ms (+ tensor-parallel all-reduces)
                             bytes read = the active weights + b sequences' KV (their typical tokens held)
  prefill of n tokens      = in chunks of the engine's chunk size (0 = the whole prompt in one step), each chunk
                             max(compute of its tokens, one read of the weights) + step_ms; a prompt's matmuls
                             reach FLOPS x flops_eff x prefill_x (its thousands of tokens at once keep the tensor
                             cores busier than a decode step's batch)
  continuous batching      (vLLM, SGLang, TensorRT-LLM; llama-server's parallel slots): every running sequence decodes
                             in each step; the prefills of the others take their share of the time, so
                             ITL = decode step / (1 - others' prefill share), and a new prompt waits for the prefill
                             queue (M/D/1: share x prefill / (2 (1 - share))) and for half a step. Sequences beyond
                             what the KV pool holds wait for a free place.
  one at a time            (transformers generate, onnxruntime-genai's classic generator): service time
                             S = prefill + (out - 1) x decode step at batch 1; a closed loop of c users waits (c - 1) S,
                             Poisson arrivals wait the M/D/1 queue.

Closed loop (c users, each sends its next request when the last one ends, as our sweep does) or open loop (Poisson
arrivals at a rate, as vLLM's and SGLang's benchmark scripts do). p95: the prompt at mean + 1.645 sd, and the queue
waits at 3x their mean (an exponential tail's 95th percentile).

The efficiencies (bw_eff, flops_eff, step_ms, request_ms, seq_ms, prefill_x) are fitted per engine and hardware class on published measurements
(bench/fit_serving.py -> knowledge/serving_fit.yaml); every prediction carries that fit's held-out error as its band.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

Z95 = 1.645  # one-sided 95th percentile of a normal spread of prompt lengths
TAIL95 = 3.0  # an exponential wait's 95th percentile over its mean (ln 20)
ITERATIONS = 60
BATCH_TOKENS = 2048  # tokens one step prefills for an engine that takes whole prompts (vLLM's and llama-server's
# default batch budget, max_num_batched_tokens / n_batch): the waiting prompts share the step's weight read
SATURATION = 0.95  # the share of the engine's time prefill may take; beyond it the prompts queue
PREFILL_EFF_MAX = 0.9  # a fitted prompt's matmuls reach at most this share of the card's peak FLOPS (bench/fit_serving.py)


@dataclass(frozen=True)
class Hw:
    """What one replica's step reads and computes (tensor-parallel ranks summed)."""

    bandwidth: float  # bytes/s
    flops: float | None  # FLOP/s at the planned precision; None = not known (memory time only)
    weights_read: float  # bytes of active weights read per step
    kv_per_token: float  # KV bytes per token held, with the tensor-parallel copies
    matmul_params: float  # weights that multiply every token (2 FLOPs each)
    chunk_tokens: int = 0  # prefill tokens per step; 0 = the whole prompt at once
    max_running: int | None = None  # sequences the KV pool holds at the typical length; None = no limit known
    allreduce_s: float = 0.0  # per step: tensor-parallel all-reduces (2 per layer x their latency)
    moe_routed_bytes: float = 0.0  # MoE: all routed experts' weights; a batch touches more of them than one token
    moe_share: float = 0.0  # experts per token / experts (the share one token reads)
    # expert parallelism: every token's hidden state goes to its experts' ranks and back (dispatch + combine, an
    # all-to-all per MoE layer), so a step costs this much more per token it carries (0: no expert parallelism)
    a2a_s_per_token: float = 0.0
    # a prompt's attention: this many FLOPs times its length squared (2 x full-attention layers x heads x head dim:
    # QK^T and AV, 4 n^2 d per layer, halved by the causal mask), beside the weights' 2 x params per token
    attn_flops: float = 0.0
    # data-parallel attention over this many ranks (1: none): a request is served by one rank, so a prompt's
    # attention and every weight that is not a routed expert (attention projections, dense layers, shared experts)
    # multiply its tokens on that one GPU; only its routed experts' share of the work (routed_share of matmul_params)
    # spreads over every rank's experts (expert parallelism)
    dp_ranks: int = 1
    routed_share: float = 0.0
    # sparse attention (DeepSeek Sparse Attention): a decoding query attends to only kv_topk of the tokens held (0: to
    # all), picked by an indexer that reads its own keys (kv_index_per_token of the bytes, with their copies) of all
    kv_topk: int = 0
    kv_index_per_token: float = 0.0
    # ... and a prompt's queries likewise attend to kv_topk earlier tokens each, after its indexer scored every pair
    # of them: this many FLOPs times the prompt's length squared (2 x index heads x index width x layers, halved by
    # the causal mask)
    index_attn_flops: float = 0.0
    # a served engine's host work per running sequence (its API server streaming each token, detokenizing), which
    # runs beside the GPU's step: a decode step takes at least this many seconds per sequence in flight (0: none)
    host_s_per_seq: float = 0.0

    def prompt_attn_flops(self, n: float) -> float:
        """A prompt of n tokens' attention FLOPs: attn_flops x n^2 (every query with every earlier token), or with
        sparse attention every query with at most kv_topk of them (sum over positions of min(position, kv_topk):
        n^2 / 2 up to kv_topk, then n x kv_topk - kv_topk^2 / 2), beside its indexer's n^2 scores."""
        if not self.kv_topk or n <= self.kv_topk:
            return self.attn_flops * n * n + self.index_attn_flops * n * n
        return self.attn_flops * (2 * n * self.kv_topk - self.kv_topk ** 2) + self.index_attn_flops * n * n

    def kv_read_per_token(self, held_tokens: float) -> float:
        """The KV bytes a decoding sequence reads per token it holds: all of them, or with sparse attention the
        indexer's keys of every token and the rest of the cache for the kv_topk tokens picked only."""
        if not self.kv_topk or held_tokens <= self.kv_topk:
            return self.kv_per_token
        rest = self.kv_per_token - self.kv_index_per_token
        return self.kv_index_per_token + rest * self.kv_topk / held_tokens


def weights_read_at(b: float, hw: Hw) -> float:
    """Weights one step reads at batch b: a dense model reads them all once; an MoE step reads every expert that any
    of its b tokens routes to, 1 - (1 - k/E)^b of them (routing taken as uniform), not just one token's k."""
    if not hw.moe_routed_bytes or not hw.moe_share:
        return hw.weights_read
    touched = 1 - (1 - hw.moe_share) ** max(1.0, b)
    return hw.weights_read + hw.moe_routed_bytes * (touched - hw.moe_share)


@dataclass(frozen=True)
class Eff:
    bw_eff: float  # share of the bandwidth a decode step reaches
    flops_eff: float  # share of the peak FLOPS a decode step's matmuls reach (a prompt's: x prefill_x)
    step_ms: float  # fixed cost of one engine step (scheduling, kernel launches, Python, sampling)
    request_ms: float = 0.0  # fixed cost of one request before its first token (API server, tokenizer, queue hop)
    # host work per running sequence per decode step (scheduling it, sampling, detokenizing and streaming its token
    # to its client): what makes a step of hundreds of sequences slower than its kernels
    seq_ms: float = 0.0
    # a prompt's share of the peak FLOPS over a decode step's: a prefill chunk's matmuls run thousands of tokens at
    # once, a decode step's only the batch's (fitted apart, issue 32: one share made long prompts too slow where it
    # kept large decode batches right)
    prefill_x: float = 1.0

    @property
    def prefill_eff(self) -> float:
        """The share of the peak FLOPS a prompt's (and a step that carries a prompt chunk's) matmuls reach. (The fit
        keeps it at most PREFILL_EFF_MAX; a band's fast end scales it like every other term.)"""
        return self.flops_eff * self.prefill_x

    def scaled(self, speed: float) -> "Eff":
        """Every term `speed` times faster (>1) or slower (<1): the band's ends."""
        return Eff(self.bw_eff * speed, self.flops_eff * speed, self.step_ms / speed, self.request_ms / speed,
                   self.seq_ms / speed, self.prefill_x)


@dataclass(frozen=True)
class Load:
    input_tokens: int
    output_tokens: int
    input_sd: float = 0.0
    concurrency: int | None = None  # closed loop of this many users
    request_rate: float | None = None  # open loop: Poisson arrivals per second


@dataclass(frozen=True)
class Point:
    """The predicted figures at one load. None: not predicted (the load never drains)."""

    concurrency: int | None
    request_rate: float | None
    ttft_ms_p50: float | None
    ttft_ms_p95: float | None
    itl_ms_p50: float | None
    itl_ms_p95: float | None
    output_tps: float | None  # all requests together
    output_tps_per_user: float | None  # one request's decode rate (1000 / mean ITL)
    requests_per_s: float | None
    running: int  # sequences decoding together (at most the KV pool's)
    saturated: bool = False  # open loop: arrivals outrun the engine
    host_bound: bool = False  # the served host floor (Hw.host_s_per_seq), not the GPU, sets the decode step


# ---------------------------------------------------------------- the named terms

def decode_step_s(b: float, hw: Hw, eff: Eff, held_tokens: float) -> float:
    """One decode step at batch b: memory or compute, whichever is longer, plus the step's fixed cost."""
    memory = (weights_read_at(b, hw) + b * hw.kv_read_per_token(held_tokens) * held_tokens) / (hw.bandwidth * eff.bw_eff)
    compute = 2 * hw.matmul_params * b / (hw.flops * eff.flops_eff) if hw.flops else 0.0
    return max(memory, compute) + eff.step_ms / 1000 + hw.allreduce_s + b * (hw.a2a_s_per_token + eff.seq_ms / 1000)


def _one_request_flop_s(tokens: float, attention: float, spread: float, hw: Hw, eff: Eff) -> float:
    """Seconds for one request's `tokens` through the matmuls (and `attention` FLOPs of its prompt) beside `spread`
    tokens whose work is spread over every rank (other requests' decodes). Without data-parallel attention all of it
    runs on the replica's whole FLOPS; with it, the request's own attention and non-routed weights run on its one
    rank (a lone prompt keeps one GPU busy while the others only take its routed experts' share)."""
    rate = hw.flops * eff.prefill_eff
    if hw.dp_ranks <= 1:
        return (2 * hw.matmul_params * (tokens + spread) + attention) / rate
    own = 2 * hw.matmul_params * (1 - hw.routed_share) * (tokens + spread / hw.dp_ranks) + attention
    return own / (rate / hw.dp_ranks) + 2 * hw.matmul_params * hw.routed_share * (tokens + spread) / rate


def prefill_s(n: float, hw: Hw, eff: Eff) -> float:
    """A prompt of n tokens alone: chunk by chunk, each compute-bound or one read of the weights."""
    n = max(1.0, n)
    chunks = math.ceil(n / hw.chunk_tokens) if hw.chunk_tokens else 1
    compute = _one_request_flop_s(n, hw.prompt_attn_flops(n), 0.0, hw, eff) if hw.flops else 0.0
    read = chunks * weights_read_at(n / chunks, hw) / (hw.bandwidth * eff.bw_eff)
    return max(compute, read) + chunks * (eff.step_ms / 1000 + hw.allreduce_s) + n * hw.a2a_s_per_token


def prefill_batched_s(n: float, hw: Hw, eff: Eff) -> float:
    """One prompt's share of the engine's time when waiting prompts are prefilled together, up to the engine's token
    budget per step (chunk_tokens; BATCH_TOKENS where the whole prompt goes at once): its own compute, and its share
    (n / budget) of each step's weight read and fixed cost. Never more than prefill_s (a prompt alone), and as much
    when the prompt fills the budget itself: short prompts are no longer each charged a full read of the weights."""
    n = max(1.0, n)
    budget = float(hw.chunk_tokens or BATCH_TOKENS)
    steps = n / budget if n < budget else math.ceil(n / budget)
    per = n / steps if steps >= 1 else budget
    compute = (2 * hw.matmul_params * n + hw.prompt_attn_flops(n)) / (hw.flops * eff.prefill_eff) if hw.flops else 0.0
    read = steps * weights_read_at(per, hw) / (hw.bandwidth * eff.bw_eff)
    return max(compute, read) + steps * (eff.step_ms / 1000 + hw.allreduce_s) + n * hw.a2a_s_per_token


def prefill_mixed_s(n: float, b: float, hw: Hw, eff: Eff, held_tokens: float) -> float:
    """A prompt of n tokens while b sequences decode: each of its chunks shares a step with their decode, which
    reads the weights and their KV and adds b tokens of compute (chunked prefill, as vLLM / SGLang / TensorRT-LLM and
    llama-server's batches do)."""
    if b <= 0:
        return prefill_s(n, hw, eff)
    n = max(1.0, n)
    chunks = math.ceil(n / hw.chunk_tokens) if hw.chunk_tokens else 1
    per = n / chunks
    memory = (weights_read_at(b + per, hw) + b * hw.kv_read_per_token(held_tokens) * held_tokens) / (
        hw.bandwidth * eff.bw_eff)
    compute = _one_request_flop_s(per, hw.prompt_attn_flops(n) / chunks, b, hw, eff) if hw.flops else 0.0
    return chunks * (max(memory, compute) + eff.step_ms / 1000 + hw.allreduce_s + (per + b) * hw.a2a_s_per_token
                     + b * eff.seq_ms / 1000)


def mdl_wait_s(share: float, service_s: float) -> float:
    """M/D/1 mean wait: share x service / (2 (1 - share))."""
    share = min(share, 0.98)
    return share * service_s / (2 * (1 - share))


# ---------------------------------------------------------------- the two ways of serving

@functools.lru_cache(maxsize=1 << 15)
def predict(mode: str, hw: Hw, eff: Eff, load: Load) -> Point:
    """mode: continuous | slots (batching) or sequential (one request at a time). Pure and its arguments frozen, so
    it is memoised (bounded): a page redrawn, the flip search and the band's ends ask for the same points again."""
    if mode == "sequential":
        return _sequential(hw, eff, load)
    return _batching(hw, eff, load)


def _sequential(hw: Hw, eff: Eff, load: Load) -> Point:
    i, o = load.input_tokens, max(1, load.output_tokens)
    i95 = i + Z95 * load.input_sd
    held = i + o / 2
    step = decode_step_s(1, hw, eff, held)
    req = eff.request_ms / 1000
    pre, pre95 = prefill_s(i, hw, eff) + req, prefill_s(i95, hw, eff) + req
    service = pre + (o - 1) * step
    if load.request_rate is not None:
        share = load.request_rate * service
        if share >= 1:
            return Point(None, load.request_rate, None, None, _ms(step), _ms(step), 1 / service * o, 1 / step,
                         1 / service, 1, saturated=True)
        wait = mdl_wait_s(share, service)
        return Point(None, load.request_rate, _ms(pre + wait), _ms(pre95 + TAIL95 * wait), _ms(step), _ms(step),
                     load.request_rate * o, 1 / step, load.request_rate, 1)
    c = max(1, load.concurrency or 1)
    # a closed loop of c users served one at a time: each request waits for the c - 1 ahead of it
    ttft = (c - 1) * service + pre
    ttft95 = (c - 1) * service + pre95 + (c - 1) * (pre95 - pre)
    return Point(c, None, _ms(ttft), _ms(ttft95), _ms(step), _ms(step), o / service, 1 / step, 1 / service, 1)


def _fixed_point(hw: Hw, eff: Eff, i: int, o: int, running: int | None, rate: float | None
                 ) -> tuple[float, float, float, float, float, float, float]:
    """_batching's fixed point (x, b, itl, ttft, wait, share, half) for a closed loop of `running` sequences (rate
    None) or Poisson arrivals at `rate` (running None). A closed loop's users count only through those running: the
    ones beyond the KV pool wait in the queue, which _batching adds after (see _steady). The last value: the wait a
    saturated closed loop adds before the prompt (prefill takes SATURATION of the engine's time), already in ttft."""
    held = i + o / 2
    cap = hw.max_running if hw.max_running is not None else 10**9
    closed = rate is None
    pre = prefill_s(i, hw, eff)
    pre_b = prefill_batched_s(i, hw, eff)  # the engine time each prompt takes from the others (batched)
    # fixed point over the throughput x (requests/s) and the decoding batch b
    x = (running / (pre + o * decode_step_s(running, hw, eff, held))) if closed else rate
    b = float(running) if closed else 1.0
    itl = ttft = 0.0
    wait = share = half = own = 0.0
    # The loop below is decode_step_s, prefill_mixed_s and mdl_wait_s written out, with what does not change between
    # iterations computed once: the same operations on the same numbers in the same order, so the same floats (the
    # flip search asks for thousands of these points). It stops early only at an exact fixed point (the state an
    # iteration starts from is the one it ends with: every later iteration would repeat it bit for bit).
    wr, kvpt, mm2 = hw.weights_read, hw.kv_read_per_token(held), 2 * hw.matmul_params
    moe = bool(hw.moe_routed_bytes and hw.moe_share)
    routed, ms, keep = hw.moe_routed_bytes, hw.moe_share, 1 - hw.moe_share
    bwd = hw.bandwidth * eff.bw_eff
    fd = hw.flops * eff.flops_eff if hw.flops else None
    fp = hw.flops * eff.prefill_eff if hw.flops else None  # a step that carries a prompt chunk
    sm, ar, req_s, sq = eff.step_ms / 1000, hw.allreduce_s, eff.request_ms / 1000, eff.seq_ms / 1000
    at = hw.a2a_s_per_token
    o1 = o - 1
    n_i = max(1.0, i)  # prefill_mixed_s of the prompt: its chunks and their tokens
    chunks_i = math.ceil(n_i / hw.chunk_tokens) if hw.chunk_tokens else 1
    per = n_i / chunks_i
    chunks_half = math.ceil(i / hw.chunk_tokens) if hw.chunk_tokens else 1
    attn_chunk = hw.prompt_attn_flops(n_i) / chunks_i  # prefill_mixed_s's attention per chunk of the prompt
    # data-parallel attention (rare: DeepSeek-style MoE plans) takes the function itself; the rest stays written out
    dpf = (lambda t, a, sp: _one_request_flop_s(t, a, sp, hw, eff)) if hw.dp_ranks > 1 and fp is not None else None
    if closed:
        return _closed_loop(x, b, running, pre, pre_b, held, cap, o, wr, kvpt, mm2, moe, routed, ms, keep, bwd, fd,
                            sm, ar, req_s, chunks_i, per, chunks_half, at, attn_chunk, sq, fp, dpf)
    for _ in range(ITERATIONS):
        x0, b0, itl0, ttft0 = x, b, itl, ttft
        # decode_step_s(b)
        w = (wr + routed * ((1 - keep ** (b if b > 1.0 else 1.0)) - ms)) if moe else wr
        memory = (w + b * kvpt * held) / bwd
        if fd is not None:
            compute = mm2 * b / fd
            step = (compute if compute > memory else memory) + sm + ar + b * (at + sq)
        else:
            step = (0.0 if 0.0 > memory else memory) + sm + ar + b * (at + sq)
        if not closed:
            n = x * (ttft + o1 * itl) if itl else 1.0
            if not n > 1.0:
                n = 1.0
            others = (n - 1) / n if n > 1 else 0.0
        share = x * pre_b
        if not share < SATURATION:
            share = SATURATION
        so = share * others
        itl = step / (1 - so)
        s98 = so if so < 0.98 else 0.98  # mdl_wait_s
        wait = s98 * pre_b / (2 * (1 - s98))
        bo = b * others  # prefill_mixed_s(i, b * others)
        if bo <= 0:
            own = pre
        else:
            bp = bo + per
            w = (wr + routed * ((1 - keep ** (bp if bp > 1.0 else 1.0)) - ms)) if moe else wr
            memory = (w + bo * kvpt * held) / bwd
            if fp is not None:
                compute = (mm2 * (per + bo) + attn_chunk) / fp if dpf is None else dpf(per, attn_chunk, bo)
                own = chunks_i * ((compute if compute > memory else memory) + sm + ar + (per + bo) * at
                                  + bo * sq)
            else:
                own = chunks_i * ((0.0 if 0.0 > memory else memory) + sm + ar + (per + bo) * at + bo * sq)
        # for the step under way: its mean residual E[S^2] / 2E[S], steps with a prompt chunk (a share f of them, as
        # long as one chunk of a prompt) among plain decode steps
        if n > 1:
            long_step = own / chunks_half
            f = x * chunks_half * itl * others
            if not f < 1.0:
                f = 1.0
            half = (f * long_step ** 2 + (1 - f) * step ** 2) / (2 * (f * long_step + (1 - f) * step))
        else:
            half = 0.0
        ttft = own + wait + half
        cycle = ttft + req_s + o1 * itl
        if o > 1:
            b_new = n * o1 * itl / cycle
            if not b_new > 1.0:
                b_new = 1.0
        else:
            b_new = 1.0
        if closed:
            x_new = running / cycle
            x = 0.5 * x + 0.5 * x_new
        b = 0.5 * b + 0.5 * (cap if cap < b_new else b_new)
        if x == x0 and b == b0 and (closed or (itl == itl0 and ttft == ttft0)):
            break
    return x, b, itl, ttft, wait, share, half, 0.0


def _closed_loop(x, b, running, pre, pre_b, held, cap, o, wr, kvpt, mm2, moe, routed, ms, keep, bwd, fd, sm, ar, req_s,
                 chunks_i, per, chunks_half, at=0.0, attn_chunk=0.0, sq=0.0, fp=None, dpf=None):
    """_fixed_point's loop for a closed loop, where the sequences running (so `others`) never change: the general
    loop's arithmetic with those branches taken once (the same floats; the capacity search asks only for these)."""
    n = running
    others = (n - 1) / n if n > 1 else 0.0
    no1 = n * (o - 1)  # n * (o - 1) * itl evaluates n * (o - 1) first: an integer
    o1 = o - 1
    many, long = n > 1, o > 1
    itl = ttft = wait = share = half = 0.0
    for _ in range(ITERATIONS):
        x0, b0 = x, b
        w = (wr + routed * ((1 - keep ** (b if b > 1.0 else 1.0)) - ms)) if moe else wr
        memory = (w + b * kvpt * held) / bwd
        if fd is not None:
            compute = mm2 * b / fd
            step = (compute if compute > memory else memory) + sm + ar + b * (at + sq)
        else:
            step = (0.0 if 0.0 > memory else memory) + sm + ar + b * (at + sq)
        share = x * pre_b
        if not share < SATURATION:
            share = SATURATION
        so = share * others
        itl = step / (1 - so)
        s98 = so if so < 0.98 else 0.98
        wait = s98 * pre_b / (2 * (1 - s98))
        bo = b * others
        if bo <= 0:
            own = pre
        else:
            bp = bo + per
            w = (wr + routed * ((1 - keep ** (bp if bp > 1.0 else 1.0)) - ms)) if moe else wr
            memory = (w + bo * kvpt * held) / bwd
            if fp is not None:
                compute = (mm2 * (per + bo) + attn_chunk) / fp if dpf is None else dpf(per, attn_chunk, bo)
                own = chunks_i * ((compute if compute > memory else memory) + sm + ar + (per + bo) * at
                                  + bo * sq)
            else:
                own = chunks_i * ((0.0 if 0.0 > memory else memory) + sm + ar + (per + bo) * at + bo * sq)
        if many:
            long_step = own / chunks_half
            f = x * chunks_half * itl * others
            if not f < 1.0:
                f = 1.0
            half = (f * long_step ** 2 + (1 - f) * step ** 2) / (2 * (f * long_step + (1 - f) * step))
        else:
            half = 0.0
        ttft = own + wait + half
        cycle = ttft + req_s + o1 * itl
        x_new = running / cycle
        if x_new * pre_b > SATURATION:  # prefill cannot keep up: requests leave no faster, the rest wait for it
            x_new = SATURATION / pre_b
        if long:
            b_new = x_new * o1 * itl  # Little: the sequences decoding (no1 * itl / cycle when not saturated)
            if not b_new > 1.0:
                b_new = 1.0
        else:
            b_new = 1.0
        x = 0.5 * x + 0.5 * x_new
        b = 0.5 * b + 0.5 * (cap if cap < b_new else b_new)
        if x == x0 and b == b0:
            break
    # saturated: a closed loop's users still cycle, so what the engine cannot serve waits before its prompt
    sat = running / x - (ttft + req_s + o1 * itl)
    return x, b, itl, ttft + (sat if sat > 0 else 0.0), wait, share, half, (sat if sat > 0 else 0.0)


def _batching(hw: Hw, eff: Eff, load: Load) -> Point:
    o = max(1, load.output_tokens)
    cap = hw.max_running if hw.max_running is not None else 10**9
    closed = load.request_rate is None
    users = max(1, load.concurrency or 1) if closed else None
    running = min(users, max(1, cap)) if closed else None
    steady = _steady(hw, eff, load.input_tokens, o, load.input_sd, running, load.request_rate)
    if isinstance(steady, Point):
        return steady  # (an open loop that never drains)
    ttft, ttft95_before_queue, req, itl50, itl95, x, itl, b = steady
    floor = hw.host_s_per_seq * (running if closed else b)
    bound = floor > itl
    if bound:  # the served host floor sets the step (as perf.with_host_floor does for the silicon predictor):
        # each of a closed loop's requests decodes that much slower, so they cycle slower
        if closed:
            x = _host_cycle(x, running, o, floor, itl)
        else:  # an open loop keeps its rate, so more are in flight (Little: n = rate x (ttft + (o - 1) x h n)), each
            # adding h to the step: the host keeps up only below 1 / h tokens a second
            h, rate = hw.host_s_per_seq, load.request_rate
            n = rate * (ttft + req) / (1 - h * rate * (o - 1)) if h * rate * (o - 1) < 1 else float("inf")
            if n > cap:
                return Point(None, rate, None, None, _ms(floor), _ms(floor), None, 1 / floor, None,
                             int(cap) if hw.max_running is not None else int(round(b)), saturated=True)
            floor, b = max(floor, h * n), max(b, n)
        itl50, itl95, itl = max(itl50, floor), max(itl95, floor), floor
    # users beyond the KV pool wait for a finished sequence: (waiting) / throughput
    queued = (users - running) / x if closed and users > running else 0.0
    rate = load.request_rate if not closed else None
    ttft95 = ttft95_before_queue + queued + req
    return Point(users, rate, _ms(ttft + queued + req), _ms(ttft95), _ms(itl50), _ms(max(itl95, itl50)), x * o,
                 1 / itl, x, int(round(running if closed else b)), host_bound=bound)


def _host_cycle(x: float, running: int, o: int, floor: float, itl: float) -> float:
    """A closed loop's requests a second when the served host floor (seconds a step) outlasts the GPU's step (itl):
    each of the running requests' o - 1 decode steps takes that much longer, so they cycle slower. One function for
    the prediction and the capacity search, so the users beyond the running cap wait the same in both."""
    return running / (running / x + (o - 1) * (floor - itl))


@functools.lru_cache(maxsize=1 << 15, typed=True)
def _steady(hw: Hw, eff: Eff, i: int, o: int, input_sd: float, running: int | None, rate: float | None):
    """What _batching's point is before the queue beyond the KV pool: the fixed point and the figures drawn from it,
    which depend on a closed loop's users only through those running, so that every concurrency at or above the pool's
    shares them (memoised, bounded: the capacity search probes many of those). A saturated open loop's whole Point."""
    i95 = i + Z95 * input_sd
    held = i + o / 2
    cap = hw.max_running if hw.max_running is not None else 10**9
    x, b, itl, ttft, wait, share, half, sat = _fixed_point(hw, eff, i, o, running, rate)
    if rate is not None:
        n_open = x * (ttft + (o - 1) * itl)
        saturated = share >= SATURATION or n_open > cap
        if saturated:
            return Point(None, rate, None, None, _ms(itl), _ms(itl), None, 1 / itl, None,
                         int(min(n_open, cap)), saturated=True)
    step = decode_step_s(b, hw, eff, held)
    pre95 = prefill_mixed_s(i95, b * (1 - 1 / max(1.0, float(running or b))), hw, eff, held)
    # steps that carry a prompt chunk are the slow ones: the ITL's p95 when at least 5 % of steps do
    chunk_tokens = min(i, hw.chunk_tokens) if hw.chunk_tokens else i
    mixed = step + prefill_s(chunk_tokens, hw, eff) - eff.step_ms / 1000
    chunks = math.ceil(i / hw.chunk_tokens) if hw.chunk_tokens else 1
    prompt_steps = x * chunks * itl
    itl50 = mixed if prompt_steps >= 0.5 else step
    itl95 = mixed if prompt_steps >= 0.05 and (running or 1) > 1 else itl50
    req = eff.request_ms / 1000
    # the p95 TTFT is pre95 + TAIL95 * wait + 2 * half + queued + req, summed left to right: all but the last two here
    return ttft, pre95 + TAIL95 * wait + 2 * half + sat, req, itl50, itl95, x, itl, b


# ---------------------------------------------------------------- a burst: every request submitted at once

BURST_MAX_STEPS = 400_000  # beyond this many engine steps the burst is not simulated (the steady state stands)


@dataclass(frozen=True)
class Burst:
    """n requests submitted at once and served through `slots` places until the last one ends (an offline batch,
    `vllm bench serve --request-rate inf`): what the whole run averages."""

    requests: int
    makespan_s: float
    output_tps: float  # every output token over the makespan
    ttft_ms_mean: float  # from the submission: mostly the wait for a place
    tpot_ms_mean: float  # per request, its decode time over its tokens after the first, averaged over requests
    running_mean: float  # sequences decoding per step, averaged over the steps


def spread_lengths(mean: float, n: int, cap: int, spread: str) -> list[int]:
    """n output lengths in the order they are submitted, with the given mean: all equal ("fixed"), or a chat
    dataset's ("sharegpt": an exponential spread cut at `cap`, the longest a benchmark keeps; its scale set so the
    mean is `mean`). Quantile by quantile, in a van der Corput order, so long and short requests are mixed through the
    run as a shuffled dataset mixes them, without a random draw."""
    n, mean = max(1, int(n)), max(1.0, float(mean))
    if spread != "sharegpt":
        return [max(1, round(mean))] * n
    cap = max(2.0, float(cap), mean * 1.01)
    lo, hi = 1e-3, 1e6  # the scale whose exponential cut at cap has this mean (bisection: the mean rises with it)
    for _ in range(80):
        theta = (lo + hi) / 2
        e = math.exp(-cap / theta)
        m = theta - cap * e / (1 - e)
        lo, hi = (theta, hi) if m < mean else (lo, theta)
    theta = (lo + hi) / 2
    mass = 1 - math.exp(-cap / theta)

    def vdc(k: int) -> float:  # the van der Corput sequence in base 2
        x, f = 0.0, 0.5
        while k:
            x, k, f = x + f * (k & 1), k >> 1, f / 2
        return x

    order = sorted(range(n), key=lambda k: vdc(k))  # request r takes the quantile ranked order.index(r)
    q = [0.0] * n
    for rank, r in enumerate(order):
        q[r] = (rank + 0.5) / n
    return [max(1, min(int(cap), round(-theta * math.log(1 - x * mass)))) for x in q]


@dataclass(frozen=True)
class Schedule:
    """How an engine schedules a burst (knowledge/serving.yaml `scheduling`, read from each engine's scheduler):
    - prefill_first: a step that can prefill does only that and the running sequences wait (SGLang runs a new prefill
      batch whenever one can be admitted; vLLM and TensorRT-LLM mix prompts into the decode step);
    - admit: "held" (a request is admitted while its prompt fits beside what the others hold; an overflow preempts
      the last admitted: vLLM), "reserve_full" (while its prompt and all its output tokens fit beside the others'
      whole reservations, so nothing is ever preempted: TensorRT-LLM's GUARANTEED_NO_EVICT), "reserve_ratio" (while
      its prompt and its output fit beside what the others hold plus their remaining outputs times a ratio that
      starts at ratio_init, falls to ratio_min over ratio_decay_steps decode steps and is reset from what was decoded
      after a preemption: SGLang's new_token_ratio);
    - whole_prompts: a prompt goes into a step whole or waits (no chunked prefill: TensorRT-LLM's default); one longer
      than the step's whole budget is chunked, as the run that served it must have."""

    prefill_first: bool = False
    admit: str = "held"
    whole_prompts: bool = False
    ratio_init: float = 0.7
    ratio_min: float = 0.098
    ratio_decay_steps: int = 600
    output_clip: int = 4096  # the most output tokens one running request reserves (SGLang's CLIP_MAX_NEW_TOKENS)
    retract_steps: int = 20  # SGLang's SGLANG_RETRACT_DECODE_STEPS: the tokens a retraction's new ratio allows each


VLLM_SCHEDULE = Schedule()


def burst(step_s, lengths: list[int], slots: int, prompt_tokens: float = 0.0, kv_tokens: float | None = None,
          prefill_token_s: float = 0.0, step_tokens: int | None = None, schedule: Schedule = VLLM_SCHEDULE
          ) -> Burst | None:
    """Serve `lengths` (one request each, submitted at once, admitted first come first served) through at most
    `slots` places, step by step, as the engine's scheduler (`schedule`) serves a burst:
    - an admitted request's prompt is prefilled at most `step_tokens` tokens a step (the engine's token budget,
      shared with the decoding sequences' one token each where the engine mixes them), each costing prefill_token_s;
      its first token comes in the step that finishes its prompt;
    - every decoding sequence makes one token a decode step, in step_s(b) for b decoding (the predictor's decode
      step); a prefill-first engine's prefill steps make none;
    - kv_tokens, the KV pool in tokens: admission as the schedule says, and when what the admitted hold grows past the
      pool the last admitted are preempted, as vLLM and SGLang do: back to the head of the queue, to be prefilled
      again, their tokens kept. A chat dataset's long outputs hold most of the pool (a running sequence is more likely
      a long one), so fewer run than its typical length says.
    None when it would take more than BURST_MAX_STEPS steps (the steady state stands for it)."""
    from collections import deque

    n, slots = len(lengths), max(1, int(slots))
    if not n or sum(lengths) / min(slots, n) + max(lengths) > BURST_MAX_STEPS:
        return None
    sch = schedule
    budget = float(step_tokens) if step_tokens else float("inf")
    cache: dict[int, float] = {}
    pool = float("inf") if kv_tokens is None else max(float(kv_tokens), prompt_tokens + max(lengths) + 1)
    queue = deque(range(n))
    made = [0] * n  # output tokens each has made (kept through a preemption)
    first_at, done_at = [None] * n, [0.0] * n
    admitted: dict[int, int] = {}  # id -> the step it was admitted at, in admission order (prefilling or decoding)
    prefilling: dict[int, float] = {}  # id -> prompt tokens still to prefill, in admission order
    decoding: dict[int, int] = {}  # id -> the decode step its decode ends at
    ends: dict[int, list[int]] = {}  # decode step -> the ids whose last token it makes (checked against `decoding`)
    held, now, t, dt, decoded, steps = 0.0, 0.0, 0, 0, 0, 0
    ratio = sch.ratio_init
    decay = (sch.ratio_init - sch.ratio_min) / max(1, sch.ratio_decay_steps)

    def fits(j: int) -> bool:
        need = prompt_tokens + made[j]
        if sch.admit == "reserve_full":  # every admitted request's whole prompt and output, held or to come
            return reserved + prompt_tokens + lengths[j] <= pool
        if sch.admit == "reserve_ratio":
            rest = min(lengths[j] - made[j], sch.output_clip)
            return held + future + need + rest <= pool
        return held + need + 1 <= pool

    reserved = future = 0.0
    while queue or admitted:
        if sch.admit == "reserve_ratio":  # the running requests' remaining outputs at today's ratio
            future = sum(min(lengths[j] - made[j], sch.output_clip) * (1.0 if j in prefilling else ratio)
                         for j in admitted)
        while queue and len(admitted) < slots and fits(queue[0]):
            j = queue.popleft()
            admitted[j] = t
            prefilling[j] = max(1.0, prompt_tokens + made[j])
            held += prompt_tokens + made[j]
            reserved += prompt_tokens + lengths[j]
            future += min(lengths[j] - made[j], sch.output_clip)
        prefill_only = sch.prefill_first and bool(prefilling)
        b = 0 if prefill_only else len(decoding)
        # whole prompts share the budget among themselves (their runs served 2,048-token prompts under a 2,048-token
        # max_num_tokens beside hundreds decoding); chunked ones share it with the decoding sequences' tokens
        room, ptoks, ready = (budget if sch.whole_prompts else budget - b), 0.0, []
        for j, rest in prefilling.items():  # first come first served within the step's token budget
            if room <= 0:
                break
            if sch.whole_prompts and room < rest <= budget:
                break  # the first prompt that does not fit waits for the next step, and those behind it
            take = rest if rest <= room else room  # (a prompt longer than the whole budget is chunked: a run that
            # served it had chunking on or a larger budget)
            room -= take
            ptoks += take
            if take >= rest:
                ready.append(j)
            else:
                prefilling[j] = rest - take
        if b not in cache:
            cache[b] = float(step_s(b)) if b else 0.0
        now += cache[b] + ptoks * prefill_token_s
        decoded += b
        steps += 1
        held += b
        if b:
            dt += 1
            ratio = max(sch.ratio_min, ratio - decay)
            for j in ends.pop(dt, ()):
                if decoding.get(j) != dt:
                    continue  # preempted since
                del decoding[j], admitted[j]
                made[j] = lengths[j]
                done_at[j] = now
                held -= prompt_tokens + lengths[j]
                reserved -= prompt_tokens + lengths[j]
        for j in ready:  # its prompt is in: its first (or next) token comes now
            del prefilling[j]
            made[j] += 1
            held += 1
            if first_at[j] is None:
                first_at[j] = now
            if made[j] >= lengths[j]:
                del admitted[j]
                done_at[j] = now
                held -= prompt_tokens + made[j]
                reserved -= prompt_tokens + lengths[j]
            else:
                decoding[j] = dt + lengths[j] - made[j]
                ends.setdefault(decoding[j], []).append(j)
        retracted = False
        while held > pool and len(admitted) > 1:  # the pool is full: the last admitted go back to the queue
            j, _ = admitted.popitem()
            if j in decoding:
                made[j] = lengths[j] - (decoding.pop(j) - dt)
            prefilling.pop(j, None)
            held -= prompt_tokens + made[j]
            reserved -= prompt_tokens + lengths[j]
            queue.appendleft(j)
            retracted = True
        if retracted and sch.admit == "reserve_ratio":  # SGLang: the new ratio from what the running have decoded
            live = [j for j in admitted if j in decoding]
            done_toks = sum(made[j] for j in live)
            max_new = sum(lengths[j] for j in live)
            ratio = min(1.0, (done_toks + sch.retract_steps * len(live)) / (max_new + 1))
        t += 1
    tpots = [(done_at[j] - first_at[j]) / (lengths[j] - 1) for j in range(n) if lengths[j] > 1]
    return Burst(requests=n, makespan_s=now, output_tps=sum(lengths) / now,
                 ttft_ms_mean=1000 * sum(first_at) / n,
                 tpot_ms_mean=1000 * sum(tpots) / len(tpots) if tpots else 1000 * now / max(1, steps),
                 running_mean=decoded / max(1, steps))


def step_curve(at, top: int):
    """step_s for burst(): the predictor's ITL (seconds) at b in flight, asked at about 30 batches from 1 to `top`
    (each 1.25 times the last) and read linearly between them (a predictor can take a second per batch)."""
    grid = sorted({1, top, *(round(1.25 ** k) for k in range(0, 200) if 1.25 ** k < top)})
    vals = [at(b) for b in grid]

    def step_s(b: int) -> float:
        b = max(1, min(top, b))
        for k in range(1, len(grid)):
            if b <= grid[k]:
                lo, hi = grid[k - 1], grid[k]
                return vals[k - 1] + (vals[k] - vals[k - 1]) * (b - lo) / (hi - lo)
        return vals[-1]
    return step_s


def _ms(s: float | None) -> float | None:
    return None if s is None else s * 1000


# ---------------------------------------------------------------- capacity and fleet

@functools.lru_cache(maxsize=1 << 12)
def capacity(mode: str, hw: Hw, eff: Eff, input_tokens: int, output_tokens: int, input_sd: float,
             ttft_target_ms: float, limit: int = 100_000) -> int:
    """The highest closed-loop concurrency whose predicted p95 TTFT meets the target (0: not even one user)."""
    return _search(_meets(mode, hw, eff, input_tokens, output_tokens, input_sd, ttft_target_ms), limit)


def capacity_reaches(mode: str, hw: Hw, eff: Eff, input_tokens: int, output_tokens: int, input_sd: float,
                     ttft_target_ms: float, need: int, limit: int = 100_000) -> bool:
    """capacity(...) >= need, found by the same search, which stops once its answer is known to be above or below
    need (the fleet's alternatives: one that cannot need fewer GPUs than the best one is not searched to the end)."""
    return _search(_meets(mode, hw, eff, input_tokens, output_tokens, input_sd, ttft_target_ms), limit, need)


def _search(ok, limit: int, need: int | None = None):
    """The last concurrency that meets (ok), doubling then halving (p95 TTFT rises with the users); with need,
    whether that answer is at least need, decided as soon as the bounds of the search allow: the answer is never
    below a concurrency that met on the way (lo) and, once the doubling has failed, always below hi."""
    if not ok(1):
        return 0 if need is None else need <= 0
    lo, hi = 1, 2
    if need is not None and lo >= need:
        return True
    while hi <= limit and ok(hi):
        lo, hi = hi, hi * 2
        if need is not None and lo >= need:
            return True
    hi = min(hi, limit + 1)
    while hi - lo > 1:
        if need is not None and hi <= need:
            return False
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
        if need is not None and lo >= need:
            return True
    return lo if need is None else lo >= need


def _meets(mode: str, hw: Hw, eff: Eff, input_tokens: int, output_tokens: int, input_sd: float,
           ttft_target_ms: float):
    """ok(c): whether c closed-loop users meet the p95 TTFT target."""
    if mode == "sequential":
        def ok(c: int) -> bool:
            p = predict(mode, hw, eff, Load(input_tokens, output_tokens, input_sd, concurrency=c))
            return p.ttft_ms_p95 is not None and p.ttft_ms_p95 <= ttft_target_ms
    else:
        o = max(1, output_tokens)
        cap = hw.max_running if hw.max_running is not None else 10**9

        def ok(c: int) -> bool:  # predict(...).ttft_ms_p95 summed as _batching sums it, without building the Point
            users = max(1, c or 1)
            running = min(users, max(1, cap))
            _, before_queue, req, _, _, x, itl, _ = _steady(hw, eff, input_tokens, o, input_sd, running, None)
            floor = hw.host_s_per_seq * running
            if floor > itl:  # the served host floor: the running requests cycle slower, so those beyond wait longer
                x = _host_cycle(x, running, o, floor, itl)
            queued = (users - running) / x if users > running else 0.0
            return _ms(before_queue + queued + req) <= ttft_target_ms
    return ok


def fit_grid(loss, grids: tuple[list[float], ...], coarse: tuple[int, ...], start: Eff | None = None,
             axis_first: bool = False) -> Eff:
    """The Eff on a grid (bw_eff, flops_eff, step_ms, request_ms[, seq_ms[, prefill_x]] values) minimising loss(Eff): a coarse
    pass (every `coarse[i]`-th value), then steps to neighbouring grid points until none improves. start: skip the
    coarse pass and step from the grid point nearest this Eff (a refit after a small change of the loss).
    axis_first: step along one axis at a time while that improves, trying the whole neighbourhood (3^n - 1 points)
    only where no single step does (the same kind of optimum for far fewer evaluations of a costly loss)."""
    import itertools

    best_i, best_loss = _grid_start(loss, grids, coarse, start)
    if axis_first:
        return _fit_axis_first(loss, grids, best_i, best_loss)
    moved = True
    while moved:
        moved = False
        for delta in itertools.product((-1, 0, 1), repeat=len(grids)):
            idx = tuple(min(len(g) - 1, max(0, i + d)) for g, i, d in zip(grids, best_i, delta))
            if idx == best_i:
                continue
            v = loss(Eff(*(g[i] for g, i in zip(grids, idx))))
            if v < best_loss - 1e-12:
                best_i, best_loss, moved = idx, v, True
    return Eff(*(g[i] for g, i in zip(grids, best_i)))


def _grid_start(loss, grids, coarse, start) -> tuple[tuple[int, ...], float]:
    """Where a search steps from: the grid point nearest `start`, else the best of the coarse pass."""
    import itertools

    def at(idx) -> float:
        return loss(Eff(*(g[i] for g, i in zip(grids, idx))))

    if start is not None:
        vals = (start.bw_eff, start.flops_eff, start.step_ms, start.request_ms, start.seq_ms,
                start.prefill_x)[:len(grids)]
        best_i = tuple(min(range(len(g)), key=lambda j, g=g, v=v: abs(g[j] - v)) for g, v in zip(grids, vals))
        return best_i, at(best_i)
    best_i, best_loss = None, float("inf")
    for idx in itertools.product(*(range(0, len(g), c) for g, c in zip(grids, coarse))):
        v = at(idx)
        if v < best_loss:
            best_i, best_loss = idx, v
    return best_i, best_loss


def _fit_axis_first(loss, grids, best_i, best_loss) -> Eff:
    import itertools

    def at(idx) -> float:
        return loss(Eff(*(g[i] for g, i in zip(grids, idx))))

    n = len(grids)
    axis = [tuple(d if j == a else 0 for j in range(n)) for a in range(n) for d in (-1, 1)]
    full = [d for d in itertools.product((-1, 0, 1), repeat=n) if any(d)]
    deltas, seen = axis, {best_i}
    while True:
        moved = False
        for delta in deltas:
            idx = tuple(min(len(g) - 1, max(0, i + d)) for g, i, d in zip(grids, best_i, delta))
            if idx in seen:
                continue
            seen.add(idx)
            v = at(idx)
            if v < best_loss - 1e-12:
                best_i, best_loss, moved = idx, v, True
        if moved:
            deltas, seen = axis, {best_i}
        elif deltas is axis:
            deltas, seen = full, {best_i}
        else:
            return Eff(*(g[i] for g, i in zip(grids, best_i)))


def with_band(eff: Eff, band: float) -> tuple[Eff, Eff]:
    """(slow end, fast end) of the efficiencies for a relative error band: latency x (1 + band) .. / (1 + band)."""
    return eff.scaled(1 / (1 + band)), eff.scaled(1 + band)


def replicas_for(users: int, per_replica: int) -> int | None:
    """Replicas that hold `users` when each holds `per_replica` within the target; None when none does."""
    return None if per_replica <= 0 else max(1, math.ceil(users / per_replica))


__all__ = ["Burst", "Eff", "Hw", "Load", "Point", "burst", "capacity", "capacity_reaches", "decode_step_s", "mdl_wait_s", "predict", "prefill_s",
           "replace", "replicas_for", "spread_lengths", "step_curve", "with_band"]

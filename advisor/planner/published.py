"""Published measurements as observations the serving model can be fitted on and checked against. Pure.

A row (tests/advisor/data/published_measurements.yaml: batch 1; published_serving.yaml: at a concurrency, a request
rate, or an offline batch) is planned for its engine, model, precision and hardware; each measured figure becomes an
`Obs` whose `predict(eff)` gives the serving model's figure for the same thing. bench/fit_serving.py fits on them,
bench/predict_vs_measured.py and tests/advisor/planner/test_serving.py check the fit on the rows it kept out.
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, replace
from typing import Callable

from advisor.inputs.answers import ModelBlock, parse_answers
from advisor.knowledge.load import Knowledge
from advisor.planner.capacity import Workload, _Calc
from advisor.planner.perf import hw_class
from advisor.planner.serving import (VLLM_SCHEDULE, Burst, Eff, Load, Schedule, burst, decode_step_s, predict, prefill_s,
                                     spread_lengths, step_curve)
from advisor.planner.spec import ModelSpec, resolve_model
from advisor.planner.target import build_target
from advisor.planner.types import Target

UNKNOWN_PROMPT = 1 << 20
# a row measured in the engine's own process (trtllm-bench, LLM.generate, gptSessionBenchmark, benchmark_latency or
# _throughput, llama-batched-bench; the H200 launch blogs' static-batch runs; the ROCm blog's "latency benchmark",
# vLLM's benchmark_latency), never through an API server: what each row's published_as names
IN_PROCESS = re.compile(r"trtllm-bench|LLM\.generate|gptSessionBenchmark|benchmark_latency|benchmark_throughput|"
                        r"batched-bench|H200 launch blog|Llama-70B H200 blog|latency benchmark")
LENGTH_CAP = {"sharegpt": 2048}  # vllm bench's ShareGPT sampling keeps a prompt and its output under 2,048 tokens


@dataclass
class Obs:
    row: str
    engine: str
    cls: str
    kind: str  # decode1 | prefill1 | output_tps | total_tps | ttft_p50 | ttft_p95 | ttft_mean | itl
    measured: float
    predict: Callable[[Eff], float | None]
    serving: bool  # from a serving row (else a batch-1 row)
    # an offline burst (every request submitted at once): predict() simulates it step by step (serving.burst);
    # steady(eff) is the same figure as a steady state at the pool's batch, which a fit scales by `shape` (the
    # burst's figure over the steady state's at the efficiencies last refreshed: see bench/fit_serving.py), so a
    # grid search need not simulate a thousand requests at every point
    steady: Callable[[Eff], float | None] | None = None
    shape: float = 1.0

    def fast(self, e: Eff) -> float | None:
        """The figure as a fit asks for it: predict(e), or for a burst its steady state times its shape."""
        if self.steady is None:
            return self.predict(e)
        p = self.steady(e)
        return None if p is None else p * self.shape


def served(row: dict) -> bool:
    """Whether a published row was measured through a server's API (a served engine streams every token through its
    API server; an in-process benchmark does not)."""
    return not IN_PROCESS.search(str(row.get("published_as") or ""))


def spec_of(row: dict, k: Knowledge) -> ModelSpec:
    if "model" in row:
        return resolve_model(ModelBlock(name=row["model"]), k, read_files=False)
    s = row["shape"]
    return ModelSpec(name=s["name"], params_b=s["params_b"], active_params_b=s["active_params_b"],
                     architecture="decoder-only", layers=s["layers"], hidden_size=s["hidden_size"],
                     attention_heads=s["attention_heads"], kv_heads=s["kv_heads"], head_dim=s["head_dim"],
                     intermediate_size=s["intermediate_size"], vocab_size=s["vocab_size"],
                     max_context=s["max_context"], tied_embeddings=s["tied_embeddings"], source=row["source"],
                     weights_bytes=int(s["file_gib"] * 2**30), file_precision="gguf_file", file_format="gguf")


def target_of(row: dict, cpus: dict, k: Knowledge) -> Target:
    hw = row.get("hardware") or {}
    if "cpu" in row or hw.get("gpu_vendor", "none") == "none":
        key = row.get("cpu") or hw.get("cpu")
        cpu = cpus.get(key) or {}
        arch = "arm64" if "raspberry" in str(key).lower() or "arm" in str(cpu.get("name", "")).lower() else "x86_64"
        return Target(source="answers", gpu_vendor="none", ram_gib=256, cpu_bandwidth_gb_s=cpu.get("bandwidth_gb_s"),
                      cpu_arch=arch)
    hw = {key: v for key, v in hw.items() if key in ("gpu_vendor", "gpu_model", "gpu_count", "nodes", "gpus_per_node")}
    return build_target(parse_answers({"hardware": hw}), None, k, None)


def _evidence_of(row: dict) -> str:
    """Whose efficiency a row measures: one of our engines (Ollama runs llama.cpp), else another engine's (MLC LLM,
    ExLlama: planned as vLLM's INT4 for their bounds, but their speed is their own), which only the class pools."""
    from advisor.knowledge.schema import ENGINE_IDS

    e = str(row["engine"]).lower()
    return e if e in ENGINE_IDS else ("llama.cpp" if e == "ollama" else f"other:{e}")


def _calc(row: dict, cpus: dict, k: Knowledge, prompt: int, output: int, users: int, resident: float | None = None):
    engine = row.get("plan_engine") or row["engine"]
    target = target_of(row, cpus, k)
    gpus = (row.get("tensor_parallel") or None) if target.gpu_count else None
    wl = Workload(precision=row.get("precision", "fp16"), context_tokens=max(4096, min(prompt + output, 1 << 17)),
                  concurrency=max(1, users), prompt_tokens=prompt, resident_tokens=resident,
                  typical_tokens=min(prompt + output, 1 << 17), output_tokens=max(1, output), gpu_count=gpus,
                  kv_cache_dtype=row.get("kv_cache_dtype", "auto"))
    c = _Calc(engine, spec_of(row, k), target, wl, k, "en")
    if row.get("parallel") == "tensor" and c.bound_tensor:  # the run split tensors (gpt-fast's tensor parallel)
        c.serving_tensor = True
    return engine, c


def batch1_obs(row: dict, cpus: dict, k: Knowledge) -> list[Obs]:
    """decode tok/s at batch 1 and prefill (tok/s or TTFT) of one prompt."""
    out: list[Obs] = []
    prompt = row.get("prompt_tokens") or 512
    resident = float(row.get("decode_resident_tokens") or 0)
    engine, c = _calc(row, cpus, k, prompt, 1, 1, resident)
    hw = c.serving_hw()
    if hw is None:
        return out
    cls = hw_class(c.target, c.device, k)
    kv_resident = c.kv_tok_at(max(resident, 1)) * (c.kv_copies if c.device == "gpu" else 1.0)
    hw1 = type(hw)(**{**hw.__dict__, "kv_per_token": kv_resident})
    if row.get("decode_tps"):
        out.append(Obs(row["id"], _evidence_of(row), cls, "decode1", float(row["decode_tps"]),
                       lambda e, hw1=hw1: 1 / decode_step_s(1, hw1, e, resident), False))
    if hw.flops is None:  # no FLOPS figure for the hardware (the CPU rows): prefill says nothing of an efficiency
        return out
    if row.get("ttft_ms") and row.get("prompt_tokens"):
        # (the batch-1 rows are their tools' own in-process runs, llama-bench, gptSessionBenchmark, optimum-benchmark:
        # no API server, so no request's fixed cost, unless the row names a server)
        req = 1.0 if row.get("published_as") and served(row) else 0.0
        out.append(Obs(row["id"], _evidence_of(row), cls, "ttft1", float(row["ttft_ms"]),
                       lambda e, hw=hw, req=req: prefill_s(prompt, hw, e) * 1000 + req * e.request_ms, False))
    elif row.get("prefill_tps") and row.get("prompt_tokens"):
        out.append(Obs(row["id"], _evidence_of(row), cls, "prefill1", float(row["prefill_tps"]),
                       lambda e, hw=hw: prompt / prefill_s(prompt, hw, e), False))
    return out


def serving_obs(row: dict, cpus: dict, k: Knowledge) -> list[Obs]:
    """Throughput, TTFT and ITL at the row's load."""
    i, o = int(row["input_tokens"]), int(row["output_tokens"])
    load = row.get("load") or {}
    users = int(load.get("concurrency") or 0)
    rate = load.get("request_rate")
    engine, c = _calc(row, cpus, k, i, o, users or 256)
    hw = c.serving_hw()
    if hw is None:
        return []
    if not served(row):  # an in-process benchmark streams no token through an API server: no served host floor
        hw = replace(hw, host_s_per_seq=0.0)
    cls, mode = hw_class(c.target, c.device, k), c.mode
    burst_of = None
    if load.get("offline"):  # a whole batch at once: the KV pool full, or every request of the batch
        n = int(load.get("requests") or 10**6)
        users = max(1, min(n, hw.max_running or n))
        if load.get("requests") and mode != "sequential":
            burst_of = _burst_of(row, c, hw, i, o)
    sd = float(row.get("input_sd") or 0)
    in_process = not served(row)  # no API server between the benchmark and the engine: no request's fixed cost

    def point(e: Eff):
        lo = Load(i, o, sd, concurrency=users or None, request_rate=None if users else float(rate))
        return predict(mode, hw, replace(e, request_ms=0.0) if in_process and e.request_ms else e, lo)

    steady = {
        "output_tps": lambda e: point(e).output_tps,
        "total_tps": lambda e: None if point(e).requests_per_s is None else point(e).requests_per_s * (i + o),
        "ttft_p95": lambda e: point(e).ttft_ms_p95,
        "ttft_p50": lambda e: point(e).ttft_ms_p50,
        "itl": lambda e: None if not point(e).output_tps_per_user else 1000 / point(e).output_tps_per_user,
        "output_tps_per_user": lambda e: point(e).output_tps_per_user,
    }
    as_burst = {  # what the whole burst averages, as a benchmark of it reports (its TTFT: the wait from submission)
        "output_tps": lambda b: b.output_tps,
        "total_tps": lambda b: b.requests * (i + o) / b.makespan_s,
        "ttft_p50": lambda b: b.ttft_ms_mean,
        "itl": lambda b: b.tpot_ms_mean,
        "output_tps_per_user": lambda b: 1000 / b.tpot_ms_mean,
    }
    out: list[Obs] = []

    def add(kind: str, value):
        if value is None:
            return
        if burst_of is not None and kind in as_burst:
            def sim(e: Eff, f=as_burst[kind]):
                b = burst_of(e)
                return steady[kind](e) if b is None else f(b)
            out.append(Obs(row["id"], engine, cls, kind, float(value), sim, True, steady=steady[kind]))
        else:
            out.append(Obs(row["id"], engine, cls, kind, float(value), steady[kind], True))

    add("output_tps", row.get("output_tps"))
    add("total_tps", row.get("total_tps"))
    ttft = row.get("ttft_ms") or {}
    add("ttft_p95", ttft.get("p95"))
    add("ttft_p50", ttft.get("p50") if ttft.get("p50") is not None else ttft.get("mean"))
    itl = row.get("itl_ms") or {}
    add("itl", itl.get("mean") if itl.get("mean") is not None else itl.get("p50"))
    add("output_tps_per_user", row.get("output_tps_per_user"))
    return out


def burst_lengths(row: dict) -> list[int] | None:
    """An offline row's requests as serving.burst serves them: its count and its outputs' spread (length_spread);
    None when the row is not an offline burst of a known count."""
    load = row.get("load") or {}
    if not load.get("offline") or not load.get("requests"):
        return None
    spread = str(row.get("length_spread") or "")
    cap = LENGTH_CAP.get(spread, 0) - float(row["input_tokens"])
    return spread_lengths(float(row["output_tokens"]), int(load["requests"]), int(cap), spread)


def burst_places(c, n: int) -> tuple[int, float | None]:
    """(places, KV pool in tokens) the plan gives the engine for n requests at once: its batch cap (at most the
    requests), and the pool its typical sequences fill (None: not known)."""
    cap, mc = c.batch_cap(), c.max_concurrency()
    return min(n, cap or n), (mc * c.typical if mc else None)


def schedule_of(k, engine: str) -> Schedule:
    """How `engine` schedules a burst (knowledge/serving.yaml `scheduling`); vLLM's where the knowledge says none."""
    mode = k.serving.modes.get(engine)
    sch = mode.scheduling if mode is not None else None
    if sch is None:
        return VLLM_SCHEDULE
    return Schedule(**sch.model_dump(exclude={"source", "also", "version", "read"}))  # the mechanism's fields only


TRTLLM_BENCH = re.compile(r"trtllm-bench")


def burst_budget(row: dict, hw, pool: float | None, i: int, o: int) -> int | None:
    """The tokens one step of the row's burst may carry: the engine's default budget (hw.chunk_tokens), but where
    trtllm-bench ran it, the max_num_tokens that tool sets for the dataset (tuning.py finetune_setting: the KV pool's
    requests times 1 + ISL/OSL, at most 32,768, at least 2,048, rounded up), since it takes each prompt whole."""
    if TRTLLM_BENCH.search(str(row.get("published_as") or "")) and pool and i + o > 0:
        raw_bs = min(pool / (i + o), 4096)
        raw = min(raw_bs * (1 + i / max(1, o)), 32768)
        step = 256 if raw < 4096 else 512 if raw < 8192 else 1024
        return max(2048, step * math.ceil(raw / step))
    return hw.chunk_tokens or None


def prefill_token_s(hw, e: Eff) -> float:
    """Seconds one prompt token takes at the fitted share of the card's FLOPS (0 where no FLOPS figure is known)."""
    return 2 * hw.matmul_params / (hw.flops * e.prefill_eff) if hw.flops else 0.0


def _burst_of(row: dict, c, hw, i: int, o: int) -> Callable[[Eff], Burst | None]:
    """An offline row served as the burst it was (serving.burst): its requests through the engine's places (its
    batch cap), the KV pool its typical sequences fill, the prompts prefilled within the engine's token budget at our
    fitted share of the card's FLOPS, and its outputs' spread (a chat dataset's long tail). Memoised per efficiency
    (bounded: a fit asks for a handful)."""
    lengths = burst_lengths(row)
    slots, pool = burst_places(c, len(lengths))
    held = i + o / 2

    sched, budget = schedule_of(c.k, c.engine), burst_budget(row, hw, pool, i, o)

    @functools.lru_cache(maxsize=16)
    def run(e: Eff) -> Burst | None:
        step = step_curve(lambda b: max(decode_step_s(b, hw, e, held), b * hw.host_s_per_seq), slots)
        return burst(step, lengths, slots, float(i), pool, prefill_token_s(hw, e), budget, sched)
    return run

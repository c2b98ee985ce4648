"""Typed plan results: what the CLI prints as JSON, the rules engine reads and the report embeds.

GiB = 2^30 bytes everywhere; "not known" is None (e.g. a bound on hardware whose bandwidth we lack).
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from advisor.planner.spec import ModelSpec


class Target(BaseModel):
    """The hardware a plan is for, with the figures the formulas need."""

    source: Literal["answers", "detected"]
    gpu_vendor: str = "none"
    gpu_name: str | None = None
    gpu_id: str | None = None  # gpus.yaml id when known
    gpu_count: int = 0
    gpu_memory_gib: float | None = None  # per GPU, as installed
    gpu_bandwidth_gb_s: float | None = None  # per GPU
    gpu_fp16_tflops: float | None = None  # per GPU, dense
    gpu_compute_capability: str | None = None
    gpu_fp8_tflops: float | None = None  # per GPU, dense; None = no FP8 units (or not printed)
    gpu_int8_tops: float | None = None
    gpu_fp4_tflops: float | None = None
    gpu_arch: str | None = None  # non-NVIDIA: gfx942, Xe-HPC, Gaudi3, Hexagon ...
    accelerator: Literal["gpu", "npu", "tpu"] = "gpu"
    nodes: int = 1
    gpus_per_node: int | None = None  # None = all on one node
    interconnect: str | None = None  # between the GPUs of a node (answers, else the catalogue's)
    interconnect_gb_s: float | None = None  # the catalogue's GPU-to-GPU link within a node, both directions
    unified_memory: bool = False
    ram_gib: float | None = None
    cpu_bandwidth_gb_s: float | None = None
    cpu_gflops: float | None = None
    cpu_measured: bool = False  # True when the CPU figures come from the machine bench
    cpu_amx: bool = False  # AMX tiles (bf16/int8 matmul far above the fp32 rate)
    cpu_arch: str | None = None  # x86_64 | arm64 (aarch64): the serving model's CPU class
    cpu_model: str | None = None  # this machine's CPU (a calibration is kept per CPU)


class PlanOption(BaseModel):
    """One way to make a plan that does not fit fit."""

    kind: Literal["kv_dtype", "quantize", "add_gpus", "offload", "reduce_context", "more_memory"]
    text: str
    kv_cache_dtype: str | None = None
    precision: str | None = None
    gpu_count: int | None = None
    context_tokens: int | None = None
    concurrency: int | None = None
    total_gib: float | None = None
    available_gib: float | None = None


class ServingLevel(BaseModel):
    """The serving model's figures at one closed-loop concurrency on one replica (None: not predicted)."""

    concurrency: int
    ttft_ms_p50: float | None = None
    ttft_ms_p95: float | None = None
    itl_ms_p50: float | None = None
    itl_ms_p95: float | None = None
    output_tps: float | None = None  # all users together
    output_tps_per_user: float | None = None
    output_tps_per_gpu: float | None = None
    meets: bool | None = None  # p95 TTFT within Q2


CAL_BOUNDS = {"bw_eff": (0.05, 1.0), "flops_eff": (0.02, 0.8), "step_ms": (0.0, 170.0), "request_ms": (0.0, 300.0)}


def _within(name: str, **kw):
    lo, hi = CAL_BOUNDS[name]
    return Field(ge=lo, le=hi, allow_inf_nan=False, **kw)


class Calibrated(BaseModel):
    """This machine's efficiencies for one engine, refitted from a sweep measured here (kept in the user data dir)."""

    # Each figure within what the recalibration can make (its grid, advisor/evidence/sweep_check.py: BW, FL, STEP,
    # REQ): a file holding anything else was not written by it, and is ignored (an efficiency of 1e-300 overflowed
    # every plan for this machine; one above 1 would claim more than the roofline)
    engine: str
    cpu_model: str = Field(max_length=512)
    bw_eff: float = _within("bw_eff")
    flops_eff: float = _within("flops_eff")
    step_ms: float = _within("step_ms")
    request_ms: float = _within("request_ms", default=0.0)
    band: float = Field(gt=0, le=10, allow_inf_nan=False)
    sweep_at: str = Field(max_length=64)
    levels: int = Field(ge=1, le=64)
    # measured / predicted output tok/s (and p95 TTFT) before the recalibration, geometric means over its levels
    change_tps: float | None = Field(default=None, ge=1e-3, le=1e3, allow_inf_nan=False)
    change_ttft: float | None = Field(default=None, ge=1e-3, le=1e3, allow_inf_nan=False)


class Disaggregation(BaseModel):
    """Prefill/decode disaggregation against the aggregated fleet for the answers' users and both targets (advisor.
    planner.disagg): workers are the plan's own replica; None figures: that side cannot meet the targets."""

    itl_target_ms: float
    gpus_per_worker: int
    prefill_workers: int | None = None
    decode_workers: int | None = None
    gpus: int | None = None  # (prefill + decode workers) x gpus_per_worker
    ttft_ms_p95: float | None = None
    itl_ms: float | None = None
    kv_transfer_ms: float | None = None  # one prompt's KV cache from its prefill worker to its decode worker
    link: str = "nvlink"  # what carries it: nvlink (both pools in one node) or the node link (infiniband, ...)
    decode_batch: int | None = None
    aggregated_replicas: int | None = None
    aggregated_gpus_per_replica: int | None = None
    aggregated_gpus: int | None = None
    aggregated_ttft_ms_p95: float | None = None
    aggregated_itl_ms_p95: float | None = None
    slow_gpus: int | None = None  # the split at the band's slow end (None: it misses there)
    slow_aggregated_gpus: int | None = None
    recommended: bool = False
    verdict: Literal["pays", "no_gain", "split_misses", "both_miss", "aggregated_misses", "band"] = "no_gain"


class LeanerFleet(BaseModel):
    """A fleet of smaller replicas than the plan's own (which the bundle deploys) that also meets Q2 for Q1's users
    with fewer GPUs: said on its own line, never mixed into the plan's row."""

    gpus_per_replica: int
    tensor_parallel: int = 1
    attention_dp: int = 1  # data-parallel attention + expert parallelism over this many GPUs (1: not)
    replicas: int
    fleet_gpus: int
    capacity: int | None = None
    ttft_ms_p95: float | None = None  # Q1's users spread over its replicas
    fleet_usd_per_hour: float | None = None


class EvidenceCal(BaseModel):
    """One engine's prediction on one GPU and count, recalibrated by the user's own benchmark file (GuideLLM, AIPerf,
    vllm bench, SGLang, llm-d; advisor.evidence.imported): each figure times the file's median measured/predicted
    ratio, with the band its own levels leave. Held in memory for the plans made with that file, never stored."""

    engine: str
    gpu_id: str | None = None
    gpu_count: int = Field(default=1, ge=1)
    ttft_scale: float = Field(gt=0, le=1000, allow_inf_nan=False)
    itl_scale: float = Field(gt=0, le=1000, allow_inf_nan=False)
    tps_scale: float = Field(gt=0, le=1000, allow_inf_nan=False)
    band: float = Field(ge=0, le=1)
    file: str = Field(max_length=200)
    made_at: str | None = Field(default=None, max_length=40)
    levels: int = 0


class ServingPlan(BaseModel):
    """Predicted serving performance of one engine on the target (advisor/planner/serving.py), with its band."""

    mode: Literal["continuous", "slots", "sequential"]
    hw_class: str
    basis: Literal["fitted", "class", "prior", "measured"]  # whose efficiencies: this engine's fit on the class, the
    group: str  # class's pooled fit, the unfitted prior, or a sweep measured on this machine; the fit group's key
    label: Literal["measured", "fitted", "rough", "silicon"]
    band: float  # relative error: a figure x (1 +- band) for throughput, / (1 +- band) for latency
    bw_eff: float
    flops_eff: float
    step_ms: float
    request_ms: float = 0.0
    seq_ms: float = 0.0  # host work per running sequence per decode step
    prefill_x: float = 1.0  # a prompt's share of the peak FLOPS over a decode step's
    input_tokens: int
    output_tokens: int
    input_sd: float = 0.0
    typical_tokens: int
    ttft_target_ms: float | None = None
    users: int  # Q1
    gpus_per_replica: int = 0  # the fleet's replica (0: a CPU machine); the curve and `capacity` are for the plan's
    tensor_parallel: int = 1  # own GPUs (EnginePlan.gpus_used), which the fleet may split into smaller replicas
    attention_dp: int = 1  # the replica runs data-parallel attention + expert parallelism over this many GPUs
    disaggregation: Disaggregation | None = None  # with an ITL target: prefill/decode split against aggregated
    levels: list[ServingLevel] = Field(default_factory=list)
    at_users: ServingLevel | None = None  # Q1's users on one replica
    capacity: int | None = None  # users one replica holds within Q2 (p95 TTFT), at the fit's centre
    capacity_low: int | None = None  # ... at the band's slow end
    capacity_high: int | None = None
    # even the band's slow end is at or past what one step may hold, so the users beyond it queue and the band's ends
    # sit a few users apart whatever the efficiencies (walk-3 L5): bound by the KV pool ("kv": `running_cap`
    # sequences of the typical length fit) or by the engine's batch cap ("batch"); None: the efficiencies set it
    kv_bound: bool = False
    capacity_bound: Literal["kv", "batch"] | None = None
    running_cap: int | None = None
    replicas: int | None = None  # replicas of gpus_per_replica GPUs for Q1's users within Q2; None: none meets it
    replicas_high: int | None = None  # at the band's slow end
    fleet_gpus: int | None = None
    fleet_output_tps: float | None = None  # Q1's users spread over the replicas
    fleet_usd_per_hour: float | None = None
    usd_per_m_output_tokens: float | None = None
    leaner: LeanerFleet | None = None
    ttft_ms_p95_one: float | None = None  # one user alone: the floor of TTFT on this replica
    measured_change: str | None = None  # calibrated: how far the fitted prediction was from the sweep
    measured_sweep_at: str | None = None  # calibrated: when the sweep that made it ran, and its levels
    measured_levels: int | None = None
    # which predictor made the figures: "serving-model" (ours) or the measured-silicon one's name
    # ("aiconfigurator-core 0.12.0 (vllm 0.24.0 data, h100_sxm)"); why ours predicts alone where it does
    predictor: str = "serving-model"
    predictor_note: str | None = None
    # the silicon predictor's TTFT (its own plus the engine's fixed cost per request, knowledge/aiconfigurator.yaml
    # ttft_fixed_ms): then the capacities and the fleet are searches on it; the engine's fixed cost, ms
    ttft_fixed_ms: float | None = None
    band_ttft: float | None = None  # the latency bands: a TTFT x (1 + band) at the slow end, / (1 + band) at the fast
    band_itl: float | None = None
    own_band: float | None = None  # our model's TTFT band here: the capacities' and the facts' the scores read
    own_label: Literal["measured", "fitted", "rough"] | None = None  # our model's label: what the scores read
    cross_check: ServingLevel | None = None  # our model at Q1's users, beside the silicon predictor's figures
    disagree: list[str] = Field(default_factory=list)  # figures where the two differ beyond their bands
    # at Q1's users the served host floor (knowledge aiconfigurator host_ms_per_seq), not the GPU, sets the decode step
    host_bound: bool = False
    evidence: EvidenceCal | None = None  # the user's own benchmark file that recalibrated these figures
    # an open-loop request rate (answers load.request_rate_rps, `plan --rate`): the figures at that rate on one
    # replica, `concurrency` being the mean number of requests in flight; saturated: arrivals outrun the replica
    request_rate_rps: float | None = None
    at_rate: ServingLevel | None = None
    at_rate_saturated: bool = False


class EnginePlan(BaseModel):
    engine: str
    precision: str  # planner precision id actually planned (e.g. q4_k_m for llama.cpp when int4 was asked)
    precision_label: str
    device: Literal["gpu", "cpu", "gpu+cpu", "none"]
    accelerator: Literal["gpu", "npu", "tpu"] = "gpu"  # what "gpu" runs on: a GPU, or an NPU (Snapdragon X, Intel / AMD)
    gpus_used: int = 0
    parallelism: str | None = None  # "tensor 4", "layers over 2 GPUs", "32 of 80 layers in RAM"
    tensor_parallel: int = 1  # the split: tensor-parallel ranks within a node x pipeline stages across nodes
    pipeline_parallel: int = 1
    attention_dp: int = 1  # data-parallel attention ranks (1: attention split by tensor parallelism, or one GPU)
    expert_parallel: int = 1  # ranks the routed experts are spread over (1: experts split like the rest)
    layout_note: str | None = None  # an MoE plan's choice between data-parallel attention + EP and tensor parallel
    kv_attention: str = "gqa"  # how the KV cache is laid out: mha | gqa | mqa | mla | mla-expanded | none
    kv_window_tokens: int | None = None  # sliding-window layers hold at most this many tokens
    kv_full_bytes_per_token: int = 0  # KV held per token in full-attention layers, with the TP copies
    kv_window_bytes_per_token: int = 0  # ... in sliding-window layers (up to kv_window_tokens per sequence)
    context_tokens: int
    concurrency: int
    weights_gib: float
    kv_bytes_per_token: int
    usd_per_hour: float | None = None  # what the plan uses costs per hour (prices.yaml or the answers' price)
    usd_per_m_tokens_at_least: float | None = None  # cost per 10^6 output tokens at the decode-total upper bound
    cost_basis: str | None = None  # where the hourly price comes from, or why there is none
    kv_cache_dtype: str = "fp16"  # what the plan assumed: the asked dtype, or the engine's default (fp32/fp16/bf16),
    # or the FP8 an FP8 checkpoint declares (kv_from_checkpoint: the engine's auto takes it; the bundle keeps auto)
    kv_from_checkpoint: bool = False
    kv_gib: float
    overhead_gib: float
    total_gib: float
    available_gib: float | None
    fits: bool | None  # None: the target's memory is not known
    loads: bool | None  # weights + overhead fit (the engine starts), even if the asked KV does not
    headroom_gib: float | None
    max_concurrency: int | None
    max_context_tokens: int | None
    offload_layers: int | None = None  # llama.cpp layers kept in RAM
    offload_ram_gib: float | None = None  # the RAM those layers (weights + their KV) need
    decode_tps_upper_bound: float | None  # one sequence: bandwidth / bytes read per token
    decode_tps_total_upper_bound: float | None = None  # all sequences at the asked concurrency (≤ max)
    ttft_ms_lower_bound: float | None  # prompt FLOPs / peak compute (and one read of the weights)
    prompt_tokens: int
    options: list[PlanOption] = Field(default_factory=list)
    assumptions: list[str] = Field(default_factory=list)
    serving: ServingPlan | None = None  # None: no prediction (no bandwidth figure, no decode, offloaded layers)
    typical_tokens: int | None = None  # what each running sequence was planned to hold (None: the whole context)
    # what a deployment of this plan sets (advisor.deploy): the sequences one step may hold (the KV pool at the typical
    # length, at most the engine's cap), the prefill chunk the plan and the prediction assumed, SGLang's static share
    max_running: int | None = None
    batch_cap: int | None = None  # the engine's cap on sequences per step the plan used (asked, or its default here)
    prefill_chunk_tokens: int | None = None  # 0: the whole prompt at once
    mem_fraction_static: float | None = None


class Plan(BaseModel):
    model: ModelSpec
    target: Target
    engines: dict[str, EnginePlan]
    asked_precision: str | None = None
    notes: list[str] = Field(default_factory=list)

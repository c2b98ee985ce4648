"""The closed vocabularies that the knowledge files and the inputs share, kept here so that neither needs the
other: the fact names a rule condition may test (the loader rejects any other; `advisor.inputs.facts` builds
them), and the precisions an answers file may ask for (`planner.yaml` maps each one)."""
from __future__ import annotations

from typing import Literal

FACT_NAMES = frozenset({
    # checklist
    "concurrency", "ttft_p95_ms", "cross_platform", "cuda_expertise", "model_update",
    "non_llm_models", "strict_sla", "deployment", "prompt_mix", "prefix_sharing",
    # model block
    "architecture", "precision", "params_b", "context_tokens", "kv_cache_dtype", "moe", "modality", "mla",
    "sliding_window",
    # hardware (from the answers' hardware block, else detected)
    "gpu_vendor", "gpu_count", "gpu_memory_gb", "total_gpu_memory_gb", "ram_gb", "cpu_cores",
    "os", "cpu_arch", "has_avx2", "has_avx512", "hardware_source", "accelerator", "nodes", "gpus_per_node",
    "interconnect", "unified_memory",
    # whether the serving model predicted any engine on this target (advisor.decide.rules.Evaluator.facts)
    "serving_predicted",
})

# facts an each-engine rule may also test: that engine's capacity plan (advisor.planner)
PLAN_FACT_NAMES = frozenset({
    "plan_fits", "plan_loads", "plan_offload", "plan_offload_layers", "plan_device", "plan_precision", "plan_headroom_fraction",
    "plan_headroom_gib", "plan_total_gib", "plan_available_gib", "plan_weights_gib", "plan_kv_gib",
    "plan_overhead_gib", "plan_max_concurrency", "plan_max_context_tokens", "plan_decode_tps_upper_bound", "plan_fix",
    "plan_precision_id", "plan_fits_known", "plan_offload_ram_gib",
    # the serving prediction (advisor/planner/perf.py, advisor.inputs.facts.serving_facts)
    "plan_predicted", "plan_sla_replicas", "plan_sla_missed", "plan_rough", "plan_label", "plan_band_pct",
    "plan_capacity", "plan_capacity_low", "plan_capacity_high", "plan_capacity_bound", "plan_margin", "plan_margin_low",
    "plan_ttft_p95_ms", "plan_itl_ms",
    "plan_output_tps", "plan_ttft_one_ms", "plan_miss_x", "plan_miss_in_band", "plan_fleet_gpus", "plan_mode", "plan_typical_tokens",
    "plan_fleet_size", "plan_fleet_ratio", "plan_by",
})

# what an answers file's model.precision may say (advisor.inputs.answers)
Precision = Literal["fp32", "bf16", "fp16", "fp8", "fp4", "int8", "int4", "q2_k", "q3_k_m", "q4_0", "q4_1", "iq4_xs", "q4_k_s",
                    "q4_k_m", "q5_k_s", "q5_k_m", "q6_k", "q8_0"]

"""The measured-silicon predictor: NVIDIA's aiconfigurator-core, for vLLM, SGLang and TensorRT-LLM on the datacenter
GPUs it has per-operation timings for (knowledge/aiconfigurator.yaml says which).

Its continuous-batching ("agg") estimate is what its own `estimate` command reports: one steady state at a batch of
N requests, with chunked prefill mixed into the decode steps. We read TTFT, TPOT and output tokens/s from it at each
concurrency; the p95 of TTFT, which it does not give, is its TTFT times our serving model's p95/p50 ratio at the same
level (the caller does that). The library is imported here only, lazily, on the first prediction (none at `import
advisor`, none on a page that does not predict an NVIDIA datacenter GPU); every answer is memoised per process, and a
case it has no data for (a quantization without tables on that GPU, a model it does not ship) is None with the reason,
so the caller falls back to our own model. It reads only its own package data: no hub, no network, no file written.
"""
from __future__ import annotations

import functools
import logging
import math
from dataclasses import dataclass

from advisor.knowledge.load import Knowledge


@dataclass(frozen=True)
class AicKey:
    """One deployment as the library sees it (hashable: the memo's key)."""

    model: str        # its model_configs id, e.g. meta-llama/Meta-Llama-3.1-8B
    system: str       # h100_sxm
    backend: str      # vllm | sglang | trtllm
    version: str      # the engine version of the data it reads
    tp: int
    gemm: str | None  # its GEMM quant mode, None: the checkpoint's own
    kv: str | None    # its KV-cache quant mode, None: the checkpoint's own
    moe: bool


@dataclass(frozen=True)
class AicPoint:
    ttft_ms: float
    tpot_ms: float
    output_tps: float
    oom: bool  # the library's own memory check says the batch does not fit


def key_for(engine: str, gpu_id: str | None, model_id: str | None, precision: str, tp: int, kv_bytes: float,
            moe: bool, pipeline: int, k: Knowledge) -> tuple[AicKey | None, str | None]:
    """(key, None) when the library has data for this deployment, else (None, why not: a reason id, the strings'
    srv_aic_why_<id>)."""
    a = k.aiconfigurator
    system = a.systems.get(gpu_id or "")
    if system is None:
        return None, "gpu"
    backend = a.backends.get(engine)
    if backend is None:
        return None, "engine"
    model = a.models.get(model_id or "")
    if model is None:
        return None, "model"
    if pipeline > 1:
        return None, "pipeline"
    if precision not in a.precisions:
        return None, "precision"
    gemm = a.precisions[precision]
    if model_id in a.own_quant_models:
        gemm = None
    elif gemm == "fp8" and model_id in a.block_fp8_models:
        gemm = "fp8_block"
    versions = a.data_versions.get(system) or a.data_versions["default"]
    kv = "fp8" if kv_bytes == 1 else None
    return AicKey(model, system, backend, versions[backend], max(1, tp), gemm, kv, moe), None


def predictor_name(key: AicKey, k: Knowledge) -> str:
    """"aiconfigurator-core 0.12.0 (vllm 0.24.0, h100_sxm)": the package, and the engine version and system whose
    measured data it read (identifiers only: the same in every language)."""
    return f"aiconfigurator-core {k.aiconfigurator.version} ({key.backend} {key.version}, {key.system})"


@functools.lru_cache(maxsize=64)
def _model(key: AicKey):
    """The library's model and database for one deployment (the costly part: its tables are read here)."""
    logging.getLogger("aiconfigurator_core").setLevel(logging.ERROR)
    from aiconfigurator_core.sdk.config_builders import build_model_config
    from aiconfigurator_core.sdk.models import get_model, resolve_context_fmha_by_data, resolve_nvfp4_for_system
    from aiconfigurator_core.sdk.perf_database import get_database_view

    db = get_database_view(key.system, key.backend, key.version, database_mode="SILICON")
    mc = build_model_config(key.tp, 1, 1, key.tp if key.moe else 1, 1, gemm_quant_mode=key.gemm,
                            kvcache_quant_mode=key.kv)
    resolve_context_fmha_by_data(mc, key.model, db, key.backend, is_context_role=True)
    resolve_nvfp4_for_system(mc, key.system, key.model)
    return get_model(key.model, mc, key.backend), db


@functools.lru_cache(maxsize=4096)
def point(key: AicKey, input_tokens: int, output_tokens: int, batch: int) -> AicPoint | None:
    """The library's steady state at `batch` requests in flight; None where it has no data (or fails)."""
    try:
        from aiconfigurator_core.sdk.backends.factory import get_backend
        from aiconfigurator_core.sdk.config import RuntimeConfig

        model, db = _model(key)
        isl, osl = max(1, int(input_tokens)), max(2, int(output_tokens))
        s = get_backend(key.backend).run_agg(model, db, RuntimeConfig(isl=isl, osl=osl, batch_size=max(1, batch)),
                                             ctx_tokens=isl)
        r = s.get_result_dict()
        vals = float(r["ttft"]), float(r["tpot"]), float(r["tokens/s"])
        if not all(math.isfinite(v) and v > 0 for v in vals):
            return None
        return AicPoint(ttft_ms=vals[0], tpot_ms=vals[1], output_tps=vals[2],
                        oom=bool(s.check_oom()) or bool(s.check_kv_cache_oom()))
    except Exception:  # noqa: BLE001 - any gap in its data (no table, an op it lacks) means: our model predicts
        return None


def installed() -> bool:
    """Whether the library can be imported here (found, not imported)."""
    import importlib.util

    return importlib.util.find_spec("aiconfigurator_core") is not None

"""The measured-silicon predictor: NVIDIA's aiconfigurator-core, for vLLM, SGLang and TensorRT-LLM on the datacenter
GPUs it has per-operation timings for (knowledge/aiconfigurator.yaml says which).

Its continuous-batching ("agg") estimate is what its own `estimate` command reports: one steady state at a batch of
N requests, with chunked prefill mixed into the decode steps. The planner reads its TPOT and output tokens/s at each
concurrency, and its TTFT plus the engine's fixed cost per request (advisor/planner/perf.py _Silicon). The library is imported here only, lazily, on the first prediction (none at `import
advisor`, none on a page that does not predict an NVIDIA datacenter GPU); every answer is memoised per process, and a
case it has no data for (a quantization without tables on that GPU, a model it does not ship) is None with the reason,
so the caller falls back to our own model. It reads only its own package data: no hub, no network, no file written.
"""
from __future__ import annotations

import functools
import logging
import math
from dataclasses import dataclass
from pathlib import Path

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
    dp: int = 1       # data-parallel attention ranks, the experts spread over as many (expert parallel); tp is then 1
    # a model it ships no config for, described to it by its config.json fields (ours: models.yaml, itself from the
    # model's config.json, or the user's own file): sorted (field, value) pairs; () for a model it ships
    config: tuple = ()


@dataclass(frozen=True)
class AicPoint:
    ttft_ms: float
    tpot_ms: float
    output_tps: float
    oom: bool  # the library's own memory check says the batch does not fit


def described(spec, k: Knowledge) -> tuple | None:
    """A dense model of an architecture the library models as a Llama (knowledge/aiconfigurator.yaml
    described_architectures) as the config.json fields it reads: (field, value) pairs, or None where it cannot be
    described that way (MoE, MLA, a sliding window, another architecture, a generic stand-in without a config)."""
    if spec is None or spec.unknown_name or spec.approximate or spec.moe_experts or spec.kv_lora_rank \
            or spec.sliding_window or spec.architecture != "decoder-only":
        return None
    arch = next((k.aiconfigurator.described_architectures[a] for a in spec.hf_architectures
                 if a in k.aiconfigurator.described_architectures), None)
    if arch is None:
        return None
    cfg = {"architectures": (arch,), "num_hidden_layers": spec.layers, "hidden_size": spec.hidden_size,
           "num_attention_heads": spec.attention_heads, "num_key_value_heads": spec.kv_heads,
           "head_dim": spec.head_dim, "intermediate_size": spec.intermediate_size, "vocab_size": spec.vocab_size,
           "max_position_embeddings": spec.max_context, "tie_word_embeddings": spec.tied_embeddings,
           "torch_dtype": "bfloat16", "hidden_act": "silu"}
    return tuple(sorted(cfg.items()))


def key_for(engine: str, gpu_id: str | None, model_id: str | None, precision: str, tp: int, kv_bytes: float,
            moe: bool, pipeline: int, k: Knowledge, dp: int = 1, spec=None) -> tuple[AicKey | None, str | None]:
    """(key, None) when the library has data for this deployment, else (None, why not: a reason id, the strings'
    srv_aic_why_<id>). spec: the model's ModelSpec, which describes a dense model the library ships no config for."""
    a = k.aiconfigurator
    system = a.systems.get(gpu_id or "")
    if system is None:
        return None, "gpu"
    backend = a.backends.get(engine)
    if backend is None:
        return None, "engine"
    model = a.models.get(model_id or "")
    config: tuple = ()
    if model is None:
        config = described(spec, k) or ()
        if not config:
            return None, "model"
        model = f"described/{spec.name}"
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
    if dp > 1:  # data-parallel attention with expert parallelism: each rank its own attention, no tensor split
        return AicKey(model, system, backend, versions[backend], 1, gemm, kv, moe, dp, config), None
    return AicKey(model, system, backend, versions[backend], max(1, tp), gemm, kv, moe, 1, config), None


def predictor_name(key: AicKey, k: Knowledge) -> str:
    """"aiconfigurator-core 0.12.0 (vllm 0.24.0, h100_sxm)": the package, and the engine version and system whose
    measured data it read (identifiers only: the same in every language)."""
    return f"aiconfigurator-core {k.aiconfigurator.version} ({key.backend} {key.version}, {key.system})"


@functools.lru_cache(maxsize=16)
def _db(system: str, backend: str, version: str):
    """One database view per system, engine and version: the library memoises what it probes (attention lanes) on
    the view, so a view shared by every model and split keeps that work."""
    from aiconfigurator_core.sdk.perf_database import get_database_view

    return get_database_view(system, backend, version, database_mode="SILICON")


@functools.lru_cache(maxsize=64)
def _model(key: AicKey):
    """The library's model and database for one deployment (the costly part: its tables are read here)."""
    logging.getLogger("aiconfigurator_core").setLevel(logging.ERROR)
    from aiconfigurator_core.sdk.config_builders import build_model_config
    from aiconfigurator_core.sdk.models import get_model, resolve_nvfp4_for_system

    db = _db(key.system, key.backend, key.version)
    # the context attention's quant mode given, not probed: its `resolve_context_fmha_by_data` reads the whole
    # attention table per model (0.8 s each on 2 cores, most of a cold plan) and, for every deployment we map, keeps
    # the default (the checkpoint's, bf16) except MLA models with block FP8, where it picks bf16 (checked 2026-12-04)
    fmha = "bfloat16" if key.gemm == "fp8_block" else None
    if key.dp > 1:  # (tp 1, pp 1, attention dp N, moe tp 1, moe ep N): its own wide-EP layout
        mc = build_model_config(1, 1, key.dp, 1, key.dp, gemm_quant_mode=key.gemm, kvcache_quant_mode=key.kv,
                                fmha_quant_mode=fmha)
    else:
        mc = build_model_config(key.tp, 1, 1, key.tp if key.moe else 1, 1, gemm_quant_mode=key.gemm,
                                kvcache_quant_mode=key.kv, fmha_quant_mode=fmha)
    path = _described_dir(key.config) if key.config else key.model
    resolve_nvfp4_for_system(mc, key.system, path)
    return get_model(path, mc, key.backend), db


_described: dict = {"root": None}


def _described_dir(config: tuple) -> str:
    """A folder holding the described model's config.json, the one way the library takes a model it does not ship
    (a local model folder). Written once per model into a private temporary folder this process removes at exit:
    nothing in the user's dirs, nothing kept."""
    import atexit
    import hashlib
    import json
    import shutil
    import tempfile

    if _described["root"] is None:
        _described["root"] = tempfile.mkdtemp(prefix="advisor-aic-")
        atexit.register(shutil.rmtree, _described["root"], True)
    body = json.dumps({f: list(v) if isinstance(v, tuple) else v for f, v in config}, sort_keys=True)
    d = Path(_described["root"]) / hashlib.sha256(body.encode()).hexdigest()[:24]
    if not (d / "config.json").is_file():
        d.mkdir(exist_ok=True)
        (d / "config.json").write_text(body, encoding="utf-8")
    return str(d)


def point(key: AicKey, input_tokens: int, output_tokens: int, batch: int) -> AicPoint | None:
    """Its steady state at `batch` requests in flight (kept in the store when the edge turned it on); None where
    it has no data (or fails)."""
    path = _store_path(key, input_tokens, output_tokens)
    if path is None:
        return _computed(key, input_tokens, output_tokens, batch)
    kept = _stored(path)
    if batch in kept:
        return kept[batch]
    kept[batch] = _computed(key, input_tokens, output_tokens, batch)
    _keep(path, kept)
    return kept[batch]


# ---------------------------------------------------------------- the store: its answers kept between processes
# Its tables take seconds to read on 2 cores (one system and engine: ~0.5-1.5 s; a recommendation with flips reads
# several), its answers are deterministic for a package version, so they are kept in the user cache dir, one small
# JSON file per deployment and request shape: a plan asked again (the CLI, a restarted app) reads no table at all.
# Off until the edge turns it on (use_store: the CLI and the app), so the planner itself does no I/O. Bounded: at most
# STORE_FILES files (the oldest go), STORE_POINTS points and STORE_BYTES per file; a file that is not ours (bad JSON,
# a link, a FIFO, a value not finite) is ignored and rewritten.
STORE_FILES = 2000
STORE_POINTS = 400
STORE_BYTES = 64 << 10
_store: dict = {"dir": None, "version": ""}


def use_store(folder: Path | None, version: str = "") -> None:
    """Keep the library's answers under folder (None: in this process only); version: the package's, part of each
    file's name, so a folder given by $INFERENCE_ADVISOR_AIC_STORE never mixes two versions' answers."""
    _store["dir"], _store["version"] = folder, version


STORE_ENV = "INFERENCE_ADVISOR_AIC_STORE"


def default_store(version: str) -> Path | None:
    """Where the edge keeps them: $INFERENCE_ADVISOR_AIC_STORE (the test suite's own folder), else
    `aiconfigurator-<version>/` in the user cache dir; None when that is not a folder."""
    import os

    from probes.cache import CacheDirError, cache_dir

    env = os.environ.get(STORE_ENV)
    if env:
        return Path(env).expanduser()
    try:
        return cache_dir() / f"aiconfigurator-{version}"
    except CacheDirError:
        return None


def _store_path(key: AicKey, i: int, o: int) -> Path | None:
    d = _store["dir"]
    if d is None:
        return None
    import hashlib

    tag = "|".join(map(str, (_store["version"], key, i, o)))
    return d / f"{hashlib.sha256(tag.encode()).hexdigest()[:32]}.json"


@functools.lru_cache(maxsize=512)
def _stored(path: Path) -> dict[int, AicPoint | None]:
    """The points kept in one file (a copy that this process then adds to)."""
    import json

    from probes.cache import read_cache_file

    raw = read_cache_file(path, STORE_BYTES)
    out: dict[int, AicPoint | None] = {}
    try:
        data = json.loads(raw) if raw else {}
    except (ValueError, RecursionError):
        return out
    if not isinstance(data, dict):
        return out
    for b, v in list(data.items())[:STORE_POINTS]:
        try:
            n = int(b)
            if v is None:
                out[n] = None
            elif isinstance(v, list) and len(v) == 4 and all(isinstance(x, (int, float)) for x in v[:3]) and \
                    all(math.isfinite(x) and 0 < x < 1e12 for x in v[:3]):
                out[n] = AicPoint(float(v[0]), float(v[1]), float(v[2]), bool(v[3]))
        except (TypeError, ValueError):
            continue
    return out


def _keep(path: Path, points: dict[int, AicPoint | None]) -> None:
    import json

    from probes.cache import write_cache_file

    items = list(points.items())[-STORE_POINTS:]
    body = {str(b): None if p is None else [round(p.ttft_ms, 4), round(p.tpot_ms, 5), round(p.output_tps, 3), p.oom]
            for b, p in items}
    try:
        new = not path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        write_cache_file(path, json.dumps(body).encode())
        if new:  # the folder is listed only when it gained a file, not at every point
            files = sorted(path.parent.glob("*.json"), key=lambda f: f.stat().st_mtime)
            for old in files[:max(0, len(files) - STORE_FILES)]:
                old.unlink(missing_ok=True)
    except OSError:
        pass  # a read-only or full cache: this process still has the answer


@functools.lru_cache(maxsize=4096)
def _computed(key: AicKey, input_tokens: int, output_tokens: int, batch: int) -> AicPoint | None:
    """The library's steady state at `batch` requests in flight; None where it has no data (or fails)."""
    try:
        from aiconfigurator_core.sdk.backends.factory import get_backend
        from aiconfigurator_core.sdk.config import RuntimeConfig

        model, db = _model(key)
        isl, osl = max(1, int(input_tokens)), max(2, int(output_tokens))
        per_rank = max(1, -(-int(batch) // key.dp))  # its batch is per attention-DP rank; tokens/s is the whole's
        s = get_backend(key.backend).run_agg(model, db, RuntimeConfig(isl=isl, osl=osl, batch_size=per_rank),
                                             ctx_tokens=isl)
        r = s.get_result_dict()
        vals = float(r["ttft"]), float(r["tpot"]), float(r["tokens/s"])
        if not all(math.isfinite(v) and v > 0 for v in vals):
            return None
        return AicPoint(ttft_ms=vals[0], tpot_ms=vals[1], output_tps=vals[2],
                        oom=bool(s.check_oom()) or bool(s.check_kv_cache_oom()))
    except Exception:  # noqa: BLE001 - any gap in its data (no table, an op it lacks) means: our model predicts
        return None


@functools.cache
def installed() -> bool:
    """Whether the library can be imported here (found, not imported)."""
    import importlib.util

    return importlib.util.find_spec("aiconfigurator_core") is not None

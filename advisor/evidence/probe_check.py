"""Predicted vs measured: the plan for exactly what a probe ran, next to what the probe measured.

The plan is rebuilt from the probe's own settings (model file, n_ctx / max_model_len, dtype, prompts),
so the comparison tests the formulas, not a different workload. Memory compares with the probe's peak
RSS of its process tree on CPU, or its peak GPU memory; speed compares the median per-request decode rate
with the memory-bandwidth roofline of the same configuration.
"""
from __future__ import annotations

import statistics
from dataclasses import replace
from pathlib import Path

from pydantic import BaseModel, Field

from advisor.inputs.answers import Answers
from advisor.inputs.hardware import Hardware
from advisor.knowledge.load import Knowledge
from advisor.planner.capacity import Workload, plan_engine
from advisor.planner.machine_bench import MachineBench
from advisor.planner.spec import ModelSpec, ModelSpecError, read_model_path
from advisor.planner.target import build_target
from advisor.planner.types import EnginePlan
from probes.result import ProbeResult, device_kind

_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "auto": "bf16"}


class ProbeCheck(BaseModel):
    engine: str
    model: str
    device: str
    predicted_memory_mib: float
    measured_memory_mib: float | None
    memory_metric: str  # which probe field was compared
    memory_error_pct: float | None  # (predicted - measured) / measured
    decode_tps_roofline: float | None
    decode_tps_measured: float | None
    roofline_pct: float | None  # measured / roofline
    text: str
    plan: EnginePlan
    notes: list[str] = Field(default_factory=list)
    # the serving model's prediction for the same run (advisor.evidence.sweep_check): None where it has none
    serving: dict | None = None


def _workload(res: ProbeResult) -> Workload:
    s, bs = res.settings, res.backend_settings
    reqs = [r for r in res.requests if r.error is None and r.prompt_tokens]
    prompts = [r.prompt_tokens for r in reqs] or [128]
    out = s.max_tokens if s else 32
    resident = statistics.fmean(p + out / 2 for p in prompts)
    if res.engine == "llama.cpp" and res.serving_mode == "llama-server":
        # parallel slots: KV allocated for every slot's context (-c = slots × per-slot context)
        ctx, conc = int(bs.get("n_ctx_per_slot", 2048)), int(bs.get("parallel_slots", 1))
    elif res.engine == "llama.cpp":
        ctx, conc = int(bs.get("n_ctx", 2048)), 1  # one sequence in n_ctx; KV allocated for all of it
    elif res.engine == "vllm":
        ctx, conc = int(bs.get("max_model_len", 2048)), int(bs.get("max_num_seqs", 1))
    elif res.engine == "sglang":  # its own server: --context-length per request, --max-running-requests of them
        ctx, conc = int(bs.get("context_length") or 2048), int(bs.get("max_running_requests") or 1)
    else:  # KV grows with the tokens held; these backends serve one request at a time
        ctx, conc = max(prompts) + out, 1
    if res.engine == "onnxruntime":
        precision = "ort_int4" if bs.get("precision", "int4") == "int4" else "fp32"
    else:  # llama.cpp ignores it: a GGUF is planned as the file it is
        precision = _DTYPES.get(str(bs.get("dtype")), "fp32")
    kv_pool = bs.get("VLLM_CPU_KVCACHE_SPACE_GiB")
    return Workload(precision=precision, context_tokens=ctx, concurrency=conc, prompt_tokens=max(prompts),
                    resident_tokens=resident, kv_reserved_gib=float(kv_pool) if kv_pool else None)


def check_probe(res: ProbeResult, knowledge: Knowledge, hardware: Hardware | None, machine: MachineBench | None,
                lang: str = "en") -> ProbeCheck | None:
    """None when there is nothing to compare: not ok, an endpoint (another machine), or no model file. An endpoint
    run whose server was recognised (server_kind vLLM, …) stands for that engine in the verdict, but not here: its
    memory and speed are the remote server's, which the probe neither samples nor sees the hardware of."""
    if not res.ok or res.engine == "endpoint" or device_kind(res.device)[0] == "remote" or not res.model \
            or res.engine not in knowledge.planner.engines:
        return None
    try:
        spec: ModelSpec = read_model_path(Path(res.model))
    except ModelSpecError:
        return None
    wl = _workload(res)
    precision = None if res.engine == "llama.cpp" else wl.precision
    notes = []
    if res.engine == "onnxruntime" and res.backend_settings.get("model_dir"):
        d = Path(res.backend_settings["model_dir"])
        if d.is_dir():
            spec = spec.model_copy(update={"weights_bytes": sum(
                f.stat().st_size for f in d.iterdir() if f.name.endswith((".onnx", ".onnx.data"))),
                "file_precision": precision})
    kind, gpu_named = device_kind(res.device)
    on_gpu = kind == "gpu"
    answers = Answers()  # the local machine, as detected
    if on_gpu and gpu_named and not (hardware and hardware.gpus):
        # a GPU result read where that GPU is not (a recorded result, a report made elsewhere): plan for the GPU
        # the result names, from gpus.yaml
        from advisor.inputs.answers import TargetHardware
        from advisor.planner.target import find_gpu

        g = find_gpu(gpu_named, knowledge)
        if g is not None:
            answers = Answers(hardware=TargetHardware(gpu_vendor=g.vendor, gpu_model=g.name, gpu_count=1,
                                                      gpu_memory_gb=g.memory_gb))
            notes.append(f"planned for the {g.name} the result was measured on (gpus.yaml)")
    target = build_target(answers, hardware, knowledge, machine)
    if not on_gpu:
        target = target.model_copy(update={"gpu_vendor": "none", "gpu_count": 0})
    plan = plan_engine(res.engine, spec, target, wl, knowledge, lang, precision=precision)
    if plan.device == "none":  # the planner has no model of this engine on this device (SGLang's CPU path)
        return None
    predicted = plan.total_gib * 1024
    if on_gpu and knowledge.planner.engines[res.engine].kv_allocation == "budget" and plan.available_gib:
        predicted = plan.available_gib * 1024  # vLLM / TensorRT-LLM take their whole budget at start-up
        notes.append("GPU budget engine: predicted = the memory it reserves at start-up")
    measured = res.peak_gpu_mb if on_gpu else res.peak_rss_mb
    metric = "peak_gpu_mb" if on_gpu else "peak_rss_mb"
    err = None if not measured else round((predicted - measured) / measured * 100, 1)
    tps = res.decode_tps_per_request.p50
    roof = plan.decode_tps_upper_bound
    pct = round(tps / roof * 100, 1) if tps and roof else None
    s = knowledge.s
    if res.prepare_time_s and not on_gpu:  # the one-off conversion ran in this probe's process: its heap stays
        err = None
        parts = [s("check_memory_prepared", lang, engine=knowledge.engines[res.engine].name, predicted=round(predicted),
                   measured=round(measured) if measured else "—", prep=f"{res.prepare_time_s:.0f}")]
    else:
        parts = [s("check_memory", lang, engine=knowledge.engines[res.engine].name, predicted=round(predicted),
                   measured=round(measured) if measured else "—", err=f"{err:+.0f}" if err is not None else "—")]
    if pct is not None:
        parts.append(s("check_roofline", lang, pct=round(pct), tps=round(tps, 1), roof=round(roof, 1),
                       what=s("check_bw_cpu" if not on_gpu else "check_bw_gpu", lang)))
    elif roof is None:
        parts.append(s("plan_a_no_bw", lang))
    serving = _serving(res, knowledge, hardware, machine)
    if serving is not None:
        lv = serving.levels[0]
        e = lv.errors()

        def f(x, nd=0):
            return "—" if x is None else f"{x:,.{nd}f}"

        def pc(x):
            from advisor.evidence.sweep_check import error_text

            return error_text(x, knowledge, lang)
        parts.append(s("check_serving", lang, c=lv.concurrency, ttft_m=f(lv.measured_ttft_ms_p95),
                       ttft_p=f(lv.predicted_ttft_ms_p95), ttft_e=pc(e["ttft_p95"]), itl_m=f(lv.measured_itl_ms_p50, 1),
                       itl_p=f(lv.predicted_itl_ms_p50, 1), itl_e=pc(e["itl_p50"]),
                       tps_m=f(lv.measured_output_tps, 1), tps_p=f(lv.predicted_output_tps, 1),
                       tps_e=pc(e["output_tps"]), label=s(f"val_plan_label_{serving.label}", lang),
                       band=round(serving.band * 100)))
    return ProbeCheck(engine=res.engine, model=spec.name, device=res.device or "?", predicted_memory_mib=round(
        predicted, 1), measured_memory_mib=measured, memory_metric=metric, memory_error_pct=err,
        decode_tps_roofline=roof, decode_tps_measured=tps, roofline_pct=pct, text=" ".join(parts), plan=plan,
        notes=notes, serving=serving.model_dump(mode="json") if serving is not None else None)


def _serving(res: ProbeResult, knowledge: Knowledge, hardware: Hardware | None, machine: MachineBench | None):
    """The serving prediction for this one run, as a one-level sweep of it (published fit, or this machine's
    calibration)."""
    from advisor.evidence.sweep_check import check_sweep
    from advisor.planner import calibration
    from probes.sweep_result import SweepLevel, SweepResult

    c = res.settings.concurrency if res.settings else 1
    sweep = SweepResult(engine=res.engine, status="ok", ttft_target_ms=res.ttft_target_ms, model=res.model,
                        device=res.device, levels=[SweepLevel.of(c, res)], results=[res], busy=res.system_load.busy)
    try:
        chk = check_sweep(sweep, knowledge, hardware, machine, None, calibration.load())
    except (ValueError, KeyError, ZeroDivisionError):  # a comparison that cannot be made must not hide the memory check
        return None
    return chk if chk is not None and chk.levels else None


def hold_collapsed(res: ProbeResult, check: ProbeCheck | None, knowledge: Knowledge) -> ProbeResult:
    """The run as the verdict must read it: one whose decode throughput, all its sequences together, reached only a
    sliver of this machine's roofline was contended, whatever the CPU counters saw (other engines' children, a VM's
    steal), so it is held like a busy run: shown, never a verdict. Unchanged otherwise; never changes the stored
    result."""
    if check is None or check.roofline_pct is None or res.system_load.busy:
        return res
    conc = res.settings.concurrency if res.settings else 1
    share = check.roofline_pct * max(1, conc)
    if share >= knowledge.planner.collapsed_roofline_pct:
        return res
    note = (f"the run decoded at {share:.1f}% of this machine's memory-bandwidth roofline (a quiet run here reaches "
            f"far more): the machine was contended")
    return res.model_copy(update={"system_load": res.system_load.model_copy(
        update={"busy": True, "note": note, "collapsed_roofline_pct": round(share, 1)})})

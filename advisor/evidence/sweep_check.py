"""Predicted vs measured for a concurrency sweep: the serving model's figures at each level beside the sweep's.

The prediction is made for exactly what the sweep ran (its engine, model file, prompt and output tokens, this
machine's CPU or GPU as detected; an endpoint only when the answers name its hardware and the server was recognised)
with the published fit's efficiencies, or this machine's recalibrated ones when given. `recalibrate` refits the
efficiencies on a sweep measured here, for advisor/planner/calibration.py to keep in the user cache.
"""
from __future__ import annotations

import math
import statistics
from pathlib import Path

from pydantic import BaseModel, Field

from advisor.inputs.answers import Answers
from advisor.inputs.hardware import Hardware
from advisor.knowledge.load import Knowledge
from advisor.planner.capacity import Workload, _Calc
from advisor.planner.machine_bench import MachineBench
from advisor.planner.perf import efficiency, hw_class, label_for
from advisor.planner.serving import Eff, Load, capacity, fit_grid, predict
from advisor.planner.spec import ModelSpec, ModelSpecError, read_model_path
from advisor.planner.target import build_target
from advisor.planner.types import Calibrated
from advisor.evidence.verdict import busy_here
from probes.result import device_kind, on_another_machine
from probes.sweep_result import SweepResult

SERVER_ENGINE = {"vllm": "vllm", "sglang": "sglang", "llama-server": "llama.cpp", "trtllm-serve": "tensorrt-llm"}
_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "auto": "bf16"}


class LevelCheck(BaseModel):
    concurrency: int
    measured_ttft_ms_p95: float | None = None
    predicted_ttft_ms_p95: float | None = None
    measured_itl_ms_p50: float | None = None
    predicted_itl_ms_p50: float | None = None
    measured_output_tps: float | None = None
    predicted_output_tps: float | None = None
    busy: bool = False

    def errors(self) -> dict[str, float | None]:
        """(predicted - measured) / measured per figure, None where either is missing."""
        def e(p, m):
            return None if p is None or not m else (p - m) / m
        return {"ttft_p95": e(self.predicted_ttft_ms_p95, self.measured_ttft_ms_p95),
                "itl_p50": e(self.predicted_itl_ms_p50, self.measured_itl_ms_p50),
                "output_tps": e(self.predicted_output_tps, self.measured_output_tps)}


def error_text(e: float | None, knowledge, lang: str) -> str:
    """A relative error (predicted - measured) / measured as a reader takes it in: "+24%" within a factor of two,
    else the factor ("predicted 5.3× low", never "-81%"; "predicted 11× high", never a "+999%" cap)."""
    if e is None:
        return "—"
    if e <= -0.5:
        return knowledge.s("err_low_x", lang, x=f"{1 / (1 + e):.1f}" if e > -1 else "∞")
    if e >= 1:
        return knowledge.s("err_high_x", lang, x=f"{1 + e:.1f}")
    return f"{e:+.0%}"


class SweepCheck(BaseModel):
    engine: str
    label: str  # fitted | rough | measured (the efficiencies the prediction used)
    band: float
    group: str
    hw_class: str
    input_tokens: int
    output_tokens: int
    ttft_target_ms: float | None = None
    levels: list[LevelCheck] = Field(default_factory=list)
    measured_capacity: int | None = None
    predicted_capacity: int | None = None
    busy: bool = False
    notes: list[str] = Field(default_factory=list)

    def capacity_at(self, target_ms: float) -> tuple[int | None, int | None]:
        """(measured, predicted) SLA capacity at a p95 TTFT target, on the sweep's own levels: the highest level whose
        p95 meets it with every level below meeting it too (0: not even the first; None: no level to judge)."""
        def walk(get) -> int | None:
            cap, judged = 0, False
            for lv in sorted(self.levels, key=lambda x: x.concurrency):
                v = get(lv)
                if v is None:
                    continue
                judged = True
                if v > target_ms:
                    break
                cap = lv.concurrency
            return cap if judged else None
        return walk(lambda lv: lv.measured_ttft_ms_p95), walk(lambda lv: lv.predicted_ttft_ms_p95)

    def median_abs_error(self, figure: str) -> float | None:
        errs = [abs(x) for x in (lv.errors()[figure] for lv in self.levels) if x is not None]
        return statistics.median(errs) if errs else None


class _First(BaseModel):
    """What the sweep's first measured level ran: from its full result, else from the summary's first_* fields."""

    prompt: int
    output: int
    sd: float = 0.0
    model: str | None = None
    device: str | None = None
    backend_settings: dict = Field(default_factory=dict)
    server_kind: str | None = None


def _first(sweep: SweepResult) -> _First | None:
    res = next((r for r in sweep.results if r.ok), None)
    if res is not None:
        s, ok = res.settings, max(1, res.requests_ok)
        prompt = (s.input_tokens if s and s.input_tokens else round((res.prompt_tokens_total or 0) / ok) or 128)
        out = (s.output_tokens if s and s.output_tokens else round((res.output_tokens_total or 0) / ok) or
               (s.max_tokens if s else 32))
        return _First(prompt=int(prompt), output=int(out), sd=float(s.input_tokens_sd or 0) if s else 0.0,
                      model=res.model, device=res.device, backend_settings=res.backend_settings,
                      server_kind=res.server_kind)
    fs = sweep.first_settings
    if not fs:
        return None
    toks = sweep.first_tokens or [0, 0]
    try:
        prompt = int(fs.get("input_tokens") or toks[0] or 128)
        out = int(fs.get("output_tokens") or toks[1] or fs.get("max_tokens") or 32)
        sd = float(fs.get("input_tokens_sd") or 0)
    except (TypeError, ValueError, IndexError):
        return None
    return _First(prompt=max(1, prompt), output=max(1, out), sd=max(0.0, sd), model=sweep.model, device=sweep.device,
                  backend_settings=sweep.first_backend_settings or {}, server_kind=sweep.first_server_kind)


def _engine_of(sweep: SweepResult, first: _First | None) -> str | None:
    if sweep.engine != "endpoint":
        return sweep.engine
    kinds = {r.server_kind for r in sweep.results if r.server_kind} or (
        {first.server_kind} if first is not None and first.server_kind else set())
    return SERVER_ENGINE.get(next(iter(kinds))) if len(kinds) == 1 else None


def _calc(sweep: SweepResult, engine: str, knowledge: Knowledge, hardware: Hardware | None,
          machine: MachineBench | None, answers: Answers | None):
    first = _first(sweep)
    if first is None:
        return None, None
    prompt, out, sd = first.prompt, first.output, first.sd
    bs = first.backend_settings
    # a served sweep (python -m probes serve, "measure what you'd deploy") ran its server here, on this machine's CPU,
    # on the model file it names: predicted like a local run, not as an endpoint of unknown hardware (walk-3 M5)
    served = sweep.deployed.model if sweep.deployed is not None and sweep.deployed.model else None
    remote = (sweep.engine == "endpoint" or device_kind(first.device)[0] == "remote") and not served
    if remote and (answers is None or answers.hardware is None):
        return None, None  # an endpoint's hardware is not known unless the answers name it
    spec: ModelSpec | None = None
    model_path = served or first.model
    if model_path and not remote:
        try:
            spec = read_model_path(Path(model_path))
        except ModelSpecError:
            return None, None
    elif answers is not None:
        from advisor.planner.spec import resolve_model

        try:
            spec = resolve_model(answers.model, knowledge, read_files=False)
        except ModelSpecError:
            return None, None
    if spec is None:
        return None, None
    if engine == "onnxruntime":
        precision = "ort_int4" if bs.get("precision", "int4") == "int4" else "fp32"
    elif engine == "llama.cpp" and not remote:
        precision = None
    elif remote:
        precision = answers.model.precision
    else:
        precision = _DTYPES.get(str(bs.get("dtype")), "fp32")
    kv_pool = bs.get("VLLM_CPU_KVCACHE_SPACE_GiB")
    top = max(lv.concurrency for lv in sweep.levels) if sweep.levels else 1
    wl = Workload(precision=precision or "fp16", context_tokens=max(2048, prompt + out), concurrency=top,
                  prompt_tokens=prompt, typical_tokens=prompt + out, output_tokens=out, input_sd=sd,
                  kv_reserved_gib=float(kv_pool) if kv_pool else None,
                  ttft_target_ms=sweep.ttft_target_ms)
    target = build_target(answers if remote else Answers(), None if remote else hardware, knowledge,
                          None if remote else machine)
    on_gpu = device_kind(first.device)[0] == "gpu" and not served
    if not remote and not on_gpu:
        target = target.model_copy(update={"gpu_vendor": "none", "gpu_count": 0})
    c = _Calc(engine, spec, target, wl, knowledge, "en", precision)
    return c, (prompt, out, sd)


def check_sweep(sweep: SweepResult, knowledge: Knowledge, hardware: Hardware | None, machine: MachineBench | None,
                answers: Answers | None = None, calibration: dict[str, Calibrated] | None = None
                ) -> SweepCheck | None:
    """None when there is nothing to predict: no level measured, an endpoint without named hardware, no model."""
    engine = _engine_of(sweep, _first(sweep))
    if engine is None or engine not in knowledge.planner.engines:
        return None
    c, tokens = _calc(sweep, engine, knowledge, hardware, machine, answers)
    if c is None or c.device == "none":
        return None
    hw = c.serving_hw()
    if hw is None:
        return None
    prompt, out, sd = tokens
    cls = hw_class(c.target, c.device, knowledge)
    cal = (calibration or {}).get(engine) if c.target.source == "detected" and c.device == "cpu" else None
    eff, band, basis, group = efficiency(engine, cls, knowledge, cal, batching=c.mode != "sequential")
    label = label_for(basis, group, knowledge, batching=c.mode != "sequential")
    out_check = SweepCheck(engine=engine, label=label, band=round(band, 3), group=group, hw_class=cls,
                           input_tokens=prompt, output_tokens=out, ttft_target_ms=sweep.ttft_target_ms,
                           busy=busy_here(sweep), measured_capacity=sweep.capacity)
    here = not on_another_machine(sweep)  # a remote server's levels are never busy for this machine's CPU
    for lv in sweep.levels:
        if lv.status != "ok":
            continue
        p = predict(c.mode, hw, eff, Load(prompt, out, sd, concurrency=lv.concurrency))
        out_check.levels.append(LevelCheck(
            concurrency=lv.concurrency, measured_ttft_ms_p95=lv.ttft_ms.p95, predicted_ttft_ms_p95=_r(p.ttft_ms_p95),
            measured_itl_ms_p50=lv.itl_ms.p50, predicted_itl_ms_p50=_r(p.itl_ms_p50),
            measured_output_tps=lv.output_tps_total, predicted_output_tps=_r(p.output_tps), busy=lv.busy and here))
    if sweep.ttft_target_ms:
        out_check.predicted_capacity = capacity(c.mode, hw, eff, prompt, out, sd, sweep.ttft_target_ms,
                                                max(lv.concurrency for lv in sweep.levels))
    return out_check


def _r(x: float | None) -> float | None:
    return None if x is None else float(f"{x:.4g}")


# ---------------------------------------------------------------- recalibration on this machine

BW = [0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.85, 1.0]
FL = [0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8]
STEP = [0.0, 0.5, 1.0, 2.0, 4.0, 7.0, 12.0, 20.0, 35.0, 60.0, 100.0, 170.0]
REQ = [0.0, 2.0, 5.0, 10.0, 20.0, 40.0, 80.0, 150.0, 300.0]


def recalibrate(sweep: SweepResult, knowledge: Knowledge, hardware: Hardware | None, machine: MachineBench | None,
                calibration: dict[str, Calibrated] | None = None) -> Calibrated | None:
    """This machine's efficiencies for the sweep's engine, refitted on its levels (TTFT p95, ITL p50, output tok/s).
    None for a sweep that cannot speak for this machine: an endpoint, a busy or failed run, fewer than 2 levels, a GPU
    run (the recalibration is for this machine's CPU), no machine bench, or a served sweep (a deployment bundle's
    server: its slots and batch are the bundle's, not the ones the serving model assumes at each level), or a sweep
    this installation did not make (made_here: a colleague's file naming this checkout's model and `device: cpu`
    rewrote this machine's calibration x80; it is shown beside the prediction, and recalibrates nothing)."""
    from probes.sweep_result import made_here

    if sweep.engine == "endpoint" or sweep.busy or machine is None or sweep.deployed is not None \
            or not made_here(sweep):
        return None
    check = check_sweep(sweep, knowledge, hardware, machine, None, None)
    if check is None or check.hw_class not in ("x86-cpu", "arm-cpu"):
        return None
    levels = [lv for lv in sweep.levels if lv.status == "ok" and not lv.busy]
    if len(levels) < 2:
        return None
    c, (prompt, out, sd) = _calc(sweep, check.engine, knowledge, hardware, machine, None)
    hw = c.serving_hw()
    obs = []
    for lv in levels:
        for measured, pick in ((lv.ttft_ms.p95, "ttft_ms_p95"), (lv.itl_ms.p50, "itl_ms_p50"),
                               (lv.output_tps_total, "output_tps")):
            if measured:
                obs.append((lv.concurrency, pick, measured))

    def loss(e: Eff) -> float:
        total = 0.0
        for conc, pick, measured in obs:
            v = getattr(predict(c.mode, hw, e, Load(prompt, out, sd, concurrency=conc)), pick)
            total += 4.0 if not v or v <= 0 else math.log(v / measured) ** 2
        return total / len(obs)

    best = fit_grid(loss, (BW, FL, STEP, REQ), (2, 2, 2, 2))
    errs = []
    for conc, pick, measured in obs:
        v = getattr(predict(c.mode, hw, best, Load(prompt, out, sd, concurrency=conc)), pick)
        if v:
            errs.append(abs(v / measured - 1))
    tps = [(lv.predicted_output_tps, lv.measured_output_tps) for lv in check.levels if lv.predicted_output_tps
           and lv.measured_output_tps]
    ttft = [(lv.predicted_ttft_ms_p95, lv.measured_ttft_ms_p95) for lv in check.levels if lv.predicted_ttft_ms_p95
            and lv.measured_ttft_ms_p95]

    def gmean(pairs):
        if not pairs:
            return None  # (held within what Calibrated keeps: a factor beyond a thousand is no calibration)
        return min(1e3, max(1e-3, round(math.exp(statistics.fmean(math.log(m / p) for p, m in pairs)), 3)))

    return Calibrated(engine=check.engine, cpu_model=(machine.cpu_model or "")[:512], bw_eff=best.bw_eff,
                      flops_eff=best.flops_eff, step_ms=best.step_ms, request_ms=best.request_ms,
                      band=round(max(statistics.median(errs) if errs else 0.5, knowledge.serving.band_floor), 3),
                      sweep_at=(sweep.started_at or "")[:64], levels=len(levels), change_tps=gmean(tps),
                      change_ttft=gmean(ttft))


def recalibrate_all(sweeps: list[SweepResult], knowledge: Knowledge, hardware: Hardware | None,
                    machine: MachineBench | None) -> list[Calibrated]:
    """Recalibrate from each sweep that can speak for this machine, and keep each in the user cache."""
    from advisor.planner import calibration

    out = []
    for s in sweeps:
        cal = recalibrate(s, knowledge, hardware, machine)
        if cal is not None:
            calibration.save(cal)
            out.append(cal)
    return out

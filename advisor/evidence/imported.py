"""A benchmark file the user made elsewhere (GuideLLM, AIPerf, `vllm bench serve`, SGLang, an llm-d report; read by
probes.bench_formats) beside the prediction for the same engine, hardware and model: per level, measured vs
predicted TTFT, ITL and output tok/s, by the predictor the plan itself uses.

What it speaks for is what the file says of itself, completed only by what the user said of it (`Assumed`, asked
once on the page or given on the CLI), never guessed. A file that matches the answers (same GPU and count, same
model, its engine known) with at least MIN_LEVELS measured levels recalibrates that engine's prediction on that
hardware (`EvidenceCal`: the median measured/predicted ratio per figure, its band what the file's own levels leave);
a file of another GPU or model is shown and cannot.
"""
from __future__ import annotations

import statistics
from dataclasses import replace

from pydantic import BaseModel, Field

from advisor.inputs.answers import Answers, LoadBlock, TargetHardware
from advisor.knowledge.load import Knowledge
from advisor.planner.spec import ModelSpecError, find_known, resolve_model
from advisor.planner.target import build_target, find_gpu
from advisor.planner.types import EvidenceCal
from probes.bench_formats import ImportedRun

MIN_LEVELS = 2  # one level is a thin run: shown beside the prediction, it recalibrates nothing
MAX_PREDICTED_LEVELS = 24  # a sweep of many levels: the first 24 are predicted (each a plan of one engine)


class Assumed(BaseModel):
    """What the user said of a file that does not say it: its engine, GPU (as gpus.yaml or NVML names it) and count,
    and whether its model is the answers' model."""

    engine: str | None = None
    gpu: str | None = Field(default=None, max_length=120)
    gpu_count: int | None = Field(default=None, ge=1, le=4096)
    same_model: bool = False
    concurrency: int | None = Field(default=None, ge=1, le=100_000)  # for levels that name no load (AIPerf's records)


class EvidenceLevel(BaseModel):
    concurrency: int | None = None
    request_rate_rps: float | None = None
    measured_ttft_ms: float | None = None  # the file's p50 (its mean where it gives no median)
    predicted_ttft_ms: float | None = None
    measured_itl_ms: float | None = None
    predicted_itl_ms: float | None = None
    measured_output_tps: float | None = None
    predicted_output_tps: float | None = None
    requests_ok: int = 0
    requests_failed: int | None = None

    def errors(self) -> dict[str, float | None]:
        def e(p, m):
            return None if p is None or not m else (p - m) / m
        return {"ttft": e(self.predicted_ttft_ms, self.measured_ttft_ms),
                "itl": e(self.predicted_itl_ms, self.measured_itl_ms),
                "output_tps": e(self.predicted_output_tps, self.measured_output_tps)}


class EvidenceCheck(BaseModel):
    run: ImportedRun
    engine: str | None = None
    gpu_id: str | None = None
    gpu_name: str | None = None
    gpu_count: int | None = None
    model: str | None = None
    said_by_user: list[str] = Field(default_factory=list)  # what Assumed filled in
    missing: list[str] = Field(default_factory=list)  # what neither the file nor the user said: no prediction
    mismatch: list[str] = Field(default_factory=list)  # keys where it differs from the answers: it cannot calibrate
    predictor: str | None = None
    band: float | None = None
    levels: list[EvidenceLevel] = Field(default_factory=list)
    failed_share: float | None = None
    calibration: EvidenceCal | None = None
    why_not_calibrated: str | None = None  # key of strings.yaml

    def median_abs_error(self, figure: str) -> float | None:
        xs = [abs(x) for x in (lv.errors()[figure] for lv in self.levels) if x is not None]
        return statistics.median(xs) if xs else None


def check_evidence(run: ImportedRun, answers: Answers, knowledge: Knowledge, assumed: Assumed | None = None,
                   lang: str = "en") -> EvidenceCheck:
    """The file beside the prediction. Pure: the answers' model is resolved from the catalogue (read_files=False)."""
    from advisor.planner.capacity import plan_engine
    from advisor.planner import workload_for

    a = assumed or Assumed()
    out = EvidenceCheck(run=run)
    out.engine = run.engine or a.engine
    if run.engine is None and a.engine:
        out.said_by_user.append("engine")
    gpu_name = run.gpu or a.gpu
    if run.gpu is None and a.gpu:
        out.said_by_user.append("gpu")
    out.gpu_count = run.gpu_count or a.gpu_count or (1 if gpu_name else None)
    g = find_gpu(gpu_name, knowledge) if gpu_name else None
    out.gpu_id, out.gpu_name = (g.id if g else None), (g.name if g else gpu_name)
    if out.engine is None or out.engine not in knowledge.planner.engines:
        out.missing.append("engine")
    if gpu_name is None:
        out.missing.append("gpu")
    elif g is None:
        out.missing.append("gpu_known")
    # the model: the file's own name when we know it, else the answers' when the user says it is the same
    try:
        spec_answers = resolve_model(answers.model, knowledge, read_files=False)
    except ModelSpecError:
        spec_answers = None
    file_entry = find_known(run.model, knowledge) if run.model else None
    answers_entry = find_known(answers.model.name, knowledge) if answers.model.name else None
    if a.same_model or (file_entry is not None and answers_entry is not None and file_entry is answers_entry):
        out.model = answers.model.name
        if a.same_model and not (file_entry is not None and file_entry is answers_entry):
            out.said_by_user.append("model")
        spec = spec_answers
    elif file_entry is not None:
        out.model = file_entry.id
        spec = resolve_model(answers.model.model_copy(update={"name": file_entry.id, "params_b": None,
                                                               "config_path": None, "path": None}),
                             knowledge, read_files=False)
        out.mismatch.append("model")
    else:
        spec = None
        out.missing.append("model")
    hw = answers.hardware
    if g is not None:
        if hw is None or (hw.gpu_model and find_gpu(hw.gpu_model, knowledge) is not g) or \
                (hw.gpu_count or 1) != out.gpu_count:
            out.mismatch.append("gpu")
    if any(lv.concurrency is None and lv.request_rate_rps is None for lv in run.levels) and a.concurrency is None:
        out.missing.append("load")  # AIPerf's per-request records, a burst: the users in flight are not in the file
    elif any(lv.concurrency is None and lv.request_rate_rps is None for lv in run.levels):
        out.said_by_user.append("load")
    oks = [lv for lv in run.levels]
    n_ok = sum(lv.requests_ok for lv in oks)
    n_bad = sum(lv.requests_failed or 0 for lv in oks)
    out.failed_share = n_bad / (n_ok + n_bad) if n_ok + n_bad else None
    if out.missing or spec is None:
        for lv in run.levels[:MAX_PREDICTED_LEVELS]:
            out.levels.append(_measured(lv))
        out.why_not_calibrated = "ev_why_missing"
        return out
    th = TargetHardware(gpu_vendor=g.vendor, gpu_model=g.id, gpu_count=out.gpu_count)
    base = answers.model_copy(update={"hardware": th, "load": None})
    for lv in run.levels[:MAX_PREDICTED_LEVELS]:
        row = _measured(lv)
        m = base.model.model_copy(update={
            "input_tokens": max(1, round(lv.input_tokens)) if lv.input_tokens else base.model.input_tokens,
            "output_tokens": max(1, round(lv.output_tokens)) if lv.output_tokens else base.model.output_tokens})
        if m.input_tokens and m.output_tokens and m.input_tokens + m.output_tokens > m.context_tokens:
            m = m.model_copy(update={"context_tokens": min(1 << 21, m.input_tokens + m.output_tokens)})
        users = lv.concurrency or (a.concurrency if lv.request_rate_rps is None else None) or 1
        if lv.concurrency is None and lv.request_rate_rps is None:
            row.concurrency = users
        ans = base.model_copy(update={"model": m, "concurrency": users,
                                      "load": LoadBlock(request_rate_rps=lv.request_rate_rps)
                                      if lv.request_rate_rps else None})
        target = build_target(ans, None, knowledge, None)
        wl = replace(workload_for(ans, knowledge), ttft_target_ms=None)
        plan = plan_engine(out.engine, spec, target, wl, knowledge, lang)
        sv = plan.serving
        if sv is not None:
            out.predictor = out.predictor or sv.predictor
            out.band = out.band if out.band is not None else sv.band
            at = sv.at_rate if lv.request_rate_rps and lv.concurrency is None else sv.at_users
            if at is not None:
                row.predicted_ttft_ms = at.ttft_ms_p50
                row.predicted_itl_ms = at.itl_ms_p50
                row.predicted_output_tps = at.output_tps
        out.levels.append(row)
    out.calibration, out.why_not_calibrated = _calibrate(out, knowledge)
    return out


def _measured(lv) -> EvidenceLevel:
    return EvidenceLevel(concurrency=lv.concurrency, request_rate_rps=lv.request_rate_rps,
                         measured_ttft_ms=lv.ttft_ms_p50 if lv.ttft_ms_p50 is not None else lv.ttft_ms_mean,
                         measured_itl_ms=lv.itl_ms_p50 if lv.itl_ms_p50 is not None else (
                             lv.itl_ms_mean if lv.itl_ms_mean is not None else lv.tpot_ms_mean),
                         measured_output_tps=lv.output_tps, requests_ok=lv.requests_ok,
                         requests_failed=lv.requests_failed)


def _calibrate(out: EvidenceCheck, knowledge: Knowledge) -> tuple[EvidenceCal | None, str | None]:
    """The file's measured/predicted ratios as this engine's recalibration on this hardware, or why not."""
    if out.mismatch:
        return None, "ev_why_mismatch"
    if out.failed_share is not None and out.failed_share > knowledge.serving.evidence_max_failed_share:
        return None, "ev_why_failures"
    ratios: dict[str, list[float]] = {"ttft": [], "itl": [], "output_tps": []}
    for lv in out.levels:
        for key, m, p in (("ttft", lv.measured_ttft_ms, lv.predicted_ttft_ms),
                          ("itl", lv.measured_itl_ms, lv.predicted_itl_ms),
                          ("output_tps", lv.measured_output_tps, lv.predicted_output_tps)):
            if m and p:
                ratios[key].append(m / p)
    if max(len(v) for v in ratios.values()) < MIN_LEVELS:
        return None, "ev_why_thin"
    scale = {k: statistics.median(v) if len(v) >= MIN_LEVELS else 1.0 for k, v in ratios.items()}
    # what the file's own levels leave once scaled: the largest residual, at least the band floor
    resid = [abs(r / scale[k] - 1) for k, v in ratios.items() if len(v) >= MIN_LEVELS for r in v]
    band = max(knowledge.serving.band_floor, max(resid) if resid else 0.0)
    return EvidenceCal(engine=out.engine, gpu_id=out.gpu_id, gpu_count=out.gpu_count or 1,
                       ttft_scale=round(scale["ttft"], 4), itl_scale=round(scale["itl"], 4),
                       tps_scale=round(scale["output_tps"], 4), band=round(min(band, 0.95), 3),
                       file=out.run.file_name, made_at=out.run.made_at,
                       levels=sum(1 for lv in out.levels if lv.measured_output_tps or lv.measured_ttft_ms)), None

"""The field's benchmark result files, read and written in their own schemas: GuideLLM's report, AIPerf's profile
export, `vllm bench serve --save-result`, SGLang's `bench_serving` JSONL, the llm-d benchmark report (v0.2 / v0.2.1),
and our own sweep JSON. `read_results` turns one file into an `ImportedRun`: per load level, what was measured, and
what the file says of itself (tool and format version, engine, model, hardware, tokens); what it does not say is
listed in `unknown`, for the user to answer, never guessed. `llmd_reports` writes our probe and sweep results as
llm-d benchmark reports v0.2.1, valid against that schema (probes/schemas/).

Key names are the tools' own, read from their code (GuideLLM 0.8.1 `guidellm/benchmark/schemas`, report version 2,
and version 1 of <= 0.6; AIPerf 0.13.0 `aiperf/common/models/export_models.py`, schema 1.0-1.5; vLLM 0.34.0
`vllm/benchmarks/serve.py`, and 0.11's keys; SGLang 0.5.23 `sglang/benchmark/serving.py`; llm-d-benchmark
8bc9f1dd, 2026-08-21, `llmdbenchmark/analysis/benchmark_report/schema_v0_2*.py`). Parsing is our own because no
tool ships a reader of another's file; it is bounded (MAX_BYTES, MAX_DEPTH, MAX_LEVELS, every figure finite and
within FIGURE_MAX) and reads the documented paths only.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

MAX_BYTES = 20 * 1024 * 1024  # a GuideLLM report with its sampled requests is a few MB; 100 MB is refused unread
MAX_DEPTH = 64
MAX_LEVELS = 200
FIGURE_MAX = {"ms": 1e8, "tps": 1e9, "users": 1e7, "rate": 1e7, "tokens": 1e8, "count": 1e9}
SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"
LLMD_SCHEMA = SCHEMA_DIR / "llmd_benchmark_report_v0_2_1.json"

Format = Literal["guidellm", "aiperf", "vllm-bench", "sglang-bench", "llmd-report", "sweep"]
# what an llm-d report's inference_engine.tool or an SGLang server_info names, as our engine ids
ENGINE_NAMES = {"vllm": "vllm", "sglang": "sglang", "tensorrt-llm": "tensorrt-llm", "trtllm": "tensorrt-llm",
                "tensorrt_llm": "tensorrt-llm", "llama.cpp": "llama.cpp", "llama-cpp": "llama.cpp",
                "llama-server": "llama.cpp", "onnxruntime": "onnxruntime", "pytorch": "pytorch",
                "transformers": "pytorch"}


class ResultFormatError(ValueError):
    """A file that is not a result we read, or whose figures cannot be true: one line, nothing kept."""


class ImportedLevel(BaseModel):
    """One load level as the file measured it. None: the file does not give it."""

    concurrency: int | None = None  # closed loop: users in flight
    request_rate_rps: float | None = None  # open loop: arrivals per second (None with concurrency: all at once)
    requests_ok: int = 0
    requests_failed: int | None = None  # None: the format does not count failures
    input_tokens: float | None = None  # mean per request
    output_tokens: float | None = None
    ttft_ms_mean: float | None = None
    ttft_ms_p50: float | None = None
    ttft_ms_p95: float | None = None
    ttft_ms_p99: float | None = None
    itl_ms_mean: float | None = None
    itl_ms_p50: float | None = None
    tpot_ms_mean: float | None = None
    output_tps: float | None = None  # all requests together
    requests_per_s: float | None = None
    duration_s: float | None = None


class ImportedRun(BaseModel):
    """One benchmark file, as it speaks for itself."""

    format: Format
    format_version: str  # e.g. "GuideLLM report v2 (guidellm 0.8.1)"
    tool_version: str | None = None
    file_name: str = Field(max_length=200)
    made_at: str | None = None  # the run's date as the file states it
    engine: str | None = None  # one of ours, when the file names it
    engine_version: str | None = None
    model: str | None = Field(default=None, max_length=300)
    gpu: str | None = Field(default=None, max_length=120)  # the accelerator as the file names it
    gpu_count: int | None = None
    tensor_parallel: int | None = None
    levels: list[ImportedLevel] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)  # "key|argument": strings.yaml keys, shown translated

    @property
    def unknown(self) -> list[str]:
        """What the prediction needs and the file does not say (asked once, never guessed)."""
        return [k for k, v in (("engine", self.engine), ("gpu", self.gpu), ("model", self.model)) if not v]


# ----------------------------------------------------------------------------------------------- reading

def read_results(data: bytes, name: str) -> ImportedRun:
    """One file's bytes (name: the file's name, shown and used for its extension) as an ImportedRun; raises
    ResultFormatError with one line naming what is wrong."""
    shown = _clip(Path(name).name or "file", 200)
    if len(data) > MAX_BYTES:
        raise ResultFormatError(f"{shown}: {len(data) / 2**20:.0f} MiB is more than a benchmark result file holds "
                                f"(at most {MAX_BYTES >> 20} MiB)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ResultFormatError(f"{shown}: not text (a benchmark result is JSON or YAML)") from None
    docs = _parse(text, shown)
    for doc in docs:
        if nesting_depth(doc, MAX_DEPTH) > MAX_DEPTH:
            raise ResultFormatError(f"{shown}: nested more than {MAX_DEPTH} levels deep")
    first = docs[0] if docs else None
    if not isinstance(first, dict):
        raise ResultFormatError(f"{shown}: not a benchmark result (expected a JSON object)")
    try:
        if "benchmarks" in first and "metadata" in first:
            run = _guidellm(first, shown)
        elif "schema_version" in first and "aiperf_version" in first or "time_to_first_token" in first and \
                isinstance(first.get("time_to_first_token"), dict) and "input_config" in first:
            run = _aiperf(first, shown)
        elif "version" in first and "results" in first and "run" in first:
            run = _llmd(docs, shown)
        elif "levels" in first and "engine" in first and "status" in first:
            run = _sweep(first, shown)
        elif "metrics" in first and isinstance(first.get("metrics"), dict) and "metadata" in first and \
                isinstance(first.get("metadata"), dict) and "request_start_ns" in first["metadata"]:
            run = _aiperf_records(docs, shown)
        elif "mean_ttft_ms" in first and ("model_id" in first or "num_prompts" in first):
            run = _vllm(docs, shown)
        elif "mean_ttft_ms" in first and "backend" in first:
            run = _sglang(docs, shown)
        else:
            raise ResultFormatError(f"{shown}: not a result of GuideLLM, AIPerf, vllm bench serve, SGLang "
                                    "bench_serving, an llm-d benchmark report or an advisor sweep")
    except ResultFormatError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
        raise ResultFormatError(f"{shown}: a field is missing or of the wrong type ({_clip(str(err), 80)})") from None
    if not run.levels:
        raise ResultFormatError(f"{shown}: no load level with a measured request")
    if len(run.levels) > MAX_LEVELS:
        raise ResultFormatError(f"{shown}: {len(run.levels)} levels (at most {MAX_LEVELS})")
    for lv in run.levels:
        _check_level(lv, shown)
        if lv.requests_ok == 0:  # every request failed: the tools still write 0 for the figures, which were not
            for name in _FIGURES:  # measured ("not measured" is None, never 0)
                setattr(lv, name, None)
    return run


def _parse(text: str, shown: str) -> list[Any]:
    """JSON (one object, or JSON Lines: vllm --append-result, SGLang's file), else YAML (GuideLLM and llm-d write it;
    several documents allowed). NaN is refused here; SGLang's bare Infinity (its default request rate) is kept."""
    def constant(tok: str):
        if tok == "NaN":
            raise ResultFormatError(f"{shown}: NaN where a figure should be")
        return math.inf if tok == "Infinity" else -math.inf

    stripped = text.lstrip()
    try:
        if stripped.startswith(("{", "[")):
            try:
                doc = json.loads(text, parse_constant=constant)
                return doc if isinstance(doc, list) else [doc]
            except json.JSONDecodeError:
                lines = [ln for ln in text.splitlines() if ln.strip()]
                if len(lines) > MAX_LEVELS:
                    raise ResultFormatError(f"{shown}: {len(lines)} lines (at most {MAX_LEVELS} runs)") from None
                try:
                    return [json.loads(ln, parse_constant=constant) for ln in lines]
                except json.JSONDecodeError as err:
                    raise ResultFormatError(f"{shown}: not valid JSON ({_clip(err.msg, 60)} at line "
                                            f"{err.lineno})") from None
        import yaml

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        docs = []
        for i, doc in enumerate(yaml.load_all(text, Loader=loader)):
            if i >= MAX_LEVELS:
                raise ResultFormatError(f"{shown}: more than {MAX_LEVELS} YAML documents")
            docs.append(doc)
        return docs
    except RecursionError:
        raise ResultFormatError(f"{shown}: nested too deeply") from None
    except ResultFormatError:
        raise
    except Exception as err:  # yaml.YAMLError and its scanner's own errors
        raise ResultFormatError(f"{shown}: neither JSON nor YAML ({_clip(type(err).__name__, 40)})") from None


def nesting_depth(node: object, limit: int) -> int:
    """How deep a parsed JSON/YAML document nests, stopping at limit + 1; a node shared through YAML aliases is
    walked once, so an alias bomb costs its size on disk, not its expansion (answers files, benchmark files)."""
    stack, seen, worst = [(node, 1)], set(), 0
    while stack:
        cur, d = stack.pop()
        worst = max(worst, d)
        if worst > limit:
            return worst
        if isinstance(cur, (dict, list)) and id(cur) not in seen:
            seen.add(id(cur))
            stack.extend((c, d + 1) for c in (cur.values() if isinstance(cur, dict) else cur))
    return worst


def _clip(text: str, limit: int) -> str:
    text = "".join(ch if ch.isprintable() else "?" for ch in str(text))
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _num(v: Any) -> float | None:
    """A figure as a float; None for missing; bools and strings other than numbers are not figures."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return None
    return None


def _get(d: Any, *path: str) -> Any:
    for p in path:
        if not isinstance(d, dict):
            return None
        d = d.get(p)
    return d


_FIGURES = {"ttft_ms_mean": "ms", "ttft_ms_p50": "ms", "ttft_ms_p95": "ms", "ttft_ms_p99": "ms",
            "itl_ms_mean": "ms", "itl_ms_p50": "ms", "tpot_ms_mean": "ms", "output_tps": "tps",
            "requests_per_s": "tps", "input_tokens": "tokens", "output_tokens": "tokens", "duration_s": "ms"}


def _check_level(lv: ImportedLevel, shown: str) -> None:
    """Every figure finite, not negative and within FIGURE_MAX; a level that measured something."""
    where = f"concurrency {lv.concurrency}" if lv.concurrency else (
        f"rate {lv.request_rate_rps:g}/s" if lv.request_rate_rps else "a level")
    for name, kind in _FIGURES.items():
        v = getattr(lv, name)
        if v is None:
            continue
        if not math.isfinite(v) or v < 0 or v > FIGURE_MAX[kind]:
            raise ResultFormatError(f"{shown}: {name} = {_clip(repr(v), 30)} at {where} cannot be a measurement")
    for name, cap in (("concurrency", FIGURE_MAX["users"]), ("requests_ok", FIGURE_MAX["count"]),
                      ("requests_failed", FIGURE_MAX["count"])):
        v = getattr(lv, name)
        if v is not None and not 0 <= v <= cap:
            raise ResultFormatError(f"{shown}: {name} = {v} at {where} cannot be a measurement")
    r = lv.request_rate_rps
    if r is not None and (math.isnan(r) or r <= 0 or r > FIGURE_MAX["rate"]):
        raise ResultFormatError(f"{shown}: request rate {_clip(repr(r), 30)} at {where} cannot be a measurement")
    if lv.requests_ok == 0 and not lv.requests_failed:
        raise ResultFormatError(f"{shown}: no request completed at {where}")


def _int(v: Any) -> int | None:
    f = _num(v)
    if f is None or not math.isfinite(f):
        return None
    return int(round(f))


def _rate(v: Any) -> float | None:
    """A request rate as the tools write it: "inf" / Infinity (everything at once) is no rate."""
    f = _num(v)
    return None if f is None or math.isinf(f) else f


# GuideLLM --------------------------------------------------------------------------------------------

def _guidellm(doc: dict, shown: str) -> ImportedRun:
    meta = doc.get("metadata") or {}
    version = _int(meta.get("version"))
    if version not in (1, 2):
        raise ResultFormatError(f"{shown}: GuideLLM report version {_clip(repr(meta.get('version')), 20)} "
                                "(read: versions 1 and 2)")
    tool = meta.get("guidellm_version")
    spec = _get(doc, "config", "spec") or {}
    args = doc.get("args") or {}
    model = None
    levels = []
    made = None
    for b in (doc.get("benchmarks") or [])[:MAX_LEVELS + 1]:
        cfg = b.get("config") or {}
        model = model or _get(cfg, "backend", "model") or _get(spec, "backend", "model") or args.get("model")
        st = cfg.get("strategy") or {}
        kind = st.get("type_")
        m = b.get("metrics") or {}
        totals = m.get("request_totals") or {}
        lv = ImportedLevel(requests_ok=_int(totals.get("successful")) or 0,
                           requests_failed=(_int(totals.get("errored")) or 0) + (_int(totals.get("incomplete")) or 0))
        if kind == "synchronous":
            lv.concurrency = 1
        elif kind == "concurrent":
            lv.concurrency = _int(st.get("streams"))
        elif kind in ("constant", "poisson", "async"):
            lv.request_rate_rps = _rate(st.get("rate"))
        elif kind == "throughput":  # everything at once, up to its cap
            lv.concurrency = _int(_get(cfg, "profile", "max_concurrency")) or None
            if lv.concurrency is None:
                continue  # an unbounded burst: no load level the prediction can be set at
        else:
            continue

        def stat(name: str, key: str = "mean") -> float | None:
            s = _get(m, name, "successful")
            if not isinstance(s, dict) or not _int(s.get("count")):
                return None
            return _num(s.get(key)) if key in ("mean", "median") else _num(_get(s, "percentiles", key))

        lv.ttft_ms_mean, lv.ttft_ms_p50 = stat("time_to_first_token_ms"), stat("time_to_first_token_ms", "p50")
        lv.ttft_ms_p95, lv.ttft_ms_p99 = stat("time_to_first_token_ms", "p95"), stat("time_to_first_token_ms", "p99")
        lv.itl_ms_mean, lv.itl_ms_p50 = stat("inter_token_latency_ms"), stat("inter_token_latency_ms", "p50")
        lv.tpot_ms_mean = stat("time_per_output_token_ms")
        lv.input_tokens, lv.output_tokens = stat("prompt_token_count"), stat("output_token_count")
        lv.output_tps = _num(_get(m, "output_tokens_per_second", "total", "mean"))
        lv.requests_per_s = _num(_get(m, "requests_per_second", "total", "mean"))
        lv.duration_s = _num(b.get("duration"))
        start = _num(b.get("start_time"))
        if made is None and start and math.isfinite(start) and 0 < start < 4e9:
            import datetime as dt

            made = dt.datetime.fromtimestamp(start, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        levels.append(lv)
    return ImportedRun(format="guidellm", format_version=f"GuideLLM report v{version}"
                       + (f" (guidellm {_clip(tool, 20)})" if tool else ""), tool_version=_clip(tool, 40) if tool
                       else None, file_name=shown, model=_clip(model, 300) if model else None, made_at=made,
                       levels=levels, notes=["bf_guidellm_weighted"])


# AIPerf ----------------------------------------------------------------------------------------------

def _aiperf(doc: dict, shown: str) -> ImportedRun:
    ic = doc.get("input_config") or {}
    models = _get(ic, "models", "items") or []
    model = (models[0].get("name") if models and isinstance(models[0], dict) else None) or \
        next(iter(_get(ic, "endpoint", "model_names") or []), None)
    phase = next((p for p in (ic.get("phases") or []) if isinstance(p, dict) and p.get("kind") == "profiling"), {})
    loadgen = ic.get("loadgen") or {}
    conc = _int(phase.get("concurrency") if phase else loadgen.get("concurrency"))
    rate = _rate(phase.get("rate") if phase else loadgen.get("request_rate"))
    kind = phase.get("type") if phase else None

    def v(tag: str, key: str = "avg") -> float | None:
        block = doc.get(tag)
        return _num(block.get(key)) if isinstance(block, dict) else None

    for tag in ("time_to_first_token", "inter_token_latency"):
        unit = _get(doc, tag, "unit")
        if unit is not None and unit != "ms":
            raise ResultFormatError(f"{shown}: AIPerf's {tag} in {_clip(unit, 20)} (read: ms)")
    lv = ImportedLevel(concurrency=conc if kind in (None, "concurrency") or not rate else None,
                       request_rate_rps=rate if kind not in (None, "concurrency") else None,
                       requests_ok=_int(v("request_count")) or 0, requests_failed=_int(v("error_request_count")) or 0,
                       ttft_ms_mean=v("time_to_first_token"), ttft_ms_p50=v("time_to_first_token", "p50"),
                       ttft_ms_p95=v("time_to_first_token", "p95"), ttft_ms_p99=v("time_to_first_token", "p99"),
                       tpot_ms_mean=v("inter_token_latency"), itl_ms_mean=v("inter_token_latency"),
                       itl_ms_p50=v("inter_token_latency", "p50"), output_tps=v("output_token_throughput"),
                       requests_per_s=v("request_throughput"), input_tokens=v("input_sequence_length"),
                       output_tokens=v("output_sequence_length"), duration_s=v("benchmark_duration"))
    if lv.concurrency is None and lv.request_rate_rps is None:
        raise ResultFormatError(f"{shown}: AIPerf's input_config names neither a concurrency nor a request rate")
    ver = doc.get("aiperf_version")
    return ImportedRun(format="aiperf", format_version=f"AIPerf profile export schema "
                       f"{_clip(doc.get('schema_version') or '?', 10)}" + (f" (aiperf {_clip(ver, 20)})" if ver else ""),
                       tool_version=_clip(ver, 40) if ver else None, file_name=shown,
                       made_at=_clip(doc.get("start_time"), 40) if doc.get("start_time") else None,
                       model=_clip(model, 300) if model else None, levels=[lv],
                       notes=["bf_aiperf_itl"])


def _pct(xs: list[float], q: float) -> float | None:
    """The q-quantile with linear interpolation (as probes/metrics.py and the tools compute theirs)."""
    if not xs:
        return None
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def _aiperf_records(docs: list, shown: str) -> ImportedRun:
    """AIPerf's per-request profile_export.jsonl (one MetricRecordInfo per line): the profiling phase's requests as one
    level, its figures computed from every request (failed ones counted, not in the figures). Its concurrency is not
    in the records: a user's answer, or the summary JSON beside it, says it."""
    ttft, itl, osl, isl, starts, ends = [], [], [], [], [], []
    ok = failed = 0
    for d in docs:
        if not isinstance(d, dict) or not isinstance(d.get("metrics"), dict):
            raise ResultFormatError(f"{shown}: a line that is not an AIPerf record")
        meta = d.get("metadata") or {}
        if meta.get("benchmark_phase", "profiling") != "profiling":
            continue  # warm-up requests are not measured
        if d.get("error"):
            failed += 1
            continue
        ok += 1
        m = d["metrics"]

        def val(tag: str, unit: str | None = None) -> float | None:
            x = m.get(tag)
            if not isinstance(x, dict):
                return None
            if unit is not None and x.get("unit") not in (None, unit):
                raise ResultFormatError(f"{shown}: AIPerf's {tag} in {_clip(x.get('unit'), 20)} (read: {unit})")
            return _num(x.get("value"))

        for xs, v in ((ttft, val("time_to_first_token", "ms")), (itl, val("inter_token_latency", "ms")),
                      (osl, val("output_sequence_length")), (isl, val("input_sequence_length"))):
            if v is not None:
                xs.append(v)
        s, e = _num(meta.get("request_start_ns")), _num(meta.get("request_end_ns"))
        if s is not None and e is not None:
            starts.append(s)
            ends.append(e)
    if len(docs) > MAX_LEVELS * 1000:
        raise ResultFormatError(f"{shown}: more than {MAX_LEVELS * 1000:,} records")
    span_s = (max(ends) - min(starts)) / 1e9 if starts and ends and max(ends) > min(starts) else None
    lv = ImportedLevel(requests_ok=ok, requests_failed=failed,
                       ttft_ms_mean=sum(ttft) / len(ttft) if ttft else None, ttft_ms_p50=_pct(ttft, 0.5),
                       ttft_ms_p95=_pct(ttft, 0.95), ttft_ms_p99=_pct(ttft, 0.99),
                       itl_ms_mean=sum(itl) / len(itl) if itl else None, itl_ms_p50=_pct(itl, 0.5),
                       tpot_ms_mean=sum(itl) / len(itl) if itl else None,
                       input_tokens=sum(isl) / len(isl) if isl else None,
                       output_tokens=sum(osl) / len(osl) if osl else None,
                       output_tps=sum(osl) / span_s if span_s and osl else None,
                       requests_per_s=ok / span_s if span_s else None, duration_s=span_s)
    return ImportedRun(format="aiperf", format_version="AIPerf per-request records (profile_export.jsonl)",
                       file_name=shown, levels=[lv], notes=["bf_aiperf_itl", "bf_aiperf_records"])


# vllm bench serve ------------------------------------------------------------------------------------

def _pct_key(d: dict, metric: str, p: int) -> float | None:
    return _num(d.get(f"p{p}_{metric}_ms"))


def _vllm(docs: list, shown: str) -> ImportedRun:
    levels = []
    first = docs[0]
    for d in docs:
        if not isinstance(d, dict) or "mean_ttft_ms" not in d:
            raise ResultFormatError(f"{shown}: a line that is not a vllm bench serve result")
        n = _int(d.get("num_prompts"))
        ok = _int(d.get("completed")) or 0
        failed = _int(d.get("failed"))
        if failed is None and n is not None:
            failed = max(0, n - ok)  # 0.11 and before: no `failed` key
        levels.append(ImportedLevel(
            concurrency=_int(d.get("max_concurrency")), request_rate_rps=_rate(d.get("request_rate")),
            requests_ok=ok, requests_failed=failed,
            input_tokens=(_num(d.get("total_input_tokens")) or 0) / ok if ok else None,
            output_tokens=(_num(d.get("total_output_tokens")) or 0) / ok if ok else None,
            ttft_ms_mean=_num(d.get("mean_ttft_ms")), ttft_ms_p50=_num(d.get("median_ttft_ms")),
            ttft_ms_p95=_pct_key(d, "ttft", 95), ttft_ms_p99=_pct_key(d, "ttft", 99),
            itl_ms_mean=_num(d.get("mean_itl_ms")), itl_ms_p50=_num(d.get("median_itl_ms")),
            tpot_ms_mean=_num(d.get("mean_tpot_ms")), output_tps=_num(d.get("output_throughput")),
            requests_per_s=_num(d.get("request_throughput")), duration_s=_num(d.get("duration"))))
    notes = []
    if first.get("backend"):
        notes.append(f"bf_vllm_backend|{_clip(first['backend'], 30)}")
    if any(lv.concurrency is None and lv.request_rate_rps is None for lv in levels):
        notes.append("bf_burst")
    date = str(first.get("date") or "")
    made = f"{date[:4]}-{date[4:6]}-{date[6:8]}" if re.fullmatch(r"\d{8}-\d{6}", date) else None
    return ImportedRun(format="vllm-bench", format_version="vllm bench serve --save-result"
                       + (" (0.11 or earlier: no 'failed' key)" if "failed" not in first else ""), file_name=shown,
                       model=_clip(first.get("model_id"), 300) if first.get("model_id") else None, made_at=made,
                       levels=[lv for lv in levels if lv.concurrency or lv.request_rate_rps] or levels, notes=notes)


# SGLang bench_serving --------------------------------------------------------------------------------

def _sglang(docs: list, shown: str) -> ImportedRun:
    levels, info = [], {}
    for d in docs:
        if not isinstance(d, dict) or "mean_ttft_ms" not in d:
            raise ResultFormatError(f"{shown}: a line that is not an SGLang bench_serving result")
        info = d.get("server_info") if isinstance(d.get("server_info"), dict) else info
        ok = _int(d.get("completed")) or 0
        levels.append(ImportedLevel(
            concurrency=_int(d.get("max_concurrency")), request_rate_rps=_rate(d.get("request_rate")),
            requests_ok=ok, requests_failed=None,
            input_tokens=(_num(d.get("total_input_tokens")) or 0) / ok if ok else None,
            output_tokens=(_num(d.get("total_output_tokens")) or 0) / ok if ok else None,
            ttft_ms_mean=_num(d.get("mean_ttft_ms")), ttft_ms_p50=_num(d.get("median_ttft_ms")),
            ttft_ms_p95=_pct_key(d, "ttft", 95), ttft_ms_p99=_pct_key(d, "ttft", 99),
            itl_ms_mean=_num(d.get("mean_itl_ms")), itl_ms_p50=_num(d.get("median_itl_ms")),
            tpot_ms_mean=_num(d.get("mean_tpot_ms")), output_tps=_num(d.get("output_throughput")),
            requests_per_s=_num(d.get("request_throughput")), duration_s=_num(d.get("duration"))))
    model = info.get("model_path") if info else None
    tp = _int(info.get("tp_size")) if info else None
    return ImportedRun(format="sglang-bench", format_version="SGLang bench_serving JSONL", file_name=shown,
                       engine="sglang" if info else None,
                       engine_version=_clip(info.get("version"), 40) if info.get("version") else None,
                       model=_clip(model, 300) if model else None, tensor_parallel=tp, levels=levels,
                       notes=["bf_sglang_no_failures"])


# llm-d benchmark report ------------------------------------------------------------------------------

def _stat(s: Any, key: str, unit_to_ms: dict[str, float]) -> float | None:
    if not isinstance(s, dict):
        return None
    f = unit_to_ms.get(str(s.get("units")))
    v = _num(s.get(key))
    return None if f is None or v is None else v * f


_TIME = {"ms": 1.0, "s": 1000.0}
_GEN = {"ms/token": 1.0, "s/token": 1000.0}


def _llmd(docs: list, shown: str) -> ImportedRun:
    run = None
    for stage, d in enumerate(docs):
        if not isinstance(d, dict):
            raise ResultFormatError(f"{shown}: a YAML document that is not an llm-d benchmark report")
        version = str(d.get("version"))
        if version not in ("0.2", "0.2.1"):
            raise ResultFormatError(f"{shown}: llm-d benchmark report version {_clip(version, 10)} "
                                    "(read: 0.2 and 0.2.1)")
        stack = _get(d, "scenario", "stack") or []
        eng = next((c.get("standardized") for c in stack if isinstance(c, dict) and
                    _get(c, "standardized", "kind") == "inference_engine"), None) or {}
        load = _get(d, "scenario", "load", "standardized") or {}
        agg = _get(d, "results", "request_performance", "aggregate") or {}
        req, lat, thr = agg.get("requests") or {}, agg.get("latency") or {}, agg.get("throughput") or {}
        total, fails = _int(req.get("total")) or 0, _int(req.get("failures")) or 0
        inc = _int(req.get("incomplete")) or 0
        conc = load.get("concurrency")
        ttft = lat.get("time_to_first_token")
        itl = lat.get("inter_token_latency")
        lv = ImportedLevel(
            concurrency=_int(conc) if _num(conc) is not None and math.isfinite(_num(conc)) else None,
            request_rate_rps=_rate(load.get("rate_qps")), requests_ok=max(0, total - fails - inc),
            requests_failed=fails + inc,
            input_tokens=_num(_get(req, "input_length", "mean")), output_tokens=_num(_get(req, "output_length", "mean")),
            ttft_ms_mean=_stat(ttft, "mean", _TIME), ttft_ms_p50=_stat(ttft, "p50", _TIME),
            ttft_ms_p95=_stat(ttft, "p95", _TIME), ttft_ms_p99=_stat(ttft, "p99", _TIME),
            itl_ms_mean=_stat(itl, "mean", _GEN), itl_ms_p50=_stat(itl, "p50", _GEN),
            tpot_ms_mean=_stat(lat.get("time_per_output_token"), "mean", _GEN),
            output_tps=_num(_get(thr, "output_token_rate", "mean")), requests_per_s=_num(_get(thr, "request_rate", "mean")))
        if lv.input_tokens is None and _get(load, "input_seq_len", "value") is not None:
            lv.input_tokens = _num(_get(load, "input_seq_len", "value"))
        if lv.output_tokens is None and _get(load, "output_seq_len", "value") is not None:
            lv.output_tokens = _num(_get(load, "output_seq_len", "value"))
        if run is None:
            acc = eng.get("accelerator") or {}
            tool = str(eng.get("tool") or "").lower()
            par = acc.get("parallelism") or {}
            gpu = acc.get("model")
            count = _int(acc.get("count"))
            run = ImportedRun(format="llmd-report", format_version=f"llm-d benchmark report v{version}",
                              tool_version=_clip(load.get("tool_version"), 40) if load.get("tool_version") else None,
                              file_name=shown, engine=ENGINE_NAMES.get(tool),
                              engine_version=_clip(eng.get("tool_version"), 40) if eng.get("tool_version") else None,
                              model=_clip(_get(eng, "model", "name"), 300) if _get(eng, "model", "name") else None,
                              gpu=_clip(gpu, 120) if gpu and count else None, gpu_count=count or None,
                              tensor_parallel=_int(par.get("tp")),
                              made_at=_clip(_get(d, "run", "time", "start"), 40) if _get(d, "run", "time", "start")
                              else None)
            if load.get("tool"):
                run.notes.append(f"bf_measured_with|{_clip(load['tool'], 40)}")
            if tool and run.engine is None:
                run.notes.append(f"bf_engine_unknown|{_clip(tool, 40)}")
        run.levels.append(lv)
    if run is None:
        raise ResultFormatError(f"{shown}: an empty llm-d benchmark report")
    return run


# our own sweep ---------------------------------------------------------------------------------------

def _sweep(doc: dict, shown: str) -> ImportedRun:
    from pydantic import ValidationError

    from probes.sweep_result import SweepResult

    try:
        sw = SweepResult.model_validate(doc)
    except ValidationError as err:
        raise ResultFormatError(f"{shown}: not a valid advisor sweep ({_clip(err.errors()[0]['msg'], 60)})") from None
    levels = []
    for i, lv in enumerate(sw.levels):
        if lv.status != "ok":
            continue
        res = sw.results[i] if i < len(sw.results) else None
        ok = max(1, lv.requests_ok)
        levels.append(ImportedLevel(
            concurrency=lv.concurrency, requests_ok=lv.requests_ok, requests_failed=lv.errors + lv.requests_incomplete,
            input_tokens=res.prompt_tokens_total / ok if res is not None and res.prompt_tokens_total else None,
            output_tokens=res.output_tokens_total / ok if res is not None and res.output_tokens_total else None,
            ttft_ms_mean=lv.ttft_ms.mean, ttft_ms_p50=lv.ttft_ms.p50, ttft_ms_p95=lv.ttft_ms.p95,
            ttft_ms_p99=lv.ttft_ms.p99, itl_ms_mean=lv.itl_ms.mean, itl_ms_p50=lv.itl_ms.p50,
            output_tps=lv.output_tps_total, requests_per_s=lv.requests_per_s))
    engine = sw.engine if sw.engine in ENGINE_NAMES.values() else None
    return ImportedRun(format="sweep", format_version="inference-advisor sweep", file_name=shown, engine=engine,
                       model=_clip(Path(sw.model).name, 300) if sw.model else None,
                       gpu=None, made_at=_clip(sw.started_at, 40) if sw.started_at else None, levels=levels,
                       notes=[f"bf_sweep_device|{_clip(sw.device, 60)}"] if sw.device else [])


# ----------------------------------------------------------------------------------------------- writing

def _llmd_stat(units: str, p: Any, scale: float = 1.0) -> dict | None:
    """An llm-d Statistics block from our Percentiles (mean required: p50 stands in when the mean was not kept)."""
    mean = p.mean if p.mean is not None else p.p50
    if mean is None:
        return None
    out = {"units": units, "mean": mean * scale}
    for k in ("p50", "p95", "p99"):
        v = getattr(p, k)
        if v is not None:
            out[k] = v * scale
    return out


def _entries(result: Any) -> list[dict]:
    """Each measured run of a ProbeResult or SweepResult as the fields a report needs: from the level's full result
    where the sweep kept it, else from the level's summary and the sweep's first_* fields."""
    from probes.result import ProbeResult
    from probes.sweep_result import SweepResult

    def of(r) -> dict:
        s, ok = r.settings, max(1, r.requests_ok)
        return {"engine": r.engine if r.engine != "endpoint" else (r.server_kind or "endpoint"),
                "version": r.engine_version or r.server_version, "model": r.model, "started_at": r.started_at,
                "duration_s": r.duration_s, "concurrency": s.concurrency if s else 1,
                "settings": s.model_dump(mode="json", exclude={"extra"}) if s else {},
                "sd": s.input_tokens_sd if s else None, "backend": r.backend_settings or {},
                "prompt": (r.prompt_tokens_total or 0) / ok, "output": (r.output_tokens_total or 0) / ok,
                "total": r.requests_total, "errors": r.errors, "incomplete": r.requests_incomplete,
                "ttft": r.ttft_ms, "itl": r.itl_ms, "tps": r.output_tps_total, "rps": r.requests_per_s}

    if isinstance(result, ProbeResult):
        return [of(result)] if result.ok else []
    if not isinstance(result, SweepResult):
        raise TypeError("a ProbeResult or SweepResult")
    full = {r.settings.concurrency: r for r in result.results if r.ok and r.settings is not None}
    toks = result.first_tokens or [0, 0]
    out = []
    for lv in result.levels:
        if lv.status != "ok":
            continue
        if lv.concurrency in full:
            out.append(of(full[lv.concurrency]))
            continue
        fs = result.first_settings or {}
        out.append({"engine": result.engine if result.engine != "endpoint" else (result.first_server_kind or
                    "endpoint"), "version": None, "model": result.model, "started_at": result.started_at,
                    "duration_s": None, "concurrency": lv.concurrency, "settings": {**fs, "concurrency": lv.concurrency},
                    "sd": fs.get("input_tokens_sd"), "backend": result.first_backend_settings or {},
                    "prompt": float(toks[0] or 0), "output": float(toks[1] or 0) if len(toks) > 1 else 0.0,
                    "total": lv.requests_total, "errors": lv.errors, "incomplete": lv.requests_incomplete,
                    "ttft": lv.ttft_ms, "itl": lv.itl_ms, "tps": lv.output_tps_total, "rps": lv.requests_per_s})
    return out


def llmd_reports(result: Any, tool_version: str, accelerator: str, accelerator_count: int = 0) -> list[dict]:
    """Our ProbeResult, or each ok level of a SweepResult, as an llm-d benchmark report v0.2.1 (one per level, stage =
    its index, as llm-d's own converters write a sweep). accelerator: what ran it (the GPU's name, or the CPU's model
    with accelerator_count 0). Fields we did not measure are left out, never written as 0."""
    import hashlib

    out = []
    for stage, r in enumerate(_entries(result)):
        uid = hashlib.sha256(f"{r['engine']}|{r['started_at']}|{stage}|{r['model']}".encode()).hexdigest()[:32]
        eng = {"kind": "inference_engine", "tool": str(r["engine"])[:60], "tool_version": str(r["version"] or
               "unknown")[:60], "role": "replica", "replicas": 1,
               "model": {"name": Path(r["model"]).name[:200] if r["model"] else "SmolLM2-135M-Instruct"},
               "accelerator": {"model": accelerator[:200] or "unknown", "count": max(0, int(accelerator_count)),
                               "parallelism": {"tp": 1}}}
        args = {k: v for k, v in r["backend"].items() if isinstance(v, (str, int, float, bool)) and k != "command"}
        load: dict[str, Any] = {"tool": "inference-advisor", "tool_version": tool_version, "source": "random",
                                "stage": stage, "concurrency": max(1, int(r["concurrency"] or 1)),
                                "input_seq_len": {"distribution": "gaussian" if r["sd"] else "fixed",
                                                  "value": r["prompt"]},
                                "output_seq_len": {"distribution": "fixed", "value": r["output"]}}
        if r["sd"]:
            load["input_seq_len"]["std_dev"] = float(r["sd"])
        latency = {k: v for k, v in (("time_to_first_token", _llmd_stat("ms", r["ttft"])),
                                     ("inter_token_latency", _llmd_stat("ms/token", r["itl"]))) if v is not None}
        throughput = {}
        if r["tps"] is not None:
            throughput["output_token_rate"] = {"units": "tokens/s", "mean": r["tps"]}
        if r["rps"] is not None:
            throughput["request_rate"] = {"units": "queries/s", "mean": r["rps"]}
        aggregate: dict[str, Any] = {"requests": {"total": int(r["total"]), "failures": int(r["errors"]),
                                                  "incomplete": int(r["incomplete"])}}
        if latency:
            aggregate["latency"] = latency
        if throughput:
            aggregate["throughput"] = throughput
        native = {k: v for k, v in (r["settings"] or {}).items() if k not in ("prompts_file",)}
        doc = {"version": "0.2.1", "run": {"uid": uid, "description": f"inference-advisor probe, level {stage + 1}"},
               "scenario": {"stack": [{"metadata": {"label": f"{eng['tool']}-0", "cfg_id": uid[:12]},
                                       "standardized": eng, "native": {"args": args}}],
                            "load": {"metadata": {"cfg_id": uid[12:24]}, "standardized": load,
                                     "native": {"args": native}}},
               "results": {"request_performance": {"aggregate": aggregate}}}
        if r["started_at"]:
            doc["run"]["time"] = {"start": r["started_at"]}
            if r["duration_s"]:
                doc["run"]["time"]["duration"] = f"PT{r['duration_s']:.3f}S"
        out.append(doc)
    return out


def _accelerator(device: str | None) -> tuple[str, int]:
    """What ran it, as an llm-d report names the accelerator: the GPU and 1, or this CPU's model and 0."""
    d = (device or "").strip()
    if d and not d.lower().startswith("cpu") and d.lower() != "remote":
        return d[:200], 1
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f.read(1 << 20).splitlines()
                          if ln.startswith("model name")), "")
    except OSError:
        pass
    import platform

    return (f"CPU: {model or platform.machine() or 'unknown'}")[:200], 0


def dump_llmd(result: Any) -> str:
    """llmd_reports as YAML (one document per measured level, "---" between), for `--format llmd-report`."""
    import importlib.metadata as md

    import yaml

    try:
        version = md.version("inference-advisor")
    except md.PackageNotFoundError:
        version = "main"
    device = getattr(result, "device", None) or next((r.device for r in getattr(result, "results", []) if r.device),
                                                     None)
    acc, count = _accelerator(device)
    docs = llmd_reports(result, version, acc, count)
    return yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True) if docs else ""


# llm-d's unit rule per field (its pydantic validators, llmdbenchmark/analysis/benchmark_report/base.py and
# schema_v0_2.py at 8bc9f1dd: the JSON Schema says only "one of the units", the models say which group)
_LLMD_UNITS = {("latency", "time_to_first_token"): {"ms", "s"}, ("latency", "request_latency"): {"ms", "s"},
               ("latency", "time_per_output_token"): {"ms/token", "s/token"},
               ("latency", "normalized_time_per_output_token"): {"ms/token", "s/token"},
               ("latency", "inter_token_latency"): {"ms/token", "s/token"},
               ("throughput", "input_token_rate"): {"tokens/s"}, ("throughput", "output_token_rate"): {"tokens/s"},
               ("throughput", "total_token_rate"): {"tokens/s"}, ("throughput", "request_rate"): {"queries/s"},
               ("requests", "input_length"): {"count", "pixels"}, ("requests", "output_length"): {"count", "pixels"}}


def validate_llmd(doc: dict) -> list[str]:
    """One report's faults against llm-d's own JSON Schema of v0.2.1 (vendored) and its models' unit rules (which the
    JSON Schema does not carry): [] when valid."""
    import jsonschema

    schema = json.loads(LLMD_SCHEMA.read_text(encoding="utf-8"))
    v = jsonschema.Draft202012Validator(schema)
    out = [f"{'/'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message[:200]}"
           for e in sorted(v.iter_errors(doc), key=lambda e: list(e.absolute_path))][:20]
    agg = _get(doc, "results", "request_performance", "aggregate") or {}
    for (group, name), allowed in _LLMD_UNITS.items():
        units = _get(agg, group, name, "units")
        if units is not None and units not in allowed:
            out.append(f"results/request_performance/aggregate/{group}/{name}/units: {_clip(units, 20)} "
                       f"(llm-d allows {', '.join(sorted(allowed))})")
    return out

"""Revisit the recommendation with measurements: SLA met or not, goodput, and whether the advice changes."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from advisor.decide.recommendation import Recommendation
from probes.result import ProbeResult, device_kind, on_another_machine


class EngineVerdict(BaseModel):
    engine: str
    rank: int | None
    measured: bool
    ttft_p95_ms: float | None = None
    target_ms: float
    meets_sla: bool | None = None
    goodput: float | None = None
    output_tps_total: float | None = None
    text: str
    elsewhere: str | None = None  # why this measurement does not speak for the target hardware
    held: str | None = None  # why it cannot change the advice (a busy machine, not served as deployed)
    failed: bool = False  # its latest run is partial or error: "not measured", with the cause in `text`
    run: str | None = None  # the label of the run that decided ("#12 llama.cpp")
    concurrency: int | None = None  # the concurrency that run measured at
    requests: int = 0  # how many requests it ran
    device: str | None = None  # what the run recorded (ProbeResult.device, .model): to pair it with a sweep
    model: str | None = None


class Verdict(BaseModel):
    engines: list[EngineVerdict]
    changes_advice: bool
    summary: str
    # confirmed: the top engine meets the target; changed: another measured engine should lead;
    # missed: the top engine misses and nothing measured meets it; unmeasured: the top engine was not measured;
    # elsewhere: it was measured, but on another kind of device (or GPU) than the target, so that says nothing
    # inconclusive: the target lies within the p95's interval; held: measured, but on a busy machine or not as
    # deployed; failed: its latest run is partial or error
    status: Literal["confirmed", "changed", "missed", "unmeasured", "elsewhere", "inconclusive", "held",
                    "failed"] = "unmeasured"


class TargetDevice(BaseModel):
    """What the advice is for: this machine as detected, or the answers' target hardware."""

    kind: Literal["cpu", "gpu"]
    gpu_name: str | None = None
    gpu_id: str | None = None  # the gpus.yaml id, to compare models however they are written
    label: str  # "2 × L40S", "CPU only"


def target_device(answers, hardware, knowledge, lang: str = "en") -> TargetDevice | None:
    """The device class (and GPU model) the advice is for; None when unknown."""
    from advisor.planner.target import find_gpu

    t = answers.hardware
    if t is not None:
        if t.gpu_vendor == "none":
            return TargetDevice(kind="cpu", label=_t(lang, "CPU only", "纯 CPU"))
        g = find_gpu(t.gpu_model, knowledge)
        name = t.gpu_model or (g.name if g else t.gpu_vendor)
        return TargetDevice(kind="gpu", gpu_name=name, gpu_id=g.id if g else None,
                            label=f"{max(1, t.gpu_count)} × {name}")
    if hardware is None:
        return None
    if hardware.gpus:
        name = hardware.gpus[0].name
        g = find_gpu(name, knowledge)
        return TargetDevice(kind="gpu", gpu_name=name, gpu_id=g.id if g else None,
                            label=_t(lang, f"this machine's {len(hardware.gpus)} × {name}",
                                     f"本机的 {len(hardware.gpus)} × {name}"))
    return TargetDevice(kind="cpu", label=_t(lang, "this machine's CPU", "本机 CPU"))


#: the engine a recognised endpoint server is (ProbeResult.server_kind → engine id): such a run measures that engine,
#: served remotely, and is judged as that engine's run. Not mapped, on purpose: Ollama (built on llama.cpp, but its
#: own server, scheduler and defaults, not llama.cpp's llama-server mode), TGI, LMDeploy and OVMS (engines this advice
#: does not rank); their runs, and unrecognised servers, stay "endpoint"
SERVER_ENGINE = {"vllm": "vllm", "sglang": "sglang", "llama-server": "llama.cpp", "trtllm-serve": "tensorrt-llm"}


def busy_here(res) -> bool:
    """A run (ProbeResult) or sweep measured while this machine's CPU was busy, where that can matter: never for a
    server on another machine, which this machine's load does not slow (walk-3 L13; stored runs kept the flag)."""
    load = getattr(res, "system_load", None)
    return bool(load.busy if load is not None else getattr(res, "busy", False)) and not on_another_machine(res)


def _remote(r: ProbeResult) -> bool:
    return r.engine == "endpoint"


def stands_for(res) -> str:
    """The engine a result is a measurement of: its own, or for an endpoint run the engine of the server it
    recognised (SERVER_ENGINE); "endpoint" for any other server."""
    if res.engine == "endpoint" and getattr(res, "server_kind", None) in SERVER_ENGINE:
        return SERVER_ENGINE[res.server_kind]
    return res.engine


def _server(res) -> str:
    """The server an endpoint run recognised, as its notes name it ("vLLM 0.11.0")."""
    from probes.result import SERVER_NAMES

    return SERVER_NAMES.get(res.server_kind, res.server_kind) + (f" {res.server_version}" if res.server_version
                                                                  else "")


def _endpoint_said(res, label: str, lang: str) -> str | None:
    """What an endpoint run of a recognised server is, said before its figures; None for other runs."""
    if res.engine != "endpoint" or not getattr(res, "server_kind", None):
        return None
    name = _server(res)
    if res.server_kind in SERVER_ENGINE:
        run = f" {label}" if label and label != res.engine else ""
        return _t(lang, f"measured through a remote {name} server (endpoint run{run}; the probe does not see its "
                        "hardware)", f"通过远程 {name} 服务测得（endpoint 运行{run}；探针看不到其硬件）")
    if res.server_kind == "ollama":
        return _t(lang, f"an {name} server: built on llama.cpp, but with its own server, scheduler and defaults, so "
                        "not counted as llama.cpp (whose serving mode here is llama-server)",
                  f"{name} 服务：基于 llama.cpp，但有自己的服务、调度和默认设置，因此不计为 llama.cpp（这里 llama.cpp 的服务方式是 "
                  "llama-server）")
    return _t(lang, f"a {name} server: not an engine this advice ranks", f"{name} 服务：不在本建议排名的引擎之列")


def measured_on(res) -> tuple[str | None, str | None]:
    """("cpu" | "gpu" | "remote" | None, the GPU's name when the result names it) from what the probe recorded
    (a ProbeResult or a SweepResult: anything with a `device`)."""
    return device_kind(res.device)


def mismatch(res, target: TargetDevice | None, knowledge=None, lang: str = "en") -> str | None:
    """Why this measurement does not speak for the target (None when it does, or when that cannot be told)."""
    if target is None:
        return None
    kind, gpu = measured_on(res)
    if kind in (None, "remote"):
        return None
    if kind != target.kind:
        where = _t(lang, "this machine's CPU", "本机 CPU") if kind == "cpu" else \
            _t(lang, f"a GPU ({gpu})" if gpu else "a GPU", f"GPU（{gpu}）" if gpu else "GPU")
        return _t(lang, f"measured on {where}; your target is {target.label}, so this measurement does not speak "
                        "for it", f"实测在{where}上进行；你的目标是 {target.label}，这次测量不能代表目标硬件")
    if kind == "gpu" and gpu and target.gpu_name and knowledge is not None:
        from advisor.planner.target import find_gpu

        g = find_gpu(gpu, knowledge)
        measured_id = g.id if g else gpu.lower()
        if target.gpu_id and measured_id != target.gpu_id:
            return _t(lang, f"measured on {gpu}; your target is {target.label}, so its speed does not speak for it",
                      f"实测在 {gpu} 上进行；你的目标是 {target.label}，其速度不能代表目标硬件")
    return None


def _t(lang: str, en: str, zh: str) -> str:
    return zh if lang == "zh" else en


def _quoted(text: str) -> str:
    """An engine's or server's own words, inside “…” on one line (they are not translated; a reader sees whose)."""
    return " ".join(str(text).replace("“", '"').replace("”", '"').split())[:300]


def not_measured(r: ProbeResult, knowledge=None, lang: str = "en") -> str:
    """Why a run that is not ok measured nothing, in the page's language: "not measured: N of M requests failed:
    “CAUSE”" (the most frequent cause, in the engine's own words), or its reason when no request ran."""
    bad = r.errors + r.requests_incomplete
    s = (lambda key, **kw: knowledge.s(key, lang, **kw)) if knowledge is not None else None  # noqa: E731
    if r.requests_total and bad and r.status in ("partial", "error"):
        cause = _quoted(r.top_cause or r.reason or r.status)
        return s("run_not_measured", bad=bad, total=r.requests_total, cause=cause) if s else \
            f"not measured: {bad} of {r.requests_total} requests failed: “{cause}”"
    if r.status == "cancelled" and r.requests_total:
        return s("run_cancelled_kept", n=r.requests_total, ok=r.requests_ok) if s else \
            f"cancelled by the user; the {r.requests_total} requests that finished are kept ({r.requests_ok} ok)"
    why = _quoted(r.reason or r.status)
    return s("run_not_measured_why", why=why) if s else f"not measured: “{why}”"


GOODPUT_SHARE = 0.9  # an SLA is met when at least this share of all requests (failed ones count) met the target


def _ms(x: float) -> str:
    return f"{x:,.0f}"


def _judge_one(res: ProbeResult, target_ms: float, lang: str) -> tuple[bool | None, str, str | None]:
    """(meets the SLA: True / False / None for inconclusive, its text, why it cannot change the advice or None).

    Goodput first (failed requests are misses), then the p95 with its bootstrap interval; judged against the
    target the run was made with."""
    p95 = res.ttft_ms.p95
    good = res.goodput
    lo, hi = (res.ttft_p95_ci_ms or [p95, p95])[:2] if p95 is not None else (None, None)
    band = (f" [{_ms(lo)}–{_ms(hi)}]" if res.ttft_p95_ci_ms and p95 is not None else "")
    if p95 is None:
        meets = False
    elif lo is not None and lo <= target_ms < hi:
        meets = None
    else:
        meets = p95 <= target_ms and (good is None or good >= GOODPUT_SHARE)
    if meets is None:
        text = _t(lang, f"TTFT p95 {_ms(p95)} ms{band} around the {_ms(target_ms)} ms target: inconclusive (more "
                        "requests would tell)",
                  f"首 token p95 {_ms(p95)} 毫秒{band}，目标 {_ms(target_ms)} 毫秒落在区间内：无法定论（需要更多请求）")
    elif meets:
        text = _t(lang, f"TTFT p95 {_ms(p95)} ms{band} ≤ target {_ms(target_ms)} ms: meets the SLA",
                  f"首 token p95 {_ms(p95)} 毫秒{band} ≤ 目标 {_ms(target_ms)} 毫秒：满足 SLA")
    elif p95 is not None and p95 <= target_ms:
        text = _t(lang, f"TTFT p95 {_ms(p95)} ms ≤ target {_ms(target_ms)} ms, but only {good:.0%} of the requests "
                        f"met it (at least {GOODPUT_SHARE:.0%} must): misses the SLA",
                  f"首 token p95 {_ms(p95)} 毫秒 ≤ 目标 {_ms(target_ms)} 毫秒，但只有 {good:.0%} 的请求达标（至少需要 "
                  f"{GOODPUT_SHARE:.0%}）：未满足 SLA")
    else:
        text = _t(lang, f"TTFT p95 {_ms(p95)} ms{band} > target {_ms(target_ms)} ms: misses the SLA",
                  f"首 token p95 {_ms(p95)} 毫秒{band} > 目标 {_ms(target_ms)} 毫秒：未满足 SLA")
    if good is not None and not (meets is False and p95 is not None and p95 <= target_ms):
        text += _t(lang, f"; goodput {good:.0%}", f"；达标率 {good:.0%}")
    held = None
    if busy_here(res) and res.system_load.collapsed_roofline_pct is not None:
        pct = res.system_load.collapsed_roofline_pct
        held = _t(lang, f"decoded at only {pct:g}% of this machine's memory-bandwidth roofline, so the machine was "
                        "contended during the run: shown, but it cannot change the advice; rerun on an idle machine",
                  f"解码速度仅为本机内存带宽上限的 {pct:g}%，说明运行期间机器被占用：仅供参考，不改变建议；请在空闲时重测")
    elif busy_here(res):
        pct = res.system_load.other_processes_cpu_percent or 0
        held = _t(lang, f"measured on a busy machine (other processes used {pct:.0f}% of the CPU): shown, but it "
                        "cannot change the advice; rerun on an idle machine",
                  f"测量时机器繁忙（其他进程占用 {pct:.0f}% 的 CPU）：仅供参考，不改变建议；请在空闲时重测")
    conc = res.settings.concurrency if res.settings else 1
    if res.engine == "llama.cpp" and res.serving_mode == "in-process" and conc > 1:
        held = _t(lang, f"served one request at a time in-process at concurrency {conc}; llama.cpp deployed with "
                        "llama-server batches them, so this run cannot change the advice",
                  f"在并发 {conc} 下于进程内逐个服务；以 llama-server 部署的 llama.cpp 会批处理，因此这次运行不改变建议")
    return meets, text, held


def _run_facts(res: ProbeResult, label: str) -> dict:
    """What a run was (its label, load, size, device and model), kept on its verdict so a sweep can cite it."""
    return {"run": label, "concurrency": res.settings.concurrency if res.settings else None,
            "requests": res.requests_total, "device": res.device, "model": res.model}


def revisit(rec: Recommendation, results: list[ProbeResult], target_ms: float, lang: str = "en",
            labels: list[str] | None = None, target: TargetDevice | None = None, knowledge=None) -> Verdict:
    """The latest measured result per engine decides (results come oldest first; labels, e.g. "#12 llama.cpp", name
    the run that decided); a ranked engine that misses its SLA loses the lead to the best-ranked engine that meets
    it. Each run is judged against the TTFT target it was run with (a different current target is said beside it).
    A run that is not ok (partial, error: more than 10 % of its requests failed) is "not measured" with its cause.
    A result measured on another device than `target`, on a busy machine, or (llama.cpp) one at a time where it
    would batch, is shown with that caveat and never changes the advice. An endpoint run whose server was recognised as
    an engine (SERVER_ENGINE) is that engine's run, labelled as made through a remote server; with a target it is
    "elsewhere" (the probe does not see the server's hardware). Other endpoint runs stay "endpoint"."""
    latest: dict[str, ProbeResult] = {}
    failed: dict[str, ProbeResult] = {}
    label: dict[str, str] = {}
    count: dict[str, int] = {}
    for i, r in enumerate(results):
        e = stands_for(r)  # an endpoint run of a recognised vLLM server is a vLLM run
        if r.status == "ok":
            if e in latest and _remote(r) and not _remote(latest[e]):
                continue  # a run through a remote server never replaces one made here on the engine itself
            latest[e] = r
            failed.pop(e, None)
            label[e] = labels[i] if labels and i < len(labels) else r.engine
            count[e] = count.get(e, 0) + 1
        elif r.status in ("partial", "error") and e not in latest:
            failed[e] = r
            label[e] = labels[i] if labels and i < len(labels) else r.engine
    rank = {r.engine: i for i, r in enumerate(rec.ranking, 1)}
    out = []
    for engine in [r.engine for r in rec.ranking] + sorted((set(latest) | set(failed)) - set(rank)):
        res = latest.get(engine)
        if res is None:
            bad = failed.get(engine)
            text = (not_measured(bad, knowledge, lang) + _t(lang, f" (run {label[engine]})", f"（运行 {label[engine]}）")
                    if bad else _t(lang, "not measured", "未实测"))
            said = _endpoint_said(bad, label[engine], lang) if bad else None
            if said:
                text = said + _t(lang, ": ", "：") + text
            out.append(EngineVerdict(engine=engine, rank=rank.get(engine), measured=False, target_ms=target_ms,
                                     text=text, failed=bad is not None,
                                     **(_run_facts(bad, label[engine]) if bad else {})))
            continue
        run_target = res.ttft_target_ms if res.ttft_target_ms is not None else target_ms
        meets, text, held = _judge_one(res, run_target, lang)
        said = _endpoint_said(res, label[engine], lang)
        if said:
            text = said + _t(lang, ": ", "：") + text
        if abs(run_target - target_ms) > 0.5:
            text += _t(lang, f" (run for a {_ms(run_target)} ms target; yours is now {_ms(target_ms)} ms)",
                       f"（该次运行的目标为 {_ms(run_target)} 毫秒；你现在的目标是 {_ms(target_ms)} 毫秒）")
        if count[engine] > 1:
            text += _t(lang, f" (run {label[engine]}, the latest of {count[engine]} runs of {engine})",
                       f"（取 {engine} 的 {count[engine]} 次运行中最新的一次：{label[engine]}）")
        elsewhere = mismatch(res, target, knowledge, lang)
        if elsewhere is None and target is not None and engine != res.engine and measured_on(res)[0] == "remote":
            # a remote server's hardware is not seen: its run speaks for that server, never for the target
            elsewhere = _t(lang, "measured on a remote server, on hardware the probe does not see; it speaks for that "
                                 f"server, not for your target {target.label}",
                           f"在远程服务器上测得，探针看不到其硬件；它只代表该服务器，不能代表你的目标 {target.label}")
        if elsewhere:
            text += _t(lang, ": ", "：") + elsewhere
        if held:
            text += _t(lang, "; ", "；") + held
        out.append(EngineVerdict(engine=engine, rank=rank.get(engine), measured=True, ttft_p95_ms=res.ttft_ms.p95,
                                 target_ms=run_target, meets_sla=meets, goodput=res.goodput,
                                 output_tps_total=res.output_tps_total, text=text, elsewhere=elsewhere, held=held,
                                 **_run_facts(res, label[engine])))
    top = rec.ranking[0].engine if rec.ranking else None
    by = {v.engine: v for v in out}
    changes = False
    status = "unmeasured"
    t = by.get(top) if top else None
    if t is not None and t.measured and t.elsewhere:
        status = "elsewhere"
        summary = _t(lang, f"{top}: {t.elsewhere}. The advice stands on the plan; measure on the target "
                           "hardware to confirm it.",
                     f"{top}：{t.elsewhere}。建议仍以容量规划为准；请在目标硬件上实测以确认。")
    elif t is not None and t.measured and t.meets_sla:
        status = "confirmed"
        summary = _t(lang, f"The measurement confirms the advice: {top} meets the TTFT target.",
                     f"实测支持该建议：{top} 满足首 token 目标。")
    elif t is not None and t.measured and t.meets_sla is None:
        status = "inconclusive"
        summary = _t(lang, f"{top}: the measurement is inconclusive against the target (it lies within the p95's "
                           "interval); the advice stands. Run more requests to decide.",
                     f"{top}：实测结果相对目标无法定论（目标落在 p95 的区间内）；建议不变。请增加请求数再测。")
    elif t is not None and t.measured and t.held:
        status = "held"
        summary = _t(lang, f"{top}: {t.held}.", f"{top}：{t.held}。")
    elif t is not None and t.measured:
        better = next((v.engine for v in out if v.measured and v.meets_sla and v.rank and not v.elsewhere
                       and not v.held), None)
        if better:
            changes, status = True, "changed"
            summary = _t(lang, f"The measurement changes the advice: {top} misses the TTFT target and "
                               f"{better} meets it: prefer {better} on this hardware.",
                         f"实测改变了建议：{top} 未达到首 token 目标，而 {better} 达到；在该硬件上优先选择 {better}。")
        else:
            status = "missed"
            summary = _t(lang, f"{top} misses the TTFT target and no measured engine meets it: revisit the "
                               "hardware, the model size or the target.",
                         f"{top} 未达到首 token 目标，且没有已测引擎达到：请重新考虑硬件、模型大小或目标。")
    elif t is not None and t.failed:
        status = "failed"
        summary = _t(lang, f"{top}: {t.text}.", f"{top}：{t.text}。")
    else:
        summary = _t(lang, "The top-ranked engine has not been measured yet.", "排名第一的引擎尚未实测。")
    return Verdict(engines=out, changes_advice=changes, summary=summary, status=status)

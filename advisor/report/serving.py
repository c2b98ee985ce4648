"""The predicted serving performance of each engine (EnginePlan.serving) as rows, plain text (CLI) and Markdown
(report, page); the serving-memory sentence per engine. Pure: no Streamlit, no figures (charts.serving_chart).

One table definition for all three. An engine without a prediction keeps its row, with why in the "how it serves"
cell; an engine whose weights do not even load is not predicted (a replica that cannot start serves nobody).
"""
from __future__ import annotations

from advisor.knowledge.load import Knowledge
from advisor.planner.capacity import NO_DECODE, NO_SERVING_FIT
from advisor.planner.perf import beyond_window, cpu_without_flops
from advisor.planner.types import EnginePlan, Plan, ServingPlan
from advisor.report.mdtext import fold, md_escape

DASH = "—"


def predicted(plan: Plan) -> dict[str, ServingPlan]:
    """The engines with a prediction to show, in the plan's order."""
    return {e: p.serving for e, p in plan.engines.items() if p.serving is not None and p.loads is not False}


def _f(x: float | int | None, digits: int = 1) -> str:
    """A figure: `digits` decimals below 100, none above (a 134,100 ms TTFT needs no decimal); one below 10
    whatever `digits` says (a 4 ms TTFT is not "4")."""
    if x is None:
        return DASH
    if abs(x) >= 100 or (digits == 0 and abs(x) >= 10):
        return f"{x:,.0f}"
    return f"{x:,.{max(digits, 1)}f}"


def _usd(x: float | None) -> str:
    if x is None:
        return DASH
    return f"${x:,.2f}" if x >= 0.1 else f"${x:.3g}"


def _pct(band: float) -> str:
    return f"±{round(band * 100)}%"


def why_not(p: EnginePlan, plan: Plan, knowledge: Knowledge, lang: str) -> str:
    """One short cell: why an engine has no prediction."""
    if p.device == "none":
        key = "srv_why_none"
    elif p.loads is False:
        key = "srv_why_no_fit"
    elif p.device == "gpu+cpu":
        key = "srv_why_offload"
    elif plan.model.architecture in NO_DECODE:
        key = "srv_why_no_decode"
    elif plan.model.modality in NO_SERVING_FIT:
        key = "srv_why_speech"
    elif beyond_window(p.typical_tokens, plan.model.max_context):
        key = "srv_why_window"
    elif p.decode_tps_upper_bound is None:
        key = "srv_why_no_bw"
    elif cpu_without_flops(p.device, plan.target):
        key = "srv_why_no_cpu_flops"
    else:
        key = "srv_why_other"
    return knowledge.s(key, lang)


def label_text(sv: ServingPlan, knowledge: Knowledge, lang: str) -> str:
    """"fitted ±25%", "rough ±75%", "measured ±15%"; the measured-silicon predictor's three bands (tok/s, ITL,
    TTFT), which differ (in the reader's language)."""
    head = f"{knowledge.s(f'val_plan_label_{sv.label}', lang)} {_pct(sv.band)}"
    if sv.evidence is not None:  # the user's own benchmark file recalibrated it: its band, one for every figure
        return knowledge.s("srv_label_evidence", lang, band=_pct(sv.band))
    # the capacities and the fleet rest on TTFT, which is rough on its own where that band is borrowed (too few TTFT
    # figures for this engine or class) even when the figures' evidence is fitted: the cell says so beside TTFT
    ttft_rough = sv.own_label == "rough" and sv.label in ("fitted", "silicon")
    if sv.label == "silicon" and sv.band_itl is not None and sv.band_ttft is not None:
        key = "srv_label_silicon_ttft" if sv.ttft_fixed_ms is not None else \
            "srv_label_silicon_rough" if ttft_rough else "srv_label_silicon"
        return knowledge.s(key, lang,
                           label=knowledge.s("val_plan_label_silicon", lang),
                           tps=_pct(sv.band), itl=_pct(sv.band_itl), ttft=_pct(sv.band_ttft))
    if ttft_rough and sv.band_itl is not None and sv.band_ttft is not None:
        return knowledge.s("srv_label_ttft_rough", lang, label=knowledge.s(f"val_plan_label_{sv.label}", lang),
                           rough=knowledge.s("val_plan_label_rough", lang),
                           tps=_pct(sv.band), itl=_pct(sv.band_itl), ttft=_pct(sv.band_ttft))
    if sv.label in ("fitted", "rough") and sv.band_itl is not None and sv.band_ttft is not None and \
            (sv.band_itl, sv.band_ttft) != (sv.band, sv.band):  # each metric's held-out p80 (bench/fit_serving.py)
        return knowledge.s("srv_label_bands", lang, label=knowledge.s(f"val_plan_label_{sv.label}", lang),
                           tps=_pct(sv.band), itl=_pct(sv.band_itl), ttft=_pct(sv.band_ttft))
    return head


def _name(knowledge: Knowledge, engine: str) -> str:
    return knowledge.engines[engine].name if engine in knowledge.engines else engine


def rate_lines(plan: Plan, knowledge: Knowledge, lang: str) -> list[str]:
    """The figures at the answers' open-loop request rate, one line per predicted engine (plain text)."""
    s = knowledge.s
    out = []
    for e, sv in predicted(plan).items():
        if not sv.request_rate_rps:
            continue
        name = _name(knowledge, e)
        rate = f"{sv.request_rate_rps:g}"
        lv = sv.at_rate
        if sv.at_rate_saturated or lv is None:
            out.append(s("srv_rate_saturated", lang, engine=name, rate=rate))
        else:
            out.append(s("srv_rate_line", lang, engine=name, rate=rate, n=f"{lv.concurrency:,}",
                         ttft=_f(lv.ttft_ms_p95, 0), itl=_f(lv.itl_ms_p50), tps=_f(lv.output_tps)))
    return out


def pd_lines(plan: Plan, knowledge: Knowledge, lang: str) -> list[str]:
    """With an ITL target: whether prefill/decode disaggregation pays for each engine that can split, with both
    sides' GPUs and figures and the band's slow end (plain text; advisor.planner.disagg)."""
    s = knowledge.s
    out = []
    for e, sv in predicted(plan).items():
        d = sv.disaggregation
        if d is None:
            continue
        name = _name(knowledge, e)
        link = s(f"srv_pd_link_{d.link}", lang) if d.link in ("nvlink", "infiniband", "roce") else \
            s("srv_pd_link_ethernet", lang)
        out.append(s(f"srv_pd_{d.verdict}", lang, engine=name, p=d.prefill_workers or 0, d=d.decode_workers or 0,
                     g=d.gpus_per_worker, gpus=_f(d.gpus, 0), ttft=_f(sv.ttft_target_ms, 0), itl=_f(d.itl_target_ms, 0),
                     pt=_f(d.ttft_ms_p95, 0), pitl=_f(d.itl_ms), kv=_f(d.kv_transfer_ms), link=link,
                     agpus=_f(d.aggregated_gpus, 0), ar=d.aggregated_replicas or 0, ag=d.aggregated_gpus_per_replica or 0,
                     at=_f(d.aggregated_ttft_ms_p95, 0), aitl=_f(d.aggregated_itl_ms_p95), sg=_f(d.slow_gpus, 0),
                     sag=_f(d.slow_aggregated_gpus, 0), band=_pct(sv.own_band)))
    return out


def leaner_lines(plan: Plan, knowledge: Knowledge, lang: str) -> list[str]:
    """Where smaller replicas than the row's (the plan's own layout, which the bundle deploys) also meet the target
    with fewer GPUs: one line per engine saying so, with its TTFT and cost (plain text)."""
    s = knowledge.s
    out = []
    for e, sv in predicted(plan).items():
        f = sv.leaner
        if f is None:
            continue
        name = _name(knowledge, e)
        fleet = (s("srv_fleet_gpu", lang, r=f"{f.replicas:,}") if f.gpus_per_replica == 1
                 else s("srv_fleet_gpus", lang, r=f"{f.replicas:,}", g=f.gpus_per_replica))
        fleet += _split_label(f.tensor_parallel, f.attention_dp, s, lang)
        out.append(s("srv_leaner", lang, engine=name, fleet=fleet, gpus=f"{f.fleet_gpus:,}",
                     ttft=_f(f.ttft_ms_p95, 0), usd=_f(f.fleet_usd_per_hour, 2), row=f"{sv.fleet_gpus or 0:,}"))
    return out


def predictor_lines(plan: Plan, knowledge: Knowledge, lang: str) -> list[str]:
    """Which predictor made each engine's figures, and where the measured-silicon one and our model disagree
    beyond their bands: one line per engine with a prediction (plain text: the caller escapes it)."""
    s = knowledge.s
    out = []
    for e, sv in predicted(plan).items():
        name = _name(knowledge, e)
        if sv.predictor != "serving-model":
            key = "srv_pred_silicon_dp" if sv.attention_dp > 1 and sv.evidence is None else "srv_pred_silicon"
            line = s(key, lang, engine=name, predictor=sv.predictor) if sv.ttft_fixed_ms is None \
                else s("srv_pred_silicon_ttft", lang, engine=name, predictor=sv.predictor, fixed=f"{sv.ttft_fixed_ms:g}")
            cc = sv.cross_check
            if cc is not None and sv.disagree:
                names = "、".join if lang == "zh" else ", ".join
                line += s("srv_pred_disagree", lang, users=f"{sv.users:,}", ttft=_f(cc.ttft_ms_p50, 0),
                          itl=_f(cc.itl_ms_p50), tps=_f(cc.output_tps),
                          which=names(s(f"srv_fig_{x}", lang) for x in sv.disagree))
            elif cc is not None:
                line += s("srv_pred_agree", lang)
        elif sv.label == "measured" and sv.measured_sweep_at:  # the sweep that made "measured" is named
            line = s("srv_pred_measured", lang, engine=name, at=sv.measured_sweep_at[:25],
                     n=sv.measured_levels or "—", change=sv.measured_change or "—")
        else:
            line = s("srv_pred_ours", lang, engine=name)
            if sv.predictor_note:
                line += s("srv_pred_ours_why", lang, why=s(f"srv_aic_why_{sv.predictor_note}", lang))
        if sv.host_bound:  # the host's streaming, not the GPU, sets the step at these users (whichever predictor;
            # llama.cpp's server borrows the floor the batching engines' served runs earned)
            line += s("srv_pred_host_bound_borrowed" if e == "llama.cpp" else "srv_pred_host_bound", lang,
                      users=f"{sv.users:,}", ms=f"{knowledge.aiconfigurator.host_ms_per_seq:g}")
        mode = knowledge.serving.modes.get(e)
        if mode is not None and mode.deploy_note is not None:  # what the prediction assumes and the bundle does not
            line += " " + mode.deploy_note.get(lang)
        if sv.evidence is not None:  # the user's own benchmark file recalibrated it: named, with its levels
            ev = sv.evidence
            line += " " + s("srv_pred_evidence", lang, engine=name, file=ev.file, date=ev.made_at or "—",
                            n=ev.levels, band=f"{round(ev.band * 100)} %")
        out.append(line)
    return out


def capacity_text(sv: ServingPlan, p: EnginePlan | None = None, knowledge: Knowledge | None = None,
                  lang: str = "en") -> str:
    """Users one replica holds within the target: "96 (87–117)", the band's ends in brackets when they differ; with
    "on 4 GPUs" when the plan's replica (what the capacity is for) is not the fleet's. A capacity bound by the KV pool
    (or the batch cap) says so instead of its band, "124 (KV-bound: 121 run at once, the rest queue)": past what one
    step holds the users queue, so the band's ends sit a user or two apart however rough the figures are (walk-3 L5)."""
    if sv.capacity is None:
        return DASH
    lo, hi = sv.capacity_low, sv.capacity_high
    text = f"{sv.capacity:,}"
    if sv.capacity_bound and sv.running_cap and knowledge is not None:
        text = knowledge.s(f"srv_capacity_{sv.capacity_bound}_bound", lang, cap=text, n=f"{sv.running_cap:,}")
    elif lo is not None and hi is not None and not lo == hi == sv.capacity:
        text += f"（{lo:,}–{hi:,}）" if lang == "zh" else f" ({lo:,}–{hi:,})"
    if p is not None and knowledge is not None and p.gpus_used > 1 and p.gpus_used != sv.gpus_per_replica:
        text = knowledge.s("srv_capacity_on", lang, cap=text, g=p.gpus_used)
    return text


def fleet_text(sv: ServingPlan, knowledge: Knowledge, lang: str) -> str:
    """"2 × 4 GPUs (TP 4)", "3 machines" (CPU), a range "1–2 × …" when the band's slow end needs more replicas."""
    s = knowledge.s
    if sv.ttft_target_ms is None:
        return DASH
    if sv.replicas is None:
        return s("srv_fleet_none", lang)
    more = sv.replicas_high and sv.replicas_high != sv.replicas
    r = f"{sv.replicas:,}" + (f"–{sv.replicas_high:,}" if more else "")
    if sv.gpus_per_replica <= 0:
        return s("srv_fleet_machine", lang) if r == "1" else s("srv_fleet_machines", lang, r=r)
    text = (s("srv_fleet_gpu", lang, r=r) if sv.gpus_per_replica == 1
            else s("srv_fleet_gpus", lang, r=r, g=sv.gpus_per_replica))
    return text + _split_label(sv.tensor_parallel, sv.attention_dp, s, lang)


def _split_label(tp: int, dp: int, s, lang: str) -> str:
    """" (TP 8)", or " (DP 8 + EP 8)" for data-parallel attention with expert parallelism; nothing for one GPU."""
    if dp > 1:
        return s("srv_fleet_dp_ep", lang, n=dp)
    return s("srv_fleet_tp", lang, tp=tp) if tp > 1 else ""


def serving_rows(plan: Plan, knowledge: Knowledge, lang: str, excluded: frozenset[str] = frozenset()
                 ) -> tuple[list[str], list[list[str]]]:
    """One row per engine: name, how it serves, TTFT p95 and ITL p50 at Q1's users on one replica, its output
    tok/s (all users), users per replica within the target (band), the fleet for Q1's users, its $/h and $ per
    million output tokens, and the prediction's label with its band. No prediction: why, in the second cell.
    excluded: engines the recommendation excluded (cannot run as asked): their figures stay, as what the engine would
    do, with that said beside how it serves (a V100 reader saw vLLM's 141 users and no word that vLLM dropped Volta)."""
    s = knowledge.s
    first = next(iter(plan.engines.values()), None)
    header = s("srv_cols", lang, users=f"{first.concurrency:,}" if first else DASH).split("|")
    shown = predicted(plan)
    rows = []
    for e, p in plan.engines.items():
        name = _name(knowledge, e)
        sv = shown.get(e)
        if sv is None:
            rows.append([name, why_not(p, plan, knowledge, lang)] + [DASH] * (len(header) - 2))
            continue
        at = sv.at_users
        mode = s(f"srv_mode_{sv.mode}", lang) + (s("srv_excluded", lang) if e in excluded else "")
        rows.append([name, mode,
                     _f(at.ttft_ms_p95 if at else None, 0), _f(at.itl_ms_p50 if at else None),
                     _f(at.output_tps if at else None), capacity_text(sv, p, knowledge, lang),
                     fleet_text(sv, knowledge, lang), _usd(sv.fleet_usd_per_hour), _usd(sv.usd_per_m_output_tokens), label_text(sv, knowledge, lang)])
    return header, rows


def memory_line(p: EnginePlan, knowledge: Knowledge, lang: str) -> str | None:
    """The serving-memory sentence: "16 users of about 2,300 tokens fit (up to 96 such users); one request may use
    up to 131,072 tokens while the others hold theirs", or how many users of that size do fit. None for an engine
    that cannot run here."""
    s = knowledge.s
    if p.device == "none":
        return None
    tokens = f"{p.typical_tokens or p.context_tokens:,}"
    if p.max_concurrency is None:
        return s("srv_memory_unknown", lang)
    if p.loads is False or p.max_concurrency <= 0:
        return s("srv_memory_none", lang, tokens=tokens)
    mode = knowledge.serving.modes[p.engine].mode if p.engine in knowledge.serving.modes else None
    if mode == "sequential":  # it holds one request at a time: how many users "fit" says nothing (walk-3 L11)
        text = s("srv_memory_sequential", lang, tokens=tokens,
                 max=f"{p.max_context_tokens or p.context_tokens:,}")
        return text + ("。" if lang == "zh" else ".")
    alone = p.concurrency == 1  # "1 users … while the others hold theirs" read wrong for one user
    if p.concurrency <= p.max_concurrency:
        text = s("srv_memory_fit_alone" if alone else "srv_memory_fit", lang, users=f"{p.concurrency:,}",
                 tokens=tokens, most=f"{p.max_concurrency:,}")
    else:
        text = s("srv_memory_short", lang, users=f"{p.concurrency:,}", tokens=tokens, most=f"{p.max_concurrency:,}")
    if p.max_context_tokens:
        text += s("srv_memory_one_alone" if alone else "srv_memory_one", lang, max=f"{p.max_context_tokens:,}")
    return text + ("。" if lang == "zh" else ".")


def memory_lines(plan: Plan, knowledge: Knowledge, lang: str) -> list[tuple[str, str]]:
    """(engines, sentence) per distinct sentence: engines that say the same are named together."""
    groups: dict[str, list[str]] = {}
    for e, p in plan.engines.items():
        line = memory_line(p, knowledge, lang)
        if line:
            groups.setdefault(line, []).append(_name(knowledge, e))
    sep = knowledge.s("report_list_sep", lang)
    return [(sep.join(names), line) for line, names in groups.items()]


def memory_markdown(plan: Plan, knowledge: Knowledge, lang: str) -> list[str]:
    """memory_lines as Markdown list items, escaped."""
    colon = knowledge.s("colon", lang)
    return [f"- **{md_escape(names)}**{colon}{md_escape(line)}" for names, line in memory_lines(plan, knowledge, lang)]


def _hardware(plan: Plan, knowledge: Knowledge, lang: str) -> str:
    t = plan.target
    if t.gpu_count:
        return f"{t.gpu_count} × {t.gpu_name or t.gpu_vendor}"
    return knowledge.s("srv_on_cpu", lang) + (f" ({t.cpu_model})" if t.cpu_model and lang != "zh" else
                                              f"（{t.cpu_model}）" if t.cpu_model else "")


def workload_line(plan: Plan, knowledge: Knowledge, lang: str) -> str | None:
    """What was predicted for: model, hardware, users, tokens in and out, the TTFT target (plain text; escape it for
    Markdown). None when no engine has a prediction."""
    sv = next(iter(predicted(plan).values()), None)
    if sv is None:
        return None
    return knowledge.s("srv_workload", lang, model=plan.model.name, hardware=_hardware(plan, knowledge, lang),
                       users=f"{sv.users:,}", input=f"{sv.input_tokens:,}", output=f"{sv.output_tokens:,}",
                       target=_f(sv.ttft_target_ms, 0))


def explanation(knowledge: Knowledge, lang: str) -> str:
    return knowledge.s("srv_explain", lang)


def caption(knowledge: Knowledge, lang: str) -> str:
    """One line for under the table: every figure is a prediction with its band, and what "rough" means."""
    return knowledge.s("srv_caption", lang)


def serving_markdown(plan: Plan, knowledge: Knowledge, lang: str, heading: str = "##",
                     excluded: frozenset[str] = frozenset()) -> str:
    """The report section: heading, what was predicted for, how (one paragraph), the table, the memory lines."""
    s = knowledge.s
    out = [f"{heading} {s('srv_title', lang)}", ""]
    line = workload_line(plan, knowledge, lang)
    out += [md_escape(line) if line else md_escape(s("srv_none_predicted", lang)), ""]
    if line:
        out += [md_escape(explanation(knowledge, lang)), ""]
    header, rows = serving_rows(plan, knowledge, lang, excluded)
    out.append("| " + " | ".join(md_escape(h) for h in header) + " |")
    out.append("|" + "---|" * len(header))
    out += ["| " + " | ".join(md_escape(fold(c)) for c in r) + " |" for r in rows]
    out.append("")
    out += [f"- {md_escape(x)}" for x in rate_lines(plan, knowledge, lang) + leaner_lines(plan, knowledge, lang)
                                    + pd_lines(plan, knowledge, lang)
                                              + predictor_lines(plan, knowledge, lang)]
    out.append("")
    mem = memory_markdown(plan, knowledge, lang)
    if mem:
        out += [f"**{md_escape(s('srv_memory_title', lang))}{s('colon', lang).strip()}**", "", *mem, ""]
    return "\n".join(out)


def serving_text(plan: Plan, knowledge: Knowledge, lang: str = "en") -> list[str]:
    """Plain-text lines for the CLI's `plan --format text`: title, what was predicted for, the table (columns
    aligned), the memory lines and the caption."""
    s = knowledge.s
    out = [s("srv_title", lang)]
    line = workload_line(plan, knowledge, lang)
    out.append("  " + (line or s("srv_none_predicted", lang)))
    header, rows = serving_rows(plan, knowledge, lang)
    widths = [max(_width(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, *rows]:
        out.append(("  " + "  ".join(_pad(str(c), w) for c, w in zip(r, widths))).rstrip())
    out += [f"  - {x}" for x in rate_lines(plan, knowledge, lang) + leaner_lines(plan, knowledge, lang)
                                    + pd_lines(plan, knowledge, lang)
                                              + predictor_lines(plan, knowledge, lang)]
    lines = memory_lines(plan, knowledge, lang)
    if lines:
        out.append(s("srv_memory_title", lang) + s("colon", lang).rstrip())
        out += [f"  - {names}{s('colon', lang)}{text}" for names, text in lines]
    if line:
        out.append(caption(knowledge, lang))
    return out


def _width(text: str) -> int:
    """Terminal columns: a CJK character takes two."""
    return sum(2 if ord(ch) > 0x2E80 else 1 for ch in text)


def _pad(text: str, width: int) -> str:
    return text + " " * (width - _width(text))

"""One click measures the recommended engine (or several, a model path, an endpoint) with live progress.

The job belongs to the server (ui_common.probe_board), not to this tab: it saves each result to the history
the moment it ends, and a reloaded or second tab finds it running, with its progress and Cancel.
"""
import streamlit as st

from advisor.decide import recommend
from advisor.evidence import check_capacity, check_probe, history, revisit, target_device
from advisor.report import latency_chart, link_urls, roofline_chart, run_label, sweep_charts, throughput_chart
from probes.registry import BACKENDS
from probes.result import ProbeSettings
from probes.validation import settings_error
from ui_common import (T, answers, engine_availability, hardware, knowledge, lang, llama_cpu_build_on_gpu_machine,
                       machine, plan_inputs, probe_board, seed)

k = knowledge()
L = lang()
a = answers()
hw = hardware()
ss = st.session_state
board = probe_board()
st.title(T("nav_probe"))

job = board.current
if job is not None:
    ss["watch_job"] = job.id  # a reloaded or second tab takes over the running job's progress
    phase_label = lambda j: T(f"phase_{j.phase}") if f"phase_{j.phase}" in k.strings else j.phase  # noqa: E731

    @st.fragment(run_every=1.0)
    def progress() -> None:
        j = board.current
        if j is None:  # it ended: redraw the whole page with its results
            st.rerun()
        with st.status(T("ui_probe_progress", engine=j.current or "…", i=j.index + 1, n=len(j.settings),
                         phase=phase_label(j)), expanded=True):
            st.progress(j.fraction, text=T("ui_probe_requests", done=j.done_requests, total=j.total_requests)
                        if j.phase == "run" else (j.message[:200] or phase_label(j)))
            if j.cancel.is_set():
                st.caption(T("ui_cancelling"))
            elif st.button(T("ui_cancel"), key="cancel_probe"):
                j.cancel.set()

    progress()
else:
    spec, bench, _ = plan_inputs(a)
    rec = recommend(a, None if a.hardware else hw, k, lang=L, with_flips=False, spec=spec, machine=bench)
    with st.spinner(T("ui_checking_engines")):
        avail = engine_availability()
    local = [e for e in BACKENDS if e != "endpoint"]
    ranked = [r.engine for r in rec.ranking]
    default = next((e for e in ranked if avail.get(e) is None), "llama.cpp")

    def kept(key: str, default):
        """Probe settings survive a visit to another page (widget state alone is dropped)."""
        if key not in ss:
            ss[key] = ss.get(f"{key}_v", default)
        return key

    mode = st.radio(T("ui_probe_what"), ["local", "endpoint"], key=kept("probe_mode", "local"), horizontal=True,
                    format_func={m: T(f"ui_probe_mode_{m}") for m in ("local", "endpoint")}.get)
    if mode == "local":
        if "probe_engines" not in ss:
            ss["probe_engines"] = [e for e in ss.get("probe_engines_v", [default]) if e in local]
        engines = st.multiselect(T("ui_engines_to_probe"), local, key="probe_engines",
                                 format_func={e: e if avail.get(e) is None else f"{e} — {T('ui_unavailable')}"
                                              for e in local}.get)
        ss["probe_engines_v"] = engines
        for e in engines:
            if avail.get(e):
                st.caption(f"**{e}**: {avail[e]}")
        cpu_llama = llama_cpu_build_on_gpu_machine(hw) if "llama.cpp" in engines else None
        if cpu_llama:
            st.caption(cpu_llama)
        model = st.text_input(T("ui_model_path"), key=kept("probe_model", a.model.path or ""), max_chars=4096)
        if not model.strip() and hw.gpus:
            st.caption(T("ui_small_model_on_gpu"))
        endpoint = ""
    else:
        engines, model = ["endpoint"], ""
        endpoint = st.text_input(T("ui_endpoint"), key=kept("probe_endpoint", ""), max_chars=2048,
                                 placeholder="http://127.0.0.1:8000")
    c1, c2, c3 = st.columns(3)
    reqs = c1.number_input(T("ui_requests"), 1, 200, key=kept("probe_requests", 8))
    conc = c2.number_input(T("ui_concurrency"), 1, 64, key=kept("probe_concurrency", min(a.concurrency, 4)))
    toks = c3.number_input(T("ui_max_tokens"), 1, 512, key=kept("probe_tokens", 32))
    drawn = ("probe_model", model) if mode == "local" else ("probe_endpoint", endpoint)
    for key, value in (("probe_mode", mode), drawn, ("probe_requests", reqs), ("probe_concurrency", conc),
                       ("probe_tokens", toks)):
        ss[f"{key}_v"] = value
    sweep_on = st.checkbox(T("ui_sweep_mode"), key=kept("probe_sweep", False))
    ss["probe_sweep_v"] = sweep_on
    if sweep_on:
        levels_text = st.text_input(T("ui_sweep_levels"), key=kept("probe_levels", "1,2,4,8"), max_chars=100)
        ss["probe_levels_v"] = levels_text
    target, here = target_device(a, hw, k, L), target_device(a.model_copy(update={"hardware": None}), hw, k, L)
    if mode == "local" and target and here and (target.kind != here.kind or target.gpu_id != here.gpu_id):
        st.info(T("ui_probe_elsewhere", here=here.label, target=target.label), icon="ℹ️")
    if st.button(T("ui_run_probe"), type="primary", key="run_probe"):
        problems = [settings_error(e, endpoint.strip() or None, int(reqs), int(conc), int(toks), 600.0)
                    for e in engines] if engines else [T("ui_pick_an_engine")]
        problems = [p for p in problems if p]
        levels = None
        if sweep_on:
            try:
                levels = sorted({int(x) for x in levels_text.split(",") if x.strip()})
                if not levels or levels[0] < 1 or levels[-1] > 256:
                    raise ValueError
            except ValueError:
                problems.append(T("ui_sweep_levels_bad", got=levels_text[:100]))
        if problems:
            for p in dict.fromkeys(problems):
                st.error(p)
        else:
            settings = [ProbeSettings(engine=e, model=model.strip() or None, endpoint=endpoint.strip() or None,
                                      requests=int(reqs), concurrency=int(conc), max_tokens=int(toks),
                                      prompt_mix=a.prompt_mix, ttft_target_ms=float(a.ttft_p95_ms), timeout_s=600,
                                      input_tokens=a.model.input_tokens, output_tokens=a.model.output_tokens)
                        for e in engines]
            sweep = None
            if levels:
                plan_max = {e: p.max_concurrency for e, p in rec.plan.engines.items()
                            if p.max_concurrency and a.hardware is None}  # the plan is for this machine only then
                plan_total = {e: p.decode_tps_total_upper_bound for e, p in rec.plan.engines.items()
                              if p.decode_tps_total_upper_bound and a.hardware is None}
                sweep = {"levels": levels, "until_sla": True, "goodput_share": 0.9, "plan_max": plan_max,
                         "plan_total": plan_total}
            started = board.start(settings, on_result=history.save, sweep=sweep, on_sweep=history.save_sweep)
            if started is None:
                st.warning(T("ui_probe_running"))
            else:
                ss["watch_job"] = started.id
                st.rerun()

# ---------------------------------------------------------------- the job this tab watched, when it has ended
done = board.get(ss.get("watch_job"))
if done is not None and not done.running and ss.get("acked_job") != done.id:
    ss["acked_job"] = done.id
    ss["report_runs"] = [rid for rid in done.run_ids if rid is not None]
if done is not None and not done.running:
    for err in done.save_errors:
        st.error(T("ui_not_saved", why=err))
    for i, (rid, r) in enumerate(zip(done.run_ids, done.results)):
        if rid is None:
            st.download_button(T("ui_download_json", run=run_label(None, r.engine)), r.model_dump_json(indent=2),
                               file_name=f"probe-{r.engine}-unsaved.json", mime="application/json",
                               key=f"dl_unsaved_{done.id}_{i}")
def _sweep_section() -> None:
    """The measured capacity: the latest (or chosen) group of sweeps, side by side, against Q1 and with cost."""
    sweeps = history.list_sweeps()
    if not sweeps:
        return
    groups = list(dict.fromkeys(g for _, g, _ in sweeps))
    st.subheader(T("cap_title"))
    labels = {g: " + ".join(sorted({sw.engine for _, gg, sw in sweeps if gg == g})) + f" · {g.split('-')[1]}"
              for g in groups}
    grp = st.selectbox(T("ui_sweep_pick"), groups, format_func=labels.get, key="sweep_group")
    ss["report_sweep"] = grp
    chosen = [sw for _, g, sw in reversed(sweeps) if g == grp]
    names = {e.id: e.name for e in k.engines.values()}
    share = chosen[0].goodput_share if chosen else 0.9
    figs = sweep_charts(chosen, float(a.ttft_p95_ms), share, L, names)
    st.plotly_chart(figs["ttft"], key="sweep_ttft")
    c1, c2 = st.columns(2)
    c1.plotly_chart(figs["goodput"], key="sweep_goodput")
    c2.plotly_chart(figs["tps"], key="sweep_tps")
    v = check_capacity(chosen, a.concurrency, rec.top.engine if rec.top else None, k, L,
                       cores=hw.cpu.usable_cores, gpu_price=a.gpu_usd_per_hour, core_price=a.cpu_core_usd_per_hour)
    (st.warning if v.changes_advice else st.info)(v.summary)
    for line in v.lines:
        st.markdown(f"- {line}")
    cols = T("cap_cols").split("|")
    r1 = lambda x: None if x is None else round(x, 1)  # noqa: E731
    st.dataframe([dict(zip(cols, [r.name, r.capacity, a.concurrency, r1(r.ttft_p95_ms), r1(r.output_tps),
                                  None if r.usd_per_m_tokens is None else round(r.usd_per_m_tokens, 3),
                                  r.plan_max_concurrency, r.stop_reason or ""])) for r in v.rows],
                 hide_index=True, key="sweep_table")
    st.caption(T("ui_sweep_cost_note"))


# ---------------------------------------------------------------- results
runs = history.list_runs()  # first: what it finds wrong with the database is shown just below
for note in dict.fromkeys(history.NOTICES):
    st.warning(note)
history.NOTICES.clear()
if runs:
    by_id = {rid: r for rid, _, r in runs}
    status_label = lambda s: T(f"status_{s}") if f"status_{s}" in k.strings else s  # noqa: E731
    labels = {rid: f"{run_label(rid, r.engine)} · {status_label(r.status)} · {(r.started_at or '')[:19]}"
              for rid, _, r in runs}
    current = [rid for rid in ss.get("report_runs", []) if rid in labels]

    def picked_runs() -> None:
        ss["report_runs"] = list(ss["runs_pick"])

    st.multiselect(T("ui_use_runs"), list(labels), format_func=labels.get, key=seed("runs_pick", current),
                   on_change=picked_runs)
    chosen = sorted(current)  # oldest first: the verdict takes the latest run of each engine
    if chosen:
        st.subheader(T("ui_results"))
        pct = lambda v: None if v is None else round(v * 100)  # noqa: E731
        r1 = lambda v: None if v is None else round(v, 1)  # noqa: E731
        st.dataframe([{T("col_run"): run_label(rid, by_id[rid].engine), T("col_status"): status_label(by_id[rid].status),
                       T("col_ttft_p95"): r1(by_id[rid].ttft_ms.p95), T("col_ttft_p50"): r1(by_id[rid].ttft_ms.p50),
                       T("col_itl_p50"): r1(by_id[rid].itl_ms.p50),
                       T("col_decode_tps"): r1(by_id[rid].decode_tps_per_request.p50),
                       T("col_total_tps"): r1(by_id[rid].output_tps_total), T("col_goodput_pct"): pct(by_id[rid].goodput),
                       T("col_peak_rss"): r1(by_id[rid].peak_rss_mb), T("col_reason"): by_id[rid].reason or "",
                       T("col_serving"): by_id[rid].serving or ""} for rid in chosen],
                     hide_index=True, key="results_table")
        dl = st.columns(min(4, len(chosen)))
        for i, rid in enumerate(chosen):
            dl[i % len(dl)].download_button(T("ui_download_json", run=run_label(rid, by_id[rid].engine)),
                                            by_id[rid].model_dump_json(indent=2), file_name=f"probe-{rid}.json",
                                            mime="application/json", key=f"dl_json_{rid}")
        ok_ids = [rid for rid in chosen if by_id[rid].status == "ok"]
        ok = [by_id[rid] for rid in ok_ids]
        ok_labels = [run_label(rid, by_id[rid].engine) for rid in ok_ids]
        if ok:
            c1, c2 = st.columns(2)
            c1.plotly_chart(latency_chart(ok, "ttft", L, labels=ok_labels), key="ttft_chart")
            c2.plotly_chart(latency_chart(ok, "itl", L, labels=ok_labels), key="itl_chart")
            st.plotly_chart(throughput_chart(ok, L, labels=ok_labels), key="tps_chart")
            checks = [c for c in (check_probe(r, k, hw, machine(), L) for r in ok) if c is not None]
            if checks:
                st.subheader(T("check_title"))
                for c in checks:
                    st.markdown(link_urls(f"- {c.text}"))
                st.plotly_chart(roofline_chart(None, checks, {e.id: e.name for e in k.engines.values()}, L),
                                key="probe_roofline_chart")
            if job is None:
                v = revisit(rec, ok, float(a.ttft_p95_ms), L, labels=ok_labels,
                            target=target_device(a, hw, k, L), knowledge=k)
                st.subheader(T("ui_verdict"))
                {"confirmed": st.success, "changed": st.warning, "missed": st.error}.get(v.status, st.info)(v.summary)
                for e in v.engines:
                    if e.measured:
                        st.markdown(f"- **{e.engine}**: {e.text}")
    if job is None:  # the plan (rec) is only built when no probe is running
        _sweep_section()
    with st.expander(T("ui_history")):
        st.dataframe([{T("col_run"): run_label(rid, r.engine), T("col_status"): status_label(r.status),
                       T("col_started"): (r.started_at or "")[:19], T("col_ttft_p95"): None if r.ttft_ms.p95 is None
                       else round(r.ttft_ms.p95, 1), T("col_total_tps"): None if r.output_tps_total is None
                       else round(r.output_tps_total, 1), T("col_reason"): r.reason or ""} for rid, _, r in runs],
                     hide_index=True)
if st.button(T("ui_go_report"), key="to_report"):
    st.switch_page("pages/5_Report.py")

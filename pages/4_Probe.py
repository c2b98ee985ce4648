"""One click measures the recommended engine (or several, a model path, an endpoint) with live progress.

The job belongs to the server (ui.probe_board), not to this tab: it saves each result to the history
the moment it ends, and a reloaded or second tab finds it running, with its progress and Cancel.

Evidence belongs to its question: this page shows, and the report takes, only the runs and sweeps this browser
session made or the user picked from the history; each is judged against the target it was run with.
"""
import time

import streamlit as st

from advisor.decide import recommend
from advisor.evidence import check_capacity, check_probe, history, hold_collapsed, not_measured, revisit, target_device
from advisor.evidence.conclusion import PageVerdict, page_verdict
from advisor.evidence.sweep_check import check_sweep, recalibrate_all
from advisor.planner import calibration
from probes.bench_formats import MAX_BYTES, dump_llmd
from ui import evidence as ev_ui
from advisor.report.sweep_check import check_markdown, recalibrated_text
from advisor.inputs import answers_id
from advisor.report import (latency_chart, link_urls, md_escape, roofline_chart, run_label, sweep_charts,
                            throughput_chart)
from advisor.report import deploy as dep
from advisor.report import serving_label as report_serving_label
from advisor.deploy import bundle_for
from probes.registry import BACKENDS
from probes.result import ProbeSettings
from probes.served import RUNNABLE, ServeSpec, served_availability
from probes.validation import model_path_problem, settings_error
from ui import (EVIDENCE_MAX_MB, RUNS, SWEEPS, T, answers, build_panel, build_states, engine_availability, file_uploader, hardware, knowledge,
                lang, llama_cpu_build_on_gpu_machine, machine, plan_inputs, probe_board, seed, sync_url)

k = knowledge()
L = lang()
a = answers()
hw = hardware()
ss = st.session_state
board = probe_board()
st.title(T("nav_probe"))
status_label = lambda s: T(f"status_{s}") if f"status_{s}" in k.strings else s  # noqa: E731
CHART = {"displayModeBar": False}


def serving_label(r) -> str:
    return report_serving_label(r, k, L) or "—"


def num(v, digits: int = 1) -> str:
    """A figure for a table cell: "—" when not measured (never "None")."""
    return "—" if v is None else f"{v:,.{digits}f}"


job = board.current
if job is not None:
    if ss.get("run_probe") and ss.get("watch_job") != job.id:  # this tab's click landed while another tab's ran
        st.warning(T("ui_probe_running"))
    ss["watch_job"] = job.id  # a reloaded or second tab takes over the running job's progress
    phase_label = lambda j: T(f"phase_{j.phase}") if f"phase_{j.phase}" in k.strings else j.phase  # noqa: E731

    # each refresh costs the server and the browser CPU, which the probe is measuring: while requests are measured
    # the progress is redrawn every 10 s only (the run's own accounting would count it as other processes)
    measuring = job.phase == "run"

    @st.fragment(run_every=10.0 if measuring else 2.0)
    def progress() -> None:
        j = board.current
        if j is None or (j.phase == "run") != measuring:  # it ended, or measuring began or ended: redraw all
            st.rerun()
        label = T("ui_probe_progress", engine=j.current or "…", i=j.index + 1, n=len(j.settings), phase=phase_label(j))
        if j.levels:
            label += " · " + T("ui_probe_level", i=(j.level or 0) + 1, n=j.levels, c=j.level_c)
        label += " · " + T("ui_probe_elapsed", s=f"{j.elapsed_s:.0f}")
        # a static box, not st.status: its spinner animates, and a browser repainting it takes CPU the probe measures
        with st.container(border=True):
            st.markdown(f":material/hourglass_top: **{md_escape(label)}**")
            left = j.left_s
            st.progress(j.fraction, text=(T("ui_probe_requests", done=j.done_requests, total=j.total_requests)
                                          + (" · " + T("ui_probe_left", s=f"{left:.0f}") if left is not None else ""))
                        if j.phase == "run" else (j.message[:200] or phase_label(j)))
            if j.phase == "run":
                st.caption(T("ui_probe_measuring_quiet"))
            if j.cancel.is_set():
                st.caption(T("ui_cancelling"))

    progress()
    # outside the fragment, with a callback: a click that lands while the page redraws (a phase change) still counts
    if not job.cancel.is_set():
        st.button(T("ui_cancel"), key="cancel_probe", on_click=job.cancel.set)
else:
    spec, bench, _ = plan_inputs(a)
    rec = recommend(a, None if a.hardware else hw, k, lang=L, with_flips=False, spec=spec, machine=bench,
                    calibration=ev_ui.calibrations(a, L))
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

    # seeded on every run (as the checklist's radios are): a radio whose labels change with the language is drawn
    # anew, and kept only where it is missing, the new one showed no option chosen
    mode = st.radio(T("ui_probe_what"), ["local", "endpoint"], horizontal=True,
                    key=seed("probe_mode", ss.get("probe_mode", ss.get("probe_mode_v", "local"))),
                    format_func={m: T(f"ui_probe_mode_{m}") for m in ("local", "endpoint")}.get)
    if mode == "local":
        if "probe_engines" not in ss:
            ss["probe_engines"] = [e for e in ss.get("probe_engines_v", [default]) if e in local]
        engines = st.multiselect(T("ui_engines_to_probe"), local, key="probe_engines", placeholder=T("ui_pick_placeholder"),
                                 format_func={e: e if avail.get(e) is None else f"{e}{T('colon')}{T('ui_unavailable')}"
                                              for e in local}.get)
        ss["probe_engines_v"] = engines
        building = build_states()
        for e in engines:
            if avail.get(e) and building.get(e) not in ("building", "failed", "absent"):
                st.caption(f"**{e}**{T('colon')}{md_escape(avail[e])}")
        if any(building.get(e) != "ready" for e in engines):
            build_panel()  # its progress, redrawn while it runs; the page redraws when it ends
        cpu_llama = llama_cpu_build_on_gpu_machine(hw) if "llama.cpp" in engines else None
        if cpu_llama:
            st.caption(cpu_llama)
        model = st.text_input(T("ui_model_path"), key=kept("probe_model", a.model.path or ""), max_chars=4096)
        if not model.strip() and hw.gpus:
            st.caption(T("ui_small_model_on_gpu"))
        endpoint = api_key = ""
    else:
        engines, model = ["endpoint"], ""
        endpoint = st.text_input(T("ui_endpoint"), key=kept("probe_endpoint", ""), max_chars=2048,
                                 placeholder="http://127.0.0.1:8000")
        # the key is never kept beyond this widget: not in the session's saved settings, the URL, a result or a report
        api_key = st.text_input(T("ui_api_key"), type="password", key="probe_api_key", max_chars=4096,
                                help=T("ui_api_key_help"), autocomplete="off")
    sweep_on = st.checkbox(T("ui_sweep_mode"), key=kept("probe_sweep", False))
    ss["probe_sweep_v"] = sweep_on
    c1, c2, c3 = st.columns(3)
    reqs = c1.number_input(T("ui_requests"), 1, 200, key=kept("probe_requests", 8))
    conc = c2.number_input(T("ui_concurrency"), 1, 64, key=kept("probe_concurrency", min(a.concurrency, 4)),
                           disabled=sweep_on, help=T("ui_sweep_conc_ignored") if sweep_on else None)
    toks = c3.number_input(T("ui_max_tokens"), 1, 512, key=kept("probe_tokens", 32))
    drawn = ("probe_model", model) if mode == "local" else ("probe_endpoint", endpoint)
    for key, value in (("probe_mode", mode), drawn, ("probe_requests", reqs), ("probe_concurrency", conc),
                       ("probe_tokens", toks)):
        ss[f"{key}_v"] = value
    if sweep_on:
        levels_text = st.text_input(T("ui_sweep_levels"), key=kept("probe_levels", "1,2,4,8"), max_chars=100)
        ss["probe_levels_v"] = levels_text
    target, here = target_device(a, hw, k, L), target_device(a.model_copy(update={"hardware": None}), hw, k, L)
    if mode == "local" and target and here and (target.kind != here.kind or target.gpu_id != here.gpu_id):
        st.info(T("ui_probe_elsewhere", here=here.label, target=target.label), icon=":material/info:")
    if st.button(T("ui_run_probe"), type="primary", key="run_probe"):
        problems = [settings_error(e, endpoint.strip() or None, int(reqs), int(conc), int(toks), 600.0)
                    for e in engines] if engines else [T("ui_pick_an_engine")]
        problems = [p for p in problems if p]
        bad_model = model_path_problem(model) if mode == "local" else None
        if bad_model:
            problems.append(T(bad_model[0], **bad_model[1]))
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
                st.error(md_escape(p))
        else:
            settings = [ProbeSettings(engine=e, model=model.strip() or None, endpoint=endpoint.strip() or None,
                                      requests=int(reqs), concurrency=int(conc), max_tokens=int(toks),
                                      prompt_mix=a.prompt_mix, ttft_target_ms=float(a.ttft_p95_ms), timeout_s=600,
                                      input_tokens=a.model.input_tokens, output_tokens=a.model.output_tokens,
                                      answers_id=answers_id(a), asked_concurrency=a.concurrency
                                      ).with_credentials(api_key=api_key.strip() or None)
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

    # ------------------------------------------------------------ measure what you'd deploy: the bundle's server
    st.subheader(T("ui_served_title"))
    st.caption(T("ui_served_caption"))
    servable = [e for e in ranked if e in RUNNABLE] + [e for e in RUNNABLE if e not in ranked]
    srv = st.selectbox(T("ui_served_engine"), servable, key=kept("served_engine", servable[0]),
                       format_func={e: e if served_availability(e) is None else
                                    f"{e}{T('colon')}{T('ui_unavailable')}" for e in servable}.get)
    ss["served_engine_v"] = srv
    # the bundle of the answers' model and workload for THIS machine: a hardware block plans another machine, whose
    # command (its threads, tensor parallel degree, KV space) is not one to start here
    a_here = a if a.hardware is None else a.model_copy(update={"hardware": None})
    plan_here = rec.plan if a.hardware is None else recommend(
        a_here, hw, k, lang=L, with_flips=False, spec=spec, machine=bench, calibration=calibration.load()).plan
    bundle = bundle_for(srv, plan_here, a_here, k, L, hw.cpu.usable_cores)
    srv_why = served_availability(srv)
    if srv_why:
        st.caption(f"**{srv}**{T('colon')}{md_escape(srv_why)}")
    if bundle.status != "ok":
        st.warning(md_escape(bundle.reason or bundle.status))
    else:
        st.code(bundle.command, language="bash", wrap_lines=True)
        if target and here and (target.kind != here.kind or target.gpu_id != here.gpu_id):
            st.info(T("ui_served_for_target", target=target.label, here=here.label), icon=":material/info:")
        srv_levels = st.text_input(T("ui_served_levels"), key=kept("served_levels", "1,2,4"), max_chars=100)
        ss["served_levels_v"] = srv_levels
        if st.button(T("ui_served_run"), key="run_served", disabled=srv_why is not None):
            problems = []
            try:
                s_levels = sorted({int(x) for x in srv_levels.split(",") if x.strip()})
                if not s_levels or s_levels[0] < 1 or s_levels[-1] > 256:
                    raise ValueError
            except ValueError:
                problems.append(T("ui_sweep_levels_bad", got=srv_levels[:100]))
            srv_model = (model.strip() if mode == "local" else "") or (a.model.path or "")
            bad_model = model_path_problem(srv_model) if srv_model else None
            if bad_model:
                problems.append(T(bad_model[0], **bad_model[1]))
            if problems:
                for p in dict.fromkeys(problems):
                    st.error(md_escape(p))
            else:
                spec_srv = ServeSpec(engine=srv, program=bundle.program, args=bundle.template(),
                                     env={e.name: e.value for e in bundle.env}, health=bundle.health or "/health",
                                     bundle_command=bundle.command, model=srv_model or None)
                base = ProbeSettings(engine="endpoint", endpoint="http://127.0.0.1:1", requests=int(reqs),
                                     concurrency=s_levels[0], max_tokens=int(toks), prompt_mix=a.prompt_mix,
                                     ttft_target_ms=float(a.ttft_p95_ms), timeout_s=600,
                                     input_tokens=a.model.input_tokens, output_tokens=a.model.output_tokens,
                                     answers_id=answers_id(a), asked_concurrency=a.concurrency)
                started = board.start([base], sweep={"levels": s_levels, "until_sla": False, "goodput_share": 0.9},
                                      on_sweep=history.save_sweep, served=spec_srv)
                if started is None:
                    st.warning(T("ui_probe_running"))
                else:
                    ss["watch_job"] = started.id
                    st.rerun()

# ---------------------------------------------------------------- the job this tab watched, when it has ended
done = board.get(ss.get("watch_job"))
if done is not None and not done.running and ss.get("acked_job") != done.id:
    ss["acked_job"] = done.id
    if done.sweep is not None:  # a sweep's conclusion is its capacity; its levels stay in the history
        ss[SWEEPS] = [done.group]
        ss.pop("sweeps_pick", None)
        # a quiet sweep measured here recalibrates this machine's efficiency for its engine (user cache), once
        ss["recalibrated"] = [recalibrated_text(c, k, L) for c in recalibrate_all(done.sweeps, k, hw, machine())]
    else:
        ss[RUNS] = [rid for rid in done.run_ids if rid is not None]
        ss.pop("runs_pick", None)
    sync_url()  # at once: F5 right after the run keeps the pick
if done is not None and not done.running:
    for err in dict.fromkeys(done.save_errors):  # a busy history says so once, not once per level
        st.error(T("ui_not_saved", why=err))
    for i, (rid, r) in enumerate(zip(done.run_ids, done.results)):
        if rid is None:
            st.download_button(T("ui_download_json", run=run_label(None, r.engine)), r.model_dump_json(indent=2),
                               file_name=f"probe-{r.engine}-unsaved.json", mime="application/json",
                               key=f"dl_unsaved_{done.id}_{i}", on_click="ignore")
    for i, sw in enumerate(done.sweeps if done.save_errors else []):  # a sweep's summary may be the unsaved one
        st.download_button(T("ui_download_sweep_json", engine=sw.engine), sw.model_dump_json(indent=2),
                           file_name=f"sweep-{sw.engine}-unsaved.json", mime="application/json",
                           key=f"dl_unsaved_sweep_{done.id}_{i}", on_click="ignore")


def _when(group: str) -> str:
    try:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(int(group.split("-")[2])))
    except (IndexError, ValueError, OverflowError, OSError):
        return group


def _view(rec, verdict, cap=None, sweeps=()) -> PageVerdict:
    """One conclusion per engine from the runs' verdict and the sweeps' capacity (advisor.evidence.conclusion)."""
    return page_verdict(verdict, cap, list(sweeps), a.concurrency, rec.top.engine if rec.top else None, k, L,
                        ranked=[r.engine for r in rec.ranking])


def _draw_verdict(view: PageVerdict) -> None:
    """The verdict: its headline, then one line per engine with the runs and sweeps it rests on cited under it."""
    st.subheader(T("ui_verdict"))
    getattr(st, view.tone)(md_escape(view.headline))
    for e in view.engines:
        st.markdown(f"- **{md_escape(e.name)}**{T('colon')}{md_escape(e.text)}"
                    + "".join(f"\n    - {md_escape(x)}" for x in e.cited))


def _sweep_section(rec, verdict) -> PageVerdict:
    """The measured capacity of the sweeps this session made or picked, side by side, against Q1 and with cost.
    Returns the page's verdict: with the runs' verdict (None without runs), one conclusion per engine."""
    listed = history.list_sweeps()
    picked = [g for g in ss.get(SWEEPS, []) if isinstance(g, str)]
    groups = list(dict.fromkeys([*picked, *(g for _, g, _ in listed)]))
    if not groups:
        return _view(rec, verdict)
    st.subheader(T("cap_title"))
    found = {g: [sw for _, gg, sw in history.get_sweeps(groups) if gg == g] for g in groups}
    labels = {g: T("ui_sweep_label", engines=" + ".join(sorted({sw.engine for sw in found.get(g, [])})) or "—",
                   when=_when(g), levels=",".join(str(c) for c in sorted({lv.concurrency for sw in found.get(g, [])
                                                                          for lv in sw.levels})) or "—")
              for g in groups}
    for g in groups:  # a sweep still running, or one a stopped server left behind, says so in its label
        ended = {sw.status for sw in found.get(g, [])} & {"running", "interrupted"}
        if ended:
            labels[g] += " · " + " / ".join(T(f"ui_sweep_status_{x}") for x in sorted(ended))

    def picked_sweeps() -> None:
        ss[SWEEPS] = list(ss["sweeps_pick"])
        sync_url()

    chosen_groups = st.multiselect(T("ui_sweeps_pick"), groups, format_func=labels.get, placeholder=T("ui_pick_placeholder"),
                                   key=seed("sweeps_pick", [g for g in picked if g in groups]), on_change=picked_sweeps)
    others = len([g for g in groups if g not in chosen_groups])
    if others and not chosen_groups:
        st.caption(T("ui_sweeps_hidden", n=others))
    chosen = [sw for g in chosen_groups for sw in found.get(g, [])]
    if not chosen:
        return _view(rec, verdict)
    names = {e.id: e.name for e in k.engines.values()}
    share = chosen[0].goodput_share
    run_target = chosen[0].ttft_target_ms or float(a.ttft_p95_ms)  # each sweep is drawn against its own target
    figs = sweep_charts(chosen, run_target, share, L, names)
    st.plotly_chart(figs["ttft"], key="sweep_ttft", config=CHART)
    c1, c2 = st.columns(2)
    c1.plotly_chart(figs["goodput"], key="sweep_goodput", config=CHART)
    c2.plotly_chart(figs["tps"], key="sweep_tps", config=CHART)
    v = check_capacity(chosen, a.concurrency, rec.top.engine if rec.top else None, k, L,
                       cores=hw.cpu.usable_cores, gpu_price=a.gpu_usd_per_hour, core_price=a.cpu_core_usd_per_hour,
                       target=target_device(a, hw, k, L), target_ms=float(a.ttft_p95_ms), answers_id=answers_id(a))
    view = _view(rec, verdict, v, chosen)
    if view.reconciled:  # with probe runs: the one conclusion per engine is the verdict's, above; none here
        st.caption(md_escape(view.sweep_lead))
    else:
        getattr(st, view.sweep_tone)(md_escape(view.sweep_lead))
    for line in view.sweep_lines:
        st.markdown(f"- {md_escape(line)}")
    for sw in chosen:  # a served sweep: the command that ran here beside the bundle's, with what was changed
        d = sw.deployed
        if d is None or not d.command_line:
            continue
        with st.container(border=True):
            st.markdown(f"**{md_escape(sw.engine)}** · {T('ui_served_ran')}")
            st.code(d.command_line, language="bash", wrap_lines=True)
            st.caption(T("ui_served_bundle"))
            st.code(d.bundle_command, language="bash", wrap_lines=True)
            st.caption(md_escape(T("report_list_sep").join(dep.substituted(d, k, L))) + " · " + T(
                "ui_served_ready", s="—" if d.ready_s is None else f"{d.ready_s:g}",
                stopped=T("ui_yes") if d.stopped else T("ui_no")))
    cols = T("cap_cols").split("|")
    st.dataframe([dict(zip(cols + [T("col_inconclusive")],
                           [r.name, "—" if r.capacity is None else str(r.capacity), str(a.concurrency),
                            num(r.ttft_p95_ms), num(r.output_tps),
                            "—" if r.usd_per_m_tokens is None else f"${r.usd_per_m_tokens:,.3f}",
                            "—" if r.plan_max_concurrency is None else str(r.plan_max_concurrency), r.stop_reason or "",
                            "—" if r.inconclusive_at is None else str(r.inconclusive_at)]))
                  for r in v.rows], hide_index=True, key="sweep_table")
    st.caption(T("ui_sweep_cost_note"))
    llmd = "---\n".join(x for x in (dump_llmd(sw) for sw in chosen) if x)
    if llmd:
        st.download_button(T("ui_download_llmd"), llmd, file_name="sweeps-llmd-report.yaml", mime="application/x-yaml",
                           key="dl_llmd_sweeps", on_click="ignore")
    # predicted beside measured, for what each sweep ran (the prediction from the published fit, or this machine's
    # calibration when an earlier sweep made one)
    st.subheader(T("svc_title"))
    cal = calibration.load()
    shown = False
    for sw in chosen:
        c = check_sweep(sw, k, hw, machine(), a, cal)
        if c is not None and c.levels:
            st.markdown(check_markdown(c, k, L))
            shown = True
    if not shown:
        st.caption(T("svc_none"))
    for line in ss.get("recalibrated") or []:
        st.info(md_escape(line))
    return view


def _evidence_section() -> None:
    """The user's own benchmark files (GuideLLM, AIPerf, vllm bench, SGLang, llm-d) beside the prediction; what a file
    does not say is asked here, once, below it."""
    from advisor.knowledge import ENGINE_IDS
    from advisor.report.evidence import evidence_markdown

    st.subheader(T("ev_section"))
    st.caption(T("ev_upload_help"))
    file_uploader(T("ev_upload"), ["json", "jsonl", "yaml", "yml"], "evidence_upload",
                  lambda: ev_ui.take_upload("evidence_upload"), MAX_BYTES, "JSON, JSONL, YAML", max_mb=EVIDENCE_MAX_MB)
    if ss.get(ev_ui.ERROR):
        st.error(md_escape(ss[ev_ui.ERROR]))
    gpus = [g.name for g in k.gpus.gpus if g.vendor in ("nvidia", "amd", "intel")]
    for c in ev_ui.checks(a, L):
        name = c.run.file_name
        key = f"ev_{abs(hash(name)) % 10**8}"
        with st.container(border=True):
            st.markdown(evidence_markdown(c, k, L))
            s = ev_ui.said(name)
            cols = st.columns(4)
            if c.run.engine is None:
                cols[0].selectbox(T("ev_ask_engine"), ["", *ENGINE_IDS], key=key + "_engine",
                                  index=(["", *ENGINE_IDS].index(s.engine) if s.engine in ENGINE_IDS else 0),
                                  format_func=lambda e: k.engines[e].name if e in k.engines else "—",
                                  on_change=lambda n=name, kk=key: ev_ui.set_said(n, engine=ss[kk + "_engine"] or None))
            if c.run.gpu is None:
                cols[1].selectbox(T("ev_ask_gpu"), ["", *gpus], key=key + "_gpu",
                                  index=([""] + gpus).index(s.gpu) if s.gpu in gpus else 0,
                                  on_change=lambda n=name, kk=key: ev_ui.set_said(n, gpu=ss[kk + "_gpu"] or None))
                cols[2].number_input(T("ev_ask_gpus"), 1, 4096, value=s.gpu_count or 1, key=key + "_gpus",
                                     on_change=lambda n=name, kk=key: ev_ui.set_said(n, gpu_count=int(ss[kk + "_gpus"])))
            if any(lv.concurrency is None and lv.request_rate_rps is None for lv in c.run.levels):
                st.number_input(T("ev_ask_concurrency"), 1, 100_000, value=s.concurrency, key=key + "_conc",
                                on_change=lambda n=name, kk=key: ev_ui.set_said(
                                    n, concurrency=None if ss[kk + "_conc"] is None else int(ss[kk + "_conc"])))
            cols[3].checkbox(T("ev_ask_same_model", model=a.model.name or "—"), value=s.same_model, key=key + "_same",
                             on_change=lambda n=name, kk=key: ev_ui.set_said(n, same_model=bool(ss[kk + "_same"])))
            st.button(T("ev_remove"), key=key + "_rm", on_click=lambda n=name: ev_ui.remove(n))


# ---------------------------------------------------------------- results
verdict = verdict_slot = None  # the runs' verdict, drawn once the sweeps' are known: one conclusion per engine
runs = history.list_runs()  # first: what it finds wrong with the database is shown just below
for note in dict.fromkeys(history.NOTICES):
    st.warning(note)
history.NOTICES.clear()
picked_ids = [rid for rid in ss.get(RUNS, []) if isinstance(rid, int)]
by_id = {rid: r for rid, _, r in runs}
by_id.update(history.get_runs([rid for rid in picked_ids if rid not in by_id]))  # a pick older than the newest 50
if by_id:
    def conc_of(r) -> str:
        return " · " + T("ui_conc_short", c=r.settings.concurrency) if r.settings else ""

    labels = {rid: f"{run_label(rid, r.engine)} · {status_label(r.status)}{conc_of(r)} · {(r.started_at or '')[:19]}"
              for rid, r in sorted(by_id.items(), reverse=True)}
    current = [rid for rid in picked_ids if rid in labels]

    def picked_runs() -> None:
        ss[RUNS] = list(ss["runs_pick"])
        sync_url()

    st.multiselect(T("ui_use_runs"), list(labels), format_func=labels.get, key=seed("runs_pick", current),
                   on_change=picked_runs, placeholder=T("ui_pick_placeholder"))
    chosen = sorted(current)  # oldest first: the verdict takes the latest run of each engine
    if chosen:
        st.subheader(T("ui_results"))
        for rid in chosen:  # a run that measured nothing says why, first, in full
            r = by_id[rid]
            if r.status in ("partial", "error", "unavailable"):
                st.error(T("ui_run_failed", run=run_label(rid, r.engine), why=md_escape(not_measured(r, k, L))))
            elif r.status == "cancelled":
                st.warning(T("ui_run_failed", run=run_label(rid, r.engine), why=md_escape(not_measured(r, k, L))))
        pct = lambda v: "—" if v is None else f"{v * 100:.0f}%"  # noqa: E731
        ci = lambda r: "—" if not r.ttft_p95_ci_ms else f"{r.ttft_p95_ci_ms[0]:,.0f}–{r.ttft_p95_ci_ms[1]:,.0f}"  # noqa: E731
        st.dataframe([{T("col_run"): run_label(rid, by_id[rid].engine), T("col_status"): status_label(by_id[rid].status),
                       T("col_requests_split"): f"{by_id[rid].requests_ok} / {by_id[rid].requests_incomplete} / "
                                                f"{by_id[rid].errors}",
                       T("col_cause"): by_id[rid].top_cause or "",
                       T("col_ttft_p95"): num(by_id[rid].ttft_ms.p95), T("col_ttft_p95_ci"): ci(by_id[rid]),
                       T("col_ttft_p50"): num(by_id[rid].ttft_ms.p50), T("col_itl_p50"): num(by_id[rid].itl_ms.p50),
                       T("col_decode_tps"): num(by_id[rid].decode_tps_per_request.p50),
                       T("col_total_tps"): num(by_id[rid].output_tps_total), T("col_goodput_pct"): pct(by_id[rid].goodput),
                       T("col_target"): num(by_id[rid].ttft_target_ms, 0),
                       T("col_peak_rss"): num(by_id[rid].peak_rss_mb), T("col_serving"): serving_label(by_id[rid])}
                      for rid in chosen], hide_index=True, key="results_table")
        for rid in chosen:  # how each run was served, in words (the table cell is narrow)
            r = by_id[rid]
            if r.requests_total:
                slots = (r.backend_settings or {}).get("parallel_slots")
                st.caption(f"{run_label(rid, r.engine)}{T('colon')}{serving_label(r)}"
                           + (f" ({T('ui_slots', n=slots)})" if slots else "")
                           + (" · " + T("ui_conc_short", c=r.settings.concurrency) if r.settings else ""))
        dl = st.columns(min(4, len(chosen)))
        for i, rid in enumerate(chosen):
            dl[i % len(dl)].download_button(T("ui_download_json", run=run_label(rid, by_id[rid].engine)),
                                            by_id[rid].model_dump_json(indent=2), file_name=f"probe-{rid}.json",
                                            mime="application/json", key=f"dl_json_{rid}", on_click="ignore")
        llmd = "---\n".join(x for x in (dump_llmd(by_id[rid]) for rid in chosen) if x)
        if llmd:  # the field's format: llm-d's viewer and converters read it
            st.download_button(T("ui_download_llmd"), llmd, file_name="probes-llmd-report.yaml",
                               mime="application/x-yaml", key="dl_llmd_runs", on_click="ignore")
        ok_ids = [rid for rid in chosen if by_id[rid].status == "ok"]
        ok = [by_id[rid] for rid in ok_ids]
        ok_labels = [run_label(rid, by_id[rid].engine) for rid in ok_ids]
        if ok:
            c1, c2 = st.columns(2)
            c1.plotly_chart(latency_chart(ok, "ttft", L, labels=ok_labels), key="ttft_chart", config=CHART)
            c2.plotly_chart(latency_chart(ok, "itl", L, labels=ok_labels), key="itl_chart", config=CHART)
            st.plotly_chart(throughput_chart(ok, L, labels=ok_labels), key="tps_chart", config=CHART)
            pairs = [(lab, check_probe(r, k, hw, machine(), L)) for lab, r in zip(ok_labels, ok)]
            pairs = [(lab, c) for lab, c in pairs if c is not None]
            checks = [c for _, c in pairs]
            if checks:
                st.subheader(T("check_title"))
                for lab, c in pairs:  # each line names its run: two runs of one engine are told apart
                    st.markdown(link_urls(f"- **{md_escape(lab)}**{T('colon')}{c.text}"))
                st.plotly_chart(roofline_chart(None, checks, {e.id: e.name for e in k.engines.values()}, L),
                                key="probe_roofline_chart", config=CHART)
        if job is None:
            # a run that collapsed against this machine's roofline is held like a busy one (hold_collapsed)
            held = {id(r): hold_collapsed(r, c, k) for r, c in ((r, check_probe(r, k, hw, machine(), L)) for r in ok)}
            judged = [held.get(id(by_id[rid]), by_id[rid]) for rid in chosen]
            verdict = revisit(rec, judged, float(a.ttft_p95_ms), L,
                              labels=[run_label(rid, by_id[rid].engine) for rid in chosen],
                              target=target_device(a, hw, k, L), knowledge=k)
            verdict_slot = st.container()  # here, under the runs; filled once the sweeps shown are known
if job is None:  # the plan (rec) is only built when no probe is running
    page = _sweep_section(rec, verdict)
    if verdict_slot is not None and page.headline is not None:
        with verdict_slot:
            _draw_verdict(page)
    _evidence_section()
if runs:
    with st.expander(T("ui_history")):
        st.dataframe([{T("col_run"): run_label(rid, r.engine), T("col_status"): status_label(r.status),
                       T("col_requests_split"): f"{r.requests_ok} / {r.requests_incomplete} / {r.errors}",
                       T("col_started"): (r.started_at or "")[:19], T("col_ttft_p95"): num(r.ttft_ms.p95),
                       T("col_total_tps"): num(r.output_tps_total),
                       T("col_reason"): "" if r.status == "ok" else not_measured(r, k, L)}
                      for rid, _, r in runs], hide_index=True)
if st.button(T("ui_go_report"), key="to_report"):
    st.switch_page("pages/5_Report.py")

"""One click measures the recommended engine (or several, a model path, an endpoint) with live progress."""
import streamlit as st

from advisor import history
from advisor.charts import latency_chart, roofline_chart, throughput_chart
from advisor.planner.probe_check import check_probe
from advisor.rules import recommend
from advisor.verdict import revisit
from probes.jobs import ProbeJob
from probes.registry import BACKENDS
from probes.result import ProbeSettings
from ui_common import T, answers, hardware, knowledge, machine, plan_inputs, setup

lang = setup()
k = knowledge()
a = answers()
hw = hardware()
spec, bench, _ = plan_inputs(a)
rec = recommend(a, None if a.hardware else hw, k, lang=lang, with_flips=False, spec=spec, machine=bench)
installed = {e.engine for e in hw.engines if e.installed}
ranked = [r.engine for r in rec.ranking]
default = next((e for e in ranked if e in installed), "llama.cpp")
st.title(T("ui_run_probe"))

engines = st.multiselect(T("ui_engines_to_probe"), list(BACKENDS), default=[default], key="probe_engines")
c1, c2, c3 = st.columns(3)
reqs = c1.number_input(T("ui_requests"), 1, 200, 8, key="probe_requests")
conc = c2.number_input(T("ui_concurrency"), 1, 64, min(a.concurrency, 4), key="probe_concurrency")
toks = c3.number_input(T("ui_max_tokens"), 1, 512, 32, key="probe_tokens")
model = st.text_input(T("ui_model_path"), key="probe_model")
endpoint = st.text_input(T("ui_endpoint"), key="probe_endpoint")

job: ProbeJob | None = st.session_state.get("probe_job")
if st.button(T("ui_run_probe"), type="primary", key="run_probe"):
    if ProbeJob.busy():
        st.warning(T("ui_probe_running"))
    else:
        chosen = ["endpoint"] if endpoint else engines
        settings = [ProbeSettings(engine=e, model=model or None, endpoint=endpoint or None, requests=int(reqs),
                                  concurrency=int(conc), max_tokens=int(toks), prompt_mix=a.prompt_mix,
                                  ttft_target_ms=float(a.ttft_p95_ms), timeout_s=600) for e in chosen]
        job = ProbeJob.start(settings)
        if job is None:
            st.warning(T("ui_probe_running"))
        else:
            st.session_state["probe_job"] = job
            st.session_state["probe_saved"] = False


@st.fragment(run_every=0.5)
def progress():
    j: ProbeJob | None = st.session_state.get("probe_job")
    if j is None:
        return
    if not j.finished.is_set():
        with st.status(f"{j.current}: {j.phase} {j.message}", expanded=True):
            st.progress(j.fraction, text=f"{j.done_requests}/{j.total_requests}")
            if st.button(T("ui_cancel"), key="cancel_probe"):
                j.cancel.set()
    elif not st.session_state.get("probe_saved"):
        ids = [history.save(r) for r in j.results]
        st.session_state["probe_saved"] = True
        st.session_state["report_runs"] = ids
        st.rerun()


progress()

runs = history.list_runs()
if runs:
    labels = {rid: f"#{rid} {r.engine} {r.status} {r.started_at or ''}" for rid, _, r in runs}
    picked = st.multiselect(T("ui_use_runs"), list(labels), format_func=labels.get, key="runs_pick",
                            default=[rid for rid in st.session_state.get("report_runs", []) if rid in labels])
    st.session_state["report_runs"] = picked
    chosen = [r for rid, _, r in runs if rid in picked]
    if chosen:
        st.subheader(T("ui_results"))
        st.dataframe([{"engine": r.engine, "status": r.status, "reason": r.reason or "",
                       "TTFT p50 ms": r.ttft_ms.p50, "TTFT p95 ms": r.ttft_ms.p95, "ITL p50 ms": r.itl_ms.p50,
                       "decode tok/s": r.decode_tps_per_request.p50, "total tok/s": r.output_tps_total,
                       "goodput": r.goodput, "peak RSS MB": r.peak_rss_mb, "serving": r.serving}
                      for r in chosen], hide_index=True)
        ok = [r for r in chosen if r.status == "ok"]
        if ok:
            c1, c2 = st.columns(2)
            c1.plotly_chart(latency_chart(ok, "ttft", lang), key="ttft_chart")
            c2.plotly_chart(latency_chart(ok, "itl", lang), key="itl_chart")
            st.plotly_chart(throughput_chart(ok, lang), key="tps_chart")
            checks = [c for c in (check_probe(r, k, hw, machine(), lang) for r in ok) if c is not None]
            if checks:
                st.subheader(T("check_title"))
                for c in checks:
                    st.markdown(f"- {c.text}")
                st.plotly_chart(roofline_chart(None, checks, {e.id: e.name for e in k.engines.values()}, lang),
                                key="probe_roofline_chart")
            v = revisit(rec, ok, float(a.ttft_p95_ms), lang)
            st.subheader(T("ui_verdict"))
            (st.warning if v.changes_advice else st.success)(v.summary)
            for e in v.engines:
                if e.measured:
                    st.markdown(f"- **{e.engine}**: {e.text}")
    with st.expander(T("ui_history")):
        st.dataframe([{"id": rid, "engine": r.engine, "status": r.status, "TTFT p95 ms": r.ttft_ms.p95,
                       "total tok/s": r.output_tps_total} for rid, _, r in runs], hide_index=True)
if st.button(T("ui_download_md"), key="to_report"):
    st.switch_page("pages/5_Report.py")

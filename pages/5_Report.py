"""The decision report: the Markdown preview at once, the PDF built when asked (one source for both), each
probe result as JSON, and the CLI line that reproduces it."""
import streamlit as st

from advisor.decide import recommend
from advisor.evidence import check_probe, history, hold_collapsed
from advisor.evidence.sweep_check import check_sweep
from advisor.inputs import dump_answers
from advisor.planner import calibration
from ui import evidence as ev_ui
from advisor.report import (ReportError, build_markdown, chart_images, link_urls, markdown_to_pdf, reproduce_bundle,
                            run_label)
from ui import RUNS, SWEEPS, T, answers, hardware, knowledge, lang, link_path_gate, machine, plan_inputs

L = lang()
k = knowledge()
a = answers()
ss = st.session_state
hw = None if a.hardware else hardware()
link_path_gate(a)
spec, bench, spec_error = plan_inputs(a)
if spec_error:
    st.error(spec_error)
rec = recommend(a, hw, k, lang=L, spec=spec, machine=bench, calibration=ev_ui.calibrations(a, L))
picked = sorted(set(ss.get(RUNS, [])))
history.list_runs(limit=1)  # opens the history, so a database moved aside is said below even with nothing picked
by_id = history.get_runs(picked)  # however old: nothing picked drops out because newer runs came after it
groups = list(ss.get(SWEEPS, []))  # the sweeps this session made or picked on the Probe page; nothing else
sweeps = [sw for _, _, sw in history.get_sweeps(groups)] if groups else []
for note in dict.fromkeys(history.NOTICES):  # a database moved aside, busy, or no folder: said where the runs went
    st.warning(note)
history.NOTICES.clear()
for sw in sweeps:  # a sweep the server stopped during, or one still running, has levels and no capacity
    if sw.status in ("interrupted", "running"):
        st.warning(T(f"ui_sweep_{sw.status}", engine=sw.engine, n=len(sw.levels)))
run_ids = [rid for rid in picked if rid in by_id]
results = [by_id[rid] for rid in run_ids]
found = [(r, check_probe(r, k, hardware(), machine(), L)) for r in results]
checks = [c for _, c in found if c is not None]
results = [hold_collapsed(r, c, k) for r, c in found]  # a run collapsed against the roofline is held, as if busy
grp = tuple(groups)
cores = hardware().cpu.usable_cores
sweep_files = [f"sweep-{i}.json" for i in range(1, len(sweeps) + 1)]
cal = calibration.load()
sweep_checks = [c for c in (check_sweep(sw, k, hardware(), machine(), a, cal) for sw in sweeps) if c is not None]
evidence = ev_ui.checks(a, L)  # the Probe page's benchmark files, in the Markdown and in the PDF alike
md = build_markdown(a, hw, rec, results, k, L, answers_file="answers.yaml", checks=checks, run_ids=run_ids,
                    sweeps=sweeps, cores=cores, sweep_files=sweep_files, sweep_checks=sweep_checks,
                    evidence=evidence)

c1, c2, c3 = st.columns(3)
c1.download_button(T("ui_download_md"), md.encode("utf-8"), file_name=f"report-{L}.md", mime="text/markdown",
                   key="dl_md", on_click="ignore")
c3.download_button(T("ui_download_answers"), dump_answers(a), file_name="answers.yaml", mime="application/x-yaml",
                   key="dl_answers_r", on_click="ignore")
# what the report depends on (not the Markdown itself: its "generated at" minute changes between reruns)
pdf_key = (L, a.model_dump_json(), tuple(run_ids), spec_error, grp,  # a PDF built before a benchmark file came
           tuple(c.model_dump_json() for c in evidence))  # (or was said of) is built again
if ss.get("pdf_for") == pdf_key and ss.get("pdf_bytes"):
    c2.download_button(T("ui_download_pdf"), ss["pdf_bytes"], file_name=f"report-{L}.pdf", mime="application/pdf",
                       key="dl_pdf", type="primary", on_click="ignore")
elif c2.button(T("ui_build_pdf"), key="build_pdf"):
    with st.spinner(T("ui_building_pdf")):
        try:
            images, files = chart_images(rec, results, L, checks, run_ids=run_ids, sweeps=sweeps,
                                         ttft_target_ms=float(a.ttft_p95_ms))
            ss["pdf_bytes"] = markdown_to_pdf(build_markdown(a, hw, rec, results, k, L, images=images,
                                                             answers_file="answers.yaml", checks=checks,
                                                             run_ids=run_ids, sweeps=sweeps, cores=cores,
                                                             sweep_files=sweep_files, sweep_checks=sweep_checks,
                                                             evidence=evidence),
                                              files)
            ss["pdf_for"] = pdf_key
            ss.pop("pdf_error", None)
        except ReportError as err:
            ss["pdf_error"] = str(err)
        except Exception as err:  # charts or fonts failing: say why, the Markdown download stays
            ss["pdf_error"] = f"{type(err).__name__}: {str(err)[:200]}"
    st.rerun()
if ss.get("pdf_error"):
    st.error(T("ui_pdf_failed", why=ss["pdf_error"]))
st.download_button(T("ui_download_bundle"), reproduce_bundle(dump_answers(a), list(zip(run_ids, results)), sweeps, L),
                   file_name=f"reproduce-{L}.zip", mime="application/zip", key="dl_bundle", help=T("ui_bundle_help"), on_click="ignore")
if results:
    dl = st.columns(min(4, len(results)))
    for i, (rid, r) in enumerate(zip(run_ids, results)):
        dl[i % len(dl)].download_button(T("ui_download_json", run=run_label(rid, r.engine)), r.model_dump_json(indent=2),
                                        file_name=f"probe-{rid}.json", mime="application/json", key=f"dl_json_r{rid}", on_click="ignore")
st.divider()
st.markdown(link_urls(md))

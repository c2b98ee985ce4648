"""Download the decision report as Markdown and PDF (one source), and the CLI line that reproduces it."""
import streamlit as st

from advisor import history
from advisor.answers import dump_answers
from advisor.planner.probe_check import check_probe
from advisor.report import ReportError, build_markdown, chart_images, markdown_to_pdf
from advisor.rules import recommend
from ui_common import T, answers, hardware, knowledge, machine, plan_inputs, setup

lang = setup()
k = knowledge()
a = answers()
hw = None if a.hardware else hardware()
spec, bench, _ = plan_inputs(a)
rec = recommend(a, hw, k, lang=lang, spec=spec, machine=bench)
picked = set(st.session_state.get("report_runs", []))
results = [r for rid, _, r in history.list_runs() if rid in picked]
checks = [c for c in (check_probe(r, k, hardware(), machine(), lang) for r in results) if c is not None]
st.title(k.s("report_title", lang))
md = build_markdown(a, hw, rec, results, k, lang, answers_file="answers.yaml",
                    probe_files=[f"probe-{r.engine}.json" for r in results], checks=checks)
c1, c2, c3 = st.columns(3)
c1.download_button(T("ui_download_md"), md.encode("utf-8"), file_name=f"report-{lang}.md", mime="text/markdown",
                   key="dl_md")
c3.download_button(T("ui_download_answers"), dump_answers(a), file_name="answers.yaml", key="dl_answers_r")


@st.cache_data(show_spinner=False, max_entries=8)
def pdf_bytes(md: str, lang: str, _rec, _results, _checks) -> bytes:
    """Keyed on the Markdown: the same report is rendered once. The PDF's source is that Markdown with charts."""
    images, files = chart_images(_rec, _results, lang, _checks)
    return markdown_to_pdf(build_markdown(a, hw, _rec, _results, k, lang, images=images, answers_file="answers.yaml",
                                          probe_files=[f"probe-{r.engine}.json" for r in _results],
                                          checks=_checks), files)


try:
    with st.spinner("PDF…"):
        data = pdf_bytes(md, lang, rec, results, checks)
    c2.download_button(T("ui_download_pdf"), data, file_name=f"report-{lang}.pdf", mime="application/pdf",
                       key="dl_pdf")
except ReportError as err:
    c2.error(str(err))
st.markdown(md)

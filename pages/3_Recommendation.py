"""The ranking as a chart, each engine's contributions with sources, exclusions, flips, and the seeds' claims."""
import streamlit as st

from advisor.decide import recommend
from advisor.report import (concurrency_chart, header_lines, link_urls, md_escape, memory_chart, plan_rows,
                            ranking_chart, roofline_chart, support_table)
from ui_common import T, answers, hardware, knowledge, lang, plan_inputs, show_notice

lang = lang()
k = knowledge()
a = answers()
st.title(T("ranking_title"))
spec, bench, spec_error = plan_inputs(a)
if spec_error:
    st.error(spec_error)
show_notice()
rec = recommend(a, None if a.hardware else hardware(), k, lang=lang, spec=spec, machine=bench)
if spec.unknown_name:  # planned as a generic model of the size given: say so where the ranking is read
    st.warning(md_escape(rec.plan.notes[0]))
st.session_state["last_ranking"] = [r.engine for r in rec.ranking]
short = rec.nothing_fits()
if short:  # say it first: no engine fits as asked, and what would make each fit
    st.error(md_escape(T("nothing_fits")) + "\n" + "\n".join(
        f"- **{md_escape(name)}**: " + md_escape(T("nothing_fits_ram", gib=ram) if ram else fix or T("nothing_fits_none"))
        for name, fix, ram in short))
st.plotly_chart(ranking_chart(rec, lang), key="ranking_chart")
for i, r in enumerate(rec.ranking, 1):
    with st.expander(f"{i}. {r.name} — {r.score:g}", expanded=i == 1):
        st.dataframe([{"Δ": f"{x.delta:+g}", T("col_reason"): x.text, T("source"): x.source, T("col_rule"): x.rule}
                      for x in r.reasons], hide_index=True, column_config={
                          T("col_reason"): st.column_config.TextColumn(width="large"),
                          T("source"): st.column_config.TextColumn(width="medium")})
if rec.excluded:
    st.subheader(T("excluded_title"))
    for x in rec.excluded:
        st.markdown(link_urls(f"**{x.name}** — " + " ".join(f"{y.text} _({y.source})_" for y in x.reasons)))
st.subheader(T("sup_title"))
st.markdown("\n".join(support_table.markdown(support_table.from_recommendation(rec, k), k, lang)))
st.caption(T("sup_caption", date=support_table.read_date(k)))
st.subheader(T("flips_title"))
for f in rec.flips:
    st.markdown(link_urls(f"- {f.text}"))
if not rec.flips and rec.flip_note:
    st.markdown(link_urls(f"- {rec.flip_note}"))
plan = rec.plan
names = {e.id: e.name for e in k.engines.values()}
st.subheader(T("plan_title"))
for line in header_lines(plan, k, lang):
    st.caption(link_urls(md_escape(line)))
cols, rows = plan_rows(plan, k, lang)
st.dataframe([dict(zip(cols, r)) for r in rows], hide_index=True, key="plan_table")
c1, c2 = st.columns(2)
c1.plotly_chart(memory_chart(plan, names, lang), key="memory_chart")
c2.plotly_chart(concurrency_chart(plan, names, lang), key="concurrency_chart")
st.plotly_chart(roofline_chart(plan, [], names, lang), key="roofline_chart")
for e, p in plan.engines.items():
    if p.options:
        st.markdown(link_urls(f"**{T('plan_options_for', engine=names[e])}:**"))
        st.markdown(link_urls("\n".join(f"- {o.text}" for o in p.options)))
with st.expander(T("plan_assumptions_for", engine=rec.top.name if rec.top else "—")):
    if rec.top:
        st.markdown(link_urls("\n".join(f"- {x}" for x in rec.top.plan.assumptions)))
with st.expander(T("ui_seed_table")):
    st.dataframe([{T("col_verdict"): T(f"claim_verdict_{c.verdict}"), T("col_claim"): c.claim.get(lang),
                   T("col_check"): c.check.get(lang), T("col_quote"): c.quote, T("source"): c.source,
                   T("col_evidence"): c.evidence or ""}
                  for c in k.claims.claims], hide_index=True)
if st.button(T("ui_run_probe"), key="to_probe", type="primary"):
    st.switch_page("pages/4_Probe.py")

"""The ranking as a chart, each engine's contributions with sources, exclusions, flips, and the seeds' claims."""
import streamlit as st

from advisor.charts import concurrency_chart, memory_chart, ranking_chart, roofline_chart
from advisor.planner.render import header_lines, plan_rows
from advisor.rules import recommend
from ui_common import T, answers, hardware, knowledge, plan_inputs, setup

lang = setup()
k = knowledge()
a = answers()
spec, bench, spec_error = plan_inputs(a)
if spec_error:
    st.error(spec_error)
rec = recommend(a, None if a.hardware else hardware(), k, lang=lang, spec=spec, machine=bench)
st.session_state["last_ranking"] = [r.engine for r in rec.ranking]
st.title(T("ranking_title"))
st.plotly_chart(ranking_chart(rec, lang), key="ranking_chart")
for i, r in enumerate(rec.ranking, 1):
    with st.expander(f"{i}. {r.name} — {r.score:g}", expanded=i == 1):
        st.dataframe([{"Δ": x.delta, "reason": x.text, "rule": x.rule, T("source"): x.source} for x in r.reasons],
                     hide_index=True)
if rec.excluded:
    st.subheader(T("excluded_title"))
    for x in rec.excluded:
        st.markdown(f"**{x.name}** — " + " ".join(f"{y.text} _({y.source})_" for y in x.reasons))
st.subheader(T("flips_title"))
for f in rec.flips:
    st.markdown(f"- {f.text}")
if not rec.flips and rec.flip_note:
    st.markdown(f"- {rec.flip_note}")
plan = rec.plan
names = {e.id: e.name for e in k.engines.values()}
st.subheader(T("plan_title"))
for line in header_lines(plan, k, lang):
    st.caption(line)
cols, rows = plan_rows(plan, k, lang)
st.dataframe([dict(zip(cols, r)) for r in rows], hide_index=True, key="plan_table")
c1, c2 = st.columns(2)
c1.plotly_chart(memory_chart(plan, names, lang), key="memory_chart")
c2.plotly_chart(concurrency_chart(plan, names, lang), key="concurrency_chart")
st.plotly_chart(roofline_chart(plan, [], names, lang), key="roofline_chart")
for e, p in plan.engines.items():
    if p.options:
        st.markdown(f"**{T('plan_options_for', engine=names[e])}:**")
        st.markdown("\n".join(f"- {o.text}" for o in p.options))
with st.expander(T("plan_assumptions_for", engine=rec.top.name if rec.top else "—")):
    if rec.top:
        st.markdown("\n".join(f"- {x}" for x in rec.top.plan.assumptions))
with st.expander(T("ui_seed_table")):
    st.dataframe([{"verdict": c.verdict, "quote": c.quote, "claim": c.claim.get(lang), "check": c.check.get(lang),
                   T("source"): c.source} for c in k.claims.claims], hide_index=True)
if st.button(T("ui_run_probe"), key="to_probe", type="primary"):
    st.switch_page("pages/4_Probe.py")

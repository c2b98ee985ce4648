"""The ranking as a chart, each engine's contributions with sources, exclusions, flips, and the seeds' claims."""
import streamlit as st

from advisor.charts import ranking_chart
from advisor.rules import recommend
from ui_common import T, answers, hardware, knowledge, setup

lang = setup()
k = knowledge()
a = answers()
rec = recommend(a, None if a.hardware else hardware(), k, lang=lang)
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
with st.expander(T("ui_seed_table")):
    st.dataframe([{"verdict": c.verdict, "quote": c.quote, "claim": c.claim.get(lang), "check": c.check.get(lang),
                   T("source"): c.source} for c in k.claims.claims], hide_index=True)
if st.button(T("ui_run_probe"), key="to_probe", type="primary"):
    st.switch_page("pages/4_Probe.py")

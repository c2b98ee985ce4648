"""The ranking as a chart, each engine's contributions with sources, exclusions, each ranked engine's deployment bundle
(the command, why each value, the files to download), flips, and the seeds' claims."""
import streamlit as st

from advisor.decide import recommend
from advisor.knowledge import age
from advisor.report import (cite, cite_reason, concurrency_chart, header_lines, link_urls, md_escape, memory_chart, plan_rows,
                            ranking_chart, roofline_chart, seed_lines, serving_chart, serving_rows, support_table)
from advisor.report import deploy as dep
from advisor.report import serving as srv
from ui import evidence as ev_ui
from ui import T, answers, hardware, knowledge, lang, link_path_gate, plan_inputs, set_answer, show_notice


def md_table(header: list[str], rows: list[list[str]], align: str = "") -> str:
    """A Markdown table (cells already escaped): it wraps its cells in full at any width, where st.dataframe cuts
    them. align: one character per column, "r" right-aligned, anything else left."""
    rule = ["---:" if a == "r" else "---" for a in align.ljust(len(header))]
    return "\n".join("| " + " | ".join(r) + " |" for r in [[md_escape(h) for h in header], rule, *rows])


lang = lang()
k = knowledge()
a = answers()
st.title(T("ranking_title"))
st.caption(md_escape(age.as_of(k).line(k, lang)))
link_path_gate(a)
spec, bench, spec_error = plan_inputs(a)
if spec_error:
    st.error(spec_error)
show_notice()
with st.spinner(T("ui_ranking")):  # seconds cold (the predictors' tables), longer on a busy machine: say so
    rec = recommend(a, None if a.hardware else hardware(), k, lang=lang, spec=spec, machine=bench,
                    calibration=ev_ui.calibrations(a, lang))  # this machine's, and the Probe page's benchmark files
if spec.unknown_name:  # planned as a generic model of the size given: say so where the ranking is read
    st.warning(md_escape(rec.plan.notes[0]))
st.session_state["last_ranking"] = [r.engine for r in rec.ranking]
short = rec.nothing_fits()
if short:  # say it first: no engine fits as asked, and what would make each fit
    st.error(md_escape(T("nothing_fits")) + "\n" + "\n".join(
        f"- **{md_escape(name)}**{T('colon')}" + md_escape(T("nothing_fits_ram", gib=ram) if ram else fix or T("nothing_fits_none"))
        for name, fix, ram in short))
    if a.hardware is not None and a.hardware.ram_gb is None and any(ram for _, _, ram in short):
        # an offload plan's fit hangs on the target's RAM: ask for it here, where it decides
        def take_ram() -> None:
            v = st.session_state.get("ask_ram")
            set_answer(("hardware", "ram_gb"), float(v) if v else None)

        st.number_input(T("ui_ask_ram"), min_value=1, max_value=65536, value=None, step=16, key="ask_ram",
                        on_change=take_ram, placeholder=T("ui_ask_ram_placeholder"))
none = rec.none_meets() if not short else None
if none:  # a headline: every engine is predicted to miss the target here, and which comes closest
    st.warning(md_escape(T("none_meets", best=none[0], target=f"{none[2]:,.0f}",
                           one="—" if none[1] is None else f"{none[1]:,.0f}")))
st.plotly_chart(ranking_chart(rec, lang), key="ranking_chart", config={"displayModeBar": False})
for i, r in enumerate(rec.ranking, 1):
    with st.expander(f"{i}. {r.name} — {r.score:g}", expanded=i == 1):
        st.markdown(md_table(["Δ", T("col_reason"), T("source"), T("col_rule")],
                             [[f"{x.delta:+g}", link_urls(md_escape(x.text)), cite_reason(x, k, lang),
                               md_escape(x.rule)] for x in r.reasons], align="r"))
if rec.excluded:
    st.subheader(T("excluded_title"))
    for x in rec.excluded:
        paren = "（{}）" if lang == "zh" else "({})"
        st.markdown(f"**{md_escape(x.name)}** — " + " ".join(
            f"{link_urls(md_escape(y.text))} _{paren.format(cite_reason(y, k, lang))}_" for y in x.reasons))
st.subheader(T("deploy_section_title"))
st.caption(T("deploy_section_caption"))
names = {e.id: e.name for e in k.engines.values()}
for i, b in enumerate(dep.ranked_bundles(rec, a, k, lang, None if a.hardware else hardware()), 1):
    with st.expander(T(f"deploy_expander_{b.status}", i=i, engine=names[b.engine]), expanded=i == 1):
        if b.nodes > 1:  # what runs where: one replica over several nodes
            st.info(f"**{T('deploy_layout')}**{T('colon')}{md_escape(b.nodes_why)}")
        for w in b.warnings:
            st.warning(link_urls(md_escape(w)))
        if b.status != "ok":
            say = st.warning if b.status == "refused" else st.info
            say(f"**{T('deploy_' + b.status)}**{T('colon')}" + link_urls(md_escape(b.reason or "")))
            continue
        st.code(dep.command_line(b), language="bash", wrap_lines=True)
        st.caption(T("deploy_model_at", path=dep.md_value(b.model_path), what=md_escape(b.model_what)))
        st.markdown("\n".join(dep.arg_table(b, k, lang)))
        files = dep.file_names(b)
        for tab, name in zip(st.tabs(files), files):
            with tab:
                fence = dep.file_language(name)
                st.code(b.files[name], language="bash" if fence == "sh" else fence, height=420, wrap_lines=True)
                st.download_button(T("deploy_download", name=name), b.files[name], file_name=name,
                                   mime=dep.mime(name), key=f"dl_deploy_{b.engine}_{name}", on_click="ignore")
        st.download_button(T("deploy_download_zip"), dep.bundle_zip(b), file_name=dep.zip_name(b),
                           mime="application/zip", key=f"dl_deploy_zip_{b.engine}", on_click="ignore")
st.subheader(T("sup_title"))
st.markdown("\n".join(support_table.markdown(support_table.from_recommendation(rec, k), k, lang)))
st.caption(T("sup_caption", date=support_table.read_date(k)))
st.subheader(T("flips_title"))
if rec.flip_note:  # no flip, or a tie at the top that no answer separates
    st.markdown(link_urls(f"- {md_escape(rec.flip_note)}"))
for f in rec.flips:
    st.markdown(link_urls(f"- {f.text}"))
plan = rec.plan
st.subheader(T("plan_title"))
for line in header_lines(plan, k, lang):
    st.caption(link_urls(md_escape(line)))
cols, rows = plan_rows(plan, k, lang)
# Markdown tables, as the serving table below (a dataframe cut its right-hand columns, "how it runs", at 1300 px),
# in two parts so that each fits the page: the verdict and how it runs, then the memory figures
n = len(cols)
for part in ([0, 1, 2, 3, 4, 5, *range(max(6, n - 3), n)], [0, *range(6, max(6, n - 3))]):
    st.markdown(md_table([cols[i] for i in part], [[md_escape(str(r[i])) for i in part] for r in rows]))
c1, c2 = st.columns(2)
c1.plotly_chart(memory_chart(plan, names, lang), key="memory_chart", config={"displayModeBar": False})
c2.plotly_chart(concurrency_chart(plan, names, lang), key="concurrency_chart", config={"displayModeBar": False})
st.plotly_chart(roofline_chart(plan, [], names, lang), key="roofline_chart", config={"displayModeBar": False})
for e, p in plan.engines.items():
    if p.options:
        st.markdown(link_urls(f"**{T('plan_options_for', engine=names[e])}{T('colon').strip()}**"))
        st.markdown(link_urls("\n".join(f"- {o.text}" for o in p.options)))
with st.expander(T("plan_assumptions_for", engine=rec.top.name if rec.top else "—")):
    if rec.top:
        st.markdown(link_urls("\n".join(f"- {x}" for x in rec.top.plan.assumptions)))
st.subheader(T("srv_title"))
st.caption(md_escape(srv.workload_line(plan, k, lang) or T("srv_none_predicted")))
cols, rows = serving_rows(plan, k, lang, rec.excluded_engines)
# a Markdown table wraps its cells at any width (a dataframe cut off "$ per M" and the prediction's label at 1300 px,
# and showed 3 of 10 columns on a phone): every figure stays beside the label that says how far to trust it
st.markdown(md_table(cols, [[md_escape(c) for c in r] for r in rows], align="llrrrrrrrl"))
st.caption(md_escape(srv.caption(k, lang)))
st.markdown("\n".join(f"- {md_escape(x)}" for x in srv.rate_lines(plan, k, lang) + srv.leaner_lines(plan, k, lang)
                        + srv.pd_lines(plan, k, lang)
                                            + srv.predictor_lines(plan, k, lang)))
memory = srv.memory_markdown(plan, k, lang)
if memory:
    st.markdown("\n".join(memory))
if srv.predicted(plan):
    st.plotly_chart(serving_chart(plan, names, lang), key="serving_chart", config={"displayModeBar": False})
    with st.expander(T("srv_how_title")):
        st.markdown(md_escape(srv.explanation(k, lang)))
with st.expander(T("ui_seed_table")):
    st.markdown(md_table([T("col_verdict"), T("col_claim"), T("col_check"), T("col_quote"), T("source"),
                          T("col_evidence")],
                         [[md_escape(T(f"claim_verdict_{c.verdict}")), md_escape(c.claim.get(lang)),
                           md_escape(c.check.get(lang)), f"“{md_escape(c.quote)}”", cite(c.source, k, lang),
                           cite(c.evidence, k, lang) if c.evidence else ""] for c in k.claims.claims]))
    st.markdown(T("cite_seeds_intro") + "\n" + "\n".join(f"- {line}" for line in seed_lines(k, lang)))
if st.button(T("ui_run_probe"), key="to_probe", type="primary"):
    st.switch_page("pages/4_Probe.py")

"""What was detected here, what is missing per engine, and the target hardware to plan for (the same editor as
checklist step 3, over the same answer)."""
import streamlit as st

from advisor.decide import recommend
from advisor.report import md_escape, support_table
from ui import T, answers, build_panel, hardware, knowledge, lang, llama_cpu_build_on_gpu_machine, show_notice, target_editor


def code_span(text: str) -> str:
    """A library's message, verbatim, as inline code (a backtick in it cannot end the span)."""
    return "`" + " ".join(str(text).replace("`", "'").split())[:200] + "`"


hw = hardware()
st.title(T("hardware_title"))
st.subheader(T("ui_detected_here"))
if hw.gpus:
    st.dataframe([{T("col_gpu"): g.name, T("col_memory_gib"): round((g.memory_total_mb or 0) / 1024, 1),
                   T("col_free_gib"): round((g.memory_free_mb or 0) / 1024, 1),
                   T("col_compute_capability"): g.compute_capability} for g in hw.gpus], hide_index=True)
    st.caption(T("ui_driver_line", driver=hw.driver_version or "–", cuda=hw.cuda_version or "–"))
elif hw.nvml_error_code or hw.nvml_error:  # why, in the reader's language; the library's own words as a detail
    code = hw.nvml_error_code
    known = bool(code) and f"hw_err_{code}" in knowledge().strings
    why = T(f"hw_err_{code}") if known else T("hw_err_unknown")
    detail = hw.nvml_error_detail if known else hw.nvml_error_detail or hw.nvml_error
    if detail:
        why = T("hw_err_detail", msg=why, detail=code_span(detail))
    st.info(T("hw_no_gpu", why=why))
else:
    st.info(T("hw_no_gpu_plain"))
st.markdown(T("ui_cpu_line", model=hw.cpu.model, arch=hw.cpu.arch, phys=hw.cpu.physical_cores,
              logical=hw.cpu.logical_cores))
st.markdown(T("ui_flags_line", flags=" ".join(f"`{f}`" for f in hw.cpu.flags) or "–"))
st.markdown(T("ui_ram_line", total=f"{hw.ram_total_mb / 1024:.1f}", avail=f"{hw.ram_available_mb / 1024:.1f}",
              os=hw.os, release=f"`{hw.os_release}`"))
st.subheader(T("engines_installed"))
st.dataframe([{T("col_engine"): e.engine, T("col_installed"): "✓" if e.installed else "✗",
               T("col_version"): e.version or "", T("col_where"): e.location or ""} for e in hw.engines],
             hide_index=True)
# the install commands as wrapped code blocks with a copy button, not a table column cut at 1300 px (walk-3 L10)
for e in (x for x in hw.engines if not x.installed):
    st.markdown(T("ui_install_with", engine=md_escape(knowledge().engines[e.engine].name
                                                      if e.engine in knowledge().engines else e.engine)))
    st.code(e.install_hint, language="bash", wrap_lines=True)
build_panel()
cpu_llama = llama_cpu_build_on_gpu_machine(hw)
if cpu_llama:
    st.warning(cpu_llama)

st.subheader(T("ui_target_title"))
target_editor("hw")
show_notice()
a = answers()
rec = recommend(a, None if a.hardware else hw, knowledge(), lang=lang(), with_flips=False)
st.subheader(T("sup_lacks_title"))
table = support_table.from_recommendation(rec, knowledge(), axes=("os", "accelerator"))
st.markdown("\n".join(support_table.markdown(table, knowledge(), lang())))
for e, items in support_table.lacks(table, knowledge(), lang()).items():
    st.markdown(f"- **{md_escape(knowledge().engines[e].name)}**{T('colon')}"
                + ("; ".join(md_escape(x) for x in items) if items else T("sup_lacks_none")))
if st.button(T("ui_see_ranking"), key="to_ranking"):
    st.switch_page("pages/3_Recommendation.py")

"""Home: what the advisor does, the detected hardware at a glance, and the way in."""
import streamlit as st

from ui import T, glance

st.title(T("ui_title"))
st.write(T("ui_intro"))
hw = glance()  # what it shows and no more: the knowledge and the engine scan wait for the pages that use them
cols = st.columns(3)
gpu = ", ".join(hw.gpu_names) or T("no_gpu")
cols[0].metric("GPU", gpu)
cols[1].metric("CPU", f"{hw.logical_cores} × {hw.arch}")
cols[2].metric(T("ui_ram"), f"{hw.ram_total_mb / 1024:.0f} GiB")
if st.button(T("ui_start"), type="primary", key="start"):
    st.switch_page("pages/1_Checklist.py")

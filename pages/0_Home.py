"""Home: what the advisor does, the detected hardware at a glance, and the way in."""
import streamlit as st

from ui import T, hardware

st.title(T("ui_title"))
st.write(T("ui_intro"))
hw = hardware()
cols = st.columns(3)
gpu = ", ".join(g.name for g in hw.gpus) or T("no_gpu")
cols[0].metric("GPU", gpu)
cols[1].metric("CPU", f"{hw.cpu.logical_cores} × {hw.cpu.arch}")
cols[2].metric(T("ui_ram"), f"{hw.ram_total_mb / 1024:.0f} GiB")
if st.button(T("ui_start"), type="primary", key="start"):
    st.switch_page("pages/1_Checklist.py")

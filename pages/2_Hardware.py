"""What was detected here, what is missing per engine, and planning for other target hardware."""
import streamlit as st

from ui_common import T, hardware, knowledge, set_answers, setup

lang = setup()
k = knowledge()
hw = hardware()
st.title(T("hardware_title"))
if hw.gpus:
    st.dataframe([{"GPU": g.name, "memory GiB": round((g.memory_total_mb or 0) / 1024, 1),
                   "free GiB": round((g.memory_free_mb or 0) / 1024, 1), "compute capability": g.compute_capability}
                  for g in hw.gpus], hide_index=True)
    st.caption(f"driver {hw.driver_version} · CUDA {hw.cuda_version}")
else:
    st.info(f"{T('no_gpu')} — {hw.nvml_error or ''}")
st.write(f"**CPU** {hw.cpu.model} · {hw.cpu.arch} · {hw.cpu.physical_cores} physical / {hw.cpu.logical_cores} logical")
st.write("**flags** " + (" ".join(hw.cpu.flags) or "–"))
st.write(f"**RAM** {hw.ram_total_mb / 1024:.1f} GiB ({hw.ram_available_mb / 1024:.1f} GiB available) · "
         f"**OS** {hw.os} {hw.os_release}")
st.subheader(T("engines_installed"))
st.dataframe([{"engine": e.engine, "installed": "✓" if e.installed else "✗", "version": e.version or "",
               "import / distribution": f"{e.import_name} / {e.distribution}",
               "install": "" if e.installed else e.install_hint} for e in hw.engines], hide_index=True)

st.subheader(T("ui_target_mode"))
data = dict(st.session_state["answers"])
mode = st.radio(T("ui_target_mode"), ["this", "other"], index=1 if data.get("hardware") else 0, horizontal=True,
                key="hw_mode", format_func=lambda m: T("ui_this_machine") if m == "this" else T("ui_other_hw"),
                label_visibility="collapsed")
if mode == "this":
    data.pop("hardware", None)
else:
    gpus = ["(none)"] + [g.name for g in k.gpus.gpus]
    cur = (data.get("hardware") or {}).get("gpu_model")
    pick = st.selectbox(T("ui_pick_gpu"), gpus, index=gpus.index(cur) if cur in gpus else 0, key="hw_gpu")
    prev = data.get("hardware") or {}
    count = st.number_input("gpu_count", min_value=1, max_value=64, value=int(prev.get("gpu_count", 1) or 1),
                            key="hw_count")
    ram = st.number_input(T("ui_target_ram"), min_value=0, max_value=65536, value=int(prev.get("ram_gb") or 0),
                          key="hw_ram")
    if pick == "(none)":
        data["hardware"] = {"gpu_vendor": "none", "gpu_count": 0}
    else:
        g = next(x for x in k.gpus.gpus if x.name == pick)
        data["hardware"] = {"gpu_vendor": g.vendor, "gpu_model": g.name, "gpu_count": int(count),
                            "gpu_memory_gb": g.memory_gb, "os": "macos" if g.vendor == "apple" else "linux"}
    if ram:
        data["hardware"]["ram_gb"] = int(ram)
err = set_answers(data)
if err:
    st.error(err)
if st.button(T("ui_see_ranking"), key="to_ranking"):
    st.switch_page("pages/3_Recommendation.py")

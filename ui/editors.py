"""The answers' editors that more than one page or step draws: the target hardware (checklist step 3 and the
Hardware page, over the same answer) and the checklist's model step (a catalogue model's shape, a config.json
uploaded or pasted)."""
from __future__ import annotations

from typing import Callable

import streamlit as st

from ui.planning import knowledge
from ui.state import ANSWERS, NOTICE, answers_data, lang, set_answer, set_answers
from ui.text import T
from ui.widgets import on_change, seed


# ---------------------------------------------------------------- the target hardware (checklist step 3 and Hardware)

def target_editor(prefix: str) -> None:
    """One editor for the target hardware, shared by checklist step 3 and the Hardware page: the same GPU list
    (knowledge/gpus.yaml) and the same answers key, so the two can never disagree."""
    k = knowledge()
    ss = st.session_state
    hw = ss[ANSWERS].get("hardware")

    def set_mode() -> None:
        if ss[f"{prefix}_mode"] == "this":
            if ss[ANSWERS].get("hardware"):
                ss["_hw_last"] = ss[ANSWERS]["hardware"]
            set_answer(("hardware",), None)
        else:
            set_answer(("hardware",), ss.get("_hw_last") or {"gpu_vendor": "none", "gpu_count": 0})

    st.radio(T("ui_target_mode"), ["this", "other"], key=seed(f"{prefix}_mode", "other" if hw else "this"),
             horizontal=True, on_change=set_mode,
             format_func={"this": T("ui_this_machine"), "other": T("ui_other_hw")}.get)
    if not hw:
        return
    from advisor.planner import find_gpu

    gpus = {g.id: g for g in k.gpus.gpus}
    options = ["none"] + list(gpus)
    if hw.get("gpu_vendor", "none") == "none":
        cur = "none"
    else:
        known = find_gpu(hw.get("gpu_model"), k)
        cur = known.id if known else "custom"
        if cur == "custom":  # a GPU from an answers file that is not in the list: keep it, as its own entry
            options.append("custom")

    cpu_only = T("ui_cpu_only")  # labels are fixed now: a format_func must not read session state later

    def label(gid: str) -> str:
        if gid == "none":
            return cpu_only
        if gid == "custom":
            return f"{hw.get('gpu_model') or hw.get('gpu_vendor')} ({hw.get('gpu_memory_gb') or '?'} GB)"
        g = gpus[gid]
        return f"{g.name} ({g.memory_gb:g} GB)"

    def set_gpu() -> None:
        gid = ss[f"{prefix}_gpu"]
        keep = ("ram_gb", "cpu_cores", "cpu_arch", "cpu_bandwidth_gb_s", "cpu_gflops", "os", "nodes", "interconnect",
                "unified_memory")
        new = {key: v for key, v in (ss[ANSWERS].get("hardware") or {}).items() if key in keep}
        if gid == "none":
            for key in ("nodes", "interconnect", "unified_memory"):
                new.pop(key, None)
            new.update(gpu_vendor="none", gpu_count=0)
        elif gid != "custom":
            g = gpus[gid]
            per = max(1, int(ss.get(f"{prefix}_count") or 1))
            nodes = int(new.get("nodes") or 1)
            new.update(gpu_vendor=g.vendor, gpu_model=g.name, gpu_memory_gb=g.memory_gb, gpus_per_node=per,
                       gpu_count=per * nodes)
            if g.kind == "npu":
                new["accelerator"] = "npu"
            if g.vendor == "apple":
                new.update(os="macos", cpu_arch="arm64")
            elif new.get("os") == "macos":
                new.pop("os")
                new.pop("cpu_arch", None)
        set_answers({**answers_data(), "hardware": new})

    def set_topology(field: str) -> Callable[[], None]:
        """GPUs per node and nodes move together: gpu_count is always their product."""
        def cb() -> None:
            cur = dict(ss[ANSWERS].get("hardware") or {})
            nodes = int(cur.get("nodes") or 1)
            per = int(cur.get("gpus_per_node") or max(1, int(cur.get("gpu_count") or 1) // nodes))
            if field == "per":
                per = max(1, int(ss[f"{prefix}_count"]))
            else:
                nodes = max(1, int(ss[f"{prefix}_nodes"]))
            cur.update(nodes=nodes, gpus_per_node=per, gpu_count=nodes * per)
            set_answers({**answers_data(), "hardware": cur})
        return cb

    c1, c2 = st.columns([3, 1])
    c1.selectbox(T("ui_pick_gpu"), options, key=seed(f"{prefix}_gpu", cur), format_func=label, on_change=set_gpu)
    gpu = hw.get("gpu_vendor", "none") != "none"
    nodes = int(hw.get("nodes") or 1)
    if gpu:
        per = int(hw.get("gpus_per_node") or max(1, int(hw.get("gpu_count") or 1) // nodes))
        c2.number_input(T("ui_gpus_per_node") if nodes > 1 else T("ui_gpu_count"), min_value=1, max_value=64, step=1,
                        key=seed(f"{prefix}_count", per), on_change=set_topology("per"))
    else:
        c2.number_input(T("ui_cpu_cores"), min_value=0, max_value=4096, step=1,
                        key=seed(f"{prefix}_cores", int(hw.get("cpu_cores") or 0)),
                        on_change=on_change(f"{prefix}_cores", ("hardware", "cpu_cores"), lambda v: int(v) or None))
    c3, c4 = st.columns([3, 1])
    c3.number_input(T("ui_target_ram"), min_value=0, max_value=65536, step=1,
                    key=seed(f"{prefix}_ram", int(hw.get("ram_gb") or 0)),
                    on_change=on_change(f"{prefix}_ram", ("hardware", "ram_gb"), lambda v: int(v) or None))
    oses = ["", "linux", "windows", "windows-wsl", "macos"]
    c4.selectbox(T("ui_target_os"), oses, key=seed(f"{prefix}_os", hw.get("os") or ""),
                 format_func={o: (T(f"os_{o}") if o else "—") for o in oses}.get,
                 on_change=on_change(f"{prefix}_os", ("hardware", "os"), lambda v: v or None))
    if not gpu:  # a CPU target: what its prediction rests on (the decode reads its memory; the ISA picks the build)
        c8, c9, c10 = st.columns([1, 2, 2])
        arches = ["", "x86_64", "arm64"]
        c8.selectbox(T("ui_cpu_arch"), arches, key=seed(f"{prefix}_arch", hw.get("cpu_arch") or ""),
                     format_func=lambda a: a or "—",
                     on_change=on_change(f"{prefix}_arch", ("hardware", "cpu_arch"), lambda v: v or None))
        c9.number_input(T("ui_cpu_bandwidth"), min_value=0.0, max_value=20_000.0, step=10.0,
                        help=T("ui_cpu_bandwidth_help"),
                        key=seed(f"{prefix}_cpubw", float(hw.get("cpu_bandwidth_gb_s") or 0.0)),
                        on_change=on_change(f"{prefix}_cpubw", ("hardware", "cpu_bandwidth_gb_s"),
                                            lambda v: float(v) or None))
        c10.number_input(T("ui_cpu_gflops"), min_value=0.0, max_value=1_000_000.0, step=100.0,
                         help=T("ui_cpu_gflops_help"),
                         key=seed(f"{prefix}_cpuflops", float(hw.get("cpu_gflops") or 0.0)),
                         on_change=on_change(f"{prefix}_cpuflops", ("hardware", "cpu_gflops"),
                                             lambda v: float(v) or None))
        return
    c5, c6, c7 = st.columns([1, 2, 2])
    c5.number_input(T("ui_nodes"), min_value=1, max_value=512, step=1, key=seed(f"{prefix}_nodes", nodes),
                    on_change=set_topology("nodes"))
    ics = ["", "nvlink", "infinity-fabric", "xe-link", "pcie", "infiniband", "roce", "ethernet", "ici", "hccs"]
    c6.selectbox(T("ui_interconnect"), ics, key=seed(f"{prefix}_ic", hw.get("interconnect") or ""),
                 format_func={x: (T(f"ic_{x}") if x else T("ui_auto")) for x in ics}.get,
                 on_change=on_change(f"{prefix}_ic", ("hardware", "interconnect"), lambda v: v or None))
    um = {None: "auto", True: "yes", False: "no"}[hw.get("unified_memory")]
    c7.selectbox(T("ui_unified_memory"), ["auto", "yes", "no"], key=seed(f"{prefix}_um", um),
                 format_func={"auto": T("ui_auto"), "yes": T("ui_yes"), "no": T("ui_no")}.get,
                 on_change=on_change(f"{prefix}_um", ("hardware", "unified_memory"),
                                     lambda v: {"auto": None, "yes": True, "no": False}[v]))


def model_shape_caption(m) -> str:
    """A catalogue model's attention kind, experts and sliding window, for the checklist's model step."""
    from advisor.planner import known_spec
    from advisor.report import shape_parts

    return T("ui_model_shape", **shape_parts(known_spec(m), knowledge(), lang()))


def model_file_shape(path: str, architecture: str = "decoder-only"):
    """(the ModelSpec the answers' model.path gives, as the planner reads it, or None; why it cannot be read, or
    None). Read once per file version (read_model_path's cache), so a rerun of the page costs nothing."""
    from pathlib import Path

    from advisor.planner import ModelSpecError
    from advisor.planner.spec import read_model_path

    try:
        return read_model_path(Path(path).expanduser(), architecture), None
    except ModelSpecError as err:
        return None, str(err)[:300]


def take_model_config(pasted: bool = False) -> None:
    """A config.json uploaded or pasted on the model step: checked as model.path would read it, kept in the user
    cache dir under its hash, and model.path pointed at it (a reload or a link finds the same file)."""
    from probes.cache import cache_dir

    from advisor.planner import ModelSpecError, keep_config

    if pasted:
        text = st.session_state.get("m_config_text") or ""
        if not text.strip():
            return
        raw, name = text.encode("utf-8", "replace"), "config.json"
    else:
        up = st.session_state.get("m_config")
        if up is None:
            return
        raw, name = up.getvalue(), (up.name or "config.json")[:80]
    from advisor.report import md_escape  # the file's name and what is wrong with it are shown as Markdown

    try:
        path = keep_config(raw, cache_dir() / "configs", name)
    except (ModelSpecError, OSError) as err:
        why = str(err)
        while why.startswith(f"{name}: "):  # the file is named once, by the sentence around it
            why = why[len(name) + 2:]
        st.session_state[NOTICE] = ("error", T("ui_config_error", file=md_escape(name), err=md_escape(why[:300])))
        return
    model = {key: v for key, v in (answers_data().get("model") or {}).items() if key not in ("name", "path")}
    if set_answers({**answers_data(), "model": {**model, "path": str(path)}}) is None:
        st.session_state["m_path"] = str(path)
        st.session_state[NOTICE] = ("ok", T("ui_config_loaded", file=md_escape(name), path=path.name))

"""What the pages plan from, loaded once: the validated knowledge, this machine's hardware and measured bench,
and the model spec (read at the edge, and a model.path from a link only when the user asks)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from ui.state import LINK_PATH, NOTICE
from ui.text import T

if TYPE_CHECKING:
    from advisor.inputs import Answers


@st.cache_resource
def knowledge():
    from advisor.knowledge import load_knowledge

    k = load_knowledge()
    _aic_store(k)
    return k


def _aic_store(k) -> None:
    """The measured-silicon predictor's answers kept in the user cache dir between server runs (lazy: nothing of
    the library is imported here)."""
    from advisor.planner import aic

    aic.use_store(aic.default_store(k.aiconfigurator.version), k.aiconfigurator.version)


@st.cache_resource(ttl=300)
def glance():
    """The home page's figures only (GPUs, cores, RAM): no knowledge load, no engine scan."""
    from advisor.inputs.hardware import glance as read

    return read()


@st.cache_resource(ttl=300)
def hardware():
    from advisor.inputs import detect

    return detect(knowledge())


@st.cache_resource(show_spinner=False)
def machine():
    """This CPU's measured bandwidth and FLOPS (measured once per machine, ~3 s, then read from the cache)."""
    from advisor.planner import machine_bench
    from probes.cache import CacheDirError

    try:
        bench = machine_bench.cached()
        if bench is None:
            with st.spinner(T("ui_measuring_bandwidth")):
                bench = machine_bench.get()
    except CacheDirError as err:  # INFERENCE_ADVISOR_CACHE names a file: say so, and measure without saving
        st.session_state[NOTICE] = ("error", str(err))
        with st.spinner(T("ui_measuring_bandwidth")):
            bench = machine_bench.measure()
    return bench


@st.cache_data(show_spinner=False, max_entries=16)
def _spec(model_json: str):
    from advisor.inputs import ModelBlock
    from advisor.planner import resolve_model

    return resolve_model(ModelBlock.model_validate_json(model_json), knowledge(), read_files=True)


def link_path_unread(a: Answers) -> bool:
    """True while the answers' model.path is the one a link brought and the user has not asked to read it."""
    return bool(a.model.path) and st.session_state.get(LINK_PATH) == a.model.path


def link_path_gate(a: Answers) -> None:
    """Say that a linked model.path is not read yet, with the button that reads it (the user's act)."""
    from advisor.report import md_escape

    if not link_path_unread(a):
        return
    st.info(T("ui_link_path_unread", path=md_escape(a.model.path[:300])), icon=":material/lock:")
    if st.button(T("ui_link_path_read"), key="read_link_path"):
        st.session_state.pop(LINK_PATH, None)
        st.rerun()


def plan_inputs(a: Answers):
    """(model spec, machine bench, error) for recommend(): files are read here, at the edge. A model that
    cannot be resolved falls back to the generic architecture for its params_b, and the error is shown. A
    model.path from a link is not opened until the user asks (`link_path_gate`): planned from params_b till then."""
    from advisor.planner import ModelSpecError, generic, resolve_model

    if link_path_unread(a):
        return resolve_model(a.model, knowledge(), read_files=False), \
            (machine() if a.hardware is None else None), None
    try:
        spec, err = _spec(a.model.model_dump_json()), None
    except ModelSpecError as e:
        spec, err = generic(a.model.params_b, a.model.architecture, knowledge()), str(e)
    except Exception as e:  # noqa: BLE001 (a hostile model file must not take the page down)
        spec = generic(a.model.params_b, a.model.architecture, knowledge())
        err = f"model.path could not be read: {type(e).__name__}: {e}"[:300]
    return spec, (machine() if a.hardware is None else None), err

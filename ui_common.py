"""Shared UI helpers for app.py and pages/ (Streamlit only here; logic lives in advisor/ and probes/).

The advisor's modules are imported inside the helpers, not here: the home page paints its title from the
strings file alone, before the validated knowledge, the schemas and hardware detection are loaded.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

if TYPE_CHECKING:
    from advisor.answers import Answers

PAGES = ["app.py", "pages/1_Checklist.py", "pages/2_Hardware.py", "pages/3_Recommendation.py", "pages/4_Probe.py",
         "pages/5_Report.py"]


@st.cache_resource
def knowledge():
    from advisor.knowledge import load_knowledge

    return load_knowledge()


@st.cache_resource
def _strings() -> dict:
    """strings.yaml as plain data for the first paint (knowledge() validates the same file when it loads)."""
    import yaml

    path = Path(__file__).resolve().parent / "knowledge" / "strings.yaml"
    return yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))["strings"]


@st.cache_resource(ttl=300)
def hardware():
    from advisor.hardware import detect

    return detect(knowledge())


def page_config() -> None:
    st.set_page_config(page_title="Inference-engine advisor", page_icon="🧭", layout="wide")


def setup(title_key: str | None = None) -> str:
    """Page config, language switch (kept in session state), and the answers dict."""
    from advisor.answers import Answers

    page_config()
    if "lang" not in st.session_state:
        st.session_state["lang"] = "en"
    st.sidebar.radio("Language / 语言", ["en", "zh"], key="lang", horizontal=True,
                     format_func=lambda x: {"en": "English", "zh": "简体中文"}[x])
    if "answers" not in st.session_state:
        st.session_state["answers"] = Answers().model_dump(mode="json", exclude_none=True)
    return st.session_state["lang"]


@st.cache_resource(show_spinner=False)
def machine():
    """This CPU's measured bandwidth and FLOPS (measured once per machine, ~3 s, then read from the cache)."""
    from advisor.planner import machine_bench

    bench = machine_bench.cached()
    if bench is None:
        with st.spinner(T("ui_measuring_bandwidth")):
            bench = machine_bench.get()
    return bench


@st.cache_data(show_spinner=False, max_entries=16)
def _spec(model_json: str):
    from advisor.answers import ModelBlock
    from advisor.planner import resolve_model

    return resolve_model(ModelBlock.model_validate_json(model_json), knowledge(), read_files=True)


def plan_inputs(a: Answers):
    """(model spec, machine bench, error) for recommend(): files are read here, at the edge. A model that
    cannot be resolved falls back to the generic architecture for its params_b, and the error is shown."""
    from advisor.planner import ModelSpecError
    from advisor.planner.spec import generic

    try:
        spec, err = _spec(a.model.model_dump_json()), None
    except ModelSpecError as e:
        spec, err = generic(a.model.params_b, a.model.architecture, knowledge()), str(e)
    return spec, (machine() if a.hardware is None else None), err


def T(key: str, **kw) -> str:
    text = _strings()[key]["zh" if st.session_state.get("lang", "en") == "zh" else "en"]
    return text.format(**kw) if kw else text


def answers() -> Answers:
    from advisor.answers import AnswersError, parse_answers

    try:
        return parse_answers(st.session_state["answers"])
    except AnswersError:
        return Answers()


def set_answers(data: dict) -> str | None:
    """Validate with the same schema as the CLI; keep the old answers on error and return the message."""
    from advisor.answers import AnswersError, parse_answers

    try:
        a = parse_answers(data)
    except AnswersError as err:
        return str(err)
    st.session_state["answers"] = a.model_dump(mode="json", exclude_none=True)
    return None

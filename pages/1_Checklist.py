"""The 8 questions as a guided form (one step each, plus the model block), back/next and progress."""
from typing import get_args

import streamlit as st
import yaml

from advisor.answers import Precision, dump_answers
from ui_common import T, answers, knowledge, set_answers, setup

lang = setup()
k = knowledge()
qs = sorted(k.checklist.questions, key=lambda q: q.number)
n = len(qs) + 1
step = st.session_state.setdefault("wizard_step", 0)
st.title(k.s("report_answers", lang))
st.progress((step + 1) / n, text=T("ui_step", i=step + 1, n=n))
data = dict(st.session_state["answers"])

if step < len(qs):
    q = qs[step]
    st.subheader(f"{q.number}. {q.question.get(lang)}")
    st.caption(q.help.get(lang))
    if q.kind == "int":
        data[q.key] = int(st.number_input(q.short.get(lang), min_value=1, value=int(data.get(q.key, q.default)),
                                          step=1, key=f"q_{q.id}"))
        st.caption(" · ".join(o.label.get(lang) for o in q.options))
    elif q.kind == "hardware":
        labels = [o.label.get(lang) for o in q.options]
        cur = data.get("hardware")
        idx = next((i for i, o in enumerate(q.options) if o.value == cur), 0)
        pick = st.radio(q.short.get(lang), range(len(labels)), index=idx, format_func=lambda i: labels[i],
                        key=f"q_{q.id}")
        if q.options[pick].value is None:
            data.pop("hardware", None)
        else:
            data["hardware"] = q.options[pick].value
    else:
        values = [o.value for o in q.options]
        labels = [o.label.get(lang) for o in q.options]
        cur = data.get(q.key, q.default)
        pick = st.radio(q.short.get(lang), range(len(values)), index=values.index(cur) if cur in values else 0,
                        format_func=lambda i: labels[i], key=f"q_{q.id}", horizontal=True)
        data[q.key] = values[pick]
else:
    st.subheader(T("ui_model_block"))
    m = dict(data.get("model", {}))
    names = ["(none)"] + [x.id for x in k.models.models]
    cur = m.get("name")
    name = st.selectbox("model.name", names, index=names.index(cur) if cur in names else 0, key="m_name")
    m["name"] = None if name == "(none)" else name
    known = next((x for x in k.models.models if x.id == m["name"]), None)
    m["params_b"] = st.number_input("params_b", min_value=0.01, value=float(known.params_b if known else
                                                                            m.get("params_b", 7.0)), key="m_params")
    archs = ["decoder-only", "encoder-decoder", "encoder", "cnn"]
    m["architecture"] = st.selectbox("architecture", archs, index=archs.index(m.get("architecture", "decoder-only")),
                                     key="m_arch")
    precs = list(get_args(Precision))
    m["precision"] = st.selectbox("precision", precs, index=precs.index(m.get("precision", "fp16")), key="m_prec")
    m["context_tokens"] = int(st.number_input("context_tokens", min_value=128, value=int(m.get("context_tokens", 4096)),
                                              key="m_ctx"))
    m["path"] = st.text_input(T("ui_model_path_plan"), value=m.get("path") or "", key="m_path").strip() or None
    data["model"] = {key: v for key, v in m.items() if v is not None}

error = set_answers(data)
if error:
    st.error(error)

c1, c2, c3 = st.columns([1, 1, 3])
if c1.button(T("ui_back"), key="back", disabled=step == 0):
    st.session_state["wizard_step"] = step - 1
    st.rerun()
if step < n - 1:
    if c2.button(T("ui_next"), key="next", type="primary"):
        st.session_state["wizard_step"] = step + 1
        st.rerun()
elif c2.button(T("ui_see_ranking"), key="to_ranking", type="primary"):
    st.switch_page("pages/3_Recommendation.py")

with st.expander(T("ui_upload")):
    up = st.file_uploader("answers.yaml", type=["yaml", "yml"], key="upload")
    if up is not None and st.session_state.get("uploaded") != up.file_id:
        try:
            loaded = yaml.safe_load(up.getvalue().decode("utf-8"))
            err = set_answers(loaded if loaded is not None else {})
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            err = f"not valid YAML: {exc}"
        st.session_state["uploaded"] = up.file_id
        if err:
            st.error(err)
        else:
            st.success("✓")
            st.rerun()
    st.download_button(T("ui_download_answers"), dump_answers(answers()), file_name="answers.yaml",
                       mime="application/x-yaml", key="dl_answers")

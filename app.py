"""Home page: detected hardware and a recommendation for the current answers (an example by default)."""
from pathlib import Path

import streamlit as st

from advisor.answers import AnswersError, load_answers
from advisor.hardware import detect
from advisor.knowledge import load_knowledge
from advisor.rules import recommend

st.set_page_config(page_title="Inference-engine advisor", page_icon="🧭", layout="wide")

EXAMPLES = Path(__file__).resolve().parent / "examples"


@st.cache_resource
def knowledge():
    return load_knowledge()


@st.cache_data(ttl=300)
def hardware():
    return detect(knowledge())


k = knowledge()
lang = st.sidebar.radio("Language / 语言", ["en", "zh"], format_func=lambda x: {"en": "English", "zh": "简体中文"}[x],
                        key="lang", horizontal=True)
st.title("Inference-engine selection advisor" if lang == "en" else "推理引擎选型助手")

hw = hardware()
with st.expander(k.s("hardware_title", lang), expanded=True):
    from advisor.render import hardware_text

    st.code(hardware_text(hw, k, lang), language=None)

examples = sorted(p.name for p in EXAMPLES.glob("*.yaml"))
choice = st.selectbox("Example answers" if lang == "en" else "示例答案", examples, key="example")
try:
    answers = load_answers(EXAMPLES / choice)
except AnswersError as err:
    st.error(str(err))
    st.stop()
rec = recommend(answers, None if answers.hardware else hw, k, lang=lang)
st.subheader(k.s("ranking_title", lang))
for i, r in enumerate(rec.ranking, 1):
    with st.expander(f"{i}. {r.name} — {r.score:g}", expanded=i == 1):
        for reason in r.reasons:
            st.markdown(f"`{reason.delta:+g}` {reason.text}  \n<small>{reason.rule} · {reason.source}</small>",
                        unsafe_allow_html=True)
if rec.excluded:
    st.subheader(k.s("excluded_title", lang))
    for x in rec.excluded:
        st.markdown(f"**{x.name}** — " + " ".join(y.text for y in x.reasons))
st.subheader(k.s("flips_title", lang))
for f in rec.flips:
    st.markdown(f"- {f.text}")
if not rec.flips and rec.flip_note:
    st.markdown(f"- {rec.flip_note}")

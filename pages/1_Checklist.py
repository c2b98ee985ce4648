"""The 8 questions as a guided form (one step each, plus the model block), back/next and progress.

Widgets are seeded from the answers and write back from their callbacks only (ui.widgets), so going Back,
switching language or visiting another page never changes an answer.
"""
from pathlib import Path
from typing import get_args

import streamlit as st

from advisor.inputs import Precision, dump_answers
from advisor.inputs.answers import MAX_FILE_BYTES
from advisor.report import md_escape
from advisor.report import file_shape_text
from ui import (ANSWERS, NOTICE, STEP, T, answers, file_uploader, knowledge, lang, model_file_shape,
                model_shape_caption, on_change, seed, set_answers, show_notice, size_text, take_model_config,
                target_editor)

k = knowledge()
L = lang()
qs = sorted(k.checklist.questions, key=lambda q: q.number)
n = len(qs) + 1
ss = st.session_state
step = max(0, min(n - 1, int(ss.get(STEP, 0))))
data = ss[ANSWERS]
st.title(T("nav_checklist"))
st.progress((step + 1) / n, text=T("ui_step", i=step + 1, n=n))

if step < len(qs):
    q = qs[step]
    st.subheader(f"{q.number}. {q.question.get(L)}")
    st.caption(q.help.get(L))
    key = f"q_{q.id}"
    if q.kind == "int":
        st.number_input(q.short.get(L), min_value=1, step=1, key=seed(key, int(data.get(q.key, q.default))),
                        on_change=on_change(key, (q.key,), int))
        st.caption(T("ui_typical") + " " + " · ".join(o.label.get(L) for o in q.options))
    elif q.kind == "hardware":
        target_editor("q3")
    else:
        values = [o.value for o in q.options]
        labels = [o.label.get(L) for o in q.options]
        cur = data.get(q.key, q.default)
        st.radio(q.short.get(L), range(len(values)), key=seed(key, values.index(cur) if cur in values else 0),
                 format_func=lambda i: labels[i], horizontal=True,
                 on_change=on_change(key, (q.key,), lambda i: values[i]))
else:
    st.subheader(T("ui_model_block"))
    m = data.get("model", {})
    models = {x.id: x for x in k.models.models}
    names = [""] + list(models)

    def pick_model() -> None:
        mid = ss["m_name"] or None
        new = dict(ss[ANSWERS].get("model", {}))
        new["name"] = mid
        if mid:  # a catalogue pick replaces a config.json given before (model.path would win over the name)
            new.pop("path", None)
            ss.pop("m_path", None)
        if mid:  # a known model fills what the planner will use, so the answers and the plan agree
            x = models[mid]
            # the context stays the user's (a model's maximum, 131,072 for Llama 3.1, is not a serving default: at
            # 16 users it needs 16 full windows of KV); only a context beyond the model's window is cut to it
            ctx = int(new.get("context_tokens") or 4096)
            new.update(params_b=x.params_b, architecture=x.architecture, context_tokens=min(ctx, x.max_context))
            ss.pop("m_ctx", None)  # re-seeded from the answers on this rerun
            # a checkpoint stored below 16 bits (gpt-oss's MXFP4, DeepSeek-V3's FP8) is planned as stored, unless a
            # precision was chosen: the default (fp16) and the one the previous pick set are not choices
            before = models.get(ss[ANSWERS].get("model", {}).get("name") or "")
            unchosen = {"fp16", before.checkpoint_precision if before is not None else None}
            if new.get("precision", "fp16") in unchosen:
                new["precision"] = x.checkpoint_precision or "fp16"
                ss.pop("m_prec", None)
        set_answers({**ss[ANSWERS], "model": {key: v for key, v in new.items() if v is not None}})

    from advisor.planner import find_known

    known = find_known(m.get("name") or "", k) if m.get("name") else None
    st.selectbox(T("ui_model_name"), names, key=seed("m_name", known.id if known else ""),
                 format_func={i: f"{models[i].name} ({i})" if i else T("ui_model_none") for i in names}.get,
                 on_change=pick_model)
    if known:
        st.caption(T("ui_model_known", params=f"{known.params_b:g}", arch=T(f"arch_{known.architecture}"),
                     ctx=f"{known.max_context:,}") + " " + model_shape_caption(known))
    elif m.get("name"):  # a name from a file or a link that the catalogue does not hold: kept, and said
        st.warning(T("ui_unknown_name", name=md_escape(m["name"][:80])))
    file_spec = file_err = None
    if m.get("path") and not known:  # the file's own shape wins over the size and architecture below
        st.info(T("ui_path_wins", path=md_escape(Path(m["path"]).name[:120])))
        # what the file gives, echoed where it was given (walk-3 L6)
        file_spec, file_err = model_file_shape(m["path"], m.get("architecture") or "decoder-only")
        if file_spec is not None:
            st.caption(md_escape(file_shape_text(file_spec, k, L)))
        else:
            st.warning(md_escape(T("ui_file_unreadable", err=file_err)))
    with st.expander(T("ui_config_upload"), expanded=False):
        from advisor.planner.model_files import MAX_JSON_BYTES

        file_uploader(T("ui_config_upload"), ["json"], "m_config", take_model_config, MAX_JSON_BYTES,
                      T("ui_upload_types_config"), label_visibility="collapsed")
        st.text_area(T("ui_config_paste"), key="m_config_text", max_chars=1 << 20, height=120)
        st.button(T("ui_config_use"), key="m_config_use", on_click=take_model_config, args=(True,))
    c1, c2 = st.columns(2)
    if known:  # the named model's own size, shown (not the answers' params_b, which it overrides)
        c1.number_input(T("ui_params_b"), value=float(known.params_b), disabled=True, key=f"m_params_known_{known.id}")
    elif m.get("path"):  # the file's size (it is the user's choice too), never the previous model's; blank if unread
        size = round(file_spec.params_b, 2) if file_spec else None  # in the key: a widget keeps its first value
        c1.number_input(T("ui_params_b"), value=size, disabled=True, help=T("ui_params_from_file"),
                        key=f"m_params_file_{Path(m['path']).name[:80]}_{size}")
    else:
        c1.number_input(T("ui_params_b"), min_value=0.01, max_value=2000.0, step=0.5,
                        key=seed("m_params", float(m.get("params_b", 7.0))),
                        on_change=on_change("m_params", ("model", "params_b"), float))
    archs = ["decoder-only", "encoder-decoder", "encoder", "cnn"]
    if known:
        c2.selectbox(T("ui_architecture"), archs, index=archs.index(known.architecture), disabled=True,
                     format_func={x: T(f"arch_{x}") for x in archs}.get, key=f"m_arch_known_{known.id}")
    else:
        c2.selectbox(T("ui_architecture"), archs, format_func={x: T(f"arch_{x}") for x in archs}.get,
                     key=seed("m_arch", m.get("architecture", "decoder-only")),
                     on_change=on_change("m_arch", ("model", "architecture")))
    mods = ["", "text", "vision-language", "speech", "embedding", "vision"]
    shown = known.modality if known else (m.get("modality") or "")
    st.selectbox(T("ui_modality"), mods, index=mods.index(shown), disabled=bool(known),
                 key=f"m_mod_known_{known.id}" if known else seed("m_mod", shown),
                 format_func={x: (T(f"mod_{x}") if x else T("ui_auto")) for x in mods}.get,
                 on_change=None if known else on_change("m_mod", ("model", "modality"), lambda v: v or None))
    precs = list(get_args(Precision))
    c3, c4 = st.columns(2)
    c3.selectbox(T("ui_precision"), precs, key=seed("m_prec", m.get("precision", "fp16")),
                 on_change=on_change("m_prec", ("model", "precision")))
    c4.number_input(T("ui_context_tokens"), min_value=128, max_value=1_048_576, step=1024,
                    key=seed("m_ctx", int(m.get("context_tokens", 4096))),
                    on_change=on_change("m_ctx", ("model", "context_tokens"), int))
    c5, c6 = st.columns(2)
    c5.number_input(T("ui_input_tokens"), min_value=0, max_value=1_048_576, step=128,
                    key=seed("m_in", int(m.get("input_tokens") or 0)), help=T("ui_tokens_help"),
                    on_change=on_change("m_in", ("model", "input_tokens"), lambda v: int(v) or None))
    c6.number_input(T("ui_output_tokens"), min_value=0, max_value=65_536, step=64,
                    key=seed("m_out", int(m.get("output_tokens") or 0)), help=T("ui_tokens_help"),
                    on_change=on_change("m_out", ("model", "output_tokens"), lambda v: int(v) or None))
    kvs = ["auto", "fp16", "bf16", "fp8", "int8"]
    st.selectbox(T("ui_kv_cache_dtype"), kvs, key=seed("m_kv", m.get("kv_cache_dtype", "auto")),
                 format_func={x: T(f"ui_kv_{x}") for x in kvs}.get,
                 on_change=on_change("m_kv", ("model", "kv_cache_dtype")))
    c7, c8 = st.columns(2)  # the workload's shape: how long the prompts are, and how much of them repeats
    mixes = ["short", "long", "mixed"]
    c7.selectbox(T("ui_prompt_mix"), mixes, key=seed("w_mix", data.get("prompt_mix", "mixed")),
                 format_func={x: T(f"ui_prompt_mix_{x}") for x in mixes}.get,
                 on_change=on_change("w_mix", ("prompt_mix",)))
    shares = ["low", "high"]
    c8.selectbox(T("ui_prefix_sharing"), shares, key=seed("w_prefix", data.get("prefix_sharing", "low")),
                 format_func={x: T(f"ui_prefix_sharing_{x}") for x in shares}.get, help=T("ui_prefix_sharing_help"),
                 on_change=on_change("w_prefix", ("prefix_sharing",)))
    load = data.get("load") or {}
    c9, c10, c11 = st.columns(3)  # how requests arrive, the engine's batch cap, an ITL target: optional
    c9.number_input(T("ui_request_rate"), min_value=0.0, max_value=100_000.0, step=1.0,
                    key=seed("w_rate", float(load.get("request_rate_rps") or 0.0)), help=T("ui_request_rate_help"),
                    on_change=on_change("w_rate", ("load", "request_rate_rps"), lambda v: float(v) or None))
    c10.number_input(T("ui_max_batch"), min_value=0, max_value=100_000, step=16,
                     key=seed("w_batch", int(load.get("max_batch") or 0)), help=T("ui_max_batch_help"),
                     on_change=on_change("w_batch", ("load", "max_batch"), lambda v: int(v) or None))
    c11.number_input(T("ui_itl_target"), min_value=0.0, max_value=60_000.0, step=5.0,
                     key=seed("w_itl", float(data.get("itl_p95_ms") or 0.0)), help=T("ui_itl_target_help"),
                     on_change=on_change("w_itl", ("itl_p95_ms",), lambda v: float(v) if v and v >= 1 else None))
    st.text_input(T("ui_model_path_plan"), max_chars=4096, key=seed("m_path", m.get("path") or ""),
                  on_change=on_change("m_path", ("model", "path"), lambda v: v.strip() or None))

show_notice()


def go(to: int) -> None:
    ss[STEP] = max(0, min(n - 1, to))
    ss["_focus_step"] = True


if ss.pop("_focus_step", False):  # after Back/Next, the keyboard lands on the new question, not the buttons
    # st.iframe (srcdoc, same origin) in place of the deprecated components.html; the step in the text makes each
    # step's frame a new document, so its script runs again. Nothing user-supplied goes into it. 1 px high: "content"
    # measures at least the frame's own first height (150 px), and 0 is refused.
    st.iframe(f"""<!-- step {int(step)} --><style>html, body {{ margin: 0; overflow: hidden; }}</style>
    <script>
      const doc = window.parent.document;
      const el = doc.querySelector('[data-testid="stMain"] input:not([disabled]), [data-testid="stMain"] [role="radio"]');
      if (el) {{ el.focus({{preventScroll: true}}); }}
    </script>""", height=1, tab_index=-1)


c1, c2, _ = st.columns([1, 2, 3])
c1.button(T("ui_back"), key="back", disabled=step == 0, on_click=go, args=(step - 1,))
if step < n - 1:
    c2.button(T("ui_next"), key="next", type="primary", on_click=go, args=(step + 1,))
elif c2.button(T("ui_see_ranking"), key="to_ranking", type="primary"):
    st.switch_page("pages/3_Recommendation.py")
st.caption(" · ".join(f"{'**' if i == step else ''}{i + 1}{'**' if i == step else ''}" for i in range(n)))


def uploaded() -> None:
    """An answers file, YAML or JSON (JSON is YAML: one parser, the CLI's, reads both)."""
    from advisor.inputs import AnswersError, answers_from_text

    up = ss.get("upload")
    if up is None:
        return
    raw, name = up.getvalue(), md_escape((up.name or "answers")[:120])  # the name is shown as Markdown
    if len(raw) > MAX_FILE_BYTES:  # said here in the reader's language, before the parser's English line
        ss[NOTICE] = ("error", T("ui_upload_too_big", file=name, size=size_text(len(raw)),
                                 limit=size_text(MAX_FILE_BYTES)))
        return
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        ss[NOTICE] = ("error", T("ui_upload_not_text", file=name))
        return
    try:
        a, count = answers_from_text(raw, name)
    except AnswersError as err:
        ss[NOTICE] = ("error", md_escape(str(err)))
        return
    ss[ANSWERS] = a.model_dump(mode="json", exclude_none=True)
    ss[NOTICE] = ("ok", T("ui_loaded_answers", n=count, file=name))


with st.expander(T("ui_upload"), expanded=NOTICE in ss):
    file_uploader(T("ui_upload_label"), ["yaml", "yml", "json"], "upload", uploaded, MAX_FILE_BYTES,
                  T("ui_upload_types_answers"))
    st.download_button(T("ui_download_answers"), dump_answers(answers()), file_name="answers.yaml",
                       mime="application/x-yaml", key="dl_answers", on_click="ignore")
    if st.button(T("ui_reset_answers"), key="reset_answers"):
        from advisor.inputs import Answers

        ss[ANSWERS] = Answers().model_dump(mode="json", exclude_none=True)
        ss[STEP] = 0
        st.rerun()

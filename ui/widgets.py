"""Widgets every page shares: the page config and language switch (drawn by app.py), widgets bound to the
answers (seeded before they are drawn, written back from their callbacks), the answers notice, and Streamlit's
file uploader in our words."""
from __future__ import annotations

from typing import Any, Callable

import streamlit as st

from ui.state import LANG, NOTICE, lang, set_answer
from ui.text import T, size_text


def page_config() -> None:
    st.set_page_config(page_title=T("ui_title"), page_icon="🧭", layout="wide")


LANG_NAMES = {"en": "English", "zh": "简体中文"}
LANG_SHORT = {"en": "English", "zh": "中文"}  # the top switch: short, and not the sidebar's words (tests find those)


def language_switch() -> None:
    """Drawn once per run by app.py, so it is the same widget on every page and never resets.

    Two switches over the one `lang` state: the sidebar's radio, and a compact one at the top of the main area
    for a phone, where the sidebar starts collapsed. The top one is shown only while the sidebar is collapsed
    (CSS on the sidebar's data-collapsed), so a desktop sees one switch. Both are seeded from `lang` before they
    are drawn and write it from their own callback, so they cannot disagree."""
    ss = st.session_state
    ss["_lang_pick"] = ss["_lang_top"] = lang()

    def changed(key: str) -> Callable[[], None]:
        def cb() -> None:
            if ss.get(key) in LANG_NAMES:  # the segmented control gives None when its pick is clicked again
                ss[LANG] = ss[key]
        return cb

    label = T("ui_language")  # the same in both languages: whoever cannot read this one still finds it
    st.sidebar.radio(label, list(LANG_NAMES), key="_lang_pick", horizontal=True, on_change=changed("_lang_pick"),
                     format_func=LANG_NAMES.get)
    with st.container(key="lang_top", horizontal=True, horizontal_alignment="right"):
        st.segmented_control(label, list(LANG_SHORT), key="_lang_top", required=True, label_visibility="collapsed",
                             format_func=LANG_SHORT.get, on_change=changed("_lang_top"))
    st.html('<style>body:has([data-testid="stSidebar"][data-collapsed="false"]) .st-key-lang_top '
            "{ display: none; }</style>")


# ---------------------------------------------------------------- widgets bound to the answers

def seed(key: str, value: Any) -> str:
    """Give a widget its value from the answers before it is drawn; returns the key."""
    st.session_state[key] = value
    return key


def on_change(key: str, path: tuple[str, ...], convert: Callable[[Any], Any] = lambda v: v) -> Callable[[], None]:
    """A callback that writes a widget's new value into the answers."""
    def cb() -> None:
        set_answer(path, convert(st.session_state[key]))
    return cb


def show_notice() -> None:
    """The last answers message: a refused value until the next change; an upload's confirmation once, where it
    happened (walk-3 L7: "Loaded 6 answers from …" stayed on every step and page, in the language of the upload)."""
    kind, text = st.session_state.get(NOTICE, (None, None))
    if kind == "error":
        st.error(T("ui_answer_refused", why=text), icon=":material/error:")
    elif kind == "ok":
        st.success(text, icon=":material/check_circle:")
        st.session_state.pop(NOTICE, None)


# ---------------------------------------------------------------- uploads (Streamlit's uploader, in our words)

UPLOAD_MAX_MB = 1  # Streamlit's cap per uploaded file, per widget (each passes its own max_upload_size)
EVIDENCE_MAX_MB = 20  # a benchmark result file (GuideLLM keeps sampled requests): .streamlit/config.toml's server cap


def _css_string(text: str) -> str:
    """Our own text as a CSS string literal inside a <style> tag: anything but letters, digits and spaces is a
    hex escape, so no quote, backslash or "</style>" can end it."""
    return '"' + "".join(ch if ch.isalnum() or ch == " " else f"\\{ord(ch):x} " for ch in text) + '"'


def uploader_style() -> None:
    """What Streamlit's uploader says in English and cannot be told otherwise: its button ("Upload"), the
    drop-zone line with Streamlit's own size and types ("1MB per file • YAML, YML") and, while a file is
    dragged over it, "Drag and drop a file here". The line is hidden (each uploader's caption states the one
    limit that holds); the button and the drag text say ours, from strings.yaml (CSS generated text, which a
    screen reader reads too)."""
    zone = '[data-testid="stFileUploaderDropzone"]'
    drag = f"{zone} > div:not([data-testid]):not(:has([data-testid])) > span"  # the overlay shown while dragging
    st.html(f"""<style>
      [data-testid="stFileUploaderDropzoneInstructions"] {{ display: none; }}
      {zone} button [data-testid="stMarkdownContainer"] > * {{ display: none; }}
      {zone} button [data-testid="stMarkdownContainer"]::after {{ content: {_css_string(T("ui_upload_browse"))}; }}
      {drag} {{ font-size: 0; }}
      {drag}::after {{ content: {_css_string(T("ui_upload_drop"))}; font-size: 1rem; }}
    </style>""")


def file_uploader(label: str, types: list[str], key: str, on_change: Callable[[], None], limit_bytes: int,
                  types_text: str, label_visibility: str = "visible", max_mb: int = UPLOAD_MAX_MB) -> None:
    """st.file_uploader with our texts: the label, a help tip and a caption that states the types and the one
    limit that holds (the smaller of the app's own `limit_bytes` and the widget's cap, max_mb: UPLOAD_MAX_MB unless
    the widget takes larger files, as a benchmark report with its requests is; at most the server's
    maxUploadSize)."""
    uploader_style()
    st.file_uploader(label, type=types, key=key, on_change=on_change, help=T("ui_upload_help"),
                     max_upload_size=max_mb, label_visibility=label_visibility)
    st.caption(T("ui_upload_limit", types=types_text, size=size_text(min(limit_bytes, max_mb * 1_000_000))))

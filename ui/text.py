"""The app's words: the strings lookup in the reader's language, and sizes as the captions state them.

strings.yaml is read here as plain data, so the home page paints its title before the validated knowledge,
the schemas and hardware detection are loaded.
"""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from ui.state import lang


@st.cache_resource
def _strings() -> dict:
    """strings.yaml as plain data for the first paint (knowledge() validates the same file when it loads)."""
    import yaml

    path = Path(__file__).resolve().parents[1] / "knowledge" / "strings.yaml"
    return yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))["strings"]


def T(key: str, **kw) -> str:
    text = _strings()[key][lang()]
    return text.format(**kw) if kw else text


def size_text(n_bytes: int) -> str:
    """256 KiB, 1 MB: a byte limit as the captions state it."""
    if n_bytes % (1 << 20) == 0:
        return f"{n_bytes >> 20} MiB"
    if n_bytes % 1_000_000 == 0:
        return f"{n_bytes // 1_000_000} MB"
    if n_bytes >= 1 << 10:
        return f"{n_bytes / 1024:.0f} KiB" if n_bytes % 1024 == 0 else f"{n_bytes / 1024:.1f} KiB"
    return f"{n_bytes} B"

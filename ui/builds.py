"""The engines that build from source beside the app (probes.builds): where each build stands, on the Hardware and
Probe pages, redrawn every few seconds while one runs, and the whole page redrawn once it ends (so the engine is
offered without a restart)."""
from __future__ import annotations

import streamlit as st

from ui.text import T

#: the engines with a source build, by the name the pages show
BUILT = {"llama.cpp": "llama.cpp"}
_POLL_S = 3


def build_states() -> dict[str, str]:
    """engine -> absent | building | ready | failed, read now (cheap: a lock and a small file). Part of the cache key
    of the pages' availability checks, so a build that ends is seen at once."""
    from probes.builds import status

    out = {}
    for engine in BUILT:
        try:
            out[engine] = status(engine).state
        except OSError:  # an unusable cache dir: the availability check says why
            out[engine] = "absent"
    return out


def _md_code(text: str) -> str:
    return "`" + " ".join(str(text).replace("`", "'").split())[:300] + "`"


def _show(engine: str, st_) -> None:
    from probes.builds import status

    s = status(engine)
    name = BUILT[engine]
    if s.state == "building":
        n = s.step[1] if s.step and s.step[:1] == "[" else None
        step = T(f"build_step_{n}") if n in ("1", "2", "3", "4") else T("build_starting")
        pct = f" · {s.percent:.0f} %" if s.percent is not None else ""
        eta = T("build_eta", min=max(1, round(s.eta_s / 60))) if s.eta_s is not None else ""
        st_.info(T("build_running", engine=name, step=step, pct=pct, eta=eta))
        st_.progress(min(1.0, (s.percent or 0) / 100))
    elif s.state == "failed":
        st_.error(T("build_failed", engine=name, log=_md_code(s.log), cmd=s.retry))
        st_.code("\n".join(s.log_tail) or "—", language=None)
    elif s.state == "absent":
        st_.warning(T("build_absent", engine=name, cmd=s.retry))


def build_panel() -> None:
    """Nothing when every build is done; else one line per build with its progress. While one runs, a fragment polls
    it; when a state changes the whole page reruns, so the lists that read availability are drawn anew."""
    states = build_states()
    if all(v == "ready" for v in states.values()):
        return
    key = "_build_states_seen"
    st.session_state[key] = states

    @st.fragment(run_every=_POLL_S if "building" in states.values() else None)
    def _panel() -> None:
        now = build_states()
        if now != st.session_state.get(key):
            st.session_state[key] = now
            st.rerun(scope="app")
        for engine, state in now.items():
            if state != "ready":
                _show(engine, st)

    _panel()

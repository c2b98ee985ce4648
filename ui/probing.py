"""The probes as the app holds them: the server's job board (shared by every tab) and what each engine can run
here (asked under the interpreter its probe uses, once per process or a few minutes)."""
from __future__ import annotations

import streamlit as st

from ui.text import T


@st.cache_resource
def probe_board():
    """The server's probe jobs (probes.jobs.JobBoard): shared by every tab, so a reload finds a running probe."""
    from probes.jobs import JobBoard

    return JobBoard()


def llama_cpu_build_on_gpu_machine(hw) -> str | None:
    """On a machine with an NVIDIA GPU whose llama-cpp-python cannot offload: the line that says so and the
    command that rebuilds it (asked once, in a child process; never on a machine without a GPU)."""
    if not hw.gpus:
        return None
    offload = _llama_offload()
    if offload is not False:
        return None
    from probes.install_plan import REBUILD_LLAMA

    return T("ui_llama_cpu_build", cmd=REBUILD_LLAMA)


@st.cache_resource(show_spinner=False)
def _llama_offload() -> bool | None:
    from probes.cli import llama_gpu_offload

    return llama_gpu_offload()


def engine_availability() -> dict[str, str | None]:
    """Why each engine cannot run here (None = ready), checked under the interpreter its probe uses; checked anew
    when a source build changes state (an engine that finishes building is offered without a restart)."""
    from ui.builds import build_states

    return _engine_availability(tuple(sorted(build_states().items())))


@st.cache_resource(ttl=600, show_spinner=False)
def _engine_availability(builds: tuple) -> dict[str, str | None]:
    """engine_availability's cached body; `builds` is only its cache key."""
    from probes.cli import availability
    from probes.registry import BACKENDS

    out = {}
    for engine in BACKENDS:
        try:
            out[engine] = availability(engine)
        except Exception as err:  # noqa: BLE001 (a broken venv is a reason, not a crash)
            out[engine] = f"{type(err).__name__}: {err}"[:200]
    return out

"""The user's own benchmark files on the Probe page (GuideLLM, AIPerf, vllm bench, SGLang, llm-d; probes.bench_formats
reads them): kept in this session only (never stored, never in the link), what the user said of each, their checks
beside the prediction, and the recalibrations the pages' plans take with this machine's own."""
from __future__ import annotations

import streamlit as st

from ui.planning import knowledge
from ui.text import T

FILES = "evidence_files"  # {file name: ImportedRun JSON}, at most MAX_FILES
SAID = "evidence_said"  # {file name: Assumed as a dict}
ERROR = "evidence_error"
MAX_FILES = 4


def take_upload(key: str) -> None:
    """The uploader's callback: read the file; a bad one leaves one line and nothing kept."""
    from probes.bench_formats import MAX_BYTES, ResultFormatError, read_results

    f = st.session_state.get(key)
    st.session_state.pop(ERROR, None)
    if f is None:
        return
    name = str(getattr(f, "name", "file"))[:200]
    try:
        if getattr(f, "size", 0) > MAX_BYTES:
            raise ResultFormatError(f"{name}: {f.size / 2**20:.0f} MiB is more than a benchmark result file holds "
                                    f"(at most {MAX_BYTES >> 20} MiB)")
        run = read_results(f.getvalue(), name)
    except ResultFormatError as err:
        st.session_state[ERROR] = str(err)
        return
    files = dict(st.session_state.get(FILES) or {})
    files.pop(run.file_name, None)
    files[run.file_name] = run.model_dump_json()
    while len(files) > MAX_FILES:  # the oldest goes
        files.pop(next(iter(files)))
    st.session_state[FILES] = files


def runs() -> dict:
    from probes.bench_formats import ImportedRun

    return {n: ImportedRun.model_validate_json(j) for n, j in (st.session_state.get(FILES) or {}).items()}


def said(name: str):
    from advisor.evidence.imported import Assumed

    return Assumed.model_validate((st.session_state.get(SAID) or {}).get(name) or {})


def set_said(name: str, **kw) -> None:
    d = dict(st.session_state.get(SAID) or {})
    d[name] = {**(d.get(name) or {}), **kw}
    st.session_state[SAID] = d


def remove(name: str) -> None:
    files = dict(st.session_state.get(FILES) or {})
    files.pop(name, None)
    st.session_state[FILES] = files


@st.cache_data(show_spinner=False, max_entries=32)
def _check(run_json: str, answers_json: str, said_json: str, lang: str):
    from advisor.evidence.imported import Assumed, check_evidence
    from advisor.inputs import Answers
    from probes.bench_formats import ImportedRun

    return check_evidence(ImportedRun.model_validate_json(run_json), Answers.model_validate_json(answers_json),
                          knowledge(), Assumed.model_validate_json(said_json), lang).model_dump_json()


def checks(a, lang: str) -> list:
    """Each kept file beside the prediction for the answers a."""
    from advisor.evidence.imported import EvidenceCheck

    out = []
    for name, j in (st.session_state.get(FILES) or {}).items():
        out.append(EvidenceCheck.model_validate_json(_check(j, a.model_dump_json(), said(name).model_dump_json(),
                                                            lang)))
    return out


def calibrations(a, lang: str) -> dict:
    """This machine's own calibration and the kept files' recalibrations, as the planners take them."""
    from advisor.planner import calibration

    cal = dict(calibration.load())
    for c in checks(a, lang) if st.session_state.get(FILES) else []:
        if c.calibration is not None:
            cal[f"evidence:{c.calibration.engine}"] = c.calibration
    return cal

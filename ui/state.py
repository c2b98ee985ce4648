"""Session state, in one place each, and its mirror in the URL's query string.

- `answers`: the validated answers dict (the same schema as the CLI's answers file). Widgets never write
  into it on a rerun: each widget is seeded from it before it is drawn and writes back only from its
  own on_change callback, so no page can put a default over a value the user chose.
- `lang`: "en" or "zh". The sidebar switch is drawn by app.py on every page and writes it from a callback.
- `wizard_step`: the checklist step.
- `report_runs`: the probe runs picked for the report (history ids).
- `report_sweeps`: the sweeps picked for the Probe page and the report (history group names).
All five are mirrored in the URL's query string, so a reload (F5) or a bookmarked link keeps them.
"""
from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from typing import TYPE_CHECKING, Any

import streamlit as st

if TYPE_CHECKING:
    from advisor.inputs import Answers

ANSWERS, LANG, STEP, NOTICE, RUNS = "answers", "lang", "wizard_step", "answers_notice", "report_runs"
LINK_PATH = "link_model_path"  # a model.path that came in a link: not read until the user acts on it
SWEEPS = "report_sweeps"  # the sweep groups picked for the Probe page and the report (history group names)
_GROUP = re.compile(r"job-\d{1,9}-\d{1,12}")
URL_MAX_CHARS = 8192  # the encoded answers in the URL; more is ignored (a hostile or mangled link)
URL_MAX_JSON_BYTES = 65536  # inflated size cap: a zip bomb in the link stops here
# Answers().model_dump(mode="json", exclude_none=True), written out so a first visit without answers in its link
# renders without importing the answers' models (tests/ui/test_state.py holds it equal to the model's defaults).
DEFAULT_ANSWERS: dict = {
    "concurrency": 1, "ttft_p95_ms": 1000, "cross_platform": False, "cuda_expertise": "none",
    "model_update": "monthly", "non_llm_models": False, "strict_sla": False,
    "model": {"params_b": 7.0, "architecture": "decoder-only", "precision": "fp16", "context_tokens": 4096,
              "kv_cache_dtype": "auto"},
    "deployment": "server", "prompt_mix": "mixed", "prefix_sharing": "low"}


def default_answers() -> dict:
    return json.loads(json.dumps(DEFAULT_ANSWERS))  # a copy: session state is edited in place


def lang() -> str:
    return "zh" if st.session_state.get(LANG) == "zh" else "en"


# ---------------------------------------------------------------- the URL mirror (F5 keeps everything)

def encode_answers(data: dict) -> str:
    raw = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode("ascii").rstrip("=")


def decode_answers(text: str) -> dict | None:
    """None for anything that is not a link we wrote (bounded: length, inflated size, JSON shape)."""
    if not text or len(text) > URL_MAX_CHARS:
        return None
    try:
        packed = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        d = zlib.decompressobj()
        raw = d.decompress(packed, URL_MAX_JSON_BYTES)
        if d.unconsumed_tail:
            return None
        data = json.loads(raw.decode("utf-8"))
    except (binascii.Error, zlib.error, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def restore_state() -> None:
    """A new session (first visit or F5) takes its language, answers and step from the URL."""
    ss, qp = st.session_state, st.query_params
    if LANG not in ss:
        ss[LANG] = "zh" if qp.get("lang") == "zh" else "en"
    if ANSWERS not in ss:
        data = decode_answers(qp.get("a", ""))
        ss[ANSWERS] = default_answers()
        if data:
            from advisor.inputs import AnswersError, parse_answers

            try:
                ss[ANSWERS] = parse_answers(data).model_dump(mode="json", exclude_none=True)
            except AnswersError:
                pass
        path = (ss[ANSWERS].get("model") or {}).get("path")
        if path:  # someone else's link may name any file of this machine: read it only when the user asks
            ss[LINK_PATH] = path
    if STEP not in ss:
        try:
            ss[STEP] = max(0, min(8, int(qp.get("step", "0"))))
        except ValueError:
            ss[STEP] = 0
    if RUNS not in ss:
        ss[RUNS] = [int(x) for x in qp.get("runs", "").split(",")[:50] if x.isascii() and x.isdigit() and len(x) < 10]
    if SWEEPS not in ss:
        ss[SWEEPS] = [g for g in qp.get("sw", "").split(",")[:20] if _GROUP.fullmatch(g)]


def sync_url() -> None:
    """Write the state into the query string (only what differs from the defaults, so links stay short)."""
    want: dict[str, str] = {}
    if lang() == "zh":
        want["lang"] = "zh"
    if st.session_state[ANSWERS] != DEFAULT_ANSWERS:
        want["a"] = encode_answers(st.session_state[ANSWERS])
    if st.session_state.get(STEP):
        want["step"] = str(st.session_state[STEP])
    if st.session_state.get(RUNS):
        want["runs"] = ",".join(str(r) for r in st.session_state[RUNS])
    if st.session_state.get(SWEEPS):
        want["sw"] = ",".join(st.session_state[SWEEPS])
    if dict(st.query_params) != want:
        st.query_params.from_dict(want)


# ---------------------------------------------------------------- answers

def answers() -> Answers:
    from advisor.inputs import Answers, AnswersError, parse_answers

    try:
        return parse_answers(st.session_state[ANSWERS])
    except AnswersError:
        return Answers()


def answers_data() -> dict:
    return json.loads(json.dumps(st.session_state[ANSWERS]))  # a deep copy the caller may edit


def set_answers(data: dict) -> str | None:
    """Validate with the same schema as the CLI; keep the old answers on error and return the message."""
    from advisor.inputs import AnswersError, parse_answers

    try:
        a = parse_answers(data)
    except AnswersError as err:
        st.session_state[NOTICE] = ("error", str(err))
        return str(err)
    st.session_state[ANSWERS] = a.model_dump(mode="json", exclude_none=True)
    if st.session_state.get(NOTICE, ("",))[0] == "error":
        st.session_state.pop(NOTICE, None)
    return None


def set_answer(path: tuple[str, ...], value: Any) -> str | None:
    """Set one answer (e.g. ("model", "name")); None removes the key."""
    data = answers_data()
    node = data
    for part in path[:-1]:
        node = node.setdefault(part, {})
    if value is None:
        node.pop(path[-1], None)
        if not node and len(path) == 2:  # an optional block left empty (load: {}) is no block
            data.pop(path[0], None)
    else:
        node[path[-1]] = value
    return set_answers(data)

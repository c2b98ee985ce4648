"""Shared UI helpers for app.py and pages/ (Streamlit only here; logic lives in advisor/ and probes/).

State, in one place each (session state):
- `answers`: the validated answers dict (the same schema as the CLI's answers file). Widgets never write
  into it on a rerun: each widget is seeded from it before it is drawn and writes back only from its
  own on_change callback, so no page can put a default over a value the user chose.
- `lang`: "en" or "zh". The sidebar switch is drawn by app.py on every page and writes it from a callback.
- `wizard_step`: the checklist step.
- `report_runs`: the probe runs picked for the report (history ids).
- `report_sweeps`: the sweeps picked for the Probe page and the report (history group names).
All five are mirrored in the URL's query string, so a reload (F5) or a bookmarked link keeps them.

The advisor's modules are imported inside the helpers, not here: the home page paints its title from the
strings file alone, before the validated knowledge, the schemas and hardware detection are loaded.
"""
from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import streamlit as st

if TYPE_CHECKING:
    from advisor.inputs import Answers

ANSWERS, LANG, STEP, NOTICE, RUNS = "answers", "lang", "wizard_step", "answers_notice", "report_runs"
LINK_PATH = "link_model_path"  # a model.path that came in a link: not read until the user acts on it
SWEEPS = "report_sweeps"  # the sweep groups picked for the Probe page and the report (history group names)
_GROUP = re.compile(r"job-\d{1,9}-\d{1,12}")
URL_MAX_CHARS = 8192  # the encoded answers in the URL; more is ignored (a hostile or mangled link)
URL_MAX_JSON_BYTES = 65536  # inflated size cap: a zip bomb in the link stops here


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
    from advisor.inputs import detect

    return detect(knowledge())


def lang() -> str:
    return "zh" if st.session_state.get(LANG) == "zh" else "en"


def T(key: str, **kw) -> str:
    text = _strings()[key][lang()]
    return text.format(**kw) if kw else text


def page_config() -> None:
    st.set_page_config(page_title=T("ui_title"), page_icon="🧭", layout="wide")


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
    from advisor.inputs import Answers, AnswersError, parse_answers

    ss, qp = st.session_state, st.query_params
    if LANG not in ss:
        ss[LANG] = "zh" if qp.get("lang") == "zh" else "en"
    if ANSWERS not in ss:
        data = decode_answers(qp.get("a", ""))
        try:
            ss[ANSWERS] = parse_answers(data).model_dump(mode="json", exclude_none=True) if data else \
                Answers().model_dump(mode="json", exclude_none=True)
        except AnswersError:
            ss[ANSWERS] = Answers().model_dump(mode="json", exclude_none=True)
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
    from advisor.inputs import Answers

    want: dict[str, str] = {}
    if lang() == "zh":
        want["lang"] = "zh"
    if st.session_state[ANSWERS] != Answers().model_dump(mode="json", exclude_none=True):
        want["a"] = encode_answers(st.session_state[ANSWERS])
    if st.session_state.get(STEP):
        want["step"] = str(st.session_state[STEP])
    if st.session_state.get(RUNS):
        want["runs"] = ",".join(str(r) for r in st.session_state[RUNS])
    if st.session_state.get(SWEEPS):
        want["sw"] = ",".join(st.session_state[SWEEPS])
    if dict(st.query_params) != want:
        st.query_params.from_dict(want)


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


# ---------------------------------------------------------------- uploads (Streamlit's uploader, in our words)

UPLOAD_MAX_MB = 1  # Streamlit's cap per uploaded file, per widget; .streamlit/config.toml's server.maxUploadSize too


def size_text(n_bytes: int) -> str:
    """256 KiB, 1 MB: a byte limit as the captions state it."""
    if n_bytes % (1 << 20) == 0:
        return f"{n_bytes >> 20} MiB"
    if n_bytes % 1_000_000 == 0:
        return f"{n_bytes // 1_000_000} MB"
    if n_bytes >= 1 << 10:
        return f"{n_bytes / 1024:.0f} KiB" if n_bytes % 1024 == 0 else f"{n_bytes / 1024:.1f} KiB"
    return f"{n_bytes} B"


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
                  types_text: str, label_visibility: str = "visible") -> None:
    """st.file_uploader with our texts: the label, a help tip and a caption that states the types and the one
    limit that holds (the smaller of the app's own `limit_bytes` and Streamlit's cap)."""
    uploader_style()
    st.file_uploader(label, type=types, key=key, on_change=on_change, help=T("ui_upload_help"),
                     max_upload_size=UPLOAD_MAX_MB, label_visibility=label_visibility)
    st.caption(T("ui_upload_limit", types=types_text, size=size_text(min(limit_bytes, UPLOAD_MAX_MB * 1_000_000))))


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
    else:
        node[path[-1]] = value
    return set_answers(data)


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
    """The last answers message (an upload's confirmation, a refused value), until the next change."""
    kind, text = st.session_state.get(NOTICE, (None, None))
    if kind == "error":
        st.error(T("ui_answer_refused", why=text), icon=":material/error:")
    elif kind == "ok":
        st.success(text, icon=":material/check_circle:")


# ---------------------------------------------------------------- the target hardware (checklist step 3 and Hardware)

def target_editor(prefix: str) -> None:
    """One editor for the target hardware, shared by checklist step 3 and the Hardware page: the same GPU list
    (knowledge/gpus.yaml) and the same answers key, so the two can never disagree."""
    k = knowledge()
    ss = st.session_state
    hw = ss[ANSWERS].get("hardware")

    def set_mode() -> None:
        if ss[f"{prefix}_mode"] == "this":
            if ss[ANSWERS].get("hardware"):
                ss["_hw_last"] = ss[ANSWERS]["hardware"]
            set_answer(("hardware",), None)
        else:
            set_answer(("hardware",), ss.get("_hw_last") or {"gpu_vendor": "none", "gpu_count": 0})

    st.radio(T("ui_target_mode"), ["this", "other"], key=seed(f"{prefix}_mode", "other" if hw else "this"),
             horizontal=True, on_change=set_mode,
             format_func={"this": T("ui_this_machine"), "other": T("ui_other_hw")}.get)
    if not hw:
        return
    from advisor.planner import find_gpu

    gpus = {g.id: g for g in k.gpus.gpus}
    options = ["none"] + list(gpus)
    if hw.get("gpu_vendor", "none") == "none":
        cur = "none"
    else:
        known = find_gpu(hw.get("gpu_model"), k)
        cur = known.id if known else "custom"
        if cur == "custom":  # a GPU from an answers file that is not in the list: keep it, as its own entry
            options.append("custom")

    cpu_only = T("ui_cpu_only")  # labels are fixed now: a format_func must not read session state later

    def label(gid: str) -> str:
        if gid == "none":
            return cpu_only
        if gid == "custom":
            return f"{hw.get('gpu_model') or hw.get('gpu_vendor')} ({hw.get('gpu_memory_gb') or '?'} GB)"
        g = gpus[gid]
        return f"{g.name} ({g.memory_gb:g} GB)"

    def set_gpu() -> None:
        gid = ss[f"{prefix}_gpu"]
        keep = ("ram_gb", "cpu_cores", "cpu_arch", "os", "nodes", "interconnect", "unified_memory")
        new = {key: v for key, v in (ss[ANSWERS].get("hardware") or {}).items() if key in keep}
        if gid == "none":
            for key in ("nodes", "interconnect", "unified_memory"):
                new.pop(key, None)
            new.update(gpu_vendor="none", gpu_count=0)
        elif gid != "custom":
            g = gpus[gid]
            per = max(1, int(ss.get(f"{prefix}_count") or 1))
            nodes = int(new.get("nodes") or 1)
            new.update(gpu_vendor=g.vendor, gpu_model=g.name, gpu_memory_gb=g.memory_gb, gpus_per_node=per,
                       gpu_count=per * nodes)
            if g.kind == "npu":
                new["accelerator"] = "npu"
            if g.vendor == "apple":
                new.update(os="macos", cpu_arch="arm64")
            elif new.get("os") == "macos":
                new.pop("os")
                new.pop("cpu_arch", None)
        set_answers({**answers_data(), "hardware": new})

    def set_topology(field: str) -> Callable[[], None]:
        """GPUs per node and nodes move together: gpu_count is always their product."""
        def cb() -> None:
            cur = dict(ss[ANSWERS].get("hardware") or {})
            nodes = int(cur.get("nodes") or 1)
            per = int(cur.get("gpus_per_node") or max(1, int(cur.get("gpu_count") or 1) // nodes))
            if field == "per":
                per = max(1, int(ss[f"{prefix}_count"]))
            else:
                nodes = max(1, int(ss[f"{prefix}_nodes"]))
            cur.update(nodes=nodes, gpus_per_node=per, gpu_count=nodes * per)
            set_answers({**answers_data(), "hardware": cur})
        return cb

    c1, c2 = st.columns([3, 1])
    c1.selectbox(T("ui_pick_gpu"), options, key=seed(f"{prefix}_gpu", cur), format_func=label, on_change=set_gpu)
    gpu = hw.get("gpu_vendor", "none") != "none"
    nodes = int(hw.get("nodes") or 1)
    if gpu:
        per = int(hw.get("gpus_per_node") or max(1, int(hw.get("gpu_count") or 1) // nodes))
        c2.number_input(T("ui_gpus_per_node") if nodes > 1 else T("ui_gpu_count"), min_value=1, max_value=64, step=1,
                        key=seed(f"{prefix}_count", per), on_change=set_topology("per"))
    else:
        c2.number_input(T("ui_cpu_cores"), min_value=0, max_value=4096, step=1,
                        key=seed(f"{prefix}_cores", int(hw.get("cpu_cores") or 0)),
                        on_change=on_change(f"{prefix}_cores", ("hardware", "cpu_cores"), lambda v: int(v) or None))
    c3, c4 = st.columns([3, 1])
    c3.number_input(T("ui_target_ram"), min_value=0, max_value=65536, step=1,
                    key=seed(f"{prefix}_ram", int(hw.get("ram_gb") or 0)),
                    on_change=on_change(f"{prefix}_ram", ("hardware", "ram_gb"), lambda v: int(v) or None))
    oses = ["", "linux", "windows", "windows-wsl", "macos"]
    c4.selectbox(T("ui_target_os"), oses, key=seed(f"{prefix}_os", hw.get("os") or ""),
                 format_func={o: (T(f"os_{o}") if o else "—") for o in oses}.get,
                 on_change=on_change(f"{prefix}_os", ("hardware", "os"), lambda v: v or None))
    if not gpu:
        return
    c5, c6, c7 = st.columns([1, 2, 2])
    c5.number_input(T("ui_nodes"), min_value=1, max_value=512, step=1, key=seed(f"{prefix}_nodes", nodes),
                    on_change=set_topology("nodes"))
    ics = ["", "nvlink", "infinity-fabric", "xe-link", "pcie", "infiniband", "roce", "ethernet", "ici", "hccs"]
    c6.selectbox(T("ui_interconnect"), ics, key=seed(f"{prefix}_ic", hw.get("interconnect") or ""),
                 format_func={x: (T(f"ic_{x}") if x else T("ui_auto")) for x in ics}.get,
                 on_change=on_change(f"{prefix}_ic", ("hardware", "interconnect"), lambda v: v or None))
    um = {None: "auto", True: "yes", False: "no"}[hw.get("unified_memory")]
    c7.selectbox(T("ui_unified_memory"), ["auto", "yes", "no"], key=seed(f"{prefix}_um", um),
                 format_func={"auto": T("ui_auto"), "yes": T("ui_yes"), "no": T("ui_no")}.get,
                 on_change=on_change(f"{prefix}_um", ("hardware", "unified_memory"),
                                     lambda v: {"auto": None, "yes": True, "no": False}[v]))


def model_shape_caption(m) -> str:
    """A catalogue model's attention kind, experts and sliding window, for the checklist's model step."""
    from advisor.planner import known_spec
    from advisor.report import shape_parts

    return T("ui_model_shape", **shape_parts(known_spec(m), knowledge(), lang()))


def take_model_config(pasted: bool = False) -> None:
    """A config.json uploaded or pasted on the model step: checked as model.path would read it, kept in the user
    cache dir under its hash, and model.path pointed at it (a reload or a link finds the same file)."""
    from probes.cache import cache_dir

    from advisor.planner import ModelSpecError, keep_config

    if pasted:
        text = st.session_state.get("m_config_text") or ""
        if not text.strip():
            return
        raw, name = text.encode("utf-8", "replace"), "config.json"
    else:
        up = st.session_state.get("m_config")
        if up is None:
            return
        raw, name = up.getvalue(), (up.name or "config.json")[:80]
    from advisor.report import md_escape  # the file's name and what is wrong with it are shown as Markdown

    try:
        path = keep_config(raw, cache_dir() / "configs", name)
    except (ModelSpecError, OSError) as err:
        st.session_state[NOTICE] = ("error", T("ui_config_error", file=md_escape(name), err=md_escape(str(err)[:300])))
        return
    model = {key: v for key, v in (answers_data().get("model") or {}).items() if key not in ("name", "path")}
    if set_answers({**answers_data(), "model": {**model, "path": str(path)}}) is None:
        st.session_state["m_path"] = str(path)
        st.session_state[NOTICE] = ("ok", T("ui_config_loaded", file=md_escape(name), path=path.name))


# ---------------------------------------------------------------- planning inputs

@st.cache_resource(show_spinner=False)
def machine():
    """This CPU's measured bandwidth and FLOPS (measured once per machine, ~3 s, then read from the cache)."""
    from advisor.planner import machine_bench
    from probes.cache import CacheDirError

    try:
        bench = machine_bench.cached()
        if bench is None:
            with st.spinner(T("ui_measuring_bandwidth")):
                bench = machine_bench.get()
    except CacheDirError as err:  # INFERENCE_ADVISOR_CACHE names a file: say so, and measure without saving
        st.session_state[NOTICE] = ("error", str(err))
        with st.spinner(T("ui_measuring_bandwidth")):
            bench = machine_bench.measure()
    return bench


@st.cache_data(show_spinner=False, max_entries=16)
def _spec(model_json: str):
    from advisor.inputs import ModelBlock
    from advisor.planner import resolve_model

    return resolve_model(ModelBlock.model_validate_json(model_json), knowledge(), read_files=True)


def link_path_unread(a: Answers) -> bool:
    """True while the answers' model.path is the one a link brought and the user has not asked to read it."""
    return bool(a.model.path) and st.session_state.get(LINK_PATH) == a.model.path


def link_path_gate(a: Answers) -> None:
    """Say that a linked model.path is not read yet, with the button that reads it (the user's act)."""
    from advisor.report import md_escape

    if not link_path_unread(a):
        return
    st.info(T("ui_link_path_unread", path=md_escape(a.model.path[:300])), icon=":material/lock:")
    if st.button(T("ui_link_path_read"), key="read_link_path"):
        st.session_state.pop(LINK_PATH, None)
        st.rerun()


def plan_inputs(a: Answers):
    """(model spec, machine bench, error) for recommend(): files are read here, at the edge. A model that
    cannot be resolved falls back to the generic architecture for its params_b, and the error is shown. A
    model.path from a link is not opened until the user asks (`link_path_gate`): planned from params_b till then."""
    from advisor.planner import ModelSpecError, generic, resolve_model

    if link_path_unread(a):
        return resolve_model(a.model, knowledge(), read_files=False), \
            (machine() if a.hardware is None else None), None
    try:
        spec, err = _spec(a.model.model_dump_json()), None
    except ModelSpecError as e:
        spec, err = generic(a.model.params_b, a.model.architecture, knowledge()), str(e)
    except Exception as e:  # noqa: BLE001 (a hostile model file must not take the page down)
        spec = generic(a.model.params_b, a.model.architecture, knowledge())
        err = f"model.path could not be read: {type(e).__name__}: {e}"[:300]
    return spec, (machine() if a.hardware is None else None), err


# ---------------------------------------------------------------- probes

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


@st.cache_resource(ttl=600, show_spinner=False)
def engine_availability() -> dict[str, str | None]:
    """Why each engine cannot run here (None = ready), checked under the interpreter its probe uses."""
    from probes.cli import availability
    from probes.registry import BACKENDS

    out = {}
    for engine in BACKENDS:
        try:
            out[engine] = availability(engine)
        except Exception as err:  # noqa: BLE001 (a broken venv is a reason, not a crash)
            out[engine] = f"{type(err).__name__}: {err}"[:200]
    return out


"""The app's own room (Streamlit only here, app.py and pages/; the logic lives in advisor/ and probes/): session
state and its URL mirror (state), the strings lookup and formatting (text), what the pages plan from (planning),
the shared widgets (widgets), the answers' editors used by more than one page (editors), and the probe job board
and engine availability (probing), and the engines still building from source (builds). The advisor's modules are imported inside the helpers, not at import time, so
the home page paints its title from the strings file alone."""
from ui.builds import build_panel, build_states
from ui.editors import model_file_shape, model_shape_caption, take_model_config, target_editor
from ui.planning import glance, hardware, knowledge, link_path_gate, link_path_unread, machine, plan_inputs
from ui.probing import engine_availability, llama_cpu_build_on_gpu_machine, probe_board
from ui.state import (ANSWERS, LANG, LINK_PATH, NOTICE, RUNS, STEP, SWEEPS, answers, answers_data, decode_answers,
                      encode_answers, lang, restore_state, set_answer, set_answers, sync_url)
from ui.text import T, size_text
from ui.widgets import (EVIDENCE_MAX_MB, UPLOAD_MAX_MB, file_uploader, language_switch, on_change, page_config, seed, show_notice,
                        uploader_style)

__all__ = ["build_panel", "build_states", "ANSWERS", "EVIDENCE_MAX_MB", "LANG", "LINK_PATH", "NOTICE", "RUNS", "STEP", "SWEEPS", "T", "UPLOAD_MAX_MB", "answers",
           "answers_data", "decode_answers", "encode_answers", "engine_availability", "file_uploader", "glance", "hardware",
           "knowledge", "lang", "language_switch", "link_path_gate", "link_path_unread",
           "llama_cpu_build_on_gpu_machine", "machine", "model_file_shape", "model_shape_caption", "on_change", "page_config",
           "plan_inputs", "probe_board", "restore_state", "seed", "set_answer", "set_answers", "show_notice",
           "size_text", "sync_url", "take_model_config", "target_editor", "uploader_style"]

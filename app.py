"""Entry point: page config, state restored from the URL, the language switch, and the translated navigation.

Every page runs through here, so the language switch is one widget on every page (two views of one state: the
sidebar's, and a compact one at the top of the main area for a phone, whose sidebar starts collapsed) and the URL
mirror of the answers is written after every change (see ui.state). The sweeps a stopped server left running
are marked interrupted here, once per process.
"""
import streamlit as st

try:  # Streamlit also wraps every run in its legacy navigation when a pages/ folder sits next to the main
    # script: that shows "Page not found" for our lower-case URLs and could run a page without this file.
    # One navigation, ours: turn the legacy one off for this server (a class attribute, read on every run).
    from streamlit.runtime.pages_manager import PagesManager

    PagesManager.uses_pages_directory = False
except ImportError:  # pragma: no cover (another Streamlit layout: the legacy wrapper only costs a dialog)
    pass

from ui import T, language_switch, page_config, restore_state, sync_url

page_config()
restore_state()
language_switch()
PAGES = [("pages/0_Home.py", "nav_home", ""), ("pages/1_Checklist.py", "nav_checklist", "checklist"),
         ("pages/2_Hardware.py", "nav_hardware", "hardware"), ("pages/3_Recommendation.py", "nav_recommendation",
         "recommendation"), ("pages/4_Probe.py", "nav_probe", "probe"), ("pages/5_Report.py", "nav_report", "report")]
nav = st.navigation([st.Page(path, title=T(key), default=not url, url_path=url or None) for path, key, url in PAGES])
sync_url()
if nav.url_path in ("probe", "report"):  # the pages that read the history (imported there anyway: no cost elsewhere)
    from advisor.evidence import history

    # once per server process and database, at its first page that reads it, so before this process can have
    # started a sweep: the sweeps a stopped server left "running" are marked "interrupted"
    history.mark_interrupted()
nav.run()

"""`make run`'s entry: `streamlit run app.py`, with Streamlit's legacy pages/ handling switched off first.

This app navigates with st.navigation, but its page files live in pages/, which makes Streamlit run the first
session of a fresh server through its old pages-directory wrapper: a deep link (a reload on /recommendation
after a restart) then shows "Page not found". app.py switches the flag off too, but only once it has run.
"""
import sys

from streamlit.runtime.pages_manager import PagesManager
from streamlit.web import cli

if __name__ == "__main__":
    PagesManager.uses_pages_directory = False
    sys.argv = ["streamlit", "run", "app.py", *sys.argv[1:]]
    sys.exit(cli.main())

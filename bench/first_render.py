"""Time from `streamlit run` to the first page rendered in a real browser (target: < 2 s after start).

Prints, for this app and for a one-line Streamlit app (`st.title`) on the same machine: server ready (health
endpoint) and first render (heading visible in chromium), and the ratio app / bare Streamlit — how much of
the time is this app's own, and how much is Streamlit's front end loading. Best of 3 runs each.
Needs Debian's chromium (make test installs it).
"""
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = 3


def first_render(p, script: Path, heading: str) -> tuple[float, float]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
    page = browser.new_page()
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(script), "--server.headless", "true",
                             "--server.address", "127.0.0.1", "--server.port", str(port),
                             "--browser.gatherUsageStats", "false"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            try:
                if urllib.request.urlopen(url + "/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.05)
        ready = time.perf_counter() - t0
        t1 = time.perf_counter()
        page.goto(url)
        page.get_by_role("heading", name=heading).wait_for(timeout=60_000)
        return ready, time.perf_counter() - t1
    finally:
        proc.terminate()
        proc.wait(10)
        browser.close()


def main() -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        bare = Path(tmp, "bare.py")
        bare.write_text('import streamlit as st\nst.title("Bare Streamlit")\n')
        app = min((first_render(p, ROOT / "app.py", "Inference-engine selection advisor") for _ in range(RUNS)),
                  key=sum)
        ref = min((first_render(p, bare, "Bare Streamlit") for _ in range(RUNS)), key=sum)
    for name, (ready, render) in (("this app", app), ("bare Streamlit (st.title only)", ref)):
        print(f"{name:32} server ready {ready:.2f} s, first page rendered {render:.2f} s after that "
              f"({ready + render:.2f} s total; target 2 s → ratio {(ready + render) / 2:.2f})")
    print(f"app / bare Streamlit, total = {sum(app) / sum(ref):.2f}")


if __name__ == "__main__":
    main()

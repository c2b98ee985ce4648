"""Time from `streamlit run` to the first page rendered in a real browser (target: < 2 s after start).

Prints: server ready (health endpoint), and first render (heading visible) measured from process start.
Needs Debian's chromium (make test installs it).
"""
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    from playwright.sync_api import sync_playwright

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                    args=["--headless", "--no-sandbox", "--disable-gpu",
                                          "--disable-background-networking"])
        page = browser.new_page()
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                                 "--server.address", "127.0.0.1", "--server.port", str(port),
                                 "--browser.gatherUsageStats", "false"], cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        while True:
            try:
                if urllib.request.urlopen(url + "/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.05)
        ready = time.perf_counter() - t0
        t1 = time.perf_counter()
        page.goto(url)
        page.get_by_role("heading", name="Inference-engine selection advisor").wait_for(timeout=60_000)
        render = time.perf_counter() - t1
        print(f"server ready {ready:.2f} s after `streamlit run`; first page rendered {render:.2f} s after that "
              f"({ready + render:.2f} s total; target 2 s → ratio {(ready + render) / 2:.2f})")
        proc.terminate()
        browser.close()


if __name__ == "__main__":
    main()

"""The same llama.cpp probe started from the UI (a real browser tab open on the Probe page) and from the CLI
(no browser, no server): prints both figures and their ratio. The app must not load the CPU while it measures.

    .venv/bin/python bench/ui_vs_cli.py [--rounds 2]
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SETTINGS = dict(requests=8, max_tokens=32, concurrency=1)


def cli_probe() -> dict:
    out = subprocess.run([sys.executable, "-m", "probes", "run", "--engine", "llama.cpp", "--requests",
                          str(SETTINGS["requests"]), "--max-tokens", str(SETTINGS["max_tokens"]), "--concurrency",
                          str(SETTINGS["concurrency"])], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def ui_probe(rounds: int) -> list[dict]:
    from playwright.sync_api import sync_playwright

    data = tempfile.mkdtemp()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "serve.py", "--server.port", str(port)],
                              cwd=ROOT, env=dict(os.environ, INFERENCE_ADVISOR_DATA=data),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if urllib.request.urlopen(url + "/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.2)
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                  args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            pg = b.new_page(viewport={"width": 1300, "height": 1000})
            pg.set_default_timeout(300_000)
            pg.goto(url)
            pg.get_by_role("heading", name="Inference-engine selection advisor").wait_for()
            for _ in range(rounds):
                pg.goto(url + "/probe")
                for label, value in (("Requests", SETTINGS["requests"]), ("Output tokens per request",
                                     SETTINGS["max_tokens"]), ("Concurrency", SETTINGS["concurrency"])):
                    f = pg.get_by_label(label)
                    f.fill(str(value))
                    f.press("Enter")
                    pg.wait_for_timeout(500)
                pg.get_by_role("button", name="Run the live probe").click()
                pg.get_by_role("button", name="Cancel").wait_for()
                pg.get_by_text("Verdict").wait_for()
            b.close()
    finally:
        server.terminate()
        server.wait(timeout=20)
    os.environ["INFERENCE_ADVISOR_DATA"] = data
    from advisor.evidence import history

    return [json.loads(r.model_dump_json()) for _, _, r in reversed(history.list_runs())]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    rounds = ap.parse_args().rounds
    cli = [cli_probe() for _ in range(rounds)]
    ui = ui_probe(rounds)
    for name, key in (("decode tok/s per request p50", ("decode_tps_per_request", "p50")),
                      ("TTFT p50 ms", ("ttft_ms", "p50")), ("total output tok/s", ("output_tps_total", None))):
        get = (lambda r: r[key[0]][key[1]]) if key[1] else (lambda r: r[key[0]])
        c = statistics.median(get(r) for r in cli)
        u = statistics.median(get(r) for r in ui)
        print(f"{name:30} CLI {c:8.1f}   UI {u:8.1f}   UI/CLI {u / c:5.2f}")
    busy = [r["system_load"]["other_processes_cpu_percent"] for r in ui]
    print(f"other processes' CPU during the UI probes: {busy} %")


if __name__ == "__main__":
    main()

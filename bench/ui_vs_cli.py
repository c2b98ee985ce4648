"""The same llama.cpp probe started from the UI (a real browser tab open on the Probe page) and from the CLI
(`python -m probes run`, no browser): prints both figures and their ratio UI/CLI, pair by pair, then the median
ratio with its spread. The app must not load the CPU while it measures.

    .venv/bin/python bench/ui_vs_cli.py [--pairs 5]      (--rounds N: the old name of --pairs)

Why pairs: speed is measured in bench/ scripts that print ratios, not in timed tests, and one run per side
cannot carry a conclusion: on this kind of machine two back-to-back runs of the same probe differ by several
percent. The machine's speed drifts (other load, frequency, caches), so the two sides are measured close
together and in alternating order: pair 1 runs the CLI probe then the UI probe, pair 2 the UI probe then the
CLI probe, and so on (AB BA AB …). A drift that slows whichever side runs second then slows each side equally
often and cancels in the median of the per-pair ratios, which one slow outlier does not move. One Streamlit
server (serve.py, its own empty data dir) and one headless chromium (Debian's /usr/bin/chromium) serve every
UI run; during a CLI run the tab is on about:blank, so no session is open and the idle server is all that is
left of the app.

Each pair prints the three figures of both sides and their ratios, and each run's other-CPU figure (the probe
result's system_load.other_processes_cpu_percent), with the part of it used by the app itself (the server,
the browser and Playwright's driver, measured here over the run with psutil, the probe's engine excluded).
During a UI run the app's own CPU is what this bench looks for, so it is subtracted before the busy test: a
pair is marked busy and left out of the medians when the CLI run's other-CPU, or the UI run's other-CPU less
the app's share, is over 25% (the count left out is printed). Read the spread before the median: an IQR wider
than the effect in question asks for more pairs on a quieter machine. Nothing here asserts a timing.
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

from bench.llama_fidelity import cpu_note, format_summary, pairs_summary, run_pairs  # noqa: E402
from probes.runner import BUSY_OTHER_CPU_PERCENT  # noqa: E402

SETTINGS = dict(requests=8, max_tokens=32, concurrency=1)
FIGURES = (("decode tok/s per request p50", ("decode_tps_per_request", "p50")),
           ("TTFT p50 ms", ("ttft_ms", "p50")), ("total output tok/s", ("output_tps_total", None)))


def figure(r: dict, key: tuple[str, str | None]) -> float | None:
    v = r.get(key[0])
    return v.get(key[1]) if key[1] and isinstance(v, dict) else (None if key[1] else v)


def pair_busy(cli_other: float | None, ui_other: float | None, ui_app: float | None) -> bool:
    """Busy: other processes took more than the threshold of the CPU during the CLI run, or during the UI run
    once the app's own share (server, browser) is taken out of it. An unknown figure counts as quiet."""
    ui_external = None if ui_other is None else max(0.0, ui_other - (ui_app or 0.0))
    return any(x is not None and x > BUSY_OTHER_CPU_PERCENT for x in (cli_other, ui_external))


def _is_probe(p) -> bool:
    import psutil

    try:
        cmd = p.cmdline()
    except psutil.Error:
        return False
    return "probes.child" in cmd or cmd[1:3] == ["-m", "probes"]


def app_cpu_s() -> dict[int, float]:
    """CPU seconds (own threads, not reaped children) of each process started below this one that is not a
    probe (the CLI, an engine child and theirs): the Streamlit server, chromium and Playwright's driver."""
    import psutil

    procs = psutil.Process().children(recursive=True)
    skip = set()
    for p in procs:
        if _is_probe(p):
            skip.add(p.pid)
            try:
                skip.update(c.pid for c in p.children(recursive=True))
            except psutil.Error:
                pass
    out = {}
    for p in procs:
        if p.pid not in skip:
            try:
                t = p.cpu_times()
                out[p.pid] = t.user + t.system
            except psutil.Error:
                pass
    return out


class AppCpu:
    """The app's CPU share (% of the machine, like other_processes_cpu_percent) between start() and stop()."""

    def start(self) -> None:
        self.before, self.t0 = app_cpu_s(), time.monotonic()

    def stop(self) -> float:
        import psutil

        after, wall = app_cpu_s(), max(1e-6, time.monotonic() - self.t0)
        used = sum(max(0.0, v - self.before.get(pid, 0.0)) for pid, v in after.items())
        return used / (wall * (psutil.cpu_count() or 1)) * 100


def cli_probe() -> dict:
    out = subprocess.run([sys.executable, "-m", "probes", "run", "--engine", "llama.cpp", "--requests",
                          str(SETTINGS["requests"]), "--max-tokens", str(SETTINGS["max_tokens"]), "--concurrency",
                          str(SETTINGS["concurrency"])], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


class UISession:
    """One server and one browser tab for every UI run; run() starts one probe from the Probe page."""

    def __init__(self) -> None:
        from playwright.sync_api import sync_playwright

        self.data = Path(tempfile.mkdtemp())
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.server = subprocess.Popen([sys.executable, "serve.py", "--server.port", str(port)],
                                       cwd=ROOT, env=dict(os.environ, INFERENCE_ADVISOR_DATA=str(self.data)),
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = f"http://127.0.0.1:{port}"
        self.pw = self.browser = None
        self.last_id = 0
        try:
            for _ in range(300):
                try:
                    if urllib.request.urlopen(self.url + "/_stcore/health", timeout=1).read() == b"ok":
                        break
                except OSError:
                    time.sleep(0.2)
            self.pw = sync_playwright().start()
            self.browser = self.pw.chromium.launch(
                executable_path="/usr/bin/chromium", headless=True,
                args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            self.pg = self.browser.new_page(viewport={"width": 1300, "height": 1000})
            self.pg.set_default_timeout(300_000)
            self.pg.goto(self.url)
            self.pg.get_by_role("heading", name="Inference-engine selection advisor").wait_for()
            self.pg.goto(self.url + "/probe")  # warm-up: the Probe page's first render imports its modules
            self.pg.get_by_role("button", name="Run the live probe").wait_for()
            self.pg.goto("about:blank")
        except BaseException:
            self.close()
            raise

    def run(self) -> dict:
        from advisor.evidence import history

        pg = self.pg
        pg.goto(self.url + "/probe")
        for label, value in (("Requests", SETTINGS["requests"]), ("Output tokens per request",
                             SETTINGS["max_tokens"]), ("Concurrency", SETTINGS["concurrency"])):
            f = pg.get_by_label(label, exact=True)
            f.fill(str(value))
            f.press("Enter")
            pg.wait_for_timeout(500)
        app = AppCpu()
        app.start()
        pg.get_by_role("button", name="Run the live probe").click()
        cancel = pg.get_by_role("button", name="Cancel")
        try:
            cancel.wait_for(timeout=60_000)  # the job is running
        except Exception:  # it may have ended before the page showed it: the history below says
            pass
        cancel.wait_for(state="hidden")  # the job has ended (an earlier run's Verdict may already be on the page)
        app_pct = app.stop()
        try:
            pg.get_by_text("Verdict").first.wait_for(timeout=30_000)
        except Exception:  # a failed run shows no verdict; its status says why
            pass
        pg.goto("about:blank")
        for _ in range(100):  # the job saves its result as it ends
            rows = history.list_runs(1, path=self.data / "probes.sqlite3")
            if rows and rows[0][0] > self.last_id:
                self.last_id = rows[0][0]
                r = json.loads(rows[0][2].model_dump_json())
                r["_app_cpu_percent"] = app_pct
                return r
            time.sleep(0.2)
        raise RuntimeError("the UI run left no result in the history")

    def close(self) -> None:
        try:
            if self.browser:
                self.browser.close()
            if self.pw:
                self.pw.stop()
        finally:
            self.server.terminate()
            try:
                self.server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.server.kill()


def cli_side() -> dict:
    app = AppCpu()
    app.start()
    r = cli_probe()
    r["_app_cpu_percent"] = app.stop()
    return r


def _ratio(u: float | None, c: float | None) -> float | None:
    return u / c if u is not None and c else None


def _other(r: dict) -> float | None:
    return (r.get("system_load") or {}).get("other_processes_cpu_percent")


def main() -> None:
    ap = argparse.ArgumentParser(description="the llama.cpp probe from the UI and from the CLI, in AB/BA pairs")
    ap.add_argument("--pairs", "--rounds", dest="pairs", type=int, default=5,
                    help="CLI/UI pairs, run AB BA AB … (default 5, min 1; --rounds is the old name)")
    a = ap.parse_args()
    if a.pairs < 1:
        ap.error("--pairs must be at least 1")
    print(f"{SETTINGS['requests']} requests x {SETTINGS['max_tokens']} tokens, concurrency "
          f"{SETTINGS['concurrency']}; {a.pairs} pair(s), CLI/UI then UI/CLI …; a pair is busy when other processes "
          f"used > {BUSY_OTHER_CPU_PERCENT:.0f}% of the CPU (the app's own share taken out of the UI run's)",
          flush=True)
    rows: list[dict] = []

    def on_pair(i: int, cli: dict, ui: dict, cli_first: bool) -> None:
        busy = pair_busy(_other(cli), _other(ui), ui["_app_cpu_percent"])
        ok = ui.get("status") == cli.get("status") == "ok"  # a failed or cancelled run gives no ratio
        row = {"busy": busy, "ratios": [_ratio(figure(ui, k), figure(cli, k)) if ok else None for _, k in FIGURES],
               "ui_app": ui["_app_cpu_percent"], "cli_app": cli["_app_cpu_percent"], "ui_other": _other(ui)}
        rows.append(row)
        status = "" if ok else \
            f"  status: CLI {cli.get('status')}, UI {ui.get('status')} ({ui.get('reason') or cli.get('reason')})"
        print(f"pair {i + 1}/{a.pairs} ({'CLI' if cli_first else 'UI'} first): other CPU: CLI run "
              f"{cpu_note(_other(cli))} (app idle {cpu_note(cli['_app_cpu_percent'])}), UI run "
              f"{cpu_note(_other(ui))} (of it app+browser {cpu_note(ui['_app_cpu_percent'])})"
              f"{'  BUSY (left out)' if busy else ''}{status}")
        for (name, key), ratio in zip(FIGURES, row["ratios"]):
            c, u = figure(cli, key), figure(ui, key)
            fmt = (lambda v: "     n/a" if v is None else f"{v:8.1f}")
            print(f"  {name:30} CLI {fmt(c)}   UI {fmt(u)}   UI/CLI "
                  f"{'  n/a' if ratio is None else f'{ratio:5.3f}'}", flush=True)

    ui = UISession()
    try:
        run_pairs(a.pairs, cli_side, ui.run, on_pair)
    finally:
        ui.close()
    busy = [r["busy"] for r in rows]
    for j, (name, _) in enumerate(FIGURES):
        print(format_summary(f"UI/CLI {name}", pairs_summary([r["ratios"][j] for r in rows], busy)))
    ui_app = [r["ui_app"] for r in rows]
    print(f"app+browser CPU during the UI probes: {', '.join(cpu_note(x) for x in ui_app)} (median "
          f"{statistics.median(ui_app):.1f}%); other processes' CPU during the UI probes (app included): "
          f"{', '.join(cpu_note(r['ui_other']) for r in rows)}; idle app during the CLI probes: "
          f"{', '.join(cpu_note(r['cli_app']) for r in rows)}")


if __name__ == "__main__":
    main()

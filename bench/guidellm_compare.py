"""Our `endpoint` probe against GuideLLM (the vLLM project's load benchmark), both on the same llama-cpp-python
server with the bundled SmolLM2 GGUF: the same prompt and output tokens, the same concurrency and request
count. Prints each tool's TTFT median, ITL median and output tok/s, and the ratios ours/GuideLLM (target: each
within 10%).

    .venv/bin/python bench/guidellm_compare.py [--input-tokens 256] [--output-tokens 64] [--concurrency 1 4]
                                              [--requests 16] [--rounds 3]

GuideLLM lives in its own venv in the user cache dir (`guidellm-venv`, made on the first run with
`pip install guidellm==0.8.1 gguf`; about 6 GB, torch comes with it): never a dependency of the app or the tests.
GuideLLM reads its tokenizer from a folder exported once from the GGUF itself (no hub access).

The server runs pinned to core 0 (`--n_threads 1`), GuideLLM and our probe pinned to core 1: on a small machine
an unpinned client steals the server's core and the tools measure themselves (llama.cpp's threads spin-wait).

How the two runs are made alike (llama-cpp-python's server differs from vLLM in ways both tools trip on):
- GuideLLM sends chat content as a list of parts, which SmolLM2's chat template cannot concatenate, so it uses
  /v1/completions with its synthetic prompts of `--input-tokens` tokens; our probe uses /v1/chat/completions
  with prompts fitted to `--input-tokens` after the chat template. The server's log shows both counts.
- The server ignores `ignore_eos`; GuideLLM's requests carry logit_bias -100 on the end-of-generation ids,
  ours carry `min_tokens` (which the server honours), so both get exactly `--output-tokens` tokens.
- The server has no /health: GuideLLM checks /v1/models instead. `--interrupt_requests false`, or the server
  cuts a stream when the next request arrives.
- One untimed request with a prompt of about `--input-tokens` tokens warms the server before each GuideLLM run;
  our probe sends its own warm-up request before each of its runs.
- The server runs with `--verbose true`: its log gives its own prefill and decode times, and how many prompt
  tokens each request really evaluated. llama-cpp-python reuses the KV cache of a prefix shared with the previous
  request: our chat prompts all open with SmolLM2's default system turn and "Request" (about 26 tokens), which
  the server then skips. GuideLLM's synthetic prompts share nothing, so by default the same number of their
  tokens are one shared prefix (`--guidellm-prefix-tokens`, GuideLLM's `prefix_tokens`): both tools then send
  `--input-tokens` prompt tokens and the server evaluates about as many of them for each. The server's own
  prefill time of each tool's requests is printed as a check.
- The machine's other load moves the server's speed between runs: the tools' runs are interleaved (`--rounds`)
  and the server's own timings are printed next to what each tool measured.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
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

GUIDELLM_VERSION = "0.8.1"
MODEL_ALIAS = "smollm2-135m"
SERVER_CORE, CLIENT_CORE = "0", "1"
EOG_BIAS = {"0": -100, "2": -100, "4": -100}  # SmolLM2: <|endoftext|>, <|im_end|>, <reponame> (end-of-generation)
SEED = 1234  # our probe's prompts (their openings decide how much of each prompt the server reuses)
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------ GuideLLM's venv
def guidellm_venv() -> Path:
    """The venv with GuideLLM GUIDELLM_VERSION (and gguf, to read the tokenizer from the GGUF); made if missing."""
    from probes.cache import cache_dir

    venv = cache_dir() / "guidellm-venv"
    py = venv / "bin" / "python"

    def version() -> str | None:
        if not py.exists():
            return None
        p = subprocess.run([str(py), "-c", "import importlib.metadata as m; print(m.version('guidellm')); "
                                           "import gguf"], capture_output=True, text=True)
        return p.stdout.split()[0] if p.returncode == 0 and p.stdout.split() else None

    if version() == GUIDELLM_VERSION:
        return venv
    log(f"making GuideLLM's venv ({venv}; pip install guidellm=={GUIDELLM_VERSION} gguf — several GB, minutes)")
    if not py.exists():
        base = getattr(sys, "_base_executable", None) or shutil.which("python3") or sys.executable
        subprocess.run([base, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q",
                    f"guidellm=={GUIDELLM_VERSION}", "gguf"], check=True)
    got = version()
    if got != GUIDELLM_VERSION:
        raise SystemExit(f"GuideLLM's venv has guidellm {got}, not {GUIDELLM_VERSION}")
    return venv


def tokenizer_dir(venv: Path, gguf: Path) -> Path:
    """A Hugging Face tokenizer folder exported from the GGUF (once), for GuideLLM's synthetic prompts."""
    from probes.cache import cache_dir

    out = cache_dir() / "guidellm-tokenizer" / gguf.stem
    if (out / "tokenizer.json").exists():
        return out
    code = ("import sys; from transformers import AutoTokenizer; "
            "AutoTokenizer.from_pretrained(sys.argv[1], gguf_file=sys.argv[2]).save_pretrained(sys.argv[3])")
    subprocess.run([str(venv / "bin" / "python"), "-c", code, str(gguf.parent), gguf.name, str(out)], check=True,
                   env={**os.environ, **OFFLINE}, stdout=subprocess.DEVNULL)
    return out


def chat_shared_prefix(venv: Path, tok: Path, requests: int, seed: int = SEED) -> int:
    """Tokens that each of our probe's chat prompts shares with the one before it (the chat template's system
    turn and the opening's first words), which llama-cpp-python's server reuses from its KV cache: the median over
    consecutive openings, counted in the GGUF's own tokenizer after its chat template."""
    from probes.workload import opening

    code = ("import json, os, statistics, sys; from transformers import AutoTokenizer; "
            "t = AutoTokenizer.from_pretrained(sys.argv[1]); texts = json.loads(sys.argv[2]); "
            "ids = [t.encode(t.apply_chat_template([{'role': 'user', 'content': x}], add_generation_prompt=True, "
            "tokenize=False), add_special_tokens=False) for x in texts]; "
            "print(int(statistics.median(len(os.path.commonprefix([a, b])) for a, b in zip(ids, ids[1:]))))")
    texts = json.dumps([opening(i, seed) for i in range(max(2, requests))])
    p = subprocess.run([str(venv / "bin" / "python"), "-c", code, str(tok), texts], capture_output=True, text=True,
                       env={**os.environ, **OFFLINE}, check=True)
    return int(p.stdout.split()[-1])


# ------------------------------------------------------------------------------------------ the server
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(gguf: Path, log_path: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    cmd = ["taskset", "-c", SERVER_CORE, sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
           "--model_alias", MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(port), "--n_threads", "1",
           "--n_threads_batch", "1", "--n_ctx", "2048", "--interrupt_requests", "false", "--verbose", "true"]
    proc = subprocess.Popen(cmd, stdout=open(log_path, "wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            urllib.request.urlopen(url + "/v1/models", timeout=1).read()
            return proc, url
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"llama_cpp.server exited at start; its log: {log_path}")
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("llama_cpp.server did not answer /v1/models in 120 s")


def warm_up(url: str, n_in: int) -> None:
    """One untimed request with a prompt of about `n_in` tokens, as our probe sends before its own run: the
    server's first long prompt after a short one was slow here (TTFT and decode ms/token about 2×)."""
    prompt = "Warm-up. " + " ".join(["the cat sat on the mat"] * max(1, n_in // 6))
    body = json.dumps({"model": MODEL_ALIAS, "prompt": prompt, "max_tokens": 8, "temperature": 0}).encode()
    req = urllib.request.Request(url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=120).read()


PERF = re.compile(r"prompt eval time\s*=\s*([\d.]+) ms /\s*(\d+) tokens.*?\n.*?eval time\s*=\s*([\d.]+) ms /"
                  r"\s*(\d+) runs")
REUSED = re.compile(r"(\d+) prefix-match hit, remaining \d+ prompt tokens")


def server_view(log_path: Path, start: int, n_out: int) -> dict:
    """The server's own timings (its llama_perf lines) of the measured requests logged since byte offset `start`,
    medians over requests: the prompt's tokens, how many of them it evaluated (fewer when a prefix shared with
    the previous request is reused from the KV cache), its prefill ms and its decode ms per token. Warm-up and
    calibration requests (fewer than `n_out` output tokens) are left out."""
    with open(log_path, "rb") as f:
        f.seek(start)
        text = f.read().decode("utf-8", "replace")
    reqs, last = [], 0
    for m in PERF.finditer(text):
        hit = REUSED.findall(text, last, m.start())
        last = m.end()
        pm, pt, em, er = float(m[1]), int(m[2]), float(m[3]), int(m[4])
        if er == n_out - 1:  # llama_perf counts the first output token with the prompt
            reqs.append((pm, pt, em, er, int(hit[-1]) + pt if hit else pt))
    if not reqs:
        return {}
    med = statistics.median
    prefill = [r[0] for r in reqs if r[0] >= 1.0]  # llama_perf sometimes logs ~0.1 ms for a whole prompt
    return {"prompt": med(r[4] for r in reqs), "evaluated": med(r[1] for r in reqs),
            "prefill_ms": med(prefill) if prefill else None, "decode_ms": med(r[2] / r[3] for r in reqs),
            "n": len(reqs), "work_ms": sum(r[0] + r[2] for r in reqs)}


# ------------------------------------------------------------------------------------------ the two tools
def run_guidellm(venv: Path, tok: Path, url: str, concurrency: int, requests: int, n_in: int, n_out: int,
                 prefix: int, work: Path, tag: str) -> dict:
    """GuideLLM's `run` on one concurrency; `prefix` tokens of each prompt (of `n_in`) are one shared prefix."""
    out = work / f"guidellm_{tag}.json"
    data = {"kind": "synthetic_text", "prompt_tokens": n_in, "output_tokens": n_out}
    if prefix:
        # the prompt is prefix + " " + the unique text: with SmolLM2's tokenizer one token more than the two parts
        # (see "server prompt tokens"). It matters: here a prompt over 256 tokens made the server's prefill ~7%
        # slower per token (257-262 against 245-248 tokens, same texts), probably llama.cpp's KV cache padding
        data.update(prompt_tokens=n_in - prefix - 1, prefix_tokens=prefix, prefix_count=1)
    scenario = {
        "metadata": {"name": f"guidellm_compare_c{concurrency}"},
        "spec": {
            "backend": {"kind": "openai_http", "target": url, "model": MODEL_ALIAS,
                        "request_format": "/v1/completions", "timeout": 300.0,
                        "api_routes": {"/health": "v1/models"},  # llama-cpp-python has no /health
                        "extras": {"body": {"logit_bias": EOG_BIAS}}},  # it ignores ignore_eos
            "profile": {"kind": "concurrent", "streams": [concurrency]},
            "constraints": [{"kind": "max_requests", "count": requests},
                            {"kind": "max_duration", "seconds": 900.0}],
            "tokenizer": {"kind": "huggingface_auto", "model": str(tok)},
            "data": [data],
            "seed": {"kind": "static", "value": 42},
            "outputs": [{"kind": "json", "path": str(out)}],
            # a small prefetch: the default keeps a torch worker generating prompts on the client's core
            "data_loader": {"kind": "pytorch", "prefetch_factor": max(16, 2 * requests)},
        },
    }
    path = work / f"scenario_{tag}.json"
    path.write_text(json.dumps(scenario, indent=1))
    cmd = ["taskset", "-c", CLIENT_CORE, str(venv / "bin" / "guidellm"), "run", "--scenario", str(path),
           "--disable-progress"]
    env = {**os.environ, **OFFLINE, "GUIDELLM__MAX_WORKER_PROCESSES": "1"}
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0 or not out.exists():
        tail = "\n".join((p.stdout + p.stderr).strip().splitlines()[-20:])
        raise RuntimeError(f"guidellm exited {p.returncode}:\n{tail}")
    b = json.loads(out.read_text())["benchmarks"][0]
    m = b["metrics"]
    ok = lambda name: m[name]["successful"]  # noqa: E731
    reqs = b.get("requests", {})
    return {"ttft_ms": ok("time_to_first_token_ms")["median"], "itl_ms": ok("inter_token_latency_ms")["median"],
            "itl_per_request_ms": ok("inter_token_latency_ms")["median"],
            "output_tps": ok("output_tokens_per_second")["mean"],
            "tpot_ms": ok("time_per_output_token_ms")["median"],
            "ok": len(reqs.get("successful") or []), "incomplete": len(reqs.get("incomplete") or []),
            "errors": len(reqs.get("errored") or []), "out_tokens": ok("output_token_count")["mean"]}


def run_ours(url: str, concurrency: int, requests: int, n_in: int, n_out: int) -> dict:
    cmd = ["taskset", "-c", CLIENT_CORE, sys.executable, "-m", "probes", "run", "--engine", "endpoint",
           "--endpoint", url, "--input-tokens", str(n_in), "--output-tokens", str(n_out), "--concurrency",
           str(concurrency), "--requests", str(requests), "--seed", str(SEED), "--format", "json"]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    try:
        r = json.loads(p.stdout)
    except ValueError:
        raise RuntimeError(f"our probe exited {p.returncode}: {p.stderr.strip()[-2000:]}") from None
    if r.get("status") != "ok":
        raise RuntimeError(f"our probe: {r.get('status')}: {r.get('reason')}")
    ok = r["requests_ok"]
    decode = r["decode_tps_per_request"]["p50"]
    return {"ttft_ms": r["ttft_ms"]["p50"], "itl_ms": r["itl_ms"]["p50"], "output_tps": r["output_tps_total"],
            # GuideLLM's way: each request's mean gap, then the median over requests (1000 / decode tok/s)
            "itl_per_request_ms": 1000 / decode if decode else None,
            "ok": ok, "incomplete": r["requests_incomplete"], "errors": r["errors"],
            "out_tokens": (r["output_tokens_total"] or 0) / ok if ok else None}


# ------------------------------------------------------------------------------------------ main
def fmt(v, width: int = 10, prec: int = 1) -> str:
    return f"{v:{width}.{prec}f}" if isinstance(v, (int, float)) else f"{'-':>{width}}"


def combine(runs: list[dict]) -> dict:
    """The median over rounds of each figure (a round's failure is left out)."""
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return {"error": "; ".join(r["error"] for r in runs)}
    keys = {k for r in ok for k, v in r.items() if isinstance(v, (int, float))}
    return {k: statistics.median(r[k] for r in ok if isinstance(r.get(k), (int, float))) for k in keys
            if any(isinstance(r.get(k), (int, float)) for r in ok)}


def add_relative(r: dict, n_out: int) -> None:
    """What the tool measured relative to the server's own timings in the same run, which takes out how fast the
    server happened to be then: TTFT / server prefill; per-request ITL / server decode ms per token; and the share
    of the run's wall time that the server's own prefill and decode of its requests fill (their sum × output tok/s
    / their output tokens; ~1 when the client keeps the server busy)."""
    pre, dec = r.get("srv_prefill_ms"), r.get("srv_decode_ms")
    if not (isinstance(pre, float) and isinstance(dec, float)) or "error" in r:
        return
    r["ttft_vs_prefill"] = r["ttft_ms"] / pre
    if r.get("itl_per_request_ms"):
        r["itl_vs_decode"] = r["itl_per_request_ms"] / dec
    if r.get("output_tps") and r.get("srv_n"):
        r["server_busy"] = r["output_tps"] * r["srv_work_ms"] / 1000 / (r["srv_n"] * n_out)


ROWS = (("TTFT median ms", "ttft_ms", True), ("ITL median ms", "itl_ms", True),
        ("output tok/s", "output_tps", True),
        ("ITL per-request median", "itl_per_request_ms", True),
        ("TTFT / server prefill", "ttft_vs_prefill", True), ("ITL per-req / srv decode", "itl_vs_decode", True),
        ("server busy share", "server_busy", True),
        ("server prompt tokens", "srv_prompt", False), ("server evaluated tokens", "srv_evaluated", False),
        ("server prefill ms", "srv_prefill_ms", False),
        ("server decode ms/token", "srv_decode_ms", False), ("output tokens/request", "out_tokens", False),
        ("client CPU s (whole run)", "client_cpu_s", False), ("requests ok", "ok", False),
        ("requests incomplete", "incomplete", False), ("errors", "errors", False))


RELATIVE = ("ttft_vs_prefill", "itl_vs_decode", "server_busy")
COUNTS = ("srv_prompt", "srv_evaluated", "ok", "incomplete", "errors")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--input-tokens", type=int, default=256)
    ap.add_argument("--output-tokens", type=int, default=64)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--requests", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3, help="runs of each tool per concurrency, interleaved")
    ap.add_argument("--guidellm-prefix-tokens", type=int, default=-1, metavar="N",
                    help="tokens of GuideLLM's prompts that are one shared prefix (-1: as many as our chat prompts "
                         "share with each other, so the server reuses as much of its KV cache for both; 0: none)")
    a = ap.parse_args()
    if not shutil.which("taskset") or (os.cpu_count() or 1) < 2:
        raise SystemExit("needs taskset and at least 2 cores (the server and the clients are pinned apart)")

    from probes.models import default_model

    gguf = Path(default_model())
    venv = guidellm_venv()
    tok = tokenizer_dir(venv, gguf)
    prefix = a.guidellm_prefix_tokens
    if prefix < 0:
        prefix = chat_shared_prefix(venv, tok, a.requests)
    work = Path(tempfile.mkdtemp(prefix="guidellm_compare_"))
    server_log = work / "server.log"
    server, url = start_server(gguf, server_log)
    results: dict[int, dict[str, list[dict]]] = {}
    tools = {
        "GuideLLM": lambda c, tag: run_guidellm(venv, tok, url, c, a.requests, a.input_tokens, a.output_tokens,
                                                prefix, work, tag),
        "ours": lambda c, tag: run_ours(url, c, a.requests, a.input_tokens, a.output_tokens),
    }
    try:
        for c in a.concurrency:
            results[c] = {name: [] for name in tools}
            for rnd in range(a.rounds):
                order = list(tools) if rnd % 2 == 0 else list(tools)[::-1]  # alternate: drift hits both alike
                for name in order:
                    log(f"{name}, concurrency {c}, {a.requests} requests (round {rnd + 1} of {a.rounds})")
                    if name == "GuideLLM":
                        warm_up(url, a.input_tokens)  # our probe sends its own warm-up request
                    mark = server_log.stat().st_size
                    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    try:
                        r = tools[name](c, f"c{c}_r{rnd + 1}")
                    except RuntimeError as err:
                        r = {"error": str(err)}
                    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    r["client_cpu_s"] = cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime
                    r.update({f"srv_{k}": v for k, v in server_view(server_log, mark, a.output_tokens).items()})
                    add_relative(r, a.output_tokens)
                    results[c][name].append(r)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()

    print(f"{a.input_tokens} prompt tokens, {a.output_tokens} output tokens, {a.requests} requests per run, "
          f"{a.rounds} interleaved run(s) per tool (medians over runs); llama_cpp.server (n_threads 1) on core "
          f"{SERVER_CORE}, GuideLLM {GUIDELLM_VERSION} and our probe on core {CLIENT_CORE}; GuideLLM's prompts: "
          f"{prefix} shared prefix tokens + the rest unique, on /v1/completions; ours: chat "
          f"prompts on /v1/chat/completions")
    for c, per_tool in results.items():
        g, o = combine(per_tool["GuideLLM"]), combine(per_tool["ours"])
        print(f"\nconcurrency {c}")
        for name, r in (("GuideLLM", g), ("ours", o)):
            if "error" in r:
                print(f"  {name} failed: {r['error']}")
        if "error" in g or "error" in o:
            continue
        print(f"  {'':24}{'GuideLLM':>10}{'ours':>10}{'ours/GuideLLM':>15}")
        for label, key, ratio in ROWS:
            gv, ov = g.get(key), o.get(key)
            rv = ov / gv if ratio and isinstance(gv, (int, float)) and isinstance(ov, (int, float)) and gv else None
            prec = 0 if key in COUNTS else 3 if key in RELATIVE else 1
            print(f"  {label:24}{fmt(gv, prec=prec)}{fmt(ov, prec=prec)}{fmt(rv, 15, 3) if ratio else ''}")
        print(f"  GuideLLM's TPOT median (includes TTFT): {g['tpot_ms']:.1f} ms")
        for label, key, _ in ROWS[:3]:
            each = lambda name: ", ".join(fmt(r.get(key), 0).strip() for r in per_tool[name])  # noqa: E731
            print(f"  each run, {label}: GuideLLM {each('GuideLLM')}; ours {each('ours')}")
    print("\nITL per-request median: each request's mean gap, median over requests (GuideLLM's ITL; ours from "
          "1000 / decode tok/s per request p50). server …: the server's own llama_perf timings, medians over "
          "the measured requests (prompt tokens it evaluated: fewer than the prompt where a prefix shared with "
          "the previous request was reused). TTFT / server prefill, ITL per-req / srv decode and server busy "
          "share: each run's figures over the server's own timings in that run (busy share: the server's prefill + "
          "decode time of all the run's requests over the run's wall time), which takes out how fast the shared "
          "machine let the server run during each tool's runs; their ratios compare the two measurements alone.")
    print(f"scenario files, GuideLLM's JSON and the server log: {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

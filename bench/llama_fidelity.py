"""Fidelity of the llama.cpp probe: its decode tokens/s and prompt time against llama.cpp's own
internal timings and against a bare llama-cpp-python loop with the same settings; and the probe's
default settings (threads, batch) against the best bare loop. Prints ratios.

Targets: harness overhead < 3% of decode throughput; defaults within 5% of the best bare loop.
Run alone on an idle machine:

    .venv/bin/python bench/llama_fidelity.py [requests] [max_tokens] [--pairs 5] [--no-sweep]

Why pairs: speed is measured in bench/ scripts that print ratios, not in timed tests, and one ratio is not
enough: two back-to-back one-shot runs on a quiet machine gave probe/bare 0.974 and 0.901, so a single
ratio cannot show a 3% overhead. The machine's speed drifts (other load, frequency, caches) on a scale of
seconds to minutes, so the two sides are measured close together and in alternating order: pair 1 runs the
probe then the bare loop, pair 2 the bare loop then the probe, and so on (AB BA AB …). A drift that slows
whichever side runs second then slows each side equally often, and it cancels in the median of the
per-pair ratios, which a slow outlier does not move. Each pair prints both figures, their ratio and the
other processes' CPU share during each run (the probe result's system_load.other_processes_cpu_percent;
for the bare loop the same formula, measured here); a pair in which either run saw more than 25% of the
CPU used by other processes is marked busy and left out of the median (the count of pairs left out is
printed). The summary gives the median ratio, its min–max and interquartile range, and the number of pairs.
Read the spread before the median: when the IQR is wider than the effect in question, run more pairs
(`--pairs`) on a quieter machine rather than trust the median. Nothing here asserts a timing.

The threads/batch sweep that follows runs each other setting once (a single pass, indicative only).
`pairs_summary`, `run_pairs` and `format_summary` are shared with bench/ui_vs_cli.py and tested in
tests/probes/test_bench_pairs.py without an engine.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from probes.models import default_model  # noqa: E402
from probes.result import ProbeSettings  # noqa: E402
from probes.runner import BUSY_OTHER_CPU_PERCENT, _machine_cpu_s, run_probe  # noqa: E402
from probes.workload import build_prompts  # noqa: E402


# ---- pairing and summary (pure; shared with bench/ui_vs_cli.py) ----

def pair_order(i: int) -> tuple[str, str]:
    """The order of the two sides in pair i (0-based): "a" first in even pairs, "b" first in odd ones."""
    return ("a", "b") if i % 2 == 0 else ("b", "a")


def run_pairs(n: int, run_a: Callable[[], Any], run_b: Callable[[], Any],
              on_pair: Callable[[int, Any, Any, bool], None] | None = None) -> list[tuple[Any, Any]]:
    """n pairs of (run_a(), run_b()), run AB BA AB …; on_pair(i, a, b, a_first) is called as each pair ends."""
    out = []
    for i in range(n):
        got = {}
        for side in pair_order(i):
            got[side] = (run_a if side == "a" else run_b)()
        out.append((got["a"], got["b"]))
        if on_pair:
            on_pair(i, got["a"], got["b"], pair_order(i)[0] == "a")
    return out


def pairs_summary(ratios: Sequence[float | None], busy_flags: Sequence[bool]) -> dict:
    """The median per-pair ratio over the quiet pairs, with its min–max and interquartile range (inclusive
    quartiles). A busy pair, or one without a ratio (None: a figure was not measured), is left out and
    counted. `median_all` is the median over every pair with a ratio, busy ones included, for information."""
    if len(ratios) != len(busy_flags):
        raise ValueError(f"{len(ratios)} ratios but {len(busy_flags)} busy flags")
    kept = sorted(r for r, b in zip(ratios, busy_flags) if r is not None and not b)
    measured = [r for r in ratios if r is not None]
    out = {"pairs": len(ratios), "used": len(kept),
           "busy": sum(1 for r, b in zip(ratios, busy_flags) if r is not None and b),
           "missing": len(ratios) - len(measured),
           "median": None, "min": None, "max": None, "q1": None, "q3": None,
           "median_all": statistics.median(measured) if measured else None}
    if kept:
        q1, _, q3 = statistics.quantiles(kept, n=4, method="inclusive") if len(kept) > 1 else (kept[0],) * 3
        out.update(median=statistics.median(kept), min=kept[0], max=kept[-1], q1=q1, q3=q3)
    return out


def format_summary(label: str, s: dict, target: str = "", prec: int = 3) -> str:
    """One line: the median ratio, min–max, IQR, pairs used of pairs run, and what was left out."""
    left = []
    if s["busy"]:
        left.append(f"{s['busy']} busy pair{'s' if s['busy'] != 1 else ''} left out")
    if s["missing"]:
        left.append(f"{s['missing']} pair{'s' if s['missing'] != 1 else ''} without a figure left out")
    tail = ("; " + ", ".join(left)) if left else ""
    if s["median"] is None:
        info = (f"; median over all pairs, busy ones included, for information only: {s['median_all']:.{prec}f}"
                if s["median_all"] is not None else "")
        return f"{label}: no median: none of {s['pairs']} pair(s) was quiet{tail}{info}"
    f = f".{prec}f"
    target = f"  {target}" if target else ""
    return (f"{label}: median {s['median']:{f}} over {s['used']} of {s['pairs']} pair(s) (min–max "
            f"{s['min']:{f}}–{s['max']:{f}}, IQR {s['q1']:{f}}–{s['q3']:{f}}){tail}{target}")


def cpu_note(other: float | None) -> str:
    return "n/a" if other is None else f"{other:.1f}%"


# ---- measurement ----

def with_other_cpu(fn: Callable[[], Any]) -> tuple[Any, float]:
    """fn()'s result and the CPU share (% of the machine) that processes other than this one used meanwhile,
    by probes.runner's formula (machine CPU time less this process's, over wall time × CPUs)."""
    import psutil

    me = psutil.Process()
    t0, m0, w0 = me.cpu_times(), _machine_cpu_s(), time.monotonic()
    out = fn()
    t1, m1, wall = me.cpu_times(), _machine_cpu_s(), max(1e-6, time.monotonic() - w0)
    own = (t1.user + t1.system) - (t0.user + t0.system)
    return out, max(0.0, (m1 - m0 - own) / (wall * (psutil.cpu_count() or 1)) * 100)


def bare_loop(model: Path, prompts: list[str], max_tokens: int, threads: int, n_batch: int) -> dict:
    import llama_cpp
    import numpy as np
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    llm = Llama(model_path=str(model), n_ctx=2048, n_threads=threads, n_batch=n_batch, verbose=False)
    eos_id = llm.token_eos()
    fmt = Jinja2ChatFormatter(llm.metadata["tokenizer.chat_template"],
                              eos_token=llm._model.token_get_text(eos_id), bos_token="")

    def no_eos(_ids, logits):
        logits[[eos_id]] = -np.inf
        return logits

    decode, internal_decode, ttft, internal_prompt = [], [], [], []
    for i, p in enumerate([prompts[0]] + prompts):  # first one is a warm-up
        toks = llm.tokenize(fmt(messages=[{"role": "user", "content": p}]).prompt.encode(), add_bos=False,
                            special=True)
        llm.reset()
        llama_cpp.llama_perf_context_reset(llm._ctx.ctx)
        t0 = time.perf_counter()
        times = []
        for _ in llm.generate(toks, top_k=1, temp=0.0, reset=True, logits_processor=[no_eos]):
            times.append(time.perf_counter())
            if len(times) >= max_tokens:
                break
        perf = llama_cpp.llama_perf_context(llm._ctx.ctx)
        if i == 0:
            continue
        ttft.append((times[0] - t0) * 1000)
        decode.append((len(times) - 1) / (times[-1] - times[0]))
        if perf.n_eval:
            internal_decode.append(perf.n_eval / (perf.t_eval_ms / 1000))
        internal_prompt.append(perf.t_p_eval_ms)
    return {"decode_tps": statistics.median(decode), "internal_decode_tps": statistics.median(internal_decode),
            "ttft_ms": statistics.median(ttft), "internal_prompt_ms": statistics.median(internal_prompt)}


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="llama.cpp probe vs a bare llama-cpp-python loop, in AB/BA pairs")
    ap.add_argument("requests", nargs="?", type=int, default=6, help="measured requests per run (default 6)")
    ap.add_argument("max_tokens", nargs="?", type=int, default=64, help="output tokens per request (default 64)")
    ap.add_argument("--pairs", type=int, default=5, help="probe/bare pairs, run AB BA AB … (default 5, min 1)")
    ap.add_argument("--no-sweep", action="store_true", help="skip the threads/batch sweep of the bare loop")
    a = ap.parse_args(argv)
    if a.pairs < 1:
        ap.error("--pairs must be at least 1")
    if a.requests < 1 or a.max_tokens < 2:
        ap.error("requests must be >= 1 and max_tokens >= 2")
    n, max_tokens = a.requests, a.max_tokens
    model = default_model()
    prompts = build_prompts(n, "short", 1234)
    threads = len(os.sched_getaffinity(0))
    settings = ProbeSettings(engine="llama.cpp", requests=n, concurrency=1, max_tokens=max_tokens,
                             prompt_mix="short", seed=1234)
    same: dict[str, int] = {}  # the probe's own n_threads / n_batch, from its first run (pair 1 runs it first)

    def probe():
        res = run_probe(settings)
        if not res.ok:
            sys.exit(f"the probe failed: {res.reason}")
        if not same:
            same["threads"] = int(res.backend_settings.get("n_threads") or threads)
            same["batch"] = int(res.backend_settings.get("n_batch") or 512)
            print(f"probe defaults: n_threads={same['threads']}, n_batch={same['batch']}; bare loop uses the same; "
                  f"{n} request(s) x {max_tokens} tokens per run; {a.pairs} pair(s), AB BA AB …; a run with "
                  f"other processes' CPU > {BUSY_OTHER_CPU_PERCENT:.0f}% marks its pair busy", flush=True)
        return res

    def bare():
        return with_other_cpu(lambda: bare_loop(model, prompts, max_tokens, same["threads"], same["batch"]))

    rows = []

    def on_pair(i, res, bare_out, probe_first):
        base, bare_other = bare_out
        probe_tps = res.decode_tps_per_request.p50
        probe_other = res.system_load.other_processes_cpu_percent
        busy = bool(res.system_load.busy or bare_other > BUSY_OTHER_CPU_PERCENT)
        row = {"busy": busy, "probe_tps": probe_tps, "bare_tps": base["decode_tps"],
               "bare": _ratio(probe_tps, base["decode_tps"]),
               "internal": _ratio(probe_tps, base["internal_decode_tps"]),
               "ttft": _ratio(res.ttft_ms.p50, base["internal_prompt_ms"])}
        rows.append(row)
        print(f"pair {i + 1}/{a.pairs} ({'probe' if probe_first else 'bare'} first): probe decode {probe_tps:.1f} "
              f"tok/s, TTFT p50 {res.ttft_ms.p50:.1f} ms | bare decode {base['decode_tps']:.1f} tok/s, TTFT "
              f"{base['ttft_ms']:.1f} ms (llama.cpp internal: decode {base['internal_decode_tps']:.1f} tok/s, prompt "
              f"eval {base['internal_prompt_ms']:.1f} ms) | probe/bare {row['bare']:.3f} | other CPU: probe run "
              f"{cpu_note(probe_other)}, bare run {cpu_note(bare_other)}{'  BUSY (left out)' if busy else ''}",
              flush=True)

    run_pairs(a.pairs, probe, bare, on_pair)
    busy = [r["busy"] for r in rows]
    s_bare = pairs_summary([r["bare"] for r in rows], busy)
    print(format_summary("ratio probe/bare decode", s_bare, "(overhead target: >= 0.97)"))
    print(format_summary("ratio probe/internal decode", pairs_summary([r["internal"] for r in rows], busy)))
    print(format_summary("ratio probe TTFT / internal prompt time", pairs_summary([r["ttft"] for r in rows], busy)))
    if a.no_sweep:
        return
    quiet = [r for r in rows if not r["busy"]] or rows  # every pair busy: all of them, labelled as such
    probe_tps = statistics.median(r["probe_tps"] for r in quiet)
    probe_label = "probe defaults" + (" (all pairs busy: information only)" if all(busy) else "")
    base_tps = statistics.median(r["bare_tps"] for r in quiet)
    best = ("defaults", base_tps)
    for t in sorted({1, threads, same["threads"]}):
        for b in (256, 512):
            if (t, b) == (same["threads"], same["batch"]):
                continue
            r, other = with_other_cpu(lambda: bare_loop(model, prompts, max_tokens, t, b))
            flag = "  BUSY" if other > BUSY_OTHER_CPU_PERCENT else ""
            print(f"bare loop n_threads={t} n_batch={b} (one pass): decode {r['decode_tps']:.1f} tok/s, other CPU "
                  f"{cpu_note(other)}{flag}")
            if r["decode_tps"] > best[1]:
                best = (f"n_threads={t} n_batch={b}", r["decode_tps"])
    print(f"ratio {probe_label} (median) / best bare loop ({best[0]}) = {probe_tps / best[1]:.3f}  "
          f"(target: >= 0.95; the sweep is a single pass per setting)")


if __name__ == "__main__":
    main()

"""Fidelity of the llama.cpp probe: its decode tokens/s and prompt time against llama.cpp's own
internal timings and against a bare llama-cpp-python loop with the same settings; and the probe's
default settings (threads, batch) against the best bare loop. Prints ratios.

Targets: harness overhead < 3% of decode throughput; defaults within 5% of the best bare loop.
Run alone on an idle machine: `.venv/bin/python bench/llama_fidelity.py [requests] [max_tokens]`.
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from probes.models import default_model  # noqa: E402
from probes.result import ProbeSettings  # noqa: E402
from probes.runner import run_probe  # noqa: E402
from probes.workload import build_prompts  # noqa: E402


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


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    max_tokens = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    model = default_model()
    prompts = build_prompts(n, "short", 1234)
    threads = len(os.sched_getaffinity(0))
    res = run_probe(ProbeSettings(engine="llama.cpp", requests=n, concurrency=1, max_tokens=max_tokens,
                                  prompt_mix="short", seed=1234))
    assert res.ok, res.reason
    probe_tps = res.decode_tps_per_request.p50
    base = bare_loop(model, prompts, max_tokens, threads, 512)
    print(f"probe (defaults: n_threads={res.backend_settings['n_threads']}, n_batch={res.backend_settings['n_batch']})"
          f": decode {probe_tps:.1f} tok/s, TTFT p50 {res.ttft_ms.p50:.1f} ms")
    print(f"bare loop, same settings: decode {base['decode_tps']:.1f} tok/s, TTFT {base['ttft_ms']:.1f} ms; "
          f"llama.cpp internal: decode {base['internal_decode_tps']:.1f} tok/s, prompt eval "
          f"{base['internal_prompt_ms']:.1f} ms")
    print(f"ratio probe/bare decode      = {probe_tps / base['decode_tps']:.3f}  (overhead target: >= 0.97)")
    print(f"ratio probe/internal decode  = {probe_tps / base['internal_decode_tps']:.3f}")
    print(f"ratio probe TTFT / internal prompt time = {res.ttft_ms.p50 / base['internal_prompt_ms']:.3f}")
    best = ("defaults", base["decode_tps"])
    for t in sorted({1, threads}):
        for b in (256, 512):
            if (t, b) == (threads, 512):
                continue
            r = bare_loop(model, prompts, max_tokens, t, b)
            print(f"bare loop n_threads={t} n_batch={b}: decode {r['decode_tps']:.1f} tok/s")
            if r["decode_tps"] > best[1]:
                best = (f"n_threads={t} n_batch={b}", r["decode_tps"])
    print(f"ratio probe defaults / best bare loop ({best[0]}) = {probe_tps / best[1]:.3f}  (target: >= 0.95)")
    if res.system_load.busy:
        print(f"warning: {res.system_load.note}")


if __name__ == "__main__":
    main()

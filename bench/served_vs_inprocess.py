"""What you would deploy vs what the probe measured: the same engine, workload and levels, swept two ways on this
machine, and the ratio of each figure (served / in-process).

- in-process: `python -m probes sweep --engine E` (the probe's own settings: llama-cpp-python at 1, llama-server with
  as many slots as the level above 1; vLLM's AsyncLLM with max_num_seqs = the level, eager mode);
- served: `python -m probes serve --engine E --from-plan ANSWERS` (the deployment bundle's command for the plan,
  started once, swept through its HTTP API, stopped).

Usage: PYTHONPATH=. python bench/served_vs_inprocess.py --engine llama.cpp --answers examples/this-machine-smollm2.yaml
       [--levels 1,2,4,8] [--input-tokens 128] [--output-tokens 32] [--out DIR]
Run it on a quiet machine: a level measured while other processes load the CPU is marked BUSY and says so here.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(cmd: list[str], out: Path) -> dict:
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    print(f"  {' '.join(cmd[2:6])} … exit {p.returncode} in {time.monotonic() - t0:.0f} s", file=sys.stderr)
    if not p.stdout.strip():
        raise SystemExit(f"no result: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    out.write_text(p.stdout, encoding="utf-8")
    return json.loads(p.stdout)


def _ratio(a, b) -> str:
    return "-" if not a or not b else f"{a / b:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", required=True, choices=["llama.cpp", "vllm"])
    ap.add_argument("--answers", required=True)
    ap.add_argument("--levels", default="1,2,4,8")
    ap.add_argument("--input-tokens", default="128")
    ap.add_argument("--output-tokens", default="32")
    ap.add_argument("--out", default="/tmp/served_vs_inprocess")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = ["--input-tokens", args.input_tokens, "--output-tokens", args.output_tokens, "--concurrency", args.levels,
            "--format", "json"]
    py = [sys.executable, "-m"]
    tag = f"{args.engine}_{args.input_tokens}_{args.output_tokens}"
    served = _run([*py, "probes", "serve", "--engine", args.engine, "--from-plan", args.answers, *work],
                  out / f"served_{tag}.json")
    inproc = _run([*py, "probes", "sweep", "--engine", args.engine, *work], out / f"inprocess_{tag}.json")
    d = served.get("deployed") or {}
    print(f"{args.engine}, {args.input_tokens} in / {args.output_tokens} out, levels {args.levels}")
    print(f"  served:     {d.get('command_line', '')}")
    print(f"  in-process: {inproc.get('serving') or ''}")
    print(f"  {'conc':>4} | {'TTFT p50 ms s/i':>17} {'ratio':>5} | {'TTFT p95 ms s/i':>17} {'ratio':>5} | "
          f"{'ITL p50 ms s/i':>15} {'ratio':>5} | {'tok/s s/i':>13} {'ratio':>5} | busy")
    by_c = {lv["concurrency"]: lv for lv in inproc.get("levels", [])}
    for lv in served.get("levels", []):
        ip = by_c.get(lv["concurrency"])
        if ip is None:
            continue
        f = lambda x: "-" if x is None else f"{x:,.0f}" if x >= 100 else f"{x:,.1f}"  # noqa: E731
        s50, i50 = lv["ttft_ms"]["p50"], ip["ttft_ms"]["p50"]
        s95, i95 = lv["ttft_ms"]["p95"], ip["ttft_ms"]["p95"]
        sitl, iitl = lv["itl_ms"]["p50"], ip["itl_ms"]["p50"]
        stps, itps = lv["output_tps_total"], ip["output_tps_total"]
        busy = ",".join(x for x, b in (("served", lv.get("busy")), ("in-process", ip.get("busy"))) if b) or "-"
        print(f"  {lv['concurrency']:>4} | {f(s50):>8}/{f(i50):<8} {_ratio(s50, i50):>5} | {f(s95):>8}/{f(i95):<8} "
              f"{_ratio(s95, i95):>5} | {f(sitl):>7}/{f(iitl):<7} {_ratio(sitl, iitl):>5} | {f(stps):>6}/{f(itps):<6} "
              f"{_ratio(stps, itps):>5} | {busy}")
    print(f"  server ready after {d.get('ready_s')} s; stopped cleanly: {d.get('stopped')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

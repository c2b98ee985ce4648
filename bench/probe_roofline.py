"""How close a quiet probe gets to this machine's memory-bandwidth roofline, the figure below which a run is held as
contended (knowledge/planner.yaml: collapsed_roofline_pct; advisor.evidence.probe_check.hold_collapsed).

    PYTHONPATH=. python bench/probe_roofline.py [--engine llama.cpp] [--levels 1,4] [--requests 8]

Runs the real engine on the bundled model at each concurrency, on this machine as it is (run it quiet), and prints
the decode throughput of all sequences together as a share of the roofline the planner computes from this machine's
measured bandwidth, next to the threshold.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.evidence import check_probe  # noqa: E402
from advisor.inputs import detect  # noqa: E402
from advisor.knowledge.load import load_knowledge  # noqa: E402
from advisor.planner import machine_bench  # noqa: E402
from probes.result import ProbeSettings  # noqa: E402
from probes.runner import run_probe  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", default="llama.cpp")
    ap.add_argument("--levels", default="1,4")
    ap.add_argument("--requests", type=int, default=8)
    a = ap.parse_args()
    k = load_knowledge()
    hw, machine = detect(k), machine_bench.get()
    print(f"machine: {machine.memory_bandwidth_gb_s:.1f} GB/s; held below {k.planner.collapsed_roofline_pct:g}% "
          "of the roofline (all sequences together)")
    for c in (int(x) for x in a.levels.split(",")):
        res = run_probe(ProbeSettings(engine=a.engine, concurrency=c, requests=a.requests, max_tokens=32))
        check = check_probe(res, k, hw, machine)
        if check is None or check.roofline_pct is None:
            print(f"c={c}: {res.status}, no roofline to compare ({res.error or 'no check'})")
            continue
        share = check.roofline_pct * c
        print(f"c={c}: {check.decode_tps_measured:.1f} tok/s per sequence of at most {check.decode_tps_roofline:.1f}"
              f" -> {share:.1f}% of the roofline, {share / k.planner.collapsed_roofline_pct:.1f}x the threshold; "
              f"other processes {res.system_load.other_processes_cpu_percent}% CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Fit the serving model's efficiencies on published measurements, and say how well they predict the ones kept out.

    PYTHONPATH=. python bench/fit_serving.py            # fit, print the table, write knowledge/serving_fit.yaml
    PYTHONPATH=. python bench/fit_serving.py --dry-run  # fit and print only

Data: tests/advisor/data/published_measurements.yaml (batch 1: decode tok/s, prefill) and
tests/advisor/data/published_serving.yaml (throughput, TTFT, ITL at a concurrency, a request rate or offline), each
row with its URL and verbatim quote. Every fourth row of each file (advisor.planner.published.is_held_out) is kept out
of the fit; the error on those is each group's band. This machine's own sweeps are never part of the fit (they are the
held-out test for the CPU class: bench/predict_vs_measured.py).

Groups: "<engine>/<class>" where the engine has at least MIN_OBS fitted figures from MIN_ROWS rows on that hardware
class, and "<class>"
pooled over every engine. Each group's (bw_eff, flops_eff, step_ms) minimises the mean squared log error over its
figures, on a grid, with a light pull towards knowledge/serving.yaml's prior (so a term the data cannot see stays
where the prior put it).
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from advisor.knowledge.load import load_knowledge  # noqa: E402
from advisor.planner.published import Obs, batch1_obs, is_held_out, serving_obs  # noqa: E402
from advisor.planner.serving import Eff, fit_grid  # noqa: E402

DATA = ROOT / "tests" / "advisor" / "data"
OUT = ROOT / "knowledge" / "serving_fit.yaml"
MIN_OBS = 3  # figures, from at least MIN_ROWS rows (one blog's two runs are not an engine's efficiency)
MIN_ROWS = 3
PULL = 0.02  # weight of the pull towards the prior, per squared log unit
BW = [0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0]
FL = [0.05, 0.08, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
STEP = [0.0, 0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.5, 8.0, 10.0, 13.0, 17.0, 22.0, 30.0, 45.0, 70.0]
REQ = [0.0, 2.0, 5.0, 10.0, 20.0, 35.0, 60.0, 100.0, 170.0]
THROUGHPUT = ("output_tps", "total_tps", "decode1", "prefill1", "output_tps_per_user")
TTFT = ("ttft_p95", "ttft_p50", "ttft1")


def load_obs(k) -> tuple[list[Obs], list[Obs], dict]:
    b1 = yaml.safe_load((DATA / "published_measurements.yaml").read_text(encoding="utf-8"))
    sv_path = DATA / "published_serving.yaml"
    sv = yaml.safe_load(sv_path.read_text(encoding="utf-8")) if sv_path.exists() else {"rows": []}
    cpus = {**(b1.get("cpus") or {}), **(sv.get("cpus") or {})}
    fit, held = [], []
    for rows, make in ((b1["rows"], batch1_obs), (sv["rows"], serving_obs)):
        for i, row in enumerate(rows):
            obs = make(row, cpus, k)
            (held if is_held_out(row["id"], i) else fit).extend(obs)
    return fit, held, cpus


def rel_err(o: Obs, e: Eff) -> float | None:
    p = o.predict(e)
    return None if p is None or p <= 0 else p / o.measured - 1


def loss(obs: list[Obs], e: Eff, prior: Eff) -> float:
    total = 0.0
    for o in obs:
        p = o.predict(e)
        total += 4.0 if p is None or p <= 0 else math.log(p / o.measured) ** 2
    pull = sum(math.log(max(a, 1e-3) / max(b, 1e-3)) ** 2 for a, b in
               ((e.bw_eff, prior.bw_eff), (e.flops_eff, prior.flops_eff), (e.step_ms + 0.5, prior.step_ms + 0.5),
                (e.request_ms + 5, prior.request_ms + 5)))
    return total / max(1, len(obs)) + PULL * pull


def fit_group(obs: list[Obs], prior: Eff) -> Eff:
    return fit_grid(lambda e: loss(obs, e, prior), (BW, FL, STEP, REQ), (3, 2, 3, 3))


def median_abs(errs: list[float]) -> float | None:
    errs = [abs(x) for x in errs if x is not None]
    return statistics.median(errs) if errs else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    k = load_knowledge()
    fit, held, _ = load_obs(k)
    groups: dict[str, dict] = {}
    effs: dict[str, Eff] = {}
    classes = sorted({o.cls for o in fit})
    for cls in classes:
        pr = k.serving.priors[cls]
        prior = Eff(pr.bw_eff, pr.flops_eff, pr.step_ms)
        pooled = [o for o in fit if o.cls == cls]
        effs[cls] = fit_group(pooled, prior)
        for engine in sorted({o.engine for o in pooled if not o.engine.startswith("other:")}):
            own = [o for o in pooled if o.engine == engine]
            if len(own) >= MIN_OBS and len({o.row for o in own}) >= MIN_ROWS:
                effs[f"{engine}/{cls}"] = fit_group(own, effs[cls])
    # bands: the held-out error of each group's figures, else its in-fit error x 1.5 (no held-out evidence)
    for key, e in effs.items():
        engine, _, cls = key.rpartition("/")
        mine = (lambda o: o.cls == cls and (not engine or o.engine == engine))
        fit_err = median_abs([rel_err(o, e) for o in fit if mine(o)])
        held_err = [rel_err(o, e) for o in held if mine(o)]
        held_med = median_abs(held_err) if len([x for x in held_err if x is not None]) >= 2 else None
        band = held_med if held_med is not None else (fit_err or 0.5) * 1.5
        groups[key] = {"bw_eff": e.bw_eff, "flops_eff": e.flops_eff, "step_ms": e.step_ms, "request_ms": e.request_ms,
                       "points": sum(1 for o in fit if mine(o)),
                       "serving_points": sum(1 for o in fit if mine(o) and o.serving),
                       "fit_error": None if fit_err is None else round(fit_err, 3), "band": round(max(band, 0.01), 3)}

    def eff_for(o: Obs) -> Eff:
        return effs.get(f"{o.engine}/{o.cls}") or effs.get(o.cls) or Eff(**k.serving.priors[o.cls].model_dump())

    print(f"{'row':44} {'engine':12} {'class':18} {'figure':12} {'measured':>10} {'predicted':>10} {'error':>7}  set")
    rows_err = {"throughput": [], "ttft": [], "itl": []}
    worst = {"throughput": (0.0, ""), "ttft": (0.0, "")}
    for tag, obs in (("fit", fit), ("held-out", held)):
        for o in obs:
            e = eff_for(o)
            p = o.predict(e)
            err = None if p is None else p / o.measured - 1
            print(f"{o.row[:44]:44} {o.engine:12} {o.cls:18} {o.kind:12} {o.measured:>10.4g} "
                  f"{'—' if p is None else format(p, '.4g'):>10} {'—' if err is None else format(err, '+.0%'):>7}  {tag}")
            if tag == "held-out" and o.serving and err is not None:
                kind = "throughput" if o.kind in THROUGHPUT else ("ttft" if o.kind in TTFT else "itl")
                rows_err[kind].append(abs(err))
                if kind in worst and abs(err) > worst[kind][0]:
                    worst[kind] = (abs(err), o.row)
    summary = {
        "serving_throughput_median_abs_error": _r(median_abs(rows_err["throughput"])),
        "serving_ttft_median_abs_error": _r(median_abs(rows_err["ttft"])),
        "serving_itl_median_abs_error": _r(median_abs(rows_err["itl"])),
        "serving_throughput_worst": f"{worst['throughput'][0]:.0%} ({worst['throughput'][1]})",
        "serving_ttft_worst": f"{worst['ttft'][0]:.0%} ({worst['ttft'][1]})",
        "serving_throughput_figures": len(rows_err["throughput"]),
        "serving_ttft_figures": len(rows_err["ttft"]),
        "batch1_median_abs_error": _r(median_abs([rel_err(o, eff_for(o)) for o in held if not o.serving])),
    }
    print()
    for key, g in sorted(groups.items()):
        print(f"{key:32} bw_eff {g['bw_eff']:.2f}  flops_eff {g['flops_eff']:.2f}  step {g['step_ms']:>5} ms  "
              f"request {g['request_ms']:>5} ms  "
              f"points {g['points']:>3}  fit error {g['fit_error']}  band {g['band']}")
    print()
    for key, v in summary.items():
        print(f"{key}: {v}")
    if not args.dry_run:
        text = ("# Written by bench/fit_serving.py from the published measurements in tests/advisor/data/: do not edit\n"
                "# by hand; rerun the script. band = the median relative error on the rows kept out of the fit (else\n"
                "# the in-fit error x 1.5); advisor/planner/perf.py floors it at serving.yaml band_floor.\n")
        doc = {"fitted": "2026-12-01", "script": "bench/fit_serving.py", "fit_points": len(fit),
               "held_out_points": len(held), "held_out": summary, "groups": groups}
        OUT.write_text(text + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
        print(f"\nwrote {OUT.relative_to(ROOT)}")
    return 0


def _r(x):
    return None if x is None else round(x, 3)


if __name__ == "__main__":
    raise SystemExit(main())

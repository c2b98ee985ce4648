"""The serving model against every measurement we hold: the published set (fitted and held out) and the sweeps
measured on the reference machine (bench/data/reference_sweeps/, never part of the fit), as one table of ratios.

    PYTHONPATH=. python bench/predict_vs_measured.py                 # the published set and the reference sweeps
    PYTHONPATH=. python bench/predict_vs_measured.py SWEEP.json ...  # your own sweeps, measured on this machine
    PYTHONPATH=. python bench/predict_vs_measured.py --silicon       # the measured-silicon predictor only
    PYTHONPATH=. python bench/predict_vs_measured.py --held FILE     # keep (or reuse) the held-out refits in FILE

A reference sweep is predicted for the machine it was measured on (bench/data/reference_sweeps/machine.json: its
measured bandwidth and FLOPS) from the published fit only (knowledge/serving_fit.yaml), with no calibration to that
machine. Your own sweeps are predicted for this machine as detected.
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from advisor.evidence.sweep_check import check_sweep  # noqa: E402
from advisor.inputs import detect  # noqa: E402
from advisor.knowledge.load import load_knowledge  # noqa: E402
from advisor.planner import machine_bench  # noqa: E402
from advisor.planner.machine_bench import MachineBench  # noqa: E402
from advisor.planner.serving import burst, step_curve  # noqa: E402
from bench.fit_serving import kind_of, leave_one_source_out, load_obs, source_of  # noqa: E402
from probes.models import default_model  # noqa: E402
from probes.sweep_result import SweepResult  # noqa: E402

REF = ROOT / "bench" / "data" / "reference_sweeps"
TARGETS_MS = (1000, 2000, 5000, 10000, 20000)
JOBS = 2  # folds of the validation fitted at once  # SLA targets the capacities are compared at


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:+.0%}"


def held_out(obs, src, k, keep: Path | None) -> list:
    """leave_one_source_out, or its errors as kept in `keep` by an earlier run on the same fit, data and model code
    (a digest of them): the refits take 20-30 minutes on 2 cores, an analysis of their errors seconds."""
    import hashlib

    parts = [ROOT / "knowledge" / "serving_fit.yaml", ROOT / "knowledge" / "serving.yaml",
             *sorted((ROOT / "tests" / "advisor" / "data").glob("published_*.yaml")),
             *sorted((ROOT / "advisor" / "planner").glob("*.py")), ROOT / "bench" / "fit_serving.py"]
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in parts)).hexdigest()
    order = [o for s in sorted(set(src.values())) for o in obs if src[o.row] == s]
    if keep is not None and keep.is_file():
        kept = json.loads(keep.read_text(encoding="utf-8"))
        if kept.get("digest") == digest and len(kept.get("errors", [])) == len(order):
            return list(zip(order, kept["errors"]))
    held = leave_one_source_out(obs, src, k, JOBS)
    if keep is not None:
        keep.write_text(json.dumps({"digest": digest, "errors": [e for _, e in held]}), encoding="utf-8")
    return held


def published(k, keep: Path | None = None) -> tuple[list, dict[str, str]]:
    """Our model, left one source out (bench/fit_serving.py, as it last wrote knowledge/serving_fit.yaml): per
    hardware class and metric the held-out median, p80 (the band a plan shows) and p90 of |predicted / measured - 1|,
    and the share of the held-out figures inside the band each group states."""
    fit = k.serving_fit
    print(f"Our serving model, leave one source out: {fit.sources} sources, {fit.rows} rows, {fit.fit_points} figures "
          f"(bench/fit_serving.py, {fit.fitted})")
    for cls, row in fit.held_out.items():
        for kind, c in row.items():
            print(f"  ours     {cls:18} {kind:10} {int(c['points']):>4} figures  median {c['median']:>5.0%}  "
                  f"p80 {c['p80']:>5.0%}  p90 {c['p90']:>5.0%}")
    obs, src, _ = load_obs(k)
    inside = {"throughput": [0, 0], "ttft": [0, 0], "itl": [0, 0]}
    held = held_out(obs, src, k, keep)
    for o, err in held:
        g = fit.groups.get(f"{o.engine}/{o.cls}") or fit.groups.get(o.cls)
        if err is None or g is None:
            continue
        kind = kind_of(o)
        band = {"throughput": g.band, "ttft": g.band_ttft or g.band, "itl": g.band_itl or g.band}[kind]
        band = max(band, k.serving.band_floor)
        inside[kind][0] += abs(err) <= band
        inside[kind][1] += 1
    for kind, (n_in, n) in inside.items():
        if n:
            print(f"  ours     held-out figures inside the stated {kind} band: {n_in}/{n} = {n_in / n:.0%}")
    return held, src


SMALL_BATCH = 8  # the closed-loop levels whose ITL the engine's per-step host work dominates


def _q(xs: list[float], f: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(f * (len(xs) - 1) + 0.5))]


def step_overhead(recs: list[dict], leave_out: str | None = None) -> dict[str, float]:
    """Per engine, the ms a decode step takes beyond the library's TPOT at small batches: on closed-loop runs of at
    most SMALL_BATCH users with a measured ITL, the median of each source's median residual (measured ITL - its
    TPOT), never below 0. An engine with fewer than OWN_SOURCES such sources takes the pooled median of every source's.
    leave_out: a source whose rows are not used (the held-out check)."""
    per: dict[str, dict[str, list[float]]] = {}
    for r in recs:
        if r["source"] == leave_out or not r["small"] or not r["meas"]["itl"]:
            continue
        per.setdefault(r["engine"], {}).setdefault(r["source"], []).append(r["meas"]["itl"] - r["raw_itl"])
    return _by_source(per, {r["engine"] for r in recs}, 2)


OWN_SOURCES = 3  # an engine's own correction needs a median one source cannot move (of two, it is their mean)


def _by_source(per: dict[str, dict[str, list[float]]], engines: set[str], digits: int) -> dict[str, float]:
    """Per engine, the median of each source's median residual, never below 0; an engine with fewer than
    OWN_SOURCES sources takes the pooled median of every engine's sources' (0 where there is none). Until 2026-12-07
    two sources sufficed: a third vLLM publisher (Vultr, MiniMax-M2.5 at 1 and 8 users, +6 ms) then set vLLM's
    step overhead to 3.6 ms wherever GPUStack was held out, the mean of the two left, and the held-out ITL went
    16 -> 30 %."""
    pooled = [statistics.median(v) for src in per.values() for v in src.values()]
    out = {}
    for engine in engines:
        srcs = per.get(engine, {})
        vals = [statistics.median(v) for v in srcs.values()] if len(srcs) >= OWN_SOURCES else pooled
        out[engine] = round(max(0.0, statistics.median(vals)), digits) if vals else 0.0
    return out


def seq_overhead(recs: list[dict], step: dict[str, float], leave_out: str | None = None) -> dict[str, float]:
    """Per engine, the ms each running sequence adds to a decode step beyond the library's TPOT and the per-step host
    work: on runs of more than SMALL_BATCH sequences with a measured ITL, (measured ITL - TPOT - step) / sequences,
    the median of each source's median, never below 0; an engine with fewer than OWN_SOURCES such sources takes the
    pooled median. leave_out: a source whose rows are not used (the held-out check)."""
    per: dict[str, dict[str, list[float]]] = {}
    for r in recs:
        if r["source"] == leave_out or r["small"] or not r["meas"]["itl"] or r["users"] <= SMALL_BATCH:
            continue
        resid = (r["meas"]["itl"] - r["raw_itl"] - step.get(r["engine"], 0.0)) / r["users"]
        per.setdefault(r["engine"], {}).setdefault(r["source"], []).append(resid)
    return _by_source(per, {r["engine"] for r in recs}, 4)


def silicon(k) -> dict[str, dict[str, float]]:
    """The measured-silicon predictor (aiconfigurator-core) on every published serving row it has data for. None of
    these rows is in its data (per-operation tables, never end-to-end runs): each is held out. Its TPOT gets each
    engine's per-step host work (step_overhead_ms, earned here on closed-loop runs of at most SMALL_BATCH users), and
    that correction is held out by source: each row is predicted with the overhead its own source did not help earn.
    Prints per row, then per metric the median, p80 (the band knowledge/aiconfigurator.yaml states) and p90 of
    |pred/meas - 1| with and without the correction, and the share inside the stated band; our fitted model on the
    same rows beside it (partly its own fit rows). Returns each row's signed errors as shown, by row id and metric."""
    import yaml

    from advisor.planner import aic
    from advisor.planner.aic import installed, point
    from advisor.planner.perf import _silicon, takes_ttft, with_host_floor, with_step_overhead
    from advisor.planner.published import (_calc, burst_budget, burst_lengths, burst_places, prefill_token_s, schedule_of,
                                           served as served_row)

    if not installed():
        print("\nMeasured-silicon predictor: aiconfigurator-core is not installed")
        return {}
    rows = yaml.safe_load((ROOT / "tests/advisor/data/published_serving.yaml").read_text())["rows"]
    from advisor.planner.perf import efficiency, hw_class

    # its answers kept in the user cache dir as the CLI and the app keep them: a second run reads no table
    aic.use_store(aic.default_store(k.aiconfigurator.version), k.aiconfigurator.version)

    print("\nMeasured-silicon predictor (aiconfigurator-core) on published serving rows: predicted / measured (error);"
          " ours = our fitted model's error on the same figure")
    recs = []
    for r in rows:
        if r["engine"] not in k.aiconfigurator.backends or r["hardware"].get("gpu_vendor") != "nvidia":
            continue
        i, o = int(r["input_tokens"]), int(r["output_tokens"])
        load = r.get("load") or {}
        engine, c = _calc(r, {}, k, i, o, int(load.get("concurrency") or 256))
        hw = c.serving_hw()
        if hw is None:
            continue
        eff = efficiency(engine, hw_class(c.target, c.device, k), k)[0]
        si, why = _silicon(c, c.mode, hw, eff, c.wl, k)
        if si is None:
            print(f"{r['id'][:58]:58} no silicon prediction: {why}")
            continue
        si.extra_ms = si.seq_ms = si.host_ms_per_seq = 0.0  # the library's own figures: the corrections are applied
        # below, held out by source
        if load.get("concurrency"):
            users = int(load["concurrency"])
        elif load.get("offline"):
            n = int(load.get("requests") or 10**6)
            users = max(1, min(n, hw.max_running or n))
        else:  # an open-loop rate: the users in flight that rate keeps, by Little's law on its own latency
            users = 8
            for _ in range(8):
                f = si.figures(users)
                users = max(1, round(float(load["request_rate"]) * (f[0] + f[2] * max(0, o - 1)) / 1000))
        f = si.figures(users)
        if f is None:
            continue
        mine = si._ours(users)
        lengths = burst_lengths(r)
        places = burst_places(c, len(lengths)) if lengths is not None else None
        meas = {"ttft": (r.get("ttft_ms") or {}).get("mean") or (r.get("ttft_ms") or {}).get("p50"),
                "itl": (r.get("itl_ms") or {}).get("mean") or (r.get("itl_ms") or {}).get("p50"),
                "tps": r.get("output_tps"), "total": r.get("total_tps")}
        # its own TTFT (the plan shows ours; this is the figure that decided so), its ITL and tok/s as shown
        own = point(si.key, i, o, users if hw.max_running is None else max(1, min(users, hw.max_running)))
        recs.append({"id": r["id"], "engine": r["engine"], "source": source_of(r), "users": users, "meas": meas,
                     "per_output": (i + o) / o,  # total tokens (prompt and output) per output token
                     "small": bool(load.get("concurrency")) and users <= SMALL_BATCH, "served": served_row(r),
                     "raw_itl": f[2], "raw_tps": f[4], "ttft": own.ttft_ms,
                     "ours": {"ttft": mine.ttft_ms_p50, "itl": mine.itl_ms_p50, "tps": mine.output_tps},
                     "burst": None if lengths is None else (si, lengths, *places, i, prefill_token_s(hw, eff),
                                                            burst_budget(r, hw, places[1], i, o),
                                                            schedule_of(k, engine)),
                     "ttft_burst": (r.get("ttft_ms_burst") or {}).get("mean"),
                     # no request waits for a place: a closed loop within the engine's running cap, or a rate
                     "placed": lengths is None and (hw.max_running is None or users <= hw.max_running), "si": si,
                     "ttft95": (r.get("ttft_ms") or {}).get("p95")})
    loso = {src: step_overhead(recs, src) for src in {r["source"] for r in recs}}
    loso_seq = {src: seq_overhead(recs, loso[src], src) for src in loso}
    other_choice: dict[str, list[float]] = {"itl": [], "tps": []}
    errs: dict[str, list[float]] = {"ttft": [], "itl": [], "tps": [], "total": []}
    raw: dict[str, list[float]] = {"ttft": [], "itl": [], "tps": [], "total": []}
    ours: dict[str, list[float]] = {"ttft": [], "itl": [], "tps": [], "total": []}
    shown: dict[str, dict[str, float]] = {}
    bursts: dict[str, list[float]] = {"itl": [], "tps": [], "ttft_burst": []}
    steady_b: dict[str, list[float]] = {"itl": [], "tps": []}
    def served(r, extra: float, seq: float, host: float = 0.0):
        """(ITL, tok/s, the burst or None) with `extra` ms of host work per step, `seq` per running sequence, and a
        step of at least `host` ms per running sequence where the row was served through an API server."""
        host = host if r["served"] else 0.0
        itl, tps = with_host_floor(*with_step_overhead(r["raw_itl"], r["raw_tps"], extra + seq * r["users"]),
                                   host * r["users"])
        b = None
        if r["burst"] is not None:  # every request at once: served through its places until the last ends
            si, lengths, slots, pool, prompt, per_token, budget, sched = r["burst"]
            o_mean = sum(lengths) / len(lengths)

            def decode(n: int, si=si, o_mean=o_mean, prompt=prompt, per_token=per_token) -> float:
                # its steady state's step, less the share of the prompts it mixes in (n / out of them a step):
                # the burst prefills them itself, up front; the host's floor is the API server's, not the GPU's
                s = with_step_overhead(si.figures(n)[2], 1.0, extra + seq * n)[0] / 1000
                return max(0.3 * s, s - n / o_mean * prompt * per_token, host * n / 1000)
            b = burst(step_curve(decode, slots), lengths, slots, prompt, pool, per_token, budget, sched)
            if b is not None:
                itl, tps = b.tpot_ms_mean, b.output_tps
        return itl, tps, b

    use_seq = bool(k.aiconfigurator.seq_overhead_ms)  # as the plans do: only where the knowledge adopted it
    # the served floor, earned left one source out on a grid (each row's figures at every grid value, once)
    at_grid = {(r["id"], h): served(r, loso[r["source"]].get(r["engine"], 0.0), 0.0, h)[:2]
               for r in recs for h in HOST_GRID if r["users"] > SMALL_BATCH}
    host_loso = {src: host_floor(recs, at_grid, src) for src in loso}
    use_host = bool(k.aiconfigurator.host_ms_per_seq)
    no_host: dict[str, list[float]] = {"itl": [], "tps": [], "total": []}
    for r in recs:
        extra = loso[r["source"]].get(r["engine"], 0.0)
        seq_alt = loso_seq[r["source"]].get(r["engine"], 0.0)
        seq = seq_alt if use_seq else 0.0
        host = host_loso[r["source"]] if use_host else 0.0
        steady = dict(zip(("itl", "tps"), with_step_overhead(r["raw_itl"], r["raw_tps"], extra + seq * r["users"])))
        itl0, tps0, _ = served(r, extra, 0.0 if use_seq else seq_alt, host)  # the other choice, for comparison
        for m, v in (("itl", itl0), ("tps", tps0)):
            if r["meas"][m]:
                other_choice[m].append(abs(v / r["meas"][m] - 1))
        itl_h, tps_h, _ = served(r, extra, seq, 0.0 if use_host else host_loso[r["source"]])
        for m, v in (("itl", itl_h), ("tps", tps_h), ("total", tps_h * r["per_output"])):
            if r["meas"][m]:
                no_host[m].append(abs(v / r["meas"][m] - 1))
        itl, tps, b = served(r, extra, seq, host)
        # its total tok/s (prompt and output tokens) is its output tok/s times the tokens per output token
        pred = {"ttft": r["ttft"], "itl": itl, "tps": tps, "total": tps * r["per_output"]}
        lib = {"ttft": r["ttft"], "itl": r["raw_itl"], "tps": r["raw_tps"], "total": r["raw_tps"] * r["per_output"]}
        if b is not None:
            for m in ("itl", "tps"):
                if r["meas"][m]:
                    bursts[m].append(abs(pred[m] / r["meas"][m] - 1))
                    steady_b[m].append(abs(steady[m] / r["meas"][m] - 1))
            if r["ttft_burst"]:
                bursts["ttft_burst"].append(abs(b.ttft_ms_mean / r["ttft_burst"] - 1))
        cells = []
        for m in ("ttft", "itl", "tps", "total"):
            meas = r["meas"][m]
            if meas:
                e = pred[m] / meas - 1
                shown.setdefault(r["id"], {})[m] = e
                errs[m].append(abs(e))
                raw[m].append(abs(lib[m] / meas - 1))
                if r["ours"].get(m):
                    ours[m].append(abs(r["ours"][m] / meas - 1))
                cells.append(f"{m} {pred[m]:8.4g}/{meas:<8.4g}({_pct(e):>5})")
        if b is not None and r["ttft_burst"]:
            cells.append(f"burst ttft {b.ttft_ms_mean:8.4g}/{r['ttft_burst']:<8.4g}"
                         f"({_pct(b.ttft_ms_mean / r['ttft_burst'] - 1):>5})")
        print(f"{r['id'][:58]:58} users {r['users']:>4}{' burst' if b is not None else '      '}  " + "  ".join(cells))
    # its TTFT plus each engine's fixed cost per request (API server, tokenizer, scheduler: measured TTFT - its TTFT,
    # the median of each source's median, held out by source), where no request waits for a place
    def ttft_cost(leave_out: str | None = None) -> dict[str, float]:
        per: dict[str, dict[str, list[float]]] = {}
        for r in recs:
            if r["source"] != leave_out and r["placed"] and r["meas"]["ttft"]:
                per.setdefault(r["engine"], {}).setdefault(r["source"], []).append(r["meas"]["ttft"] - r["ttft"])
        return _by_source(per, {r["engine"] for r in recs}, 1)
    # as a plan shows it (advisor/planner/perf.py _Silicon._ttft): its TTFT plus the engine's fixed cost (held out
    # by source), plus our model's wait for a place beyond the running cap; every row that is not a burst
    fixed_ttft, dp_rows = [], []
    for r in recs:
        if r["burst"] is not None or not (r["meas"]["ttft"] or r["ttft95"]):
            continue
        s_ = r["si"]
        if not takes_ttft(s_.key):  # (attention data-parallel: a plan shows our TTFT there)
            dp_rows.append(r["id"])
            continue
        s_.ttft_fixed_ms = ttft_cost(r["source"]).get(r["engine"], 0.0)
        f = s_.figures(r["users"])
        s_.ttft_fixed_ms = None
        if f is None or f[0] is None:
            continue
        for m, pred_, meas_ in (("ttft_p50", f[0], r["meas"]["ttft"]), ("ttft_p95", f[1], r["ttft95"])):
            if meas_ and pred_:
                e = pred_ / meas_ - 1
                shown.setdefault(r["id"], {})[m] = e
                fixed_ttft.append(abs(e))
    if fixed_ttft:
        print(f"silicon ttft as a plan shows it (its own plus the fixed cost held out by source, our wait beyond the "
              f"running cap; p50 and p95 figures): {len(fixed_ttft)} figures, median "
              f"{statistics.median(fixed_ttft):.1%}, p80 {_q(fixed_ttft, 0.8):.1%}, p90 {_q(fixed_ttft, 0.9):.0%}")
    if dp_rows:
        print(f"  (attention data-parallel, our TTFT shown: {', '.join(dp_rows)})")
    print(f"each engine's fixed cost per request, every source (ttft_fixed_ms): {ttft_cost()}; in "
          f"knowledge/aiconfigurator.yaml: {dict(k.aiconfigurator.ttft_fixed_ms)}")
    a = k.aiconfigurator
    overall = step_overhead(recs)
    print(f"per-step host work beyond its TPOT, every source (step_overhead_ms): {overall}; "
          f"in knowledge/aiconfigurator.yaml: {dict(a.step_overhead_ms)}")
    print(f"per-sequence host work per step beyond that, every source (seq_overhead_ms): {seq_overhead(recs, overall)}"
          f"; in knowledge/aiconfigurator.yaml: {dict(a.seq_overhead_ms)}")
    print(f"served host floor per running sequence, every source (host_ms_per_seq): "
          f"{host_floor(recs, at_grid)} ms; held out by source: {host_loso}; in knowledge/aiconfigurator.yaml: "
          f"{a.host_ms_per_seq}")
    for m, xs in no_host.items():
        if xs:
            print(f"silicon {m:5} {'without' if use_host else 'with'} the served host floor (held out by source): "
                  f"median {statistics.median(xs):.0%}, p80 {_q(xs, 0.8):.0%}")
    other = "without" if a.seq_overhead_ms else "with"
    for m, xs in other_choice.items():
        if xs:
            print(f"silicon {m:5} {other} the per-sequence host work (held out by source): median "
                  f"{statistics.median(xs):.0%}, p80 {_q(xs, 0.8):.0%}")
    for m, xs in errs.items():
        if not xs:
            continue
        inside = sum(x <= a.bands[BAND_OF.get(m, m)].band for x in xs) / len(xs)
        os_ = sorted(ours[m])
        print(f"silicon {m:5}: {len(xs)} figures, median {statistics.median(xs):.0%}, p80 {_q(xs, 0.8):.0%}, p90 "
              f"{_q(xs, 0.9):.0%}; inside the stated band ±{a.bands[BAND_OF.get(m, m)].band:.0%}: {inside:.0%}"
              f"   (without the step overhead: median {statistics.median(raw[m]):.0%}, p80 {_q(raw[m], 0.8):.0%})"
              + (f"   (ours: median {statistics.median(os_):.0%})" if os_ else ""))
    both = errs.get("tps", []) + errs.get("total", [])
    if both:  # the tok/s band a plan shows (knowledge/aiconfigurator.yaml bands.tps) is the p80 of these together
        print(f"silicon tok/s, output and total together: {len(both)} figures, median {statistics.median(both):.1%}, "
              f"p80 {_q(both, 0.8):.1%}")
    for m, xs in bursts.items():
        if xs:
            base = f" (as a steady state: median {statistics.median(steady_b[m]):.0%})" if steady_b.get(m) else ""
            print(f"silicon, the {len(xs)} offline bursts, {m}: median {statistics.median(xs):.0%}, "
                  f"p80 {_q(xs, 0.8):.0%}{base}")
    return shown


HOST_GRID = (0.0, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.15, 0.18, 0.22, 0.26, 0.3, 0.35)  # ms per sequence


def host_floor(recs: list[dict], at_grid: dict, leave_out: str | None = None) -> float:
    """The served host floor (ms of a step per running sequence) that best fits the served runs of more than
    SMALL_BATCH sequences: the HOST_GRID value with the least mean |log(predicted / measured)| over their ITL,
    output and total tok/s, each source weighing the same (the smallest on a tie). A median over the pooled figures
    (until 2026-12-06) was flat where most rows sit under the floor and jumped between 0.12 and 0.3 ms with small
    changes elsewhere; one publisher's 41 burst rows outvoted the other three's 18. at_grid: (row id, value) ->
    (ITL, output tok/s) as predicted with it. leave_out: a source whose rows are not used (the held-out check)."""
    import math

    use = [r for r in recs if r["source"] != leave_out and r["served"] and r["users"] > SMALL_BATCH]

    def loss(h: float) -> float:
        per: dict[str, list[float]] = {}
        for r in use:
            itl, tps = at_grid[(r["id"], h)]
            for m, v in (("itl", itl), ("tps", tps), ("total", tps * r["per_output"])):
                if r["meas"][m] and v:
                    per.setdefault(r["source"], []).append(abs(math.log(v / r["meas"][m])))
        return statistics.fmean(statistics.fmean(xs) for xs in per.values()) if per else 0.0
    return min(HOST_GRID, key=lambda h: (round(loss(h), 9), h))


# the figures a plan takes from it (TTFT where knowledge/aiconfigurator.yaml gives the engine's fixed cost)
SILICON_METRIC = {"output_tps": "tps", "total_tps": "total", "itl": "itl", "ttft_p50": "ttft_p50", "ttft_p95": "ttft_p95"}
BAND_OF = {"total": "tps", "ttft_p50": "ttft", "ttft_p95": "ttft"}  # a total tok/s is its output tok/s times a
# constant: the same band; both TTFT figures carry the TTFT band


def silicon_metric(o, si: dict[str, dict[str, float]], k) -> str | None:
    """The measured-silicon predictor's figure that a plan shows for the published figure `o` (si: silicon()'s
    errors by row), or None where a plan shows our model's: its ITL and tok/s where it has data, its TTFT where the
    knowledge gives the engine's fixed cost per request (knowledge/aiconfigurator.yaml ttft_fixed_ms)."""
    m = SILICON_METRIC.get(o.kind)
    if m in ("ttft_p50", "ttft_p95") and o.engine not in k.aiconfigurator.ttft_fixed_ms:
        return None
    return m if m and m in si.get(o.row, {}) else None


def silicon_quiet(k) -> dict[str, dict[str, float]]:
    """silicon() without its printed table: what bench/fit_serving.py reads to earn our model's bands on the
    figures a plan shows from it."""
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        return silicon(k)


def as_shown(k, held: list, src: dict[str, str], si: dict[str, dict[str, float]]) -> None:
    """What a plan shows, held out: per published figure, the measured-silicon predictor's error where it gives that
    figure (ITL and output tok/s on its systems, engines and models), else our model's left-one-source-out error;
    each with the band shown beside it. Per hardware class and metric: the median and p80 of |error| and the share
    inside the band (80 % is what a p80 band claims)."""
    from collections import Counter

    import yaml

    from advisor.planner.perf import efficiency, label_for, metric_bands
    from bench.fit_serving import DATA

    fit, a = k.serving_fit, k.aiconfigurator
    rows = yaml.safe_load((DATA / "published_serving.yaml").read_text(encoding="utf-8"))
    users = {r["id"]: (r.get("load") or {}).get("concurrency") for r in rows["rows"]}
    offline = {r["id"] for r in rows["rows"] if (r.get("load") or {}).get("offline")}
    cells: dict[tuple[str, str], list[tuple[float, float, str]]] = {}
    by_load: dict[tuple[str, str, bool], list[tuple[float, float, str]]] = {}
    for o, err in held:
        if err is None:
            continue
        kind = kind_of(o)
        m = silicon_metric(o, si, k)
        if m:
            err, band, who = si[o.row][m], a.bands[BAND_OF.get(m, m)].band, "silicon"
        else:  # the band a plan shows beside our figure (advisor/planner/perf.py), rough widening included
            if o.engine.startswith("other:") or not (fit.groups.get(f"{o.engine}/{o.cls}") or fit.groups.get(o.cls)):
                continue  # (an engine we do not rank, gpt-fast, MLC: its figures speak for its class's fit, no plan)
            batching = o.serving and users.get(o.row) != 1
            _, tps, basis, group = efficiency(o.engine, o.cls, k, batching=batching)
            ttft, itl, _ = metric_bands(tps, basis, group, label_for(basis, group, k, batching), k)
            band, who = {"throughput": tps, "ttft": ttft, "itl": itl}[kind], "ours"
        cells.setdefault((o.cls, kind), []).append((abs(err), band, who, src[o.row]))
        by_load.setdefault((o.cls, kind, o.row in offline), []).append((abs(err), band, who))
    print("\nAs a plan shows them (each figure from the predictor that gives it, held out; bands as shown): "
          "|predicted / measured - 1|")
    for (cls, kind), xs in sorted(cells.items()):
        errs = [e for e, *_ in xs]
        inside = sum(e <= b for e, b, *_ in xs) / len(xs)
        n_si = sum(w == "silicon" for _, _, w, _ in xs)
        per_src = Counter(s_ for *_, s_ in xs)
        wmed = _weighted_median([(e, 1 / per_src[s_]) for e, _, _, s_ in xs])
        print(f"  shown    {cls:18} {kind:10} {len(xs):>4} figures ({n_si:>3} silicon) from {len(per_src):>2} sources  "
              f"median {statistics.median(errs):>5.0%} (each source weighing the same: {wmed:>4.0%})  "
              f"p80 {_q(errs, 0.8):>5.0%}  inside the band shown {inside:>4.0%}")
    # the same, split by how the run loaded the server: a closed loop of users or a rate (what a plan predicts), or
    # every request at once (an offline burst: queueing, preemption and the tail of a chat dataset's outputs)
    print("  by load (closed loop or rate | offline burst, every request at once):")
    for (cls, kind, burst), xs in sorted(by_load.items()):
        errs = [e for e, *_ in xs]
        print(f"  {'burst' if burst else 'steady':8} {cls:18} {kind:10} {len(xs):>4} figures "
              f"({sum(w == 'silicon' for *_, w in xs):>3} silicon)  median {statistics.median(errs):>5.0%}  "
              f"p80 {_q(errs, 0.8):>5.0%}  inside the band shown {sum(e <= b for e, b, _ in xs) / len(xs):>4.0%}")


def _weighted_median(xs: list[tuple[float, float]]) -> float:
    """The value below which half the weight lies."""
    xs = sorted(xs)
    half, acc = sum(w for _, w in xs) / 2, 0.0
    for x, w in xs:
        acc += w
        if acc >= half:
            return x
    return xs[-1][0]


def sweeps(k, files: list[Path], hardware, machine, note: str) -> None:
    print(f"\nSweeps ({note}): per level measured / predicted (error)")
    print(f"{'engine':12} {'in/out':>8} {'users':>5} {'TTFT p95 ms':>28} {'ITL p50 ms':>24} {'output tok/s':>24}")
    for f in files:
        sw = SweepResult.model_validate_json(f.read_bytes())
        if sw.model in (None, "bundled"):
            sw.model = str(default_model())
        c = check_sweep(sw, k, hardware, machine, None, None)
        if c is None:
            print(f"{sw.engine:12} (no prediction: {f.name})")
            continue
        for lv in c.levels:
            e = lv.errors()
            print(f"{c.engine:12} {c.input_tokens:>4}/{c.output_tokens:<3} {lv.concurrency:>5} "
                  f"{lv.measured_ttft_ms_p95 or 0:>10.0f} / {lv.predicted_ttft_ms_p95 or 0:>7.0f} ({_pct(e['ttft_p95']):>5}) "
                  f"{lv.measured_itl_ms_p50 or 0:>7.1f} / {lv.predicted_itl_ms_p50 or 0:>6.1f} ({_pct(e['itl_p50']):>5}) "
                  f"{lv.measured_output_tps or 0:>7.1f} / {lv.predicted_output_tps or 0:>6.1f} ({_pct(e['output_tps']):>5})"
                  + ("  busy" if lv.busy else ""))
        print(f"{c.engine:12} {c.input_tokens:>4}/{c.output_tokens:<3} capacity at p95 TTFT <= {c.ttft_target_ms:g} ms: "
              f"measured {c.measured_capacity}, predicted {c.predicted_capacity}; median |error| tok/s "
              f"{(c.median_abs_error('output_tps') or 0):.0%}, TTFT p95 {(c.median_abs_error('ttft_p95') or 0):.0%}, "
              f"ITL p50 {(c.median_abs_error('itl_p50') or 0):.0%} ({c.label} ±{c.band:.0%}, group {c.group})")
        caps = [(t, *c.capacity_at(t)) for t in TARGETS_MS]
        print(f"{c.engine:12} {c.input_tokens:>4}/{c.output_tokens:<3} capacity on the sweep's levels (measured/predicted) "
              + ", ".join(f"p95 TTFT <= {t / 1000:g} s: {m}/{p}" for t, m, p in caps))


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):  # the full run refits 23 folds (about half an hour): never start it by mistake
        print(__doc__)
        return 0
    k = load_knowledge()
    if argv[:1] == ["--silicon"]:  # the measured-silicon predictor's section alone (no refits: seconds, not minutes)
        silicon(k)
        return 0
    keep = None
    if argv[:1] == ["--held"] and len(argv) >= 2:
        keep, argv = Path(argv[1]), argv[2:]
    held, src = published(k, keep)
    as_shown(k, held, src, silicon(k))
    hw = detect(k)
    if argv:
        sweeps(k, [Path(a) for a in argv], hw, machine_bench.get(), "this machine, published fit only")
        return 0
    ref = json.loads((REF / "machine.json").read_text(encoding="utf-8"))
    machine = MachineBench.model_validate(ref["machine_bench"])
    sweeps(k, sorted(REF.glob("*_*.json")), hw, machine,
           f"the reference machine: {ref['machine_bench']['cpu_model']}, {ref['cpus']} CPUs, published fit only")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""Time a recommendation after the knowledge is loaded. Prints medians and their ratios to the budgets.

Two figures per example, both with the flip search (what a page shows):

  cold  every memo the pipeline keeps (the serving model's and capacity search's lru_caches, the compiled rule
        conditions, the GPU look-ups, ...) cleared before one recommend(): a fresh process that has loaded the
        knowledge but never answered this file. Budget: 100 ms. Median of COLD_RUNS such runs.
  warm  the same call again with the memos as the call before left them (a page redrawn). Budget: 5 ms.

The ranking alone (with_flips=False, warm) is printed too. `--cold-runs N` / `--warm-runs N` change the repeats.
"""
import argparse
import functools
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.decide.rules import recommend  # noqa: E402
from advisor.inputs.answers import load_answers  # noqa: E402
from advisor.knowledge.load import load_knowledge  # noqa: E402

COLD_BUDGET_MS = 100.0
WARM_BUDGET_MS = 5.0

#: module-level dict memos (not lru_caches) that a fresh process starts without
DICT_MEMOS = (
    ("advisor.planner.target", "_FOUND"),
    ("advisor.decide.scoring", "_COMPILED"),
    ("advisor.knowledge.support", "_NEEDS"),
    ("advisor.decide.scoring", "_TESTED"),
    ("advisor.decide.support_score", "_EFFECTS"),
)
#: lru_caches that are not a recommendation's memo: the knowledge itself ("knowledge already loaded")
KEEP = {("advisor.knowledge.load", "_cached"),
        ("advisor.planner.aic", "_model"), ("advisor.planner.aic", "_db")}  # aiconfigurator-core's tables, read once a process


def _memos():
    """Every lru_cache found on an advisor.* module (functions and class attributes), and the dict memos above."""
    caches, dicts = [], []
    for name, mod in list(sys.modules.items()):
        if mod is None or not (name == "advisor" or name.startswith("advisor.")):
            continue
        for attr, obj in list(vars(mod).items()):
            if (name, attr) in KEEP:
                continue
            holders = [obj] + (list(vars(obj).values()) if isinstance(obj, type) and obj.__module__ == name else [])
            for h in holders:
                h = getattr(h, "__func__", h)
                if isinstance(h, functools._lru_cache_wrapper) and h not in caches:
                    caches.append(h)
    for mod, attr in DICT_MEMOS:
        d = getattr(sys.modules.get(mod), attr, None)
        if isinstance(d, dict):
            dicts.append(d)
    return caches, dicts


def clear_memos() -> None:
    caches, dicts = _memos()
    for c in caches:
        c.cache_clear()
    for d in dicts:
        d.clear()


def cold_ms(fn, n: int) -> float:
    times = []
    for _ in range(n):
        clear_memos()
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def warm_ms(fn, n: int) -> float:
    fn()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cold-runs", type=int, default=5)
    ap.add_argument("--warm-runs", type=int, default=50)
    ap.add_argument("examples", nargs="*", help="example names (default: every examples/*.yaml)")
    args = ap.parse_args(argv)
    t = time.perf_counter()
    k = load_knowledge()
    print(f"knowledge load: {(time.perf_counter() - t) * 1000:.1f} ms (once per process)")
    recommend(load_answers(next(iter(sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.yaml"))))),
              None, k, with_flips=False)  # imports and first-use set-up, which no example should be charged
    caches, dicts = _memos()
    print(f"memos cleared for cold: {len(caches)} lru_caches "
          f"({', '.join(sorted(c.__module__ + '.' + c.__qualname__ for c in caches))}), {len(dicts)} dicts")
    print(f"budgets: cold {COLD_BUDGET_MS:g} ms, warm {WARM_BUDGET_MS:g} ms (with flips); "
          f"medians of {args.cold_runs} cold / {args.warm_runs} warm runs")
    worst_cold = worst_warm = 0.0
    for f in sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.yaml")):
        if args.examples and f.stem not in args.examples and f.name not in args.examples:
            continue
        a = load_answers(f)
        if a.hardware is None:
            continue
        cold = cold_ms(lambda: recommend(a, None, k), args.cold_runs)
        warm = warm_ms(lambda: recommend(a, None, k), args.warm_runs)
        ranking = warm_ms(lambda: recommend(a, None, k, with_flips=False), args.warm_runs)
        worst_cold, worst_warm = max(worst_cold, cold), max(worst_warm, warm)
        print(f"{f.name:32} cold {cold:7.1f} ms ({cold / COLD_BUDGET_MS:5.2f}x of {COLD_BUDGET_MS:g})   "
              f"warm {warm:7.2f} ms ({warm / WARM_BUDGET_MS:5.2f}x of {WARM_BUDGET_MS:g})   "
              f"ranking only {ranking:6.2f} ms ({ranking / WARM_BUDGET_MS:.2f}x)")
    print(f"worst: cold {worst_cold:.1f} ms ({worst_cold / COLD_BUDGET_MS:.2f}x), "
          f"warm {worst_warm:.2f} ms ({worst_warm / WARM_BUDGET_MS:.2f}x)")


if __name__ == "__main__":
    main()

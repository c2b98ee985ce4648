"""Time a recommendation after the knowledge is loaded (target: < 5 ms). Prints medians and ratios."""
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.decide.rules import recommend  # noqa: E402
from advisor.inputs.answers import load_answers  # noqa: E402
from advisor.knowledge.load import load_knowledge  # noqa: E402

TARGET_MS = 5.0


def median_ms(fn, n=200):
    fn()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main():
    t = time.perf_counter()
    k = load_knowledge()
    print(f"knowledge load: {(time.perf_counter() - t) * 1000:.1f} ms (once per process)")
    for f in sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.yaml")):
        a = load_answers(f)
        if a.hardware is None:
            continue
        ranking = median_ms(lambda: recommend(a, None, k, with_flips=False))
        full = median_ms(lambda: recommend(a, None, k))
        print(f"{f.name:32} ranking {ranking:6.3f} ms ({ranking / TARGET_MS:.2f}x of budget)   "
              f"with flips {full:6.3f} ms ({full / TARGET_MS:.2f}x of budget)")


if __name__ == "__main__":
    main()

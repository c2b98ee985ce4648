"""The suite census: run the whole pytest suite, optionally with CPU hogs beside it, and list what failed.

    .venv/bin/python bench/suite_census.py            # one quiet run
    .venv/bin/python bench/suite_census.py --hogs 2   # two busy loops on the side for the whole run

The hogs are started and stopped here, never by the suite: a test must hold on a busy machine without knowing it is
one. Prints the wall time, pytest's summary line and every failed or errored test id (what the census lists), and
exits with pytest's own code. Run it from a checkout where `make test` has installed everything.
"""
import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOG = "while True:\n    pass\n"


def main() -> int:
    p = argparse.ArgumentParser(prog="bench/suite_census.py")
    p.add_argument("--hogs", type=int, default=0, help="busy loops to run beside the suite (0-16)")
    p.add_argument("--log", type=Path, default=None, help="keep pytest's output in this file")
    p.add_argument("pytest_args", nargs="*", help="extra arguments for pytest (after --)")
    a = p.parse_args()
    if not 0 <= a.hogs <= 16:
        print("error: --hogs must be 0-16", file=sys.stderr)
        return 2
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(a.hogs)]
    t0 = time.perf_counter()
    try:
        run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *a.pytest_args], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    wall = time.perf_counter() - t0
    out = run.stdout
    if a.log:
        a.log.write_text(out)
    summary = next((ln for ln in reversed(out.splitlines()) if re.match(r"^(=+ )?\d+ (passed|failed|error)", ln)), "?")
    bad = sorted(set(re.findall(r"^(?:FAILED|ERROR) (\S+)", out, flags=re.M)))
    print(f"hogs {a.hogs}  wall {wall / 60:.1f} min  {summary.strip('= ')}")
    for t in bad:
        print(f"  failed: {t}")
    return run.returncode


if __name__ == "__main__":
    raise SystemExit(main())

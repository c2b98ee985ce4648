"""The pairing and summary logic of bench/llama_fidelity.py and bench/ui_vs_cli.py, without an engine: the two
sides run AB BA AB …, and the median ratio, its spread and the busy pairs left out are computed as printed."""
import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


fid = _load("llama_fidelity")
uvc = _load("ui_vs_cli")


def test_pairs_alternate_which_side_goes_first():
    assert [fid.pair_order(i) for i in range(4)] == [("a", "b"), ("b", "a"), ("a", "b"), ("b", "a")]


def test_run_pairs_runs_ab_ba_ab_and_keeps_each_pair_as_a_b():
    calls, seen = [], []
    counter = {"a": 0, "b": 0}

    def side(name):
        def run():
            counter[name] += 1
            calls.append(name)
            return f"{name}{counter[name]}"
        return run

    pairs = fid.run_pairs(3, side("a"), side("b"), lambda i, a, b, a_first: seen.append((i, a, b, a_first)))
    assert "".join(calls) == "abbaab"
    assert pairs == [("a1", "b1"), ("a2", "b2"), ("a3", "b3")]
    assert seen == [(0, "a1", "b1", True), (1, "a2", "b2", False), (2, "a3", "b3", True)]


def test_one_pair_is_enough_for_a_smoke_run():
    assert fid.run_pairs(1, lambda: 1, lambda: 2) == [(1, 2)]
    s = fid.pairs_summary([0.98], [False])
    assert (s["median"], s["min"], s["max"], s["q1"], s["q3"], s["used"], s["pairs"]) == (0.98,) * 5 + (1, 1)


def test_summary_median_spread_and_interquartile_range():
    s = fid.pairs_summary([1.05, 0.9, 1.0, 0.95], [False] * 4)
    assert s["median"] == pytest.approx(0.975)
    assert (s["min"], s["max"]) == (0.9, 1.05)
    assert s["q1"] == pytest.approx(0.9375) and s["q3"] == pytest.approx(1.0125)  # inclusive quartiles
    assert (s["pairs"], s["used"], s["busy"], s["missing"]) == (4, 4, 0, 0)


def test_busy_pairs_and_pairs_without_a_figure_are_left_out_and_counted():
    s = fid.pairs_summary([0.97, 0.5, 0.99, None, 0.98], [False, True, False, False, True])
    assert s["median"] == pytest.approx(0.98)  # 0.97, 0.99: the busy 0.5 and 0.98 do not count
    assert (s["min"], s["max"]) == (0.97, 0.99)
    assert (s["pairs"], s["used"], s["busy"], s["missing"]) == (5, 2, 2, 1)
    assert s["median_all"] == pytest.approx(0.975)  # every measured pair, for information
    line = fid.format_summary("ratio probe/bare decode", s, "(target)")
    assert "median 0.980 over 2 of 5 pair(s)" in line and "min–max 0.970–0.990" in line
    assert "2 busy pairs left out" in line and "1 pair without a figure left out" in line


def test_all_pairs_busy_gives_no_median_but_says_so():
    s = fid.pairs_summary([0.9, 0.8], [True, True])
    assert s["median"] is None and s["used"] == 0 and s["busy"] == 2
    line = fid.format_summary("ratio", s)
    assert "no median" in line and "2 busy pairs left out" in line and "information only: 0.850" in line


def test_ratios_and_flags_must_match():
    with pytest.raises(ValueError):
        fid.pairs_summary([1.0, 1.0], [False])


def test_ui_run_busy_test_takes_the_apps_own_cpu_out():
    t = fid.BUSY_OTHER_CPU_PERCENT
    assert not uvc.pair_busy(1.0, t + 10, 15.0)  # the app's own load is what the bench measures
    assert uvc.pair_busy(1.0, t + 10, 5.0)  # something else loaded the machine during the UI run
    assert uvc.pair_busy(t + 1, 0.0, 0.0)  # the CLI run was disturbed
    assert not uvc.pair_busy(None, None, None)


def test_figures_read_a_probe_result_and_tolerate_missing_ones():
    r = {"decode_tps_per_request": {"p50": 120.0}, "ttft_ms": {"p50": None}, "output_tps_total": 90.0}
    assert [uvc.figure(r, k) for _, k in uvc.FIGURES] == [120.0, None, 90.0]
    assert uvc.figure({}, ("ttft_ms", "p50")) is None


def test_pairs_below_one_are_refused_before_anything_runs(monkeypatch, capsys):
    with pytest.raises(SystemExit):
        fid.main(["6", "64", "--pairs", "0"])
    assert "--pairs must be at least 1" in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["ui_vs_cli.py", "--rounds", "0"])  # the old option still parses
    with pytest.raises(SystemExit):
        uvc.main()
    assert "--pairs must be at least 1" in capsys.readouterr().err

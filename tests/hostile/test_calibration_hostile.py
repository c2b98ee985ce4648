"""This machine's recalibration file (serving_calibration.json in the user data dir) is an input like any other: a
figure no recalibration of ours can make (an efficiency of 1e-300, one beyond the roofline, a step of a million ms,
a factor that is NaN, infinite or negative) is ignored, and every plan for this machine still answers; the plan then
says nothing of a measurement. A file this product wrote is read and labels the plan "measured" (so the test can
fail). Audit finding: `bw_eff: 1e-300` made `plan` and `recommend` exit 1 with an OverflowError until it was deleted."""
from __future__ import annotations

import json

import pytest

from tests.hostile.kit import ROOT, bounded

THIS_MACHINE = str(ROOT / "examples" / "this-machine-smollm2.yaml")  # no hardware block: plans for this CPU
GOOD = {"engine": "llama.cpp", "bw_eff": 0.3, "flops_eff": 0.2, "step_ms": 1.0, "request_ms": 0.0, "band": 0.3,
        "sweep_at": "2026-12-05T00:00:00+0000", "levels": 3, "change_tps": 1.2, "change_ttft": 0.9}


def _labels(out: str) -> list[str]:
    found = []

    def walk(x):
        if isinstance(x, dict):
            if "basis" in x and "label" in x:
                found.append(x["label"])
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(json.loads(out))
    return found


def _plan(tmp_path, entry: dict | str, cmd: str = "plan"):
    from advisor.planner.machine_bench import _cpu_model

    data = tmp_path / "data"
    data.mkdir()
    body = entry if isinstance(entry, str) else json.dumps({"llama.cpp": {**entry, "cpu_model": _cpu_model()}})
    (data / "serving_calibration.json").write_text(body)
    return bounded(["-m", "advisor", cmd, "--answers", THIS_MACHINE, "--format", "json"], hard_limit_s=120,
                   env={"INFERENCE_ADVISOR_DATA": str(data)})


def test_a_file_this_product_writes_labels_the_plan_measured(tmp_path):
    o = _plan(tmp_path, GOOD)
    assert o.rc == 0, o.err[-2000:]
    assert "measured" in _labels(o.out)


BAD = {
    "bw_eff-1e-300": {"bw_eff": 1e-300},
    "flops_eff-1e-300": {"flops_eff": 1e-300},
    "bw_eff-beyond-the-roofline": {"bw_eff": 1.5},
    "step_ms-a-million": {"step_ms": 1e6},
    "request_ms-1e300": {"request_ms": 1e300},
    "change_tps-negative": {"change_tps": -5},
    "change_tps-1e308": {"change_tps": 1e308},
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_figure_no_recalibration_makes_is_ignored_and_the_plan_answers(tmp_path, case):
    o = _plan(tmp_path, {**GOOD, **BAD[case]})
    assert o.rc == 0 and "Traceback" not in o.err, o.err[-2000:]
    assert "measured" not in _labels(o.out)


@pytest.mark.parametrize("const", ["NaN", "Infinity", "-Infinity"])
def test_a_factor_that_is_not_a_number_is_ignored(tmp_path, const):
    from advisor.planner.machine_bench import _cpu_model

    body = json.dumps({"llama.cpp": {**GOOD, "cpu_model": _cpu_model()}}).replace('"change_tps": 1.2',
                                                                                    f'"change_tps": {const}')
    o = _plan(tmp_path, body, "recommend")
    assert o.rc == 0 and "Traceback" not in o.err, o.err[-2000:]
    assert "xnan" not in o.out.lower() and "xinf" not in o.out.lower()


def test_every_figure_the_recalibration_can_make_is_one_the_file_keeps():
    from advisor.evidence.sweep_check import BW, FL, REQ, STEP
    from advisor.planner.types import CAL_BOUNDS

    for name, grid in (("bw_eff", BW), ("flops_eff", FL), ("step_ms", STEP), ("request_ms", REQ)):
        lo, hi = CAL_BOUNDS[name]
        assert lo <= min(grid) and max(grid) <= hi, name

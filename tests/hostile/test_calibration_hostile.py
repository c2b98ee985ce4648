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


def _sweep_here(levels=((1, 900.0, 20.0, 45.0), (2, 1400.0, 24.0, 80.0), (4, 2600.0, 30.0, 120.0))):
    """A sweep of llama.cpp on this checkout's bundled model on this CPU, as `probes sweep` writes it (3 quiet
    levels): what the audit's colleague.json looked like."""
    from probes.models import default_model
    from probes.result import Percentiles
    from probes.sweep_result import SweepLevel, SweepResult

    lv = [SweepLevel(concurrency=c, status="ok", requests_total=20, requests_ok=20, goodput=1.0,
                     ttft_ms=Percentiles(p50=t * 0.7, p95=t, p99=t), itl_ms=Percentiles(p50=i, p95=i, p99=i),
                     output_tps_total=tps) for c, t, i, tps in levels]
    return SweepResult(engine="llama.cpp", status="ok", device="cpu", model=str(default_model()),
                       ttft_target_ms=10000, levels=lv, started_at="2026-12-05T00:00:00+0000",
                       first_settings={"engine": "llama.cpp", "input_tokens": 64, "output_tokens": 32},
                       first_tokens=[64, 32])


def test_a_sweep_this_installation_did_not_make_recalibrates_nothing(tmp_path, monkeypatch):
    """Audit finding 6: `advisor plan --sweep colleague.json` (this checkout's model path, `device: cpu`, three quiet
    levels) rewrote this machine's llama.cpp calibration (x80 on tok/s) and every later plan changed. Only a sweep
    signed with this installation's key (made here: probes.sweep signs what it measures) recalibrates; the same
    sweep signed here does, so the test can fail."""
    from probes.sweep_result import made_here, sign

    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("INFERENCE_ADVISOR_DATA", str(data))
    foreign = _sweep_here()
    (tmp_path / "colleague.json").write_text(foreign.model_dump_json())
    forged = foreign.model_copy(update={"signature": "0" * 64})
    (tmp_path / "forged.json").write_text(forged.model_dump_json())
    for name in ("colleague.json", "forged.json"):
        o = bounded(["-m", "advisor", "plan", "--answers", THIS_MACHINE, "--sweep", str(tmp_path / name)],
                    hard_limit_s=120, env={"INFERENCE_ADVISOR_DATA": str(data)})
        assert o.rc == 0, o.err[-1500:]
        assert not (data / "serving_calibration.json").exists(), name
    mine = sign(foreign)
    assert made_here(mine) and not made_here(foreign) and not made_here(forged)
    edited = mine.model_copy(update={"levels": [lv.model_copy(update={"output_tps_total": 9000.0})
                                                for lv in mine.levels]})
    assert not made_here(edited)  # changed after its run: no longer what was measured here
    (tmp_path / "mine.json").write_text(mine.model_dump_json())
    o = bounded(["-m", "advisor", "plan", "--answers", THIS_MACHINE, "--sweep", str(tmp_path / "mine.json")],
                hard_limit_s=120, env={"INFERENCE_ADVISOR_DATA": str(data)})
    assert o.rc == 0, o.err[-1500:]
    assert (data / "serving_calibration.json").exists()

"""A user's benchmark file beside the prediction: what it speaks for (its own words, then the user's), the
per-level errors against the predictor the plan uses, and the recalibration that a matching file of 2+ levels makes
(and a file of another GPU, a thin one or a failing one does not). The files are real GuideLLM / vllm bench runs on
this machine's CPU (tests/probes/data/evidence/); said to be from an H100 here only to exercise the mechanism."""
from pathlib import Path

import pytest

from advisor.evidence.imported import Assumed, check_evidence
from advisor.inputs.answers import parse_answers
from advisor.knowledge.load import load_knowledge
from advisor.planner import make_plan
from probes.bench_formats import read_results
from tests.hostile.kit import bounded

EVIDENCE = Path(__file__).resolve().parents[2] / "probes" / "data" / "evidence"
H100 = {"hardware": {"gpu_vendor": "nvidia", "gpu_model": "h100-sxm", "gpu_count": 1},
        "model": {"name": "llama-3.1-8b", "precision": "fp8"}, "concurrency": 16, "ttft_p95_ms": 2000}
SAID = Assumed(engine="vllm", gpu="NVIDIA H100 80GB HBM3", same_model=True)


@pytest.fixture(scope="module")
def k():
    return load_knowledge()


def _run(prefix: str):
    f = sorted(EVIDENCE.glob(f"{prefix}-*.json"))[-1]
    return read_results(f.read_bytes(), f.name)


def test_a_file_that_does_not_say_its_engine_or_gpu_gets_no_prediction_and_no_calibration(k):
    c = check_evidence(_run("guidellm"), parse_answers(H100), k)
    assert set(c.missing) == {"engine", "gpu"}
    assert c.calibration is None
    assert all(lv.predicted_output_tps is None for lv in c.levels)  # never guessed
    assert [lv.measured_output_tps for lv in c.levels] == [lv.output_tps for lv in _run("guidellm").levels]


def test_said_and_matching_it_is_predicted_per_level_and_recalibrates(k):
    answers = parse_answers(H100)
    c = check_evidence(_run("guidellm"), answers, k, SAID)
    assert c.missing == [] and c.mismatch == []
    assert set(c.said_by_user) == {"engine", "gpu", "model"}
    assert c.predictor and "aiconfigurator" in c.predictor  # the plan's own predictor for vLLM on an H100
    assert all(lv.predicted_output_tps and lv.predicted_ttft_ms for lv in c.levels)
    cal = c.calibration
    assert cal is not None and cal.engine == "vllm" and cal.gpu_id == "h100-sxm" and cal.levels == 2
    # the scale is the measured / predicted median: the CPU run is far slower than an H100 prediction
    assert cal.tps_scale < 1 < cal.ttft_scale
    before = make_plan(answers, None, k).engines["vllm"].serving
    after = make_plan(answers, None, k, calibration={"evidence:vllm": cal}).engines["vllm"].serving
    assert after.evidence == cal and before.evidence is None
    assert after.at_users.output_tps == pytest.approx(before.at_users.output_tps * cal.tps_scale, rel=0.01)
    assert after.capacity < before.capacity  # TTFT x ratio: fewer users within the same target
    other = make_plan(answers, None, k, calibration={"evidence:vllm": cal}).engines["sglang"].serving
    assert other.evidence is None  # another engine is not recalibrated by it


def test_another_gpu_is_shown_and_cannot_recalibrate(k):
    c = check_evidence(_run("guidellm"), parse_answers(H100), k,
                       Assumed(engine="vllm", gpu="NVIDIA A100 80GB PCIe", same_model=True))
    assert "gpu" in c.mismatch and c.calibration is None and c.why_not_calibrated == "ev_why_mismatch"
    assert all(lv.predicted_output_tps for lv in c.levels)  # predicted for what it ran


def test_one_level_is_thin(k):
    c = check_evidence(_run("vllm-bench"), parse_answers(H100), k, SAID)
    assert c.calibration is None and c.why_not_calibrated == "ev_why_thin"


def test_a_failing_run_recalibrates_nothing(k):
    run = _run("guidellm")
    for lv in run.levels:
        lv.requests_failed = lv.requests_ok  # half of everything failed
    c = check_evidence(run, parse_answers(H100), k, SAID)
    assert c.calibration is None and c.why_not_calibrated == "ev_why_failures"


def test_the_cli_sets_the_file_beside_the_plan_in_en_and_zh(tmp_path):
    import yaml

    a = tmp_path / "a.yaml"
    a.write_text(yaml.safe_dump(H100))
    f = str(sorted(EVIDENCE.glob("guidellm-*.json"))[-1])
    res = bounded(["-m", "advisor", "plan", "--answers", str(a), "--evidence", f, "--evidence-engine", "vllm",
                   "--evidence-gpu", "h100-sxm", "--evidence-same-model"], hard_limit_s=120)
    assert res.rc == 0, res.err
    assert "Calibrated on your measurement (guidellm-0.8.1.json" in res.out
    assert "vLLM: calibrated on your measurement" in res.out  # the plan names it where it names its predictor
    rep = bounded(["-m", "advisor", "report", "--answers", str(a), "--evidence", f, "--evidence-engine", "vllm",
                   "--evidence-gpu", "h100-sxm", "--evidence-same-model", "--out", str(tmp_path / "r.md")],
                  hard_limit_s=120)
    assert rep.rc == 0, rep.err
    md = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert "## Your own benchmark files" in md and "| 2 concurrent |" in md
    zh = bounded(["-m", "advisor", "recommend", "--lang", "zh", "--answers", str(a), "--evidence", f],
                 hard_limit_s=120)
    assert zh.rc == 0, zh.err
    assert "你的基准测试文件" in zh.out and "没有说明" in zh.out


@pytest.mark.parametrize("extra,fragment", [(["--evidence", "/nonexistent/x.json"], "not found"),
                                           (["--evidence-engine", "tgi"], "--evidence-engine")])
def test_cli_bad_evidence_is_one_line(tmp_path, extra, fragment):
    a = tmp_path / "a.yaml"
    a.write_text("concurrency: 4\n")
    bad = tmp_path / "bad.json"
    bad.write_text('{"mean_ttft_ms": NaN, "model_id": "x", "num_prompts": 1}')
    args = ["-m", "advisor", "plan", "--answers", str(a), "--evidence", str(bad)] + extra
    line = bounded(args, hard_limit_s=60).one_line_error(2)
    assert fragment in line or "NaN" in line


def test_records_without_their_load_ask_for_it_and_then_are_predicted(k):
    f = sorted(EVIDENCE.glob("aiperf-*.jsonl"))[-1]
    run = read_results(f.read_bytes(), f.name)
    c = check_evidence(run, parse_answers(H100), k, SAID)
    assert "load" in c.missing and c.levels[0].predicted_output_tps is None  # never guessed
    c = check_evidence(run, parse_answers(H100), k, SAID.model_copy(update={"concurrency": 2}))
    assert c.missing == [] and "load" in c.said_by_user
    assert c.levels[0].concurrency == 2 and c.levels[0].predicted_output_tps
    assert c.calibration is None and c.why_not_calibrated == "ev_why_thin"  # one level


def test_a_gpu_we_do_not_know_is_one_line(tmp_path):
    import yaml

    a = tmp_path / "a.yaml"
    a.write_text(yaml.safe_dump(H100))
    f = str(sorted(EVIDENCE.glob("guidellm-*.json"))[-1])
    line = bounded(["-m", "advisor", "plan", "--answers", str(a), "--evidence", f, "--evidence-engine", "vllm",
                    "--evidence-gpu", "Acme Tensor Brick 9000"], hard_limit_s=60).one_line_error(2)
    assert "is not one we know" in line and "Acme Tensor Brick 9000" in line

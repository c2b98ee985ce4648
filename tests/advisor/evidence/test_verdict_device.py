"""The verdict is honest about where it measured: a CPU probe never speaks for a GPU target (nor one GPU model for
another), in the verdict, the report (md) and `python -m advisor report`. The results here are recorded ones, as a
probe writes them (no engine runs)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.decide.rules import recommend
from advisor.evidence.verdict import measured_on, revisit, target_device
from advisor.inputs.answers import parse_answers
from advisor.knowledge.load import load_knowledge
from advisor.report.document import build_markdown
from probes.result import Percentiles, ProbeResult

ROOT = Path(__file__).resolve().parents[3]
K = load_knowledge()
L40S = {"concurrency": 1, "ttft_p95_ms": 1000,
        "hardware": {"gpu_vendor": "nvidia", "gpu_model": "L40S", "gpu_count": 2, "gpu_memory_gb": 48,
                     "os": "linux"}, "model": {"params_b": 7}}


def _result(engine: str, device: str, p95: float = 200.0) -> ProbeResult:
    return ProbeResult(engine=engine, status="ok", device=device, goodput=1.0, output_tps_total=40.0,
                       ttft_ms=Percentiles(p50=p95 / 2, p95=p95, p99=p95), serving="test")


@pytest.mark.parametrize("device,kind", [("cpu", "cpu"), ("cuda:0 NVIDIA H200", "gpu"), ("cuda", "gpu"),
                                         ("cpu/dml", "gpu"), ("remote server 10.0.0.2:8000", "remote"),
                                         (None, None)])
def test_where_a_result_was_measured(device, kind):
    assert measured_on(ProbeResult(engine="x", status="ok", device=device, ttft_ms={"p95": 100.0}))[0] == kind


def test_a_cpu_probe_for_a_gpu_target_does_not_confirm_the_advice():
    a = parse_answers(L40S)
    rec = recommend(a, None, K, with_flips=False)
    top = rec.top.engine
    v = revisit(rec, [_result(top, "cpu")], 1000.0, "en", target=target_device(a, None, K), knowledge=K)
    assert v.status == "elsewhere" and not v.changes_advice
    assert "measured on this machine's CPU; your target is 2 × L40S, so this measurement does not speak for it" \
        in v.summary
    # the same result on the target's kind of device confirms it
    on_gpu = revisit(rec, [_result(top, "cuda:0 NVIDIA L40S")], 1000.0, "en", target=target_device(a, None, K),
                     knowledge=K)
    assert on_gpu.status == "confirmed"


def test_another_gpu_model_does_not_speak_for_the_targets_speed_and_never_changes_the_advice():
    a = parse_answers(L40S)
    rec = recommend(a, None, K, with_flips=False)
    top, second = rec.ranking[0].engine, rec.ranking[1].engine
    results = [_result(top, "cuda:0 NVIDIA H200", p95=5000.0), _result(second, "cuda:0 NVIDIA H200", p95=100.0)]
    v = revisit(rec, results, 1000.0, "en", target=target_device(a, None, K), knowledge=K)
    assert v.status == "elsewhere" and not v.changes_advice
    assert "measured on NVIDIA H200; your target is 2 × L40S" in v.summary


def test_a_gpu_probe_for_a_cpu_target_says_so_in_chinese():
    a = parse_answers({**L40S, "hardware": {"gpu_vendor": "none", "ram_gb": 64}})
    rec = recommend(a, None, K, lang="zh", with_flips=False)
    v = revisit(rec, [_result(rec.top.engine, "cuda:0 NVIDIA H200")], 1000.0, "zh",
                target=target_device(a, None, K, "zh"), knowledge=K)
    assert v.status == "elsewhere" and "纯 CPU" in v.summary and "不能代表目标硬件" in v.summary


def test_the_report_and_the_cli_carry_the_mismatch(tmp_path):
    a = parse_answers(L40S)
    rec = recommend(a, None, K, with_flips=False)
    res = _result(rec.top.engine, "cpu")
    md = build_markdown(a, None, rec, [res], K, "en")
    assert "does not speak for it" in md
    answers = tmp_path / "a.yaml"
    answers.write_text(json.dumps(L40S))
    probe = tmp_path / "p.json"
    probe.write_text(res.model_dump_json())
    out = tmp_path / "r.md"
    p = subprocess.run([sys.executable, "-m", "advisor", "report", "--answers", str(answers), "--probe", str(probe),
                        "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "measured on this machine's CPU; your target is 2 × L40S" in out.read_text(encoding="utf-8")

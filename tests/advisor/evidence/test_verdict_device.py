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


def test_a_run_that_collapsed_against_the_roofline_is_held_and_gives_no_verdict():
    """Walk-3 H1, as recorded: llama.cpp on the bundled model at c=4 decoded at 1.9 tok/s per sequence while other
    probes loaded both cores, and the CPU counters saw only 17.7 %. Against this machine's roofline (from its
    measured bandwidth) the run is held like a busy one: its verdict says why and never 'revisit the hardware'."""
    from advisor.evidence import check_probe, hold_collapsed
    from advisor.inputs import detect
    from advisor.planner.machine_bench import MachineBench
    from probes.models import default_model
    from probes.result import ProbeSettings, SystemLoad

    res = ProbeResult(engine="llama.cpp", status="ok", device="cpu", model=str(default_model()), goodput=0.0,
                      output_tps_total=6.2, ttft_ms=Percentiles(p50=5000.0, p95=8117.0, p99=8200.0),
                      decode_tps_per_request=Percentiles(p50=1.9, p95=2.1, p99=2.2), serving="test",
                      settings=ProbeSettings(engine="llama.cpp", concurrency=4, requests=8),
                      system_load=SystemLoad(loadavg_1m_before=2.83, loadavg_1m_after=3.48, cpu_count=2,
                                             other_processes_cpu_percent=17.7, busy=False))
    machine = MachineBench(cpu_model="this", threads=2, memory_bandwidth_gb_s=25.0, fp32_gflops=100.0,
                           measured_at="2026-12-05")
    check = check_probe(res, K, detect(K), machine)
    assert check is not None and check.roofline_pct < 5
    held = hold_collapsed(res, check, K)
    assert held.system_load.busy and held.system_load.collapsed_roofline_pct < 5
    assert not res.system_load.busy  # the stored result is unchanged
    a = parse_answers({"concurrency": 4, "ttft_p95_ms": 1000, "model": {"name": "smollm2-135m"}})
    rec = recommend(a, None, K, with_flips=False)
    v = revisit(rec, [held], 1000.0, "en", knowledge=K)
    assert "revisit the hardware" not in v.summary
    line = next(e for e in v.engines if e.engine == "llama.cpp")
    assert line.held and "roofline" in line.held and not v.changes_advice
    # a quiet run at the same settings is not held
    quiet = res.model_copy(update={"decode_tps_per_request": Percentiles(p50=38.5, p95=40.0, p99=41.0)})
    assert not hold_collapsed(quiet, check_probe(quiet, K, detect(K), machine), K).system_load.busy


def test_when_every_engine_is_predicted_to_miss_the_page_and_report_lead_with_it():
    """Walk-3 M8: the ranking put an engine first whose own reason says it misses the target 8x, and no line said
    that nothing meets it. An 8B model for 4 users within 1 s on a 2-core CPU that reads 25 GB/s."""
    from advisor.inputs import detect
    from advisor.planner.machine_bench import MachineBench

    machine = MachineBench(cpu_model="this", threads=2, memory_bandwidth_gb_s=25.0, fp32_gflops=100.0,
                           measured_at="2026-12-05")
    a = parse_answers({"concurrency": 4, "ttft_p95_ms": 1000, "model": {"name": "llama-3.1-8b", "precision": "q4_k_m"}})
    rec = recommend(a, detect(K), K, with_flips=False, machine=machine)
    none = rec.none_meets()
    assert none is not None and none[0] == rec.ranking[0].name and none[1] > 1000 and none[2] == 1000
    for lang, words in (("en", "No engine is predicted to meet p95 TTFT ≤ 1,000 ms"), ("zh", "没有任何引擎被预测能")):
        assert words in build_markdown(a, detect(K), rec, [], K, lang)
    ok = parse_answers({"concurrency": 4, "ttft_p95_ms": 60000, "model": {"name": "smollm2-135m"}})
    assert recommend(ok, detect(K), K, with_flips=False, machine=machine).none_meets() is None


def test_an_error_of_2x_or_more_reads_as_the_factor():
    """Walk-3 L4: a 5x under-prediction read "-81 %", an 11x over-prediction a capped "+999 %"."""
    from advisor.evidence.sweep_check import error_text

    assert error_text(-0.81, K, "en") == "predicted 5.3× low" and error_text(10.0, K, "en") == "predicted 11.0× high"
    assert error_text(0.24, K, "en") == "+24%" and error_text(-0.4, K, "zh") == "-40%"
    assert error_text(-0.81, K, "zh") == "预测偏低 5.3 倍" and error_text(None, K, "en") == "—"

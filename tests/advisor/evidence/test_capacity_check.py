"""The sweep against the answers: capacity per engine next to Q1, cost at capacity, and whether the advice changes.
The sweeps here are recorded summaries (levels with their measured figures), as `python -m probes sweep` writes."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.evidence.capacity_check import check_capacity
from advisor.knowledge.load import load_knowledge
from probes.result import Percentiles
from probes.sweep_result import SweepLevel, SweepResult

K = load_knowledge()
ROOT = Path(__file__).resolve().parents[3]


def _sweep(engine, capacity, tps_at_capacity=50.0, device="cpu"):
    levels = [SweepLevel(concurrency=c, status="ok", ttft_ms=Percentiles(p95=100.0 * c), goodput=1.0,
                         output_tps_total=tps_at_capacity if c == capacity else 10.0)
              for c in (1, 2, 4, 8) if capacity is None or c <= capacity * 2]
    return SweepResult(engine=engine, status="ok", device=device, ttft_target_ms=1000, levels=levels,
                       capacity=capacity, stop_reason="test")


def test_the_top_engine_meeting_q1_confirms():
    v = check_capacity([_sweep("llama.cpp", 8), _sweep("vllm", 4)], 8, "llama.cpp", K, cores=16)
    assert not v.changes_advice and "confirms" in v.summary
    assert "llama.cpp meets p95 ≤ 1000 ms (goodput ≥ 90%) up to 8 concurrent request(s) here, and you asked for 8" \
        in v.lines[0]


def test_another_engine_serving_q1_changes_the_advice():
    v = check_capacity([_sweep("llama.cpp", 2), _sweep("vllm", 8)], 6, "llama.cpp", K, lang="zh", cores=16)
    assert v.changes_advice and v.better == "vllm" and "改变了建议" in v.summary


def test_cost_at_capacity_is_this_machines_price_over_the_measured_rate():
    v = check_capacity([_sweep("llama.cpp", 4, tps_at_capacity=100.0)], 4, "llama.cpp", K, cores=10,
                       core_price=0.05)
    row = v.rows[0]
    assert row.usd_per_hour == pytest.approx(0.5)
    assert row.usd_per_m_tokens == pytest.approx(0.5 / (100 * 3600) * 1e6, rel=1e-3)


def test_the_report_cli_takes_sweeps(tmp_path):
    a = tmp_path / "a.yaml"
    a.write_text(json.dumps({"concurrency": 4, "hardware": {"gpu_vendor": "none", "cpu_cores": 16, "ram_gb": 64}}))
    files = []
    for e, cap in (("llama.cpp", 2), ("onnxruntime", 4)):
        f = tmp_path / f"{e}.json"
        f.write_text(_sweep(e, cap).model_dump_json())
        files += ["--sweep", str(f)]
    out = tmp_path / "r.md"
    p = subprocess.run([sys.executable, "-m", "advisor", "report", "--answers", str(a), *files, "--out", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    md = out.read_text(encoding="utf-8")
    assert "## Measured capacity (concurrency sweep)" in md and "| ONNX Runtime | 4 | 4 |" in md
    bad = tmp_path / "bad.json"
    bad.write_text('{"engine": 3}')
    p = subprocess.run([sys.executable, "-m", "advisor", "report", "--answers", str(a), "--sweep", str(bad),
                        "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and "not a sweep result" in p.stderr and len(p.stderr.strip().splitlines()) == 1

"""Bounds that stay bounds: no published single-stream measurement beats the planner's decode or TTFT bound.

Each row of data/published_measurements.yaml (source URL and verbatim quote kept with it) is planned for its model,
precision and hardware at batch 1 and its prompt length; the measured decode rate must stay at or under
`decode_tps_upper_bound`, and the measured prefill time (or first-token latency) at or over `ttft_ms_lower_bound`.
`test_tightness_summary` prints how close each engine gets: the median of measured / bound.
"""
from __future__ import annotations

import statistics
from pathlib import Path

import pytest
import yaml

from advisor.inputs.answers import parse_answers
from advisor.knowledge.load import load_knowledge
from advisor.planner import plan_engine
from advisor.planner.capacity import Workload
from advisor.planner.published import spec_of
from advisor.planner.spec import ModelSpec
from advisor.planner.target import build_target
from advisor.planner.types import Target

K = load_knowledge()
DATA = yaml.safe_load((Path(__file__).parents[1] / "data" / "published_measurements.yaml").read_text(encoding="utf-8"))
ROWS = DATA["rows"]
UNKNOWN_PROMPT = 1 << 20  # prompt length not stated: the prefill bound of a very long prompt (the compute limit)


def _spec(row: dict) -> ModelSpec:
    return spec_of(row, K)  # the same reading of a row as the serving fit's (advisor/planner/published.py)


def _target(row: dict) -> Target:
    if "cpu" in row:
        cpu = DATA["cpus"][row["cpu"]]
        return Target(source="answers", gpu_vendor="none", ram_gib=64, cpu_bandwidth_gb_s=cpu["bandwidth_gb_s"])
    return build_target(parse_answers({"hardware": row["hardware"]}), None, K, None)


def plan_row(row: dict, prompt: int | None = None):
    """The plan whose bounds the row is held to: its engine, model, precision, target; batch 1."""
    prompt = prompt or row.get("prompt_tokens") or UNKNOWN_PROMPT
    wl = Workload(precision=row.get("precision", "fp16"), context_tokens=max(4096, min(prompt, 1 << 17)),
                  concurrency=1, prompt_tokens=prompt, resident_tokens=row.get("decode_resident_tokens", 0))
    return plan_engine(row["plan_engine"], _spec(row), _target(row), wl, K, detail=False)


def ratios(row: dict) -> tuple[float | None, float | None]:
    """(measured decode / decode bound, measured prefill rate / prefill bound): at most 1 when the bounds hold."""
    p = plan_row(row)
    dec = None
    if row.get("decode_tps") is not None:
        assert p.decode_tps_upper_bound, row["id"]
        dec = row["decode_tps"] / p.decode_tps_upper_bound
    pre = None
    if row.get("ttft_ms") is not None:
        assert p.ttft_ms_lower_bound, row["id"]
        pre = p.ttft_ms_lower_bound / row["ttft_ms"]  # bound time / measured time = measured rate / bound rate
    elif row.get("prefill_tps") is not None and p.ttft_ms_lower_bound is not None:
        prompt = row.get("prompt_tokens") or UNKNOWN_PROMPT
        pre = row["prefill_tps"] / (prompt / (p.ttft_ms_lower_bound / 1000))
    return dec, pre


def test_the_data_is_sourced_and_spread():
    assert len(ROWS) >= 15
    assert len({r["id"] for r in ROWS}) == len(ROWS)
    for r in ROWS:
        assert r["source"].startswith("https://") and r["quote"].strip(), r["id"]
        for key in ("decode_tps", "prefill_tps", "ttft_ms"):  # every measured number is in its quote
            if r.get(key) is not None:
                v = r[key]
                assert f"{v:g}" in r["quote"].replace(",", "") or f"{v:.2f}" in r["quote"], (r["id"], key)
    assert {r["plan_engine"] for r in ROWS} >= {"pytorch", "tensorrt-llm", "llama.cpp", "vllm"}
    gpus = {r["hardware"]["gpu_model"] for r in ROWS if "hardware" in r}
    assert len(gpus) >= 8 and any("cpu" in r for r in ROWS)


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_no_published_measurement_beats_its_bound(row):
    p = plan_row(row)
    if row.get("decode_tps") is not None:
        assert row["decode_tps"] <= p.decode_tps_upper_bound, (
            f"{row['id']}: measured {row['decode_tps']} tok/s > bound {p.decode_tps_upper_bound}")
    if row.get("ttft_ms") is not None:
        assert row["ttft_ms"] >= p.ttft_ms_lower_bound, (
            f"{row['id']}: measured TTFT {row['ttft_ms']} ms < bound {p.ttft_ms_lower_bound} ms")
    elif row.get("prefill_tps") is not None and p.ttft_ms_lower_bound is not None:
        prompt = row.get("prompt_tokens") or UNKNOWN_PROMPT
        assert row["prefill_tps"] <= prompt / (p.ttft_ms_lower_bound / 1000), (
            f"{row['id']}: measured prefill {row['prefill_tps']} tok/s > bound "
            f"{prompt / (p.ttft_ms_lower_bound / 1000):.0f}")


def test_the_known_traps_are_modelled():
    by_id = {r["id"]: r for r in ROWS}
    # PyTorch on 2 GPUs: the bound adds both GPUs' bandwidth (gpt-fast ran tensor parallel)
    tp2 = plan_row(by_id["gptfast-2xa100-llama2-70b-bf16-tp2"])
    assert tp2.decode_tps_upper_bound == pytest.approx(
        2 * 2039e9 / (68.98e9 * 2 - 32000 * 8192 * 2 + 2 * 80 * 8 * 128 * 2 * 5), rel=1e-3)
    # an MoE file is charged only its active experts: ~1.0 GB per token, not the 10.3 GB file
    moe = plan_row(by_id["llamacpp-pi5-16gb-qwen3-30b-a3b-q3ks"])
    assert 14 < moe.decode_tps_upper_bound < 18
    # GeForce prefill: llama.cpp's F16 GEMMs accumulate in FP16, at twice the FP32-accumulate rate (71 TFLOPS)
    # that a 2 x 7.5e9 x 4444.65 tok/s = 66.7 TFLOPS run nearly reaches
    r3090 = plan_row(by_id["llamacpp-rtx3090-llama3-8b-f16"])
    assert r3090.ttft_ms_lower_bound == pytest.approx(2 * (8.03e9 - 128256 * 4096) * 512 / 142e12 * 1000, rel=1e-3)
    # FP8 on L40S: the bound credits the card's own dense FP8 rate (733 TFLOPS on its sheet), under the published 73 ms
    l40s = plan_row(by_id["trtllm-l40s-llama2-7b-fp8-ttft2048"])
    assert l40s.ttft_ms_lower_bound == pytest.approx(2 * (6.74e9 - 32000 * 4096) * 2048 / 733e12 * 1000, rel=1e-3)
    assert l40s.ttft_ms_lower_bound < 73


def tightness() -> dict[str, tuple[float | None, int, float | None, int]]:
    """Per published engine: (median decode ratio, rows, median prefill ratio, rows)."""
    by: dict[str, tuple[list[float], list[float]]] = {}
    for r in ROWS:
        dec, pre = ratios(r)
        d, p = by.setdefault(r["engine"], ([], []))
        if dec is not None:
            d.append(dec)
        if pre is not None:
            p.append(pre)
    return {e: (statistics.median(d) if d else None, len(d), statistics.median(p) if p else None, len(p))
            for e, (d, p) in by.items()}


def test_tightness_summary(capsys):
    """Prints the median measured / bound per engine (1.0 = the measurement reaches the bound)."""
    table = tightness()
    lines = ["", "published measurements vs the planner's bounds: median measured / bound (rows)",
             f"{'engine':<14}{'decode':>14}{'prefill':>14}"]
    for e, (d, nd, p, np_) in sorted(table.items()):
        lines.append(f"{e:<14}{(f'{d:.2f} ({nd})' if d is not None else '—'):>14}"
                     f"{(f'{p:.2f} ({np_})' if p is not None else '—'):>14}")
    with capsys.disabled():
        print("\n".join(lines))
    for d, _, p, _ in table.values():
        assert d is None or 0 < d <= 1
        assert p is None or 0 < p <= 1

"""One metric definition: percentiles and rates recomputed by hand from raw timestamps."""
import numpy as np
import pytest

from probes.metrics import compute, judge, p95_interval, percentile
from probes.result import RequestRecord


@pytest.mark.parametrize("q", [0, 50, 95, 99, 100])
def test_percentile_matches_numpy_linear(q):
    xs = [5.0, 1.0, 9.0, 3.0, 7.0, 2.0, 8.0]
    assert percentile(xs, q) == pytest.approx(np.percentile(xs, q))


def test_percentile_of_nothing_is_none():
    assert percentile([], 50) is None


def test_compute_by_hand():
    recs = [
        RequestRecord(index=0, prompt_tokens=10, output_tokens=3, submitted_s=0.0, first_token_s=0.1,
                      token_times_s=[0.1, 0.2, 0.4], finished_s=0.4),
        RequestRecord(index=1, prompt_tokens=20, output_tokens=2, submitted_s=0.0, first_token_s=0.5,
                      token_times_s=[0.5, 0.6], finished_s=0.6),
        RequestRecord(index=2, submitted_s=0.0, error="HTTP 500", finished_s=0.05),
    ]
    m = compute(recs, ttft_target_ms=200)
    assert (m["requests_total"], m["requests_ok"], m["errors"]) == (3, 2, 1)
    assert m["ttft_ms"].p50 == pytest.approx(300.0)  # TTFTs 100 and 500 ms
    assert m["itl_ms"].p50 == pytest.approx(100.0)  # gaps 100, 200, 100 ms
    assert m["output_tokens_total"] == 5 and m["prompt_tokens_total"] == 30
    assert m["duration_s"] == pytest.approx(0.6)
    assert m["output_tps_total"] == pytest.approx(5 / 0.6, rel=1e-3)
    assert m["goodput"] == pytest.approx(1 / 3, rel=1e-3)  # only request 0 met 200 ms; the error counts against
    assert m["decode_tps_per_request"].p50 == pytest.approx(np.median([2 / 0.3, 1 / 0.1]), rel=1e-3)


def test_not_measured_is_none_not_zero():
    m = compute([RequestRecord(index=0, submitted_s=0.0, error="x")], ttft_target_ms=None)
    assert m["ttft_ms"].p50 is None and m["output_tokens_total"] is None and "goodput" not in m


def test_incomplete_requests_are_counted_but_not_in_the_figures():
    recs = [
        RequestRecord(index=0, prompt_tokens=10, output_tokens=2, submitted_s=0.0, first_token_s=0.1,
                      token_times_s=[0.1, 0.2], finished_s=0.2),
        RequestRecord(index=1, prompt_tokens=10, output_tokens=3, submitted_s=0.0, first_token_s=0.01,
                      token_times_s=[0.01, 0.02, 0.03], finished_s=0.9, status="incomplete",
                      error="incomplete: the stream closed after 3 of 32 tokens without [DONE] or finish_reason"),
        RequestRecord(index=2, submitted_s=0.0, error="HTTP 500", finished_s=0.05),
    ]
    m = compute(recs, ttft_target_ms=200)
    assert (m["requests_total"], m["requests_ok"], m["requests_incomplete"], m["errors"]) == (3, 1, 1, 1)
    assert m["ttft_ms"].p50 == pytest.approx(100.0) and m["output_tokens_total"] == 2
    assert m["itl_ms"].p50 == pytest.approx(100.0) and m["e2e_ms"].p50 == pytest.approx(200.0)
    assert m["goodput"] == pytest.approx(1 / 3, rel=1e-3)  # the incomplete one counts against
    assert m["duration_s"] == pytest.approx(0.9)  # the wall time still covers every request


def test_a_record_with_an_error_is_never_ok():
    assert RequestRecord(index=0, submitted_s=0.0, error="x").status == "error"
    old = RequestRecord.model_validate_json('{"index": 0, "submitted_s": 0.0, "error": "HTTP 500"}')
    assert old.status == "error"  # a result stored before `status` existed
    assert RequestRecord(index=0, submitted_s=0.0, error="cut", status="incomplete").status == "incomplete"


def test_the_p95_interval_holds_the_p95_and_narrows_with_more_requests():
    import random

    rng = random.Random(3)
    few = [rng.gauss(500, 100) for _ in range(20)]
    many = [rng.gauss(500, 100) for _ in range(400)]
    lo, hi = p95_interval(few)
    assert lo <= percentile(few, 95) <= hi
    lo2, hi2 = p95_interval(many)
    assert (hi2 - lo2) < (hi - lo)
    assert p95_interval(few) == p95_interval(few)  # seeded: a stored result is reproducible
    assert p95_interval([1.0]) is None


def _rec(i, ok=True, err=None):
    if ok:
        return RequestRecord(index=i, output_tokens=2, submitted_s=0.0, first_token_s=0.1, token_times_s=[0.1, 0.2],
                             finished_s=0.2)
    return RequestRecord(index=i, submitted_s=0.0, error=err or f"HTTP 500 after {i} ms", finished_s=0.1)


@pytest.mark.parametrize("n_bad,total,status", [(0, 10, "ok"), (1, 10, "ok"), (2, 10, "partial"), (7, 8, "partial"),
                                                (8, 8, "error")])
def test_a_run_is_ok_only_when_at_most_a_tenth_of_it_failed(n_bad, total, status):
    recs = [_rec(i, ok=i >= n_bad) for i in range(total)]
    got, reason = judge(compute(recs, 1000), recs)
    assert got == status
    if status != "ok":
        assert reason.startswith(f"not measured: {n_bad} of {total} requests") and "HTTP 500 after 0 ms" in reason
    else:
        assert reason is None


def test_the_most_frequent_cause_counts_like_failures_as_one():
    recs = [_rec(0, False, "refused"), _rec(1, False, "HTTP 500 after 3 of 32 tokens"),
            _rec(2, False, "HTTP 500 after 7 of 32 tokens"), _rec(3)]
    m = compute(recs, 1000)
    assert m["top_cause"] == "HTTP 500 after 3 of 32 tokens"

"""One definition of every metric, applied to every backend (in-process and HTTP alike).

Every request ends as ok, incomplete (some tokens arrived, then the stream ended early or was cut at
a deadline) or error (see `RequestRecord.status`). The figures below come from ok requests only: an
incomplete request's tokens are kept in its record but would make TTFT, E2E and decode rates look
better or worse than they are. `requests_total` counts all three; `requests_incomplete` and `errors`
count the other two.

- TTFT: request submitted → first output token received. Includes queueing and prefill; when a
  backend serves one request at a time, queueing behind the others is part of it (the result's
  `serving` says so).
- ITL: the gaps between consecutive output tokens of a request (the first token is excluded);
  percentiles are over all gaps of all measured requests pooled.
- decode tokens/s per request: (n − 1) / (t_last − t_first), for requests with n ≥ 2 tokens.
- E2E: submitted → last token.
- total output tokens/s: all output tokens / (last finish − first submit) of the measured phase.
- requests/s: ok requests / the same wall time.
- goodput: share of all measured requests (ok, incomplete and error alike) that finished ok and whose
  TTFT ≤ target.
Percentiles use linear interpolation between closest ranks (numpy's default "linear" method).
- TTFT p95 interval: a 95 % percentile-bootstrap interval (2,000 resamples, seeded, so a result is
  reproducible) of the p95 over the ok requests. With 20 requests the p95 is close to the slowest one, so the
  interval says how far the figure could move on a rerun; a target inside it is "inconclusive", not a miss.
- A run's status (`judge`): ok when at most FAIL_SHARE (10 %) of its requests failed or ended early; partial
  when more did but some finished (its figures speak for the survivors only, and it decides nothing); error
  when none finished. Its reason then says "N of M requests failed: the most frequent cause".

Against GuideLLM (0.8.1, checked in its source; `bench/guidellm_compare.py` runs both on one server):
- TTFT: the same span up to where it starts: GuideLLM's `request_start` is the first write of the request's
  headers, ours the moment the request goes to the HTTP client (connection set-up included; nil on a kept-alive
  loopback connection), both → the first streamed chunk with text.
- ITL: GuideLLM takes one value per request, (t_last − t_first) / (n − 1), and its percentiles are over those
  per-request means (weighted by n − 1); ours pool every gap. Under jitter the pooled median sits below the
  mean gap. Our figure closest to GuideLLM's ITL median is 1000 / decode tokens/s per request p50.
- TPOT (GuideLLM only): (t_last − request start) / n, so it includes TTFT; it is not our ITL.
- output tokens/s: GuideLLM's "mean" of `output_tokens_per_second` is a time-weighted rate over its first
  request start → last request end, i.e. our total output tokens/s; its "median" is a median of local rates
  and has no counterpart here.
- tokens: both count streamed chunks with text when the server reports no usage; GuideLLM uses the usage
  count when there is one.
- percentiles: GuideLLM's are the lower nearest rank (no interpolation): with an even count its median is the
  lower of the two middle values, ours their mean.
"""
from __future__ import annotations

import math
import random
from collections import Counter
from typing import Iterable, Sequence

from probes.result import Percentiles, RequestRecord


def percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summary(values: Iterable[float]) -> Percentiles:
    xs = list(values)
    if not xs:
        return Percentiles()
    r = lambda v: None if v is None else round(v, 3)  # noqa: E731
    return Percentiles(p50=r(percentile(xs, 50)), p95=r(percentile(xs, 95)), p99=r(percentile(xs, 99)),
                       mean=r(sum(xs) / len(xs)))


FAIL_SHARE = 0.10
BOOTSTRAP_RESAMPLES = 2000


def p95_interval(values: Sequence[float], seed: int = 0, resamples: int = BOOTSTRAP_RESAMPLES
                 ) -> list[float] | None:
    """95 % percentile-bootstrap interval of the p95; None below 2 values (no spread to resample)."""
    xs = list(values)
    if len(xs) < 2:
        return None
    rng = random.Random(seed)
    n = len(xs)
    stats = sorted(percentile([xs[rng.randrange(n)] for _ in range(n)], 95) for _ in range(resamples))
    return [round(percentile(stats, 2.5), 3), round(percentile(stats, 97.5), 3)]


def _cause(text: str) -> str:
    """A cause without its request-specific numbers ("after 3 of 32 tokens"), so like failures count as one."""
    import re

    return re.sub(r"\d+", "N", text.strip())[:300]


def top_cause(records: list[RequestRecord]) -> str | None:
    """The most frequent cause among failed and incomplete requests (the first such request's own words)."""
    bad = [r.error for r in records if r.status != "ok" and r.error]
    if not bad:
        return None
    counts = Counter(_cause(e) for e in bad)
    best = counts.most_common(1)[0][0]
    return next(e for e in bad if _cause(e) == best)[:300]


def judge(figures: dict, records: list[RequestRecord]) -> tuple[str, str | None]:
    """(status, reason) of a finished run from its accounting: ok, partial or error (see the module docstring)."""
    total = figures.get("requests_total", 0)
    ok = figures.get("requests_ok", 0)
    if not total:
        return "error", "no requests ran"
    bad = total - ok
    cause = top_cause(records) or "no request finished"
    if not ok:
        return "error", f"not measured: {bad} of {total} requests failed: {cause}"
    if bad / total > FAIL_SHARE:
        return "partial", f"not measured: {bad} of {total} requests failed or ended early: {cause}"
    return "ok", None


def compute(records: list[RequestRecord], ttft_target_ms: float | None) -> dict:
    ok = [r for r in records if r.status == "ok" and r.first_token_s is not None]
    incomplete = sum(1 for r in records if r.status == "incomplete")
    ttft = [(r.first_token_s - r.submitted_s) * 1000 for r in ok]
    itl = [(b - a) * 1000 for r in ok for a, b in zip(r.token_times_s, r.token_times_s[1:])]
    e2e = [((r.finished_s or r.token_times_s[-1]) - r.submitted_s) * 1000 for r in ok]
    decode = [(len(r.token_times_s) - 1) / (r.token_times_s[-1] - r.token_times_s[0])
              for r in ok if len(r.token_times_s) >= 2 and r.token_times_s[-1] > r.token_times_s[0]]
    out: dict = {
        "requests_total": len(records),
        "requests_ok": len(ok),
        "requests_incomplete": incomplete,
        "errors": len(records) - len(ok) - incomplete,
        "ttft_ms": summary(ttft),
        "ttft_p95_ci_ms": p95_interval(ttft),
        "top_cause": top_cause(records),
        "itl_ms": summary(itl),
        "e2e_ms": summary(e2e),
        "decode_tps_per_request": summary(decode),
        "output_tokens_total": sum(r.output_tokens for r in ok) if ok else None,
        "prompt_tokens_total": (sum(r.prompt_tokens for r in ok)
                                if ok and all(r.prompt_tokens is not None for r in ok) else None),
    }
    if records:
        start = min(r.submitted_s for r in records)
        ends = [r.finished_s or (r.token_times_s[-1] if r.token_times_s else None) for r in records]
        ends = [e for e in ends if e is not None]
        if ends and max(ends) > start:
            wall = max(ends) - start
            out["duration_s"] = round(wall, 4)
            out["output_tps_total"] = round(out["output_tokens_total"] / wall, 3) if ok else None
            out["requests_per_s"] = round(len(ok) / wall, 4)
    if ttft_target_ms is not None and records:
        good = sum(1 for r, t in zip(ok, ttft) if t <= ttft_target_ms)
        out["goodput"] = round(good / len(records), 4)
    return out

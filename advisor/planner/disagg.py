"""Prefill/decode disaggregation, planned: the answers' users served by one pool of aggregated replicas (every
replica prefills and decodes, so prompts stall the decodes beside them) against two pools (prefill workers that only
prefill, decode workers that only decode, the KV cache of each prompt sent from one to the other). Pure: our serving
model's terms (advisor.planner.serving) on the plan's own replica, no I/O.

  decode worker    ITL = one decode step at its batch b, with no prefill in it: the largest b (within its KV pool and
                   the engine's cap) whose step stays within the ITL target; workers = users decoding / b
  prefill worker   prompts batched within the engine's token budget, one at a time in the queue (M/D/1); TTFT p95 =
                   the prompt's prefill at +1.645 sd + the queue's p95 wait + the KV transfer + the request's fixed cost
  KV transfer      the prompt's KV bytes over the link between the two workers: NVLink when both pools fit in one node,
                   else the node link (knowledge/serving.yaml node_link_gb_s)
  aggregated       the fewest replicas whose users each meet both targets at the plan's own figures (the same model)

Recommended only where the split meets both targets with fewer GPUs than the aggregated fleet at the prediction's
centre and again at the band's slow end (every efficiency scaled down by the band: a rough band makes this a strict
test, never a waived one)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.planner.serving import (SATURATION, TAIL95, Z95, Eff, Hw, Load, decode_step_s, mdl_wait_s,
                                     prefill_batched_s, prefill_s, predict)

MAX_WORKERS = 4096  # a bound on each search (users are at most 100,000)


@dataclass(frozen=True)
class Split:
    prefill_workers: int
    decode_workers: int
    ttft_ms_p95: float
    itl_ms: float
    kv_transfer_ms: float
    decode_batch: int
    output_tps: float


def decode_batch_within(hw: Hw, eff: Eff, held_tokens: float, itl_target_s: float, cap: int | None) -> int:
    """The largest batch whose pure decode step stays within the ITL target (0: not even one sequence)."""
    top = min(cap or MAX_WORKERS * 64, 1 << 20)
    if decode_step_s(1, hw, eff, held_tokens) > itl_target_s:
        return 0
    lo, hi = 1, top
    while lo < hi:  # the step grows with the batch: bisect for the last batch within the target
        mid = (lo + hi + 1) // 2
        if decode_step_s(mid, hw, eff, held_tokens) <= itl_target_s:
            lo = mid
        else:
            hi = mid - 1
    return lo


def split(hw: Hw, eff: Eff, users: int, input_tokens: int, output_tokens: int, input_sd: float,
          ttft_target_s: float, itl_target_s: float, kv_bytes_per_token: float, link_bytes_s: float) -> Split | None:
    """The fewest prefill + decode workers (each the plan's replica) that meet both targets for `users`; None where
    no number of them does (a decode step alone beyond the ITL target, a prompt alone beyond the TTFT target)."""
    o = max(1, output_tokens)
    held = input_tokens + o / 2
    b = decode_batch_within(hw, eff, held, itl_target_s, hw.max_running)
    if b < 1:
        return None
    decode = math.ceil(users / b)
    if decode > MAX_WORKERS:
        return None
    running = min(b, math.ceil(users / decode))
    itl = decode_step_s(running, hw, eff, held)
    kv_s = input_tokens * kv_bytes_per_token / link_bytes_s if link_bytes_s > 0 else 0.0
    service = prefill_batched_s(input_tokens, hw, eff)  # one prompt's share of a prefill worker's time
    alone95 = prefill_s(input_tokens + Z95 * input_sd, hw, eff)
    req = eff.request_ms / 1000
    for prefill in range(1, MAX_WORKERS + 1):
        # a closed loop: each user sends its next prompt when its last answer ends
        cycle = alone95 + kv_s + req + (o - 1) * itl
        rate = users / cycle
        share = rate * service / prefill
        if share >= SATURATION:
            continue
        ttft95 = alone95 + TAIL95 * mdl_wait_s(share, service) + kv_s + req
        if ttft95 <= ttft_target_s:
            return Split(prefill, decode, ttft95 * 1000, itl * 1000, kv_s * 1000, running, users * o / cycle)
    return None


def aggregated_replicas(mode: str, hw: Hw, eff: Eff, users: int, input_tokens: int, output_tokens: int,
                        input_sd: float, ttft_target_ms: float, itl_target_ms: float) -> tuple[int, object] | None:
    """The fewest aggregated replicas whose share of the users meets both targets (p95 TTFT and p95 ITL), and the
    point each replica serves; None where one user alone misses a target."""
    def ok(u: int):
        pt = predict(mode, hw, eff, Load(input_tokens, output_tokens, input_sd, concurrency=u))
        good = (pt.ttft_ms_p95 is not None and pt.ttft_ms_p95 <= ttft_target_ms and pt.itl_ms_p95 is not None
                and pt.itl_ms_p95 <= itl_target_ms)
        return good, pt

    good, _ = ok(1)
    if not good:
        return None
    lo, hi = 1, users
    while lo < hi:  # the most users one replica holds within both targets
        mid = (lo + hi + 1) // 2
        if ok(mid)[0]:
            lo = mid
        else:
            hi = mid - 1
    replicas = math.ceil(users / lo)
    return replicas, ok(math.ceil(users / replicas))[1]

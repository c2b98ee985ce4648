"""What an hour of the target costs, and what a million output tokens cost at the planned (or measured) rate.

Pure. Prices come from knowledge/prices.yaml (on-demand, sourced and dated) unless the answers give their own.
A cost from the plan divides by the decode-total *upper bound*, so it is a lower bound on cost ("at least");
a cost from a sweep divides by the measured output tokens/s at the SLA capacity.
"""
from __future__ import annotations

from advisor.knowledge import Knowledge
from advisor.planner.types import EnginePlan, Target


def hourly_usd(plan: EnginePlan, target: Target, knowledge: Knowledge, cpu_cores: int | None = None,
               gpu_override: float | None = None, cpu_override: float | None = None) -> tuple[float | None, str]:
    """(US$ per hour of what the plan uses, where the price comes from); (None, why) when it cannot be priced."""
    if plan.device in ("gpu", "gpu+cpu"):
        n = max(1, plan.gpus_used)
        if gpu_override is not None:
            return gpu_override * n, f"your price: {n} × ${gpu_override:g}/h"
        price = knowledge.prices.gpus.get(target.gpu_id or "")
        if price is None or price.usd_per_hour is None:
            return None, f"no on-demand price for {target.gpu_name or 'this GPU'}"
        return price.usd_per_hour * n, f"{n} × ${price.usd_per_hour:g}/h ({price.what}; read {price.read})"
    if plan.device == "cpu":
        if not cpu_cores:
            return None, "CPU cores unknown"
        rate = cpu_override if cpu_override is not None else knowledge.prices.cpu_core_hour.usd_per_hour
        if rate is None:
            return None, "no CPU price"
        what = "your price" if cpu_override is not None else knowledge.prices.cpu_core_hour.what
        return rate * cpu_cores, f"{cpu_cores} cores × ${rate:g}/h ({what})"
    return None, "the engine cannot run on this target"


def usd_per_million_tokens(usd_per_hour: float | None, output_tps: float | None) -> float | None:
    """$ per 10^6 output tokens at `output_tps` tokens/s (all concurrent requests together)."""
    if usd_per_hour is None or not output_tps or output_tps <= 0:
        return None
    return usd_per_hour / (output_tps * 3600) * 1e6

"""What an hour of the target costs, and what a million output tokens cost at the planned (or measured) rate.

Pure. Prices come from knowledge/prices.yaml (on-demand, sourced and dated) unless the answers give their own.
A cost from the plan divides by the decode-total *upper bound*, so it is a lower bound on cost ("at least");
a cost from a sweep divides by the measured output tokens/s at the SLA capacity.
"""
from __future__ import annotations

from advisor.knowledge.load import Knowledge
from advisor.planner.types import EnginePlan, Target


def gpu_hour(gpu_id: str | None, knowledge: Knowledge, override: float | None = None) -> tuple[float | None, str]:
    """(US$ per GPU-hour, where it comes from): the user's price, else prices.yaml's for that gpus.yaml id."""
    if override is not None:
        return override, f"your price ${override:g}/h"
    price = knowledge.prices.gpus.get(gpu_id or "")
    if price is None or price.usd_per_hour is None:
        return None, "no on-demand price for this GPU"
    return price.usd_per_hour, f"${price.usd_per_hour:g}/h ({price.what}; read {price.read})"


def core_hour(knowledge: Knowledge, override: float | None = None) -> tuple[float | None, str]:
    if override is not None:
        return override, "your price"
    p = knowledge.prices.cpu_core_hour
    return p.usd_per_hour, p.what or ""


def hourly_usd(plan: EnginePlan, target: Target, knowledge: Knowledge, cpu_cores: int | None = None,
               gpu_override: float | None = None, cpu_override: float | None = None) -> tuple[float | None, str]:
    """(US$ per hour of what the plan uses, where the price comes from); (None, why) when it cannot be priced."""
    if plan.device in ("gpu", "gpu+cpu"):
        n = max(1, plan.gpus_used)
        rate, what = gpu_hour(target.gpu_id, knowledge, gpu_override)
        if rate is None:
            return None, f"no on-demand price for {target.gpu_name or 'this GPU'}"
        return rate * n, (f"your price: {n} × ${rate:g}/h" if gpu_override is not None else f"{n} × {what}")
    if plan.device == "cpu":
        if not cpu_cores:
            return None, "CPU cores unknown"
        rate, what = core_hour(knowledge, cpu_override)
        if rate is None:
            return None, "no CPU price"
        return rate * cpu_cores, f"{cpu_cores} cores × ${rate:g}/h ({what})"
    return None, "the engine cannot run on this target"


def usd_per_million_tokens(usd_per_hour: float | None, output_tps: float | None) -> float | None:
    """$ per 10^6 output tokens at `output_tps` tokens/s (all concurrent requests together)."""
    if usd_per_hour is None or not output_tps or output_tps <= 0:
        return None
    return usd_per_hour / (output_tps * 3600) * 1e6

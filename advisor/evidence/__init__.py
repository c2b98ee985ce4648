"""What was measured and what it means: the history of probe runs and sweeps (`history`), a probe checked
against the planner's bounds on the hardware it ran on (`check_probe`), sweeps read against the target
concurrency (`check_capacity`), and whether the measurements change the advice (`revisit`).

May import: advisor.decide, advisor.planner, advisor.inputs, advisor.knowledge, and the probes' result types.
"""
from advisor.evidence import history
from advisor.evidence.capacity_check import CapacityVerdict, check_capacity
from advisor.evidence.probe_check import ProbeCheck, check_probe, hold_collapsed
from advisor.evidence.verdict import TargetDevice, Verdict, measured_on, not_measured, revisit, target_device

__all__ = ["CapacityVerdict", "ProbeCheck", "TargetDevice", "Verdict", "check_capacity", "check_probe", "history", "hold_collapsed",
           "measured_on", "not_measured", "revisit", "target_device"]

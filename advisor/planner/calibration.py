"""This machine's recalibrated serving efficiencies, kept in the user data dir beside the probe history (one small
JSON, at most one entry per engine): a measurement the user made, not an artefact to rebuild, and a test suite that
points $INFERENCE_ADVISOR_DATA elsewhere leaves it alone. Read and written only at the edges (CLI, pages); the planner
takes the dict as an argument.

A sweep measured here (advisor.evidence.sweep_check.recalibrate) replaces its engine's entry; an entry for another
CPU is ignored (perf.serving_plan checks the CPU model), a file that does not validate is treated as missing.
"""
from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from advisor.knowledge.schema import ENGINE_IDS
from advisor.planner.types import Calibrated

MAX_FILE_BYTES = 64 * 1024


def file_path() -> Path:
    from probes.cache import data_dir

    return data_dir()[0] / "serving_calibration.json"


def load() -> dict[str, Calibrated]:
    from probes.cache import CacheDirError, read_cache_file

    try:
        raw = read_cache_file(file_path(), MAX_FILE_BYTES)
    except (CacheDirError, OSError):
        return {}
    if raw is None:
        return {}
    try:
        data = json.loads(raw)
        if not isinstance(data, dict):
            return {}
        out = {}
        for engine, entry in list(data.items())[:len(ENGINE_IDS)]:
            if engine in ENGINE_IDS:
                cal = Calibrated.model_validate(entry)
                if cal.engine == engine:
                    out[engine] = cal
        return out
    except (ValidationError, ValueError, RecursionError):
        return {}


def save(cal: Calibrated) -> None:
    """Keep `cal` as its engine's entry (the others stay). An unwritable cache costs the recalibration, silently."""
    from probes.cache import write_cache_file

    data = {e: c.model_dump(mode="json") for e, c in load().items()}
    data[cal.engine] = cal.model_dump(mode="json")
    path = file_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_cache_file(path, json.dumps(data, indent=2).encode("utf-8"))
    except OSError:
        pass

"""The typed outcome of a concurrency sweep (probes.sweep runs it): the probes' public sweep type, free of any
engine or runner import, so that advisor may read it."""
from __future__ import annotations

import hashlib
import hmac
import os
from typing import Any

from pydantic import BaseModel, Field, field_validator

from probes.redact import redact_text
from probes.result import Percentiles, ProbeResult


class DeployedRun(BaseModel):
    """The server a served sweep started from a deployment bundle, as it ran here: the exact command, how long it took
    to answer its health endpoint, and whether it was stopped cleanly (no process left)."""

    engine: str = Field(max_length=40)
    command: list[str] = Field(default_factory=list, max_length=200)  # the argv that ran here (no shell)
    command_line: str = Field(default="", max_length=8000)  # the same, shell-quoted, with its environment
    bundle_command: str = Field(default="", max_length=8000)  # the bundle's command as printed for the target
    substituted: list[str] = Field(default_factory=list, max_length=20)  # what differs from the bundle, and why
    ready_s: float | None = None  # seconds from start until /health answered 200
    stopped: bool | None = None  # True: the server and every process it started ended when the sweep did
    exit_code: int | None = None
    log_tail: str | None = Field(default=None, max_length=2000)
    model: str | None = Field(default=None, max_length=4096)  # the model file or folder it served here


class SweepLevel(BaseModel):
    concurrency: int
    status: str
    requests_total: int = 0
    requests_ok: int = 0
    errors: int = 0
    requests_incomplete: int = 0
    ttft_ms: Percentiles = Field(default_factory=Percentiles)
    ttft_p95_ci_ms: list[float] | None = None  # 95 % bootstrap interval of the p95
    itl_ms: Percentiles = Field(default_factory=Percentiles)
    output_tps_total: float | None = None
    requests_per_s: float | None = None
    goodput: float | None = None
    reason: str | None = None
    busy: bool = False  # other processes loaded the CPU during this level (SystemLoad.busy)
    other_cpu_percent: float | None = None
    #: against the sweep's target: meets | misses | inconclusive (the target lies inside the p95's interval)
    #: | failed (the level is not measured: partial or error)
    outcome: str | None = None

    @field_validator("reason", mode="after")
    @classmethod
    def _no_secret_kept(cls, v: str | None) -> str | None:
        return redact_text(v) if v else v

    @classmethod
    def of(cls, c: int, r: ProbeResult) -> "SweepLevel":
        return cls(concurrency=c, status=r.status, requests_total=r.requests_total, requests_ok=r.requests_ok,
                   errors=r.errors, requests_incomplete=r.requests_incomplete, ttft_ms=r.ttft_ms,
                   ttft_p95_ci_ms=r.ttft_p95_ci_ms, itl_ms=r.itl_ms, output_tps_total=r.output_tps_total,
                   requests_per_s=r.requests_per_s, goodput=r.goodput, reason=r.reason, busy=r.system_load.busy,
                   other_cpu_percent=r.system_load.other_processes_cpu_percent)


def level_outcome(level: SweepLevel, target_ms: float | None, goodput_share: float) -> str:
    """meets | misses | inconclusive | failed. A level meets when its goodput reaches the share and its TTFT p95 is
    within the target with its whole interval; a target inside the interval is inconclusive, not a miss."""
    if level.status != "ok":
        return "failed"
    good = level.goodput if level.goodput is not None else 0.0
    p95 = level.ttft_ms.p95
    if target_ms is None or p95 is None:
        return "meets" if good >= goodput_share else "misses"
    lo, hi = (level.ttft_p95_ci_ms or [p95, p95])[:2]
    if lo <= target_ms < hi:
        return "inconclusive"
    if p95 <= target_ms and good >= goodput_share:
        return "meets"
    if p95 > target_ms:
        return "misses"
    # p95 clearly within the target but goodput short: failed or slow requests beyond the p95 decide it
    return "misses"


class SweepResult(BaseModel):
    engine: str
    status: str  # ok | error | unavailable | cancelled
    reason: str | None = None
    device: str | None = None
    model: str | None = None
    ttft_target_ms: float | None = None
    goodput_share: float = 0.9
    levels: list[SweepLevel] = Field(default_factory=list)
    capacity: int | None = None  # the highest concurrency that met the SLA (goodput ≥ share); None: not even 1
    inconclusive_at: int | None = None  # the lowest level whose p95 interval straddles the target
    busy: bool = False  # some level ran on a busy machine: shown, but it cannot change the advice
    answers_id: str | None = None  # the answers the sweep was made for (ProbeSettings.answers_id)
    asked_concurrency: int | None = None
    stop_reason: str | None = None  # in English (the CLI's words); `stop` holds the same for translation
    stop: dict | None = None  # {"key": ttft|goodput|plan_max|failed|cancelled|all, "c": level, ...figures}
    plan_max_concurrency: int | None = None  # the planner's memory-bound figure, for comparison
    plan_decode_total_bound: float | None = None
    serving: str | None = None
    started_at: str | None = None
    duration_s: float | None = None
    #: what the first measured level ran, kept with the summary (the history and the report drop `results`), so a
    #: prediction can be made for the same thing: its settings (token counts, model) and the engine's settings
    first_settings: dict[str, Any] | None = None
    first_backend_settings: dict[str, Any] | None = None
    first_tokens: list[int] | None = None  # [mean prompt tokens, mean output tokens] it measured
    first_server_kind: str | None = None
    #: a sweep of a server started from a deployment bundle (python -m probes serve): the exact command that ran
    deployed: DeployedRun | None = None
    results: list[ProbeResult] = Field(default_factory=list)  # every level's full result (raw timestamps)
    run_ids: list[int | None] = Field(default_factory=list)  # where the UI saved each level's result (history)
    #: made and signed here (made_here): an HMAC of what it measured, with this installation's key
    signature: str | None = Field(default=None, max_length=128)

    @field_validator("levels", "results", "run_ids", mode="before")
    @classmethod
    def _bounded(cls, v: Any, info) -> Any:
        """A sweep has at most MAX_LEVELS levels (the CLI's concurrency goes up to 1,024, one level each), one result
        and one run id per level: a file claiming more is refused before any of it is built (a 63 MB sweep file
        drove the PDF past 3 GB)."""
        if isinstance(v, list) and len(v) > MAX_LEVELS:
            raise ValueError(f"a sweep holds at most {MAX_LEVELS:,} levels, this one has {len(v):,} {info.field_name}")
        return v

    @field_validator("first_settings", "first_backend_settings", mode="before")
    @classmethod
    def _small(cls, v: Any) -> Any:
        """Settings are a few dozen keys: a bigger or deeper blob is dropped, not kept."""
        if v is None:
            return None
        if not isinstance(v, dict) or len(v) > 100 or len(repr(v)) > 20_000:
            return None
        return v

    @field_validator("reason", "device", "model", "stop_reason", "serving", mode="after")
    @classmethod
    def _no_secret_kept(cls, v: str | None) -> str | None:
        """A sweep read from anywhere shows no URL credentials (probes/redact.py), as a ProbeResult does."""
        return redact_text(v) if v else v


#: the most levels a sweep may hold (probes.cli refuses concurrency levels above 1,024)
MAX_LEVELS = 1_024


# ---------------------------------------------------------------- made here: only this installation's sweeps recalibrate

KEY_FILE = "machine.key"
SIGNED = {"engine", "status", "device", "model", "ttft_target_ms", "levels", "results", "started_at",
          "first_settings", "first_backend_settings", "first_tokens", "busy", "deployed", "serving"}


def _machine_key(create: bool) -> bytes | None:
    """A random key kept in the user data dir (0600), made on first use: it signs the sweeps measured here, so that
    a sweep file from elsewhere (a colleague's, or one edited after its run) cannot pass for one."""
    from probes.cache import data_dir, read_cache_file

    path = data_dir()[0] / KEY_FILE
    raw = None if path.is_symlink() else read_cache_file(path, 32)  # a FIFO or a device there is no key
    if raw is not None and len(raw) == 32:
        return raw
    if not create:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        key = os.urandom(32)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key)
        return key
    except FileExistsError:
        return _machine_key(False)
    except OSError:
        return None


def _digest(sweep: SweepResult, key: bytes) -> str:
    return hmac.new(key, sweep.model_dump_json(include=SIGNED).encode(), hashlib.sha256).hexdigest()


def sign(sweep: SweepResult) -> SweepResult:
    """The sweep with this installation's signature over what it measured (unchanged where no key can be kept)."""
    key = _machine_key(True)
    return sweep if key is None else sweep.model_copy(update={"signature": _digest(sweep, key)})


def made_here(sweep: SweepResult) -> bool:
    """Whether this installation measured the sweep as it now reads: its signature checks with this machine's key."""
    key = _machine_key(False)
    return bool(key and sweep.signature and hmac.compare_digest(sweep.signature, _digest(sweep, key)))

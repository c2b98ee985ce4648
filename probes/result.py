"""ProbeResult: the typed, JSON-serialisable outcome of one probe run (the probes' public type).

"Not measured" is None, never 0. Every figure can be recomputed from `requests` (raw timestamps).
"""
from __future__ import annotations

import json
import re
from typing import Any, Literal, get_args

from pydantic import BaseModel, Field, PrivateAttr, field_validator, model_validator

from probes.redact import redact_data, redact_text, redact_url, secrets_of

#: ok: measured, at most FAIL_SHARE of its requests failed or ended early; partial: more did, so its figures speak
#: for the requests that finished only and it decides nothing; error: none finished (or it could not run)
Status = Literal["ok", "partial", "unavailable", "error", "cancelled"]
#: ok: finished normally; incomplete: some tokens arrived, then the stream ended early or was cut at a deadline
#: (its tokens are kept, `error` says why); error: failed, `error` says why
RequestStatus = Literal["ok", "incomplete", "error"]
#: the OpenAI-compatible servers an endpoint run can recognise from their own answers (probes/backends/endpoint.py
#: says what identifies each, with its source); None: not recognised
ServerKind = Literal["vllm", "sglang", "llama-server", "trtllm-serve", "ollama", "tgi", "lmdeploy", "ovms"]
SERVER_KINDS: tuple[str, ...] = get_args(ServerKind)
#: how each recognised server is named in texts (probes/backends/endpoint.py says what identifies each one)
SERVER_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "llama-server": "llama.cpp", "trtllm-serve": "TensorRT-LLM",
                "ollama": "Ollama", "tgi": "TGI", "lmdeploy": "LMDeploy", "ovms": "OpenVINO Model Server"}
MAX_VERSION_CHARS = 40
_VERSION = re.compile(r"\s*([0-9A-Za-z][0-9A-Za-z.+_-]{0,79})")


def clean_version(value: Any) -> str | None:
    """A server's version string as it may reach a report: its leading run of [0-9A-Za-z.+_~-] (no markup, no
    control characters), at most MAX_VERSION_CHARS, holding a digit; None otherwise. A server is not trusted."""
    if not isinstance(value, str):
        return None
    m = _VERSION.match(value[:200])
    v = m.group(1)[:MAX_VERSION_CHARS].rstrip(".+_~-") if m else ""
    return v if any(c.isdigit() for c in v) else None


class RequestRecord(BaseModel):
    """One measured request. Times are seconds on the probe's monotonic clock (time.perf_counter)."""

    index: int
    prompt_tokens: int | None = None
    output_tokens: int = 0
    submitted_s: float
    first_token_s: float | None = None
    token_times_s: list[float] = Field(default_factory=list)  # arrival of every output token
    finished_s: float | None = None
    error: str | None = None  # the cause, for an incomplete or failed request
    status: RequestStatus = "ok"

    @model_validator(mode="after")
    def _error_is_not_ok(self) -> "RequestRecord":
        # backends that only set `error` (and results stored before `status` existed) stay correct
        if self.error is not None and self.status == "ok":
            self.status = "error"
        if self.error:
            self.error = redact_text(self.error)  # a server may echo the URL it was sent
        return self


class Percentiles(BaseModel):
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    mean: float | None = None


class SystemLoad(BaseModel):
    loadavg_1m_before: float | None = None
    loadavg_1m_after: float | None = None
    cpu_count: int | None = None
    other_processes_cpu_percent: float | None = None  # CPU used by processes outside the probe, during the run
    busy: bool = False
    note: str | None = None
    # the run's own decode throughput as a share of this machine's memory-bandwidth roofline, where that share says
    # the run collapsed (advisor.evidence.probe_check.hold_collapsed): busy for a reason the counters missed
    collapsed_roofline_pct: float | None = None


class ProbeSettings(BaseModel):
    engine: str
    model: str | None = None  # path; None = the bundled default
    endpoint: str | None = None
    requests: int = 8
    concurrency: int = 1
    max_tokens: int = 32
    prompt_mix: Literal["short", "long", "mixed"] = "mixed"
    ttft_target_ms: float | None = 1000.0
    warmup: int = 1
    timeout_s: float = 600.0
    seed: int = 1234
    threads: int | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    # the user's workload in tokens (probes/workload.py); all None = the legacy `prompt_mix` and `max_tokens`
    input_tokens: int | None = None  # each prompt's length after the engine's chat template, in its tokens (±1)
    input_tokens_sd: int | None = None  # a spread: normal(input_tokens, sd) seeded by `seed`, clipped
    output_tokens: int | None = None  # the exact output length per request; wins over max_tokens
    prompts_file: str | None = None  # JSONL of {"prompt": ..., "max_tokens": ...}, taken in order (cycled)
    preset: str | None = None  # a named workload (workload.PRESETS); fills the token fields left None
    # the question this run was made for: a fingerprint of the answers (advisor.inputs.answers_id) and their
    # concurrency (Q1); the TTFT target is ttft_target_ms above. None: run from the CLI without answers
    answers_id: str | None = None
    asked_concurrency: int | None = None
    # credentials (probes/redact.py): never serialised. `endpoint` above is the URL as it may be shown (userinfo and
    # credential parameters as ***); the real one and a bearer key are kept here for the request only
    _endpoint_url: str | None = PrivateAttr(default=None)
    _api_key: str | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any) -> None:
        shown = redact_url(self.endpoint)
        if shown != self.endpoint:
            self._endpoint_url, self.endpoint = self.endpoint, shown

    def with_credentials(self, api_key: str | None = None, endpoint_url: str | None = None) -> "ProbeSettings":
        """This object with a bearer key and/or the endpoint's real URL (used only if it redacts to `endpoint`)."""
        if api_key:
            self._api_key = api_key
        if endpoint_url and redact_url(endpoint_url) == self.endpoint:
            self._endpoint_url = endpoint_url
        return self

    @property
    def endpoint_url(self) -> str | None:
        """The URL to send requests to: with its credentials, when it had any."""
        return self._endpoint_url or self.endpoint

    @property
    def api_key(self) -> str | None:
        return self._api_key

    def secrets(self) -> list[str]:
        """What must never appear in output: the key and the URL's secret pieces."""
        return secrets_of(self._endpoint_url, self._api_key)

    @model_validator(mode="after")
    def _preset_fills_the_rest(self) -> "ProbeSettings":
        from probes.workload import PRESETS

        p = PRESETS.get(self.preset or "")
        if p and self.prompts_file is None:
            if self.input_tokens is None:
                self.input_tokens = p["input_tokens"]
                if self.input_tokens_sd is None:
                    self.input_tokens_sd = p["input_tokens_sd"]
            if self.output_tokens is None:
                self.output_tokens = p["output_tokens"]
        return self


class ProbeResult(BaseModel):
    engine: str
    engine_version: str | None = None
    status: Status
    reason: str | None = None
    install_hint: str | None = None
    model: str | None = None
    model_format: str | None = None
    device: str | None = None
    backend_settings: dict[str, Any] = Field(default_factory=dict)
    serving: str | None = None  # how concurrent requests were really served
    #: the serving mode in one word: in-process (one at a time), in-process-batching (the engine's own
    #: scheduler in this process), llama-server (parallel slots), sglang-server (SGLang's own server, started by the probe),
    #: endpoint (a server we did not start)
    serving_mode: str | None = None
    #: the server an endpoint run measured, recognised from what it answers (see ServerKind), and the version it
    #: reports; None: not recognised, not said, or not an endpoint run. Read only as the server's own claim
    server_kind: ServerKind | None = None
    server_version: str | None = None
    settings: ProbeSettings | None = None
    load_time_s: float | None = None
    prepare_time_s: float | None = None  # one-off conversion/export before loading (cached afterwards)
    requests_total: int = 0
    requests_ok: int = 0
    requests_incomplete: int = 0  # ended early or cut at a deadline; not in the figures
    errors: int = 0
    top_cause: str | None = None  # the most frequent cause among failed and incomplete requests
    prompt_tokens_total: int | None = None
    output_tokens_total: int | None = None
    duration_s: float | None = None
    ttft_ms: Percentiles = Field(default_factory=Percentiles)
    ttft_p95_ci_ms: list[float] | None = None  # 95 % bootstrap interval of the TTFT p95 [low, high]
    itl_ms: Percentiles = Field(default_factory=Percentiles)
    e2e_ms: Percentiles = Field(default_factory=Percentiles)
    decode_tps_per_request: Percentiles = Field(default_factory=Percentiles)
    output_tps_total: float | None = None
    requests_per_s: float | None = None
    goodput: float | None = None  # share of requests (0..1) whose TTFT met the target
    ttft_target_ms: float | None = None
    peak_rss_mb: float | None = None  # summed over the probe's process tree, sampled by the parent
    peak_child_maxrss_mb: float | None = None  # the child's own ru_maxrss high-water mark
    peak_gpu_mb: float | None = None  # NVML, per process, summed over the probe's process tree and GPUs
    gpu_util_percent: float | None = None  # mean GPU busy % sampled while the measured requests ran
    system_load: SystemLoad = Field(default_factory=SystemLoad)
    notes: list[str] = Field(default_factory=list)
    requests: list[RequestRecord] = Field(default_factory=list)
    started_at: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_secret_kept(cls, data: Any) -> Any:
        """Every text a result holds is redacted (probes/redact.py), so a result read back from anywhere (the
        child, the history, a file) never shows a URL's credentials."""
        if isinstance(data, dict):
            data = dict(data)
            for k in _TEXT_FIELDS:
                if k in data:
                    data[k] = redact_data(data[k])
        return data

    @field_validator("server_kind", mode="before")
    @classmethod
    def _known_kind(cls, v: Any) -> Any:
        """A kind this version does not know (a result from a newer one, "unknown") reads as not recognised."""
        return v if v in SERVER_KINDS else None

    @field_validator("server_version", mode="before")
    @classmethod
    def _clean_version(cls, v: Any) -> Any:
        return clean_version(v)

    @field_validator("requests", mode="before")
    @classmethod
    def _bounded_requests(cls, v: Any) -> Any:
        """No run sends more requests than a probe may ask for: a file claiming more is refused before its
        records are built (each holds every token's timestamp)."""
        most = 10_000  # probes.validation.MAX_REQUESTS (not imported: it reaches the engines' imports)
        if isinstance(v, list) and len(v) > most:
            raise ValueError(f"a probe result holds at most {most:,} requests, this one {len(v):,}")
        return v

    @model_validator(mode="after")
    def _ok_has_figures(self) -> "ProbeResult":
        """An ok run measured something: at least one request finished ok, so its TTFT p95 is known. A result that
        says ok without it (hand-written, or cut down) is refused at load instead of breaking the report that
        reads those figures."""
        if self.status == "ok" and (self.ttft_ms.p95 is None or (self.requests_total and not self.requests_ok)):
            raise ValueError("status \"ok\" without the figures an ok run has (no TTFT p95, or no request finished "
                             "ok): not a probe's own result")
        return self

    def masked(self, secrets: list[str]) -> "ProbeResult":
        """This result with every text in it (settings, requests, notes, backend settings) redacted against
        `secrets` (a run's key, its URL's secret pieces): the object itself holds none, so whatever serialises it
        later (the event pipe, the history, a report) cannot show one. The pattern masks run on any result; a key
        echoed by a server is known only to the run that sent it."""
        if not secrets:
            return self
        return ProbeResult.model_validate(redact_data(json.loads(self.model_dump_json()), secrets, keys=False))

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def failed_share(self) -> float | None:
        """Failed and incomplete requests over all requests; None when none ran."""
        if not self.requests_total:
            return None
        return (self.errors + self.requests_incomplete) / self.requests_total


_TEXT_FIELDS = ("reason", "install_hint", "model", "device", "backend_settings", "serving", "top_cause", "notes",
               "server_version")
_GPU_WORDS = ("cuda", "gpu", "rocm", "hip", "metal", "mps", "xpu", "dml", "webgpu")


LOOPBACK_HOSTS = ("localhost", "::1")


def is_loopback(host: str | None) -> bool:
    """127.0.0.0/8, ::1 or localhost: a server on this machine."""
    h = (host or "").strip().lower()
    return h in LOOPBACK_HOSTS or h.startswith("127.")


def on_another_machine(res) -> bool:
    """A run (or sweep) that measured a server on another machine: its device says "remote … server HOST:PORT" with
    a host that is not this machine's loopback, or, when it recorded no device, it is an endpoint run. This machine's
    CPU load says nothing of such a server, so it never makes the run busy (walk-3 L13)."""
    d = (getattr(res, "device", None) or "").strip()
    if not d:
        return getattr(res, "engine", None) == "endpoint"
    if not d.lower().startswith("remote"):
        return False
    from urllib.parse import urlsplit

    try:
        host = urlsplit("//" + d.split()[-1]).hostname
    except ValueError:
        return True
    return not is_loopback(host)


def device_kind(device: str | None) -> tuple[str | None, str | None]:
    """Read a result's `device` ("cpu", "cuda:0 NVIDIA H200", "remote server host:port", an ORT provider list):
    ("cpu" | "gpu" | "remote" | None, the GPU's name when it is given)."""
    d = (device or "").strip()
    low = d.lower()
    if not d:
        return None, None
    if low.startswith("remote"):
        return "remote", None
    if any(w in low for w in _GPU_WORDS):
        return "gpu", (d.split(" ", 1)[1].strip() if low.startswith("cuda:") and " " in d else None)
    if "cpu" in low:
        return "cpu", None
    return None, None


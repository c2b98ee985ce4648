"""The checks a probe's settings pass before anything starts, shared by the CLI and the Probe page, so both
refuse the same input with the same one-line message."""
from __future__ import annotations

import math
import re
from urllib.parse import urlparse

from probes.registry import BACKENDS
from probes.workload import (MAX_INPUT_TOKENS, MAX_OUTPUT_TOKENS, PRESETS, PromptsFileError, parse_prompts_jsonl,
                             read_prompts_bytes)

MAX_REQUESTS = 10_000
MAX_CONCURRENCY = 1_024
MAX_TOKENS = 32_768
MAX_TIMEOUT_S = 24 * 3600


def endpoint_error(url: str | None) -> str | None:
    """None when url is an http(s) URL with a host (and an optional port and path)."""
    if not url:
        return "the endpoint probe needs a URL, e.g. http://127.0.0.1:8000"
    from probes.redact import redact_url

    shown = redact_url(url)  # a URL's credentials are never echoed (probes/redact.py)
    shown = shown if len(shown) <= 80 else shown[:79] + "…"
    if len(url) > 2048 or any(not ch.isprintable() or ch.isspace() for ch in url):
        return f"the endpoint must be an http(s) URL without spaces, got {shown!r}"
    try:
        u = urlparse(url)
        port = u.port
    except ValueError:
        return f"the endpoint must be an http(s) URL, e.g. http://127.0.0.1:8000; got {shown!r}"
    if u.scheme not in ("http", "https") or not u.hostname:
        return f"the endpoint must be an http(s) URL, e.g. http://127.0.0.1:8000; got {shown!r}"
    if port == 0:
        return f"the endpoint's port must be 1-65535, got {shown!r}"
    return None


def settings_error(engine: str, endpoint: str | None = None, requests: int = 8, concurrency: int = 1,
                   max_tokens: int = 32, timeout_s: float = 600.0) -> str | None:
    """One line saying what is wrong, or None."""
    if engine not in BACKENDS:
        return f"unknown engine {engine!r}; known: {', '.join(BACKENDS)}"
    if engine == "endpoint":
        err = endpoint_error(endpoint)
        if err:
            return err
    elif endpoint:
        return f"an endpoint URL goes with the endpoint probe, not with {engine}"
    for name, value, top in (("requests", requests, MAX_REQUESTS), ("concurrency", concurrency, MAX_CONCURRENCY),
                             ("max tokens", max_tokens, MAX_TOKENS)):
        if not 1 <= value <= top:
            return f"{name} must be between 1 and {top:,}, got {value}"
    if not (math.isfinite(timeout_s) and 0 < timeout_s <= MAX_TIMEOUT_S):
        return f"the timeout must be a number of seconds between 0 and {MAX_TIMEOUT_S}, got {timeout_s}"
    return None


# ------------------------------------------------------------------------------------------ the workload in tokens
def parse_input_tokens(text: str) -> tuple[int, int | None]:
    """"1500" → (1500, None); "1500:300" → (1500, 300) (mean:stddev). ValueError with one line if malformed."""
    parts = text.strip().split(":")
    if len(parts) > 2 or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"input tokens must be N or MEAN:STDDEV in whole tokens, e.g. 1500 or 1500:300; "
                         f"got {text[:40]!r}")
    mean = int(parts[0])
    sd = int(parts[1]) if len(parts) == 2 else None
    return mean, sd


def workload_error(input_tokens: int | None = None, input_tokens_sd: int | None = None,
                   output_tokens: int | None = None, prompts_file: str | None = None,
                   preset: str | None = None) -> str | None:
    """One line saying what is wrong with a workload in tokens, or None. Checks the prompts file too."""
    if preset is not None and preset not in PRESETS:
        return f"unknown preset {preset!r}; known: {', '.join(PRESETS)}"
    if input_tokens is not None and not 1 <= input_tokens <= MAX_INPUT_TOKENS:
        return f"input tokens must be between 1 and {MAX_INPUT_TOKENS:,}, got {input_tokens}"
    if input_tokens_sd is not None:
        if input_tokens is None:
            return "a spread (stddev) of input tokens needs a mean: MEAN:STDDEV"
        if not 0 <= input_tokens_sd <= input_tokens:
            return f"the input tokens' stddev must be between 0 and the mean ({input_tokens}), got {input_tokens_sd}"
    if output_tokens is not None and not 1 <= output_tokens <= MAX_OUTPUT_TOKENS:
        return f"output tokens must be between 1 and {MAX_OUTPUT_TOKENS:,}, got {output_tokens}"
    if prompts_file is not None:
        if input_tokens is not None:
            return "--prompts and --input-tokens both set the prompts: give one"
        if preset is not None:
            return "--prompts and --preset both set the prompts: give one (--output-tokens sets the output)"
        try:
            parse_prompts_jsonl(read_prompts_bytes(prompts_file))
        except PromptsFileError as err:
            return str(err)
    return None


_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,95}$")


def model_path_problem(path: str | None) -> tuple[str, dict] | None:
    """Checked before a probe starts, as the endpoint URL is: (a string key, its arguments) when the model path
    names nothing here. A model hub id ("org/name") is said to be one: nothing is ever downloaded."""
    from pathlib import Path

    text = (path or "").strip()
    if not text:
        return None  # the bundled model
    shown = text[:200]
    try:
        p = Path(text).expanduser()
        exists = p.exists()
    except (OSError, ValueError, RuntimeError):
        return "model_path_missing", {"path": shown}
    if exists:
        return None
    if _HUB_ID.match(text) and not text.startswith((".", "~")):
        return "model_path_hub_id", {"path": shown}
    return "model_path_missing", {"path": shown}


def preflight_error(settings) -> str | None:
    """One line when the workload cannot fit the model's trained context, read from the model's own files (a GGUF
    header, config.json): checked before the probe's process starts, so a run that could only fail allocates
    nothing (an input of 131,000 tokens on an 8k model once took a 3 GB KV cache before it was refused)."""
    if settings.engine == "endpoint":
        return None
    from pathlib import Path

    from probes.workload import context_error, model_shape

    model = settings.model
    if not model:
        from probes.models import ModelError, default_model

        try:
            model = default_model()
        except ModelError:
            return None  # the child says so
    try:
        shape = model_shape(Path(model).expanduser())
    except (OSError, ValueError, RuntimeError):
        return None
    return context_error(settings, shape.context_tokens) if shape else None

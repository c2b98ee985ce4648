"""The probe's child process: check, prepare, load, warm up, measure; one result on the event pipe.

Run as `python -m probes.child '<settings json>'` with PROBE_EVENT_FD naming a pipe the parent reads.
Engine output on stdout/stderr is left alone; events and the result go only to that pipe.
"""
from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time
import traceback
from pathlib import Path

from probes import redact
from probes.result import ProbeResult, ProbeSettings


class Events:
    def __init__(self) -> None:
        fd = int(os.environ.get("PROBE_EVENT_FD", "1"))
        self.f = os.fdopen(fd, "w", buffering=1, encoding="utf-8")

    def emit(self, event: dict) -> None:
        if _LIVE.get("stopping") and event.get("type") != "result":
            return
        self.f.write(json.dumps(event) + "\n")
        self.f.flush()

    def phase(self, phase: str, message: str = "", **kw) -> None:
        self.emit({"type": "progress", "phase": phase, "message": message, **kw})


def _watchdog(parent: int, deadline_s: float) -> None:
    """The child dies with its parent, and keeps its own deadline: it runs in its own session (so the parent
    can kill its whole group), which also means nothing else would end it if the parent were killed."""
    import signal
    import threading

    end = time.monotonic() + deadline_s

    def watch() -> None:
        while True:
            if os.getppid() != parent or time.monotonic() > end:
                try:
                    os.killpg(os.getpgrp(), signal.SIGKILL)  # the engine's own workers too
                finally:
                    os._exit(137)
            time.sleep(0.25)

    threading.Thread(target=watch, name="probe-watchdog", daemon=True).start()


def main(argv: list[str]) -> int:
    from probes.backends.base import die_with_parent

    parent = int(os.environ.get("PROBE_PARENT_PID", os.getppid()))
    if not die_with_parent(parent):  # the parent died before we asked: no signal will come
        os._exit(137)
    settings = ProbeSettings.model_validate_json(argv[0])
    # the endpoint's credentials, if any, came through the environment; no engine process below inherits them
    settings.with_credentials(os.environ.pop(redact.ENV_KEY, None), os.environ.pop(redact.ENV_URL, None))
    _watchdog(parent, settings.timeout_s + 30)  # the deadline, and the parent's death while not stopped
    ev = Events()
    _EVENTS.append(ev)
    signal.signal(signal.SIGUSR1, _on_stop)
    signal.signal(signal.SIGUSR2, _on_stop)
    result = measure(settings, ev)
    result.peak_child_maxrss_mb = _own_peak_rss_mb()
    ev.emit({"type": "result", "result": json.loads(result.model_dump_json())})
    return 0


def _own_peak_rss_mb() -> float:
    """This process's own high-water RSS. Not ru_maxrss: on Linux that starts from the parent's peak at exec
    (a 1 GB Streamlit server or test runner would show as this probe's memory); VmHWM is this image's alone."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def measure(settings: ProbeSettings, ev: Events) -> ProbeResult:
    """The run's result, with the run's secrets masked in the object itself: a server may echo the key it was sent
    (in its model id, an error body), and every result built here carries what the server said."""
    return _measure(settings, ev).masked(settings.secrets())


def _measure(settings: ProbeSettings, ev: Events) -> ProbeResult:
    from probes import metrics
    from probes.backends.base import Unavailable
    from probes.models import ModelError, default_model, detect_format, file_size_mb
    from probes.registry import get_backend

    cls = get_backend(settings.engine)
    base = dict(engine=settings.engine, engine_version=cls.version(), settings=settings,
                install_hint=cls.install_hint, ttft_target_ms=settings.ttft_target_ms,
                started_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    ev.phase("check", f"checking {settings.engine}")
    reason = cls.availability()
    if reason:
        return ProbeResult(status="unavailable", reason=reason, **base)
    backend = cls()
    try:
        if settings.engine == "endpoint":
            model, fmt = None, "endpoint"
        else:
            model = Path(settings.model).expanduser() if settings.model else default_model()
            fmt = detect_format(model)
        base.update(model=str(model) if model else settings.endpoint, model_format=fmt)
        t0 = time.perf_counter()
        if model is not None:
            model, fmt = backend.prepare(model, fmt, settings, lambda ph, msg: ev.phase(ph, msg))
            prepare_s = time.perf_counter() - t0
            base.update(prepare_time_s=round(prepare_s, 3) if prepare_s > 0.5 else None)
            from probes.workload import context_error, model_shape

            shape = model_shape(model)  # the trained context, as the parent checked it (before any conversion)
            refuse = context_error(settings, shape.context_tokens if shape else None) or _memory_refusal(
                backend.estimate_memory_mb(model, fmt, settings), model, backend.memory_detail)
            if refuse:
                return ProbeResult(status="error", reason=refuse, **base)
        ev.phase("load", f"loading {model or settings.endpoint}")
        t0 = time.perf_counter()
        backend.load(model, fmt, settings)
        base["load_time_s"] = round(time.perf_counter() - t0, 3)
        try:
            prompts, warm_prompts, workload_notes = _workload(settings, backend, ev)
        except WorkloadError as err:
            backend.close()
            return ProbeResult(status="error", reason=str(err), device=backend.device,
                               backend_settings=backend.backend_settings, notes=backend.notes,
                               **_server_named(backend), **base)
        if settings.warmup:
            ev.phase("warmup", f"{settings.warmup} warm-up request(s), excluded from the figures")
            warm = settings.model_copy(update={"concurrency": 1})
            backend.run(warm_prompts, warm, lambda n: None)
        ev.emit({"type": "progress", "phase": "run", "done": 0, "total": len(prompts)})
        _LIVE.update(settings=settings, backend=backend, base=base, notes=workload_notes, total=len(prompts))
        records = backend.run(prompts, settings,
                              lambda n: ev.emit({"type": "progress", "phase": "run", "done": n,
                                                 "total": len(prompts)}))
        res = _result(records, settings, backend, base, workload_notes)
        backend.close()
        return res
    except Unavailable as err:
        return ProbeResult(status="unavailable", reason=str(err), **base)
    except ModelError as err:
        return ProbeResult(status="error", reason=str(err), **base)
    except Exception as err:  # the engine failed: say how, keep the parent alive
        tb = traceback.extract_tb(err.__traceback__)[-1]
        return ProbeResult(status="error", reason=f"{type(err).__name__}: {err} (at {tb.filename}:{tb.lineno})",
                           **base)


def _result(records, settings: ProbeSettings, backend, base: dict, notes: list[str],
            stopped: str | None = None) -> ProbeResult:
    """The result of the requests that finished; `stopped` says why the run ended before its last one."""
    from probes import metrics

    figures = metrics.compute(records, settings.ttft_target_ms)
    status, reason = metrics.judge(figures, records)
    if stopped is not None:
        status = "cancelled" if stopped.startswith("cancelled") else ("error" if status == "error" else "partial")
        reason = (f"{stopped} after {len(records)} of {_LIVE.get('total', '?')} requests; the "
                  f"{figures['requests_ok']} that finished ok are kept")
    elif status == "ok" and figures["requests_ok"] < figures["requests_total"]:
        notes = [*notes, f"{figures['requests_total'] - figures['requests_ok']} of {figures['requests_total']} "
                         f"requests did not finish ok ({figures['top_cause']}); counted as misses in goodput"]
    return ProbeResult(status=status, reason=reason, device=backend.device, backend_settings=backend.backend_settings,
                       serving=backend.serving, serving_mode=getattr(backend, "serving_mode", None),
                       notes=notes + backend.notes, requests=records, **_server_named(backend), **base, **figures)


def _server_named(backend) -> dict:
    """The server an endpoint backend recognised (ProbeResult.server_kind / server_version); none for the others."""
    return {"server_kind": getattr(backend, "server_kind", None),
            "server_version": getattr(backend, "server_version", None)}


#: what the running measurement has (set when the measured requests start), for a stop signal to report on
_LIVE: dict = {}


def _on_stop(signum, frame) -> None:
    """SIGUSR1 (cancel) or SIGUSR2 (the parent's deadline): send what finished as the result, then exit."""
    from probes.backends.base import FINISHED

    why = ("cancelled by the user" if signum == signal.SIGUSR1 else
           f"timed out after {_LIVE['settings'].timeout_s:g} s" if _LIVE.get("settings") else "timed out")
    if _LIVE.get("backend") is None:
        os._exit(143)
    _LIVE["stopping"] = True  # progress events stop: the result line must not interleave with one
    records = sorted(list(FINISHED), key=lambda r: r.index)
    try:
        res = _result(records, _LIVE["settings"], _LIVE["backend"], _LIVE["base"], _LIVE["notes"], stopped=why
                      ).masked(_LIVE["settings"].secrets())
        res.peak_child_maxrss_mb = _own_peak_rss_mb()
        _EVENTS[0].emit({"type": "result", "result": json.loads(res.model_dump_json())})
    finally:
        os._exit(0)


_EVENTS: list = []


class WorkloadError(Exception):
    """The workload cannot run on this model (a prompt longer than its context, an unreadable prompts file)."""


def _workload(settings: ProbeSettings, backend, ev: Events) -> tuple[list, list, list[str]]:
    """The measured prompts, the warm-up prompts, and notes saying what the workload was.

    Warm-up prompts never repeat a measured one (an engine's prefix cache would then serve that request)."""
    import hashlib

    from probes import workload as wl

    out = wl.output_tokens(settings)
    warm_out = min(8, out)
    notes: list[str] = []
    short = [wl.Prompt(t, warm_out) for t in wl.build_prompts(settings.warmup, "short", settings.seed + 99)]
    if settings.prompts_file:
        try:
            lines = wl.read_prompts_file(settings.prompts_file)
        except ValueError as err:
            raise WorkloadError(str(err)) from None
        if settings.engine != "endpoint":  # a server under test is not sent tokenizer requests for this (yet)
            ev.phase("prompts", f"counting the tokens of {min(len(lines), settings.requests)} prompt(s) in the "
                                "engine's own tokenizer")
            try:  # every prompt the run sends, before the run: one over the context fails only after the others
                too_long = wl.prompts_over_context(lines, backend.count_prompt_tokens, backend.context_tokens, out,
                                                   settings.requests)
            except Exception:  # noqa: BLE001 (a tokenizer that cannot count: the engine's own limit applies)
                too_long = None
            if too_long:
                raise WorkloadError(too_long)
        prompts = wl.file_prompts(lines, settings.requests, out)
        digest = hashlib.sha256(Path(settings.prompts_file).read_bytes()).hexdigest()[:12]
        what = f"prompts: {len(lines)} from {Path(settings.prompts_file).name} (sha256 {digest}…), in order"
        if settings.requests > len(lines):
            what += (f"; {settings.requests} requests cycle through them, so later requests repeat earlier prompts "
                     "(an engine with a prefix cache may serve the repeats faster)")
        elif settings.requests < len(lines):
            what += f"; the first {settings.requests} of them"
        notes.append(what)
        if any(m for _, m in lines):
            notes.append(f"output: exactly each line's max_tokens (else {out}) tokens per request "
                         f"({backend.output_rule})")
        else:
            notes.append(f"output: exactly {out} tokens per request ({backend.output_rule})")
        return prompts, short, notes
    if settings.input_tokens:
        ctx = backend.context_tokens
        upper = (ctx if ctx else wl.MAX_INPUT_TOKENS) - out - wl.CONTEXT_MARGIN
        where = f"the model's context of {ctx} tokens" if ctx else f"the limit of {wl.MAX_INPUT_TOKENS:,} tokens"
        if upper < 1 or (not settings.input_tokens_sd and settings.input_tokens > upper):
            raise WorkloadError(f"{settings.input_tokens} input + {out} output tokens (+{wl.CONTEXT_MARGIN}) do not "
                                f"fit in {where}")
        if backend.count_prompt_tokens(wl.opening(0, settings.seed)) is None:
            raise WorkloadError(f"{settings.engine} cannot count tokens, so it cannot fit prompts to input_tokens")
        lengths = wl.input_lengths(settings.requests, settings.input_tokens, settings.input_tokens_sd,
                                   settings.seed, upper)
        ev.phase("prompts", f"fitting {len(lengths)} prompt(s) to {settings.input_tokens} tokens in the engine's "
                            "own tokenizer")
        prompts, got = wl.fitted_prompts(backend.count_prompt_tokens, lengths, out, settings.seed)
        counted = ("counted in the engine's own tokenizer" if backend.counts_exactly()
                   else "approximated: the engine's tokenizer could not be asked (see the prompt tokens note)")
        if settings.input_tokens_sd:
            clipped = sum(1 for a, b in zip(lengths, wl.planned_lengths(settings) or []) if a != b)
            notes.append(f"prompts: {len(prompts)} synthetic, normal(mean {settings.input_tokens}, stddev "
                         f"{settings.input_tokens_sd}) tokens seeded by {settings.seed}, clipped to "
                         f"[{wl.MIN_INPUT_TOKENS}, {upper}]: {min(lengths)}-{max(lengths)} tokens after the chat "
                         f"template, {counted}"
                         + (f"; {clipped} clipped to fit {where}" if clipped else ""))
        else:
            notes.append(f"prompts: {len(prompts)} synthetic, {settings.input_tokens} tokens each after the chat "
                         f"template (±1), {counted}; each opens differently (\"Request i of run seed: …\") so no "
                         "prefix cache serves one from another")
        over = [(n, g) for n, g in zip(lengths, got) if g > n + 1]
        if over:
            notes.append(f"the chat template and the shortest opening alone are {over[0][1]} tokens, more than the "
                         f"{over[0][0]} asked: {len(over)} prompt(s) are longer than asked")
        warm, _ = wl.fitted_prompts(backend.count_prompt_tokens, [lengths[0]] * settings.warmup, warm_out,
                                    settings.seed, "Warm-up") if settings.warmup else ([], [])
        notes.append(f"output: exactly {out} tokens per request ({backend.output_rule})")
        return prompts, warm, notes
    prompts = [wl.Prompt(t, out) for t in wl.build_prompts(settings.requests, settings.prompt_mix, settings.seed)]
    try:  # a server is not asked (its tokenizer requests would be requests it serves before the measured ones)
        counted = [] if settings.engine == "endpoint" or getattr(backend, "ep", None) else \
            [backend.count_prompt_tokens(p.text) for p in prompts[:64]]
    except Exception:  # noqa: BLE001 (a count is for the note only)
        counted = []
    counted = [n for n in counted if n]
    span = f", {min(counted)}-{max(counted)} tokens after the chat template" if counted else ""
    notes.append(f"prompts: {len(prompts)} from the built-in '{settings.prompt_mix}' text mix{span}; this is not the "
                 "prompt length a plan assumes (give input tokens, a preset or a prompts file to measure that "
                 "workload)")
    if settings.output_tokens:
        notes.append(f"output: exactly {out} tokens per request ({backend.output_rule})")
    return prompts, short, notes


def _memory_refusal(need_mb: float, model, detail: str | None = None) -> str | None:
    """Refused before loading: the estimate counts the weights and the KV cache of the context the run asks for
    (`detail` says how much of each), so a long context is refused here rather than by the kernel's OOM killer."""
    import psutil

    avail = psutil.virtual_memory().available / 2**20
    margin = float(os.environ.get("PROBE_MEMORY_MARGIN", "0.8"))
    if need_mb > avail * margin:
        return (f"refused: loading {model} needs about {need_mb:,.0f} MB" + (f" ({detail})" if detail else "") +
                f" but only {avail:,.0f} MB is free (a probe may use at most {margin:.0%} of free memory)")
    return None


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)

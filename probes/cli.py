"""`python -m probes list|run|sweep|serve` — exit 0 ok, 3 unavailable, 1 error, 2 bad arguments.

A progress bar goes to stderr; the JSON result alone goes to stdout.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Sequence

from probes.cache import CacheDirError
from probes.registry import BACKENDS, get_backend, python_for
from probes.workload import PRESETS

EXIT = {"ok": 0, "unavailable": 3, "error": 1, "cancelled": 130}


class UsageError(Exception):
    pass


def user_path(text: str, flag: str) -> Path:
    """A path argument as the user typed it (~ expanded), or one clear line: a `~user` the system does not know, a
    name too long for it, a NUL byte."""
    try:
        path = Path(text).expanduser().resolve()
        path.exists()  # a name too long for the system fails here, once, rather than at each later use
        return path
    except (RuntimeError, OSError, ValueError) as err:
        raise UsageError(f"{flag} {text[:120]!r}: not a path this system can use "
                         f"({str(err) or type(err).__name__})"[:300]) from None


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:
        raise UsageError(f"{self.prog}: {message}")


def _positive(kind):
    def conv(text: str):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
        if not v > 0 or v in (float("inf"),):
            raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
        return v
    return conv


def _common(r) -> None:
    """The arguments `run` and `sweep` share: the engine, the model or endpoint, and the workload."""
    r.add_argument("--engine", required=True, help=f"one of: {', '.join(BACKENDS)}")
    src = r.add_mutually_exclusive_group()
    src.add_argument("--model", metavar="PATH", help="GGUF file, HF directory or ONNX directory (default: bundled)")
    src.add_argument("--endpoint", metavar="URL", help="an OpenAI-compatible server, e.g. http://127.0.0.1:8000")
    r.add_argument("--api-key-env", metavar="NAME",
                   help="the environment variable holding the endpoint's API key (sent as Authorization: Bearer; "
                        "never stored or printed)")
    r.add_argument("--requests", type=_positive(int), default=8)
    r.add_argument("--max-tokens", type=_positive(int), default=32,
                   help="output tokens per request for the legacy prompt mix (--output-tokens wins)")
    r.add_argument("--prompt-mix", choices=["short", "long", "mixed"], default=None,
                   help="the legacy synthetic prompts without token counts (default: mixed)")
    w = r.add_argument_group("the workload in tokens (counted in the engine's own tokenizer)")
    w.add_argument("--input-tokens", metavar="N[:SD]",
                   help="prompt tokens per request after the chat template (±1); MEAN:STDDEV for a seeded spread")
    w.add_argument("--output-tokens", metavar="N", type=int, help="exact output tokens per request")
    w.add_argument("--preset", metavar="NAME", help="a named workload: " + ", ".join(
        f"{k} ({v['input_tokens']}:{v['input_tokens_sd']} in, {v['output_tokens']} out)" for k, v in PRESETS.items())
                   + "; --input-tokens / --output-tokens override its numbers")
    w.add_argument("--prompts", metavar="FILE.jsonl",
                   help='your own prompts, one {"prompt": "...", "max_tokens": N} per line, in order (cycled)')
    r.add_argument("--seed", type=int, default=1234, help="seeds the synthetic prompts and the spread")
    r.add_argument("--ttft-target-ms", type=_positive(float), default=1000.0)
    r.add_argument("--timeout", type=_positive(float), default=600.0, metavar="S")
    r.add_argument("--threads", type=_positive(int), default=None)
    r.add_argument("--warmup", type=int, default=1)
    r.add_argument("--format", choices=["json", "text", "llmd-report"], default="json",
                   help="llmd-report: the llm-d benchmark report v0.2.1 (YAML; a sweep writes one document per level)")


def _parser() -> _Parser:
    p = _Parser(prog="python -m probes", description="Live probes of inference engines.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    ls = sub.add_parser("list", help="each backend, whether it can run here, and why not")
    ls.add_argument("--format", choices=["json", "text"], default="text")
    r = sub.add_parser("run", help="measure one engine")
    _common(r)
    r.add_argument("--concurrency", type=_positive(int), default=1)
    sw = sub.add_parser("sweep", help="measure one engine at rising concurrency, up to the SLA's knee")
    _common(sw)
    sw.add_argument("--concurrency", metavar="1,2,4,…", default=None,
                    help="the levels (default 1,2,4,8,16,32,64)")
    sw.add_argument("--until-sla", action="store_true",
                    help="stop once p95 TTFT exceeds the target or goodput falls below the share")
    sw.add_argument("--goodput-share", type=_positive(float), default=0.9,
                    help="the share of requests within the TTFT target a level must reach (default 0.9)")
    sw.add_argument("--max-concurrency", type=_positive(int), default=None,
                    help="the plan's memory-bound maximum: no level above it")
    b = sub.add_parser("build", help="build an engine that compiles from source (llama.cpp: llama-server and the "
                                     "libraries llama-cpp-python loads), or wait for the build that runs; for "
                                     "onnxruntime and pytorch, convert the bundled model for them once (a Hugging "
                                     "Face folder, and its ONNX export) into the cache dir")
    b.add_argument("engine", choices=["llama.cpp", *PREPARED])
    b.add_argument("--background", action="store_true",
                   help="start the build detached and return at once (what make run does); no second build starts")
    b.add_argument("--status", action="store_true", help="print where the build stands (with --format json: the record)")
    b.add_argument("--format", choices=["json", "text"], default="text")
    sv = sub.add_parser("serve", help="start the server a deployment bundle would run (from the plan), sweep it, stop it")
    sv.add_argument("--engine", required=True, help="llama.cpp or vllm (the servers this machine can start)")
    sv.add_argument("--from-plan", required=True, metavar="ANSWERS.yaml",
                    help="the answers file: its plan's bundle for --engine is what runs (python -m advisor deploy)")
    sv.add_argument("--model", metavar="PATH", help="the model to serve here (default: the answers' model.path, else "
                                                    "the bundled model)")
    sv.add_argument("--concurrency", metavar="1,2,4,…", default="1,2,4,8", help="the levels (default 1,2,4,8)")
    sv.add_argument("--until-sla", action="store_true", help="stop once a level misses the TTFT target")
    sv.add_argument("--requests", type=_positive(int), default=8)
    sv.add_argument("--max-tokens", type=_positive(int), default=32)
    sw_w = sv.add_argument_group("the workload in tokens (counted in the server's own tokenizer)")
    sw_w.add_argument("--input-tokens", metavar="N[:SD]")
    sw_w.add_argument("--output-tokens", metavar="N", type=int)
    sw_w.add_argument("--preset", metavar="NAME")
    sv.add_argument("--seed", type=int, default=1234)
    sv.add_argument("--ttft-target-ms", type=_positive(float), default=None,
                    help="default: the answers' ttft_p95_ms")
    sv.add_argument("--timeout", type=_positive(float), default=600.0, metavar="S", help="per level")
    sv.add_argument("--start-timeout", type=_positive(float), default=None, metavar="S",
                    help="how long the server may take to answer its health endpoint (default 900)")
    sv.add_argument("--format", choices=["json", "text"], default="text")
    return p


def availability(engine: str) -> str | None:
    """Why `engine` cannot run here (None if it can); checked under the interpreter its probe uses."""
    py = python_for(engine)
    if py == sys.executable:
        return get_backend(engine).availability()
    code = ("import sys; from probes.registry import get_backend; "
            f"r = get_backend({engine!r}).availability(); print(r or '')")
    from probes.registry import ROOT

    p = subprocess.run([py, "-c", code], capture_output=True, text=True, cwd=str(ROOT), timeout=120)
    if p.returncode != 0:
        return f"its interpreter {py} failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}"
    return p.stdout.strip() or None


def llama_gpu_offload() -> bool | None:
    """Whether the installed llama-cpp-python was built with a GPU backend, asked in a child process (the app
    must not import an engine); None when it is not installed or does not answer."""
    code = "import llama_cpp; print(bool(llama_cpp.llama_supports_gpu_offload()))"
    try:
        p = subprocess.run([python_for("llama.cpp"), "-c", code], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return {"True": True, "False": False}.get(p.stdout.strip().splitlines()[-1] if p.stdout.strip() else "")




def cmd_list(args) -> int:
    rows = []
    for engine in BACKENDS:
        cls = get_backend(engine)
        reason = availability(engine)
        row = {"engine": engine, "available": reason is None, "reason": reason,
               "install": None if reason is None else cls.install_hint, "python": python_for(engine)}
        if engine == "llama.cpp":  # how concurrency > 1 is served: llama-server's parallel slots, when built
            from probes.backends.llama_cpp import llama_server_binary
            from probes.builds import status

            build = status()
            row["build"] = build.model_dump()
            if build.state == "building":
                row["install"] = "it is building now: it becomes available when the build ends (no restart)"
            elif build.state in ("failed", "absent") and reason:
                row["install"] = f"{build.retry} (make run starts it in the background)"
            binary = llama_server_binary()
            row["serving_above_1"] = (f"llama-server ({binary})" if binary else
                                      "in-process, one at a time: llama-server is not built yet")
        if engine == "sglang":  # measured through its own server, on the device it would take here
            from probes.backends.sglang_server import device_for

            row["serving"] = f"SGLang's own server (python -m sglang.launch_server --device {device_for({})})"
        rows.append(row)
    if args.format == "json":
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            state = "ready" if r["available"] else f"unavailable: {r['reason']}\n{'':15}install: {r['install']}"
            if not r["available"] and (r.get("build") or {}).get("state") == "building":
                state = f"building: {r['reason']}"
            elif (r.get("build") or {}).get("state") == "failed":
                state += "".join(f"\n{'':15}| {ln}" for ln in r["build"]["log_tail"][-5:])
            print(f"{r['engine']:14} {state}")
            if r.get("serving_above_1"):
                print(f"{'':15}concurrency > 1: {r['serving_above_1']}")
            if r.get("serving") and r["available"]:
                print(f"{'':15}serves: {r['serving']}")
    return 0


def cmd_build(args) -> int:
    from probes import builds

    if args.engine in PREPARED:
        return _prepare_bundled(args)
    if args.status:
        st = builds.status(args.engine)
        print(st.model_dump_json(indent=2) if args.format == "json" else f"{args.engine}: {st.state}: {st.line()}")
        return 0 if st.state == "ready" else 3
    return builds.build(wait=not args.background, background=args.background)


PREPARED = ("onnxruntime", "pytorch")  # engines that read the bundled GGUF converted, not the GGUF itself


def _prepare_bundled(args) -> int:
    """The bundled model converted for onnxruntime or pytorch, as their probe's first run would convert it (the same
    folders, locks and completeness markers: probes/models.py), so that run starts at once; one that is there is
    checked and kept. Neither --status nor --background: a conversion takes 15-40 s, in the foreground."""
    from probes.models import ModelError, default_model
    from probes.registry import get_backend
    from probes.result import ProbeSettings

    if args.background or args.status:
        print(f"error: --background and --status apply to llama.cpp only; {args.engine} converts in the foreground",
              file=sys.stderr)
        return 2
    try:
        model, fmt = get_backend(args.engine)().prepare(default_model(), "gguf", ProbeSettings(engine=args.engine),
                                                        lambda phase, msg: print(f">>> {msg}", flush=True))
    except (ModelError, OSError, ImportError) as err:  # a converter missing or failing: one line, which
        print(f"error: {args.engine}: {str(err).splitlines()[0] if str(err) else type(err).__name__}", file=sys.stderr)
        return 1
    print(f">>> the bundled model for {args.engine} is ready ({fmt}: {model})")
    return 0


class _Bar:
    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()

    def __call__(self, ev: dict) -> None:
        if ev.get("type") == "started":
            return
        if ev.get("phase") == "run" and "total" in ev:
            done, total = ev["done"], ev["total"]
            width = 30
            fill = int(width * done / max(1, total))
            line = f"[{'#' * fill}{'.' * (width - fill)}] {done}/{total} requests"
            print(("\r" + line) if self.tty else line, end="" if self.tty else "\n", file=sys.stderr, flush=True)
            if self.tty and done == total:
                print(file=sys.stderr)
        else:
            print(f"{ev.get('phase', '?')}: {ev.get('message', '')}", file=sys.stderr, flush=True)


def _text(res) -> str:
    if res.status != "ok":
        return f"{res.engine}: {res.status}: {res.reason}" + (f"\ninstall: {res.install_hint}"
                                                            if res.status == "unavailable" else "")
    p = lambda x: "-" if x is None else f"{x:g}"  # noqa: E731
    lines = [
        f"{res.engine} {res.engine_version or ''} on {res.device} — {res.model}",
        f"  serving: {res.serving}",
        f"  settings: {res.backend_settings}",
        f"  load {p(res.load_time_s)} s; requests {res.requests_ok}/{res.requests_total} ok, "
        f"{res.requests_incomplete} incomplete, {res.errors} errors",
        f"  TTFT ms p50/p95/p99: {p(res.ttft_ms.p50)} / {p(res.ttft_ms.p95)} / {p(res.ttft_ms.p99)}",
        f"  ITL ms p50/p95/p99: {p(res.itl_ms.p50)} / {p(res.itl_ms.p95)} / {p(res.itl_ms.p99)}",
        f"  decode tok/s per request p50: {p(res.decode_tps_per_request.p50)}; total output tok/s "
        f"{p(res.output_tps_total)}; requests/s {p(res.requests_per_s)}",
        f"  goodput (TTFT ≤ {p(res.ttft_target_ms)} ms): {p(res.goodput)}",
        f"  peak RSS {p(res.peak_rss_mb)} MB (process tree); GPU {p(res.peak_gpu_mb)} MB",
    ]
    lines += [f"  note: {n}" for n in res.notes]
    return "\n".join(lines)


def _interrupted(signum, frame) -> None:
    raise KeyboardInterrupt


def _settings(args, concurrency: int):
    from probes.result import ProbeSettings
    from probes.validation import settings_error, workload_error

    if args.engine == "endpoint" and not args.endpoint:
        raise UsageError("--engine endpoint needs --endpoint URL")
    if args.endpoint and args.engine != "endpoint":
        raise UsageError("--endpoint goes with --engine endpoint")
    err = settings_error(args.engine, args.endpoint, args.requests, concurrency, args.max_tokens, args.timeout)
    if err:
        raise UsageError(err)
    mean, sd = _input_tokens(args)
    if args.prompt_mix is not None and (mean is not None or args.prompts or args.preset):
        raise UsageError("--prompt-mix is the legacy workload: it goes with neither --input-tokens, --preset "
                         "nor --prompts")
    err = workload_error(mean, sd, args.output_tokens, args.prompts, args.preset)
    if err:
        raise UsageError(err)
    key = _api_key(args)
    if args.engine != "endpoint":  # a local engine converts and caches: a cache dir that cannot be is a user's setting
        from probes.cache import cache_dir

        cache_dir()
    prompts = str(Path(args.prompts).resolve()) if args.prompts else None
    settings = ProbeSettings(engine=args.engine, model=args.model, endpoint=args.endpoint, requests=args.requests,
                             concurrency=concurrency, max_tokens=args.max_tokens,
                             prompt_mix=args.prompt_mix or "mixed", ttft_target_ms=args.ttft_target_ms,
                             timeout_s=args.timeout, threads=args.threads, warmup=max(0, args.warmup),
                             seed=args.seed, input_tokens=mean, input_tokens_sd=sd, output_tokens=args.output_tokens,
                             prompts_file=prompts, preset=args.preset).with_credentials(api_key=key)
    from probes.validation import preflight_error

    err = preflight_error(settings)  # beyond the model's trained context: refused before the engine starts
    if err:
        raise UsageError(err)
    return settings


def _api_key(args) -> str | None:
    """The key named by --api-key-env, read from the environment (a key on the command line would be in `ps`)."""
    name = args.api_key_env
    if name is None:
        return None
    if args.engine != "endpoint":
        raise UsageError("--api-key-env goes with --engine endpoint")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,127}", name):
        raise UsageError("--api-key-env takes the NAME of an environment variable (letters, digits, _), not the key")
    # the name is echoed only when it looks like one (upper case): a key pasted in its place is never printed
    shown = name if re.fullmatch(r"[A-Z_][A-Z0-9_]{0,63}", name) else "(the name given)"
    key = os.environ.get(name, "")
    if not key.strip():
        raise UsageError(f"--api-key-env: the environment variable {shown} is not set or empty")
    if len(key) > 4096 or any(not ch.isprintable() or ch.isspace() for ch in key.strip()):
        raise UsageError(f"--api-key-env: the key in {shown} must be one line of printable characters")
    if not key.strip().isascii():  # an HTTP header carries ASCII only: every request would fail, not the run once
        raise UsageError(f"--api-key-env: the key in {shown} holds non-ASCII characters, which an HTTP "
                         "Authorization header cannot carry")
    return key.strip()


def cmd_run(args) -> int:
    from probes.runner import run_probe

    settings = _settings(args, args.concurrency)
    cancel = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGHUP):  # as Ctrl-C: run_probe kills the engine's process group
        signal.signal(sig, _interrupted)
    try:
        res = run_probe(settings, on_event=_Bar(), cancel=cancel)
    except KeyboardInterrupt:
        cancel.set()
        print("\nerror: interrupted; the engine process was stopped", file=sys.stderr)
        return 130
    print(_formatted(res, args.format, _text))
    return EXIT[res.status]


def _formatted(res, fmt: str, text) -> str:
    """The result as JSON, text, or llm-d benchmark reports (probes.bench_formats; an unmeasured run has none: its
    JSON goes to stderr and stdout stays empty)."""
    if fmt == "json":
        return res.model_dump_json(indent=2)
    if fmt != "llmd-report":
        return text(res)
    from probes.bench_formats import dump_llmd

    out = dump_llmd(res)
    if not out:
        print(f"error: nothing measured, so no llm-d report: {res.status}: {res.reason or ''}"[:500], file=sys.stderr)
    return out


def _sweep_text(r) -> str:
    p = lambda x: "-" if x is None else f"{x:g}"  # noqa: E731
    lines = [f"{r.engine} on {r.device or '?'} — {r.model or ''}: {r.status}" + (f": {r.reason}" if r.reason else ""),
             f"  {'conc':>5} {'ok':>4} {'err':>4} {'TTFT p50':>9} {'TTFT p95':>9} {'p95 95% interval':>17} "
             f"{'ITL p50':>8} {'tok/s':>8} {'goodput':>8} {'other CPU':>9}  outcome"]
    for lv in r.levels:
        ci = "-" if not lv.ttft_p95_ci_ms else f"{lv.ttft_p95_ci_ms[0]:.0f}-{lv.ttft_p95_ci_ms[1]:.0f}"
        cpu = "-" if lv.other_cpu_percent is None else f"{lv.other_cpu_percent:.0f}%"
        lines.append(f"  {lv.concurrency:>5} {lv.requests_ok:>4} {lv.errors:>4} {p(lv.ttft_ms.p50):>9} "
                     f"{p(lv.ttft_ms.p95):>9} {ci:>17} {p(lv.itl_ms.p50):>8} {p(lv.output_tps_total):>8} "
                     f"{'-' if lv.goodput is None else f'{lv.goodput:.0%}':>8} {cpu:>9}  {lv.outcome or '-'}"
                     + ("  BUSY" if lv.busy else ""))
    measured = any(lv.status == "ok" for lv in r.levels)
    cap = ("not measured (no level finished)" if not measured else
           "none (not even 1)" if r.capacity is None else f"{r.capacity} concurrent requests")
    lines.append(f"  SLA capacity (goodput ≥ {r.goodput_share:.0%} within TTFT p95 ≤ {p(r.ttft_target_ms)} ms): {cap}")
    if r.plan_max_concurrency:
        lines.append(f"  the plan's memory-bound maximum: {r.plan_max_concurrency}")
    lines.append(f"  stopped: {r.stop_reason}")
    return "\n".join(lines)


def _levels(text: str | None, plan_max: int | None = None) -> list[int]:
    """--concurrency "1,2,4" as the sweep's levels, or a usage error."""
    from probes.sweep import levels_for

    try:
        levels = levels_for(text, plan_max)
    except ValueError:
        raise UsageError(f"--concurrency must be a comma-separated list of whole numbers, got {text!r}") from None
    if not levels or levels[0] < 1 or levels[-1] > 1024:
        raise UsageError("--concurrency levels must be between 1 and 1024")
    return levels


def _input_tokens(args) -> tuple[int | None, int | None]:
    """--input-tokens N[:SD] as (mean, sd), or a usage error."""
    from probes.validation import parse_input_tokens

    if args.input_tokens is None:
        return None, None
    try:
        return parse_input_tokens(args.input_tokens)
    except ValueError as bad:
        raise UsageError(str(bad)) from None


def cmd_sweep(args) -> int:
    from probes.sweep import run_sweep

    levels = _levels(args.concurrency, args.max_concurrency)
    if args.goodput_share > 1:
        raise UsageError(f"--goodput-share is a share between 0 and 1, got {args.goodput_share:g}")
    base = _settings(args, levels[0])
    cancel = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupted)
    try:
        res = run_sweep(base, levels, until_sla=args.until_sla, goodput_share=args.goodput_share,
                        plan_max=args.max_concurrency, on_event=_SweepBar(), cancel=cancel)
    except KeyboardInterrupt:
        cancel.set()
        print("\nerror: interrupted; the engine process was stopped", file=sys.stderr)
        return 130
    print(_formatted(res, args.format, _sweep_text))
    return EXIT.get(res.status, 1)


class _SweepBar(_Bar):
    def __call__(self, ev: dict) -> None:
        if ev.get("type") == "sweep":
            print(f"level {ev['level'] + 1}/{ev['levels']}: concurrency {ev['concurrency']}", file=sys.stderr,
                  flush=True)
            return
        super().__call__(ev)


def bundle_from_plan(answers: str, engine: str) -> dict:
    """The deployment bundle of `engine` for an answers file's model and workload on THIS machine, from `python -m
    advisor deploy --here --format json` (the probes do not import the advisor: they ask its CLI, as a user would).
    A hardware block in the answers plans another machine: its command (-t 64, tensor parallel 8, a KV space for its
    RAM) is not one to start here."""
    from probes.registry import ROOT

    path = user_path(answers, "--from-plan")  # the advisor runs from the project's folder
    if not path.is_file():
        raise UsageError(f"--from-plan: no such file: {answers[:200]!r}")
    try:
        p = subprocess.run([sys.executable, "-m", "advisor", "deploy", "--answers", str(path), "--engine", engine,
                            "--here", "--format", "json"], capture_output=True, text=True, cwd=str(ROOT), timeout=300)
    except subprocess.TimeoutExpired:
        raise UsageError("--from-plan: the advisor did not answer within 300 s") from None
    if p.returncode == 2:
        raise UsageError((p.stderr.strip().splitlines() or ["the advisor refused the answers"])[-1].removeprefix(
            "error: "))
    try:
        bundle = json.loads(p.stdout)
    except ValueError:
        raise UsageError("--from-plan: the advisor gave no bundle: "
                         + ((p.stderr.strip().splitlines() or ["?"])[-1])[:300]) from None
    return bundle


def cmd_serve(args) -> int:
    from probes.result import ProbeSettings
    from probes.served import ServeSpec, run_served, served_availability
    from probes.validation import workload_error

    if args.engine not in BACKENDS or args.engine == "endpoint":
        raise UsageError(f"--engine must be one of: {', '.join(e for e in BACKENDS if e != 'endpoint')}")
    levels = _levels(args.concurrency)
    mean, sd = _input_tokens(args)
    err = workload_error(mean, sd, args.output_tokens, None, args.preset)
    if err:
        raise UsageError(err)
    why = served_availability(args.engine)
    bundle = bundle_from_plan(args.from_plan, args.engine)
    if bundle.get("status") != "ok":
        print(f"error: {args.engine}: {bundle.get('status')}: {bundle.get('reason') or ''}", file=sys.stderr)
        return 1
    if why:
        print(f"{args.engine}: unavailable: {why}", file=sys.stderr)
        return 3
    import yaml

    try:
        answers = yaml.safe_load(user_path(args.from_plan, "--from-plan").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        answers = {}
    model_path = args.model or ((answers.get("model") or {}).get("path") if isinstance(answers, dict) else None)
    if model_path:
        from probes.validation import model_path_problem

        bad = model_path_problem(str(model_path))
        if bad:
            raise UsageError(f"--model: {str(model_path)[:200]!r}: " + (
                "a model hub id; nothing is downloaded: give a local path" if bad[0] == "model_path_hub_id"
                else "no such file or folder"))
    target = args.ttft_target_ms or float((answers.get("ttft_p95_ms") if isinstance(answers, dict) else None) or 1000)
    env = {e["name"]: e["value"] for e in bundle.get("env", [])}
    spec = ServeSpec(engine=args.engine, program=bundle["program"], args=bundle["template_args"], env=env,
                     health=bundle.get("health") or "/health", bundle_command=bundle.get("command", ""),
                     model=str(user_path(str(model_path), "--model")) if model_path else None,
                     start_s=args.start_timeout or 900.0)
    base = ProbeSettings(engine="endpoint", endpoint="http://127.0.0.1:1", requests=args.requests, concurrency=levels[0],
                         max_tokens=args.max_tokens, ttft_target_ms=target, timeout_s=args.timeout, warmup=1,
                         seed=args.seed, input_tokens=mean, input_tokens_sd=sd, output_tokens=args.output_tokens,
                         preset=args.preset)
    print(f"starting: {bundle.get('command', '')}", file=sys.stderr)
    cancel = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupted)
    try:
        res = run_served(spec, base, levels, until_sla=args.until_sla, on_event=_SweepBar(), cancel=cancel)
    except KeyboardInterrupt:
        cancel.set()
        print("\nerror: interrupted; the server was stopped", file=sys.stderr)
        return 130
    if args.format == "json":
        print(res.model_dump_json(indent=2))
    else:
        d = res.deployed
        lines = [_sweep_text(res)]
        if d is not None:
            lines += [f"  bundle command: {d.bundle_command}", f"  ran here:       {d.command_line}"]
            lines += [f"    ({n})" for n in d.substituted]
            lines.append(f"  ready after {d.ready_s if d.ready_s is not None else '-'} s; stopped cleanly: "
                         f"{'yes' if d.stopped else 'no' if d.stopped is False else '-'}")
            if res.status != "ok" and d.log_tail:
                lines.append("  server log (last lines): " + d.log_tail.replace("\n", " | ")[:800])
        print("\n".join(lines))
    return EXIT.get(res.status, 1)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        return {"list": cmd_list, "run": cmd_run, "sweep": cmd_sweep, "serve": cmd_serve,
                "build": cmd_build}[args.command](args)
    except (UsageError, CacheDirError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nerror: interrupted", file=sys.stderr)
        return 130

"""`python -m advisor detect|recommend|plan|report|deploy|knowledge` — a contract other tools depend on.

Bad input exits 2 with one line on stderr; never a traceback for a user's mistake.
"""
from __future__ import annotations

import argparse
import errno
import json
import os
import sys
from typing import Sequence


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        raise UsageError(f"{self.prog}: {message}")


def _evidence_args(c) -> None:
    c.add_argument("--evidence", action="append", default=[], metavar="FILE",
                   help="a benchmark result made elsewhere (GuideLLM report, AIPerf profile_export_aiperf.json, "
                        "vllm bench serve --save-result, SGLang bench_serving JSONL, llm-d benchmark report v0.2/0.2.1, "
                        "or a probes sweep), set beside the prediction; one that matches the answers' GPU, count and "
                        "model with 2+ levels recalibrates its engine there (repeatable)")
    c.add_argument("--evidence-engine", default=None, metavar="ENGINE",
                   help="the engine the --evidence files measured, where a file does not say")
    c.add_argument("--evidence-gpu", default=None, metavar="GPU",
                   help="the GPU they ran on (as gpus.yaml or nvidia-smi names it), where a file does not say")
    c.add_argument("--evidence-gpus", type=int, default=None, metavar="N", help="how many GPUs the server used")
    c.add_argument("--evidence-concurrency", type=int, default=None, metavar="N",
                   help="the users in flight, where a file does not say (AIPerf's per-request records, a burst)")
    c.add_argument("--evidence-same-model", action="store_true",
                   help="the files measured the answers' model (where a file names it otherwise, or not at all)")


def _parser() -> _Parser:
    p = _Parser(prog="python -m advisor", description="Inference-engine selection advisor.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def command(name: str, help: str, answers: bool = True, fmt: bool = True, probes: str | None = None):
        c = sub.add_parser(name, help=help)
        if answers:
            c.add_argument("--answers", required=True, metavar="FILE")
        if probes:
            c.add_argument("--probe", action="append", default=[], metavar="RESULT.json", help=probes)
        if fmt:
            c.add_argument("--format", choices=["json", "text"], default="text")
        c.add_argument("--lang", choices=["en", "zh"], default="en")
        return c

    command("detect", "show this machine's hardware and installed engines", answers=False)
    rate_help = ("an open-loop request rate (requests/s, Poisson arrivals) to predict beside Q1's users; "
                 "overrides the answers' load.request_rate_rps")
    rc = command("recommend", "rank the engines for an answers file")
    rc.add_argument("--rate", default=None, metavar="RPS", help=rate_help)
    _evidence_args(rc)
    pl = command("plan", "capacity plan: what fits, max concurrency/context, roofline bounds, predicted serving",
                 probes="compare a probe's measured memory and tok/s with the plan (repeatable)")
    pl.add_argument("--rate", default=None, metavar="RPS", help=rate_help)
    _evidence_args(pl)
    pl.add_argument("--sweep", action="append", default=[], metavar="SWEEP.json",
                    help="set a `python -m probes sweep` result beside the serving prediction (repeatable); a sweep "
                         "measured here, on a quiet machine, recalibrates this machine's efficiency for its engine")
    rp = command("report", "write the decision report (.md or .pdf, by the extension of --out)", fmt=False,
                 probes="a result from `python -m probes run --format json` (repeatable)")
    rp.add_argument("--out", required=True, metavar="report.md|report.pdf")
    rp.add_argument("--rate", default=None, metavar="RPS", help=rate_help)
    rp.add_argument("--sweep", action="append", default=[], metavar="SWEEP.json",
                    help="a `python -m probes sweep` result (repeatable: engines side by side)")
    _evidence_args(rp)
    dp = command("deploy", "deployment bundles for the ranked engines: launch command, docker run, compose, Kubernetes",
                 fmt=False)
    dp.add_argument("--engine", default=None, metavar="ENGINE",
                    help="one engine (vllm, sglang, tensorrt-llm, onnxruntime, llama.cpp, pytorch); default: each ranked")
    dp.add_argument("--format", choices=["sh", "ps1", "compose", "k8s", "kserve", "json", "text"], default="text",
                    help="sh: launch.sh; ps1: launch.ps1 (a Windows target); compose: compose.yaml; k8s: k8s.yaml; "
                         "json: the whole bundle; text: all")
    dp.add_argument("--here", action="store_true",
                    help="plan for this machine as detected, whatever the answers' hardware block says (what "
                         "`python -m probes serve` starts here)")
    dp.add_argument("--out", default=None, metavar="DIR",
                    help="write each bundle's files into DIR/<engine>/ instead of printing them")
    kn = command("knowledge", "the engine versions the knowledge describes; --check lists what was read too long ago",
                 answers=False)
    kn.add_argument("--check", action="store_true",
                    help="list support cells, rules and engine releases read more than --days ago (exit 1 if any)")
    kn.add_argument("--days", type=_days, default=None, metavar="N", help="the age limit in days (default 180)")
    kn.add_argument("--today", type=_day, default=None, metavar="YYYY-MM-DD", help="judge the age as of this day")
    return p


def _days(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of days: {text[:40]!r}") from None
    if not 1 <= n <= 36_500:
        raise argparse.ArgumentTypeError(f"days must be between 1 and 36500, got {n}")
    return n


def _day(text: str):
    import datetime as dt

    try:
        day = dt.date.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text[:40]!r}") from None
    if not 1900 <= day.year <= 2999:  # (the age is counted back up to 36,500 days from it: year 1 overflowed)
        raise argparse.ArgumentTypeError(f"the day must be in the years 1900 to 2999, got {day.isoformat()}")
    return day


def _user_path(text: str, flag: str = "--out"):
    """A path the user gave, ~ expanded: one usage error (never a traceback) for a name this system cannot hold
    (too long, a NUL) or a ~user that does not exist."""
    from pathlib import Path

    if "\0" in text:
        raise UsageError(f"{flag}: a path cannot hold a NUL character")
    if not text.strip():  # '' would silently mean the current folder
        raise UsageError(f"{flag} is empty: give a folder or file name")
    try:
        out = Path(text).expanduser()
        out.exists()  # a name too long for this file system fails here, before any work
    except (RuntimeError, OSError) as err:  # RuntimeError: ~nosuchuser has no home folder
        why = err.strerror if isinstance(err, OSError) and err.strerror else str(err) or type(err).__name__
        raise UsageError(f"{flag} {text[:80]!r}{'…' if len(text) > 80 else ''}: {why}") from None
    return out


def cmd_knowledge(args, knowledge) -> int:
    """Exit 0 when nothing is older than the limit, 1 when --check found something (a CI can fail on it)."""
    import datetime as dt

    from advisor.knowledge import age

    days = args.days or age.STALE_DAYS
    today = args.today or dt.date.today()
    asof = age.as_of(knowledge)
    old = age.stale(knowledge, today, days) if args.check else []
    if args.format == "json":
        print(json.dumps({
            "as_of": asof.date,
            "engines": [{"engine": e.engine, "version": e.version, "released": e.released, "read": e.read}
                        for e in asof.engines],
            **({"check": {"today": today.isoformat(), "days": days,
                          "stale": [{"file": d.file, "item": d.item, "read": d.read.isoformat() if d.read else None,
                                     "source": d.source} for d in old]}} if args.check else {}),
        }, ensure_ascii=False, indent=2))
        return 1 if old else 0
    zh = args.lang == "zh"
    print(asof.line(knowledge, args.lang))
    for e in asof.engines:
        when = f"{'发布于' if zh else 'released'} {e.released}" if e.released else ("发布日期未知" if zh else "release date unknown")
        print(f"  {e.name} {e.version} ({when}; {'读取于' if zh else 'read'} {e.read or '?'})")
    if args.check:
        total = len(age.dated(knowledge))
        if not old:
            print(f"全部 {total} 条均在 {today.isoformat()} 之前 {days} 天内读取" if zh else
                  f"all {total} dated items were read within {days} days of {today.isoformat()}")
        else:
            print((f"{len(old)} / {total} 条超过 {days} 天未重读（截至 {today.isoformat()}）：" if zh else
                   f"{len(old)} of {total} dated items are older than {days} days on {today.isoformat()}:"))
            for d in old:
                print(f"  {d.read.isoformat() if d.read else ('无日期' if zh else 'undated')}  {d.file}  {d.item}"
                      + (f"  {d.source}" if d.source else ""))
    return 1 if old else 0


def _hardware_for(answers, knowledge):
    from advisor.inputs import detect

    return None if answers.hardware is not None else detect(knowledge)


def cmd_detect(args, knowledge) -> int:
    from advisor.inputs import detect
    from advisor.report import hardware_text

    hw = detect(knowledge)
    print(hw.model_dump_json(indent=2) if args.format == "json" else hardware_text(hw, knowledge, args.lang))
    return 0


def _inputs(answers, knowledge):
    from advisor.planner import edge_inputs

    return edge_inputs(answers, knowledge, on_measure=lambda: print(
        "measuring this machine's memory bandwidth once (cached for next time)…", file=sys.stderr))


def recommendation_json(rec, answers, hardware) -> dict:
    return {
        "ranking": [r.model_dump(mode="json") for r in rec.ranking],
        "excluded": [{"engine": x.engine, "name": x.name,
                      "reasons": [{"rule": y.rule, "text": y.text, "source": y.source} for y in x.reasons],
                      "plan": x.plan.model_dump(mode="json") if x.plan else None}
                     for x in rec.excluded],
        "model": rec.plan.model.model_dump(mode="json") if rec.plan else None,
        "target": rec.plan.target.model_dump(mode="json") if rec.plan else None,
        "flips": [f.model_dump(mode="json") for f in rec.flips],
        "flip_note": rec.flip_note,
        "hardware": (hardware.model_dump(mode="json") if hardware is not None
                     else {"source": "answers", **answers.hardware.model_dump(mode="json")}),
        "answers": answers.model_dump(mode="json"),
        "lang": rec.lang,
    }


def _with_rate(answers, rate: str | None):
    """--rate RPS over the answers' load.request_rate_rps (the same bounds: > 0, at most 100,000)."""
    if rate is None:
        return answers
    import math

    try:
        r = float(rate)
    except ValueError:
        raise UsageError(f"--rate must be a number of requests per second, got {rate[:40]!r}") from None
    if not (math.isfinite(r) and 0 < r <= 100_000):
        raise UsageError("--rate must be greater than 0 and at most 100000 requests per second")
    from advisor.inputs.answers import LoadBlock

    return answers.model_copy(update={"load": LoadBlock(request_rate_rps=r)})


def cmd_recommend(args, knowledge) -> int:
    from advisor.decide import recommend
    from advisor.inputs import load_answers
    from advisor.report import recommendation_text

    answers = _with_rate(load_answers(args.answers), args.rate)
    ev_checks, ev_cal = _evidence(args, answers, knowledge, args.lang)  # a bad file is refused before any work
    hardware = _hardware_for(answers, knowledge)
    spec, machine = _inputs(answers, knowledge)
    rec = recommend(answers, hardware, knowledge, lang=args.lang, spec=spec, machine=machine,
                    calibration={**_calibration(), **ev_cal})
    if args.format == "json":
        data = recommendation_json(rec, answers, hardware)
        data["evidence"] = [c.model_dump(mode="json") for c in ev_checks]
        print(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        from advisor.report.evidence import evidence_text

        print(recommendation_text(rec, knowledge, args.lang))
        for c in ev_checks:
            print("\n" + "\n".join(evidence_text(c, knowledge, args.lang)))
    return 0


MAX_PROBE_BYTES = 64 << 20  # 10,000 requests of 512 token times each stay well under this


def _out_path(text: str):
    """--out checked before any work: a report that cannot be written is a usage error, not a traceback."""
    import os
    from pathlib import Path

    out = _user_path(text)
    if out.is_dir():
        raise UsageError(f"--out {text!r} is a directory; give a file name ending in .md or .pdf")
    if out.suffix.lower() not in (".md", ".pdf"):
        raise UsageError(f"--out must end in .md or .pdf, got {text!r}")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"--out: the folder {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise UsageError(f"--out: {text!r} is not writable here")
    try:  # a real try, before any work (access() says yes to root even where nothing can be created)
        import tempfile

        fd, probe = tempfile.mkstemp(dir=parent, prefix=".report-")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise UsageError(f"--out: cannot write {text!r} ({err.strerror or type(err).__name__})") from None
    return out


def _write(out, data: bytes) -> None:
    """Write whole or not at all: a temporary file beside the target, then a rename."""
    import os
    import tempfile

    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=out.parent if str(out.parent) else ".", prefix=".report-", suffix=out.suffix)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, out)
    except OSError as err:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise UsageError(f"--out: cannot write {str(out)!r} ({err.strerror or type(err).__name__})") from None


def _load_result(path: str, what: str):
    """A probe or sweep result file (what: "probe" | "sweep"), size-capped; a bad one is a one-line usage error."""
    from pathlib import Path

    from probes.result import ProbeResult
    from probes.sweep_result import SweepResult

    p = Path(path)
    if not p.is_file():
        raise UsageError(f"{what} result not found (or not a regular file): {p}")
    if p.stat().st_size > MAX_PROBE_BYTES:
        raise UsageError(f"{p}: {p.stat().st_size / 2**20:.0f} MB is too large for a {what} result "
                         f"(at most {MAX_PROBE_BYTES >> 20} MB)")
    try:
        return {"probe": ProbeResult, "sweep": SweepResult}[what].model_validate_json(p.read_bytes())
    except (ValueError, RecursionError) as err:  # pydantic's ValidationError and UnicodeDecodeError included
        raise UsageError(f"{p}: not a {what} result JSON ({_first_problem(err)})") from None


def _first_problem(err: Exception) -> str:
    """One line for why a result file did not load: pydantic's first error where it is ("levels: a sweep holds at
    most …"), deep nesting in plain words, else the error's first line."""
    from pydantic import ValidationError

    if isinstance(err, RecursionError):
        return "nested too deeply"
    if isinstance(err, ValidationError):
        e = err.errors(include_url=False, include_input=False)[0]
        msg = str(e.get("msg", "invalid")).removeprefix("Value error, ")
        if e.get("type") == "json_invalid" and "recursion limit" in msg:
            msg = "nested too deeply"
        loc = ".".join(str(x) for x in e.get("loc", ()))
        return (f"{loc}: {msg}" if loc else msg)[:200]
    return str(err).splitlines()[0] if str(err) else type(err).__name__


def _ids_from_names(paths: list[str]) -> list[int] | None:
    """The history ids of files named probe-<id>.json (as the app's downloads and reproduce bundle name them), so a
    rebuilt report numbers its runs as the original did; None when any name is not of that form, or ids repeat."""
    import re
    from pathlib import Path

    ids = []
    for p in paths:
        m = re.fullmatch(r"probe-(\d{1,9})\.json", Path(p).name)
        if not m:
            return None
        ids.append(int(m.group(1)))
    return ids if len(set(ids)) == len(ids) else None


def _report_runs(paths: list[str], knowledge, lang: str) -> tuple[list, list]:
    """The report's probe results and their predicted-vs-measured checks, read one file at a time and each kept no
    larger than the report draws it (10,000 runs held every request's timestamps: gigabytes, minutes of PDF):
    - the first MAX_RUNS_SHOWN runs have rows; a local one is checked while it still holds every request;
    - the first MAX_RUNS_CHARTED ok runs among them keep an even sample of their requests, as many as a chart of
      that many runs draws;
    - every other run keeps its figures and drops its requests."""
    from advisor.report.charts import box_cap, sample_requests
    from advisor.report.document import MAX_RUNS_CHARTED, MAX_RUNS_SHOWN

    results, checks, drawn, local = [], [], [], {}
    for i, path in enumerate(paths):
        r = _load_result(path, "probe")
        if i < MAX_RUNS_SHOWN and r.ok and r.engine != "endpoint":
            if not local:  # as _checks: this machine, detected and measured once
                from advisor.inputs import detect
                from advisor.planner import machine_bench

                bench = machine_bench.cached()
                if bench is None:
                    print("measuring this machine's memory bandwidth once (cached for next time)…", file=sys.stderr)
                    bench = machine_bench.get()
                local.update(hw=detect(knowledge), machine=bench)
            from advisor.evidence import check_probe, hold_collapsed

            c = check_probe(r, knowledge, local["hw"], local["machine"], lang)
            if c is not None:
                checks.append(c)
                r = hold_collapsed(r, c, knowledge)  # collapsed against this machine's roofline: held, as busy
        if i < MAX_RUNS_SHOWN and r.ok and len(drawn) < MAX_RUNS_CHARTED:
            drawn.append(len(results))
            results.append(r)
            cap = box_cap(len(drawn))
            for j in drawn:
                results[j] = sample_requests(results[j], cap)
        else:
            results.append(r.model_copy(update={"requests": []}) if r.requests else r)
        del r  # the whole run, requests and all, is not held while the next file is read
    return results, checks


_SWEEP_MODELS: list = []


def _sweep_models():
    """Two readers of a sweep file: one that only counts its levels (each an empty object), and one that reads
    every field but `results` as it is, for SweepResult to validate; `results` is skipped unbuilt."""
    if not _SWEEP_MODELS:
        from pydantic import BaseModel, ConfigDict, create_model

        from probes.sweep_result import SweepResult

        class _Level(BaseModel):
            model_config = ConfigDict(extra="ignore")

        ignore = ConfigDict(extra="ignore")
        _SWEEP_MODELS.extend([
            create_model("SweepCount", __config__=ignore, levels=(list[_Level] | None, None)),
            create_model("SweepHead", __config__=ignore,
                         **{k: (object, None) for k in SweepResult.model_fields if k != "results"})])
    return _SWEEP_MODELS


def _report_sweep(path: str):
    """A sweep for the report, read without its `results` (every level's full probe result with every request's
    timestamps: a 63 MB file took 1 GB to read, and no report draws them), and its levels counted before any is
    built (178,000 levels took 1.7 GB to refuse). The rest is validated as a SweepResult; the file is checked
    first as _load_result checks it."""
    from pathlib import Path

    from probes.sweep_result import MAX_LEVELS, SweepResult

    p = Path(path)
    if not p.is_file() or p.stat().st_size > MAX_PROBE_BYTES:
        return _load_result(path, "sweep")  # refused there, in one line
    count, head = _sweep_models()
    try:
        data = p.read_bytes()
        n = len(count.model_validate_json(data).levels or [])
        if n > MAX_LEVELS:
            first = f"levels: a sweep holds at most {MAX_LEVELS:,} levels, this one has {n:,} levels"
        else:
            h = head.model_validate_json(data)
            del data
            return SweepResult.model_validate({k: getattr(h, k) for k in h.model_fields_set})
    except (ValueError, RecursionError) as err:  # pydantic's ValidationError and UnicodeDecodeError included
        first = _first_problem(err)
    raise UsageError(f"{p}: not a sweep result JSON ({first})")


def cmd_report(args, knowledge) -> int:
    from advisor.decide import recommend
    from advisor.inputs import load_answers
    from advisor.report import ReportError, build_markdown, chart_images, markdown_to_pdf

    out = _out_path(args.out)
    answers = _with_rate(load_answers(args.answers), args.rate)
    results, checks = _report_runs(args.probe, knowledge, args.lang)
    sweeps = [_report_sweep(p) for p in args.sweep]
    ev_checks, ev_cal = _evidence(args, answers, knowledge, args.lang)
    hardware = _hardware_for(answers, knowledge)
    spec, machine = _inputs(answers, knowledge)
    rec = recommend(answers, hardware, knowledge, lang=args.lang, spec=spec, machine=machine,
                    calibration={**_calibration(), **ev_cal})
    images, files = (chart_images(rec, results, args.lang, checks, sweeps=sweeps, run_ids=_ids_from_names(args.probe),
                                  ttft_target_ms=float(answers.ttft_p95_ms))
                     if out.suffix.lower() == ".pdf" else ({}, {}))
    from advisor.inputs import detect

    md = build_markdown(answers, hardware, rec, results, knowledge, args.lang, images=images,
                        answers_file=args.answers, probe_files=args.probe, checks=checks, sweeps=sweeps,
                        cores=(hardware or detect(knowledge)).cpu.usable_cores if sweeps else None,
                        run_ids=_ids_from_names(args.probe), sweep_files=args.sweep,
                        sweep_checks=_sweep_checks(sweeps, answers, knowledge, args.lang, recalibrate_too=False)[0],
                        evidence=ev_checks)
    try:
        data = md.encode("utf-8") if out.suffix.lower() == ".md" else markdown_to_pdf(md, files)
    except ReportError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    _write(out, data)
    print(f"wrote {out} ({len(data):,} bytes)", file=sys.stderr)
    return 0


def _checks(results, knowledge, lang):
    """Predicted vs measured for probes run on this machine (the plan is rebuilt for what each one ran)."""
    from advisor.evidence import check_probe
    from advisor.inputs import detect
    from advisor.planner import machine_bench

    local = [r for r in results if r.ok and r.engine != "endpoint"]
    if not local:
        return []
    hw, machine = detect(knowledge), machine_bench.get()
    return [c for c in (check_probe(r, knowledge, hw, machine, lang) for r in local) if c is not None]


def cmd_plan(args, knowledge) -> int:
    from advisor.inputs import load_answers
    from advisor.planner import calibration, make_plan
    from advisor.report import plan_text

    answers = _with_rate(load_answers(args.answers), args.rate)
    results = [_load_result(p, "probe") for p in args.probe]
    sweeps = [_load_result(p, "sweep") for p in args.sweep]
    ev_checks, ev_cal = _evidence(args, answers, knowledge, args.lang)
    hardware = _hardware_for(answers, knowledge)
    spec, machine = _inputs(answers, knowledge)
    sweep_checks, recal = _sweep_checks(sweeps, answers, knowledge, args.lang)
    plan = make_plan(answers, hardware, knowledge, spec, machine, args.lang,
                     calibration={**calibration.load(), **ev_cal})
    checks = _checks(results, knowledge, args.lang)
    if args.format == "json":
        data = plan.model_dump(mode="json")
        data["probe_checks"] = [c.model_dump(mode="json") for c in checks]
        data["sweep_checks"] = [c.model_dump(mode="json") for c in sweep_checks]
        data["recalibrated"] = [c.model_dump(mode="json") for c in recal]
        data["evidence"] = [c.model_dump(mode="json") for c in ev_checks]
        print(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        from advisor.report.sweep_check import check_text, recalibrated_text

        from advisor.report import serving_text

        lines = [plan_text(plan, knowledge, args.lang, checks), ""] + serving_text(plan, knowledge, args.lang)
        for c in sweep_checks:
            lines += [""] + check_text(c, knowledge, args.lang)
        lines += [recalibrated_text(c, knowledge, args.lang) for c in recal]
        from advisor.report.evidence import evidence_text

        for c in ev_checks:
            lines += [""] + evidence_text(c, knowledge, args.lang)
        print("\n".join(lines))
    return 0


def _aic_store(knowledge) -> None:
    """The measured-silicon predictor's answers kept in the user cache dir between runs (advisor.planner.aic)."""
    from advisor.planner import aic

    aic.use_store(aic.default_store(knowledge.aiconfigurator.version), knowledge.aiconfigurator.version)


def _calibration():
    from advisor.planner import calibration

    return calibration.load()


def _evidence(args, answers, knowledge, lang):
    """(each --evidence file beside the prediction, the recalibrations they make) for this answers file. A file that
    cannot be read is a one-line usage error; nothing is stored."""
    from advisor.evidence.imported import Assumed, check_evidence
    from advisor.knowledge import ENGINE_IDS
    from probes.bench_formats import MAX_BYTES, ResultFormatError, read_results

    paths = getattr(args, "evidence", None) or []
    if not paths:
        return [], {}
    if args.evidence_engine is not None and args.evidence_engine not in ENGINE_IDS:
        raise UsageError(f"--evidence-engine must be one of {', '.join(ENGINE_IDS)}, got {args.evidence_engine[:40]!r}")
    if args.evidence_gpus is not None and not 1 <= args.evidence_gpus <= 4096:
        raise UsageError(f"--evidence-gpus must be 1 to 4096, got {args.evidence_gpus}")
    if args.evidence_concurrency is not None and not 1 <= args.evidence_concurrency <= 100_000:
        raise UsageError(f"--evidence-concurrency must be 1 to 100,000, got {args.evidence_concurrency}")
    if args.evidence_gpu is not None and (len(args.evidence_gpu) > 120 or not args.evidence_gpu.isprintable()):
        raise UsageError("--evidence-gpu: at most 120 printable characters")
    assumed = Assumed(engine=args.evidence_engine, gpu=args.evidence_gpu, gpu_count=args.evidence_gpus,
                      same_model=bool(args.evidence_same_model), concurrency=args.evidence_concurrency)
    checks, cal = [], {}
    for path in paths:
        p = _user_path(path, "--evidence")
        if not p.is_file():
            raise UsageError(f"--evidence: not found (or not a regular file): {str(p)[:200]}")
        if p.stat().st_size > MAX_BYTES:
            raise UsageError(f"{str(p)[:200]}: {p.stat().st_size / 2**20:.0f} MiB is more than a benchmark result "
                             f"file holds (at most {MAX_BYTES >> 20} MiB)")
        with open(p, "rb") as f:
            data = f.read(MAX_BYTES + 1)
        try:
            run = read_results(data, p.name)
        except ResultFormatError as err:
            raise UsageError(str(err)) from None
        c = check_evidence(run, answers, knowledge, assumed, lang)
        if "gpu_known" in c.missing:  # a GPU we have no figures for: nothing can be predicted or calibrated from it
            raise UsageError(f"{run.file_name}: its GPU {c.gpu_name!r} is not one we know (knowledge/gpus.yaml)"[:300])
        checks.append(c)
        if c.calibration is not None:
            cal[f"evidence:{c.calibration.engine}"] = c.calibration
    return checks, cal


def _sweep_checks(sweeps, answers, knowledge, lang, recalibrate_too: bool = True):
    """Each sweep beside the prediction for what it ran, made BEFORE any recalibration from these sweeps (from the
    published fit, or an earlier calibration); then each quiet local sweep recalibrates its engine here."""
    from advisor.evidence.sweep_check import check_sweep, recalibrate
    from advisor.inputs import detect
    from advisor.planner import calibration, machine_bench

    if not sweeps:
        return [], []
    hw, machine = detect(knowledge), machine_bench.get()
    before = calibration.load()
    checks = [c for c in (check_sweep(s, knowledge, hw, machine, answers, before) for s in sweeps) if c is not None]
    recal = []
    for s in sweeps if recalibrate_too else []:
        cal = recalibrate(s, knowledge, hw, machine)
        if cal is not None:
            calibration.save(cal)
            recal.append(cal)
    return checks, recal


_DEPLOY_FILES = {"sh": "launch.sh", "ps1": "launch.ps1", "compose": "compose.yaml", "k8s": "k8s.yaml",
                 "kserve": "kserve.yaml"}


def deploy_bundles(answers, knowledge, lang: str, engine: str | None = None):
    """The bundles of `engine`, or of every ranked engine in rank order (then those excluded, refused with why)."""
    from advisor.decide import recommend
    from advisor.deploy import bundle_for
    from advisor.knowledge import ENGINE_IDS

    if engine is not None and engine not in ENGINE_IDS:
        raise UsageError(f"--engine must be one of {', '.join(ENGINE_IDS)}, got {engine[:40]!r}")
    hardware = _hardware_for(answers, knowledge)
    spec, machine = _inputs(answers, knowledge)
    rec = recommend(answers, hardware, knowledge, lang=lang, with_flips=False, spec=spec, machine=machine,
                    calibration=_calibration())
    cores = (answers.hardware.cpu_cores if answers.hardware is not None
             else (hardware.cpu.usable_cores if hardware is not None else None))
    order = [engine] if engine else [r.engine for r in rec.ranking] + [x.engine for x in rec.excluded]
    why_out = {x.engine: knowledge.s("deploy_excluded", lang, why="; ".join(y.text for y in x.reasons)[:600])
               for x in rec.excluded}
    # an engine whose pinned version does not implement the model's architecture gets no bundle at all: it would
    # not load the model, whatever its flags
    cannot = {x.engine: "; ".join(y.text for y in x.reasons if y.rule.startswith("support/model_class/"))[:600]
              for x in rec.excluded if any(y.rule.startswith("support/model_class/") for y in x.reasons)}
    return [bundle_for(e, rec.plan, answers, knowledge, lang, cores, [why_out[e]] if e in why_out else None,
                       refuse=cannot.get(e)) for e in order], rec


def cmd_deploy(args, knowledge) -> int:
    """Exit 0 with the bundles; 1 when the one engine asked for is refused (the reason on stderr)."""
    from pathlib import Path

    from advisor.inputs import load_answers
    from advisor.report.deploy import bundle_text

    answers = load_answers(args.answers)
    if args.here:
        answers = answers.model_copy(update={"hardware": None})
    out = None
    if args.out is not None:
        out = _user_path(args.out)
        if out.exists() and not out.is_dir():
            raise UsageError(f"--out {args.out!r} exists and is not a folder")
    found, _ = deploy_bundles(answers, knowledge, args.lang, args.engine)
    if args.format == "json":
        data = [b.model_dump(mode="json") for b in found]
        text = json.dumps(data[0] if args.engine else data, ensure_ascii=False, indent=2)
    elif args.format == "text":
        text = "\n\n".join(bundle_text(b, knowledge, args.lang) for b in found)
    else:
        name = _DEPLOY_FILES[args.format]
        parts = []
        for b in found:
            nodes = sorted(n for n in b.files if n.startswith("launch-node-")) if args.format == "sh" else []
            if nodes:  # a replica over several nodes: one script per node, each named
                parts.append("\n".join(f"# ----- {n} -----\n{b.files[n]}" for n in nodes))
            elif name in b.files:
                parts.append(b.files[name])
            elif args.engine:
                why = b.reason or f"{b.engine}: no {name} ({b.absent.get(name) or b.status})"
                print(f"error: {why}", file=sys.stderr)
                return 1
        text = ("\n---\n" if args.format in ("k8s", "kserve", "compose") else "\n").join(parts)
    if out is not None:
        try:
            _write_bundles(out, found)
        except OSError as err:
            why = err.strerror or str(err)
            if err.errno in _PATH_ERRNOS:  # the folder given is the problem: bad input
                raise UsageError(f"--out: cannot write there: {why}") from None
            # the machine is the problem (a full disk, a quota, an I/O error): one line, exit 1, DIR as it was
            print(f"error: --out: writing the bundles failed ({why}); nothing of this run was kept", file=sys.stderr)
            return 1
        print("\n".join(f"{b.engine}: " + (str(out / b.engine) if b.files else f"{b.status}: {b.reason or ''}")
                        for b in found))
    else:
        print(text)
    if args.engine and found and found[0].status == "refused":
        print(f"error: {found[0].reason}", file=sys.stderr)
        return 1
    return 0


def _stale(target: Path, ours: bool) -> bool:
    """Whether what holds an engine's name in DIR goes: anything in the way of a folder this run writes (a link, a
    file, an earlier run's folder); for an engine refused now, a link or an earlier run's folder (it holds our
    bundle.json), while anything else of that name is left alone."""
    if target.is_symlink():
        return True
    if not target.exists():
        return False
    return ours or (target.is_dir() and (target / "bundle.json").is_file())


def _stage_folder(out: Path, engine: str, files: dict[str, str], mask: int) -> Path:
    """One engine's folder written into a fresh temp folder in DIR (files created new, never through a link)."""
    import shutil
    import tempfile
    from pathlib import Path

    tmp = Path(tempfile.mkdtemp(dir=out, prefix=f".{engine}.tmp-"))
    try:
        for name, body in files.items():
            mode = 0o755 if name.endswith(".sh") else 0o644
            fd = os.open(tmp / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode & ~mask)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(body)
        os.chmod(tmp, 0o755 & ~mask)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return tmp


def _write_bundles(out: Path, found) -> None:
    """This run's engine folders under --out, all of them or none. Every folder is written whole into a temp folder
    first (a full disk fails here, before anything in DIR changed); only then is each one renamed into place, what
    held its name before (an earlier run's folder with its stale files, a link to a folder or file elsewhere, a
    refused engine's old bundle) moved aside, never written through, so a link planted at DIR/llama.cpp/launch.sh
    cannot turn a file elsewhere into our script. If a step fails, what was renamed is put back, the temp folders
    go, and a DIR this run created goes too: a failed run leaves DIR as it found it."""
    import shutil
    import tempfile
    from pathlib import Path

    made = [p for p in (out, *out.parents) if not os.path.lexists(p)][::-1]  # the folders this run creates
    mask = os.umask(0)
    os.umask(mask)
    staged: dict[str, Path] = {}
    aside = None
    done: list[tuple[Path, Path | None, bool]] = []  # (target, where its old content went, a new folder put there)
    try:
        out.mkdir(parents=True, exist_ok=True)
        for b in found:
            if b.files:
                staged[b.engine] = _stage_folder(out, b.engine, {**b.files, "bundle.json": b.model_dump_json(indent=2)},
                                                 mask)
        aside = Path(tempfile.mkdtemp(dir=out, prefix=".deploy.old-"))
        for b in found:  # renames only from here
            target = out / b.engine
            old = aside / b.engine if _stale(target, b.engine in staged) else None
            if old is not None:
                os.rename(target, old)
            done.append((target, old, False))
            if b.engine in staged:
                os.rename(staged.pop(b.engine), target)
                done[-1] = (target, old, True)
    except BaseException:
        for target, old, new in reversed(done):  # put back what was there
            try:
                if new:
                    shutil.rmtree(target)
                if old is not None:
                    os.rename(old, target)
            except OSError:
                pass
        for tmp in staged.values():
            shutil.rmtree(tmp, ignore_errors=True)
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)
        for folder in reversed(made):
            try:
                folder.rmdir()
            except OSError:
                break
        raise
    shutil.rmtree(aside, ignore_errors=True)


#: errors that say the --out path itself cannot be written (bad input, exit 2); any other is the machine's (exit 1)
_PATH_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EEXIST, errno.ENAMETOOLONG,
                          errno.ELOOP, errno.EISDIR, errno.ENOENT})


COMMANDS = {"deploy": cmd_deploy, "knowledge": cmd_knowledge, "detect": cmd_detect, "recommend": cmd_recommend, "plan": cmd_plan, "report": cmd_report}


def main(argv: Sequence[str] | None = None) -> int:
    from advisor.inputs import AnswersError
    from advisor.knowledge import KnowledgeError, load_knowledge
    from advisor.planner import ModelSpecError
    from probes.cache import CacheDirError  # INFERENCE_ADVISOR_CACHE (or the default cache dir) is not a folder

    try:
        args = _parser().parse_args(argv)
        knowledge = load_knowledge()
        _aic_store(knowledge)
        return COMMANDS[args.command](args, knowledge)
    except (UsageError, AnswersError, KnowledgeError, ModelSpecError, CacheDirError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0

"""The reproduce bundle: the answers, each picked run and sweep as JSON, and the one command that rebuilds the same
report from them anywhere the advisor is installed (run ids are kept in the file names, so the runs keep their
numbers). Built in memory; pure."""
from __future__ import annotations

import io
import zipfile

from advisor.report.document import _shell


def reproduce_command(run_ids: list[int], n_sweeps: int, lang: str, out: str = "report.pdf") -> str:
    return ("python -m advisor report --answers answers.yaml"
            + "".join(f" --probe probe-{i}.json" for i in run_ids)
            + "".join(f" --sweep sweep-{i}.json" for i in range(1, n_sweeps + 1))
            + f" --lang {lang} --out {_shell(out)}")


def reproduce_bundle(answers_yaml: str, runs: list[tuple[int, object]], sweeps: list, lang: str) -> bytes:
    """A zip: answers.yaml, probe-<id>.json per run, sweep-<n>.json per sweep, README.txt with the command."""
    cmd = reproduce_command([rid for rid, _ in runs], len(sweeps), lang)
    readme = ("Rebuild the report these files made:\n\n"
              f"    {cmd}\n\n"
              "Run it from the advisor's project folder (its ./.venv/bin/python, or any Python with the advisor's\n"
              "requirements installed), with these files beside it or their paths in the command. The plan is\n"
              "rebuilt from the answers; the measurements are taken from the JSON files as they were measured.\n")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("answers.yaml", answers_yaml)
        from probes.bench_formats import dump_llmd

        for rid, r in runs:
            z.writestr(f"probe-{int(rid)}.json", r.model_dump_json(indent=2))
            llmd = dump_llmd(r)  # the llm-d benchmark report v0.2.1 of the same run (none for an unmeasured one)
            if llmd:
                z.writestr(f"llmd/probe-{int(rid)}.yaml", llmd)
        for i, sw in enumerate(sweeps, 1):
            z.writestr(f"sweep-{i}.json", sw.model_dump_json(indent=2))
            llmd = dump_llmd(sw)
            if llmd:
                z.writestr(f"llmd/sweep-{i}.yaml", llmd)
        z.writestr("README.txt", readme)
    return buf.getvalue()

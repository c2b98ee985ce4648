"""A deployment bundle as text (the CLI) and as Markdown (the report's appendix): the command, why each value, and
the files. Everything in a fenced block is the file as generated; a fence long enough for its contents is chosen, so
a value cannot close it."""
from __future__ import annotations

import datetime as dt
import io
import re
import shlex
import zipfile
from typing import TYPE_CHECKING

from advisor.deploy import Bundle, bundle_for
from advisor.inputs.answers import Answers
from advisor.knowledge.load import Knowledge
from advisor.report.mdtext import md_escape as esc

if TYPE_CHECKING:
    from advisor.decide.recommendation import Recommendation
    from advisor.inputs.hardware import Hardware


def command_line(b: Bundle) -> str:
    """The server command as one shell line (every token quoted): the bundle's own `command`."""
    return b.command


def _title(b: Bundle, k: Knowledge, lang: str) -> str:
    name = k.engines[b.engine].name
    # the version is the knowledge's own label (English): quoted as such in Chinese, as cite_reason does
    return k.s("deploy_title", lang, engine=name, version=f"“{b.version}”" if lang == "zh" else b.version)


def bundle_text(b: Bundle, k: Knowledge, lang: str) -> str:
    lines = [_title(b, k, lang)]
    if b.status != "ok":
        lines.append(f"  {k.s('deploy_' + b.status, lang)}: {b.reason or ''}")
        return "\n".join(lines)
    lines += [f"  {k.s('deploy_command', lang)}: {command_line(b)}"]
    if b.nodes > 1:  # what runs where: the command above is node 0's; the others take their rank
        lines.append(f"  {k.s('deploy_layout', lang)}: {b.nodes_why}")
    lines += [f"  ! {w}" for w in b.warnings]
    for a in b.args:
        lines.append(f"    {a.flag}{'' if a.value is None else ' ' + a.value}: {a.why}")
    for e in b.env:
        lines.append(f"    {e.name}={e.value}: {e.why}")
    for name, body in b.files.items():
        lines += ["", f"----- {name} -----", body.rstrip("\n")]
    return "\n".join(lines)


def _fence(body: str) -> str:
    n = 3
    while "`" * n in body:
        n += 1
    return "`" * n


def bundle_markdown(b: Bundle, k: Knowledge, lang: str, files: tuple[str, ...] = ("launch.sh", "launch.ps1",
                                                                                      "compose.yaml", "k8s.yaml",
                                                                                      "kserve.yaml")
                    ) -> list[str]:
    """Markdown lines: the title, the reason where refused, else each value's why and the chosen files."""
    out = [f"### {esc(_title(b, k, lang))}", ""]
    if b.status != "ok":
        return out + [f"**{esc(k.s('deploy_' + b.status, lang))}**{k.s('colon', lang)}{esc(b.reason or '')}", ""]
    if b.nodes > 1:
        out.append(f"- **{esc(k.s('deploy_layout', lang))}**{k.s('colon', lang)}{esc(b.nodes_why)}")
        files = (*(f"launch-node-{r}.sh" for r in range(b.nodes)), *(f for f in files if f != "launch.sh"))
    for w in b.warnings:
        out.append(f"- {esc(w)}")
    out += ["", f"**{esc(k.s('deploy_command', lang))}**", "", *fenced(command_line(b), "sh"), ""]
    out += [*arg_table(b, k, lang), ""]
    for name in files:
        body = b.files.get(name)
        if not body:
            continue
        out += [f"**{md_value(name)}**", "", *fenced(body, file_language(name)), ""]
    return out


# ---------------------------------------------------------------- the Recommendation page and the report's appendix

#: the files in the order they are shown (launch script first, then the container and cluster files); any other file
#: a bundle carries (trtllm-serve's options file) after them
FILE_ORDER = ("launch.sh", "launch.ps1", "docker-run.sh", "compose.yaml", "k8s.yaml", "kserve.yaml")


def file_language(name: str) -> str:
    """The code fence's language of a bundle file, by its name."""
    return "sh" if name.endswith(".sh") else ("powershell" if name.endswith(".ps1") else "yaml")


_SAFE_TOKEN = re.compile(r"[A-Za-z0-9_.:/+=,@%-]{1,200}")
_CTRL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def cpu_cores(answers: Answers, hardware: Hardware | None) -> int | None:
    """The cores a CPU server gets (llama.cpp's -t): the answers' hardware block's, else this machine's usable ones
    (as `python -m advisor deploy` finds them)."""
    if answers.hardware is not None:
        return answers.hardware.cpu_cores
    return hardware.cpu.usable_cores if hardware is not None else None


def ranked_bundles(rec: Recommendation, answers: Answers, knowledge: Knowledge, lang: str,
                   hardware: Hardware | None = None) -> list[Bundle]:
    """One bundle per ranked engine, in rank order, from the recommendation's plan (pure; no I/O)."""
    if rec.plan is None:
        return []
    cores = cpu_cores(answers, hardware)
    return [bundle_for(r.engine, rec.plan, answers, knowledge, lang, cores) for r in rec.ranking
            if r.engine in rec.plan.engines]


def file_names(b: Bundle) -> list[str]:
    """The bundle's files in the order they are shown."""
    nodes = sorted((n for n in b.files if n.startswith("launch-node-")), key=lambda n: int(re.sub(r"\D", "", n) or 0))
    return nodes + [n for n in FILE_ORDER if b.files.get(n)] + \
        [n for n in b.files if n not in FILE_ORDER and n not in nodes and b.files[n]]


def mime(name: str) -> str:
    return "application/yaml" if name.endswith((".yaml", ".yml")) else "text/plain"


def zip_name(b: Bundle) -> str:
    return f"{b.engine}-deploy.zip"


def bundle_zip(b: Bundle, when: dt.datetime | None = None) -> bytes:
    """Every file of the bundle in one zip, in a folder named after the engine; the scripts executable. In memory.
    The files are dated when they were made (`when`, else now, to the minute: a page that redraws every second
    offers the same bytes), not a fixed day in the past (walk-3 L9: they read 1 Jan 2024)."""
    when = (when or dt.datetime.now()).replace(second=0, microsecond=0)
    stamp = (max(1980, when.year), when.month, when.day, when.hour, when.minute, 0)  # a zip dates from 1980 on
    buf = io.BytesIO()
    folder = f"{b.engine}-deploy"
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name in file_names(b):
            info = zipfile.ZipInfo(f"{folder}/{name}", date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o100755 if name.endswith(".sh") else 0o100644) << 16
            z.writestr(info, b.files[name])
    return buf.getvalue()


def md_value(text: str) -> str:
    """A flag or value in a Markdown table cell: a plain token (a number, "auto", a path, a flag) as code; anything
    else (a model name a user typed) escaped as literal text."""
    text = str(text)
    if _SAFE_TOKEN.fullmatch(text):
        return f"`{text}`"
    return esc(text)


def arg_rows(b: Bundle) -> list[tuple[str, str, str]]:
    """(flag, value, why) for every argument and environment variable, unescaped ("✓" for a switch)."""
    rows = [(a.flag, "✓" if a.value is None else a.value, a.why) for a in b.args]
    return rows + [(e.name, e.value, e.why) for e in b.env]


def _why(why: str, value: str) -> str:
    """A value's why, escaped, with the value itself as code where the sentence names it ("KV cache in `f16`")."""
    text = esc(why)
    if not (_SAFE_TOKEN.fullmatch(value) and re.search(r"[A-Za-z]", value) and len(value) > 1):
        return text
    return re.sub(r"(?<![\w`.\-/&])" + re.escape(value) + r"(?![\w`\-/;]|\.\w)", f"`{value}`", text)


def arg_table(b: Bundle, k: Knowledge, lang: str) -> list[str]:
    """The flag / value / why table as Markdown lines, every cell escaped."""
    out = [f"| {esc(k.s('deploy_col_flag', lang))} | {esc(k.s('deploy_col_value', lang))} | "
           f"{esc(k.s('deploy_col_why', lang))} |", "|---|---|---|"]
    for flag, value, why in arg_rows(b):
        out.append(f"| {md_value(flag)} | {md_value(value)} | {_why(why, value)} |")
    return out


def fenced(body: str, tag: str = "") -> list[str]:
    """A fenced code block holding `body` as it is (a fence longer than any backtick run in it)."""
    fence = _fence(body)
    return [f"{fence}{tag}", body.rstrip("\n"), fence]


def appendix_markdown(rec: Recommendation, answers: Answers, knowledge: Knowledge, lang: str,
                      hardware: Hardware | None = None) -> list[str]:
    """The report's appendix: the top-ranked engine's bundle (and, where that one has no server or is refused, the
    best-ranked engine that has one), with the CLI line that writes every engine's files."""
    bundles = ranked_bundles(rec, answers, knowledge, lang, hardware)
    if not bundles:
        return []
    shown = [bundles[0]]
    if bundles[0].status != "ok":
        nxt = next((b for b in bundles[1:] if b.status == "ok"), None)
        if nxt is not None:
            shown.append(nxt)
    s = lambda key, **kw: knowledge.s(key, lang, **kw)  # noqa: E731
    out = [f"## {esc(s('deploy_appendix_title'))}", "", esc(s("deploy_appendix_intro")), ""]
    out += fenced("python -m advisor deploy --answers answers.yaml --out deploy/")
    out.append("")
    for i, b in enumerate(shown):
        if i:
            out += [esc(s("deploy_appendix_next", engine=knowledge.engines[b.engine].name)), ""]
        out += bundle_markdown(b, knowledge, lang)
    return out


_SUBSTITUTED = (  # what probes.served says it put in place of the bundle's values (English, as stored) -> strings.yaml
    (re.compile(r"^model: (?P<m>.+) \(the bundle's path is the container's\)$"), "served_sub_model"),
    (re.compile(r"^address (?P<a>\S+) \(the bundle listens on 0\.0\.0\.0:its port\)$"), "served_sub_address"),
    (re.compile(r"^llama-server: this project's build of the llama\.cpp that llama-cpp-python vendors "
                r"\((?P<b>[^()]*)\)$"), "served_sub_llama"),
    (re.compile(r"^launcher: python -m vllm\.entrypoints\.openai\.api_server with the same arguments"), "served_sub_vllm"),
)


def substituted(d, knowledge: Knowledge, lang: str) -> list[str]:
    """What the served run changed from the bundle, in the reader's language (a note this table does not know stays
    as the probe wrote it)."""
    out = []
    for note in d.substituted:
        for pattern, key in _SUBSTITUTED:
            m = pattern.match(note)
            if m:
                out.append(knowledge.s(key, lang, **m.groupdict()))
                break
        else:
            out.append(note)
    return out


def deployed_markdown(name: str, d, knowledge: Knowledge, lang: str) -> list[str]:
    """A sweep whose server was started from its deployment bundle: the exact command that ran (and what was put in
    place of the bundle's own values, and why), as Markdown lines."""
    s = lambda key, **kw: knowledge.s(key, lang, **kw)  # noqa: E731
    ready = "—" if d.ready_s is None else f"{d.ready_s:,.1f}"
    out = [f"**{esc(name)}**{s('colon')}{esc(s('deploy_sweep_ran', ready=ready))}", ""]
    cmd = _CTRL.sub("?", d.command_line or " ".join(shlex.quote(x) for x in d.command))
    out += fenced(cmd or "—", "sh")
    if d.substituted:
        out += ["", esc(s("deploy_sweep_substituted", what=s("report_list_sep").join(substituted(d, knowledge, lang))))]
    return out + [""]

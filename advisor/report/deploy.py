"""A deployment bundle as text (the CLI) and as Markdown (the report's appendix): the command, why each value, and
the files. Everything in a fenced block is the file as generated; a fence long enough for its contents is chosen, so
a value cannot close it."""
from __future__ import annotations

import shlex

from advisor.deploy import Bundle
from advisor.knowledge.load import Knowledge
from advisor.report.mdtext import md_escape as esc


def command_line(b: Bundle) -> str:
    """The server command as one shell line (every token quoted)."""
    env = [f"{e.name}={shlex.quote(e.value)}" for e in b.env]
    return " ".join([*env, *(shlex.quote(x) for x in b.argv())])


def _title(b: Bundle, k: Knowledge, lang: str) -> str:
    name = k.engines[b.engine].name
    return k.s("deploy_title", lang, engine=name, version=b.version)


def bundle_text(b: Bundle, k: Knowledge, lang: str) -> str:
    lines = [_title(b, k, lang)]
    if b.status != "ok":
        lines.append(f"  {k.s('deploy_' + b.status, lang)}: {b.reason or ''}")
        return "\n".join(lines)
    lines += [f"  {k.s('deploy_command', lang)}: {command_line(b)}"]
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


def bundle_markdown(b: Bundle, k: Knowledge, lang: str, files: tuple[str, ...] = ("launch.sh", "compose.yaml",
                                                                                      "k8s.yaml", "kserve.yaml")
                    ) -> list[str]:
    """Markdown lines: the title, the reason where refused, else each value's why and the chosen files."""
    out = [f"### {esc(_title(b, k, lang))}", ""]
    if b.status != "ok":
        return out + [f"**{esc(k.s('deploy_' + b.status, lang))}:** {esc(b.reason or '')}", ""]
    for w in b.warnings:
        out.append(f"- {esc(w)}")
    out += ["", f"| {esc(k.s('deploy_col_flag', lang))} | {esc(k.s('deploy_col_value', lang))} | "
                f"{esc(k.s('deploy_col_why', lang))} |", "|---|---|---|"]
    for a in b.args:
        out.append(f"| `{esc(a.flag)}` | {esc(a.value if a.value is not None else '✓')} | {esc(a.why)} |")
    for e in b.env:
        out.append(f"| `{esc(e.name)}` | {esc(e.value)} | {esc(e.why)} |")
    out.append("")
    for name in files:
        body = b.files.get(name)
        if not body:
            continue
        fence = _fence(body)
        lang_tag = "sh" if name.endswith(".sh") else "yaml"
        out += [f"**{esc(name)}**", "", f"{fence}{lang_tag}", body.rstrip("\n"), fence, ""]
    return out

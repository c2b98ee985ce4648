"""Plain-text renderings for the CLI (en/zh)."""
from __future__ import annotations

from advisor.decide.recommendation import Recommendation
from advisor.inputs.hardware import Hardware
from advisor.knowledge.load import Knowledge


def _delta(d: float | None) -> str:
    return "" if d is None else f"{d:+g}"


def hardware_text(hw: Hardware, knowledge: Knowledge, lang: str = "en") -> str:
    s = knowledge.s
    lines = [f"{s('hardware_title', lang)} ({s('hardware_detected', lang)})"]
    if hw.gpus:
        for g in hw.gpus:
            mem = f", {g.memory_total_mb / 1024:.1f} GiB ({g.memory_free_mb / 1024:.1f} free)" if g.memory_total_mb else ""
            cc = f", compute capability {g.compute_capability}" if g.compute_capability else ""
            lines.append(f"  GPU {g.index}: {g.name}{mem}{cc}")
        if hw.driver_version:
            lines.append(f"  driver {hw.driver_version}, CUDA {hw.cuda_version or '?'}")
    else:
        lines.append(f"  GPU: {s('no_gpu', lang)}" + (f" — {hw.nvml_error}" if hw.nvml_error else ""))
    c = hw.cpu
    lines.append(f"  CPU: {c.model} ({c.arch}), {c.physical_cores} physical / {c.logical_cores} logical cores, "
                 f"{c.usable_cores} usable")
    lines.append(f"  CPU flags: {' '.join(c.flags) or '-'}")
    lines.append(f"  RAM: {hw.ram_total_mb / 1024:.1f} GiB total, {hw.ram_available_mb / 1024:.1f} GiB available")
    lines.append(f"  OS: {hw.os} {hw.os_release}" + (" (Apple Silicon)" if hw.apple_silicon else ""))
    lines.append(f"{s('engines_installed', lang)}:")
    for e in hw.engines:
        state = e.version if e.installed else f"{s('not_installed', lang)} — {e.install_hint}"
        lines.append(f"  {e.engine:13} {state}")
    return "\n".join(lines)


def plan_summary(p, knowledge: Knowledge, lang: str = "en") -> str:
    from advisor.report.plan import device_label, fits_word

    def n(x, fmt="{:,.1f}"):
        return "—" if x is None else fmt.format(x)

    return knowledge.s("plan_summary", lang, device=device_label(p, knowledge, lang), prec=p.precision_label,
                       total=n(p.total_gib), avail=n(p.available_gib), fits=fits_word(p, knowledge, lang), tps=n(p.decode_tps_upper_bound),
                       ttft=n(p.ttft_ms_lower_bound, "{:,.0f}"))


def recommendation_text(rec: Recommendation, knowledge: Knowledge, lang: str = "en") -> str:
    s = knowledge.s
    out = []
    if rec.plan is not None:  # what the model was planned as (an unknown name, a generic sketch, a context past its window)
        out.extend(f"{s('model_notes', lang)}: {n}" for n in rec.plan.notes)
        if out:
            out.append("")
    short = rec.nothing_fits()
    if short:
        out.append(s("nothing_fits", lang))
        out.extend(f"- {name}: " + (s("nothing_fits_ram", lang, gib=ram) if ram else fix or s("nothing_fits_none", lang))
                   for name, fix, ram in short)
        out.append("")
    out.append(f"{s('ranking_title', lang)}:")
    for i, r in enumerate(rec.ranking, 1):
        out.append(f"{i}. {r.name} — {s('score', lang)} {r.score:g}")
        if r.plan is not None:
            out.append("     " + plan_summary(r.plan, knowledge, lang))
        for reason in r.reasons:
            out.append(f"     {_delta(reason.delta):>6}  {reason.text}  [{reason.rule}; {reason.source}]")
    if rec.excluded:
        out.append(f"\n{s('excluded_title', lang)}:")
        for x in rec.excluded:
            out.append(f"- {x.name}")
            for reason in x.reasons:
                out.append(f"     {reason.text}  [{reason.rule}; {reason.source}]")
    out.append(f"\n{s('flips_title', lang)}:")
    if rec.flip_note:
        out.append(f"- {rec.flip_note}")
    out.extend(f"- {f.text}" for f in rec.flips)
    return "\n".join(out)

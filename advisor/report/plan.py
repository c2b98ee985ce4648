"""The plan as rows, plain text (CLI) and Markdown (report); one table definition for all three."""
from __future__ import annotations

from advisor.evidence.probe_check import ProbeCheck
from advisor.knowledge.load import Knowledge
from advisor.planner.types import EnginePlan, Plan
from advisor.report.mdtext import fold, md_escape


def _n(x: float | int | None, fmt: str = "{:,.1f}") -> str:
    return "—" if x is None else fmt.format(x)


def _sig(x: float | None) -> str:
    """ms and tok/s: one decimal, two significant digits below 1 (a 0.04 ms bound is not "0.0")."""
    return "—" if x is None else f"{x:,.1f}" if abs(x) >= 1 or x == 0 else f"{x:.2g}"


def _usd(x: float | None) -> str:
    if x is None:
        return "—"
    return f"${x:,.2f}" if x >= 0.1 else f"${x:.3g}"


def fits_word(p: EnginePlan, knowledge: Knowledge, lang: str) -> str:
    key = {True: "plan_fits_yes", False: "plan_fits_no", None: "plan_fits_unknown"}[p.fits]
    word = knowledge.s(key, lang)
    return f"{word} ({p.parallelism})" if p.parallelism and p.fits else word


def device_label(p, knowledge: Knowledge, lang: str) -> str:
    """Where an engine's plan runs, in the reader's language ("GPU ×2", "CPU", "cannot run")."""
    device = p.accelerator if p.device == "gpu" and p.accelerator in ("npu", "tpu") else p.device
    return knowledge.s(f"plan_device_{device}", lang) + (f" ×{p.gpus_used}" if p.gpus_used > 1 else "")


def plan_rows(plan: Plan, knowledge: Knowledge, lang: str) -> tuple[list[str], list[list[str]]]:
    """The plan table: the deciding columns first (engine, fits, max concurrency, decode and TTFT bounds, memory
    needed and available), the breakdown after them, and the long text ("how it runs") last."""
    header = knowledge.s("plan_table_cols", lang).split("|")
    rows = []
    for e, p in plan.engines.items():
        fits = knowledge.s({True: "plan_fits_yes", False: "plan_fits_no", None: "plan_fits_unknown"}[p.fits], lang)
        rows.append([knowledge.engines[e].name, fits, _n(p.max_concurrency, "{:,}"), _sig(p.decode_tps_upper_bound),
                     _sig(p.ttft_ms_lower_bound), _usd(p.usd_per_m_tokens_at_least), _n(p.total_gib, "{:,.2f}"),
                     _n(p.available_gib, "{:,.2f}"),
                     _n(p.max_context_tokens, "{:,}"), _n(p.weights_gib, "{:,.2f}"), _n(p.kv_gib, "{:,.2f}"),
                     _n(p.overhead_gib, "{:,.2f}"), device_label(p, knowledge, lang),
                     p.precision_label, p.parallelism or "—"])
    return header, rows


PLAN_KEY_COLUMNS = 9  # plan_markdown prints the first 9 columns as one table, engine + the rest as a second


def header_lines(plan: Plan, knowledge: Knowledge, lang: str) -> list[str]:
    s, m, t = knowledge.s, plan.model, plan.target
    gpus = (f"{t.gpu_count} × {t.gpu_name or t.gpu_vendor}"
            + (f" ({t.gpu_memory_gib:g} GiB" + (f", {t.gpu_bandwidth_gb_s:g} GB/s" if t.gpu_bandwidth_gb_s else "")
               + ")" if t.gpu_memory_gib else "")) if t.gpu_count else s("no_gpu", lang)
    cpu_bw = (f"{t.cpu_bandwidth_gb_s:g} GB/s ({s('plan_bw_measured', lang)})" if t.cpu_bandwidth_gb_s else "—")
    first = next(iter(plan.engines.values()))
    return [
        s("plan_model_line", lang, name=m.name, params=f"{m.params_b:.3g}", active=f"{m.active_params_b:.3g}",
          layers=m.layers, ctx=f"{m.max_context:,}", source=m.source,
          kv=s("plan_model_kv_mla", lang, rank=m.kv_lora_rank, rope=m.qk_rope_head_dim, heads=m.attention_heads)
          if m.kv_lora_rank else s("plan_model_kv", lang, kv_heads=m.kv_heads, head_dim=m.head_dim)),
        s("plan_target_line", lang, src=s(f"plan_src_{t.source}", lang), gpus=gpus, ram=f"{t.ram_gib:.1f} GiB" if t.ram_gib else "—",
          cpu_bw=cpu_bw),
        s("plan_workload_line", lang, conc=first.concurrency, ctx=f"{first.context_tokens:,}",
          prompt=first.prompt_tokens, prec=plan.asked_precision or "—"),
    ] + [model_kind_line(m, knowledge, lang)] + (
        [topology_line(t, knowledge, lang)] if t.gpu_count > 1 or t.nodes > 1 or (t.gpu_count and t.unified_memory)
        else []) + plan.notes


def shape_parts(m, knowledge: Knowledge, lang: str) -> dict[str, str]:
    """The attention kind, experts and sliding window of a model, as sentence parts (for the page and the report)."""
    s = knowledge.s
    moe = (s("shape_moe", lang, active=m.moe_active_experts, experts=m.moe_experts)
           if m.moe_experts and m.moe_active_experts else "")
    window = (s("shape_window", lang, n=m.sliding_layers, layers=m.layers, window=f"{m.sliding_window:,}")
              if m.sliding_window and m.sliding_layers else "")
    attn = s(f"attn_{m.attention_kind}", lang)
    if getattr(m, "index_topk", None):  # DeepSeek Sparse Attention: what the KV read and the prompt's cost assume
        attn += s("shape_sparse", lang, topk=f"{m.index_topk:,}")
    return dict(attn=attn, moe=moe, window=window)


def file_shape_text(m, knowledge: Knowledge, lang: str) -> str:
    """What a model file (an uploaded config.json, a GGUF, a model folder) gives the plan, said where it was given
    (walk-3 L6: the checklist said only "Read nova-moe-config.json", and kept the previous model's size in view):
    parameters and active ones, layers, experts, KV heads and the architecture class it names."""
    s = knowledge.s
    moe = (s("ui_file_shape_moe", lang, experts=m.moe_experts, active=m.moe_active_experts)
           if m.moe_experts and m.moe_active_experts else "")
    kv = (s("plan_model_kv_mla", lang, rank=m.kv_lora_rank, rope=m.qk_rope_head_dim, heads=m.attention_heads)
          if m.kv_lora_rank else s("ui_file_shape_kv", lang, kv_heads=m.kv_heads, heads=m.attention_heads))
    arch = ", ".join(m.hf_architectures)[:200]
    return s("ui_file_shape", lang, params=f"{m.params_b:.3g}", active=f"{m.active_params_b:.3g}", layers=m.layers,
             moe=moe, kv=kv, arch=s("ui_file_shape_arch", lang, arch=arch) if arch else "")


def model_kind_line(m, knowledge: Knowledge, lang: str) -> str:
    return knowledge.s("plan_model_kind_line", lang, modality=knowledge.s(f"mod_{m.modality}", lang),
                       **shape_parts(m, knowledge, lang))


def topology_line(t, knowledge: Knowledge, lang: str) -> str:
    s = knowledge.s
    per = t.gpus_per_node or t.gpu_count
    ic = (s(f"ic_{t.interconnect}", lang) if t.interconnect and knowledge.strings.get(f"ic_{t.interconnect}")
          else "—") if per > 1 or t.nodes > 1 else ""
    return s("plan_topology_line", lang, nodes=t.nodes, per=per, kind=s(f"plan_kind_{t.accelerator}", lang),
             interconnect=f" ({ic})" if ic else "", unified=s("plan_unified_yes", lang) if t.unified_memory else "")


def plan_text(plan: Plan, knowledge: Knowledge, lang: str = "en", checks: list[ProbeCheck] | None = None) -> str:
    s = knowledge.s
    out = [s("plan_title", lang), *("  " + x for x in header_lines(plan, knowledge, lang)), ""]
    header, rows = plan_rows(plan, knowledge, lang)
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, *rows]:
        out.append("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    for e, p in plan.engines.items():
        if p.options:
            out.append(f"\n{s('plan_options_for', lang, engine=knowledge.engines[e].name)}:")
            out.extend(f"  - {o.text}" for o in p.options)
    for e, p in plan.engines.items():
        out.append(f"\n{s('plan_assumptions_for', lang, engine=knowledge.engines[e].name)}:")
        out.extend(f"  - {a}" for a in p.assumptions)
    if checks:
        out.append(f"\n{s('check_title', lang)}:")
        out.extend(f"  - {c.text}" for c in checks)
    return "\n".join(out)


def plan_markdown(plan: Plan, knowledge: Knowledge, lang: str, checks: list[ProbeCheck] | None = None,
                  focus: str | None = None) -> str:
    """The report section. focus: the engine whose assumptions are listed in full (the top one).
    The table is split in two (the deciding columns, then the breakdown) so that each fits an A4 page."""
    s = knowledge.s
    out = [f"## {s('plan_title', lang)}", ""]
    out += [f"- {md_escape(x)}" for x in header_lines(plan, knowledge, lang)] + [""]
    header, rows = plan_rows(plan, knowledge, lang)
    k = PLAN_KEY_COLUMNS
    for cols in (list(range(k)), [0, *range(k, len(header))]):
        out.append("| " + " | ".join(md_escape(header[i]) for i in cols) + " |")
        out.append("|" + "---|" * len(cols))
        out += ["| " + " | ".join(md_escape(fold(r[i])) for i in cols) + " |" for r in rows]
        out.append("")
    for e, p in plan.engines.items():
        if p.options:
            out += [f"**{md_escape(s('plan_options_for', lang, engine=knowledge.engines[e].name))}"
                    f"{s('colon', lang).strip()}**", ""]
            out += [f"- {md_escape(o.text)}" for o in p.options] + [""]
    if focus and focus in plan.engines:
        out += [f"**{md_escape(s('plan_assumptions_for', lang, engine=knowledge.engines[focus].name))}"
                f"{s('colon', lang).strip()}**", ""]
        out += [f"- {md_escape(a)}" for a in plan.engines[focus].assumptions] + [""]
    if checks:
        out.append(f"### {s('check_title', lang)}")
        out += [f"- {md_escape(c.text)}" for c in checks] + [""]
    return "\n".join(out)

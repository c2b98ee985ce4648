"""Plotly figures shared by the UI and the report (PNG export for the PDF via kaleido)."""
from __future__ import annotations

import plotly.graph_objects as go

from advisor.planner.capacity import concurrency_curve
from advisor.planner.probe_check import ProbeCheck
from advisor.planner.types import Plan
from advisor.recommendation import Recommendation
from probes.result import ProbeResult

def _t(key: str, lang: str) -> str:
    from advisor.knowledge import load_knowledge

    return load_knowledge().s(key, lang)


def memory_chart(plan: Plan, names: dict[str, str], lang: str = "en") -> go.Figure:
    """Stacked weights / KV / overhead per engine, with the memory available to it as a marker."""
    engines = list(plan.engines)[::-1]
    ys = [names.get(e, e) for e in engines]
    fig = go.Figure()
    for field, color in (("weights_gib", "#264653"), ("kv_gib", "#2a9d8f"), ("overhead_gib", "#e9c46a")):
        fig.add_trace(go.Bar(y=ys, x=[getattr(plan.engines[e], field) for e in engines], orientation="h",
                             name=_t(f"chart_{field}", lang), marker_color=color))
    avail = [plan.engines[e].available_gib for e in engines]
    fig.add_trace(go.Scatter(y=ys, x=avail, mode="markers", name=_t("chart_available", lang),
                             marker=dict(symbol="line-ns", size=26, line=dict(width=3, color="#e63946"))))
    fig.update_layout(barmode="stack", title=_t("chart_memory_title", lang), height=120 + 45 * len(ys),
                      margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h"))
    return fig


def concurrency_chart(plan: Plan, names: dict[str, str], lang: str = "en") -> go.Figure:
    fig = go.Figure()
    for e, p in plan.engines.items():
        pts = concurrency_curve(p, plan.model.max_context)
        if pts:
            fig.add_trace(go.Scatter(x=[c for c, _ in pts], y=[n for _, n in pts], mode="lines+markers",
                                     name=names.get(e, e)))
    fig.update_layout(title=_t("chart_concurrency_title", lang), height=340,
                      xaxis=dict(title=_t("chart_context_tokens", lang), type="log"),
                      yaxis=dict(title=_t("chart_sequences", lang), type="log"), margin=dict(l=10, r=10, t=40, b=10))
    return fig


def roofline_chart(plan: Plan | None, checks: list[ProbeCheck], names: dict[str, str], lang: str = "en") -> go.Figure:
    """Bound per engine from the plan (if given); probes next to the bound of their own rebuilt plan."""
    fig = go.Figure()
    if plan is not None:
        es = [e for e, p in plan.engines.items() if p.decode_tps_upper_bound]
        fig.add_trace(go.Bar(x=[names.get(e, e) for e in es], y=[plan.engines[e].decode_tps_upper_bound for e in es],
                             name=_t("chart_decode_bound", lang), marker_color="#adb5bd"))
    if checks:
        fig.add_trace(go.Bar(x=[names.get(c.engine, c.engine) for c in checks],
                             y=[c.decode_tps_roofline for c in checks], name=_t("chart_decode_bound", lang)
                             + " (probe)", marker_color="#8ab"))
        fig.add_trace(go.Bar(x=[names.get(c.engine, c.engine) for c in checks], y=[c.decode_tps_measured for c in checks],
                             name=_t("chart_measured", lang), marker_color="#2a9d8f",
                             text=[f"{c.roofline_pct:.0f}%" if c.roofline_pct else "" for c in checks]))
    fig.update_layout(barmode="group", title=_t("chart_roofline_title", lang),
                      height=340, yaxis=dict(type="log"), margin=dict(l=10, r=10, t=40, b=10),
                      legend=dict(orientation="h"))
    return fig


def ranking_chart(rec: Recommendation, lang: str = "en") -> go.Figure:
    names = [r.name for r in rec.ranking][::-1]
    scores = [r.score for r in rec.ranking][::-1]
    fig = go.Figure(go.Bar(x=scores, y=names, orientation="h", text=[f"{s:g}" for s in scores],
                           marker_color=["#2a9d8f" if i == len(names) - 1 else "#8ab" for i in range(len(names))]))
    fig.update_layout(title="Score (0–100)" if lang == "en" else "得分（0–100）", xaxis_range=[0, 100],
                      height=80 + 45 * max(1, len(names)), margin=dict(l=10, r=10, t=40, b=10))
    return fig


def latency_chart(results: list[ProbeResult], metric: str = "ttft", lang: str = "en") -> go.Figure:
    fig = go.Figure()
    for r in results:
        if r.status != "ok":
            continue
        if metric == "ttft":
            xs = [(q.first_token_s - q.submitted_s) * 1000 for q in r.requests if q.first_token_s]
        else:
            xs = [(b - a) * 1000 for q in r.requests for a, b in zip(q.token_times_s, q.token_times_s[1:])]
        fig.add_trace(go.Box(x=xs, name=r.engine, boxpoints="outliers"))
    title = {"ttft": ("TTFT per request (ms)", "每个请求的首 token 延迟（毫秒）"),
             "itl": ("Inter-token latency (ms)", "token 间延迟（毫秒）")}[metric]
    fig.update_layout(title=title[1] if lang == "zh" else title[0], height=320, margin=dict(l=10, r=10, t=40, b=10))
    return fig


def throughput_chart(results: list[ProbeResult], lang: str = "en") -> go.Figure:
    ok = [r for r in results if r.status == "ok"]
    fig = go.Figure(go.Bar(x=[r.engine for r in ok], y=[r.output_tps_total or 0 for r in ok],
                           text=[f"{(r.output_tps_total or 0):.1f}" for r in ok]))
    fig.update_layout(title="Total output tokens/s" if lang == "en" else "总输出 token/秒", height=320,
                      margin=dict(l=10, r=10, t=40, b=10))
    return fig


def to_png(fig: go.Figure, width: int = 900, height: int | None = None) -> bytes | None:
    """PNG through kaleido + the system's chromium; None when no browser is available (the report says so)."""
    try:
        return fig.to_image(format="png", width=width, height=height or fig.layout.height or 400, scale=1.5)
    except Exception:
        return None

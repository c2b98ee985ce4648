"""Plotly figures shared by the UI and the report (PNG export for the PDF via kaleido)."""
from __future__ import annotations

import plotly.graph_objects as go

from advisor.recommendation import Recommendation
from probes.result import ProbeResult


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

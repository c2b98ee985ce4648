"""Plotly figures shared by the UI and the report (PNG export for the PDF via kaleido).

Every figure is styled explicitly, not by the plotly template (kaleido's export may use another one): margins
with automargin on both axes, titles and axis titles from knowledge/strings.yaml, a distinct colour *and* marker,
dash or pattern per series, and axes from zero unless a log axis says "(log scale)" in its title.
"""
from __future__ import annotations

import plotly.graph_objects as go

from advisor.decide.recommendation import Recommendation
from advisor.evidence.probe_check import ProbeCheck
from advisor.knowledge.schema import ENGINE_IDS
from advisor.planner.capacity import concurrency_curve
from advisor.planner.types import Plan
from probes.result import ProbeResult

# Okabe-Ito (colour-blind safe, without its yellow), then a few more; markers/dashes/patterns tell series
# apart in grey print too.
COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#8C564B", "#7F7F7F"]
MARKERS = ["circle", "square", "diamond", "triangle-up", "x", "star", "cross", "triangle-down", "pentagon"]
DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot", "solid", "dash", "dot"]
PATTERNS = ["", "/", "x", "\\", ".", "-", "+", "|", ""]
ENGINE_ORDER = [*ENGINE_IDS, "endpoint"]
FONT = "Noto Sans, Noto Sans CJK SC, WenQuanYi Micro Hei, DejaVu Sans, Arial, sans-serif"
PNG_WIDTH = 820  # px; the PDF places it across the A4 text width (~180 mm): 13 px type prints at ~8 pt
# What one chart draws at most (a report of 10,000 runs, or a sweep file of 1,024 levels with every request's
# timestamps, took minutes and gigabytes in the browser's export): beyond these, an even sample, said in the report
BOX_VALUES_MIN = 20_000  # values per box in a latency chart when there are many boxes
CHART_VALUES = 400_000  # values per latency chart: one run's box keeps up to this many
MAX_SWEEPS_CHARTED = 16
MAX_LEVELS_CHARTED = 64  # per sweep: spread over its range, the lowest, the highest and its capacity kept
MAX_TICKS = 24


def spread(items: list, n: int) -> list:
    """At most n of items, evenly spread over them in order, the first and the last kept: a sample with the shape
    of the whole (the items themselves when there are no more than n)."""
    items = list(items)
    if len(items) <= n:
        return items
    if n <= 1:
        return items[:max(n, 0)]
    step = (len(items) - 1) / (n - 1)
    return [items[round(i * step)] for i in range(n)]


def box_cap(boxes: int) -> int:
    """How many values each box of a latency chart of `boxes` boxes draws."""
    return max(BOX_VALUES_MIN, CHART_VALUES // max(boxes, 1))


def sample_requests(r: ProbeResult, max_values: int) -> ProbeResult:
    """The run with no more requests than a chart of its values needs: whole requests, evenly spread, so that
    they hold at most `max_values` timestamps. The run itself when it holds fewer (its figures are untouched:
    they were computed from every request when it was measured)."""
    n = sum(1 + len(q.token_times_s) for q in r.requests)
    if n <= max_values:
        return r
    keep = max(1, len(r.requests) * max_values // n)
    return r.model_copy(update={"requests": spread(r.requests, keep)})


def _t(key: str, lang: str, **kw) -> str:
    from advisor.knowledge.load import load_knowledge

    return load_knowledge().s(key, lang, **kw)


def _rgba(hex_colour: str, alpha: float) -> str:
    """"#0072B2" at an opacity, for a band's fill in its curve's colour."""
    h = hex_colour.lstrip("#")
    return f"rgba({int(h[0:2], 16)},{int(h[2:4], 16)},{int(h[4:6], 16)},{alpha})"


def _i(engine: str, fallback: int) -> int:
    """A stable style index per engine (vLLM is always the same colour), else by position."""
    return ENGINE_ORDER.index(engine) if engine in ENGINE_ORDER else fallback


def _wrap(label: str, width: int = 22) -> str:
    """A long engine name on two lines ("PyTorch + Hugging Face<br>transformers"): a legend or category axis of a
    half-width browser column keeps its room for the data."""
    if len(label) <= width or " " not in label:
        return label
    spaces = [i for i, ch in enumerate(label) if ch == " "]
    cut = min(spaces, key=lambda i: abs(i - len(label) / 2))
    return label[:cut] + "<br>" + label[cut + 1:]


def _unique(labels: list[str]) -> list[str]:
    """Plotly merges traces/categories of the same name: make every label distinct."""
    seen: dict[str, int] = {}
    out = []
    for lab in labels:
        seen[lab] = seen.get(lab, 0) + 1
        out.append(lab if seen[lab] == 1 else f"{lab} ({seen[lab]})")
    return out


def _labels(results: list[ProbeResult], labels: list[str] | None) -> list[str]:
    if labels is not None and len(labels) != len(results):
        raise ValueError(f"labels: {len(labels)} given for {len(results)} results")
    return _unique(list(labels) if labels is not None else [r.engine for r in results])


def _axis(title: str, lang: str, log: bool = False, **kw) -> dict:
    ax = dict(title=dict(text=_t("chart_log_scale", lang, title=title) if log else title, standoff=8),
              automargin=True, showline=True, linecolor="#444", ticks="outside", gridcolor="#e5e5e5",
              zeroline=not log, zerolinecolor="#999", color="#222", **kw)
    if log:
        ax["type"] = "log"
    else:
        ax.setdefault("rangemode", "tozero")
        ax["type"] = ax.get("type", "linear")
    return ax


def _text_px(text: str, size: float) -> float:
    """A generous width estimate (CJK glyphs are square, Latin ones about 0.6 em)."""
    return sum(size if ord(ch) > 0x2E80 else size * 0.62 for ch in str(text))


MIN_HEIGHT = 320  # px: on a phone (390 px wide) a chart keeps room for its data
AXIS_BELOW_PX = 72  # the x axis's tick labels and title under the plot area (~48 px): the legend starts below them,
# with room to spare where a phone wraps it into more rows than counted (the plot area then shrinks a little)
LEGEND_ROW_PX = 22
LEGEND_WIDTH_PX = 560  # the plot-area width a legend's rows are counted for (a PNG's; a phone has more rows)
TITLE_MAX_PX = 380  # a title wider than this at 15 px is set at 13 px, so a phone (~358 px of chart) shows it


def _legend_px(names: list[str], width: float = LEGEND_WIDTH_PX) -> int:
    """The height of a horizontal legend of these entries (symbol, gap and text each), wrapped at `width`."""
    px, used, row_lines = 8, 0.0, 1
    for name in names:
        lines = name.split("<br>")
        w = max(_text_px(line, 12) for line in lines) + 48
        if used and used + w > width:
            px += LEGEND_ROW_PX * row_lines
            used, row_lines = 0.0, 1
        used += w
        row_lines = max(row_lines, len(lines))
    return px + LEGEND_ROW_PX * row_lines


def _style(fig: go.Figure, title: str, x: dict, y: dict, height: int, legend: bool = True) -> go.Figure:
    """Our layout on every chart. The legend is a horizontal row under the x axis, left-aligned, not a column at
    the right: on a phone a right legend took half the width and covered the values. The height (at least
    MIN_HEIGHT) grows by the legend's rows, so the plot area keeps its size; the title has the top margin to itself
    (the pages also hide Plotly's mode bar, which covered it)."""
    names = [t.name for t in fig.data if t.name and t.showlegend is not False] if legend else []
    y_title = (y.get("title") or {}).get("text") or ""
    if any(ord(ch) > 0x2E80 for ch in y_title):
        # a CJK axis title reads across, above the axis: Plotly can only turn a y title on its side, where Chinese
        # characters lie sideways one under the other
        y = {**y, "title": {**y["title"], "text": ""}}
        fig.add_annotation(text=y_title, xref="paper", yref="paper", x=0, y=1, xanchor="left", yanchor="bottom",
                           showarrow=False, font=dict(size=13, color="#222"), yshift=4)
        fig.update_layout(meta={"y_title": y_title})  # where axis_titles finds it
    legend_px = _legend_px(names) if names else 0
    title_size = 15 if _text_px(title, 15) <= TITLE_MAX_PX else 13  # a long title still fits a phone's width
    top = 52
    height = max(int(height), MIN_HEIGHT) + legend_px
    # the legend's top sits AXIS_BELOW_PX under the plot area: y is a fraction of the plot area's height, which is
    # what is left once the legend has pushed the bottom margin (autoexpand) down to the axis and itself
    plot_px = max(80, height - top - AXIS_BELOW_PX - legend_px)
    fig.update_layout(
        template="none", paper_bgcolor="white", plot_bgcolor="white",
        font=dict(family=FONT, size=13, color="#222"),
        title=dict(text=title, x=0.01, xref="container", xanchor="left", y=1 - 10 / height, yref="container",
                   yanchor="top", font=dict(size=title_size)),
        height=height, margin=dict(l=80, r=30, t=top, b=70, pad=4, autoexpand=True),
        xaxis=x, yaxis=y, showlegend=bool(names),
        legend=dict(orientation="h", x=0, xanchor="left", y=-AXIS_BELOW_PX / plot_px, yanchor="top",
                    bgcolor="rgba(255,255,255,0.8)", font=dict(size=12), traceorder="normal"),
    )
    return fig


def axis_titles(fig: go.Figure) -> tuple[str, str]:
    """(x, y) axis titles as a reader sees them, the y one also where _style set it across above the axis."""
    meta = fig.layout.meta if isinstance(fig.layout.meta, dict) else {}
    return fig.layout.xaxis.title.text or "", fig.layout.yaxis.title.text or meta.get("y_title") or ""


def _no_data(fig: go.Figure, lang: str) -> None:
    fig.add_annotation(text=_t("chart_no_data", lang), xref="paper", yref="paper", x=0.5, y=0.5, showarrow=False)


def memory_chart(plan: Plan, names: dict[str, str], lang: str = "en") -> go.Figure:
    """Stacked weights / KV / overhead per engine, with the memory available to it as a marker."""
    engines = list(plan.engines)[::-1]
    ys = [_wrap(names.get(e, e)) for e in engines]
    fig = go.Figure()
    for i, field in enumerate(("weights_gib", "kv_gib", "overhead_gib")):
        fig.add_trace(go.Bar(y=ys, x=[getattr(plan.engines[e], field) for e in engines], orientation="h",
                             name=_t(f"chart_{field}", lang),
                             marker=dict(color=COLORS[[0, 2, 4][i]], pattern=dict(shape=PATTERNS[i], fillmode="overlay",
                                                                                 fgcolor="white", size=7),
                                         line=dict(color="white", width=0.5))))
    avail = [plan.engines[e].available_gib for e in engines]
    fig.add_trace(go.Scatter(y=ys, x=avail, mode="markers", name=_t("chart_available", lang),
                             marker=dict(symbol="line-ns", size=28, color=COLORS[1], line=dict(width=4, color=COLORS[1]))))
    fig.update_layout(barmode="stack", bargap=0.35)
    return _style(fig, _t("chart_memory_title", lang), _axis(_t("chart_axis_gib", lang), lang),
                  _axis(_t("chart_axis_engine", lang), lang, type="category"), height=150 + 48 * len(ys))


def _pow2_ticks(lo: float, hi: float) -> tuple[list[int], list[str]]:
    vals, v = [], 1
    while v <= hi * 1.01:
        if v >= lo * 0.99:
            vals.append(v)
        v *= 2
    return vals, [f"{v // 1024}k" if v >= 1024 else str(v) for v in vals]


def _125_ticks(lo: float, hi: float) -> list[float]:
    vals, dec = [], 1.0
    while dec <= hi * 10:
        vals += [m * dec for m in (1, 2, 5) if lo / 1.01 <= m * dec <= hi * 1.01 * 2]
        dec *= 10
    return vals


def concurrency_chart(plan: Plan, names: dict[str, str], lang: str = "en") -> go.Figure:
    fig = go.Figure()
    xs_all, ys_all = [], []
    for n, (e, p) in enumerate(plan.engines.items()):
        pts = concurrency_curve(p, plan.model.max_context)
        if not pts:
            continue
        i = _i(e, n)
        xs, ys = [c for c, _ in pts], [k for _, k in pts]
        xs_all += xs
        ys_all += ys
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name=_wrap(names.get(e, e)),
                                 line=dict(color=COLORS[i], dash=DASHES[i], width=2.5),
                                 marker=dict(color=COLORS[i], symbol=MARKERS[i], size=9)))
    xt, xl = _pow2_ticks(min(xs_all or [512]), max(xs_all or [4096]))
    yt = _125_ticks(min(ys_all or [1]), max(ys_all or [10]))
    if not xs_all:
        _no_data(fig, lang)
    return _style(fig, _t("chart_concurrency_title", lang),
                  _axis(_t("chart_context_tokens", lang), lang, log=True, tickvals=xt, ticktext=xl),
                  _axis(_t("chart_sequences", lang), lang, log=True, tickvals=yt,
                        ticktext=[f"{v:g}" for v in yt]), height=380)


def roofline_chart(plan: Plan | None, checks: list[ProbeCheck], names: dict[str, str], lang: str = "en") -> go.Figure:
    """Bound per engine from the plan (if given); probes next to the bound of their own rebuilt plan.
    Horizontal bars: long engine names stay readable on the category axis."""
    fig = go.Figure()
    values = []
    bar = dict(orientation="h", textposition="outside", cliponaxis=False)
    cats: list[str] = []
    if plan is not None:
        es = [e for e, p in plan.engines.items() if p.decode_tps_upper_bound]
        xs = [plan.engines[e].decode_tps_upper_bound for e in es]
        values += xs
        cats += [_wrap(names.get(e, e)) for e in es]
        fig.add_trace(go.Bar(y=[_wrap(names.get(e, e)) for e in es], x=xs, name=_t("chart_bound_plan", lang),
                             text=[f"{v:,.1f}" for v in xs], marker=dict(color="#9aa5b1"), **bar))
    if checks:
        ys = _unique([_wrap(names.get(c.engine, c.engine)) for c in checks])
        cats += [y for y in ys if y not in cats]
        roof = [c.decode_tps_roofline for c in checks]
        meas = [c.decode_tps_measured for c in checks]
        values += [v for v in roof + meas if v]
        fig.add_trace(go.Bar(y=ys, x=roof, name=_t("chart_bound_probe", lang),
                             text=[f"{v:,.1f}" if v else "" for v in roof],
                             marker=dict(color=COLORS[5], pattern=dict(shape="/", fgcolor="white", fillmode="overlay")), **bar))
        fig.add_trace(go.Bar(y=ys, x=meas, name=_t("chart_measured_tps", lang),
                             text=[f"{c.decode_tps_measured:,.1f} ({c.roofline_pct:.0f}%)" if c.roofline_pct
                                   and c.decode_tps_measured else "" for c in checks],
                             marker=dict(color=COLORS[2], pattern=dict(shape="x", fgcolor="white", fillmode="overlay")), **bar))
    pos = [v for v in values if v and v > 0]
    log = bool(pos) and max(pos) / min(pos) > 200  # bars that differ by > 200× only read on a log axis
    if log:
        xt = [10.0 ** k for k in range(-2, 7) if min(pos) / 10 <= 10.0 ** k <= max(pos) * 10]
        x = _axis(_t("chart_axis_tps_seq", lang), lang, log=True, tickvals=xt, ticktext=[f"{v:g}" for v in xt])
    else:
        x = _axis(_t("chart_axis_tps_seq", lang), lang, range=[0, (max(pos) if pos else 1) * 1.22])
    if not pos:
        _no_data(fig, lang)
    fig.update_layout(barmode="group", bargap=0.25, bargroupgap=0.05)
    n_bars = len(cats) * max(1, len(fig.data))
    return _style(fig, _t("chart_roofline_title", lang), x,
                  _axis(_t("chart_axis_engine", lang), lang, type="category", autorange="reversed",
                        categoryorder="array", categoryarray=cats),
                  height=170 + 22 * max(5, n_bars))


def ranking_chart(rec: Recommendation, lang: str = "en") -> go.Figure:
    names = [_wrap(r.name) for r in rec.ranking][::-1]
    scores = [r.score for r in rec.ranking][::-1]
    top = len(names) - 1
    fig = go.Figure(go.Bar(x=scores, y=names, orientation="h", text=[f"{s:g}" for s in scores],
                           textposition="outside", cliponaxis=False, showlegend=False,
                           marker=dict(color=[COLORS[2] if i == top else "#9aa5b1" for i in range(len(names))],
                                       pattern=dict(shape=["" if i == top else "/" for i in range(len(names))],
                                                    fgcolor="white", fillmode="overlay"))))
    return _style(fig, _t("chart_ranking_title", lang), _axis(_t("score", lang), lang, range=[0, 105]),
                  _axis(_t("chart_axis_engine", lang), lang, type="category"),
                  height=150 + 45 * max(1, len(names)), legend=False)


def latency_chart(results: list[ProbeResult], metric: str = "ttft", lang: str = "en",
                  labels: list[str] | None = None) -> go.Figure:
    """One box per ok run. labels: one per result (same order), e.g. "#12 vllm"; default: the engine."""
    fig = go.Figure()
    names = _labels(results, labels)
    shown = 0
    cap = box_cap(sum(r.status == "ok" for r in results))
    for n, (r, name) in enumerate(zip(results, names)):
        if r.status != "ok":
            continue
        done = [q for q in r.requests if q.status == "ok"]  # the figures' own population (metrics.compute)
        if metric == "ttft":
            xs = [(q.first_token_s - q.submitted_s) * 1000 for q in done if q.first_token_s]
        else:
            xs = [(b - a) * 1000 for q in done for a, b in zip(q.token_times_s, q.token_times_s[1:])]
        xs = spread(xs, cap)
        c = COLORS[shown % len(COLORS)]
        fig.add_trace(go.Box(x=xs, name=name, boxpoints="outliers", orientation="h", fillcolor="rgba(0,0,0,0)",
                             line=dict(color=c, width=2),
                             marker=dict(color=c, symbol=MARKERS[shown % len(MARKERS)], size=7)))
        shown += 1
    if not shown:
        _no_data(fig, lang)
    return _style(fig, _t(f"chart_{metric}_title", lang), _axis(_t("chart_axis_ms", lang), lang),
                  _axis(_t("chart_axis_run", lang), lang, type="category", autorange="reversed"),
                  height=170 + 42 * max(1, shown), legend=False)


def throughput_chart(results: list[ProbeResult], lang: str = "en", labels: list[str] | None = None) -> go.Figure:
    """Total output tok/s per ok run. labels: one per result (same order); default: the engine."""
    names = _labels(results, labels)
    ok = [(r, name) for r, name in zip(results, names) if r.status == "ok"]
    ys = [r.output_tps_total or 0 for r, _ in ok]
    fig = go.Figure(go.Bar(x=[name for _, name in ok], y=ys, text=[f"{y:,.1f}" for y in ys], textposition="outside",
                           cliponaxis=False, showlegend=False,
                           marker=dict(color=[COLORS[i % len(COLORS)] for i in range(len(ok))],
                                       pattern=dict(shape=[PATTERNS[i % len(PATTERNS)] for i in range(len(ok))],
                                                    fgcolor="white", fillmode="overlay"))))
    if not ok:
        _no_data(fig, lang)
    return _style(fig, _t("chart_throughput_title", lang), _axis(_t("chart_axis_run", lang), lang, type="category"),
                  _axis(_t("chart_axis_tps_total", lang), lang, range=[0, (max(ys) if ys else 1) * 1.18]),
                  height=380, legend=False)


def _levels_drawn(sweep) -> list:
    """A sweep's ok levels as drawn: all of them up to MAX_LEVELS_CHARTED, else that many spread over its range,
    with the level at its capacity kept."""
    lv = [x for x in sweep.levels if x.status == "ok"]
    if len(lv) <= MAX_LEVELS_CHARTED:
        return lv
    keep = set(spread(range(len(lv)), MAX_LEVELS_CHARTED))
    at = [i for i, x in enumerate(lv) if x.concurrency == sweep.capacity]
    if at and at[0] not in keep:
        keep.discard(min(keep - {0, len(lv) - 1}, key=lambda i: abs(i - at[0])))
        keep.add(at[0])
    return [lv[i] for i in sorted(keep)]


def to_pngs(figs: dict[str, go.Figure], width: int = PNG_WIDTH) -> dict[str, bytes | None]:
    """Many figures as PNG through one headless browser: to_png starts one per figure (~3 s each on a small
    machine, most of a report's time). None for a figure that cannot be exported, all None without a browser.
    The browser runs in a thread of its own, with its own event loop (Streamlit's script thread may have one)."""
    import asyncio
    import threading

    out: dict[str, bytes | None] = {}
    try:
        import kaleido
        from plotly.io._utils import validate_coerce_fig_to_dict

        specs = {name: (validate_coerce_fig_to_dict(fig, True),
                        dict(format="png", width=width, height=fig.layout.height or 400, scale=2))
                 for name, fig in figs.items()}
    except Exception:
        return {name: to_png(fig, width) for name, fig in figs.items()}

    async def export() -> None:
        async with kaleido.Kaleido(n=1) as k:
            for name, (fig, opts) in specs.items():
                try:
                    out[name] = await k.calc_fig(fig, opts=opts)
                except Exception:
                    out[name] = None

    def run() -> None:
        try:
            asyncio.run(export())
        except BaseException:  # no browser, or it died: the figures not made are None
            pass

    worker = threading.Thread(target=run, name="report-charts", daemon=True)
    worker.start()
    worker.join()
    return {name: out.get(name) for name in figs}


def to_png(fig: go.Figure, width: int = PNG_WIDTH, height: int | None = None) -> bytes | None:
    """PNG through kaleido + the system's chromium; None when no browser is available (the report says so)."""
    try:
        return fig.to_image(format="png", width=width, height=height or fig.layout.height or 400, scale=2)
    except Exception:
        return None


def sweep_charts(sweeps, target_ms: float | None, share: float, lang: str = "en",
                 names: dict[str, str] | None = None) -> dict[str, go.Figure]:
    """The side-by-side sweep: TTFT p95, goodput and output tok/s against concurrency, one line per engine
    (the TTFT target and the goodput share drawn as lines). `sweeps` are probes.sweep.SweepResult."""
    names = names or {}
    figs = {k: go.Figure() for k in ("ttft", "goodput", "tps")}
    xs_all: list[int] = []
    for n, s in enumerate(sweeps[:MAX_SWEEPS_CHARTED]):
        lv = _levels_drawn(s)
        xs = [x.concurrency for x in lv]
        xs_all += xs
        style = dict(mode="lines+markers", name=names.get(s.engine, s.engine),
                     line=dict(color=COLORS[n % len(COLORS)], width=2),
                     marker=dict(symbol=MARKERS[n % len(MARKERS)], size=9, color=COLORS[n % len(COLORS)]))
        ci = [x.ttft_p95_ci_ms for x in lv]
        bars = None
        if any(ci):  # the p95's 95 % bootstrap interval: a target inside it is inconclusive
            bars = dict(type="data", symmetric=False, visible=True, thickness=1.5, width=5,
                        array=[(c[1] - x.ttft_ms.p95) if c and x.ttft_ms.p95 is not None else 0 for c, x in zip(ci, lv)],
                        arrayminus=[(x.ttft_ms.p95 - c[0]) if c and x.ttft_ms.p95 is not None else 0
                                    for c, x in zip(ci, lv)])
        figs["ttft"].add_trace(go.Scatter(x=xs, y=[x.ttft_ms.p95 for x in lv], error_y=bars, **style))
        figs["goodput"].add_trace(go.Scatter(x=xs, y=[(x.goodput or 0) * 100 for x in lv], **style))
        figs["tps"].add_trace(go.Scatter(x=xs, y=[x.output_tps_total for x in lv], **style))
    if target_ms:
        figs["ttft"].add_hline(y=target_ms, line=dict(color="#C00000", dash="dash", width=2),
                               annotation_text=_t("chart_sweep_target", lang, ms=f"{target_ms:g}"),
                               annotation_position="top left")
    figs["goodput"].add_hline(y=share * 100, line=dict(color="#C00000", dash="dash", width=2),
                              annotation_text=_t("chart_sweep_share", lang, pct=f"{share:.0%}"),
                              annotation_position="bottom left")
    ticks = sorted(set(xs_all)) or [1]
    if len(ticks) > MAX_TICKS:  # a label per level of 1,024 levels is a smear: the levels nearest each power of 2
        import math

        log = lambda v: math.log(max(v, 1))  # noqa: E731
        powers = [2 ** k for k in range(int(math.log2(max(ticks[0], 1))), int(math.log2(max(ticks[-1], 1))) + 2)]
        ticks = sorted({min(ticks, key=lambda t: abs(log(t) - log(p))) for p in powers} | {ticks[0], ticks[-1]})
    x = lambda: _axis(_t("chart_axis_concurrency", lang), lang, log=True, tickvals=ticks,  # noqa: E731
                      ticktext=[str(t) for t in ticks])
    for k, fig in figs.items():
        if not xs_all:
            _no_data(fig, lang)
    _style(figs["ttft"], _t("chart_sweep_ttft_title", lang), x(), _axis(_t("chart_axis_ms", lang), lang), height=360)
    _style(figs["goodput"], _t("chart_sweep_goodput_title", lang), x(),
           _axis(_t("chart_axis_goodput_pct", lang), lang, range=[0, 105]), height=340)
    _style(figs["tps"], _t("chart_sweep_tps_title", lang), x(), _axis(_t("chart_axis_tps_total", lang), lang),
           height=340)
    return figs


def _envelope(points: list[tuple[float, float]], x_left: float, floor: float) -> tuple[list[float], list[float]]:
    """The region under the staircase Pareto envelope of `points` (per-user tok/s, per-GPU tok/s): for each x, the
    best y any point reaches at a per-user speed of x or more; closed down to `floor` and left to `x_left`."""
    xs, ys = [], []
    best = None
    for x, y in sorted(points, key=lambda p: (-p[0], -p[1])):  # from the fastest per user leftwards
        if best is None:
            xs += [x, x]
            ys += [floor, y]
            best = y
        elif y > best:  # a step up at this x
            xs += [x, x]
            ys += [best, y]
            best = y
    if best is None:
        return [], []
    xs += [x_left, x_left, xs[0]]
    ys += [best, floor, floor]
    return xs, ys


def serving_chart(plan: Plan, names: dict[str, str], lang: str = "en") -> go.Figure:
    """The predicted serving curve per engine: output tok/s per user (x) against output tok/s per GPU (per machine
    on a CPU; y), one point per closed-loop concurrency, filled where its p95 TTFT meets the target and hollow where
    not; the region every meeting point reaches (the staircase Pareto envelope) shaded and labelled. Each curve
    carries its band (walk-3 M1: a "rough ±60%" curve drawn as sharply as a fitted one): the area between the curve
    at the band's slow and fast ends (both figures of a point scale with the throughput, so a point moves along its
    ray from the origin), in the curve's colour, and its label and band in the legend ("llama.cpp (rough ±136%)")."""
    from advisor.report.serving import predicted

    fig = go.Figure()
    shown = predicted(plan)
    meeting: list[tuple[float, float]] = []
    xs_all: list[float] = []
    ys_all: list[float] = []
    ext_x: list[float] = []  # the bands' extent too: the axes hold every band whole
    ext_y: list[float] = []
    per_gpu = per_machine = False
    target = None
    traces = []
    bands = []
    for n, (e, sv) in enumerate(shown.items()):
        lv = [x for x in sv.levels if x.output_tps_per_user and x.output_tps_per_gpu]
        if not lv:
            continue
        cpu = sv.gpus_per_replica <= 0 or plan.engines[e].device == "cpu"
        per_machine, per_gpu = per_machine or cpu, per_gpu or not cpu
        target = target or sv.ttft_target_ms
        i = _i(e, n)
        xs, ys = [x.output_tps_per_user for x in lv], [x.output_tps_per_gpu for x in lv]
        xs_all += xs
        ys_all += ys
        meeting += [(x.output_tps_per_user, x.output_tps_per_gpu) for x in lv if x.meets]
        sym = MARKERS[i % len(MARKERS)]
        f = 1 + max(0.0, sv.band)  # throughput x (1 + band) at the fast end, / (1 + band) at the slow end
        bx = [x * f for x in xs] + [x / f for x in reversed(xs)] + [xs[0] * f]
        by = [y * f for y in ys] + [y / f for y in reversed(ys)] + [ys[0] * f]
        ext_x += bx
        ext_y += by
        bands.append(go.Scatter(x=bx, y=by, fill="toself", mode="lines", hoverinfo="skip", showlegend=False,
                                legendgroup=e, meta={"band_of": e}, line=dict(width=0),
                                fillcolor=_rgba(COLORS[i % len(COLORS)], 0.12)))
        label = _t("srv_chart_label_silicon" if sv.label == "silicon" else f"val_plan_label_{sv.label}", lang)
        name = _t("srv_chart_curve", lang, engine=names.get(e, e), label=label, band=f"{round(sv.band * 100)}")
        hover = [_t("srv_chart_hover", lang, users=f"{x.concurrency:,}",
                    ttft="—" if x.ttft_ms_p95 is None else f"{x.ttft_ms_p95:,.0f}",
                    itl="—" if x.itl_ms_p50 is None else f"{x.itl_ms_p50:,.1f}") for x in lv]
        traces.append(go.Scatter(
            x=xs, y=ys, mode="lines+markers", name=_wrap(name), text=hover, legendgroup=e,
            hovertemplate="%{text}<br>%{x:,.1f} · %{y:,.1f}<extra>%{fullData.name}</extra>",
            line=dict(color=COLORS[i % len(COLORS)], dash=DASHES[i % len(DASHES)], width=2),
            marker=dict(color=COLORS[i % len(COLORS)], size=10, line=dict(color=COLORS[i % len(COLORS)], width=2),
                        symbol=[sym if x.meets else f"{sym}-open" for x in lv])))
    title = _t("srv_chart_title_cpu" if per_machine and not per_gpu else "srv_chart_title", lang)
    y_title = _t("srv_chart_y_mixed" if per_gpu and per_machine else
                 "srv_chart_y_machine" if per_machine else "srv_chart_y_gpu", lang)
    if not xs_all:
        _no_data(fig, lang)
        return _style(fig, title, _axis(_t("srv_chart_x", lang), lang), _axis(y_title, lang), height=420)
    import math

    log_x, log_y = max(xs_all) / min(xs_all) > 20, max(ys_all) / min(ys_all) > 20  # a wide spread reads on log axes

    def bounds(vals: list[float], log: bool) -> tuple[float, list[float]]:
        """(the region's edge on this axis, the axis range: log10 units on a log axis)"""
        lo, hi = min(vals), max(vals)
        if log:
            return lo / 1.5, [math.log10(lo / 1.5), math.log10(hi * 1.5)]
        return 0.0, [0, hi * 1.08]

    x_lo, x_range = bounds(ext_x or xs_all, log_x)
    y_lo, y_range = bounds(ext_y or ys_all, log_y)
    for b in bands:  # under everything: a band is where its curve may lie
        fig.add_trace(b)
    if bands:  # one legend entry says what the shading is (each band follows its curve in and out of view)
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", hoverinfo="skip",
                                 marker=dict(symbol="square", size=14, color="rgba(120,120,120,0.3)"),
                                 name=_wrap(_t("srv_chart_band_legend", lang), 30)))
    if meeting and target:  # drawn first: under the lines
        rx, ry = _envelope(meeting, x_lo, y_lo)
        fig.add_trace(go.Scatter(x=rx, y=ry, fill="toself", mode="lines", hoverinfo="skip",
                                 line=dict(color="rgba(0,158,115,0.5)", width=1), fillcolor="rgba(0,158,115,0.13)",
                                 name=_t("srv_chart_region", lang, target=f"{target:,.0f}")))
    for tr in traces:
        fig.add_trace(tr)

    def axis(text: str, log: bool, rng: list, vals: list[float]) -> dict:
        if log:
            ticks = _125_ticks(min(vals) / 1.5, max(vals) * 1.5)
            return _axis(text, lang, log=True, range=rng, tickvals=ticks, ticktext=[f"{v:g}" for v in ticks])
        return _axis(text, lang, range=rng)

    return _style(fig, title, axis(_t("srv_chart_x", lang), log_x, x_range, xs_all),
                  axis(y_title, log_y, y_range, ys_all), height=420)

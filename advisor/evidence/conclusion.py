"""One conclusion per engine from its probe runs and its concurrency sweeps (walk-3 M8: the report said "misses the
TTFT target … revisit the hardware" from a probe run and "the sweep is inconclusive" from a sweep, of one engine).

The rule, in order:
1. A held run never concludes: busy or collapsed (probe), busy (sweep), measured on another device than the target,
   or swept for other answers. It is cited as not counted, with why.
2. A sweep that can conclude (it ran, or was cancelled after at least one level) decides over a probe run of the
   same engine: it measures several levels with at least 20 requests each, a probe run one level with a few. The
   probe run is cited beside it as supporting or contradicting evidence: a run at concurrency c that meets the target
   supports a sweep that meets it at c, one that misses supports a sweep that misses at c (or below). A run on
   another model or device than the sweep is cited, and not compared.
3. Otherwise the latest probe run that can conclude decides, and the sweep is cited as not counted, with why (held,
   failed, interrupted).
4. When nothing of an engine can conclude, it has no conclusion: the reasons are said, and no verdict is drawn.
5. An engine's other sweeps (not the latest that can conclude) are cited too, as not counted, so every sweep shown
   is accounted for under its engine's one conclusion.

The summary is drawn from these conclusions only, so the report's headline and its engines never disagree.
`page_verdict` is what the Probe page draws from the same rule (the page holds layout only). Pure."""
from __future__ import annotations

from pathlib import PurePath
from typing import Literal

from pydantic import BaseModel

from advisor.evidence.capacity_check import CapacityRow, CapacityVerdict
from advisor.evidence.verdict import EngineVerdict, Verdict
from advisor.knowledge.load import Knowledge
from probes.result import device_kind

Outcome = Literal["meets", "misses", "inconclusive", "none"]


class EngineConclusion(BaseModel):
    engine: str
    name: str
    rank: int | None = None
    by: Literal["sweep", "probe", "none"]  # what concluded
    outcome: Outcome  # none: nothing of it can conclude (held, failed or unmeasured)
    text: str  # the conclusion, in the page's language
    cited: list[str] = []  # the other runs of this engine, each saying whether it supports, contradicts or is held


class Conclusions(BaseModel):
    engines: list[EngineConclusion]
    summary: str
    changes_advice: bool = False
    better: str | None = None
    # what the summary says of the top-ranked engine: confirmed, changed (another measured engine should lead),
    # missed, inconclusive, held (nothing of it can conclude), unmeasured (it has no run or sweep)
    status: Literal["confirmed", "changed", "missed", "inconclusive", "held", "unmeasured"] = "unmeasured"


def _sweep_outcome(sw, row: CapacityRow, asked: int) -> Outcome:
    """What a sweep that can conclude says against the users asked for: meets (its capacity reaches them), misses (a
    level at or below them missed, or the plan's memory stops it below them), else inconclusive."""
    want = sw.asked_concurrency or asked
    if row.capacity is not None and row.capacity >= want:
        return "meets"
    if any(lv.concurrency <= want and lv.outcome == "misses" for lv in sw.levels):
        return "misses"
    if sw.status == "ok" and (sw.stop or {}).get("key") in ("ttft", "goodput", "plan_max") and not sw.inconclusive_at:
        return "misses"
    if sw.status == "ok" and row.capacity is None and not sw.inconclusive_at and sw.levels:
        return "misses"  # not even the first level met the target
    return "inconclusive"


def _sweep_can_conclude(sw, row: CapacityRow) -> bool:
    if row.held:
        return False
    if sw.status == "ok":
        return bool(sw.levels)
    return sw.status == "cancelled" and any(lv.status == "ok" for lv in sw.levels)


def _probe_outcome(v: EngineVerdict) -> Outcome:
    if not v.measured or v.held or v.elsewhere:
        return "none"
    return {True: "meets", False: "misses", None: "inconclusive"}[v.meets_sla]


def _expected_at(sw, c: int | None) -> Outcome:
    """What the sweep says about concurrency c: the outcome of its level at c, else from its capacity and the level
    it missed at; inconclusive when it cannot tell."""
    if c is None:
        return "inconclusive"
    lv = next((x for x in sw.levels if x.concurrency == c and x.outcome in ("meets", "misses")), None)
    if lv is not None:
        return lv.outcome
    if sw.capacity is not None and c <= sw.capacity:
        return "meets"
    missed = min((x.concurrency for x in sw.levels if x.outcome == "misses"), default=None)
    return "misses" if missed is not None and c >= missed else "inconclusive"


def _same_setup(v: EngineVerdict, sw) -> bool:
    """The probe run and the sweep ran the same engine on the same kind of device (and GPU) and the same model."""
    if device_kind(v.device) != device_kind(sw.device):
        return False
    a, b = v.model, sw.model
    return a == b or (a is not None and b is not None and PurePath(a).name == PurePath(b).name)


def reconcile(verdict: Verdict | None, capacity: CapacityVerdict | None, sweeps: list, asked: int,
              top: str | None, knowledge: Knowledge, lang: str = "en",
              ranked: list[str] | None = None) -> Conclusions:
    """One EngineConclusion per engine that has a probe run or a sweep (ranked engines first, in rank order), by the
    rule in this module's docstring. verdict: advisor.evidence.verdict.revisit's; capacity: check_capacity's for
    `sweeps` (its rows and lines in the same order)."""
    s = lambda key, **kw: knowledge.s(key, lang, **kw)  # noqa: E731
    name_of = lambda e: knowledge.engines[e].name if e in knowledge.engines else e  # noqa: E731
    probes = {v.engine: v for v in (verdict.engines if verdict else []) if v.measured or v.failed}
    swept: dict[str, tuple] = {}  # engine → (sweep, its row, its line): the latest that can conclude, else the latest
    every: dict[str, list[tuple]] = {}  # engine → all its (sweep, row, line), to cite the ones that do not decide
    if capacity is not None:  # oldest first, so "latest" is the latest run whatever order they were picked in
        triples = sorted(zip(sweeps, capacity.rows, capacity.lines), key=lambda t: t[0].started_at or "")
        for sw, row, line in triples:
            every.setdefault(sw.engine, []).append((sw, row, line))
            old = swept.get(sw.engine)
            if old is None or _sweep_can_conclude(sw, row) or not _sweep_can_conclude(old[0], old[1]):
                swept[sw.engine] = (sw, row, line)
    ranked = ranked or []
    order = [e for e in ranked if e in probes or e in swept]
    order += sorted((set(probes) | set(swept)) - set(order))
    rank = {e: i for i, e in enumerate(ranked, 1)}
    out = []
    for e in order:
        v, sweep = probes.get(e), swept.get(e)
        run = (v.run or e) if v else None
        cited: list[str] = []
        others = [_cite_other_sweep(x[1], x[2], s) for x in every.get(e, []) if sweep is None or x[0] is not sweep[0]]
        if sweep is not None and _sweep_can_conclude(sweep[0], sweep[1]):
            sw, row, line = sweep
            outcome = _sweep_outcome(sw, row, asked)
            n = sum(lv.requests_total for lv in sw.levels)
            text = s("concl_by_sweep", levels=len(sw.levels), n=f"{n:,}", text=line)
            if v is not None:
                cited.append(_cite_probe(v, sw, run, s))
            cited += others
            out.append(EngineConclusion(engine=e, name=name_of(e), rank=rank.get(e), by="sweep", outcome=outcome,
                                        text=text, cited=cited))
            continue
        if sweep is not None:
            sw, row, line = sweep
            cited.append(s("concl_sweep_not_counted", why=row.held or line))
        cited += others
        if v is not None and _probe_outcome(v) != "none":
            text = s("concl_by_probe", run=run, c=v.concurrency or 1, n=v.requests, text=v.text)
            out.append(EngineConclusion(engine=e, name=name_of(e), rank=rank.get(e), by="probe",
                                        outcome=_probe_outcome(v), text=text, cited=cited))
            continue
        if v is not None:
            cited.insert(0, s("concl_probe_not_counted", run=run, why=v.held or v.elsewhere or v.text))
        out.append(EngineConclusion(engine=e, name=name_of(e), rank=rank.get(e), by="none", outcome="none",
                                    text=s("concl_none"), cited=cited))
    return _summary(out, top, name_of, s)


def _cite_other_sweep(row: CapacityRow, line: str, s) -> str:
    """An engine's sweep that is not the one its conclusion rests on: held or failed, or one that ran but is not the
    latest that did (the latest decides)."""
    if row.held:
        return s("concl_sweep_not_counted", why=row.held)
    return s("concl_sweep_other", text=line)


def _cite_probe(v: EngineVerdict, sw, run: str, s) -> str:
    """The probe run beside the sweep that concludes: held, failed, not comparable, supporting or contradicting."""
    if v.held or v.elsewhere:
        return s("concl_probe_not_counted", run=run, why=v.held or v.elsewhere)
    if not v.measured:
        return s("concl_probe_not_counted", run=run, why=v.text)
    if not _same_setup(v, sw):
        return s("concl_probe_other_setup", run=run, text=v.text)
    got, want = _probe_outcome(v), _expected_at(sw, v.concurrency or 1)
    if got == "inconclusive" or want == "inconclusive":
        return s("concl_probe_neutral", run=run, c=v.concurrency or 1, text=v.text)
    key = "concl_probe_supports" if got == want else "concl_probe_contradicts"
    return s(key, run=run, c=v.concurrency or 1, text=v.text)


def _summary(engines: list[EngineConclusion], top: str | None, name_of, s) -> Conclusions:
    by = {c.engine: c for c in engines}
    t = by.get(top) if top else None
    if t is None:
        return Conclusions(engines=engines, summary=s("concl_sum_unmeasured"))
    how = s(f"concl_how_{t.by}") if t.by != "none" else ""
    if t.outcome == "meets":
        return Conclusions(engines=engines, summary=s("concl_sum_confirmed", engine=t.name, how=how),
                           status="confirmed")
    if t.outcome == "misses":
        better = next((c for c in engines if c.outcome == "meets" and c.rank is not None), None)
        if better is not None:
            return Conclusions(engines=engines, summary=s("concl_sum_changes", engine=t.name, better=better.name,
                                                          how=how), changes_advice=True, better=better.engine,
                               status="changed")
        return Conclusions(engines=engines, summary=s("concl_sum_missed", engine=t.name, how=how), status="missed")
    if t.outcome == "inconclusive":
        return Conclusions(engines=engines, summary=s("concl_sum_inconclusive", engine=t.name, how=how),
                           status="inconclusive")
    return Conclusions(engines=engines, summary=s("concl_sum_none", engine=name_of(t.engine)), status="held")


Tone = Literal["success", "warning", "error", "info"]
#: how a headline is drawn, by what it says of the top-ranked engine (Verdict.status or Conclusions.status)
TONE: dict[str, Tone] = {"confirmed": "success", "changed": "warning", "missed": "error", "failed": "error",
                         "held": "warning"}


class PageVerdict(BaseModel):
    """What the Probe page draws from the runs and sweeps it shows, so that it draws one conclusion per engine, the
    report's: `headline` and `engines` under its verdict (None without probe runs: the sweeps' section then leads
    with its own summary), and what the sweeps' section leads with. Where runs and sweeps are both shown, the
    engines are reconciled (`reconcile`) and the sweeps' section points at the verdict instead of drawing one."""
    headline: str | None = None
    tone: Tone = "info"
    engines: list[EngineConclusion] = []
    reconciled: bool = False
    sweep_lead: str | None = None
    sweep_tone: Tone = "info"
    sweep_lines: list[str] = []


def page_verdict(verdict: Verdict | None, capacity: CapacityVerdict | None, sweeps: list, asked: int,
                 top: str | None, knowledge: Knowledge, lang: str = "en",
                 ranked: list[str] | None = None) -> PageVerdict:
    """The Probe page's verdict, by the same rule as the report (advisor.report.document): probe runs only, their
    verdict (`revisit`); sweeps only, the capacity summary and its lines; both, one reconciled conclusion per engine,
    each with the runs and sweeps it rests on cited under it, and no summary or lines of the sweeps' own."""
    if verdict is not None and capacity is not None and sweeps:
        c = reconcile(verdict, capacity, sweeps, asked, top, knowledge, lang, ranked=ranked)
        lead = knowledge.s("concl_see_verdict", lang, title=knowledge.s("ui_verdict", lang))
        return PageVerdict(headline=c.summary, tone=TONE.get(c.status, "info"), engines=c.engines, reconciled=True,
                           sweep_lead=lead)
    out = PageVerdict()
    if verdict is not None:
        out.headline, out.tone = verdict.summary, TONE.get(verdict.status, "info")
        out.engines = [EngineConclusion(engine=v.engine, name=v.engine, rank=v.rank, outcome=_probe_outcome(v),
                                        by="probe" if _probe_outcome(v) != "none" else "none", text=v.text)
                       for v in verdict.engines if v.measured or v.failed]
    if capacity is not None:
        top_meets = top is not None and any(r.engine == top and r.capacity and r.capacity >= asked and not r.held
                                            for r in capacity.rows)
        out.sweep_lead, out.sweep_lines = capacity.summary, capacity.lines
        out.sweep_tone = "warning" if capacity.changes_advice or not top_meets else "success"
    return out

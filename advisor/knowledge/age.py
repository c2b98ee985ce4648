"""How old the knowledge is: the engine versions its facts describe, and what was read too long ago.

Every support cell, rule and engine release names the date it was read. An engine ships every few weeks, so a cell
read half a year ago may speak for a version nobody runs any more: `stale()` lists what is older than a limit
(`python -m advisor knowledge --check`), and `as_of()` is the one line the Recommendation page and the report show.
Pure functions of the loaded knowledge and a given day (no clock, no I/O).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from advisor.knowledge import schema as ks

#: a cell, rule or release read longer ago than this is listed by `knowledge --check`
STALE_DAYS = 180


@dataclass(frozen=True)
class Dated:
    """One dated piece of knowledge: where it lives, what it is, and the day it was read."""

    file: str
    item: str
    read: dt.date | None  # None: it carries no date (a rule or cell that should have one)
    source: str | None = None


@dataclass(frozen=True)
class EngineVersion:
    engine: str
    name: str
    version: str
    released: str | None
    read: str | None


@dataclass(frozen=True)
class AsOf:
    """'knowledge as of DATE: vLLM X, SGLang Y, …': DATE is the latest day an engine's release was read."""

    date: str | None
    engines: tuple[EngineVersion, ...]

    def line(self, knowledge, lang: str = "en") -> str:
        """The sentence shown under the ranking and in the report (its wording lives in strings.yaml)."""
        date = self.date or knowledge.s("knowledge_date_unknown", lang)
        engines = knowledge.s("report_list_sep", lang).join(f"{e.name} {e.version}" for e in self.engines) or "–"
        return knowledge.s("knowledge_as_of", lang, date=date, engines=engines)


def _date(value: object) -> dt.date | None:
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.strip())
        except ValueError:
            return None
    return None


def as_of(knowledge) -> AsOf:
    """The engine versions the knowledge describes, in ENGINE_IDS order, and the day they were read."""
    engines: list[EngineVersion] = []
    reads: list[dt.date] = []
    for eid in ks.ENGINE_IDS:  # every engine names its release (engines.yaml, required)
        e = knowledge.engines[eid]
        rel = e.release
        engines.append(EngineVersion(eid, e.name, str(rel.version), str(rel.date) if rel.date else None, str(rel.read)))
        reads.append(_date(rel.read))
    reads = [d for d in reads if d]
    return AsOf(max(reads).isoformat() if reads else None, tuple(engines))


def dated(knowledge) -> list[Dated]:
    """Every dated piece: engine releases, support cells (an `unknown` cell asserts nothing and is not listed), rules
    and the deployment flag tables (knowledge/deploy.yaml: flags, images and versions read per engine)."""
    out: list[Dated] = []
    for eid in ks.ENGINE_IDS:
        rel = knowledge.engines[eid].release
        out.append(Dated("engines.yaml", f"{eid}: release {rel.version}", _date(rel.read), rel.source))
    for eid, sup in knowledge.support.engines.items():
        for axis in ks.SUPPORT_AXES:
            for key, cell in getattr(sup, axis).items():
                if cell.status == "unknown":
                    continue
                out.append(Dated("support.yaml", f"{eid}: {axis}/{key} ({cell.status})", _date(cell.read),
                                 cell.source))
    for r in knowledge.rules.rules:
        out.append(Dated("rules.yaml", f"rule {r.id}", _date(r.read), r.source))
    for eid, d in knowledge.deploy.engines.items():
        out.append(Dated("deploy.yaml", f"{eid}: server flags for {d.version}", _date(d.read), d.source))
    return out


def stale(knowledge, today: dt.date, days: int = STALE_DAYS) -> list[Dated]:
    """What was read more than `days` days before `today`, or carries no date at all; oldest first."""
    limit = today - dt.timedelta(days=days)
    old = [d for d in dated(knowledge) if d.read is None or d.read < limit]
    return sorted(old, key=lambda d: (d.read or dt.date.min, d.file, d.item))

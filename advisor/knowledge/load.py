"""Load and validate knowledge/*.yaml once; a malformed file fails with file, key and problem."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from advisor.knowledge import schema as ks
from advisor.knowledge.conditions import leaves
from advisor.knowledge.vocabulary import FACT_NAMES, PLAN_FACT_NAMES
from advisor.knowledge.yamlsafe import UniqueKeyLoader as _Loader

KNOWLEDGE_DIR = Path(__file__).resolve().parents[2] / "knowledge"

M = TypeVar("M", bound=BaseModel)
class KnowledgeError(ValueError):
    """A knowledge file is malformed. str() is one line: file, key, problem."""


def _load(path: Path, model: type[M]) -> M:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)  # noqa: S506 (a safe loader)
    except FileNotFoundError:
        raise KnowledgeError(f"{path.name}: file missing from {path.parent}") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "?"
        raise KnowledgeError(f"{path.name}: {where}: not valid YAML: {getattr(err, 'problem', err)}") from None
    try:
        return model.model_validate(data)
    except ValidationError as err:
        e = err.errors()[0]
        key = _readable_loc(data, e["loc"])
        raise KnowledgeError(f"{path.name}: {key}: {e['msg']}") from None


def _readable_loc(data: object, loc: tuple) -> str:
    """Turn ('rules', 3, 'when', 'leaf') into 'rules[3] (id=foo).when'."""
    parts: list[str] = []
    node = data
    for p in loc:
        if isinstance(p, int) and isinstance(node, list) and p < len(node):
            node = node[p]
            ident = node.get("id") if isinstance(node, dict) else None
            parts[-1:] = [f"{parts[-1] if parts else ''}[{p}]" + (f" (id={ident})" if ident else "")]
            continue
        if isinstance(node, dict) and p in node:
            node = node[p]
            parts.append(str(p))
        elif p in ("leaf", "all", "any", "not") or str(p).startswith(("Fact[", "function-")):
            continue
        else:
            parts.append(str(p))
    return ".".join(parts) or "(top level)"


@dataclass(frozen=True)
class Knowledge:
    engines: dict[str, ks.Engine]
    checklist: ks.ChecklistFile
    rules: ks.RulesFile
    claims: ks.ClaimsFile
    models: ks.ModelsFile
    gpus: ks.GpusFile
    planner: ks.PlannerFile
    strings: dict[str, ks.Text]
    support: ks.SupportFile
    prices: ks.PricesFile
    sources: ks.SourcesFile
    serving: ks.ServingFile
    serving_fit: ks.ServingFit
    deploy: ks.DeployFile
    aiconfigurator: ks.AiconfiguratorFile
    architectures: ks.ArchitecturesFile

    def s(self, key: str, lang: str = "en", **kw: object) -> str:
        """A UI/report string in the chosen language."""
        text = self.strings[key].get(lang)
        return text.format(**kw) if kw else text

    def cite(self, source: str, lang: str = "en") -> ks.Citation | None:
        """What a `source` string is (title, section, link) from sources.yaml; None when it is not listed."""
        return self.sources.cite(source, lang)


def load_knowledge(directory: str | Path | None = None) -> Knowledge:
    d = Path(directory) if directory else KNOWLEDGE_DIR
    return _cached(d.resolve())


def _check_rule_facts(rules: ks.RulesFile) -> None:
    for i, rule in enumerate(rules.rules):
        known = FACT_NAMES | PLAN_FACT_NAMES if rule.scope == "each-engine" else FACT_NAMES
        for leaf in leaves(rule.when):
            if leaf.fact not in known:
                extra = "" if rule.scope == "each-engine" or leaf.fact not in PLAN_FACT_NAMES else \
                    " (plan_* facts need scope: each-engine)"
                raise KnowledgeError(
                    f"rules.yaml: rules[{i}] (id={rule.id}).when: unknown fact {leaf.fact!r}{extra}; "
                    f"known facts: {', '.join(sorted(known))}")


def _check_need_facts(support: ks.SupportFile) -> None:
    for i, need in enumerate(support.needs):
        for leaf in leaves(need.when):
            if leaf.fact not in FACT_NAMES:
                raise KnowledgeError(f"support.yaml: needs[{i}] ({need.feature}).when: unknown fact {leaf.fact!r}")


@functools.lru_cache(maxsize=4)
def _cached(d: Path) -> Knowledge:
    engines = _load(d / "engines.yaml", ks.EnginesFile)
    rules = _load(d / "rules.yaml", ks.RulesFile)
    _check_rule_facts(rules)
    support = _load(d / "support.yaml", ks.SupportFile)
    _check_need_facts(support)
    prices = _load(d / "prices.yaml", ks.PricesFile)
    gpus = _load(d / "gpus.yaml", ks.GpusFile)
    unknown = set(prices.gpus) - {g.id for g in gpus.gpus}
    if unknown:
        raise KnowledgeError(f"prices.yaml: gpus: unknown GPU ids {sorted(unknown)} (not in gpus.yaml)")
    order = {e: i for i, e in enumerate(ks.ENGINE_IDS)}
    return Knowledge(
        engines={e.id: e for e in sorted(engines.engines, key=lambda e: order[e.id])},
        checklist=_load(d / "checklist.yaml", ks.ChecklistFile),
        rules=rules,
        claims=_load(d / "claims.yaml", ks.ClaimsFile),
        models=_load(d / "models.yaml", ks.ModelsFile),
        gpus=gpus,
        planner=_load(d / "planner.yaml", ks.PlannerFile),
        strings=_load(d / "strings.yaml", ks.StringsFile).strings,
        support=support,
        prices=prices,
        sources=_load(d / "sources.yaml", ks.SourcesFile),
        serving=_load(d / "serving.yaml", ks.ServingFile),
        serving_fit=_load(d / "serving_fit.yaml", ks.ServingFit),
        deploy=_load(d / "deploy.yaml", ks.DeployFile),
        aiconfigurator=_load(d / "aiconfigurator.yaml", ks.AiconfiguratorFile),
        architectures=_load(d / "architectures.yaml", ks.ArchitecturesFile),
    )

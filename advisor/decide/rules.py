"""The rules engine: (answers, hardware, knowledge) -> Recommendation. Pure; no I/O.

Every point of a score is a contribution that names its rule and source: the base score, each
matching rule's delta, and, when the total leaves [min, max], a clamp contribution — so the
contributions always sum to the score shown. Each-engine rules read that engine's capacity plan, which
the planner computes from numbers alone (the model's files were read, and the CPU measured, at the edge).
"""
from __future__ import annotations

from typing import Any

from advisor.decide.flips import find_flips
from advisor.decide.recommendation import ExcludedEngine, RankedEngine, Reason, Recommendation
from advisor.decide.scoring import EngineFacts, score, tested_facts
from advisor.decide.support_score import text as support_text
from advisor.inputs.answers import Answers
from advisor.inputs.facts import SERVING_PARTS, build_facts, plan_facts
from advisor.inputs.hardware import Hardware
from advisor.knowledge import schema as ks
from advisor.knowledge.load import Knowledge
from advisor.knowledge.support import verdicts as support_verdicts
from advisor.planner import MachineBench, ModelSpec, Plan, make_plan, resolve_model, workload_for
from advisor.planner.capacity import plan_engine
from advisor.planner.perf import fleet_floor


class _Safe(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _fmt(text: str, facts: dict[str, Any], strings: dict[str, ks.Text] | None = None, lang: str = "en") -> str:
    """Fill a rule's text; an enumerated value with a label in strings.yaml (val_<fact>_<value>) is shown in
    the reader's language, so a Chinese sentence never carries a raw English value."""
    def show(k: str, v: Any) -> Any:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) >= 1000:
            # 15,240 ms, 1,024 users, 1,200.5 GiB: grouped as the plan's tables group them, the one decimal the facts
            # keep kept (every placeholder a rule text holds is a quantity, never a port or a year)
            return f"{v:,}" if isinstance(v, int) else f"{v:,.1f}".rstrip("0").rstrip(".")
        if isinstance(v, float):
            return "%g" % v
        label = strings.get(f"val_{k}_{v}") if strings and isinstance(v, str) else None
        return label.get(lang) if label else v

    return text.format_map(_Safe({k: show(k, v) for k, v in facts.items()}))


class Evaluator:
    """Facts, plan and per-engine plan facts for answers (and variants of them, in the flip search).

    Plans depend on few answers (model, concurrency, prompt mix, hardware), so they are memoised on those. A plan
    without detail (the flip search's: only its scores count) leaves out the serving parts whose facts no rule tests
    (advisor.inputs.facts.SERVING_PARTS), and is the detailed plan itself where that one is made already and no
    rule tests what detail adds (the fixes' text).
    """
    DETAIL_FACTS = frozenset({"plan_fix"})  # the only fact a plan with detail may set otherwise (its options)

    def __init__(self, hardware: Hardware | None, knowledge: Knowledge, spec: ModelSpec | None,
                 machine: MachineBench | None, lang: str, calibration: dict | None = None):
        self.hardware, self.knowledge, self.spec, self.machine, self.lang = hardware, knowledge, spec, machine, lang
        self.calibration = calibration
        self._specs: dict[str, ModelSpec] = {}
        self._plans: dict[str, tuple[Plan, EngineFacts]] = {}
        self._reuse: dict = {}  # memory plans shared by the flip search's plans (advisor.planner.make_plan)

    def plan(self, answers: Answers, detail: bool = True, relevant: frozenset[str] | None = None
             ) -> tuple[Plan, EngineFacts]:
        """relevant (without detail): the engines whose scores count (the flip search's leaders and challenger); the
        others' capacity searches are run only where their fleet could be the smallest one, which every engine's
        plan_fleet_ratio is measured against (see _complete)."""
        base = "|".join([str(answers.concurrency), answers.prompt_mix, str(answers.ttft_p95_ms),
                         answers.model.model_dump_json(), answers.hardware.model_dump_json() if answers.hardware else "-"])
        relevant = None if detail else relevant
        key = f"{base}|{detail}|{','.join(sorted(relevant)) if relevant is not None else '*'}"
        full = f"{base}|True|*"
        if not detail and key not in self._plans and full in self._plans and not (
                self.DETAIL_FACTS & tested_facts(self.knowledge)):
            return self._plans[full]
        if key not in self._plans:
            spec = self.spec
            if spec is None:
                mkey = answers.model.model_dump_json()
                if mkey not in self._specs:
                    self._specs[mkey] = resolve_model(answers.model, self.knowledge, read_files=False)
                spec = self._specs[mkey]
            tested = tested_facts(self.knowledge)
            skip = frozenset() if detail else frozenset(p for p, names in SERVING_PARTS.items() if not names & tested)
            plan = make_plan(answers, self.hardware, self.knowledge, spec, self.machine, self.lang, detail,
                             calibration=self.calibration, serving_skip=skip, searched=relevant, reuse=self._reuse)
            none = self.knowledge.s("plan_fix_none", self.lang)
            engine_facts = {e: plan_facts(p, none) for e, p in plan.engines.items()}
            if relevant is not None:
                self._complete(answers, plan, engine_facts, relevant, skip, none)
            self._plans[key] = plan, engine_facts
        return self._plans[key]

    def _complete(self, answers: Answers, plan: Plan, engine_facts: EngineFacts, relevant: frozenset[str],
                  skip: frozenset[str], none: str) -> None:
        """Run the capacity searches of the engines outside `relevant` whose fleet could change the smallest one.

        An engine's score reads another engine's plan only through the smallest fleet (plan_fleet_ratio: the smallest
        fleet of any predicted engine; see facts) and whether any engine is predicted at all (serving_predicted). An
        engine left without its searches is one whose fleet, whatever the searches would find, is no smaller than
        that smallest fleet (advisor.planner.perf.fleet_floor: at least one replica). Its plan_predicted is what the
        searches would have made it (they always end in a capacity); its other facts are not read by the flip search,
        which compares only the relevant engines' scores."""
        fleets = {e: f["plan_fleet_size"] for e, f in engine_facts.items() if e in relevant and f.get("plan_fleet_size")}
        for e, p in plan.engines.items():
            sv = p.serving
            if e in relevant or sv is None or sv.ttft_target_ms is None or p.loads is False:
                continue  # (no searches to skip: the plan is whole)
            if fleets and fleet_floor(p, self.knowledge) >= min(fleets.values()):
                engine_facts[e]["plan_predicted"] = True
                continue
            p = plan.engines[e] = plan_engine(e, plan.model, plan.target, workload_for(answers, self.knowledge),
                                               self.knowledge, self.lang, detail=False, calibration=self.calibration,
                                               serving_skip=skip,
                                               reuse=self._reuse.get(plan.target.model_dump_json()))
            f = engine_facts[e] = plan_facts(p, none)
            if f.get("plan_fleet_size"):
                fleets[e] = f["plan_fleet_size"]

    def facts(self, answers: Answers, detail: bool = True, relevant: frozenset[str] | None = None
              ) -> tuple[dict[str, Any], EngineFacts]:
        facts = build_facts(answers, self.hardware)
        plan, engine_facts = self.plan(answers, detail, relevant)
        if plan.model.params_b and not plan.model.approximate:
            facts["params_b"] = round(plan.model.params_b, 2)  # the resolved model's size wins
        if plan.model.id is not None:  # a model named from models.yaml: its own architecture wins over the default
            facts["architecture"] = plan.model.architecture
        facts["moe"] = plan.model.active_params_b < plan.model.params_b * 0.9
        facts["gpu_cc"] = plan.target.gpu_compute_capability  # for the support matrix, not a rule fact
        facts["gpu_arch"] = plan.target.gpu_arch or ""  # Gaudi is an Intel accelerator of its own (support matrix)
        facts["modality"] = plan.model.modality
        facts["mla"] = bool(plan.model.kv_lora_rank)
        facts["hf_architectures"] = tuple(plan.model.hf_architectures)  # for the support matrix's model_class row
        facts["model_type"] = plan.model.model_type
        facts["gguf_architecture"] = plan.model.gguf_architecture
        facts["sliding_window"] = plan.model.sliding_window if plan.model.sliding_layers else None
        facts["serving_predicted"] = any(f.get("plan_predicted") for f in engine_facts.values())
        # each engine's fleet against the smallest predicted (rough or fitted: "needs the fewest GPUs" must be true of
        # every prediction shown; a rough engine's lead inside the bands is undone by the support-first pass)
        fleets = {e: f["plan_fleet_size"] for e, f in engine_facts.items() if f.get("plan_fleet_size")}
        best = min(fleets.values()) if fleets else None
        for e, f in engine_facts.items():
            f["plan_fleet_ratio"] = round(fleets[e] / best, 1) if best and e in fleets else None
        return facts, engine_facts


def recommend(answers: Answers, hardware: Hardware | None, knowledge: Knowledge, lang: str = "en",
              with_flips: bool = True, spec: ModelSpec | None = None, machine: MachineBench | None = None,
              calibration: dict | None = None) -> Recommendation:
    """spec: the model resolved at the edge (from files); None resolves model.name / params_b here.
    machine: this CPU's measured bandwidth and FLOPS (advisor.planner.machine_bench), if known.
    calibration: this machine's recalibrated serving efficiencies (advisor.planner.calibration.load()), if any."""
    ev = Evaluator(hardware, knowledge, spec, machine, lang, calibration)
    facts, engine_facts = ev.facts(answers)
    plan, _ = ev.plan(answers)
    s = score(facts, knowledge, engine_facts)
    rules = {r.id: r for r in knowledge.rules.rules}
    sc = knowledge.rules.scoring

    def reason(rule_id: str, delta: float | None, engine: str) -> Reason:
        if rule_id == "base":
            return Reason(rule="base", text=_fmt(sc.base_text.get(lang), facts, knowledge.strings, lang), delta=delta, source=sc.source)
        if rule_id == "score-bounds":
            return Reason(rule=rule_id, text=_fmt(sc.clamp_text.get(lang), facts, knowledge.strings, lang), delta=round(delta, 2),
                          source=sc.source)
        # what the support-first and tie reasons rest on: the serving prediction's fit and its held-out bands
        fit_cite = {"source": "bench/fit_serving.py", "version": f"serving model fit of {knowledge.serving_fit.fitted}",
                    "read": str(knowledge.serving_fit.fitted)}
        if rule_id.startswith("support-first/"):
            _, over, ground = rule_id.split("/")
            mine, theirs = engine_facts[engine].get("plan_capacity"), engine_facts[over].get("plan_capacity")
            weaker, stronger = (("sup_status_experimental", "sup_status_supported") if ground == "experimental"
                                else ("val_plan_label_rough", "val_plan_label_fitted"))
            def shown(v: Any) -> Any:
                return "—" if v is None else v

            f = {**facts, "over": knowledge.engines[over].name, "mine": shown(mine), "theirs": shown(theirs),
                 "ttft_mine": shown(engine_facts[engine].get("plan_ttft_p95_ms")),
                 "ttft_theirs": shown(engine_facts[over].get("plan_ttft_p95_ms")), "weaker": knowledge.s(weaker, lang),
                 "stronger": knowledge.s(stronger, lang)}
            text = sc.rough_first_text if ground == "rough-both" else sc.support_first_text
            return Reason(rule=rule_id, text=_fmt(text.get(lang) if text else "", f, knowledge.strings, lang),
                          delta=round(delta, 2), **fit_cite)
        if rule_id.startswith(("tie-break/", "tie-kept/", "tie-capped/")):
            kind, over = rule_id.split("/", 1)
            fa, fb = engine_facts[engine], engine_facts[over]
            mine, theirs = fa["plan_capacity"], fb["plan_capacity"]
            f = {**facts, "over": knowledge.engines[over].name, "mine": mine, "theirs": theirs,
                 "pct": round(100 * (mine / theirs - 1)) if theirs else "—",
                 "band": fa.get("plan_band_pct") or 0, "band_over": fb.get("plan_band_pct") or 0}
            text = {"tie-break": sc.tie_break_text, "tie-kept": sc.tie_kept_text}.get(kind, sc.tie_capped_text)
            return Reason(rule=rule_id, text=_fmt(text.get(lang) if text else "", f, knowledge.strings, lang),
                          delta=round(delta, 2), **fit_cite)
        if rule_id.startswith("support/"):
            _, axis, key = rule_id.split("/", 2)
            v = next(v for v in support_verdicts(engine, facts, engine_facts[engine], knowledge)
                     if v.axis == axis and v.key == key)
            return Reason(rule=rule_id, text=support_text(v, knowledge, lang), delta=delta, source=v.cell.source or "",
                          version=v.cell.doc, read=v.cell.read)
        r = rules[rule_id]
        f = {**facts, **engine_facts[engine]} if r.scope == "each-engine" else facts
        cite = {"source": r.source_for(engine), "version": r.version_for(engine), "read": str(r.read)}
        if f.get("plan_by") == "silicon_ttft" and cite["source"] == fit_cite["source"]:
            # a serving reason whose every figure, the capacity it scores included, is the measured-silicon
            # predictor's: its validation (held out by source), not our model's fit, is what it rests on
            cite = {"source": "bench/predict_vs_measured.py",
                    "version": f"aiconfigurator-core {knowledge.aiconfigurator.version}",
                    "read": str(knowledge.aiconfigurator.read)}
        return Reason(rule=r.id, text=_fmt(r.text.get(lang), f, knowledge.strings, lang), delta=delta, **cite)

    ranking = [
        RankedEngine(engine=e, name=knowledge.engines[e].name, score=s.scores[e], plan=plan.engines[e],
                     reasons=[reason(rid, d, e) for rid, d in s.contributions[e]])
        for e in s.order()
    ]
    excluded = [
        ExcludedEngine(engine=e, name=knowledge.engines[e].name, plan=plan.engines[e],
                       reasons=[reason(rid, None, e) for rid in s.excluded[e]])
        for e in ks.ENGINE_IDS if e in s.excluded
    ]
    rec = Recommendation(ranking=ranking, excluded=excluded, lang=lang, facts=facts, plan=plan)
    if with_flips:
        rec.flips, rec.flip_note = find_flips(answers, ev, s)
        said = _tie_prediction(rec, knowledge, lang)
        if said and rec.flip_note:
            rec.flip_note += " " + said
    return rec


def _tie_prediction(rec: Recommendation, knowledge: Knowledge, lang: str) -> str | None:
    """When engines tie at the top and the serving prediction does separate them (walk-3 M2: SGLang 9 % cheaper per
    token than vLLM on the same page, yet "nothing separates them"), say by how much and against which band: a
    difference inside the band does not break the tie, and the reader is told so rather than left to wonder."""
    if len(rec.ranking) < 2 or rec.ranking[1].score != rec.ranking[0].score:
        return None
    tied = [r for r in rec.ranking if r.score == rec.ranking[0].score]
    cost = {r.name: (r.plan.serving.usd_per_m_output_tokens, r.plan.serving.band) for r in tied
            if r.plan is not None and r.plan.serving is not None and r.plan.serving.usd_per_m_output_tokens}
    first = tied[0].name
    if first not in cost or len(cost) < 2:
        return None
    cheap = min(cost, key=lambda n: cost[n][0])
    share = 1 - cost[cheap][0] / cost[first][0]
    if cheap == first or share < 0.05:
        return None
    band = max(cost[cheap][1], cost[first][1])
    key = "flip_tie_predicted_inside" if share < band else "flip_tie_predicted_beyond"
    return knowledge.s(key, lang, cheaper=cheap, first=first, pct=round(share * 100), band=round(band * 100))

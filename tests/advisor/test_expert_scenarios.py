"""Expert scenarios, written from the engines' public docs before looking at what the advisor answers
(tests/advisor/data/expert_scenarios.yaml: each with its expected first engine(s), the engines a doc says cannot
run it, and the sources). The advisor must rank an expected engine first and exclude every one named."""
from pathlib import Path

import pytest
import yaml

from advisor.decide.rules import recommend
from advisor.inputs.answers import parse_answers
from advisor.knowledge.load import load_knowledge

K = load_knowledge()
SCENARIOS = yaml.safe_load((Path(__file__).parent / "data" / "expert_scenarios.yaml").read_text(encoding="utf-8"))[
    "scenarios"]


def test_the_table_is_big_enough_and_sourced():
    assert len(SCENARIOS) >= 20
    for s in SCENARIOS:
        assert s["sources"] and all(u.startswith("https://") for u in s["sources"]), s["id"]
        assert s["why"]["en"] and s["why"]["zh"]


@pytest.mark.parametrize("s", SCENARIOS, ids=[s["id"] for s in SCENARIOS])
def test_expert_scenario(s):
    rec = recommend(parse_answers(s["answers"]), None, K, with_flips=False)
    top = rec.ranking[0].engine
    excluded = {e.engine for e in rec.excluded}
    ranking = [(r.engine, r.score) for r in rec.ranking]
    assert top in s["expect_top"], f"top {top}, expected {s['expect_top']}; ranking {ranking}; excluded {excluded}"
    missing = set(s.get("expect_excluded") or []) - excluded
    assert not missing, f"{missing} should be excluded ({s['why']['en']})"

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
DATA = Path(__file__).parent / "data"
SCENARIOS = yaml.safe_load((DATA / "expert_scenarios.yaml").read_text(encoding="utf-8"))["scenarios"]
NEW = yaml.safe_load((DATA / "expert_scenarios_2026.yaml").read_text(encoding="utf-8"))["scenarios"]
# SGLang as the sixth engine (issue 20): where it is, and is not, the right choice
SGLANG = yaml.safe_load((DATA / "expert_scenarios_sglang.yaml").read_text(encoding="utf-8"))["scenarios"]


def test_the_table_is_big_enough_and_sourced():
    assert len(SCENARIOS) >= 20 and len(NEW) >= 30 and len(SGLANG) >= 8
    ids = [s["id"] for s in SCENARIOS + NEW + SGLANG]
    assert len(ids) == len(set(ids))
    assert any("sglang" in s["expect_top"] for s in SGLANG) and any("sglang" in (s.get("expect_excluded") or [])
                                                                    for s in SGLANG)
    for s in SCENARIOS + NEW + SGLANG:
        assert s["sources"] and all(u.startswith("https://") for u in s["sources"]), s["id"]
        assert s["why"]["en"] and s["why"]["zh"]


def _param(s):
    """A scenario whose expected answer the advisor does not give yet carries `known_gap` (why): it is an expected
    failure, and a strict one, so that the day it passes the mark must go."""
    marks = [pytest.mark.xfail(strict=True, reason=s["known_gap"])] if s.get("known_gap") else []
    return pytest.param(s, id=s["id"], marks=marks)


@pytest.mark.parametrize("s", [_param(s) for s in SCENARIOS + NEW + SGLANG])
def test_expert_scenario(s):
    rec = recommend(parse_answers(s["answers"]), None, K, with_flips=False)
    top = rec.ranking[0].engine
    excluded = {e.engine for e in rec.excluded}
    ranking = [(r.engine, r.score) for r in rec.ranking]
    assert top in s["expect_top"], f"top {top}, expected {s['expect_top']}; ranking {ranking}; excluded {excluded}"
    missing = set(s.get("expect_excluded") or []) - excluded
    assert not missing, f"{missing} should be excluded ({s['why']['en']})"
    wrongly_out = set(s.get("expect_ranked") or []) & excluded
    assert not wrongly_out, f"{wrongly_out} should stay in the ranking ({s['why']['en']}); ranking {ranking}"
    assert top not in set(s.get("expect_not_top") or []), f"{top} should not lead ({s['why']['en']}); ranking {ranking}"

"""Knowledge files: they load, every fact is sourced, and malformed files fail with file, key and problem."""
import shutil
from pathlib import Path

import pytest
import yaml

from advisor.knowledge.load import KNOWLEDGE_DIR, KnowledgeError, load_knowledge
from advisor.knowledge.schema import ENGINE_IDS


def test_real_knowledge_loads():
    k = load_knowledge()
    assert list(k.engines) == list(ENGINE_IDS)
    assert len(k.checklist.questions) == 8
    assert len(k.rules.rules) >= 20
    for r in k.rules.rules:
        assert r.text.en and r.text.zh and r.source


def test_impossible_seed_claims_are_kept_only_as_claims():
    k = load_knowledge()
    impossible = [c for c in k.claims.claims if c.verdict == "impossible"]
    assert len(impossible) >= 3
    rules_text = (KNOWLEDGE_DIR / "rules.yaml").read_text()
    for figure in ("65GB", "65 GB", "18GB", "120ms", "120 ms"):
        assert figure not in rules_text


@pytest.fixture
def kdir(tmp_path):
    d = tmp_path / "knowledge"
    shutil.copytree(KNOWLEDGE_DIR, d)
    return d


def _edit(path: Path, fn):
    data = yaml.safe_load(path.read_text())
    fn(data)
    path.write_text(yaml.safe_dump(data, allow_unicode=True))


def _fails(kdir) -> str:
    with pytest.raises(KnowledgeError) as info:
        load_knowledge(kdir)
    msg = str(info.value)
    assert "\n" not in msg
    return msg


def test_unknown_operator_names_file_rule_and_problem(kdir):
    _edit(kdir / "rules.yaml", lambda d: d["rules"][2].__setitem__("when", {"fact": "concurrency", "bigger": 3}))
    msg = _fails(kdir)
    assert msg.startswith("rules.yaml:") and "rules[2]" in msg and "bigger" in msg


def test_unknown_fact_is_rejected(kdir):
    _edit(kdir / "rules.yaml", lambda d: d["rules"][0].__setitem__("when", {"fact": "gpu_vendr", "eq": "x"}))
    msg = _fails(kdir)
    assert "rules.yaml" in msg and "gpu_vendr" in msg and "known facts" in msg


def test_missing_source_is_rejected(kdir):
    _edit(kdir / "engines.yaml", lambda d: d["engines"][0]["hardware"].pop("source"))
    msg = _fails(kdir)
    assert msg.startswith("engines.yaml:") and "source" in msg


def test_bad_source_is_rejected(kdir):
    _edit(kdir / "rules.yaml", lambda d: d["rules"][0].__setitem__("source", "a blog I read"))
    assert "source must be" in _fails(kdir)


def test_missing_translation_is_rejected(kdir):
    _edit(kdir / "checklist.yaml", lambda d: d["questions"][0]["question"].pop("zh"))
    msg = _fails(kdir)
    assert "checklist.yaml" in msg and "zh" in msg


def test_unknown_engine_in_deltas(kdir):
    _edit(kdir / "rules.yaml", lambda d: d["rules"][5].__setitem__("deltas", {"mlc-llm": 3}))
    msg = _fails(kdir)
    assert "rules.yaml" in msg and "mlc-llm" in msg


def test_duplicate_rule_id(kdir):
    _edit(kdir / "rules.yaml", lambda d: d["rules"].append(dict(d["rules"][0])))
    assert "duplicate rule id" in _fails(kdir)


def test_broken_yaml_names_line(kdir):
    (kdir / "gpus.yaml").write_text("gpus: [\n  {id: t4,\n")
    msg = _fails(kdir)
    assert msg.startswith("gpus.yaml:") and "line" in msg


def test_missing_file(kdir):
    (kdir / "claims.yaml").unlink()
    assert "claims.yaml" in _fails(kdir)


def test_plan_facts_need_an_each_engine_rule(kdir):
    _edit(kdir / "rules.yaml", lambda d: d["rules"][0].__setitem__("when", {"fact": "plan_fits", "eq": False}))
    msg = _fails(kdir)
    assert "plan_fits" in msg and "scope: each-engine" in msg


def test_each_engine_rule_cannot_use_deltas(kdir):
    def bad(d):
        rule = next(r for r in d["rules"] if r.get("scope") == "each-engine")
        rule["deltas"] = {"vllm": 5}
    _edit(kdir / "rules.yaml", bad)
    assert "self_delta" in _fails(kdir)


def test_planner_precision_map_must_name_a_known_precision(kdir):
    _edit(kdir / "planner.yaml", lambda d: d["engines"]["vllm"]["precision_map"].__setitem__("fp16", "fp12"))
    msg = _fails(kdir)
    assert msg.startswith("planner.yaml:") and "precision_map.fp16" in msg and "ort_int4" in msg


def test_planner_constants_need_sources(kdir):
    _edit(kdir / "planner.yaml", lambda d: d["precisions"]["q4_k_m"].__setitem__("source", "a blog"))
    msg = _fails(kdir)
    assert "planner.yaml" in msg and "source" in msg

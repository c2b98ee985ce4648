"""A Google Cloud TPU or a Huawei Ascend NPU as the target: the answers can say so, the catalogue knows the parts,
the support matrix reads their own rows (google_tpu, npu_ascend), and every command runs on them without a
traceback. What each engine does there is the knowledge's to say (support.yaml cells, planner.yaml gpu_vendors),
so these tests assert that it runs and what it is about, not a ranking."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from advisor.inputs.answers import AnswersError, parse_answers
from advisor.inputs.facts import build_facts
from advisor.knowledge import schema as ks
from advisor.knowledge.load import load_knowledge
from advisor.knowledge.schema import ENGINE_IDS
from advisor.knowledge.support import rows
from advisor.planner import find_gpu, make_plan

ROOT = Path(__file__).resolve().parents[2]
K = load_knowledge()
MODEL = {"name": "llama-3.1-8b", "precision": "bf16", "context_tokens": 8192}
TPU = {"concurrency": 16, "model": MODEL,  # a v6e-8: one host, 8 chips (the v6e slice Google sizes for serving)
       "hardware": {"gpu_vendor": "google", "gpu_model": "TPU v6e", "gpu_count": 8, "ram_gb": 1536,
                    "cpu_cores": 180, "os": "linux"}}
ASCEND = {"concurrency": 16, "model": MODEL,  # an Atlas A2 box: 8 Ascend 910B2 on HCCS, Kunpeng (Arm) host
          "hardware": {"gpu_vendor": "huawei", "gpu_model": "Ascend 910B2", "gpu_count": 8, "ram_gb": 1024,
                       "cpu_cores": 192, "cpu_arch": "arm64", "os": "linux"}}
CASES = {"tpu": (TPU, "tpu-v6e", "tpu", "google_tpu"), "ascend": (ASCEND, "ascend-910b2", "npu", "npu_ascend")}


@pytest.mark.parametrize("case", CASES)
def test_the_answers_name_the_accelerator_and_its_own_memory(case):
    data, gpu_id, accelerator, _ = CASES[case]
    hw = parse_answers(data).hardware
    assert hw.accelerator == accelerator and hw.gpu_count == 8 and hw.gpus_per_node == 8
    assert hw.unified_memory is False  # HBM on the chip, not the host's RAM
    target = make_plan(parse_answers(data), None, K).target
    assert target.gpu_id == gpu_id and target.gpu_memory_gib == find_gpu(gpu_id, K).memory_gb
    assert target.interconnect == {"tpu": "ici", "ascend": "hccs"}[case]


def test_the_accelerator_kind_follows_the_vendor():
    with pytest.raises(AnswersError, match="tpu accelerator needs gpu_vendor google"):
        parse_answers({"hardware": {"gpu_vendor": "nvidia", "accelerator": "tpu"}})
    with pytest.raises(AnswersError, match="npu accelerator needs"):
        parse_answers({"hardware": {"gpu_vendor": "google", "accelerator": "npu"}})
    # a vendor whose parts are all one kind: the kind written (or left at its default) is that kind
    assert parse_answers({"hardware": {"gpu_vendor": "google"}}).hardware.accelerator == "tpu"
    assert parse_answers({"hardware": {"gpu_vendor": "huawei", "accelerator": "gpu"}}).hardware.accelerator == "npu"
    # the user's own figures stand: unified_memory is only filled in when left out
    assert parse_answers({"hardware": {"gpu_vendor": "huawei", "unified_memory": True}}).hardware.unified_memory
    with pytest.raises(AnswersError, match="gpu_memory_gb must be greater than 0"):
        parse_answers({"hardware": {"gpu_vendor": "google", "gpu_memory_gb": 0}})
    with pytest.raises(AnswersError, match="nodes x gpus_per_node"):
        parse_answers({"hardware": {"gpu_vendor": "google", "nodes": 2, "gpus_per_node": 4, "gpu_count": 4}})
    two_hosts = parse_answers({"hardware": {"gpu_vendor": "google", "gpu_model": "TPU v5e", "nodes": 2,
                                            "gpus_per_node": 8, "interconnect": "ici"}}).hardware
    assert two_hosts.gpu_count == 16 and two_hosts.interconnect == "ici"


@pytest.mark.parametrize("case", CASES)
def test_the_support_rows_read_the_new_accelerator_keys(case):
    data, _, _, key = CASES[case]
    facts = build_facts(parse_answers(data), None)
    assert rows(facts, {})["accelerator"] == key
    # a machine described as detected carries accelerator "gpu": the vendor alone decides
    assert rows({**facts, "accelerator": "gpu"}, {})["accelerator"] == key
    for e in ENGINE_IDS:
        assert key in K.support.engines[e].accelerator, (e, key)


def test_the_catalogue_holds_the_current_tpus_and_the_910b():
    want = {"tpu-v5e": (16, 819), "tpu-v5p": (95, 2765), "tpu-v6e": (32, 1638), "tpu7x": (192, 7380),
            "ascend-910b2": (64, 1600)}
    for gid, (mem, bw) in want.items():
        g = find_gpu(gid, K)
        assert (g.memory_gb, g.bandwidth_gb_s, g.memory_unit) == (mem, bw, "GiB"), gid
        assert g.source.startswith("https://") and g.read and not g.unified_memory and g.fp16_tflops_dense
    for g in K.gpus.gpus:
        assert (g.kind == "tpu") == (g.vendor == "google"), g.id
        if g.vendor == "huawei":
            assert g.kind == "npu" and g.interconnect == "hccs", g.id
    assert find_gpu("Trillium", K).id == "tpu-v6e" and find_gpu("Ironwood", K).id == "tpu7x"
    assert find_gpu("Ascend 910B", K).id == "ascend-910b2"
    base = find_gpu("tpu-v6e", K).model_dump()
    with pytest.raises(ValueError, match="kind tpu is Google's"):
        ks.Gpu(**{**base, "kind": "gpu"})
    with pytest.raises(ValueError, match="kind tpu is Google's"):
        ks.Gpu(**{**base, "vendor": "nvidia", "compute_capability": "9.0"})


def _run(*args):
    return subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=180)


@pytest.mark.parametrize("case", CASES)
def test_recommend_plan_and_report_run_on_the_target(case, tmp_path):
    data, gpu_id, _, key = CASES[case]
    f = tmp_path / f"{case}.yaml"
    f.write_text(yaml.safe_dump(data), encoding="utf-8")

    p = _run("recommend", "--answers", str(f), "--format", "json")
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    rec = json.loads(p.stdout)
    assert sorted([r["engine"] for r in rec["ranking"]] + [x["engine"] for x in rec["excluded"]]) == sorted(ENGINE_IDS)
    assert rec["target"]["gpu_id"] == gpu_id

    p = _run("plan", "--answers", str(f), "--format", "json")
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    plan = json.loads(p.stdout)
    assert set(plan["engines"]) == set(ENGINE_IDS) and plan["target"]["gpu_vendor"] == data["hardware"]["gpu_vendor"]

    for lang in ("en", "zh"):
        out = tmp_path / f"{case}-{lang}.md"
        p = _run("report", "--answers", str(f), "--lang", lang, "--out", str(out))
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
        text = out.read_text(encoding="utf-8")
        assert find_gpu(gpu_id, K).name in text  # the hardware line names the part
        assert K.s(f"sup_accelerator_{key}", lang) in text  # the can-it-run table has its own row


@pytest.mark.parametrize("gpu_id", ["tpu-v6e", "ascend-910b2"])
def test_the_hardware_page_picks_a_tpu_or_an_ascend(gpu_id):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("pages/2_Hardware.py").run()
    at.radio(key="hw_mode").set_value("other").run()
    g = find_gpu(gpu_id, K)
    assert f"{g.name} ({g.memory_gb:g} GB)" in at.selectbox(key="hw_gpu").options  # the catalogue's own name
    at.selectbox(key="hw_gpu").set_value(gpu_id).run()
    at.number_input(key="hw_count").set_value(8).run()
    assert not at.exception
    hw = parse_answers(at.session_state["answers"]).hardware
    assert (hw.gpu_vendor, hw.gpu_model, hw.gpu_count, hw.accelerator) == (g.vendor, g.name, 8, g.kind)
    key = {"google": "google_tpu", "huawei": "npu_ascend"}[g.vendor]
    assert any(K.s(f"sup_accelerator_{key}", "en") in m.value for m in at.markdown)
    col = K.s("col_engine", "en")  # the installed-engines table: one row per engine id, SGLang among them
    table = next(d.value for d in at.dataframe if col in d.value.columns)
    assert sorted(table[col]) == sorted(ENGINE_IDS)

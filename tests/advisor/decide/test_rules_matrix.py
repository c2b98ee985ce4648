"""No rule contradicts the support matrix (issue 20: rules rewritten from the engines' docs).

Each rule names in `about` the cells it is about: support.yaml `axis/key`, or `engine/build_step` (engines.yaml: does
the engine need an offline build or conversion step before it serves a new checkpoint; no step reads as supported).
An engine's status for a rule is the worst over those cells, since the rule speaks for all of them. Then:

1. no positive delta for an engine `unsupported` on a cell the rule is about;
2. an engine `supported` on the cells is not excluded, and not set back more than SETBACK points below the rule's best
   delta, unless the rule says why (`says_why`: its text names the engine in both languages and, where it scores
   the engine, cites that engine's own doc). SETBACK is the matrix's own charge for an `experimental` cell (8):
   a rule may cost a supported engine at most what the matrix costs one that is only experimental;
3. the deltas follow the statuses: supported >= experimental >= unsupported (same exemption);
4. the condition is evaluated against the cells: for each axis whose facts the condition tests (gpu_vendor for the
   accelerator, architecture / modality, precision, os, kv_cache_dtype), every workload of a grid over those facts
   that fires the rule lands on one of the named cells (advisor.knowledge.support.rows), and some workload fires it.
   Cells on an axis the condition does not test (serving features, the OSes a cross-platform app must reach) are
   capabilities the rule credits: 1-3 hold for them.

A rule with `about: []` speaks of what the matrix has no axis for; those are pinned in NO_AXIS, so a new rule cannot
skip the check unnoticed. The old seed-based rules the issue names are kept below as they were: each must fail.
"""
from __future__ import annotations

import itertools
from typing import Any, get_args

import pytest
import yaml

from advisor.inputs.answers import Answers, Architecture, GpuVendor, Modality
from advisor.inputs.facts import build_facts
from advisor.knowledge import schema as ks
from advisor.knowledge.conditions import compile_condition, leaves
from advisor.knowledge.load import load_knowledge
from advisor.knowledge.support import rows
from advisor.knowledge.vocabulary import Precision

K = load_knowledge()
SETBACK = abs(K.support.scoring.experimental)
RANK = {"unsupported": 0, "experimental": 1, "supported": 2}

# rules whose subject has no support cell: team skills, a way of working, the deployment shape, the capacity plan
NO_AXIS = {"cnn-not-an-llm-engine", "single-user-unpredicted", "no-cuda-experience", "some-cuda-experience",
           "strong-cuda-experience", "research-iteration", "non-llm-platform", "strict-sla-on-nvidia", "edge-deployment",
           "plan-does-not-load", "plan-kv-short", "plan-fits-only-with-offload", "plan-offload-ram-unknown",
           "plan-tight-headroom",
           # the serving prediction (advisor/planner/perf.py): a prediction, not a support cell
           "predicted-meets", "predicted-meets-with-margin", "predicted-meets-with-margin-rough", "predicted-meets-rough",
           "predicted-needs-replicas", "predicted-needs-many-replicas", "predicted-misses", "predicted-misses-in-band",
           "predicted-misses-rough", "predicted-misses-rough-in-band",
           "predicted-replicas-rough",
           "predicted-smallest-fleet", "predicted-larger-fleet"}

# how a rule's text names each engine, and where each engine's own docs live
NAMES = {"vllm": ("vLLM",), "sglang": ("SGLang",), "tensorrt-llm": ("TensorRT-LLM",), "onnxruntime": ("ONNX Runtime",),
         "llama.cpp": ("llama.cpp", "llama-server"), "pytorch": ("PyTorch", "transformers")}
OWN_DOCS = {"vllm": ("vllm",), "sglang": ("sglang",), "tensorrt-llm": ("TensorRT-LLM",), "onnxruntime": ("onnxruntime",),
            "llama.cpp": ("llama.cpp", "ggml"),
            "pytorch": ("pytorch.org", "huggingface.co/docs/transformers", "huggingface/transformers",
                        "huggingface.co/docs/accelerate")}

# the facts that decide the user's row on each can-it-run axis (advisor.knowledge.support.rows)
AXIS_FACTS = {"os": {"os"}, "accelerator": {"gpu_vendor", "accelerator", "cpu_arch", "gpu_arch"},
              "architecture": {"architecture", "modality", "moe"}, "modality": {"modality", "architecture"},
              "precision": {"precision"}, "kv_cache_dtype": {"kv_cache_dtype"}}
DOMAIN: dict[str, list[Any]] = {
    "gpu_vendor": list(get_args(GpuVendor)), "accelerator": ["gpu", "npu", "tpu"], "cpu_arch": ["x86_64", "arm64", None],
    "gpu_arch": ["", "gaudi3"], "os": ["linux", "windows", "windows-wsl", "macos", None],
    "architecture": list(get_args(Architecture)), "modality": list(get_args(Modality)), "moe": [False, True],
    "mla": [False, True], "precision": list(get_args(Precision)), "kv_cache_dtype": ["auto", "fp16", "bf16", "fp8", "int8"],
}


def status(k, engine: str, cell: str) -> str:
    if cell == "engine/build_step":
        return "unsupported" if k.engines[engine].build_step.required else "supported"
    axis, key = cell.split("/")
    return getattr(k.support.engines[engine], axis)[key].status


def worst(k, rule: ks.Rule, engine: str) -> str | None:
    """The engine's status for the rule: the worst over its cells; None while a cell is unknown (nothing asserted)."""
    known = [s for s in (status(k, engine, c) for c in rule.about) if s != "unknown"]
    if "unsupported" in known:
        return "unsupported"
    if len(known) < len(rule.about):
        return None
    return min(known, key=RANK.__getitem__)


def excluded_by_matrix(k, rule: ks.Rule, engine: str) -> bool:
    """An engine unsupported on a can-it-run cell of the rule is excluded by the matrix: its delta never counts."""
    return any(c.split("/")[0] in ks.CAN_RUN_AXES and status(k, engine, c) == "unsupported" for c in rule.about)


def says_why(rule: ks.Rule, engine: str) -> bool:
    named = all(any(n in t for n in NAMES[engine]) for t in (rule.text.en, rule.text.zh))
    own = engine not in rule.deltas or any(m.lower() in rule.source_for(engine).lower() for m in OWN_DOCS[engine])
    return named and own


def matrix_problems(k, rule: ks.Rule) -> list[str]:
    """Checks 1-3 for one answers-scope rule."""
    if rule.scope != "answers" or not rule.about:
        return []
    out = []
    best = max([0.0, *rule.deltas.values()])
    st = {e: worst(k, rule, e) for e in ks.ENGINE_IDS}
    d = {e: rule.deltas.get(e, 0.0) for e in ks.ENGINE_IDS}
    for e in ks.ENGINE_IDS:
        if d[e] > 0 and st[e] == "unsupported":
            cells = [c for c in rule.about if status(k, e, c) == "unsupported"]
            out.append(f"{rule.id}: +{d[e]:g} for {e}, unsupported on {', '.join(cells)}")
        if st[e] == "supported" and not says_why(rule, e):
            if e in rule.exclude:
                out.append(f"{rule.id}: excludes {e}, supported on {', '.join(rule.about)}, without saying why")
            elif best - d[e] > SETBACK:
                out.append(f"{rule.id}: sets {e} back {best - d[e]:g} points (> {SETBACK:g}) though it is supported "
                           f"on {', '.join(rule.about)}, without saying why")
    for a, b in itertools.permutations(ks.ENGINE_IDS, 2):
        if st[a] is None or st[b] is None or a in rule.exclude or excluded_by_matrix(k, rule, b):
            continue
        if RANK[st[a]] > RANK[st[b]] and d[a] < d[b] and not says_why(rule, a):
            out.append(f"{rule.id}: {a} ({st[a]}) gets {d[a]:g}, below {b} ({st[b]}) at {d[b]:g}, without saying why")
    return out


def _candidates(leaf: ks.Leaf) -> list[Any]:
    if leaf.fact in DOMAIN:
        return DOMAIN[leaf.fact]
    arg = leaf.operand
    if leaf.op in ("in", "not_in"):
        return [*arg, "(another value)"]
    if isinstance(arg, bool):
        return [True, False]
    if leaf.op in ("gt", "gte", "lt", "lte"):
        return [arg - 1, arg, arg + 1]
    return [arg, "(another value)"]


def _base_facts() -> dict[str, Any]:
    f = build_facts(Answers(), None)
    f.update(gpu_arch="", gpu_cc=None)
    return f


def condition_problems(rule: ks.Rule) -> list[str]:
    """Check 4: the condition lands only on the cells it names, for each axis it speaks of."""
    if not rule.about:
        return []
    tested = {leaf.fact for leaf in leaves(rule.when)}
    keys: dict[str, set[str]] = {}
    for cell in rule.about:
        axis, _, key = cell.partition("/")
        if axis in AXIS_FACTS and AXIS_FACTS[axis] & tested:
            keys.setdefault(axis, set()).add(key)
    grid: dict[str, list[Any]] = {}
    for leaf in leaves(rule.when):
        grid[leaf.fact] = _candidates(leaf)
    for axis in keys:
        for fact in AXIS_FACTS[axis]:
            grid.setdefault(fact, DOMAIN[fact])
    test, base, fired, out = compile_condition(rule.when), _base_facts(), 0, []
    for combo in itertools.product(*grid.values()):
        facts = {**base, **dict(zip(grid, combo))}
        if not test(facts):
            continue
        fired += 1
        row = rows(facts, {"plan_precision_id": facts.get("precision")})
        on = {axis: row.get(axis) for axis in keys}
        wrong = {a: v for a, v in on.items() if v is not None and v not in keys[a]}
        if wrong or (keys and all(v is None for v in on.values())):
            shown = {f: facts[f] for f in grid}
            out.append(f"{rule.id}: fires for {shown}, whose row is {on or row}, not {sorted(rule.about)}")
            break
    if not fired:
        out.append(f"{rule.id}: its condition never fires on a workload")
    return out


# ---------------------------------------------------------------- the real rules

ANSWER_RULES = [r for r in K.rules.rules if r.scope == "answers"]


@pytest.mark.parametrize("rule", ANSWER_RULES, ids=lambda r: r.id)
def test_a_rule_agrees_with_the_matrix(rule):
    assert matrix_problems(K, rule) == []
    assert condition_problems(rule) == []


def test_only_the_pinned_rules_have_no_support_cell():
    assert {r.id for r in K.rules.rules if not r.about} == NO_AXIS


def test_every_cell_a_rule_names_exists_and_every_engine_is_in_the_rules():
    for r in K.rules.rules:
        for cell in r.about:
            for e in ks.ENGINE_IDS:
                assert status(K, e, cell) in (*RANK, "unknown"), (r.id, cell, e)
    scored = {e for r in ANSWER_RULES for e in (*r.deltas, *r.exclude)}
    assert scored == set(ks.ENGINE_IDS)
    assert K.rules.scoring.base["sglang"] == K.rules.scoring.base["vllm"]


def test_a_reason_about_an_engine_cites_that_engines_own_doc():
    for r in ANSWER_RULES:
        for e in (*r.deltas, *r.exclude):
            assert any(m.lower() in r.source_for(e).lower() for m in OWN_DOCS[e]), (r.id, e, r.source_for(e))
            assert r.version_for(e)


def test_every_rule_is_sourced_now_and_dated():
    for r in K.rules.rules:
        assert not ks.is_seed(r.source) and all(not ks.is_seed(s) for s in r.sources.values()), r.id
        assert r.read >= "2026-12-01", r.id
        assert r.origin is None or ks.is_seed(r.origin), r.id
    assert K.rules.scoring.current_source is None and ks.is_seed(K.rules.scoring.source)  # a convention, see rules.yaml


def test_prefix_sharing_favours_sglang_most_and_onnxruntime_not_at_all():
    rule = next(r for r in ANSWER_RULES if r.about == ["serving/prefix_caching"])
    d = rule.deltas
    assert d["sglang"] > d["vllm"] == d["tensorrt-llm"] > d["llama.cpp"] > d.get("onnxruntime", 0) == 0
    assert "2312.07104" in rule.source and "2312.07104" in rule.text.en


# ---------------------------------------------------------------- the checks reject the old rules

# as knowledge/rules.yaml had them before issue 20 (deltas, exclusions, conditions and texts verbatim); only the
# fields the schema now requires are added: `about` (the cells each is about), a current source, version and read
OLD = """
- id: frequent-model-updates
  when: {fact: model_update, in: [weekly, daily]}
  deltas: {tensorrt-llm: -15, onnxruntime: -6, pytorch: 8, vllm: 4}
  text:
    en: "The model changes {model_update}: each change means a TensorRT-LLM engine rebuild (minutes to hours) or a new ONNX export, while vLLM and transformers load checkpoints directly."
    zh: "模型{model_update}更新：每次都要重建 TensorRT-LLM 引擎（数分钟到数小时）或重新导出 ONNX，而 vLLM 与 transformers 直接加载权重。"
  about: [engine/build_step]
- id: no-gpu-favours-llama-cpp
  when: {fact: gpu_vendor, eq: none}
  deltas: {llama.cpp: 25, onnxruntime: 10, pytorch: -5, vllm: -25}
  text:
    en: "No GPU: llama.cpp (quantized GGUF on CPU) first, ONNX Runtime's CPU provider next; vLLM's CPU backend is far slower than its GPU path."
    zh: "没有 GPU：首选 llama.cpp（CPU 上运行量化 GGUF），其次 ONNX Runtime CPU 执行提供程序；vLLM 的 CPU 后端远慢于 GPU。"
  about: [accelerator/cpu_x86, accelerator/cpu_arm]
- id: encoder-decoder-model
  when: {all: [{fact: architecture, eq: encoder-decoder}, {not: {fact: modality, eq: speech}}]}
  deltas: {llama.cpp: -8, onnxruntime: 12, pytorch: 12}
  text:
    en: "Encoder-decoder models (T5-like): transformers and ONNX Runtime serve them well; llama.cpp runs only the T5 family, outside its server (vLLM's exclusion comes from the support matrix)."
    zh: "编码器-解码器模型（如 T5）：transformers 与 ONNX Runtime 支持良好；llama.cpp 只能在其服务器之外运行 T5 系列（vLLM 的排除来自支持矩阵）。"
  about: [architecture/encoder_decoder]
- id: moderate-concurrency
  when: {all: [{fact: concurrency, gte: 4}, {fact: concurrency, lt: 32}]}
  deltas: {vllm: 12, tensorrt-llm: 8, llama.cpp: -3, pytorch: -12}
  text:
    en: "{concurrency} concurrent requests already benefit from batching engines."
    zh: "{concurrency} 路并发已能从批处理引擎中获益。"
  about: [serving/continuous_batching]
- id: apple-silicon-metal
  when: {fact: gpu_vendor, eq: apple}
  deltas: {llama.cpp: 28, onnxruntime: 5, vllm: -12}
  text:
    en: "Apple Silicon: llama.cpp was built for it (Metal, unified memory); vLLM has only an experimental CPU path on macOS."
    zh: "Apple Silicon：llama.cpp 为其而生（Metal、统一内存）；vLLM 在 macOS 上只有实验性的 CPU 路径。"
  about: [accelerator/apple_metal]
- id: intel-gpu
  when: {fact: gpu_vendor, eq: intel}
  deltas: {vllm: 10, onnxruntime: 8, llama.cpp: 5, pytorch: 2}
  text:
    en: "Intel GPU: vLLM serves on Intel XPU (Data Center GPU Max, Arc); ONNX Runtime's OpenVINO provider and llama.cpp's SYCL backend run there too."
    zh: "Intel GPU：vLLM 支持 Intel XPU（数据中心 GPU Max、Arc）；ONNX Runtime 的 OpenVINO 执行提供程序与 llama.cpp 的 SYCL 后端也可运行。"
  about: [accelerator/intel_xpu]
"""
# what each check must say about each old rule
OLD_FAILS = {
    "frequent-model-updates": ["sets tensorrt-llm back 23 points"],
    "no-gpu-favours-llama-cpp": ["sets vllm back 50 points", "sets pytorch back 30 points",
                                 "sets onnxruntime back 15 points"],
    "encoder-decoder-model": ["sets tensorrt-llm back 12 points", "fires for"],
    "moderate-concurrency": ["sets llama.cpp back 15 points", "llama.cpp (supported) gets -3, below onnxruntime"],
    "apple-silicon-metal": ["sets pytorch back 28 points", "pytorch (supported) gets 0, below onnxruntime"],
    "intel-gpu": ["fires for"],
}


def _old_rules() -> list[ks.Rule]:
    out = []
    for r in yaml.safe_load(OLD):
        r.update(source="https://example.org/a-seed-era-rule", version="old", read="2026-12-01")  # no engine's doc
        out.append(ks.Rule.model_validate(r))
    return out


@pytest.mark.parametrize("rule", _old_rules(), ids=lambda r: r.id)
def test_the_old_rule_is_rejected(rule):
    said = matrix_problems(K, rule) + condition_problems(rule)
    for expected in OLD_FAILS[rule.id]:
        assert any(expected in s for s in said), (expected, said)


def test_what_replaced_each_old_rule_passes():
    by_id = {r.id: r for r in K.rules.rules}
    for old in OLD_FAILS:
        new = by_id.get(old) or by_id.get({"no-gpu-favours-llama-cpp": "no-gpu-cpu-backends",
                                           "moderate-concurrency": "moderate-concurrency-unpredicted"}.get(old, ""))
        assert new is not None, old
        assert matrix_problems(K, new) + condition_problems(new) == []


# ---------------------------------------------------------------- the schema: what a rule must carry

def _rule(**over) -> dict:
    r = {"id": "x", "when": {"fact": "concurrency", "gte": 4}, "deltas": {"vllm": 1}, "about": [],
         "text": {"en": "vLLM", "zh": "vLLM"}, "source": "https://docs.vllm.ai/en/latest/", "version": "vLLM docs",
         "read": "2026-12-01"}
    r.update(over)
    return r


@pytest.mark.parametrize("over, said", [
    ({"source": "003_3107f110d92ff8c9.txt §8"}, "not a seed article"),
    ({"sources": {"vllm": "000_2f6ac63d07d6332f.txt §vLLM"}, "versions": {"vllm": "x"}}, "not a seed article"),
    ({"origin": "https://docs.vllm.ai/"}, "origin must be a seed file"),
    ({"read": "last week"}, "read must be a date"),
    ({"about": ["serving/teleportation"]}, "about names no support cell"),
    ({"about": ["serving/paged_kv", "serving/paged_kv"]}, "names a cell twice"),
    ({"sources": {"vllm": "https://docs.vllm.ai/en/latest/"}}, "versions must name"),
    ({"version": ""}, "at least 1 character"),
])
def test_a_rule_without_a_current_dated_source_is_refused(over, said):
    with pytest.raises(ValueError, match=said):
        ks.Rule.model_validate(_rule(**over))
    d = _rule()
    d.pop("about")
    with pytest.raises(ValueError, match="about"):
        ks.Rule.model_validate(d)


def test_an_unquoted_yaml_date_is_read_as_the_date():
    r = ks.Rule.model_validate(_rule(read=yaml.safe_load("2026-12-01")))
    assert r.read == "2026-12-01" and r.version_for("sglang") == "vLLM docs"


def test_an_outdated_claim_needs_its_evidence():
    claim = {"id": "c", "quote": "q", "claim": {"en": "c", "zh": "c"}, "verdict": "outdated",
             "check": {"en": "c", "zh": "c"}, "source": "000_2f6ac63d07d6332f.txt §vLLM"}
    with pytest.raises(ValueError, match="evidence"):
        ks.Claim.model_validate(claim)
    with pytest.raises(ValueError, match="seed file"):
        ks.Claim.model_validate({**claim, "source": "https://docs.vllm.ai/", "evidence": "https://docs.vllm.ai/"})
    assert ks.Claim.model_validate({**claim, "evidence": "https://docs.vllm.ai/", "read": "2026-12-01"})

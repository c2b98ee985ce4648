"""`python -m advisor` as a subprocess: the contract other tools rely on."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.knowledge.schema import ENGINE_IDS

ROOT = Path(__file__).resolve().parents[3]


def run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def test_detect_json():
    p = run("detect", "--format", "json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["gpu_vendor"] in ("none", "nvidia", "amd", "intel", "apple")
    assert data["cpu"]["logical_cores"] >= 1 and data["ram_total_mb"] > 0
    assert {e["engine"] for e in data["engines"]} == set(ENGINE_IDS)


def test_detect_text():
    p = run("detect")
    assert p.returncode == 0 and "CPU:" in p.stdout and "RAM:" in p.stdout


def test_recommend_json_contract():
    p = run("recommend", "--answers", "examples/startup-chat-api.yaml", "--format", "json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    seen = [r["engine"] for r in data["ranking"]] + [x["engine"] for x in data["excluded"]]
    assert sorted(seen) == sorted(ENGINE_IDS)
    top = data["ranking"][0]
    assert top["engine"] == "vllm"
    assert set(top["reasons"][0]) == {"rule", "text", "delta", "source", "version", "read"}
    assert all(r["read"] for r in top["reasons"] if r["rule"] != "base")  # every rule and cell says when it was read
    assert abs(sum(r["delta"] for r in top["reasons"]) - top["score"]) < 1e-6
    for x in data["excluded"]:
        assert all(set(r) == {"rule", "text", "source"} for r in x["reasons"])
    assert data["answers"]["concurrency"] == 64 and data["hardware"]["gpu_vendor"] == "nvidia"


def test_recommend_uses_detection_without_hardware_block():
    p = run("recommend", "--answers", "examples/this-machine-smollm2.yaml", "--format", "json")
    data = json.loads(p.stdout)
    assert data["hardware"]["source"] == "detected" and "cpu" in data["hardware"]


@pytest.mark.parametrize("lang,word", [("en", "Ranking"), ("zh", "排名")])
def test_recommend_text_in_both_languages(lang, word):
    p = run("recommend", "--answers", "examples/cpu-only-box.yaml", "--lang", lang)
    assert p.returncode == 0 and word in p.stdout
    assert "llama.cpp" in p.stdout.splitlines()[1]


BAD = {
    "missing file": (["--answers", "nope.yaml"], "not found"),
    "bad yaml": ("concurrency: [1,\n", "not valid YAML"),
    "unknown key": ("concurency: 3\n", "concurency"),
    "wrong type": ("concurrency: lots\n", "concurrency"),
    "out of range": ("concurrency: 0\n", "concurrency"),
    "bad choice": ("cuda_expertise: guru\n", "cuda_expertise"),
    "nested unknown": ("model:\n  size: 7\n", "model.size"),
    "nested range": ("hardware:\n  gpu_vendor: nvidia\n  gpu_count: -1\n", "hardware.gpu_count"),
    "not a mapping": ("- 1\n- 2\n", "mapping"),
    "binary file": (b"\xff\xfe\x00\x01", "UTF-8"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_answers_exit_2_with_one_line(case, tmp_path):
    content, needle = BAD[case]
    if isinstance(content, list):
        args = ["recommend", *content]
    else:
        f = tmp_path / "a.yaml"
        f.write_bytes(content if isinstance(content, bytes) else content.encode())
        args = ["recommend", "--answers", str(f)]
    p = run(*args)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("args", [[], ["frobnicate"], ["recommend"], ["recommend", "--answers", "x", "--lang", "fr"],
                                  ["detect", "--format", "xml"]])
def test_bad_arguments_exit_2_with_one_line(args):
    p = run(*args)
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr


PLAN_FIELDS = {"weights_gib", "kv_bytes_per_token", "kv_gib", "overhead_gib", "total_gib", "available_gib", "fits",
               "headroom_gib", "max_concurrency", "max_context_tokens", "decode_tps_upper_bound",
               "ttft_ms_lower_bound", "assumptions"}


def _answers(tmp_path, text: str) -> str:
    f = tmp_path / "a.yaml"
    f.write_text(text, encoding="utf-8")
    return str(f)


def test_plan_json_and_text(tmp_path):
    f = _answers(tmp_path, "model: {name: llama-3-70b, precision: fp16}\n"
                           "hardware: {gpu_vendor: nvidia, gpu_model: RTX 4090, gpu_count: 1, ram_gb: 192}\n")
    p = run("plan", "--answers", f, "--format", "json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert set(data["engines"]) == set(ENGINE_IDS)
    assert all(PLAN_FIELDS <= set(e) for e in data["engines"].values())
    assert data["engines"]["vllm"]["fits"] is False and data["engines"]["vllm"]["options"]
    assert data["model"]["layers"] == 80 and data["probe_checks"] == []
    t = run("plan", "--answers", f, "--lang", "zh")
    assert t.returncode == 0 and "容量规划" in t.stdout and "张量并行" in t.stdout


def test_recommend_json_has_a_plan_for_ranked_and_excluded(tmp_path):
    f = _answers(tmp_path, "model: {name: llama-3-8b}\nhardware: {gpu_vendor: amd, gpu_model: MI300X}\n")
    data = json.loads(run("recommend", "--answers", f, "--format", "json").stdout)
    entries = data["ranking"] + data["excluded"]
    assert "tensorrt-llm" in [x["engine"] for x in data["excluded"]]
    assert all(PLAN_FIELDS <= set(e["plan"]) for e in entries)
    assert data["model"]["id"] == "llama-3-8b" and data["target"]["gpu_id"] == "mi300x"


def test_plan_with_a_probe_result_compares_predicted_and_measured(tmp_path):
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "probes", "run", "--engine", "llama.cpp", "--requests", "2",
                        "--max-tokens", "8", "--format", "json"], capture_output=True, text=True, cwd=ROOT,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    out.write_text(p.stdout)
    f = _answers(tmp_path, "model: {name: smollm2-135m, precision: q4_1, context_tokens: 2048}\n")
    r = run("plan", "--answers", f, "--probe", str(out))
    assert r.returncode == 0, r.stderr
    assert "Predicted vs measured" in r.stdout and "memory-bandwidth limit" in r.stdout
    j = json.loads(run("plan", "--answers", f, "--probe", str(out), "--format", "json").stdout)
    (check,) = j["probe_checks"]
    assert check["engine"] == "llama.cpp" and check["measured_memory_mib"] > 0 and check["roofline_pct"] > 0


def test_an_unknown_model_name_plans_from_params_b_with_the_note(tmp_path):
    for cmd in ("plan", "recommend"):
        p = run(cmd, "--answers", _answers(tmp_path, "model: {name: llama-9-70b, params_b: 70}\n"))
        assert p.returncode == 0, p.stderr
        assert "is not in the catalogue: planned as a generic 70 B model" in p.stdout and "llama-3-70b" in p.stdout


@pytest.mark.parametrize("text,needle", [
    ("model: {path: /nonexistent/model.gguf}\n", "model.path not found"),
])
def test_plan_bad_model_exits_2_with_one_line(tmp_path, text, needle):
    for cmd in ("plan", "recommend"):
        p = run(cmd, "--answers", _answers(tmp_path, text))
        assert p.returncode == 2 and needle in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr

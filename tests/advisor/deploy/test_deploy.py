"""Deployment bundles (advisor.deploy): generated for every example and three scenarios of our own, the files are valid
(Kubernetes schemas, the compose spec, sh -n), a hostile model name cannot break out of a value or a comment, the
refusals say why, the three memory fractions are each the right share, zh has the same command, and the CLI works.

Plans are made once per scenario and language (module caches): the whole file runs in well under a minute."""
from __future__ import annotations

import functools
import json
import os
import re
import shlex
import stat
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from advisor.cli import deploy_bundles
from advisor.deploy import Bundle
from advisor.deploy.render import comment
from advisor.deploy.settings import build_settings, served_name
from advisor.inputs.answers import load_answers, parse_answers
from advisor.knowledge import load_knowledge

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
NVIDIA = {"gpu_vendor": "nvidia", "os": "linux"}

SCENARIOS: dict[str, dict] = {
    # a 70B at FP8 (weights and KV) on two H100s: tensor parallel 2, TensorRT-LLM's KV dtype through its options file
    "70b-2xh100": {"concurrency": 32, "ttft_p95_ms": 1000,
                   "model": {"name": "meta-llama/Llama-3.1-70B-Instruct", "precision": "fp8", "kv_cache_dtype": "fp8",
                             "context_tokens": 8192},
                   "hardware": {**NVIDIA, "gpu_model": "H100 80GB", "gpu_count": 2, "gpu_memory_gb": 80, "ram_gb": 512,
                                "cpu_cores": 64}},
    # a 7B Q4_K_M on a Windows laptop's RTX 4060 Laptop GPU, one user: launch.ps1 beside launch.sh
    "7b-windows-laptop": {"concurrency": 1, "ttft_p95_ms": 3000, "deployment": "desktop",
                          "model": {"name": "Qwen/Qwen2.5-7B-Instruct", "precision": "q4_k_m", "context_tokens": 8192},
                          "hardware": {**NVIDIA, "gpu_model": "RTX 4060 Laptop", "gpu_count": 1, "ram_gb": 32,
                                       "os": "windows"}},
    # an 8B on one L40S, 16 users of 2,000 in / 300 out, p95 TTFT 800 ms
    "8b-l40s": {"concurrency": 16, "ttft_p95_ms": 800,
                "model": {"name": "meta-llama/Llama-3.1-8B-Instruct", "precision": "bf16", "context_tokens": 8192,
                          "input_tokens": 2000, "output_tokens": 300},
                "hardware": {**NVIDIA, "gpu_model": "L40S", "gpu_count": 1, "gpu_memory_gb": 48, "ram_gb": 128,
                             "cpu_cores": 32}},
    # a 7B GGUF Q4_K_M on a CPU-only box
    "7b-gguf-cpu": {"concurrency": 2, "ttft_p95_ms": 3000,
                    "model": {"name": "qwen2.5-7b", "precision": "q4_k_m", "context_tokens": 4096},
                    "hardware": {"gpu_vendor": "none", "ram_gb": 32, "cpu_cores": 8, "cpu_arch": "x86_64", "os": "linux"}},
}
CASES = [p.stem for p in EXAMPLES] + list(SCENARIOS)

# Hostile model names: shell and YAML metacharacters, a newline, backticks. Every payload only touches a marker file
# in the script's own folder, so a failure shows as a file, never as damage.
HOSTILE = [
    'a"; touch pwned1 ; echo $(touch pwned2) \\n b',
    "x`touch pwned3`\n$(touch pwned4)'; touch pwned5 # {model} ${HOME}\n- key: [y]",
    "n\x85---\x85kind: Pod touch pwned6 \u2028 \x7f \ufeff",  # NEL ends a YAML line as \n does; DEL, BOM
]
FRAGMENTS = ("touch pwned",)  # the raw name (a sanitised copy, the model folder and the k8s names, has no space)

CJK = re.compile(r"[\u3400-\u9fff]")


@functools.lru_cache(maxsize=None)
def knowledge():
    return load_knowledge()


def answers_for(case: str, name: str | None = None):
    if case in SCENARIOS:
        data = json.loads(json.dumps(SCENARIOS[case]))
        if name is not None:
            data["model"] = {"name": name, "params_b": 8, "precision": data["model"]["precision"],
                             "context_tokens": data["model"]["context_tokens"]}
        return parse_answers(data)
    return load_answers(ROOT / "examples" / f"{case}.yaml")


@functools.lru_cache(maxsize=None)
def made(case: str, lang: str = "en", name: str | None = None):
    """(answers, bundles of every engine in rank order then the excluded, the recommendation)."""
    answers = answers_for(case, name)
    found, rec = deploy_bundles(answers, knowledge(), lang)
    return answers, found, rec


def ok_bundles(case: str, lang: str = "en", name: str | None = None) -> list[Bundle]:
    return [b for b in made(case, lang, name)[1] if b.status == "ok"]


def by_engine(case: str, engine: str, lang: str = "en", name: str | None = None) -> Bundle:
    return next(b for b in made(case, lang, name)[1] if b.engine == engine)


def arg(b: Bundle, flag: str):
    return next(a for a in b.args if a.flag == flag)


def container_args(b: Bundle, mount: str = "/config/") -> list[str]:
    """What the container is given after its entrypoint: the command's arguments, the model at its path in the image
    and any options file where the container mounts it."""
    return [f"{mount}{t}" if t in b.extra_files else t for t in b.argv()[len(b.program):]]


# ---------------------------------------------------------------------------------------------------------- 1. made
@pytest.mark.parametrize("case", CASES)
def test_every_ranked_engine_gets_a_bundle(case):
    _, found, rec = made(case)
    engines = [b.engine for b in found]
    assert len(engines) == len(set(engines))
    assert {r.engine for r in rec.ranking} <= set(engines)
    assert [b.engine for b in found[:len(rec.ranking)]] == [r.engine for r in rec.ranking]  # in rank order
    for b in found:
        assert b.status in ("ok", "refused", "no_server")
        if b.status != "ok":
            assert b.reason and b.reason.strip(), b.engine
            assert not b.files
            continue
        if b.nodes > 1:  # a replica over nodes: a script per node and a LeaderWorkerSet (tests/advisor/deploy/
            assert {f"launch-node-{r}.sh" for r in range(b.nodes)} | {"k8s.yaml"} <= set(b.files)  # test_multinode)
            assert "launch.sh" not in b.files and "compose.yaml" not in b.files
        else:
            assert "launch.sh" in b.files
        if b.image and b.nodes == 1:
            assert {"docker-run.sh", "compose.yaml", "k8s.yaml"} <= set(b.files), b.engine
        assert b.argv()[:len(b.program)] == b.program and b.program
        assert b.model_path in b.argv()
        assert b.port and str(b.port) in b.argv()
        for a in b.args:
            assert a.flag.startswith("-")
            assert a.why and a.why.strip(), f"{b.engine} {a.flag} has no why"
        for e in b.env:
            assert e.why.strip(), f"{b.engine} {e.name} has no why"
        assert b.version and b.source.startswith("https://")


def test_the_scenarios_cover_what_they_are_for():
    """Each scenario exercises what it was written for (else the other tests would pass on nothing)."""
    big = {b.engine: b for b in ok_bundles("70b-2xh100")}
    assert {"vllm", "sglang", "tensorrt-llm"} <= set(big)
    assert arg(big["vllm"], "--tensor-parallel-size").value == "2"
    assert arg(big["vllm"], "--kv-cache-dtype").value == "fp8"
    assert arg(big["sglang"], "--kv-cache-dtype").value == "fp8_e4m3"
    trt = big["tensorrt-llm"]
    assert trt.extra_files and "dtype: fp8" in next(iter(trt.extra_files.values()))
    assert big["vllm"].shm and big["vllm"].gpus_per_replica == 2
    cpu = {b.engine: b for b in made("7b-gguf-cpu")[1]}
    assert cpu["llama.cpp"].status == "ok" and cpu["llama.cpp"].device == "cpu"
    assert arg(cpu["llama.cpp"], "-ngl").value == "0"
    assert cpu["sglang"].status == "refused" and cpu["tensorrt-llm"].status == "refused"
    assert cpu["vllm"].status == "ok" and {e.name for e in cpu["vllm"].env} >= {"VLLM_CPU_KVCACHE_SPACE"}


def test_transformers_serve_spreads_a_multi_gpu_plan():
    """transformers serve's --device is from_pretrained's device_map: a plan over 2 GPUs needs "auto" ("cuda" would
    put every layer on the first GPU); one GPU is "cuda", a CPU plan "cpu"."""
    _, _, rec = made("70b-2xh100")
    b = by_engine("70b-2xh100", "pytorch")
    assert rec.plan.engines["pytorch"].gpus_used == 2 and b.status == "ok"
    assert arg(b, "--device").value == "auto"
    assert arg(by_engine("8b-l40s", "pytorch"), "--device").value == "cuda"
    assert arg(by_engine("7b-gguf-cpu", "pytorch"), "--device").value == "cpu"


# ------------------------------------------------------------------------------------------------------- 2. files
@functools.lru_cache(maxsize=None)
def compose_validator():
    ref = resources.files("check_jsonschema") / "builtin_schemas" / "vendor" / "compose-spec.json"
    schema = json.loads(ref.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


K8S_VERSION = "1.33.0"


def _k8s_versions() -> list[str]:
    return sorted({K8S_VERSION, kubernetes_validate.latest_version()})


def check_files(b: Bundle) -> None:
    k = knowledge()
    for name, body in b.files.items():
        if name.endswith(".yaml"):
            docs = [d for d in yaml.safe_load_all(body) if d is not None]
            assert docs, name
    if b.nodes > 1:
        from tests.advisor.deploy.test_multinode import check_lws

        check_lws(b)
        return
    if "k8s.yaml" in b.files:
        docs = [d for d in yaml.safe_load_all(b.files["k8s.yaml"]) if d is not None]
        for doc in docs:
            for v in _k8s_versions():
                kubernetes_validate.validate(doc, v, strict=True)
        kinds = [d["kind"] for d in docs]
        assert kinds == (["ConfigMap"] if b.extra_files else []) + ["Deployment", "Service"], kinds
        dep = next(d for d in docs if d["kind"] == "Deployment")
        svc = next(d for d in docs if d["kind"] == "Service")
        assert dep["spec"]["replicas"] == b.replicas >= 1
        assert dep["spec"]["selector"]["matchLabels"] == dep["spec"]["template"]["metadata"]["labels"] == \
            svc["spec"]["selector"]
        (c,) = dep["spec"]["template"]["spec"]["containers"]
        assert c["image"] == b.image
        assert c["command"] == (b.image_entrypoint or b.program)
        assert [x.replace("$$(", "$(") for x in c["args"]] == container_args(b)  # Kubernetes un-escapes $$(
        assert c["ports"] == [{"name": "http", "containerPort": b.port}]
        assert svc["spec"]["ports"][0]["port"] == b.port
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert c[probe]["httpGet"]["path"] == b.health
        limits = c["resources"]["limits"]
        if b.device == "gpu":
            assert limits[b.gpu_resource] == b.gpus_per_replica >= 1
        else:
            assert not any(key.endswith("/gpu") for key in limits)
        assert {e["name"]: e["value"] for e in c.get("env", [])} == {e.name: e.value for e in b.env}
        mounts = {m["mountPath"] for m in c["volumeMounts"]}
        assert k.deploy.model_mount in mounts
        assert ("/dev/shm" in mounts) == b.shm
        if b.extra_files:
            cm = docs[0]
            assert cm["data"] == b.extra_files and "/config" in mounts
    if "compose.yaml" in b.files:
        doc = yaml.safe_load(b.files["compose.yaml"])
        errors = sorted(compose_validator().iter_errors(doc), key=lambda e: list(e.absolute_path))
        assert not errors, "; ".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])
        (svc,) = doc["services"].values()
        assert svc["image"] == b.image
        assert svc["entrypoint"] == (b.image_entrypoint or b.program)
        assert [x.replace("$$", "$") for x in svc["command"]] == container_args(b)  # compose un-escapes $$
        assert f"{b.port}:{b.port}" in svc["ports"]
        if b.gpu_resource == "nvidia.com/gpu":
            (dev,) = svc["deploy"]["resources"]["reservations"]["devices"]
            assert dev["count"] == b.gpus_per_replica and "gpu" in dev["capabilities"]
        else:
            assert "deploy" not in svc
        assert (svc.get("ipc") == "host") == b.shm
        assert svc.get("environment", {}) == {e.name: e.value for e in b.env}
    if "kserve.yaml" in b.files:
        doc = yaml.safe_load(b.files["kserve.yaml"])
        assert doc["apiVersion"] == "serving.kserve.io/v1beta1" and doc["kind"] == "InferenceService"
        model = doc["spec"]["predictor"]["model"]
        assert model["modelFormat"]["name"] == "huggingface"
        assert f"--model_name={served_name(b.model_name)}" in model["args"]
        assert model["storageUri"].startswith("pvc://")
        if b.gpu_resource:
            assert model["resources"]["limits"][b.gpu_resource] == b.gpus_per_replica


@pytest.mark.parametrize("case", CASES)
def test_files_are_valid(case):
    bundles = ok_bundles(case)
    assert bundles
    for b in bundles:
        check_files(b)
    kserve = [b.engine for b in bundles if "kserve.yaml" in b.files]
    assert set(kserve) <= {"vllm", "pytorch"}


def test_a_wrong_field_fails_the_validators():
    """The validators can fail: a k8s field of the wrong type, a compose key the spec does not have."""
    b = by_engine("8b-l40s", "vllm")
    docs = list(yaml.safe_load_all(b.files["k8s.yaml"]))
    dep = next(d for d in docs if d and d["kind"] == "Deployment")
    dep["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(dep, K8S_VERSION, strict=True)
    dep["spec"]["replicas"] = 1
    dep["spec"]["template"]["spec"]["containers"][0]["gpus"] = 1
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(dep, K8S_VERSION, strict=True)
    doc = yaml.safe_load(b.files["compose.yaml"])
    next(iter(doc["services"].values()))["gpus_count"] = 1
    assert list(compose_validator().iter_errors(doc))


# --------------------------------------------------------------------------------------------------- 3. the shell
def sh_ok(path: Path) -> None:
    r = subprocess.run(["sh", "-n", str(path)], capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, f"{path.name}: {r.stderr}"


@pytest.mark.parametrize("case", CASES)
def test_scripts_parse(case, tmp_path):
    for b in ok_bundles(case):
        for name in ("launch.sh", "docker-run.sh"):
            if name in b.files:
                p = tmp_path / f"{b.engine}-{name}"
                p.write_text(b.files[name], encoding="utf-8")
                sh_ok(p)
                assert b.files[name].startswith("#!/bin/sh\n")


def run_stubbed(body: str, exec_line: str, folder: Path, env: dict[str, str]) -> list[str]:
    """Run the script with its final `exec …` replaced by a stub that prints its arguments (NUL-separated)."""
    lines = body.rstrip("\n").split("\n")
    assert lines[-1] == exec_line, lines[-1]  # the program, then the arguments the script collected
    script = folder / "run.sh"
    script.write_text("\n".join(lines[:-1] + ["printf '%s\\0' \"$@\""]) + "\n", encoding="utf-8")
    r = subprocess.run(["sh", str(script)], cwd=folder, capture_output=True, timeout=10,
                       env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(folder), **env})
    assert r.returncode == 0, r.stderr.decode()
    out = r.stdout.decode()
    assert out.endswith("\0")
    return out[:-1].split("\0")


def shell_words_with(body: str) -> list[str]:
    """The shell words (comments dropped) that carry any of the hostile fragments."""
    lex = shlex.shlex(body, posix=True, punctuation_chars=False)
    lex.whitespace_split = True
    lex.commenters = "#"
    return [w for w in lex if any(f in w for f in FRAGMENTS)]


def strings_in(node) -> list[str]:
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in strings_in(k) + strings_in(v)]
    if isinstance(node, list):
        return [s for v in node for s in strings_in(v)]
    return [node] if isinstance(node, str) else []


HOSTILE_CASES = [(case, i) for case in ("8b-l40s", "7b-gguf-cpu", "70b-2xh100") for i in range(len(HOSTILE))]


@pytest.mark.parametrize("case,i", HOSTILE_CASES, ids=[f"{c}-{i}" for c, i in HOSTILE_CASES])
def test_a_hostile_model_name_stays_a_value(case, i, tmp_path):
    name = HOSTILE[i]
    bundles = ok_bundles(case, name=name)
    assert {b.engine for b in bundles} >= ({"llama.cpp", "vllm"} if case == "7b-gguf-cpu" else
                                           {"vllm", "sglang", "tensorrt-llm", "llama.cpp", "pytorch"})
    model_dir = str(tmp_path / "my models" / "it's $HOME")
    for b in bundles:
        assert b.model_name == name
        where = tmp_path / b.engine
        where.mkdir()
        # launch.sh: exactly the command's tokens, the model from MODEL, an options file the one beside the script
        out = run_stubbed(b.files["launch.sh"], "exec " + " ".join(b.program) + ' "$@"', where, {"MODEL": model_dir})
        assert out == [str(where / t) if t in b.extra_files else t
                       for t in b.argv(model=model_dir)[len(b.program):]], b.engine
        # a name that is no model id (spaces, quotes, markup) is served as its safe form: no raw user text is a value
        assert out.count(name) == sum(a.value == name for a in b.args) == 0
        assert sum(a.value == served_name(name) for a in b.args) == (b.engine not in ("pytorch", "tensorrt-llm"))
        # docker-run.sh: after the image, the container's own command
        if "docker-run.sh" in b.files:
            out = run_stubbed(b.files["docker-run.sh"], 'exec docker run "$@"', where, {"MODEL_DIR": model_dir})
            assert out[0] == "--rm" and f"{model_dir}:{knowledge().deploy.model_mount}:ro" in out
            rest = out[out.index(b.image) + 1:]
            assert rest == ([] if b.image_entrypoint else b.program[1:]) + container_args(b, mount="/"), b.engine
        assert not list(where.glob("pwned*")), f"{b.engine}: the name ran as code"
        for fname in ("launch.sh", "docker-run.sh"):
            if fname not in b.files:
                continue
            body = b.files[fname]
            (where / fname).write_text(body, encoding="utf-8")
            sh_ok(where / fname)
            # the name is one shell word wherever it is a value (a comment cut by a newline would leave words)
            words = shell_words_with(body)
            assert all(w == name for w in words), (b.engine, fname, words)
            assert len(words) == sum(a.value == name for a in b.args), (b.engine, fname, words)
            for line in body.splitlines():  # a comment line that carries the name carries all of it, on one line
                if line.startswith("#") and FRAGMENTS[0] in line:
                    assert " ".join(comment(name).split()) in " ".join(line.split()), (fname, line)
        for fname, body in b.files.items():
            if not fname.endswith(".yaml"):
                continue
            docs = [d for d in yaml.safe_load_all(body) if d is not None]
            # as the tool that reads the file un-escapes it: compose turns $$ into $, Kubernetes $$( into $(
            unescape = {"compose.yaml": lambda x: x.replace("$$", "$"),
                        "k8s.yaml": lambda x: x.replace("$$(", "$(")}.get(fname, lambda x: x)
            hits = [unescape(s) for d in docs for s in strings_in(d) if any(f in s for f in FRAGMENTS)]
            # KServe names the model with its own --model_name (the engine's --served-model-name is left out there)
            want = set()  # the raw name is in comments only (one line each, below); values carry its safe form
            assert set(hits) == want, (b.engine, fname, hits)
            for line in body.splitlines():  # a comment line that carries the name carries all of it, on one line
                if line.lstrip().startswith("#") and FRAGMENTS[0] in line:
                    assert " ".join(comment(name).split()) in " ".join(line.split()), (fname, line)
        check_files(b)  # still valid Kubernetes / compose / KServe, the name where it belongs


# ------------------------------------------------------------------------------------------------------ 4. refusals
def _refused(b: Bundle) -> str:
    assert b.status == "refused", (b.status, b.reason)
    assert b.reason and not b.files
    return b.reason


def test_tp_that_does_not_divide_the_heads_is_refused():
    answers, _, rec = made("70b-2xh100")
    plan = rec.plan
    heads = plan.model.attention_heads
    assert heads % 3
    for engine in ("vllm", "sglang", "tensorrt-llm"):
        p = plan.engines[engine].model_copy(update={"tensor_parallel": 3, "gpus_used": 3})
        bad = plan.model_copy(update={"engines": {**plan.engines, engine: p}})
        reason = _refused(build_settings(engine, bad, answers, knowledge()))
        assert "3" in reason and str(heads) in reason and "head" in reason, reason
        # the same plan at TP 2 is fine (the refusal is about the degree)
        assert build_settings(engine, plan, answers, knowledge()).status == "ok"
    zh = build_settings("vllm", plan.model_copy(update={"engines": {**plan.engines, "vllm": plan.engines["vllm"]
                        .model_copy(update={"tensor_parallel": 3})}}), answers, knowledge(), "zh")
    assert CJK.search(_refused(zh))


def test_fp8_kv_for_tensorrt_llm_needs_ampere():
    data = {"concurrency": 4, "model": {"name": "llama-3.2-3b", "precision": "fp16", "kv_cache_dtype": "fp8",
                                        "context_tokens": 4096},
            "hardware": {**NVIDIA, "gpu_model": "T4", "gpu_count": 1, "gpu_memory_gb": 16, "ram_gb": 64, "cpu_cores": 8}}
    answers = parse_answers(data)
    _, rec = deploy_bundles(answers, knowledge(), "en", "tensorrt-llm")
    plan = rec.plan
    assert plan.target.gpu_compute_capability == "7.5"
    # the planner keeps TensorRT-LLM's default KV on a T4 (its support cell); a plan that asks FP8 anyway is refused
    p = plan.engines["tensorrt-llm"].model_copy(update={"kv_cache_dtype": "fp8"})
    bad = plan.model_copy(update={"engines": {**plan.engines, "tensorrt-llm": p}})
    reason = _refused(build_settings("tensorrt-llm", bad, answers, knowledge()))
    assert "compute capability" in reason and "7.5" in reason and "8.0" in reason and "FP8" in reason, reason
    # the same on an L40S (8.9) is fine
    _, _, good = made("8b-l40s")
    p = good.plan.engines["tensorrt-llm"].model_copy(update={"kv_cache_dtype": "fp8"})
    fine = good.plan.model_copy(update={"engines": {**good.plan.engines, "tensorrt-llm": p}})
    b = build_settings("tensorrt-llm", fine, made("8b-l40s")[0], knowledge())
    assert b.status == "ok" and "--extra_llm_api_options" in b.argv()


def test_fp4_weights_for_tensorrt_llm_on_h100_are_refused():
    data = {"concurrency": 4, "model": {"name": "meta-llama/Llama-3.1-8B-Instruct", "precision": "fp4",
                                        "context_tokens": 4096},
            "hardware": {**NVIDIA, "gpu_model": "H100 80GB", "gpu_count": 1, "gpu_memory_gb": 80, "ram_gb": 256,
                         "cpu_cores": 32}}
    (b,), _ = deploy_bundles(parse_answers(data), knowledge(), "en", "tensorrt-llm")
    reason = _refused(b)
    assert "compute capability" in reason and "10.0" in reason and "9.0" in reason, reason


def test_an_engine_that_does_not_load_is_refused_with_the_figures():
    _, found, rec = made("llama3-70b-on-one-rtx4090")
    for b in found:
        p = rec.plan.engines[b.engine]
        if p.loads is False and b.engine != "onnxruntime":
            reason = _refused(b)
            assert f"{p.total_gib:,.1f} GiB" in reason and f"{p.available_gib:,.1f} GiB" in reason, reason
    assert by_engine("llama3-70b-on-one-rtx4090", "vllm").status == "refused"
    assert by_engine("llama3-70b-on-one-rtx4090", "llama.cpp").status == "ok"  # layers in RAM


def test_onnxruntime_has_no_server():
    for case in ("8b-l40s", "7b-gguf-cpu"):
        b = by_engine(case, "onnxruntime")
        assert b.status == "no_server" and "Foundry Local" in b.reason and not b.files
    zh = by_engine("7b-gguf-cpu", "onnxruntime", "zh")
    assert "Foundry Local" in zh.reason and CJK.search(zh.reason)


# ------------------------------------------------------------------------------------------- 5. memory fractions
def test_the_three_memory_fractions():
    planner = yaml.safe_load((ROOT / "knowledge" / "planner.yaml").read_text(encoding="utf-8"))["engines"]
    _, _, rec = made("8b-l40s")
    vllm = arg(by_engine("8b-l40s", "vllm"), "--gpu-memory-utilization")
    assert float(vllm.value) == planner["vllm"]["memory_budget_fraction"]
    assert "whole GPU" in vllm.why
    sg = arg(by_engine("8b-l40s", "sglang"), "--mem-fraction-static")
    want = rec.plan.engines["sglang"].mem_fraction_static
    assert want is not None and 0 < want < 1
    assert float(sg.value) == pytest.approx(want, abs=5e-4)
    assert "weights + KV" in sg.why
    trt = arg(by_engine("8b-l40s", "tensorrt-llm"), "--kv_cache_free_gpu_memory_fraction")
    assert float(trt.value) == planner["tensorrt-llm"]["memory_budget_fraction"]
    assert "free after loading" in trt.why and "not a share of the whole GPU" in trt.why
    # three different things: SGLang's differs from vLLM's on this GPU
    assert float(sg.value) != float(vllm.value)


# --------------------------------------------------------------------------------------------------------- 6. zh
@pytest.mark.parametrize("case", list(SCENARIOS) + ["nvidia-strict-sla"])
def test_zh_has_chinese_comments_and_the_same_command(case):
    en = {b.engine: b for b in made(case, "en")[1]}
    zh = {b.engine: b for b in made(case, "zh")[1]}
    assert set(en) == set(zh)
    for engine, b in zh.items():
        assert b.status == en[engine].status and b.lang == "zh"
        if b.status != "ok":
            continue
        assert b.argv() == en[engine].argv()
        assert {e.name: e.value for e in b.env} == {e.name: e.value for e in en[engine].env}
        for a in b.args:
            assert CJK.search(a.why), f"{engine} {a.flag}: {a.why}"
        for e in b.env:
            assert CJK.search(e.why), e.name
        assert CJK.search(b.files["launch.sh"].split("\n")[1])  # the header comment
        assert set(b.files) == set(en[engine].files)


# ---------------------------------------------------------------------------------------------------------- 7. CLI
def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "advisor", "deploy", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env=env)


@pytest.fixture(scope="module")
def answers_file(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("deploy") / "l40s.yaml"
    p.write_text(yaml.safe_dump(SCENARIOS["8b-l40s"]), encoding="utf-8")
    return p


def test_cli_json(answers_file):
    r = cli("--answers", str(answers_file), "--format", "json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert [d["engine"] for d in data] == [b.engine for b in made("8b-l40s")[1]]
    vllm = next(d for d in data if d["engine"] == "vllm")
    assert Bundle.model_validate(vllm).argv() == by_engine("8b-l40s", "vllm").argv()
    r = cli("--answers", str(answers_file), "--format", "json", "--engine", "sglang")
    assert r.returncode == 0 and json.loads(r.stdout)["engine"] == "sglang"


def test_cli_sh_and_k8s(answers_file, tmp_path):
    r = cli("--answers", str(answers_file), "--format", "sh", "--engine", "vllm")
    assert r.returncode == 0, r.stderr
    assert r.stdout.rstrip("\n") == by_engine("8b-l40s", "vllm").files["launch.sh"].rstrip("\n")
    (tmp_path / "l.sh").write_text(r.stdout, encoding="utf-8")
    sh_ok(tmp_path / "l.sh")
    r = cli("--answers", str(answers_file), "--format", "k8s", "--engine", "sglang")
    assert r.returncode == 0, r.stderr
    kinds = [d["kind"] for d in yaml.safe_load_all(r.stdout) if d]
    assert kinds == ["Deployment", "Service"]


def test_cli_out_dir(answers_file, tmp_path):
    out = tmp_path / "bundles"
    r = cli("--answers", str(answers_file), "--out", str(out))
    assert r.returncode == 0, r.stderr
    for b in made("8b-l40s")[1]:
        d = out / b.engine
        if b.status != "ok":
            assert not d.exists() and b.engine in r.stdout
            continue
        assert sorted(p.name for p in d.iterdir()) == sorted([*b.files, "bundle.json"])
        for name, body in b.files.items():
            assert (d / name).read_text(encoding="utf-8") == body
            if name.endswith(".sh"):
                assert (d / name).stat().st_mode & stat.S_IXUSR
        assert Bundle.model_validate_json((d / "bundle.json").read_text(encoding="utf-8")).argv() == b.argv()


def test_cli_bad_engine_and_refused(answers_file):
    r = cli("--answers", str(answers_file), "--engine", "nonsense")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "--engine" in r.stderr and "vllm" in r.stderr
    r = cli("--answers", str(ROOT / "examples" / "llama3-70b-on-one-rtx4090.yaml"), "--engine", "vllm",
            "--format", "sh")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "does not load" in r.stderr and "GiB" in r.stderr


def test_a_plan_over_several_nodes_spans_them_or_is_refused_with_what_to_do():
    """vLLM and SGLang span two nodes with their own launch, TensorRT-LLM in one MPI world (mpirun on node 0): a
    LeaderWorkerSet on Kubernetes, a script per node. An engine with no multi-node launch is refused, naming what
    does; so is an MPI world whose GPUs do not split evenly over the nodes. One pod asking for 16 GPUs could never be
    scheduled, so no bundle writes one."""
    a = load_answers(ROOT / "examples" / "llama-405b-two-nodes.yaml")
    found, rec = deploy_bundles(a, knowledge(), "en")
    by = {b.engine: b for b in found}
    for e in ("vllm", "sglang", "tensorrt-llm"):
        assert by[e].status == "ok" and by[e].nodes == 2
        assert {"launch-node-0.sh", "launch-node-1.sh", "k8s.yaml"} <= set(by[e].files)
        assert "launch.sh" not in by[e].files and "compose.yaml" not in by[e].files
    assert by["tensorrt-llm"].mpi is not None and by["vllm"].mpi is None
    plan = rec.plan
    spread = plan.engines["llama.cpp"].model_copy(update={"device": "gpu", "gpus_used": 16, "loads": True})
    reason = _refused(build_settings("llama.cpp", plan.model_copy(update={"engines": {**plan.engines,
                                                                                       "llama.cpp": spread}}),
                                     a, knowledge()))
    assert "2 nodes" in reason and "vLLM, SGLang or TensorRT-LLM" in reason, reason
    uneven = plan.engines["tensorrt-llm"].model_copy(update={"gpus_used": 9})
    reason = _refused(build_settings("tensorrt-llm", plan.model_copy(update={"engines": {**plan.engines,
                                                                                         "tensorrt-llm": uneven}}),
                                     a, knowledge()))
    assert "9 GPUs" in reason and "2 nodes" in reason and "MPI" in reason, reason


def test_an_fp8_checkpoints_own_kv_is_left_to_the_engines_auto():
    """TensorRT-LLM's FP8 plan holds FP8 KV because its ModelOpt checkpoints declare it: the bundle keeps the engine's
    auto (no kv_cache_config dtype forced onto whatever checkpoint is brought) and says why; an asked FP8 KV is
    still written out."""
    from advisor.cli import deploy_bundles
    from advisor.inputs.answers import parse_answers

    base = {"concurrency": 16, "hardware": {"gpu_vendor": "nvidia", "gpu_model": "H100 SXM", "gpu_count": 1},
            "model": {"name": "llama-3.1-8b", "precision": "fp8", "context_tokens": 8192}}
    found, rec = deploy_bundles(parse_answers(base), knowledge(), "en")
    trt = next(b for b in found if b.engine == "tensorrt-llm")
    plan = next(r.plan for r in rec.ranking if r.engine == "tensorrt-llm")
    assert plan.kv_cache_dtype == "fp8" and plan.kv_from_checkpoint
    assert trt.status == "ok" and "dtype: fp8" not in "".join(trt.extra_files.values())
    assert "kv_cache_quant_algo" in trt.model_what  # the bundle says which checkpoint the plan's FP8 KV counts on
    asked = {**base, "model": {**base["model"], "kv_cache_dtype": "fp8"}}
    found, _ = deploy_bundles(parse_answers(asked), knowledge(), "en")
    trt = next(b for b in found if b.engine == "tensorrt-llm")
    assert "dtype: fp8" in "".join(trt.extra_files.values())


# ------------------------------------------------------------------------------------------- wording per file (L9)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_each_file_says_what_its_own_listen_address_and_counts_mean(lang):
    """Walk-3 L9: launch.sh (no container) said "the container's port is published below", and k8s.yaml "1 replicas of
    1 GPU(s)". Each file now has its own note on 0.0.0.0, and counts read as counted."""
    k = knowledge()
    texts = k.deploy.texts
    b = by_engine("8b-l40s", "vllm", lang)
    assert b.replicas == 1 and b.gpus_per_replica == 1

    def note_on_host(name: str) -> str:
        line = next(x for x in b.files[name].splitlines() if "0.0.0.0" in x)
        return line.split("  # ", 1)[1]

    assert note_on_host("launch.sh") == texts["host_sh"].get(lang)
    assert note_on_host("docker-run.sh") == texts["host_docker"].get(lang)
    assert note_on_host("k8s.yaml") == texts["host_k8s"].get(lang)
    assert note_on_host("compose.yaml") == texts["host"].get(lang)  # its ports follow the command
    for name in ("launch.sh", "docker-run.sh", "k8s.yaml"):
        assert "published below" not in b.files[name] and "下方映射" not in b.files[name]
    replicas = next(x for x in b.files["k8s.yaml"].splitlines() if x.strip().startswith("replicas:"))
    want = "1 replica of 1 GPU for the checklist's 16 users" if lang == "en" else "1 个副本、每个 1 块 GPU，满足清单中 16 个用户的"
    assert want in replicas and "(s)" not in b.files["k8s.yaml"] + b.files["compose.yaml"]
    two = by_engine("70b-2xh100", "vllm", lang)  # two GPUs in one replica: the plural
    gpus = next(x for x in two.files["k8s.yaml"].splitlines() if "nvidia.com/gpu:" in x)
    assert gpus.split("  # ", 1)[1] == ("2 GPUs per replica (plan)" if lang == "en" else "每个副本 2 块 GPU（规划）")


def test_the_zip_is_dated_when_it_was_made():
    """Walk-3 L9: every file of the deployment zip was dated 1 Jan 2024."""
    import datetime as dt
    import io
    import zipfile

    from advisor.report.deploy import bundle_zip

    b = by_engine("8b-l40s", "vllm")
    when = dt.datetime(2026, 12, 5, 14, 37, 51)
    with zipfile.ZipFile(io.BytesIO(bundle_zip(b, when))) as z:
        assert {i.date_time for i in z.infolist()} == {(2026, 12, 5, 14, 37, 0)}
    before = dt.datetime.now().replace(second=0, microsecond=0)
    with zipfile.ZipFile(io.BytesIO(bundle_zip(b))) as z:
        made = {dt.datetime(*i.date_time) for i in z.infolist()}
    assert len(made) == 1 and before <= made.pop() <= dt.datetime.now()
    assert bundle_zip(b, when) == bundle_zip(b, when.replace(second=2))  # a redraw within the minute: the same bytes


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_replicas_comment_quotes_the_ttft_band_the_fleet_is_sized_on(lang):
    """The fleet is each replica's capacity within the TTFT target, so its comment carries our TTFT band and label
    (own_band, own_label), not the tok/s band, and the replicas at that band's slow end where they differ."""
    answers, _, rec = made("8b-l40s", lang)
    plan = rec.plan
    sv = plan.engines["vllm"].serving
    assert sv is not None and sv.replicas
    sv = sv.model_copy(update={"band": 0.25, "own_band": 1.19, "own_label": "rough", "label": "fitted",
                               "replicas": 5, "replicas_high": 9})
    p = plan.engines["vllm"].model_copy(update={"serving": sv})
    b = build_settings("vllm", plan.model_copy(update={"engines": {**plan.engines, "vllm": p}}), answers,
                       knowledge(), lang)
    rough = knowledge().s("val_plan_label_rough", lang)
    assert b.replicas == 5 and "±119%" in b.replicas_why and rough in b.replicas_why, b.replicas_why
    assert "±25%" not in b.replicas_why and "9" in b.replicas_why
    level = sv.model_copy(update={"replicas_high": 5, "own_label": "fitted", "own_band": 0.49})
    p = plan.engines["vllm"].model_copy(update={"serving": level})
    b = build_settings("vllm", plan.model_copy(update={"engines": {**plan.engines, "vllm": p}}), answers,
                       knowledge(), lang)
    assert "±49%" in b.replicas_why and knowledge().s("val_plan_label_fitted", lang) in b.replicas_why
    assert "slow end" not in b.replicas_why and "慢端" not in b.replicas_why
    none = sv.model_copy(update={"replicas_high": None, "capacity_low": 0})  # the slow end meets it with none
    p = plan.engines["vllm"].model_copy(update={"serving": none})
    b = build_settings("vllm", plan.model_copy(update={"engines": {**plan.engines, "vllm": p}}), answers,
                       knowledge(), lang)
    assert b.replicas == 5 and ("no number of replicas" in b.replicas_why or "多少副本都无法满足" in b.replicas_why)


_PS_LINE = re.compile(r"^    (\$Model|'(?:[^'\u2018\u2019\u201a\u201b]|['\u2018\u2019\u201a\u201b]{2})*')(  # [^\n]*)?$")


@pytest.mark.parametrize("i", range(len(HOSTILE) + 1))
def test_a_windows_target_gets_launch_ps1_and_a_hostile_name_stays_a_verbatim_string(i):
    """A Windows laptop runs llama-server.exe natively, not sh: its bundle carries launch.ps1, the same arguments as
    launch.sh in PowerShell verbatim strings ('…', a quote doubled), where $(…), backticks and ${HOME} stay text.
    (No PowerShell here to parse it: each argument line is checked against the verbatim-string grammar instead.)"""
    name = None if i == len(HOSTILE) else HOSTILE[i]
    b = next(x for x in ok_bundles("7b-windows-laptop", name=name) if x.engine == "llama.cpp")
    body = b.files["launch.ps1"]
    lines = body.splitlines()
    start, end = lines.index("$Arguments = @("), lines.index(")")
    assert lines[end + 1] == "& 'llama-server' @Arguments" and lines[end + 2:] == []
    assert all(x.startswith("#") for x in lines[:start] if not x.startswith(("$ErrorActionPreference", "$Model", "$env:")))
    assert "else { 'C:\\models\\" in next(x for x in lines if x.startswith("$Model = "))
    toks = []
    for line in lines[start + 1:end]:
        m = _PS_LINE.match(line)
        assert m, line
        toks.append(m.group(1))
    # the arguments are launch.sh's, in order: each verbatim string read back is the token
    want = b.argv(model="\x00M")[len(b.program):]
    got = ["\x00M" if t == "$Model" else re.sub(r"(['\u2018\u2019\u201a\u201b])\1", r"\1", t[1:-1]) for t in toks]
    assert got == want
    assert all(b.files[f] for f in ("launch.sh", "launch.ps1"))
    linux = next(x for x in ok_bundles("8b-l40s") if x.engine == "llama.cpp")
    assert "launch.ps1" not in linux.files


def test_an_int4_bundle_names_the_checkpoint_forms_its_engine_reads():
    """An INT4 plan's model path: vLLM and SGLang read compressed-tensors INT4 (the form Kimi-K2.5 is published in)
    beside AWQ and GPTQ, so their bundles say so in both languages; the others keep AWQ or GPTQ."""
    from advisor.cli import deploy_bundles
    from advisor.inputs.answers import parse_answers

    a = parse_answers({"concurrency": 16, "hardware": {"gpu_vendor": "nvidia", "gpu_model": "H100 SXM", "gpu_count": 1},
                       "model": {"name": "llama-3.1-8b", "precision": "int4", "context_tokens": 8192}})
    for lang, word in (("en", "compressed-tensors form"), ("zh", "compressed-tensors 格式")):
        found, _ = deploy_bundles(a, knowledge(), lang)
        what = {b.engine: b.model_what for b in found if b.status == "ok"}
        assert word in what["vllm"] and word in what["sglang"], what
        assert "compressed-tensors" not in what.get("tensorrt-llm", "") and "GPTQ" in what.get("tensorrt-llm", "GPTQ")

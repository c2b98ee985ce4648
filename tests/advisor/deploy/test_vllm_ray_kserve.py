"""vLLM's Ray-based multi-node layout beside its own per-node launch: a Ray head on node 0 and then `vllm serve …
--distributed-executor-backend ray` there, `ray start --address=LEADER:6379 --block` on the other nodes (vLLM's
docs, LWS's own vLLM example), as a LeaderWorkerSet (k8s-ray.yaml) and a script per node (launch-ray-node-<r>.sh).
And KServe's LLMInferenceService (llminferenceservice.yaml) for GPU vLLM bundles, on one node or as data-parallel
ranks over nodes, checked against the v1alpha1 spec of KServe v0.20.0's CRD (tests/advisor/deploy/data/).

Checked as the other multi-node files are: the LeaderWorkerSet's spec against the LWS v0.10.0 CRD's fields, its
templates as PodTemplates by Kubernetes' own schemas, the server command by vLLM's own parser (.venv-vllm); and the
commands run, in the scripts and in the pods (their $(VAR) expanded as Kubernetes does), with stub `ray` and `vllm`
programs that print what they are given."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from advisor.cli import deploy_bundles
from advisor.deploy import Bundle
from advisor.deploy.types import MODEL
from advisor.inputs.answers import load_answers, parse_answers
from tests.advisor.deploy.test_multinode import LWS_ENV, LWS_SPEC, _k, _versions, vllm_parse

ROOT = Path(__file__).resolve().parents[3]
TWO_NODES = ROOT / "examples" / "llama-405b-two-nodes.yaml"
LEADER = "10.0.0.7"
# the per-node launch the Ray layout replaces: none of it reaches the Ray files
MP_ONLY = ("--nnodes", "--node-rank", "--master-addr", "--master-port", "--headless")


@pytest.fixture(scope="module")
def two_nodes() -> dict[str, Bundle]:
    found, _ = deploy_bundles(load_answers(TWO_NODES), _k(), "en")
    return {b.engine: b for b in found}


def _docs(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def _stubs(tmp_path: Path, name: str = "run", fail_first: int = 0) -> dict[str, str]:
    """PATH with stub `ray`, `vllm` and `sleep` in tmp_path/name: `ray` and `vllm` append their name and argv to
    calls.log (one line, fields split by \\037); `ray` fails its first `fail_first` runs (a head not up yet); `sleep`
    returns at once."""
    home = tmp_path / name
    bin_ = home / "bin"
    bin_.mkdir(parents=True)
    log, count = home / "calls.log", home / "ray.count"
    count.write_text("0")
    for prog in ("ray", "vllm"):
        fail = (f'n=$(cat "{count}"); n=$((n + 1)); echo "$n" > "{count}"\n'
                f'if [ "$n" -le {fail_first} ]; then exit 1; fi\n') if prog == "ray" else ""
        (bin_ / prog).write_text(f'#!/bin/sh\nprintf "%s\\037" {prog} "$@" >> "{log}"\necho >> "{log}"\n{fail}')
        (bin_ / prog).chmod(0o755)
    (bin_ / "sleep").write_text("#!/bin/sh\nexit 0\n")
    (bin_ / "sleep").chmod(0o755)
    return {"PATH": f"{bin_}:/usr/bin:/bin", "LOG": str(log)}


def _calls(env: dict[str, str]) -> list[list[str]]:
    path = Path(env["LOG"])
    return [x.split("\x1f")[:-1] for x in path.read_text().splitlines()] if path.exists() else []


def _k8s_expand(token: str, env: dict[str, str]) -> str:
    """What Kubernetes does to a command or args item: $$ is a literal $, $(NAME) the variable where it is defined,
    anything else left as written (its expansion rules)."""
    return re.sub(r"\$\$|\$\(([^)]*)\)",
                  lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), token)


def check_ray_lws(b: Bundle) -> tuple[dict, dict]:
    """k8s-ray.yaml: a LeaderWorkerSet valid against its API and a Service on its leaders; the leader starts the Ray
    head and then vLLM with the Ray executor, a worker joins the head at LWS's leader address. (leader, worker)."""
    docs = _docs(b.files["k8s-ray.yaml"])
    assert [d["kind"] for d in docs] == (["ConfigMap"] if b.extra_files else []) + ["LeaderWorkerSet", "Service"]
    lws, svc = docs[-2], docs[-1]
    assert lws["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
    jsonschema.validate(lws["spec"], LWS_SPEC)
    lwt = lws["spec"]["leaderWorkerTemplate"]
    assert lwt["size"] == b.nodes >= 2 and lws["spec"]["replicas"] == b.replicas
    for v in _versions():
        for name in ("leaderTemplate", "workerTemplate"):
            kubernetes_validate.validate({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"},
                                          "template": lwt[name]}, v, strict=True)
        kubernetes_validate.validate(svc, v, strict=True)
    assert svc["spec"]["selector"] == {"leaderworkerset.sigs.k8s.io/name": lws["metadata"]["name"], "role": "leader"}
    (leader,) = lwt["leaderTemplate"]["spec"]["containers"]
    (worker,) = lwt["workerTemplate"]["spec"]["containers"]
    assert leader["ports"] == [{"name": "http", "containerPort": b.port}] and "readinessProbe" in leader
    assert "ports" not in worker and "readinessProbe" not in worker
    per_pod = b.gpus_per_replica // b.nodes
    assert leader["resources"]["limits"][b.gpu_resource] == worker["resources"]["limits"][b.gpu_resource] == per_pod
    for c in (leader, worker):
        assert c["command"][:2] == ["/bin/sh", "-c"] and c["command"][3] == "sh"
        refs = {x for a in c["args"] for x in re.findall(r"(?<!\$)\$\(([A-Z_]+)\)", a)}
        assert refs <= set(LWS_ENV), refs
        assert not set(c["args"]) & set(MP_ONLY)
    assert leader["command"][2] == 'ray start --head --port=6379 && exec vllm serve "$@"'
    assert worker["args"] == ["--address=$(LWS_LEADER_ADDRESS):6379", "--block"]
    want = [b.model_path if t == MODEL else t for t, _ in _serve(b)]
    assert leader["args"] == want
    return leader, worker


def _serve(b: Bundle) -> list[tuple[str, str]]:
    from advisor.deploy.render import _args_with_notes

    return _args_with_notes(b, MODEL, b.ray.serve)


def test_two_nodes_get_the_ray_layout_beside_the_per_node_launch(two_nodes):
    b = two_nodes["vllm"]
    assert b.status == "ok" and b.nodes == 2 and b.ray is not None
    assert {"launch-node-0.sh", "launch-node-1.sh", "k8s.yaml", "launch-ray-node-0.sh", "launch-ray-node-1.sh",
            "k8s-ray.yaml"} <= set(b.files)
    serve = [t for t, _ in _serve(b)]
    i = serve.index("--distributed-executor-backend")
    assert serve[i + 1] == "ray" and serve.count("--distributed-executor-backend") == 1
    assert not set(serve) & set(MP_ONLY)
    tp, pp = (int(serve[serve.index(f) + 1]) for f in ("--tensor-parallel-size", "--pipeline-parallel-size"))
    assert tp * pp == b.gpus_per_replica == 16 and pp == b.nodes
    # the per-node launch is unchanged: it keeps its own multiprocessing backend
    assert [a.value for a in b.args if a.flag == "--distributed-executor-backend"] == ["mp"]
    assert any("k8s-ray.yaml" in w and "ray[cgraph]" in w for w in b.warnings)
    leader, worker = check_ray_lws(b)
    assert leader["securityContext"] == worker["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}


def test_the_pods_run_the_ray_head_then_vllm_and_the_worker_joins(two_nodes, tmp_path):
    """Each pod's command + args, expanded as Kubernetes does, run with stub programs: the leader starts the head and
    then vLLM with the Ray executor; the worker joins LWS's leader address, trying again until the head answers."""
    b = two_nodes["vllm"]
    leader, worker = check_ray_lws(b)
    pod_env = {"LWS_LEADER_ADDRESS": "vllm-0.vllm", "LWS_WORKER_INDEX": "1", "LWS_GROUP_SIZE": "2"}
    env = _stubs(tmp_path)
    argv = [_k8s_expand(x, pod_env) for x in leader["command"] + leader["args"]]
    out = subprocess.run(argv, capture_output=True, text=True, env={**env, **pod_env}, cwd=tmp_path, timeout=60)
    assert out.returncode == 0, out.stderr
    head, serve = _calls(env)
    assert head == ["ray", "start", "--head", "--port=6379"]
    assert serve[:3] == ["vllm", "serve", b.model_path] and serve[3:] == leader["args"][1:]
    assert serve[serve.index("--distributed-executor-backend") + 1] == "ray"

    env = _stubs(tmp_path, "worker", fail_first=2)
    argv = [_k8s_expand(x, pod_env) for x in worker["command"] + worker["args"]]
    out = subprocess.run(argv, capture_output=True, text=True, env={**env, **pod_env}, cwd=tmp_path, timeout=60)
    assert out.returncode == 0, out.stderr
    calls = _calls(env)
    assert calls == [["ray", "start", "--address=vllm-0.vllm:6379", "--block"]] * 3  # two refusals, then joined


def test_node_scripts_start_the_head_and_join_it(two_nodes, tmp_path):
    b = two_nodes["vllm"]
    for r in range(b.nodes):
        path = tmp_path / f"ray-{r}.sh"
        path.write_text(b.files[f"launch-ray-node-{r}.sh"])
        assert subprocess.run(["sh", "-n", str(path)]).returncode == 0
    env = _stubs(tmp_path)
    out = subprocess.run(["sh", str(tmp_path / "ray-0.sh")], capture_output=True, text=True,
                         env={**env, "MODEL": "/data/my model"}, cwd=tmp_path, timeout=60)
    assert out.returncode == 0, out.stderr
    head, serve = _calls(env)
    assert head == ["ray", "start", "--head", "--port=6379"]
    assert serve == ["vllm", "serve", "/data/my model", *(t for t, _ in _serve(b)[1:])]
    assert serve[serve.index("--distributed-executor-backend") + 1] == "ray" and not set(serve) & set(MP_ONLY)

    env = _stubs(tmp_path, "node1", fail_first=1)
    out = subprocess.run(["sh", str(tmp_path / "ray-1.sh")], capture_output=True, text=True,
                         env={**env, "LEADER_ADDR": LEADER}, cwd=tmp_path, timeout=60)
    assert out.returncode == 0, out.stderr
    assert _calls(env) == [["ray", "start", f"--address={LEADER}:6379", "--block"]] * 2
    # no default for the leader's address: a node must be told where node 0 is
    missing = subprocess.run(["sh", str(tmp_path / "ray-1.sh")], capture_output=True, text=True,
                             env={"PATH": env["PATH"]}, cwd=tmp_path, timeout=60)
    assert missing.returncode != 0 and "LEADER_ADDR" in missing.stderr


def test_a_worker_gives_up_when_no_head_answers(two_nodes, tmp_path):
    """A head that never comes: the node tries every 5 s for 300 s (60 tries, `sleep` stubbed) and then says why."""
    b = two_nodes["vllm"]
    (tmp_path / "ray-1.sh").write_text(b.files["launch-ray-node-1.sh"])
    env = _stubs(tmp_path, fail_first=10 ** 6)
    out = subprocess.run(["sh", str(tmp_path / "ray-1.sh")], capture_output=True, text=True,
                         env={**env, "LEADER_ADDR": LEADER}, cwd=tmp_path, timeout=120)
    assert out.returncode == 1 and "no Ray head answered within 300 s" in out.stderr
    assert len(_calls(env)) == b.ray.join_timeout_s // b.ray.join_retry_s == 60


def test_vllms_own_parser_takes_the_ray_serve_command(two_nodes):
    b = two_nodes["vllm"]
    argv = [b.model_path if t == MODEL else t for t, _ in _serve(b)]
    (got,) = vllm_parse([argv], ("distributed_executor_backend", "nnodes", "node_rank", "headless",
                                 "tensor_parallel_size", "pipeline_parallel_size", "model_tag"))
    assert got["distributed_executor_backend"] == "ray"
    assert (got["nnodes"], got["node_rank"], got["headless"]) == (1, 0, False)  # no per-node launch
    assert got["tensor_parallel_size"] * got["pipeline_parallel_size"] == 16 and got["model_tag"] == b.model_path


def test_the_ray_files_speak_the_bundles_language():
    found, _ = deploy_bundles(load_answers(TWO_NODES), _k(), "zh", engine="vllm")
    (b,) = found
    assert "Ray 头节点" in b.files["launch-ray-node-0.sh"] and "Ray 头节点" in b.files["k8s-ray.yaml"]
    assert "LEADER_ADDR" in b.files["launch-ray-node-1.sh"]


def test_no_ray_files_where_the_layout_is_not_tensor_times_pipeline_parallel(two_nodes):
    """One node: no multi-node launch at all; SGLang: not its layout; vLLM's data-parallel ranks across nodes: they
    keep vLLM's own DP launch."""
    assert two_nodes["sglang"].ray is None and not any("ray" in f for f in two_nodes["sglang"].files)
    one, _ = deploy_bundles(parse_answers({"hardware": {"gpu_vendor": "nvidia", "gpu_model": "h100-sxm",
                                                         "gpu_count": 8}, "model": {"name": "llama-3.1-70b"}}),
                            _k(), "en", engine="vllm")
    assert one[0].status == "ok" and one[0].ray is None and not any("ray" in f for f in one[0].files)
    dp, _ = deploy_bundles(load_answers(ROOT / "examples" / "deepseek-v3-ep-two-nodes.yaml"), _k(), "en",
                           engine="vllm")
    assert dp[0].status == "ok" and dp[0].nodes == 2 and any(a.role == "start_rank" for a in dp[0].args)
    assert dp[0].ray is None and not any("ray" in f for f in dp[0].files)


@pytest.mark.parametrize("i", range(3))
def test_a_hostile_model_name_stays_a_comment_in_the_ray_files(i, tmp_path):
    """A model name with quotes, $( ), backticks and line breaks: the Ray files still parse and validate, and running
    them runs no part of it."""
    from tests.advisor.deploy.test_deploy import HOSTILE

    data = yaml.safe_load(TWO_NODES.read_text())
    data["model"] = {"name": HOSTILE[i], "params_b": 405, "precision": "bf16", "context_tokens": 8192}
    (b,) = deploy_bundles(parse_answers(data), _k(), "en", engine="vllm")[0]
    assert b.status == "ok" and b.nodes == 2 and b.ray is not None
    check_ray_lws(b)
    for r in range(b.nodes):
        (tmp_path / f"ray-{r}.sh").write_text(b.files[f"launch-ray-node-{r}.sh"])
        assert subprocess.run(["sh", "-n", str(tmp_path / f"ray-{r}.sh")]).returncode == 0
        env = _stubs(tmp_path, f"n{r}")
        out = subprocess.run(["sh", str(tmp_path / f"ray-{r}.sh")], capture_output=True, text=True,
                             env={**env, "LEADER_ADDR": LEADER}, cwd=tmp_path, timeout=60)
        assert out.returncode == 0, out.stderr
        assert all(HOSTILE[i] not in a for call in _calls(env) for a in call)
    assert not list(tmp_path.rglob("pwned*"))


# --------------------------------------------------------------------------------- KServe's LLMInferenceService
ISVC_SPEC = yaml.safe_load((Path(__file__).parent / "data" / "llminferenceservice-v1alpha1-spec.yaml").read_text())
ISVC = "llminferenceservice.yaml"


def _one_node() -> Bundle:
    found, _ = deploy_bundles(parse_answers({"hardware": {"gpu_vendor": "nvidia", "gpu_model": "h100-sxm",
                                                           "gpu_count": 8}, "model": {"name": "llama-3.1-70b"}}),
                              _k(), "en", engine="vllm")
    return found[0]


@pytest.fixture(scope="module")
def isvc_bundles() -> dict[str, Bundle]:
    """One node (TP 8 on 8 × H100) and data-parallel ranks over two nodes (DeepSeek-V3, DP 16 + EP on 2 × 8 H200)."""
    dp, _ = deploy_bundles(load_answers(ROOT / "examples" / "deepseek-v3-ep-two-nodes.yaml"), _k(), "en",
                           engine="vllm")
    return {"one-node": _one_node(), "dp-nodes": dp[0]}


def check_isvc(b: Bundle) -> dict:
    """llminferenceservice.yaml: one LLMInferenceService whose spec the CRD's v1alpha1 schema takes, its pod templates
    valid PodTemplates; the plan's replicas, GPUs per pod, model and parallelism; the container's args the bundle's
    own but those KServe's template writes. The document."""
    (doc,) = _docs(b.files[ISVC])
    assert doc["apiVersion"] == "serving.kserve.io/v1alpha1" and doc["kind"] == "LLMInferenceService"
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", doc["metadata"]["name"]) and len(doc["metadata"]["name"]) <= 35
    spec = doc["spec"]
    jsonschema.validate(spec, ISVC_SPEC)
    pods = ["template"] + (["worker"] if b.nodes > 1 else [])
    assert ("worker" in spec) == (b.nodes > 1)
    for name in pods:
        for v in _versions():
            kubernetes_validate.validate({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"},
                                          "template": {"spec": spec[name]}}, v, strict=True)
    assert spec["replicas"] == b.replicas
    assert spec["model"]["uri"] == f"pvc://models/{b.model_path.rsplit('/', 1)[-1]}"
    from advisor.deploy.settings import served_name

    assert spec["model"]["name"] == served_name(b.model_name)
    lk = _k().deploy.engines["vllm"].llmisvc
    dropped = set(lk.dp_templated if b.nodes > 1 else lk.templated)
    want: list[str] = []
    for a in b.args:
        if a.flag not in dropped:
            want += [a.flag] if a.value is None else [a.flag, a.value]
    for name in pods:
        (c,) = spec[name]["containers"]
        assert c["name"] == "main" and c["image"] == b.image and c["args"] == want
        assert c["resources"]["limits"][b.gpu_resource] == b.gpus_per_replica // b.nodes
        assert c["securityContext"] == {"runAsNonRoot": False}
    return doc


def _template_command(b: Bundle, spec: dict, leader_addr: str = LEADER) -> list[str]:
    """What KServe v0.20.0's own templates run in the leader's container, the container's args appended:
    config-llm-template.yaml `vllm serve /mnt/models --served-model-name NAME --port 8000 [--tensor-parallel-size T]`;
    config-llm-worker-data-parallel.yaml adds --data-parallel-size, -size-local, -address, -rpc-port, -start-rank and
    --enable-expert-parallel with parallelism.expert (its leader's start rank is 0)."""
    par = spec.get("parallelism", {})
    cmd = ["/mnt/models", "--served-model-name", spec["model"]["name"], "--port", "8000"]
    if "worker" in spec:
        cmd += ["--enable-expert-parallel"] if par.get("expert") else []
        cmd += ["--tensor-parallel-size", str(par["tensor"])] if par.get("tensor") else []
        cmd += ["--data-parallel-size", str(par.get("data", 1)), "--data-parallel-size-local",
                str(par.get("dataLocal", 1)), "--data-parallel-address", leader_addr,
                "--data-parallel-rpc-port", str(par.get("dataRPCPort", 5555)), "--data-parallel-start-rank", "0"]
    elif par.get("tensor"):
        cmd += ["--tensor-parallel-size", str(par["tensor"])]
    return cmd + spec["template"]["containers"][0]["args"]


@pytest.mark.parametrize("case", ["one-node", "dp-nodes"])
def test_llm_inference_service_validates_and_carries_the_plan(isvc_bundles, case):
    b = isvc_bundles[case]
    assert b.status == "ok" and ISVC in b.files
    spec = check_isvc(b)["spec"]
    by = {a.flag: a.value for a in b.args}
    par = spec["parallelism"]
    assert par["tensor"] == int(by["--tensor-parallel-size"])
    if case == "one-node":
        assert b.nodes == 1 and par == {"tensor": 8} and "worker" not in spec
    else:  # KServe's LWS size is data / dataLocal: the plan's nodes
        assert par["data"] == int(by["--data-parallel-size"]) == b.gpus_per_replica == 16
        assert par["dataLocal"] == int(by["--data-parallel-size-local"]) == 8 and par["data"] // par["dataLocal"] == 2
        assert par["expert"] is True and par["dataRPCPort"] == int(by["--data-parallel-rpc-port"])
    assert spec["router"] == {"gateway": {}, "route": {}, "scheduler": {}}


def test_the_schema_refuses_what_the_api_does_not_have(isvc_bundles):
    """The vendored schema can fail: a misspelt field, a count as text, replicas beside scaling."""
    spec = _docs(isvc_bundles["one-node"].files[ISVC])[0]["spec"]
    for bad in ({**spec, "parallelism": {"tensors": 8}}, {**spec, "replicas": "one"},
                {**spec, "scaling": {"minReplicas": 1}}, {k: v for k, v in spec.items() if k != "model"} | {"model": {}},
                {**spec, "template": {"containers": [{"image": "x"}]}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, ISVC_SPEC)


@pytest.mark.parametrize("case", ["one-node", "dp-nodes"])
def test_vllms_own_parser_takes_what_kserves_template_runs(isvc_bundles, case):
    """KServe's template command with the container's args appended, parsed by vLLM 0.32.0's own parser: the bundle's
    values arrive, and the flags KServe writes are written once."""
    b = isvc_bundles[case]
    spec = _docs(b.files[ISVC])[0]["spec"]
    argv = _template_command(b, spec)
    for flag in ("--served-model-name", "--port", "--tensor-parallel-size", "--data-parallel-size"):
        assert argv.count(flag) <= 1, flag
    (got,) = vllm_parse([argv], ("model_tag", "max_num_seqs", "max_model_len", "gpu_memory_utilization",
                                 "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size",
                                 "data_parallel_size_local", "enable_expert_parallel", "port", "served_model_name"))
    by = {a.flag: a.value for a in b.args}
    assert got["model_tag"] == "/mnt/models" and got["port"] == 8000
    assert got["served_model_name"] == [spec["model"]["name"]]
    assert got["max_num_seqs"] == int(by["--max-num-seqs"]) and got["max_model_len"] == int(by["--max-model-len"])
    assert got["gpu_memory_utilization"] == float(by["--gpu-memory-utilization"])
    assert got["tensor_parallel_size"] == int(by["--tensor-parallel-size"])
    if case == "dp-nodes":
        assert (got["data_parallel_size"], got["data_parallel_size_local"]) == (16, 8) and got["enable_expert_parallel"]
    else:
        assert got["data_parallel_size"] == 1 and got["tensor_parallel_size"] == 8


def test_no_llm_inference_service_where_kserve_has_no_template_for_it(two_nodes):
    """Pipeline parallel over nodes (KServe v0.20.0 names a worker config it does not ship), a CPU, another engine:
    no file, and the vLLM bundle says why."""
    pp = two_nodes["vllm"]
    assert ISVC not in pp.files and "kserve-config-llm-worker-pipeline-parallel" in pp.absent[ISVC]
    assert ISVC not in two_nodes["sglang"].files and ISVC not in two_nodes["sglang"].absent
    cpu, _ = deploy_bundles(load_answers(ROOT / "examples" / "cpu-only-box.yaml"), _k(), "en", engine="vllm")
    assert cpu[0].status == "ok" and cpu[0].device == "cpu"
    assert ISVC not in cpu[0].files and "kserve.yaml" in cpu[0].absent[ISVC]


def test_the_llm_inference_service_speaks_the_bundles_language():
    found, _ = deploy_bundles(parse_answers({"hardware": {"gpu_vendor": "nvidia", "gpu_model": "h100-sxm",
                                                           "gpu_count": 8}, "model": {"name": "llama-3.1-70b"}}),
                              _k(), "zh", engine="vllm")
    assert "KServe 的 LLMInferenceService" in found[0].files[ISVC]
    check_isvc(found[0])


@pytest.mark.parametrize("i", range(3))
def test_a_hostile_model_name_stays_a_value_in_the_llm_inference_service(i):
    from tests.advisor.deploy.test_deploy import HOSTILE

    found, _ = deploy_bundles(parse_answers({"hardware": {"gpu_vendor": "nvidia", "gpu_model": "h100-sxm",
                                                           "gpu_count": 8},
                                             "model": {"name": HOSTILE[i], "params_b": 8, "precision": "bf16",
                                                       "context_tokens": 8192}}), _k(), "en", engine="vllm")
    doc = check_isvc(found[0])
    assert HOSTILE[i] not in json.dumps(doc)  # served as its safe form; the raw name only in comments

"""A replica over several nodes: vLLM's and SGLang's own multi-node launch, as a LeaderWorkerSet and a script per node.

The LeaderWorkerSet is checked against its API as LWS v0.10.0's CRD states it (config/crd/bases/
leaderworkerset.x-k8s.io_leaderworkersets.yaml at v0.10.0, 2026-08-11: the spec's own fields below, written out from
it; its leader and worker templates are core/v1 PodTemplateSpecs, checked by Kubernetes' own schemas of two minor
versions as PodTemplate objects). The commands go through vLLM's own parser (.venv-vllm) and SGLang's flag table."""
from __future__ import annotations

import atexit
import json
import subprocess
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from advisor.cli import deploy_bundles
from advisor.deploy import Bundle
from advisor.inputs.answers import load_answers

ROOT = Path(__file__).resolve().parents[3]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
K8S = ("1.33.0",)

# the non-template part of the v1 LeaderWorkerSet spec, as the CRD states it (enums, defaults, required)
LWS_SPEC = {
    "type": "object", "required": ["leaderWorkerTemplate"], "additionalProperties": False,
    "properties": {
        "replicas": {"type": "integer", "minimum": 0, "maximum": 1000000},
        "leaderWorkerTemplate": {
            "type": "object", "required": ["workerTemplate"], "additionalProperties": False,
            "properties": {
                "leaderTemplate": {"type": "object"}, "workerTemplate": {"type": "object"},
                "size": {"type": "integer", "minimum": 1},  # >= 1: the webhook's rule
                "restartPolicy": {"enum": ["Default", "RecreateGroupOnPodRestart", "RecreateGroupAfterStart", "None"]},
                "subGroupPolicy": {"type": "object"}, "volumeClaimTemplates": {"type": "array"},
                "persistentVolumeClaimRetentionPolicy": {"type": "object"}}},
        "rolloutStrategy": {"type": "object", "required": ["type"]},
        "startupPolicy": {"enum": ["LeaderCreated", "LeaderReady"]},
        "networkConfig": {"type": "object", "required": ["subdomainPolicy"]}}}
LWS_ENV = ("LWS_LEADER_ADDRESS", "LWS_WORKER_INDEX", "LWS_GROUP_SIZE")  # what LWS injects (its env reference)


_PARSER: list[subprocess.Popen] = []  # one vLLM parser process per test process: importing vLLM takes seconds
_PARSER_SCRIPT = (
    "import contextlib, functools, io, json, sys\n"
    "from vllm.entrypoints.launchers.cli_args import make_arg_parser\n"
    "from vllm.utils.argparse_utils import FlexibleArgumentParser\n"
    "p = make_arg_parser(FlexibleArgumentParser())\n"
    "get = lambda ns, k: functools.reduce(getattr, k.split('.'), ns)\n"
    "for line in sys.stdin:\n"
    "    keys, argvs = json.loads(line)\n"
    "    err = io.StringIO()\n"
    "    try:\n"
    "        with contextlib.redirect_stderr(err):\n"
    "            out = {'ok': [{k: get(p.parse_args(a), k) for k in keys} for a in argvs]}\n"
    "    except SystemExit:\n"
    "        out = {'error': err.getvalue()[-1500:]}\n"
    "    print('RESULT:' + json.dumps(out), flush=True)\n")


def _parser() -> subprocess.Popen:
    if not _PARSER or _PARSER[0].poll() is not None:
        _PARSER[:] = [subprocess.Popen([str(VLLM_PYTHON), "-c", _PARSER_SCRIPT], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)]
        atexit.register(_PARSER[0].kill)
    return _PARSER[0]


def vllm_parse(argvs: list[list[str]], keys: tuple[str, ...]) -> list[dict]:
    """Each argv (after `vllm serve`) through vLLM's own parser in .venv-vllm: the parsed values of `keys` (a dotted key
    reads an attribute of a parsed object, e.g. kv_transfer_config.kv_connector). One parser process serves every call
    of a test process. Skips where vLLM is not installed."""
    if not VLLM_PYTHON.exists():
        pytest.skip("no .venv-vllm here (make test installs it)")
    proc = _parser()
    proc.stdin.write(json.dumps([list(keys), argvs]) + "\n")
    proc.stdin.flush()
    for line in proc.stdout:  # vLLM may log to stdout while it imports: the answer is the RESULT line
        if line.startswith("RESULT:"):
            got = json.loads(line[7:])
            assert "ok" in got, got["error"]
            return got["ok"]
    raise AssertionError(f"vLLM's parser process ended (exit {proc.wait()})")


def _versions() -> list[str]:
    return sorted({*K8S, kubernetes_validate.latest_version()})


def check_lws(b: Bundle) -> None:
    """k8s.yaml of a multi-node bundle: a LeaderWorkerSet valid against its API and a Service on its leaders; every
    $(VAR) in the args is one LWS injects; only the leader serves HTTP."""
    docs = [d for d in yaml.safe_load_all(b.files["k8s.yaml"]) if d is not None]
    kinds = [d["kind"] for d in docs]
    assert kinds == (["ConfigMap"] if b.extra_files else []) + ["LeaderWorkerSet", "Service"], kinds
    lws = next(d for d in docs if d["kind"] == "LeaderWorkerSet")
    svc = next(d for d in docs if d["kind"] == "Service")
    assert lws["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
    jsonschema.validate(lws["spec"], LWS_SPEC)
    lwt = lws["spec"]["leaderWorkerTemplate"]
    assert lwt["size"] == b.nodes >= 2 and lws["spec"]["replicas"] == b.replicas
    for name in ("leaderTemplate", "workerTemplate"):
        for v in _versions():
            kubernetes_validate.validate({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"},
                                          "template": lwt[name]}, v, strict=True)
    for v in _versions():
        kubernetes_validate.validate(svc, v, strict=True)
    (leader,) = lwt["leaderTemplate"]["spec"]["containers"]
    (worker,) = lwt["workerTemplate"]["spec"]["containers"]
    assert svc["spec"]["selector"] == {"leaderworkerset.sigs.k8s.io/name": lws["metadata"]["name"], "role": "leader"}
    assert lwt["leaderTemplate"]["metadata"]["labels"]["role"] == "leader"
    assert leader["ports"] == [{"name": "http", "containerPort": b.port}] and "readinessProbe" in leader
    assert "ports" not in worker and "readinessProbe" not in worker  # the workers serve no HTTP
    per_pod = b.gpus_per_replica // b.nodes
    assert leader["resources"]["limits"][b.gpu_resource] == worker["resources"]["limits"][b.gpu_resource] == per_pod
    for c in (leader, worker):
        refs = {x for a in c["args"] for x in __import__("re").findall(r"(?<!\$)\$\(([A-Z_]+)\)", a)}
        assert refs <= set(LWS_ENV), refs
    assert "$(LWS_WORKER_INDEX)" not in leader["args"]
    if any(a.role == "start_rank" for a in b.args):  # the worker's shell computes its start rank from its index
        assert worker["command"][:2] == ["/bin/sh", "-c"] and "LWS_WORKER_INDEX" in worker["command"][2]
        return
    assert "$(LWS_WORKER_INDEX)" in worker["args"]
    # each pod runs exactly its node's command: the program once, then that node's arguments
    from advisor.deploy.types import MODEL

    for c, rank, rank_value in ((leader, 0, None), (worker, 1, "$(LWS_WORKER_INDEX)")):
        want = [b.model_path if t == MODEL else f"/config/{t}" if t in b.extra_files else t
                for t, _ in b.node_args(rank, "$(LWS_LEADER_ADDRESS)", rank_value)]
        assert c["command"] + c["args"] == (b.image_entrypoint or b.program) + want


@pytest.fixture(scope="module")
def two_nodes():
    found, _ = deploy_bundles(load_answers(ROOT / "examples" / "llama-405b-two-nodes.yaml"), _k(), "en")
    return {b.engine: b for b in found}


def _k():
    from tests.advisor.deploy.test_deploy import knowledge

    return knowledge()


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_two_nodes_make_a_leader_worker_set_and_a_script_per_node(two_nodes, engine, tmp_path):
    b = two_nodes[engine]
    assert b.status == "ok" and b.nodes == 2 and b.infiniband and b.gpus_per_replica == 16
    check_lws(b)
    lws = next(d for d in yaml.safe_load_all(b.files["k8s.yaml"]) if d and d["kind"] == "LeaderWorkerSet")
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    assert leader["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}  # InfiniBand: GPUDirect RDMA
    assert any("rdma/ib" in w for w in b.warnings)  # and the cluster's own RDMA resource is said, not guessed
    for r in (0, 1):
        sh = b.files[f"launch-node-{r}.sh"]
        (tmp_path / "s.sh").write_text(sh)
        assert subprocess.run(["sh", "-n", str(tmp_path / "s.sh")]).returncode == 0
        assert 'LEADER_ADDR="${LEADER_ADDR:?' in sh  # no default: a node must be told where node 0 is
        assert (f"set -- \"$@\" {r}  #" in sh) and ("--headless" in sh) == (engine == "vllm" and r == 1)


def test_a_node_script_runs_with_its_rank_and_the_leaders_address(two_nodes, tmp_path):
    """launch-node-1.sh, run with `vllm` a stub that prints its argv: the rank, the address and --headless arrive."""
    b = two_nodes["vllm"]
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "vllm").write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n')
    (bin_ / "vllm").chmod(0o755)
    (tmp_path / "n1.sh").write_text(b.files["launch-node-1.sh"])
    env = {"PATH": f"{bin_}:/usr/bin:/bin", "LEADER_ADDR": "10.0.0.7"}
    out = subprocess.run(["sh", str(tmp_path / "n1.sh")], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    argv = out.stdout.splitlines()
    assert argv[argv.index("--node-rank") + 1] == "1" and argv[argv.index("--master-addr") + 1] == "10.0.0.7"
    assert "--headless" in argv and argv[argv.index("--nnodes") + 1] == "2"
    missing = subprocess.run(["sh", str(tmp_path / "n1.sh")], capture_output=True, text=True,
                             env={"PATH": env["PATH"]}, cwd=tmp_path)
    assert missing.returncode != 0 and "LEADER_ADDR" in missing.stderr


def test_vllms_own_parser_takes_the_leader_and_the_worker(two_nodes, tmp_path):
    b = two_nodes["vllm"]
    jobs = [[t for t, _ in b.node_args(0, "10.0.0.7")], [t for t, _ in b.node_args(1, "10.0.0.7")]]
    jobs = [[b.model_path if t == "\x00MODEL" else t for t in j] for j in jobs]
    lead, work = vllm_parse(jobs, ("nnodes", "node_rank", "master_addr", "master_port", "headless",
                                   "tensor_parallel_size", "pipeline_parallel_size", "distributed_executor_backend"))
    assert (lead["nnodes"], lead["node_rank"], lead["headless"]) == (2, 0, False)
    assert (work["nnodes"], work["node_rank"], work["headless"]) == (2, 1, True)
    assert lead["master_addr"] == work["master_addr"] == "10.0.0.7" and lead["master_port"] == 29501
    assert lead["tensor_parallel_size"] * lead["pipeline_parallel_size"] == 16
    assert lead["distributed_executor_backend"] == "mp"


def test_sglangs_flag_table_takes_every_node(two_nodes):
    from tests.advisor.deploy.test_deploy_parsers import sglang_parser

    b = two_nodes["sglang"]
    p = sglang_parser()
    for r in (0, 1):
        argv = [b.model_path if t == "\x00MODEL" else t for t, _ in b.node_args(r, "10.0.0.7")]
        ns = p.parse_args(argv)
        assert ns.nnodes == 2 and ns.node_rank == r and ns.dist_init_addr == "10.0.0.7:20000"
        assert ns.tp_size * ns.pp_size == 16


def test_one_node_bundles_are_unchanged_by_it():
    """A plan on one node writes no multi-node flag at all."""
    from advisor.inputs.answers import parse_answers

    found, _ = deploy_bundles(parse_answers({"hardware": {"gpu_vendor": "nvidia", "gpu_model": "h100-sxm",
                                                           "gpu_count": 8}, "model": {"name": "llama-3.1-70b"}}),
                              _k(), "en")
    for b in found:
        if b.status == "ok":
            assert b.nodes == 1 and not any(a.role in ("node_rank", "leader_addr", "worker_only") for a in b.args)
            assert "launch.sh" in b.files

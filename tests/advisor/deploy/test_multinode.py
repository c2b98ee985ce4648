"""A replica over several nodes: vLLM's and SGLang's own multi-node launch, as a LeaderWorkerSet and a script per node.

The LeaderWorkerSet is checked against its API as LWS v0.10.0's CRD states it (config/crd/bases/
leaderworkerset.x-k8s.io_leaderworkersets.yaml at v0.10.0, 2026-08-11: the spec's own fields below, written out from
it; its leader and worker templates are core/v1 PodTemplateSpecs, checked by Kubernetes' own schemas of two minor
versions as PodTemplate objects). The commands go through vLLM's own parser (.venv-vllm) and SGLang's flag table."""
from __future__ import annotations

import atexit
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
from advisor.inputs.answers import load_answers, parse_answers

ROOT = Path(__file__).resolve().parents[3]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
K8S = ("1.33.0",)
CJK = re.compile(r"[\u3400-\u9fff]")

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
    assert svc["metadata"]["name"] != lws["metadata"]["name"]  # LWS's own headless Service (the pods' DNS) has that
    if b.mpi is not None:  # TensorRT-LLM's MPI launch: mpirun in the leader's shell, trtllm-serve's arguments as args
        from advisor.deploy.types import MODEL

        assert leader["command"][:2] == worker["command"][:2] == ["/bin/sh", "-c"]
        assert leader["args"] == [b.model_path if t == MODEL else f"/config/{t}" if t in b.extra_files else t
                                  for t, _ in b.node_args(0, "$(LWS_LEADER_ADDRESS)")]
        assert "; exec mpirun " in leader["command"][2]  # the leader runs every rank
        assert worker["command"][2].endswith('; exec "$$(command -v sshd)" "$@"')  # a worker only the SSH server
        for name, c in (("leaderTemplate", leader), ("workerTemplate", worker)):  # the user's Secret, read-only
            ssh = next(v for v in lwt[name]["spec"]["volumes"] if v["name"] == "ssh")
            assert ssh["secret"]["secretName"] == b.mpi.secret
            assert {"name": "ssh", "mountPath": b.mpi.ssh_dir, "readOnly": True} in c["volumeMounts"]
        return
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


# ------------------------------------------------------------------------------- TensorRT-LLM: one MPI world
# trtllm-serve across nodes runs in one MPI world, one rank per GPU, every rank through trtllm-llmapi-launch (rank 0
# serves HTTP): launch-node-0.sh runs mpirun over MPI_HOSTS, launch-node-<r>.sh an SSH server it reaches; in the
# LeaderWorkerSet the leader pod runs mpirun over the group's pods, the workers sshd. No engine runs here: mpirun,
# sshd and the rest are stubs that record what they are given.
STUB = '#!/bin/sh\nprintf "%s\\0" "$@" > "$(dirname "$0")/../{name}.argv"\n'
# the other nodes' host keys are made anew in each fresh container: neither checked nor remembered, as the leader pod
NO_HOST_KEYS = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"


def _stub_bin(tmp_path: Path, *names: str, fail_ssh: int = 0, uid: int = 0) -> Path:
    """A bin folder of stubs: each of `names` writes its NUL-separated argv to ../<name>.argv and exits 0; `ssh` fails
    its first `fail_ssh` runs (a worker's SSH server not up yet); `sleep`, `install`, `mkdir`, `ssh-keygen` do
    nothing; `hostname` prints the leader pod's name; `id` prints `uid` (root by default, whoever runs the tests)."""
    bin_ = tmp_path / "bin"
    bin_.mkdir(parents=True, exist_ok=True)
    for name in names:
        (bin_ / name).write_text(STUB.format(name=name))
    if "ssh" in names:  # one line in ssh.tries per run
        tries = tmp_path / "ssh.tries"
        (bin_ / "ssh").write_text(f'#!/bin/sh\necho >> "{tries}"\nprintf "%s\\0" "$@" > "{tmp_path}/ssh.argv"\n'
                                  f'[ "$(wc -l < "{tries}")" -gt {fail_ssh} ]\n' if fail_ssh < 10 ** 6 else
                                  f'#!/bin/sh\necho >> "{tries}"\nexit 1\n')
    for name in ("sleep", "install", "mkdir", "ssh-keygen"):
        (bin_ / name).write_text("#!/bin/sh\nexit 0\n")
    (bin_ / "hostname").write_text("#!/bin/sh\necho trt-0\n")
    (bin_ / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    for f in bin_.iterdir():
        f.chmod(0o755)
    return bin_


def _bare_path(tmp_path: Path, *tools: str) -> str:
    """A PATH of `tools` alone (links to this machine's), so a program the script looks for is surely absent."""
    import shutil

    bare = tmp_path / "bare"
    bare.mkdir(parents=True, exist_ok=True)
    for tool in tools:
        (bare / tool).symlink_to(shutil.which(tool))
    return str(bare)


def _argv(tmp_path: Path, name: str) -> list[str] | None:
    path = tmp_path / f"{name}.argv"
    return path.read_bytes().decode().split("\0")[:-1] if path.exists() else None


def _run_sh(script: str, tmp_path: Path, env: dict[str, str], bin_: Path | None) -> subprocess.CompletedProcess:
    path = tmp_path / "scripts" / "launch.sh"  # (run from another folder: the options file goes beside the script)
    path.parent.mkdir(exist_ok=True)
    path.write_text(script, encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    return subprocess.run(["/bin/sh", str(path)], capture_output=True, text=True, cwd=elsewhere, timeout=30,
                          env={"PATH": f"{bin_}:/usr/bin:/bin", "HOME": str(tmp_path), **env})


@pytest.fixture(scope="module")
def trt_examples():
    """TensorRT-LLM's bundles of both two-node examples (Llama-3.1-405B BF16 on 2 x 8 H100, DeepSeek-V3 FP8 on 2 x 8
    H200), in English and Chinese."""
    out = {}
    for case in ("llama-405b-two-nodes", "deepseek-v3-ep-two-nodes"):
        for lang in ("en", "zh"):
            found, _ = deploy_bundles(load_answers(ROOT / "examples" / f"{case}.yaml"), _k(), lang, "tensorrt-llm")
            out[case, lang] = found[0]
    return out


def _server_argv(b: Bundle, model: str, options: str) -> list[str]:
    """trtllm-serve's command (after the program) as node 0 runs it: the model and the options file where given."""
    return [options if t in b.extra_files else t for t in b.argv(model=model)[len(b.program):]]


@pytest.mark.parametrize("case", ["llama-405b-two-nodes", "deepseek-v3-ep-two-nodes"])
def test_tensorrt_llm_spans_the_nodes_in_one_mpi_world(trt_examples, case, tmp_path):
    b = trt_examples[case, "en"]
    assert b.status == "ok" and b.nodes == 2 and b.gpus_per_replica == 16 and b.infiniband
    m = b.mpi
    assert m is not None and (m.ranks, m.per_node) == (16, 8) and b.ray is None
    assert set(b.files) == {"launch-node-0.sh", "launch-node-1.sh", "k8s.yaml", *b.extra_files}
    assert {"launch.sh", "docker-run.sh", "compose.yaml"} <= set(b.absent)  # one host's files: not for two nodes
    check_lws(b)
    for r in (0, 1):  # POSIX sh and bash both read the scripts
        path = tmp_path / f"n{r}.sh"
        path.write_text(b.files[f"launch-node-{r}.sh"])
        for shell in ("sh", "bash"):
            got = subprocess.run([shell, "-n", str(path)], capture_output=True, text=True)
            assert got.returncode == 0, (shell, r, got.stderr)
    # what the user must bring, said: their own key pair (never in the bundle), sshd on top of the release image
    said = " ".join(b.warnings)
    assert m.secret in said and "ssh-keygen" in said and "never makes or holds a key" in said
    assert "openssh-server" in said and "Open MPI" in said
    assert "PRIVATE KEY" not in "".join(b.files.values()) and "ssh-ed25519 " not in "".join(b.files.values())
    assert f"kubectl create secret generic {m.secret}" in b.files["k8s.yaml"]
    zh = trt_examples[case, "zh"]
    assert zh.status == "ok" and zh.files.keys() == b.files.keys() and CJK.search(" ".join(zh.warnings))
    assert CJK.search(zh.files["launch-node-0.sh"]) and CJK.search(zh.files["k8s.yaml"])
    check_lws(zh)


@pytest.mark.parametrize("case", ["llama-405b-two-nodes", "deepseek-v3-ep-two-nodes"])
def test_the_trtllm_serve_commands_parse_against_its_flag_table(trt_examples, case):
    """Node 0's command and the leader pod's args, through trtllm-serve's flags as its table has them (1.2.1): every
    flag known, tp_size x pp_size the MPI world."""
    from tests.advisor.deploy.test_deploy_parsers import table, trtllm_command, walk

    b = trt_examples[case, "en"]
    lws = next(d for d in yaml.safe_load_all(b.files["k8s.yaml"]) if d and d["kind"] == "LeaderWorkerSet")
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    for argv in (_server_argv(b, "/data/m", "/here/opts.yaml"), leader["args"]):
        walk(argv, table("tensorrt-llm"), 1)
        p = trtllm_command().make_context("serve", list(argv)).params
        assert p["tp_size"] * p["pp_size"] == b.mpi.ranks == 16 and p["host"] == "0.0.0.0" and p["port"] == 8000
        assert p["backend"] == "pytorch"
    assert leader["args"][0] == b.model_path


def test_node_0_runs_mpirun_over_the_hosts_given(trt_examples, tmp_path):
    """launch-node-0.sh with a stub mpirun: -np is the plan's GPUs, -H the hosts given with 8 slots each, the SSH port,
    the environment passed on, and trtllm-llmapi-launch before trtllm-serve and its arguments."""
    b = trt_examples["llama-405b-two-nodes", "en"]
    bin_ = _stub_bin(tmp_path, "mpirun", "ssh")
    got = _run_sh(b.files["launch-node-0.sh"], tmp_path, {"MPI_HOSTS": "gpu-a,10.0.0.8", "MODEL": "/data/m",
                                                          "LD_LIBRARY_PATH": "/opt/lib"}, bin_)
    assert got.returncode == 0, got.stderr
    argv = _argv(tmp_path, "mpirun")
    at = argv.index("trtllm-llmapi-launch")
    head, cmd = argv[:at], argv[at:]
    assert head == ["--allow-run-as-root", "--prefix", str(tmp_path), "-np", "16", "-H", "gpu-a:8,10.0.0.8:8",
                    "-mca", "orte_keep_fqdn_hostnames", "1", "-mca", "plm_rsh_args", f"-p 2222 {NO_HOST_KEYS}",
                    "-x", "PATH", "-x", "LD_LIBRARY_PATH"]
    # before mpirun: the other node (not this one) answers SSH with this node's key, no prompt
    assert (tmp_path / "ssh.tries").read_text().count("\n") == 1
    assert _argv(tmp_path, "ssh") == ["-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-p", "2222",
                                      *NO_HOST_KEYS.split(), "10.0.0.8", "true"]
    options = str(tmp_path / "scripts" / "extra-llm-api-options.yaml")
    assert cmd == ["trtllm-llmapi-launch", "trtllm-serve", *_server_argv(b, "/data/m", options)]
    assert (tmp_path / "scripts" / "extra-llm-api-options.yaml").read_text() == b.extra_files[
        "extra-llm-api-options.yaml"]
    # another SSH port; no LD_LIBRARY_PATH here, so none is passed on
    got = _run_sh(b.files["launch-node-0.sh"], tmp_path, {"MPI_HOSTS": "a,b", "SSH_PORT": "22"}, bin_)
    assert got.returncode == 0, got.stderr
    argv = _argv(tmp_path, "mpirun")
    assert argv[argv.index("plm_rsh_args") + 1] == f"-p 22 {NO_HOST_KEYS}" and "LD_LIBRARY_PATH" not in argv
    assert _argv(tmp_path, "ssh")[4:6] == ["-p", "22"]
    assert argv[argv.index("trtllm-serve") + 1] == b.model_path  # MODEL's default: the bundle's path


@pytest.mark.parametrize("env,says", [
    ({}, "MPI_HOSTS"),  # no host list: no default, as a node must be told where the others are
    ({"MPI_HOSTS": "only-one"}, "2 nodes"),
    ({"MPI_HOSTS": "a,b,c"}, "2 nodes"),
    ({"MPI_HOSTS": "a b"}, "MPI_HOSTS"),
    ({"MPI_HOSTS": "a;touch pwned,b"}, "MPI_HOSTS"),
    ({"MPI_HOSTS": "-x,b"}, "MPI_HOSTS"),
    ({"MPI_HOSTS": "a,b", "SSH_PORT": "22 -o ProxyCommand=x"}, "SSH_PORT"),
    ({"MPI_HOSTS": "a,a"}, "twice"),  # Open MPI would make them one host of 16 slots
    ({"MPI_HOSTS": "gpu.a.x,gpu.a.x"}, "twice"),
    ({"MPI_HOSTS": "a,b", "SSH_PORT": "0"}, "1 to 65535"),
    ({"MPI_HOSTS": "a,b", "SSH_PORT": "65536"}, "1 to 65535"),
    ({"MPI_HOSTS": "a,b", "SSH_PORT": "99999999999999999999999"}, "1 to 65535"),
    ({"MPI_HOSTS": "a,b", "SSH_PORT": "022"}, "1 to 65535"),
    ({"MPI_HOSTS": "a,b", "MODEL": "/data/my model"}, "splits"),
    ({"MPI_HOSTS": "a,b", "MODEL": "/data/m*"}, "splits"),
    ({"MPI_HOSTS": "a,b", "MODEL": "$(touch pwned)"}, "splits"),
])
def test_node_0_stops_with_why_on_a_bad_host_list_or_model_path(trt_examples, tmp_path, env, says):
    b = trt_examples["llama-405b-two-nodes", "en"]
    bin_ = _stub_bin(tmp_path, "mpirun", "ssh")
    got = _run_sh(b.files["launch-node-0.sh"], tmp_path, env, bin_)
    assert got.returncode != 0 and says in got.stderr, got.stderr
    assert _argv(tmp_path, "mpirun") is None and not list(tmp_path.rglob("pwned*"))
    assert len(got.stderr.strip().splitlines()) == 1 and not (tmp_path / "ssh.tries").exists()


def test_node_0_without_mpirun_says_so(trt_examples, tmp_path):
    b = trt_examples["llama-405b-two-nodes", "en"]
    got = _run_sh(b.files["launch-node-0.sh"], tmp_path, {"MPI_HOSTS": "a,b",
                                                          "PATH": _bare_path(tmp_path, "dirname", "cat")}, None)
    assert got.returncode != 0 and "no mpirun" in got.stderr


def test_node_0_keeps_dotted_host_names_whole(trt_examples, tmp_path):
    """Open MPI 4.x cuts a -H name that is not an IP address at its first dot unless orte_keep_fqdn_hostnames is set
    (gpu.a.x and gpu.b.x would both become "gpu", one host): node 0's mpirun is given the names whole and told to keep
    them so."""
    b = trt_examples["llama-405b-two-nodes", "en"]
    bin_ = _stub_bin(tmp_path, "mpirun", "ssh")
    got = _run_sh(b.files["launch-node-0.sh"], tmp_path, {"MPI_HOSTS": "gpu.a.x,gpu.b.x"}, bin_)
    assert got.returncode == 0, got.stderr
    argv = _argv(tmp_path, "mpirun")
    head = argv[:argv.index("trtllm-llmapi-launch")]
    assert head[head.index("-H") + 1] == "gpu.a.x:8,gpu.b.x:8"
    assert [head[i + 1:i + 3] for i, x in enumerate(head) if x == "-mca"][0] == ["orte_keep_fqdn_hostnames", "1"]
    assert _argv(tmp_path, "ssh")[-2:] == ["gpu.b.x", "true"]


def test_node_0_checks_ssh_and_each_other_node_before_mpirun(trt_examples, tmp_path):
    """No ssh client, or another node that does not let this one in: node 0 stops with one line naming the host,
    before mpirun (which would wait at a host-key prompt or fail with less to say)."""
    b = trt_examples["llama-405b-two-nodes", "en"]
    bin_ = _stub_bin(tmp_path, "mpirun", "ssh", fail_ssh=10 ** 6)
    got = _run_sh(b.files["launch-node-0.sh"], tmp_path, {"MPI_HOSTS": "gpu-a,gpu-b.example"}, bin_)
    assert got.returncode == 1 and _argv(tmp_path, "mpirun") is None
    assert got.stderr.strip().endswith(": gpu-b.example") and "AUTHORIZED_KEYS" in got.stderr
    assert len(got.stderr.strip().splitlines()) == 1 and (tmp_path / "ssh.tries").read_text().count("\n") == 1
    only_mpirun = _stub_bin(tmp_path / "no-ssh", "mpirun")
    got = _run_sh(b.files["launch-node-0.sh"], tmp_path, {"MPI_HOSTS": "a,b", "PATH": f"{only_mpirun}:" + _bare_path(
        tmp_path, "dirname", "cat")}, None)
    assert got.returncode == 1 and "no ssh client" in got.stderr and _argv(tmp_path / "no-ssh", "mpirun") is None
    zh = trt_examples["llama-405b-two-nodes", "zh"]
    got = _run_sh(zh.files["launch-node-0.sh"], tmp_path, {"MPI_HOSTS": "gpu-a,gpu-b"}, bin_)
    assert got.returncode == 1 and CJK.search(got.stderr) and got.stderr.strip().endswith(": gpu-b")


# every variable of these families set where mpirun runs, and a value whose newline makes a line of `env` that looks
# like another variable (NCCL_FAKE, set nowhere)
MPI_ENV = {"NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "mlx5_0", "UCX_TLS": "rc,sm", "HF_HOME": "/hf",
           "TLLM_LOG_LEVEL": "INFO", "TRTLLM_ENABLE_PDL": "1", "NCCLX": "1", "MY_NCCL_DEBUG": "1", "OTHER": "1",
           "TRICK": "x\nNCCL_FAKE=1"}
MPI_FORWARDED = ["HF_HOME", "NCCL_DEBUG", "NCCL_IB_HCA", "TLLM_LOG_LEVEL", "TRTLLM_ENABLE_PDL", "UCX_TLS"]


def _exported(argv: list[str]) -> list[str]:
    head = argv[:argv.index("trtllm-llmapi-launch")]
    return [head[i + 1] for i, x in enumerate(head) if x == "-x"]


@pytest.mark.parametrize("shell", ["/bin/sh", "bash"])
def test_node_0_passes_its_nccl_ucx_hf_and_trtllm_variables_to_every_rank(trt_examples, tmp_path, shell):
    """The ranks started over SSH see only what mpirun passes with -x: node 0's NCCL_*, UCX_*, HF_*, TLLM_*, TRTLLM_*
    (NCCL_DEBUG=INFO among them, which the bundle's InfiniBand advice asks for), by name, and nothing else."""
    b = trt_examples["llama-405b-two-nodes", "en"]
    bin_ = _stub_bin(tmp_path, "mpirun", "ssh")
    path = tmp_path / "n0.sh"
    path.write_text(b.files["launch-node-0.sh"])
    got = subprocess.run([shell, str(path)], capture_output=True, text=True, timeout=30, cwd=tmp_path,
                         env={"PATH": f"{bin_}:/usr/bin:/bin", "HOME": str(tmp_path), "MPI_HOSTS": "a,b", **MPI_ENV})
    assert got.returncode == 0, got.stderr
    assert _exported(_argv(tmp_path, "mpirun")) == ["PATH", *MPI_FORWARDED]
    got = _run_sh(b.files["launch-node-0.sh"], tmp_path, {"MPI_HOSTS": "a,b"}, bin_)  # none set: none passed
    assert got.returncode == 0 and _exported(_argv(tmp_path, "mpirun")) == ["PATH"]
    for lang in ("en", "zh"):  # where to set them, said
        said = " ".join(trt_examples["llama-405b-two-nodes", lang].warnings)
        assert "NCCL_*" in said and "TRTLLM_*" in said and "NCCL_DEBUG=INFO" in said
    assert "on node 0" in " ".join(b.warnings) and "leader pod" in " ".join(b.warnings)


def test_a_model_path_that_looks_like_code_stays_one_word(trt_examples, tmp_path):
    """A MODEL with no space or glob reaches trtllm-llmapi-launch as it is: nothing in it runs on the way."""
    b = trt_examples["llama-405b-two-nodes", "en"]
    bin_ = _stub_bin(tmp_path, "mpirun", "ssh")
    model = "/m/$(touch${IFS}pwned)`touch${IFS}pwned2`;'\"x"
    got = _run_sh(b.files["launch-node-0.sh"], tmp_path, {"MPI_HOSTS": "a,b", "MODEL": model}, bin_)
    assert got.returncode == 0, got.stderr
    argv = _argv(tmp_path, "mpirun")
    assert argv[argv.index("trtllm-serve") + 1] == model and not list(tmp_path.rglob("pwned*"))


def test_the_other_nodes_start_the_ssh_server_mpirun_reaches(trt_examples, tmp_path):
    b = trt_examples["llama-405b-two-nodes", "en"]
    bin_ = _stub_bin(tmp_path, "sshd")
    keys = tmp_path / "authorized_keys"
    keys.write_text("(a public key)\n")
    got = _run_sh(b.files["launch-node-1.sh"], tmp_path, {"AUTHORIZED_KEYS": str(keys)}, bin_)
    assert got.returncode == 0, got.stderr
    assert _argv(tmp_path, "sshd") == ["-D", "-e", "-p", "2222", "-o", f"AuthorizedKeysFile={keys}",
                                       "-o", "PasswordAuthentication=no", "-o", "PermitRootLogin=prohibit-password"]
    missing = _run_sh(b.files["launch-node-1.sh"], tmp_path, {"AUTHORIZED_KEYS": str(tmp_path / "none")}, bin_)
    assert missing.returncode != 0 and "AUTHORIZED_KEYS" in missing.stderr
    port = _run_sh(b.files["launch-node-1.sh"], tmp_path, {"AUTHORIZED_KEYS": str(keys), "SSH_PORT": "65535"}, bin_)
    assert port.returncode == 0 and _argv(tmp_path, "sshd")[3] == "65535"
    no_sshd = _run_sh(b.files["launch-node-1.sh"], tmp_path, {"AUTHORIZED_KEYS": str(keys),
                                                              "PATH": _bare_path(tmp_path)}, bin_)
    assert no_sshd.returncode != 0 and "openssh-server" in no_sshd.stderr


@pytest.mark.parametrize("env,says", [
    ({"AUTHORIZED_KEYS": "keys"}, "absolute path"),  # sshd would read it from the login user's home
    ({"AUTHORIZED_KEYS": "/etc/%u/keys"}, "absolute path"),  # sshd expands %u, %h...
    ({"SSH_PORT": "70000"}, "1 to 65535"),
    ({"SSH_PORT": "0"}, "1 to 65535"),
])
def test_the_other_nodes_stop_with_why_on_a_bad_keys_path_or_port(trt_examples, tmp_path, env, says):
    b = trt_examples["llama-405b-two-nodes", "en"]
    bin_ = _stub_bin(tmp_path, "sshd")
    keys = tmp_path / "authorized_keys"
    keys.write_text("(a public key)\n")
    got = _run_sh(b.files["launch-node-1.sh"], tmp_path, {"AUTHORIZED_KEYS": str(keys), **env}, bin_)
    assert got.returncode == 1 and says in got.stderr and len(got.stderr.strip().splitlines()) == 1, got.stderr
    assert _argv(tmp_path, "sshd") is None


def test_the_other_nodes_need_root_for_sshd(trt_examples, tmp_path):
    """sshd on SSH_PORT with privilege separation, letting mpirun in as root: started by anyone else it would fail
    later with less to say."""
    b = trt_examples["llama-405b-two-nodes", "en"]
    bin_ = _stub_bin(tmp_path, "sshd", uid=1000)
    keys = tmp_path / "authorized_keys"
    keys.write_text("(a public key)\n")
    got = _run_sh(b.files["launch-node-1.sh"], tmp_path, {"AUTHORIZED_KEYS": str(keys)}, bin_)
    assert got.returncode == 1 and "as root" in got.stderr and _argv(tmp_path, "sshd") is None
    zh = trt_examples["llama-405b-two-nodes", "zh"]
    got = _run_sh(zh.files["launch-node-1.sh"], tmp_path, {"AUTHORIZED_KEYS": str(keys)}, bin_)
    assert got.returncode == 1 and "root" in got.stderr and CJK.search(got.stderr)


def _pod(b: Bundle, role: str) -> dict:
    lws = next(d for d in yaml.safe_load_all(b.files["k8s.yaml"]) if d and d["kind"] == "LeaderWorkerSet")
    (c,) = lws["spec"]["leaderWorkerTemplate"][f"{role}Template"]["spec"]["containers"]
    return c


POD_ENV = {"LWS_LEADER_ADDRESS": "trt-0.trt.default", "LWS_GROUP_SIZE": "2", "LWS_WORKER_INDEX": "0"}


def _run_pod(c: dict, tmp_path: Path, bin_: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The container's command + args as Kubernetes passes them (its $(VAR) expansion), run with the stubs."""
    from tests.advisor.deploy.test_vllm_ray_kserve import _k8s_expand

    pod_env = {**POD_ENV, **(env or {})}
    argv = [_k8s_expand(x, pod_env) for x in c["command"] + c["args"]]
    return subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=30,
                          env={"PATH": f"{bin_}:/usr/bin:/bin", **pod_env})  # (env's own PATH wins)


def test_the_leader_pod_waits_for_the_workers_then_runs_mpirun_over_the_group(trt_examples, tmp_path):
    b = trt_examples["llama-405b-two-nodes", "en"]
    leader = _pod(b, "leader")
    bin_ = _stub_bin(tmp_path, "mpirun", "ssh", fail_ssh=2)  # the worker's SSH server answers at the third try
    got = _run_pod(leader, tmp_path, bin_)
    assert got.returncode == 0, got.stderr
    assert (tmp_path / "ssh.tries").read_text().count("\n") == 3
    assert _argv(tmp_path, "ssh")[-2:] == ["trt-0-1.trt.default", "true"]  # the worker as LWS names it
    argv = _argv(tmp_path, "mpirun")
    at = argv.index("trtllm-llmapi-launch")
    ssh = f"-p 2222 -i /run/mpi-ssh/id_ed25519 {NO_HOST_KEYS}"
    assert argv[:at] == ["--allow-run-as-root", "--prefix", str(tmp_path), "-np", "16",
                         "-H", "trt-0:8,trt-0-1.trt.default:8", "-mca", "orte_keep_fqdn_hostnames", "1",
                         "-mca", "plm_rsh_args", ssh, "-x", "PATH"]
    assert argv[at:] == ["trtllm-llmapi-launch", "trtllm-serve", *leader["args"]]


def test_the_leader_pod_passes_its_nccl_ucx_hf_and_trtllm_variables_to_every_rank(trt_examples, tmp_path):
    b = trt_examples["llama-405b-two-nodes", "en"]
    bin_ = _stub_bin(tmp_path, "mpirun", "ssh")
    got = _run_pod(_pod(b, "leader"), tmp_path, bin_, MPI_ENV)
    assert got.returncode == 0, got.stderr
    assert _exported(_argv(tmp_path, "mpirun")) == ["PATH", *MPI_FORWARDED]


def test_the_leader_pods_startup_budget_counts_the_wait_for_ssh(trt_examples, two_nodes):
    """The startupProbe counts from the container's start, and the MPI leader may spend ssh_wait_s waiting for the
    workers' SSH servers before trtllm-serve even starts: both are in its budget. Other engines' leaders keep theirs."""
    from advisor.knowledge.load import load_knowledge

    k = load_knowledge()
    b = trt_examples["llama-405b-two-nodes", "en"]
    probe = _pod(b, "leader")["startupProbe"]
    budget = k.deploy.probe_start_s["tensorrt-llm"] + b.mpi.ssh_wait_s
    assert probe["periodSeconds"] * probe["failureThreshold"] == budget == 2400
    line = next(x for x in b.files["k8s.yaml"].splitlines() if "startupProbe:" in x)
    assert "600 s" in line and "1800 s" in line
    vllm = _pod(two_nodes["vllm"], "leader")["startupProbe"]
    assert vllm["periodSeconds"] * vllm["failureThreshold"] == k.deploy.probe_start_s["vllm"]


def test_the_key_copy_step_says_why(trt_examples):
    for lang, says in (("en", "only root reads it"), ("zh", "只有 root 可读")):
        body = trt_examples["llama-405b-two-nodes", lang].files["k8s.yaml"]
        lines = [x for x in body.splitlines() if "install -m 600 /etc/mpi-ssh/" in x]
        assert len(lines) == 2 and all(says in x.split('"  # ', 1)[1] for x in lines)


def test_the_leader_pod_gives_up_with_why(trt_examples, tmp_path):
    b = trt_examples["llama-405b-two-nodes", "en"]
    leader = _pod(b, "leader")
    bin_ = _stub_bin(tmp_path, "mpirun", "ssh", fail_ssh=10 ** 6)  # no SSH server ever answers (`sleep` stubbed)
    got = _run_pod(leader, tmp_path, bin_)
    assert got.returncode == 1 and "600 s" in got.stderr and b.mpi.secret in got.stderr
    assert (tmp_path / "ssh.tries").read_text().count("\n") == 600 // 5 and _argv(tmp_path, "mpirun") is None
    other = _run_pod(leader, tmp_path, bin_, {"LWS_GROUP_SIZE": "3"})  # a group that is not the plan's nodes
    assert other.returncode != 0 and "LWS_GROUP_SIZE" in other.stderr


def test_the_worker_pod_runs_sshd_with_the_secrets_key(trt_examples, tmp_path):
    b = trt_examples["llama-405b-two-nodes", "en"]
    worker = _pod(b, "worker")
    bin_ = _stub_bin(tmp_path, "sshd")
    got = _run_pod(worker, tmp_path, bin_, {"LWS_WORKER_INDEX": "1"})
    assert got.returncode == 0, got.stderr
    assert _argv(tmp_path, "sshd") == worker["args"] == [
        "-D", "-e", "-p", "2222", "-o", "AuthorizedKeysFile=/run/mpi-ssh/authorized_keys",
        "-o", "PasswordAuthentication=no", "-o", "PermitRootLogin=prohibit-password"]
    no_sshd = _run_pod(worker, tmp_path, bin_, {"PATH": _bare_path(tmp_path)})
    assert no_sshd.returncode != 0 and "openssh-server" in no_sshd.stderr


@pytest.mark.parametrize("i", range(3))
def test_a_hostile_model_name_stays_out_of_the_mpi_files(i, tmp_path):
    """A model name with quotes, $( ), backticks, newlines and YAML breaks: in the scripts and the manifest only as
    one-line comments; the values carry its safe form; running node 0's script runs none of it."""
    from tests.advisor.deploy.test_deploy import FRAGMENTS, HOSTILE, shell_words_with, strings_in
    from advisor.deploy.render import comment

    name = HOSTILE[i]
    a = parse_answers({"concurrency": 16, "hardware": {"gpu_vendor": "nvidia", "gpu_model": "H100 SXM", "nodes": 2,
                                                       "gpus_per_node": 8, "interconnect": "infiniband"},
                       "model": {"name": name, "params_b": 405, "precision": "bf16", "context_tokens": 8192}})
    (b,), _ = deploy_bundles(a, _k(), "en", "tensorrt-llm")
    assert b.status == "ok" and b.mpi is not None and b.model_name == name
    check_lws(b)
    for r in (0, 1):
        body = b.files[f"launch-node-{r}.sh"]
        assert shell_words_with(body) == []  # the raw name is in no shell word
        hits = [line for line in body.splitlines() if FRAGMENTS[0] in line]
        assert hits  # the header names the model: what follows is checked on it, not on nothing
        for line in hits:
            assert line.startswith("#") and " ".join(comment(name).split()) in " ".join(line.split())
    docs = [d for d in yaml.safe_load_all(b.files["k8s.yaml"]) if d is not None]
    assert not [s for d in docs for s in strings_in(d) if any(f in s.replace("$$(", "$(") for f in FRAGMENTS)]
    bin_ = _stub_bin(tmp_path, "mpirun", "ssh")
    got = _run_sh(b.files["launch-node-0.sh"], tmp_path, {"MPI_HOSTS": "a,b"}, bin_)
    assert got.returncode == 0, got.stderr
    assert not list(tmp_path.rglob("pwned*")) and not any(FRAGMENTS[0] in x for x in _argv(tmp_path, "mpirun"))


def test_an_expert_parallel_plan_over_two_nodes_is_one_world_too(trt_examples):
    """The planner keeps TensorRT-LLM's attention DP to one node; a plan that spreads DP 16 + EP 16 over both nodes
    (as TensorRT-LLM's own two-node DeepSeek-V3 recipe does) gets the same MPI launch: -np 16, --tp_size 16
    --ep_size 16 --pp_size 1, enable_attention_dp in the options file."""
    from advisor.deploy import bundle_for
    from tests.advisor.deploy.test_deploy_parsers import trtllm_command

    answers = load_answers(ROOT / "examples" / "deepseek-v3-ep-two-nodes.yaml")
    _, rec = deploy_bundles(answers, _k(), "en", "tensorrt-llm")
    plan = rec.plan
    ep = plan.engines["tensorrt-llm"].model_copy(update={"attention_dp": 16, "tensor_parallel": 1,
                                                         "pipeline_parallel": 1})
    b = bundle_for("tensorrt-llm", plan.model_copy(update={"engines": {**plan.engines, "tensorrt-llm": ep}}),
                   answers, _k())
    assert b.status == "ok" and b.mpi is not None and b.mpi.ranks == 16 and b.nodes == 2
    check_lws(b)
    p = trtllm_command().make_context("serve", _server_argv(b, "/m", "/o.yaml")).params
    assert (p["tp_size"], p["ep_size"], p["pp_size"]) == (16, 16, 1)
    assert yaml.safe_load(b.extra_files["extra-llm-api-options.yaml"])["enable_attention_dp"] is True


def test_every_multi_node_manifest_says_to_delete_an_older_service_first(two_nodes, trt_examples):
    """The leader Service is <name>-leader since LWS's own headless Service takes <name>: an older bundle's Service of
    that name, left by kubectl apply, keeps LWS from making it. Each multi-node manifest says so in its header."""
    bundles = [*two_nodes.values(), trt_examples["llama-405b-two-nodes", "zh"]]
    bundles += [b for b in deploy_bundles(load_answers(ROOT / "examples" / "llama-405b-two-nodes.yaml"), _k(), "zh")[0]]
    seen = set()
    for b in bundles:
        if b.status != "ok" or b.nodes < 2:
            continue
        for f in ("k8s.yaml", "k8s-ray.yaml"):
            if f not in b.files:
                continue
            head = [x for x in b.files[f].splitlines() if x.startswith("#")]
            delete = re.compile(f"kubectl delete service {re.escape(b.name)}(?![A-Za-z0-9-])")
            assert any(delete.search(x) and f"{b.name}-leader" in x for x in head), (b.engine, f)
            seen.add((b.engine, b.lang, f))
    assert {("vllm", "en", "k8s.yaml"), ("vllm", "en", "k8s-ray.yaml"), ("sglang", "en", "k8s.yaml"),
            ("tensorrt-llm", "en", "k8s.yaml"), ("tensorrt-llm", "zh", "k8s.yaml"), ("vllm", "zh", "k8s.yaml")} <= seen


def test_the_plan_says_trtllm_plans_its_expert_parallel_layout_on_one_node():
    """TensorRT-LLM's attention DP + EP is planned within one node; across nodes its bundle now runs TP x PP in one MPI
    world, so the plan no longer says that its multi-node launch is not written."""
    from advisor.planner import make_plan

    answers = load_answers(ROOT / "examples" / "deepseek-v3-ep-two-nodes.yaml")
    for lang, gone, says in (("en", "not written here", "is planned within one node"),
                             ("zh", "此处不生成", "只在单节点内规划")):
        notes = make_plan(answers, None, _k(), lang=lang).engines["tensorrt-llm"].assumptions
        line = next(a for a in notes if "TensorRT-LLM" in a and ("expert" in a or "专家并行" in a) and
                    ("pipeline" in a or "流水线" in a) and a.startswith("TensorRT-LLM"))
        assert gone not in line and says in line, line


def test_an_mca_parameter_written_must_be_documented(tmp_path):
    """As every mpirun flag: the MCA parameters the launch writes (plm_rsh_args, orte_keep_fqdn_hostnames) are in the
    knowledge's documented list, or the knowledge does not load."""
    import shutil

    from advisor.knowledge.load import KNOWLEDGE_DIR, KnowledgeError, load_knowledge

    d = tmp_path / "knowledge"
    shutil.copytree(KNOWLEDGE_DIR, d)
    deploy = yaml.safe_load((d / "deploy.yaml").read_text(encoding="utf-8"))
    deploy["engines"]["tensorrt-llm"]["mpi_multi_node"]["documented_mca"] = ["plm_rsh_args"]
    (d / "deploy.yaml").write_text(yaml.safe_dump(deploy, allow_unicode=True), encoding="utf-8")
    with pytest.raises(KnowledgeError, match="orte_keep_fqdn_hostnames"):
        load_knowledge(d)


@pytest.mark.parametrize("case", ["llama-405b-two-nodes", "deepseek-v3-ep-two-nodes"])
def test_every_engines_node_scripts_read_in_sh_and_bash(case, tmp_path):
    """Each multi-node script of every engine, in both languages, parses in POSIX sh and in bash (run as
    `bash launch-node-1.sh`, bash reads a quote inside "${VAR:?…}" as opening a string); and a node told no leader's
    address stops with the reason."""
    answers = load_answers(ROOT / "examples" / f"{case}.yaml")
    seen = 0
    for lang in ("en", "zh"):
        for b in deploy_bundles(answers, _k(), lang)[0]:
            for name, body in b.files.items() if b.status == "ok" else ():
                if not name.endswith(".sh"):
                    continue
                path = tmp_path / f"{b.engine}-{lang}-{name}"
                path.write_text(body, encoding="utf-8")
                for shell in ("sh", "bash"):
                    got = subprocess.run([shell, "-n", str(path)], capture_output=True, text=True)
                    assert got.returncode == 0, (shell, b.engine, lang, name, got.stderr)
                seen += 1
                if "LEADER_ADDR" in body and name.startswith("launch-") and not name.endswith("-0.sh"):
                    got = subprocess.run(["bash", str(path)], capture_output=True, text=True, timeout=30,
                                         env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
                    assert got.returncode != 0 and "set LEADER_ADDR to" in got.stderr, got.stderr
    assert seen >= 16

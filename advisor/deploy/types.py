"""What a deployment bundle is: the server command as arguments, each value with the plan figure it comes from, and the
files rendered from it (launch script, docker run, compose, Kubernetes, KServe)."""
from __future__ import annotations

from typing import Literal

import shlex

from pydantic import BaseModel, Field, computed_field

#: the tokens a local run replaces (probes serve): the model's path, the address and the port to listen on
MODEL, HOST, PORT = "{model}", "{host}", "{port}"


class Arg(BaseModel):
    """One command-line argument: `flag value`, or the switch `flag` alone (value None); `why` traces it to the plan."""

    flag: str
    value: str | None = None
    why: str = ""
    # what a local run replaces (host, port), and what differs per node of a multi-node deployment: the node's rank,
    # the leader's address (LEADER in the value), and the switches only the non-leader nodes take (vLLM's --headless)
    role: Literal["host", "port", "node_rank", "leader_addr", "worker_only", "start_rank"] | None = None


class EnvVar(BaseModel):
    name: str
    value: str
    why: str = ""


class RayLayout(BaseModel):
    """vLLM's Ray-based multi-node layout of a bundle: node 0 starts a Ray head (`program` + `head`) and then the server
    with `serve` (the bundle's arguments without the per-node launch, with the Ray executor); the other nodes join the
    head (`program` + `worker`, LEADER in a value standing for node 0's address), tried again every join_retry_s for
    join_timeout_s, since the head may not be up yet."""

    program: list[str]
    head: list[Arg]
    worker: list[Arg]
    serve: list[Arg]
    port: int
    join_retry_s: int
    join_timeout_s: int
    placement_wait_s: int
    source: str = ""
    lws_example: str = ""

    def worker_args(self, leader: str) -> list[tuple[str, str]]:
        """(token, comment) after the program on a joining node, the leader's address put where LEADER stands."""
        return [(a.flag.replace("LEADER", leader) if a.role == "leader_addr" else a.flag, a.why) for a in self.worker]


class MpiLayout(BaseModel):
    """TensorRT-LLM's launch of a replica over nodes: one MPI world, one rank per GPU. On node 0 `program` (mpirun)
    starts every rank over SSH, each through `launcher` (trtllm-llmapi-launch) before the server's own command, whose
    rank 0 serves HTTP; the other nodes run only an SSH server (`sshd_program`) that mpirun reaches with the user's
    key pair. Each flag with the text of why it is there."""

    program: list[str]
    launcher: list[str]
    launcher_why: str
    ranks: int  # -np: the replica's GPUs
    per_node: int  # slots per host
    root_flag: str
    root_why: str
    prefix_flag: str
    prefix_why: str
    np_flag: str
    np_why: str
    hosts_flag: str
    hosts_why: str
    mca_flag: str
    rsh_param: str
    rsh_why: str  # (launch-node-0.sh's: the other nodes' SSH_PORT)
    rsh_why_k8s: str  # (the leader pod's: the workers' port, the Secret's key, host keys made at start)
    export_flag: str
    exports: list[str]  # passed to every rank where set on node 0
    export_why: str
    export_prefixes: list[str] = []  # and every variable set on node 0 named <one of these>_…
    export_prefixes_why: str = ""
    keep_fqdn_param: str = ""  # the MCA parameter that keeps -H host names whole (Open MPI 4.x cuts them at a dot)
    fqdn_why: str = ""
    fqdn_source: str = ""
    probe_why: str = ""  # (launch-node-0.sh's check that each other node answers SSH before mpirun)
    sshd_program: list[str]
    sshd_flags: list[str]  # foreground, log to stderr, port, option
    ssh_flags: list[str]  # the leader pod's client: port, identity file, option
    hosts_env: str  # the variable launch-node-0.sh reads the host list from
    ssh_port: int
    ssh_wait_s: int
    ssh_retry_s: int
    ssh_dir: str  # where the pods mount the Secret
    ssh_key: str  # its private key item (the leader's)
    ssh_authorized: str  # its public key item (the workers')
    secret: str  # the Secret's name (made by the user from their own key pair)
    source: str = ""
    mpirun_source: str = ""
    lws_example: str = ""


class Bundle(BaseModel):
    engine: str
    lang: str = "en"
    status: Literal["ok", "refused", "no_server"]
    reason: str | None = None  # why refused, or (no_server) what to use instead
    version: str = ""  # the engine version the flags were read for
    source: str = ""  # the CLI reference read
    read: str = ""
    model_name: str = ""
    target: str = ""  # the hardware, in words
    windows: bool = False  # the target runs Windows natively: launch.ps1 beside launch.sh
    warnings: list[str] = Field(default_factory=list)
    program: list[str] = Field(default_factory=list)  # e.g. ["vllm", "serve"]
    model_arg: str | None = None  # "positional" or the flag naming the model
    model_path: str = ""  # where the model is inside the container (and the launch script's default)
    model_what: str = ""  # what must be there, in words
    args: list[Arg] = Field(default_factory=list)
    env: list[EnvVar] = Field(default_factory=list)
    port: int | None = None
    health: str | None = None
    image: str | None = None
    image_source: str | None = None
    image_entrypoint: list[str] = Field(default_factory=list)
    device: str = "cpu"  # gpu | cpu
    gpu_resource: str | None = None  # nvidia.com/gpu | amd.com/gpu
    gpus_per_replica: int = 0
    replicas: int = 1
    replicas_why: str = ""
    nodes: int = 1  # nodes one replica spans (a LeaderWorkerSet group of this size; launch-node-<r>.sh per node)
    nodes_why: str = ""
    infiniband: bool = False  # the answers' interconnect between the nodes
    memory_gib: int = 1  # host RAM to request per replica
    memory_why: str = ""
    shm: bool = False
    name: str = "server"  # a DNS-1123 name for containers and Kubernetes objects
    ray: RayLayout | None = None  # vLLM's Ray-based layout of a replica over several nodes (k8s-ray.yaml, launch-ray-*)
    mpi: MpiLayout | None = None  # TensorRT-LLM's MPI launch of a replica over several nodes (launch-node-*, k8s.yaml)
    extra_files: dict[str, str] = Field(default_factory=dict)  # files the command reads (trtllm-serve's options)
    # prefill/decode disaggregation where the plan recommends it: workers of each side, and GPUs per worker (0: none)
    pd_prefill: int = 0
    pd_decode: int = 0
    pd_gpus: int = 0
    files: dict[str, str] = Field(default_factory=dict)  # launch.sh, docker-run.sh, compose.yaml, k8s.yaml, kserve.yaml
    # the files of those five this bundle does not carry, each with why (in the bundle's language), so what is said
    # is the real reason (no KServe runtime for the engine, no official image, a replica over several nodes)
    absent: dict[str, str] = Field(default_factory=dict)

    @computed_field  # in the JSON: what `python -m probes serve` starts (it cannot import this package)
    @property
    def template_args(self) -> list[str]:
        return self.template() if self.status == "ok" else []

    @computed_field
    @property
    def command(self) -> str:
        """The server command for the target as one shell line, its environment first (every token quoted)."""
        if self.status != "ok":
            return ""
        return " ".join([*(f"{e.name}={shlex.quote(e.value)}" for e in self.env),
                         *(shlex.quote(x) for x in self.argv())])

    def argv(self, model: str | None = None, host: str = "0.0.0.0", port: int | None = None) -> list[str]:
        """The server command as a list (no shell): the model path, address and port as given (else the bundle's)."""
        out = [*self.program]
        for tok in self.template():
            out.append(model or self.model_path if tok == MODEL else host if tok == HOST else
                       str(port or self.port) if tok == PORT else tok)
        return out

    def template(self) -> list[str]:
        """The arguments after the program, with MODEL / HOST / PORT where a local run puts its own."""
        out: list[str] = []
        if self.model_arg == "positional":
            out.append(MODEL)
        elif self.model_arg:
            out += [self.model_arg, MODEL]
        for a in self.args:
            if a.role in ("worker_only", "start_rank"):  # the leader's command (node 0): what a single host runs
                continue
            out.append(a.flag)
            if a.value is not None:
                out.append(HOST if a.role == "host" else PORT if a.role == "port" else a.value)
        return out

    def node_args(self, rank: int, leader: str, rank_value: str | None = None) -> list[tuple[str, str]]:
        """(token, comment) after the program for node `rank` of a multi-node replica: its rank (rank_value: a
        placeholder such as $(LWS_WORKER_INDEX) instead), the leader's address put where LEADER stands, the
        non-leader switches on ranks above 0. The model is the first token (MODEL)."""
        out: list[tuple[str, str]] = []
        if self.model_arg == "positional":
            out.append((MODEL, self.model_what))
        elif self.model_arg:
            out += [(self.model_arg, ""), (MODEL, self.model_what)]
        for a in self.args:
            if a.role in ("worker_only", "start_rank") and rank == 0:
                continue
            if a.value is None:
                out.append((a.flag, a.why))
                continue
            v = a.value
            if a.role == "node_rank":
                v = rank_value if rank_value is not None else str(rank)
            elif a.role == "leader_addr":
                v = v.replace("LEADER", leader)
            elif a.role == "start_rank":  # node r's first data-parallel rank: r x the ranks per node (a.value)
                v = str(rank * int(a.value))
            out += [(a.flag, ""), (v, a.why)]
        return out

